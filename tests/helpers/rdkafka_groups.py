"""Real librdkafka consumers (confluent-kafka, ``group.protocol=consumer``) against kgroup serve:
fast consumer-group settings, the broker (and its ``broker`` fixture), and polling until a condition
holds (no tests here).

The broker's consumer-group minimums are lowered with Kafka's ``group.consumer.*`` keys so sessions
expire in seconds; every wait polls until a condition holds (the machine may be loaded), never a
fixed sleep.
"""

from __future__ import annotations

import time

import pytest

from kgroup.server.harness import ThreadedBroker

TOPIC = "events"
PARTITIONS = 6
SESSION_MS = 2000
HEARTBEAT_MS = 200
# Kafka's broker keys, minimums lowered so a test's sessions expire in seconds.
FAST_CONSUMER_GROUPS = {
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.session.timeout.ms": str(SESSION_MS),
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.heartbeat.interval.ms": str(HEARTBEAT_MS),
}


def start_broker(tmp_path) -> ThreadedBroker:
    """An in-process serve with the topic and the fast consumer-group settings."""
    return ThreadedBroker(tmp_path / "logs", topics=[(TOPIC, PARTITIONS)],
                          config=FAST_CONSUMER_GROUPS)


@pytest.fixture
def broker(tmp_path):
    """A test's serve (``start_broker``), stopped after it; import it into a test module to use it."""
    b = start_broker(tmp_path)
    yield b
    b.stop()


def consumer_config(b, instance, group_id="cg", **extra):
    return {"bootstrap.servers": b.bootstrap, "group.id": group_id, "group.protocol": "consumer",
            "group.instance.id": instance, "auto.offset.reset": "earliest",
            "enable.auto.commit": False, **extra}


def new_consumer(b, instance, **extra):
    from confluent_kafka import Consumer

    consumer = Consumer(consumer_config(b, instance, **extra))
    consumer.subscribe([TOPIC])
    return consumer


def start_classic_fleet(b, fleet: dict, instances, session_timeout_ms: int, group_id="cg") -> None:
    """kafka-python classic static consumers of TOPIC, one per instance id, put into ``fleet`` (the
    caller stops them) and waited for until their group has settled."""
    from kgroup.client.fleet import FleetConsumer, wait_settled

    for instance in instances:
        fleet[instance] = FleetConsumer(b.bootstrap, group_id, [TOPIC], instance_id=instance,
                                        session_timeout_ms=session_timeout_ms)
    assert wait_settled(lambda: b.group(group_id), fleet.values(), PARTITIONS, timeout=60)


def owned(consumer) -> set[int]:
    return {tp.partition for tp in consumer.assignment()}


def poll_until(consumers, condition, timeout=40, on_message=None, on_error=None):
    """Poll every consumer in turn until ``condition()`` holds; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for consumer in consumers:
            msg = consumer.poll(0.05)
            if msg is None:
                continue
            if msg.error() is None and on_message is not None:
                on_message(consumer, msg)
            elif msg.error() is not None and on_error is not None:
                on_error(msg.error())
        if condition():
            return
    raise AssertionError(f"condition not reached in {timeout}s: "
                         f"{[sorted(owned(c)) for c in consumers]}")


def each_partition_once(consumers) -> bool:
    sets = [owned(c) for c in consumers]
    return all(sets) and sorted(p for s in sets for p in s) == list(range(PARTITIONS))


def group_settled(b, group_id, members):
    snapshot = b.group(group_id)
    return (snapshot is not None and snapshot.state == "Stable"
            and len(snapshot.members) == members)


def produce(b, count):
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0})
    for i in range(count):
        producer.produce(TOPIC, value=b"v%d" % i, partition=i % PARTITIONS)
    assert producer.flush(10) == 0


def close_all(consumers):
    for consumer in consumers:
        consumer.close()
