"""The server-side ``uniform`` assignor of KIP-848 consumer groups (Kafka's UniformAssignor), the
default of ``group.consumer.assignors``.

Balance first, then stickiness: every member ends within one partition of the others (exactly so
when all members subscribe to the same topics), and keeps as much of its current target as that
allows. Kafka picks one of two builders by the group's subscription type; the homogeneous one is
here, the heterogeneous one in ``uniform_heterogeneous``. Where Kafka walks hash maps, kgroup walks
members, topics and partitions in the order those maps iterate (``java_order``), so it picks the
member Kafka picks where several could take a partition.
Two differences of shape, not of choice: every member gets a row (Kafka leaves the result empty
when nobody subscribes to anything), and a current partition beyond the topic's count is dropped
rather than kept.
"""

from __future__ import annotations

from typing import Mapping

from .server_api import (
    HOMOGENEOUS, Assignment, GroupSpec, PartitionAssignorError, TopicMetadata, register_server_assignor,
)
from .java_order import partition_set_order, topic_map_order, topic_set_order
from .server_order import frozen_rows, partition_count, topic_order_key
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
    """Kafka's UniformHomogeneousAssignmentBuilder.build (4.0.1 on, KAFKA-18688).

    Members are walked in Kafka's hash order (``java_order``). Each keeps its current partitions up
    to its quota; ``total % M`` members may hold one partition more, and a member that does not
    already fill that higher quota gives it up to a later member — unless only as many members
    remain as extra partitions — so the extra partitions stay where they are. The excess and the
    partitions nobody holds are handed, in that order, to the members still under quota. A topic a
    member keeps whole stays the very set it came in (a join re-assigns a group whose rows mostly do
    not change: they are neither copied nor sorted).
    """
    members = group.members
    member_ids = group.member_order()
    subscribed = members[member_ids[0]].subscribed_topic_ids
    rows: dict[str, dict] = {member: {} for member in member_ids}
    if not subscribed:
        return rows
    topic_ids = topic_set_order(sorted(subscribed, key=topic_order_key))
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

    member_count = len(member_ids)
    min_quota, extra = divmod(sum(counts.values()), member_count)
    unfilled: list[tuple[str, int]] = []
    for index, member in enumerate(member_ids):
        quota = min_quota
        has_extra = extra > 0
        if has_extra:
            quota += 1
        row = rows[member]
        current = members[member].assignment
        for topic in (current if len(current) < 2 else topic_map_order(sorted(current, key=topic_order_key))):
            owned = current[topic]
            count = counts.get(topic)
            if count is None:
                continue                                 # unsubscribed: the whole topic goes
            if len(owned) <= quota and (not owned or max(owned) < count):
                quota -= len(owned)
                if owned:
                    row[topic] = owned                   # kept whole
                continue
            partitions = [p for p in partition_set_order(owned) if p < count]
            kept = partitions[:quota]
            unassigned.extend((topic, p) for p in partitions[quota:])
            quota -= len(kept)
            if kept:
                row[topic] = sorted(kept)
        if quota > 0 and has_extra and member_count - index > extra:
            quota -= 1                                   # leave the extra partition to a later member
            has_extra = False
        if quota > 0:
            unfilled.append((member, quota))
        if has_extra:
            extra -= 1

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
