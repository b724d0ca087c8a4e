"""`delete-offsets --dry-run`: each partition's answer from OffsetDelete, predicted without sending it.

Kafka's coordinator answers OffsetDelete (GroupMetadataManager / OffsetMetadataManager
``deleteOffsets``): an unknown group GROUP_ID_NOT_FOUND, a classic group with members whose protocol
type is not "consumer" NON_EMPTY_GROUP (the whole request), a partition of a topic the group is
subscribed to GROUP_SUBSCRIBED_TO_TOPIC (a classic group: its members' subscriptions, every topic when
one is unknown; a consumer group: its members' subscribed topics and what their regexes resolved to,
seen here as their target assignments), and the broker first checks Delete on the group and Read on
each topic (KafkaApis). The subscriptions are read from the group's description as it is now; Kafka's
classic coordinator keeps the ones of the generation's start (a static member that came back with
another subscription changes them only at the next rebalance).
"""

from __future__ import annotations

from kgroup.views.connect import CONNECT_TYPE, worker_group_refusal
from kgroup.client.groups import group_exists, no_such_group, topic_partitions
from kgroup.views.model import GroupView
from kgroup.client.offsets_admin import NO_OFFSETS, describe_one, offsets_to_delete
from kgroup.client.rights import WOULD_BE_REFUSED, group_refusal, refused_topics
from kgroup.client.streams_offsets import subscribed_topics as streams_subscribed_topics
from kgroup.views.streams import STREAMS_TYPE
from kgroup.errors import KgroupError
from kgroup.wire.authorization import NotAuthorized
from kgroup.wire.cluster import ClusterClient


def plan_offset_delete(client: ClusterClient, group: str, selectors) -> list[dict]:
    """The rows `delete_offsets` would return, each with the error Kafka would give (None: deleted)."""
    view = describe_one(client, group)
    if view.group_type == CONNECT_TYPE:
        raise KgroupError(worker_group_refusal(group, NO_OFFSETS))
    refusal = group_refusal(client, view, "Delete")
    if refusal:
        raise NotAuthorized(WOULD_BE_REFUSED + refusal)
    if not group_exists(view):
        raise KgroupError(no_such_group(group, view.coordinator))        # as the real run says it
    if view.group_type == "classic" and view.members and view.protocol_type != "consumer":
        raise KgroupError(f"group {group!r}: OffsetDelete failed: NON_EMPTY_GROUP")
    wanted = offsets_to_delete(client, group, selectors, view.coordinator)
    asked = [t for t, ps in wanted.items() if ps]
    subscribed = subscribed_topics(view)
    denied = refused_topics(client, asked)
    existing = topic_partitions(client, asked)
    rows = []
    for topic, partitions in wanted.items():
        if not partitions:
            rows.append({"topic": topic, "partition": None, "error": "UNKNOWN_TOPIC_OR_PARTITION"})
            continue
        known = existing.get(topic)
        for p in partitions:     # KafkaApis: the topic's right, then its metadata, then the coordinator
            if topic in denied:
                error = "TOPIC_AUTHORIZATION_FAILED"
            elif not isinstance(known, list) or p not in known:
                error = "UNKNOWN_TOPIC_OR_PARTITION"
            elif subscribed is None or topic in subscribed:
                error = "GROUP_SUBSCRIBED_TO_TOPIC"
            else:
                error = None
            rows.append({"topic": topic, "partition": p, "error": error})
    return sorted(rows, key=lambda r: (r["topic"], -1 if r["partition"] is None else r["partition"]))


def subscribed_topics(view: GroupView) -> set[str] | None:
    """The topics the group counts as subscribed to (None: every one, Kafka's answer for a classic
    "consumer" group whose subscriptions it cannot read)."""
    if view.group_type == STREAMS_TYPE:
        return streams_subscribed_topics(view)
    if view.group_type == "consumer":
        return {t for m in view.members for t in (m.subscription or [])} | \
               {tp["topic"] for m in view.members if m.subscribed_topic_regex for tp in m.target_assignment or []}
    if view.protocol_type != "consumer" or not view.members:
        return set()
    if any(m.subscription is None for m in view.members):
        return None
    return {t for m in view.members for t in m.subscription}
