"""Drives KIP-848 consumer groups on a GroupCoordinator: a test assignor, topics, heartbeats.

The real ``uniform`` and ``range`` assignors live in kgroup/assignors; these tests use
``test-sticky``, a small deterministic assignor written against the same contract
(kgroup.assignors.server_api), so the coordinator is tested on its own.
"""

from __future__ import annotations

import heapq
import itertools
import uuid

from kgroup.assignors.server_api import PartitionAssignorError, register_server_assignor
from kgroup.coordinator import GroupCoordinator
from kgroup.protocol import ConsumerGroupHeartbeatRequest

TopicPartitions = ConsumerGroupHeartbeatRequest.TopicPartitions


@register_server_assignor
class StickyTestAssignor:
    """Per topic: members keep what they own up to their fair share; the rest goes to the least
    loaded subscriber (ties by member id)."""

    name = "test-sticky"

    def assign(self, group, topics):
        out = {member_id: {} for member_id in group.members}
        for topic_id in sorted(topics):
            subscribers = sorted(m for m, s in group.members.items() if topic_id in s.subscribed_topic_ids)
            if not subscribers:
                continue
            count = topics[topic_id].num_partitions
            floor, extra = divmod(count, len(subscribers))
            owned = {m: set() for m in subscribers}
            owners = {p: m for m in subscribers for p in group.members[m].assignment.get(topic_id, ())}
            free = []
            for partition in range(count):
                owner = owners.get(partition)
                limit = floor + (1 if extra else 0)
                if owner is not None and len(owned[owner]) < limit:
                    owned[owner].add(partition)
                    if len(owned[owner]) == floor + 1:
                        extra -= 1
                else:
                    free.append(partition)
            by_load = [(len(owned[m]), m) for m in subscribers]
            heapq.heapify(by_load)
            for partition in free:
                load, target = heapq.heappop(by_load)
                owned[target].add(partition)
                heapq.heappush(by_load, (load + 1, target))
            for member_id, parts in owned.items():
                if parts:
                    out[member_id][topic_id] = frozenset(parts)
        return out


@register_server_assignor
class FailingTestAssignor:
    name = "test-failing"

    def assign(self, group, topics):
        raise PartitionAssignorError("no assignment today")


FOO = uuid.UUID("00000000-0000-0000-0000-00000000f001")
BAR = uuid.UUID("00000000-0000-0000-0000-00000000ba12")
TOPICS = {"foo": (FOO, 6), "bar": (BAR, 3)}
CONFIG = {"group.consumer.assignors": "test-sticky,test-failing"}


def new_coordinator(topics=TOPICS, **config) -> GroupCoordinator:
    counter = itertools.count(1)
    coord = GroupCoordinator(config={**CONFIG, **config},
                             uuid_source=lambda: str(uuid.UUID(int=next(counter))))
    coord.set_topics(topics)
    return coord


def owned(assignment: dict) -> list:
    """{topic id: partitions} as the request's TopicPartitions."""
    return [TopicPartitions(topic_id=t, partitions=sorted(p)) for t, p in sorted(assignment.items())]


def assignment_of(response) -> dict | None:
    if response.assignment is None:
        return None
    return {tp.topic_id: frozenset(tp.partitions) for tp in response.assignment.topic_partitions}


def heartbeat(coord, group_id="g", member_id="", epoch=0, version=1, *, instance_id=None, rack_id=None,
              rebalance_timeout_ms=None, topics=None, owned_partitions=None, server_assignor=None,
              regex=None, client_id="client"):
    """One ConsumerGroupHeartbeat; a join (epoch 0) fills in what Kafka requires of a first request."""
    if epoch == 0:
        rebalance_timeout_ms = 60_000 if rebalance_timeout_ms is None else rebalance_timeout_ms
        topics = ["foo"] if topics is None else topics
        owned_partitions = [] if owned_partitions is None else owned_partitions
    fields = dict(group_id=group_id, member_id=member_id, member_epoch=epoch, instance_id=instance_id,
                  rack_id=rack_id, rebalance_timeout_ms=-1 if rebalance_timeout_ms is None else rebalance_timeout_ms,
                  subscribed_topic_names=topics, server_assignor=server_assignor,
                  topic_partitions=owned_partitions if owned_partitions is None or
                  isinstance(owned_partitions, list) else owned(owned_partitions))
    if version >= 1:
        fields["subscribed_topic_regex"] = regex
    request = ConsumerGroupHeartbeatRequest[version](**fields)
    response = coord.handle(request, client_id=client_id).response
    response.encode(version=version)     # every answer is valid on the wire
    return response


def classic_join(coord, group_id: str) -> None:
    """A static classic member joins ``group_id``: the group has a member, and its empty embedded
    subscription does not parse, so an online upgrade refuses to convert it."""
    from kafka.protocol.consumer.group import JoinGroupRequest
    protocol = JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")
    coord.handle(JoinGroupRequest[5](group_id=group_id, session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
                                     member_id="", group_instance_id="s", protocol_type="consumer",
                                     protocols=[protocol]))
