"""Which offsets expire and which topics a group subscribes to (KIP-211, KIP-496 as trunk does it).

Pure functions over an OffsetStore and a group (classic or consumer); the OffsetManager writes the tombstones.
"""

from __future__ import annotations

from .store import OffsetAndMetadata


def expired_offsets(store, group_id: str, group, now: int, retention_ms: int):
    """(may the group be deleted, expired partitions) per KIP-211/KIP-496 as trunk does it.

    Base time of an offset without explicit expiry: for a group with a protocol type that is
    Empty, the time it became Empty (currentStateTimestamp; the commit time if unknown); for
    a simple group (no protocol type) the commit time; for a Stable "consumer" group with a
    known subscription, the commit time, but only offsets of topics nobody subscribes to.
    Any other group keeps its offsets. Offsets with an open transaction never expire."""
    committed = store.committed(group_id)
    if not committed:
        return True, []
    subscribed: set[str] = set()
    protocol_type = None if group is None else (group.protocol_type or None)
    if protocol_type is None:
        base_of = _commit_time
    elif group.group_type == "consumer":
        # a KIP-848 group (ConsumerGroup.isSubscribedToTopic): commit time, unsubscribed topics only
        subscribed = set(group.subscriber_counts)
        base_of = _commit_time
    elif group.state == "Empty":
        state_ts = group.current_state_timestamp
        base_of = _commit_time if state_ts is None or state_ts < 0 else (lambda _v, ts=state_ts: ts)
    elif protocol_type == "consumer" and group.state == "Stable":
        topics = subscribed_topics(group)
        if topics is None:
            return False, []
        subscribed = topics
        base_of = _commit_time
    else:
        return False, []
    all_expired = True
    expired = []
    for tp, value in committed.items():
        if tp[0] in subscribed:
            all_expired = False
            continue
        if value.expire_timestamp is not None:
            is_expired = now >= value.expire_timestamp
        else:
            is_expired = now - base_of(value) >= retention_ms
        if is_expired and not store.has_pending(group_id, tp):
            expired.append(tp)
        else:
            all_expired = False
    return all_expired and not store.has_open_transactions(group_id), expired


def _commit_time(value: OffsetAndMetadata) -> int:
    return value.commit_timestamp


def is_subscribed(group, known_topics: set[str] | None, topic: str) -> bool:
    """Trunk's ClassicGroup.isSubscribedToTopic: when the subscription is unknown (metadata that
    does not parse, no protocol selected yet) a "consumer" group counts as subscribed to every
    topic, any other group to none."""
    if known_topics is not None:
        return topic in known_topics
    return group is not None and group.protocol_type == "consumer"


def subscribed_topics(group) -> set[str] | None:
    """Topics the members of a "consumer" classic group subscribe to, or None if unknown.

    Kafka's ClassicGroup.subscribedTopics: computed when a generation starts (initNextGeneration)
    and when the group is loaded (replay), never from the members' current metadata. So a static
    member that restarts in Stable with another subscription (no rebalance, KAFKA-12759) or a
    newcomer still in the join phase does not change it until the next generation. A group that
    never had a generation has none (unknown)."""
    snapshot = group.generation_subscriptions
    return None if snapshot is None else snapshot.topics()


def remember_subscriptions(group) -> None:
    """Take the group's subscriptions as its generation's (the caller has saved the group)."""
    group.generation_subscriptions = GenerationSubscriptions(group)


class GenerationSubscriptions:
    """What Kafka's ClassicGroup.computeSubscribedTopics reads, taken when it runs: only for
    protocol type "consumer"; an empty group subscribes to nothing; otherwise the v0 prefix of every
    member's metadata for the selected protocol must parse as a ConsumerProtocolSubscription, else
    the answer is unknown. The metadata is decoded on first use (a generation of a large group that
    nobody asks about costs one list of references)."""

    __slots__ = ("_metadata", "_known", "_topics")

    def __init__(self, group):
        protocol = group.protocol_name
        self._known = group.protocol_type == "consumer" and (not group.members or bool(protocol))
        self._metadata = [m.metadata(protocol) for m in group.members.values()] if self._known else []
        self._topics = None

    def topics(self) -> set[str] | None:
        if not self._known:
            return None
        if self._topics is None:
            from kgroup.records import RecordDecodeError
            from kgroup.records.consumer_protocol import subscription_topics_v0
            topics: set[str] = set()
            for metadata in self._metadata:
                try:
                    topics.update(subscription_topics_v0(metadata))
                except RecordDecodeError:
                    self._known = False
                    return None
            self._topics = topics
        return self._topics
