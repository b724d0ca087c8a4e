"""Client-side partition assignors of the classic consumer protocol.

The leader of a classic group runs one of these on the members' subscriptions. Members are
ordered with Kafka's rule (AbstractPartitionAssignor.MemberInfo): static members first, by
``group.instance.id``, then dynamic members by member id. The instance id as first sort key
is what keeps range and round-robin assignments still across restarts (KIP-345); pass
``by_instance_id=False`` to see the member-id-only ordering the KIP argues against.

    assignor = get_assignor("range")
    plan = assignor.assign(members, {"orders": 9})          # member id -> [(topic, partition)]
    predict_after_removal(members, ["c-2"], {"orders": 9}, "range")
"""

from __future__ import annotations

from collections import deque

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

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


@dataclass(slots=True)
class RemovalPrediction:
    """The assignment after removing members, and where each moved partition goes."""

    assignment: dict[str, list[TopicPartition]]
    moves: list[tuple[str, int, str | None, str | None]] = field(default_factory=list)
    rounds: int = 1

    def moved_from(self, member_id: str) -> list[tuple[str, int, str | None]]:
        """(topic, partition, new owner) for each partition the given member held."""
        return [(t, p, new) for t, p, old, new in self.moves if old == member_id]


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

    def assign(self, members: Sequence[MemberInfo],
               partitions_per_topic: Mapping[str, int]) -> dict[str, list[TopicPartition]]:
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
            for tp in member.owned:
                if (not isinstance(tp, tuple) or len(tp) != 2 or not isinstance(tp[0], str)
                        or not isinstance(tp[1], int)):
                    raise ValueError(f"assignor {self.name}: member {member.member_id!r} owns "
                                     f"{tp!r}, not a (topic, partition) pair")
        ordered = sorted(members, key=lambda m: sort_key(m, self.by_instance_id))
        plan = self._assign(ordered, partitions_per_topic)
        for parts in plan.values():
            parts.sort()
        return plan

    def _assign(self, members, partitions_per_topic):
        raise NotImplementedError


class RangeAssignor(Assignor):
    """Per topic: consecutive ranges, the first ``n % k`` members one partition longer."""

    name = "range"

    def _assign(self, members, partitions_per_topic):
        plan = {m.member_id: [] for m in members}
        for topic in sorted(partitions_per_topic):
            subscribers = [m.member_id for m in members if topic in m.topics]
            if not subscribers:
                continue
            count = partitions_per_topic[topic]
            per, extra = divmod(count, len(subscribers))
            start = 0
            for index, member_id in enumerate(subscribers):
                length = per + (1 if index < extra else 0)
                plan[member_id].extend((topic, p) for p in range(start, start + length))
                start += length
        return plan


class RoundRobinAssignor(Assignor):
    """All partitions in (topic, partition) order dealt to members in turn."""

    name = "roundrobin"

    def _assign(self, members, partitions_per_topic):
        plan = {m.member_id: [] for m in members}
        subscribed = [(m.member_id, frozenset(m.topics)) for m in members]
        position = 0
        for topic in sorted(partitions_per_topic):
            if not any(topic in topics for _, topics in subscribed):
                continue
            for partition in range(partitions_per_topic[topic]):
                while topic not in subscribed[position % len(subscribed)][1]:
                    position += 1
                plan[subscribed[position % len(subscribed)][0]].append((topic, partition))
                position += 1
        return plan


class StickyAssignor(Assignor):
    """Balanced (sizes differ by at most one) while keeping as many owned partitions as possible.

    When two members claim one partition, the claim from the higher generation wins, as in
    Kafka. Identical subscriptions take a quota-based fast path; differing ones fall back to
    giving each free partition to the least-loaded eligible member.
    """

    name = "sticky"
    uses_owned = True

    def _assign(self, members, partitions_per_topic):
        all_partitions = [(t, p) for t in sorted(partitions_per_topic)
                          for p in range(partitions_per_topic[t])]
        subscriptions = {frozenset(m.topics) for m in members}
        claimed: dict[TopicPartition, tuple[int, str]] = {}
        for member in members:
            topics = frozenset(member.topics)
            for tp in member.owned:
                if tp[0] not in topics or not 0 <= tp[1] < partitions_per_topic.get(tp[0], 0):
                    continue
                previous = claimed.get(tp)
                if previous is None or member.generation > previous[0]:
                    claimed[tp] = (member.generation, member.member_id)
        kept: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
        for tp, (_, member_id) in claimed.items():
            kept[member_id].append(tp)
        for parts in kept.values():
            parts.sort()
        if len(subscriptions) == 1:
            return self._balanced_same_topics(members, all_partitions, kept)
        return self._greedy(members, all_partitions, kept)

    @staticmethod
    def _balanced_same_topics(members, all_partitions, kept):
        topics = frozenset(members[0].topics)
        partitions = [tp for tp in all_partitions if tp[0] in topics]
        count = len(members)
        min_quota, extra = divmod(len(partitions), count)
        order = {m.member_id: i for i, m in enumerate(members)}
        # Members holding the most keep up to min_quota + 1, while such slots remain.
        by_size = sorted(kept, key=lambda mid: (-len(kept[mid]), order[mid]))
        plan: dict[str, list[TopicPartition]] = {}
        assigned: set[TopicPartition] = set()
        for member_id in by_size:
            limit = min_quota + 1 if extra > 0 and len(kept[member_id]) > min_quota else min_quota
            if limit == min_quota + 1:
                extra -= 1
            keep = kept[member_id][:limit]
            plan[member_id] = keep
            assigned.update(keep)
        # Free partitions go round-robin (as Kafka's and librdkafka's sticky assignors hand them
        # out) to the members still under min_quota; once none is, one extra each to members at
        # min_quota, first come first served, while extra slots remain.
        under = [m.member_id for m in members if len(plan[m.member_id]) < min_quota]
        at_min = deque(m.member_id for m in members if len(plan[m.member_id]) == min_quota)
        turn = 0
        for tp in (tp for tp in partitions if tp not in assigned):
            if under:
                turn %= len(under)
                member_id = under[turn]
                plan[member_id].append(tp)
                if len(plan[member_id]) == min_quota:
                    at_min.append(under.pop(turn))
                else:
                    turn += 1
            else:
                plan[at_min.popleft()].append(tp)
        return plan

    @staticmethod
    def _greedy(members, all_partitions, kept):
        eligible_topics = {m.member_id: frozenset(m.topics) for m in members}
        order = {m.member_id: i for i, m in enumerate(members)}
        plan = {mid: list(parts) for mid, parts in kept.items()}
        assigned = {tp for parts in plan.values() for tp in parts}
        for tp in all_partitions:
            if tp in assigned:
                continue
            candidates = [mid for mid in plan if tp[0] in eligible_topics[mid]]
            if candidates:
                best = min(candidates, key=lambda mid: (len(plan[mid]), order[mid]))
                plan[best].append(tp)
        # Move partitions from overloaded to underloaded eligible members until balanced.
        changed = True
        while changed:
            changed = False
            for tp in all_partitions:
                owner = next((mid for mid, parts in plan.items() if tp in parts), None)
                if owner is None:
                    continue
                lighter = [mid for mid in plan if tp[0] in eligible_topics[mid]
                           and len(plan[mid]) + 1 < len(plan[owner])]
                if lighter:
                    target = min(lighter, key=lambda mid: (len(plan[mid]), order[mid]))
                    plan[owner].remove(tp)
                    plan[target].append(tp)
                    changed = True
        return plan


class CooperativeStickyAssignor(StickyAssignor):
    """Sticky target, but a partition still owned by another member is withheld this round.

    The owner revokes it and rejoins; the next round hands it over (KIP-429).
    """

    name = "cooperative-sticky"
    cooperative = True

    def _assign(self, members, partitions_per_topic):
        target = super()._assign(members, partitions_per_topic)
        owner_now: dict[TopicPartition, str] = {}
        for member in members:
            for tp in member.owned:
                owner_now.setdefault(tp, member.member_id)
        return {mid: [tp for tp in parts if owner_now.get(tp, mid) == mid]
                for mid, parts in target.items()}

    def target(self, members, partitions_per_topic):
        """The assignment once every revocation has gone through (the second round's result)."""
        ordered = sorted(members, key=lambda m: sort_key(m, self.by_instance_id))
        plan = StickyAssignor._assign(self, ordered, partitions_per_topic)
        for parts in plan.values():
            parts.sort()
        return plan


ASSIGNORS = {cls.name: cls for cls in (RangeAssignor, RoundRobinAssignor, StickyAssignor,
                                       CooperativeStickyAssignor)}


def get_assignor(name: str, by_instance_id: bool = True) -> Assignor:
    """The assignor registered under Kafka's protocol name (range, roundrobin, sticky, cooperative-sticky)."""
    cls = ASSIGNORS.get(name)
    if cls is None:
        raise ValueError(f"unknown assignor {name!r}; choose from {', '.join(ASSIGNORS)}")
    return cls(by_instance_id=by_instance_id)


def predict_after_removal(members: Sequence[MemberInfo], removed: Iterable[str],
                          partitions_per_topic: Mapping[str, int],
                          assignor: str | Assignor = "range") -> RemovalPrediction:
    """Predict the assignment the leader computes once ``removed`` leave the group.

    ``members`` is the group as it is now, each with its current assignment in ``owned``
    (``MemberInfo.from_bytes`` builds one from DescribeGroups' metadata and assignment bytes).
    ``removed`` holds member ids or group instance ids. The result is the settled
    assignment (for cooperative-sticky, after its second round) and every partition whose
    owner changes: ``(topic, partition, old owner or None, new owner or None)``.
    Raises ValueError naming a removed id that matches no member.
    """
    chosen = get_assignor(assignor) if isinstance(assignor, str) else assignor
    removed = list(removed)
    by_member = {m.member_id: m for m in members}
    by_instance = {m.instance_id: m for m in members if m.instance_id is not None}
    gone = set()
    for ident in removed:
        member = by_member.get(ident) or by_instance.get(ident)
        if member is None:
            raise ValueError(f"member {ident!r} is not in the group (neither a member id nor "
                             f"a group.instance.id)")
        gone.add(member.member_id)
    remaining = [m for m in members if m.member_id not in gone]
    if isinstance(chosen, CooperativeStickyAssignor):
        plan = chosen.target(remaining, partitions_per_topic)
        first = chosen.assign(remaining, partitions_per_topic)
        rounds = 1 if first == plan else 2
    else:
        plan = chosen.assign(remaining, partitions_per_topic)
        rounds = 1
    old_owner = {tp: m.member_id for m in members for tp in m.owned}
    new_owner = {tp: mid for mid, parts in plan.items() for tp in parts}
    moves = []
    for tp in sorted(set(old_owner) | set(new_owner)):
        before, after = old_owner.get(tp), new_owner.get(tp)
        if before != after:
            moves.append((tp[0], tp[1], before, after))
    return RemovalPrediction(plan, moves, rounds)
