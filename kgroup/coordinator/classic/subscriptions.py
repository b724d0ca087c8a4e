"""What a classic group subscribes to (Kafka's ClassicGroup.subscribedTopics / isSubscribedToTopic):
computed when a generation starts and when the group is loaded, read by OffsetDelete and offsets expiry
through the group's seam methods."""

from __future__ import annotations


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
