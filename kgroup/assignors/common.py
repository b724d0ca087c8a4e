"""What every assignor shares: the member as the leader sees it, Kafka's member order, the base class.

Members are ordered with Kafka's rule (AbstractPartitionAssignor.MemberInfo): static members first,
by ``group.instance.id``, then dynamic members by member id. The instance id as first sort key is
what keeps range and round-robin assignments still across restarts (KIP-345); pass
``by_instance_id=False`` to see the member-id-only ordering the KIP argues against.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Mapping, Sequence

TopicPartition = tuple[str, int]


@dataclass(slots=True)
class MemberInfo:
    """What the leader knows of one member: ids, subscribed topics, partitions it owns now."""

    member_id: str
    instance_id: str | None = None
    topics: tuple[str, ...] = ()
    owned: tuple[TopicPartition, ...] = ()
    generation: int = -1

    @classmethod
    def from_bytes(cls, member_id: str, instance_id: str | None, subscription: bytes,
                   assignment: bytes | None = None) -> "MemberInfo":
        """From consumer-protocol bytes (JoinGroup metadata, DescribeGroups member fields).

        Owned partitions come from the assignment when given (what the member holds now),
        else from the subscription's ownedPartitions.
        """
        from kgroup.records import decode_assignment, decode_subscription

        sub = decode_subscription(subscription)
        owned_source = sub.get("ownedPartitions") or []
        if assignment:
            owned_source = decode_assignment(assignment).get("assignedPartitions") or []
        owned = tuple((tp["topic"], p) for tp in owned_source for p in tp["partitions"])
        return cls(member_id, instance_id, tuple(sub.get("topics") or ()), owned,
                   sub.get("generationId", -1))


@lru_cache(maxsize=64)
def topic_partitions(topic: str, count: int) -> tuple[TopicPartition, ...]:
    """((topic, 0), ..., (topic, count - 1)), built once: a simulated group's leader assigns the
    same topics at every rebalance."""
    return tuple((topic, p) for p in range(count))


def sort_key(member: MemberInfo, by_instance_id: bool = True):
    if by_instance_id and member.instance_id is not None:
        return (0, member.instance_id, member.member_id)
    return (1, member.member_id, "")


class Assignor:
    """Base: subclasses fill ``_assign``; ``assign`` validates and orders the inputs."""

    name = ""
    cooperative = False   # True: partitions change hands in two rounds (revoke, then assign)
    uses_owned = False    # True: the member's owned partitions are an input (sticky family)

    def __init__(self, by_instance_id: bool = True):
        self.by_instance_id = by_instance_id

    def assign(self, members: Sequence[MemberInfo], partitions_per_topic: Mapping[str, int],
               check_owned: bool = True) -> dict[str, list[TopicPartition]]:
        """``check_owned=False``: the members' owned partitions are known to be (topic, partition)
        pairs (the simulated leader's, decoded from or remembered as its own consumers' bytes): not
        looked at one by one at every rebalance."""
        if not members:
            return {}
        seen = set()
        for member in members:
            if member.member_id in seen:
                raise ValueError(f"assignor {self.name}: member {member.member_id!r} listed twice")
            seen.add(member.member_id)
            for topic in member.topics:
                if topic not in partitions_per_topic:
                    raise ValueError(f"assignor {self.name}: member {member.member_id!r} "
                                     f"subscribes to unknown topic {topic!r}")
            for tp in member.owned if check_owned else ():
                if (not isinstance(tp, tuple) or len(tp) != 2 or not isinstance(tp[0], str)
                        or not isinstance(tp[1], int)):
                    raise ValueError(f"assignor {self.name}: member {member.member_id!r} owns "
                                     f"{tp!r}, not a (topic, partition) pair")
        ordered = sorted(members, key=partial(sort_key, by_instance_id=self.by_instance_id))
        plan = self._assign(ordered, partitions_per_topic)
        for parts in plan.values():
            parts.sort()
        return plan

    def _assign(self, members, partitions_per_topic):
        raise NotImplementedError
