"""Regex subscriptions of real librdkafka consumers (confluent-kafka, ``group.protocol=consumer``)
against kgroup serve: librdkafka reads a topic name starting with "^" as a regex and sends it as
SubscribedTopicRegex (ConsumerGroupHeartbeat v1); the coordinator resolves it with full-match
semantics, picks up topics created later (at a heartbeat at most every 10 s, as Kafka) and
refuses a regex RE2 cannot compile with INVALID_REGULAR_EXPRESSION."""

from __future__ import annotations

from helpers.rdkafka_groups import broker  # noqa: F401 - the fixture
from helpers.rdkafka_groups import PARTITIONS, TOPIC, consumer_config, poll_until


def _create(b, *topics):
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    for future in admin.create_topics([NewTopic(name, count, 1) for name, count in topics]).values():
        future.result(10)


def _owned(consumer) -> set:
    return {(tp.topic, tp.partition) for tp in consumer.assignment()}


def _partitions(topic, count) -> set:
    return {(topic, p) for p in range(count)}


def test_a_regex_gets_the_topics_it_fully_matches_and_a_matching_topic_created_later(broker):
    from confluent_kafka import Consumer

    _create(broker, ("evolve", 2), ("other", 1), ("prevents", 1))
    consumer = Consumer(consumer_config(broker, None, group_id="rx"))
    consumer.subscribe(["^ev.*"])
    try:
        matching = _partitions(TOPIC, PARTITIONS) | _partitions("evolve", 2)
        poll_until([consumer], lambda: _owned(consumer) == matching)
        group = broker.group("rx")
        [member] = group.members
        assert member.subscribed_topic_regex is not None
        assert group.resolved_regexes == {member.subscribed_topic_regex: frozenset({TOPIC, "evolve"})}
        epoch = group.group_epoch
        _create(broker, ("evening", 3))
        # Kafka re-resolves a group's regexes at a heartbeat, at most every 10 s
        poll_until([consumer], lambda: _owned(consumer) == matching | _partitions("evening", 3), timeout=60)
        assert broker.group("rx").group_epoch == epoch + 1
    finally:
        consumer.close()


def test_an_invalid_regex_fails_the_consumer_with_invalid_regular_expression(broker):
    from confluent_kafka import Consumer, KafkaError

    errors = []
    consumer = Consumer(consumer_config(broker, None, group_id="bad-rx"))
    consumer.subscribe(["^(e)\\1.*"])     # librdkafka accepts it; RE2 has no backreferences
    try:
        poll_until([consumer], lambda: any(e.code() == KafkaError._FATAL for e in errors),
                   on_error=errors.append)
        fatal = next(e for e in errors if e.code() == KafkaError._FATAL)
        # librdkafka's text for INVALID_REGULAR_EXPRESSION (128)
        assert "The regular expression is not valid" in fatal.str()
        assert not consumer.assignment()
        assert broker.group("bad-rx") is None
    finally:
        consumer.close()
