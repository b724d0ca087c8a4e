"""The server-side ``uniform`` assignor of KIP-848 consumer groups (Kafka's UniformAssignor), the
default of ``group.consumer.assignors``.

Balance first, then stickiness: every member ends within one partition of the others (exactly so
when all members subscribe to the same topics), and keeps as much of its current target as that
allows. Kafka picks one of two builders by the group's subscription type; the homogeneous one is
here, the heterogeneous one in ``uniform_heterogeneous``. Where Kafka walks hash maps, kgroup walks
members by id and topics by Kafka's Uuid order (``server_order``), so results are deterministic.
Two differences of shape, not of choice: every member gets a row (Kafka leaves the result empty
when nobody subscribes to anything), and a current partition beyond the topic's count is dropped
rather than kept.
"""

from __future__ import annotations

from typing import Mapping

from .server_api import (
    HOMOGENEOUS, Assignment, GroupSpec, PartitionAssignorError, TopicMetadata, register_server_assignor,
)
from .server_order import frozen_rows, partition_count, sorted_member_ids, topic_order_key
from .uniform_heterogeneous import build_heterogeneous


@register_server_assignor
class UniformAssignor:
    name = "uniform"

    def assign(self, group: GroupSpec, topics: Mapping[object, TopicMetadata]) -> Assignment:
        if not group.members:
            return {}
        if group.subscription_type == HOMOGENEOUS:
            rows = build_homogeneous(group, topics)
        else:
            rows = build_heterogeneous(group, topics)
        return frozen_rows(rows)


def build_homogeneous(group: GroupSpec, topics: Mapping[object, TopicMetadata]) -> dict:
    """Kafka's UniformHomogeneousAssignmentBuilder.build.

    The first ``total % M`` members in member order get the higher quota, whatever they hold now.
    Each member keeps its current partitions up to its quota (topics in Uuid order, partitions
    ascending); the excess and the partitions nobody holds are handed, in that order, to the
    members still under quota. A topic a member keeps whole stays the very set it came in (a join
    re-assigns a group whose rows mostly do not change: they are neither copied nor sorted).
    """
    members = group.members
    member_ids = sorted_member_ids(members)
    subscribed = members[member_ids[0]].subscribed_topic_ids
    rows: dict[str, dict] = {member: {} for member in member_ids}
    if not subscribed:
        return rows
    topic_ids = sorted(subscribed, key=topic_order_key)
    counts = {topic: partition_count(topics, topic) for topic in topic_ids}

    held: dict[object, set] = {topic: set() for topic in topic_ids}   # GroupSpec.isPartitionAssigned
    for member in member_ids:
        for topic, partitions in members[member].assignment.items():
            taken = held.get(topic)
            if taken is not None:
                taken.update(partitions)
    unassigned: list[tuple[object, int]] = []
    for topic in topic_ids:
        unassigned.extend((topic, p) for p in sorted(set(range(counts[topic])) - held[topic]))

    min_quota, extra = divmod(sum(counts.values()), len(member_ids))
    unfilled: list[tuple[str, int]] = []
    for member in member_ids:
        quota = min_quota
        if extra > 0:
            quota += 1
            extra -= 1
        row = rows[member]
        current = members[member].assignment
        for topic, owned in (current.items() if len(current) < 2 else sorted(current.items(), key=_by_topic)):
            count = counts.get(topic)
            if count is None:
                continue                                 # unsubscribed: the whole topic goes
            if len(owned) <= quota and (not owned or max(owned) < count):
                quota -= len(owned)
                if owned:
                    row[topic] = owned                   # kept whole
                continue
            partitions = sorted(p for p in owned if p < count)
            kept = partitions[:quota]
            unassigned.extend((topic, p) for p in partitions[quota:])
            quota -= len(kept)
            if kept:
                row[topic] = kept
        if quota > 0:
            unfilled.append((member, quota))

    position = 0
    for member, remaining in unfilled:
        row = rows[member]
        for topic, partition in unassigned[position:position + remaining]:
            parts = row.get(topic)
            if parts is None:
                row[topic] = [partition]
            elif isinstance(parts, list):
                parts.append(partition)
            else:
                row[topic] = [*parts, partition]         # a kept set that grows
        position += remaining
    if position < len(unassigned):
        raise PartitionAssignorError("Partitions were left unassigned")
    return rows


def _by_topic(item) -> tuple:
    return topic_order_key(item[0])
