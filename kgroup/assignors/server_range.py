"""The server-side ``range`` assignor of KIP-848 consumer groups, as Kafka 4.0's RangeAssignor.

Not sticky and fully deterministic: members are sorted — static members first by instance id,
then the others by member id — and each subscribed topic's partitions are cut into contiguous
ranges, the first ``n % M`` members getting one extra partition. With every member on the same
topics and equal partition counts, a member gets the same partition numbers of every topic
(co-partitioning); a static member keeps its range across a bounce as long as the membership,
subscriptions and metadata do not change.
"""

from __future__ import annotations

from typing import Mapping

from .server_api import HOMOGENEOUS, Assignment, GroupSpec, TopicMetadata, register_server_assignor
from .server_order import frozen_rows, java_string_key, partition_count


@register_server_assignor
class ServerRangeAssignor:
    name = "range"

    def assign(self, group: GroupSpec, topics: Mapping[object, TopicMetadata]) -> Assignment:
        if not group.members:
            return {}
        members = sorted_members(group)
        if group.subscription_type == HOMOGENEOUS:
            subscribed = group.members[members[0]].subscribed_topic_ids
            subscribers = {topic: members for topic in subscribed}
        else:
            subscribers = {}
            for member in members:
                for topic in group.members[member].subscribed_topic_ids:
                    subscribers.setdefault(topic, []).append(member)
        rows: dict[str, dict] = {member: {} for member in members}
        for topic, topic_members in subscribers.items():
            count = partition_count(topics, topic)
            min_quota, extra = divmod(count, len(topic_members))
            start = 0
            for index, member in enumerate(topic_members):
                end = min(start + min_quota + (1 if index < extra else 0), count)
                if start < end:
                    rows[member][topic] = range(start, end)
                start = end
        return frozen_rows(rows)


def sorted_members(group: GroupSpec) -> list[str]:
    """Kafka's RangeAssignor.sortMemberIds: static members by instance id, then the rest by id."""
    def key(member_id: str) -> tuple:
        instance_id = group.members[member_id].instance_id
        if instance_id is not None:
            return (0, java_string_key(instance_id), b"")
        return (1, b"", java_string_key(member_id))
    return sorted(group.members, key=key)
