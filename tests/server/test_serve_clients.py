"""kgroup serve with librdkafka (confluent-kafka) and aiokafka clients."""

from __future__ import annotations

import asyncio
import time

import pytest

from kgroup.server.harness import ThreadedBroker

TOPIC = "events"
PARTITIONS = 4


@pytest.fixture
def broker(tmp_path):
    b = ThreadedBroker(tmp_path / "logs", topics=[(TOPIC, PARTITIONS)])
    yield b
    b.stop()


def group(b, group_id):
    return b.group(group_id)


def committed(b, group_id):
    offsets = b.committed_offsets(group_id)
    return {tp: om.offset for tp, om in offsets.items()}


def _confluent_consumer(b, instance):
    from confluent_kafka import Consumer

    return Consumer({"bootstrap.servers": b.bootstrap, "group.id": "rdk",
                     "group.instance.id": instance, "session.timeout.ms": 3000,
                     "heartbeat.interval.ms": 300, "auto.offset.reset": "earliest",
                     "enable.auto.commit": False, "topic.metadata.refresh.interval.ms": 1000})


def test_confluent_kafka_static_consumer_consumes_commits_and_bounces(broker):
    from confluent_kafka import Producer, TopicPartition

    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(40):
        producer.produce(TOPIC, key=b"k%d" % i, value=b"v%d" % i, partition=i % PARTITIONS)
    assert producer.flush(10) == 0
    consumer = _confluent_consumer(broker, "rdk-1")
    consumer.subscribe([TOPIC])
    values = []
    deadline = time.monotonic() + 30
    while len(values) < 40 and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None and msg.error() is None:
            values.append((msg.partition(), msg.offset(), msg.value()))
    assert sorted(v[2] for v in values) == sorted(b"v%d" % i for i in range(40))
    assert {(p, o) for p, o, _ in values} == {(p, o) for p in range(PARTITIONS) for o in range(10)}
    consumer.commit(asynchronous=False)
    assert committed(broker, "rdk") == {(TOPIC, p): 10 for p in range(PARTITIONS)}
    before = group(broker, "rdk")
    assert before.state == "Stable" and set(before.static_members) == {"rdk-1"}
    consumer.close()  # a static librdkafka member does not leave the group
    consumer = _confluent_consumer(broker, "rdk-1")
    consumer.subscribe([TOPIC])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        consumer.poll(0.2)
        if len(consumer.assignment()) == PARTITIONS:
            break
    after = group(broker, "rdk")
    assert sorted(tp.partition for tp in consumer.assignment()) == list(range(PARTITIONS))
    assert after.generation == before.generation  # static rejoin: no rebalance
    assert after.static_members["rdk-1"] != before.static_members["rdk-1"]
    positions = consumer.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)], 10)
    assert [tp.offset for tp in positions] == [10] * PARTITIONS
    consumer.close()


def test_aiokafka_group_consumer_consumes_and_commits(broker):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def scenario():
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=False)
        await producer.start()
        try:
            for i in range(20):
                await producer.send_and_wait(TOPIC, b"a%d" % i, partition=i % PARTITIONS)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(TOPIC, bootstrap_servers=broker.bootstrap, group_id="aio",
                                    group_instance_id="aio-1", session_timeout_ms=3000,
                                    heartbeat_interval_ms=300, auto_offset_reset="earliest",
                                    enable_auto_commit=False)
        await consumer.start()
        try:
            got = []
            while len(got) < 20:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=200), 20)
                for records in batch.values():
                    got.extend(r.value for r in records)
            await consumer.commit()
        finally:
            await consumer.stop()
        return got

    got = asyncio.run(scenario())
    assert sorted(got) == sorted(b"a%d" % i for i in range(20))
    assert committed(broker, "aio") == {(TOPIC, p): 5 for p in range(PARTITIONS)}
    g = group(broker, "aio")
    assert set(g.static_members) == {"aio-1"}


def test_confluent_kafka_rolling_bounce_of_two_static_members(broker):
    def member(instance):
        from confluent_kafka import Consumer

        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "roll",
                      "group.instance.id": instance, "session.timeout.ms": 6000,
                      "heartbeat.interval.ms": 300, "enable.auto.commit": False,
                      "partition.assignment.strategy": "range"})
        c.subscribe([TOPIC])
        return c

    def settle(consumers, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for c in consumers.values():
                c.poll(0.05)
            settled = settled_group(broker, "roll", consumers)
            if settled:
                return settled
        raise AssertionError(f"group roll did not settle: {group(broker, 'roll')}")

    consumers = {name: member(name) for name in ("r-a", "r-b")}
    try:
        before, owned_before = settle(consumers)
        for name in ("r-a", "r-b"):
            consumers[name].close()  # static: no LeaveGroup
            consumers[name] = member(name)
            after, owned = settle(consumers)
            assert after.generation == before.generation
            assert owned == owned_before
    finally:
        for c in consumers.values():
            c.close()


def settled_group(broker, group_id, consumers):
    """(group, {name: partitions}) once the group is Stable with every consumer owning some of
    the topic's partitions and all of them owned; None before that."""
    g = group(broker, group_id)
    owned = {name: sorted(tp.partition for tp in c.assignment()) for name, c in consumers.items()}
    if (g is not None and g.state == "Stable" and len(g.members) == len(consumers)
            and sorted(p for ps in owned.values() for p in ps) == list(range(PARTITIONS))
            and all(owned.values())):
        return g, owned
    return None


def test_aiokafka_static_rolling_bounce_keeps_generation_and_partitions(broker):
    from aiokafka import AIOKafkaConsumer

    def member(instance):
        return AIOKafkaConsumer(TOPIC, bootstrap_servers=broker.bootstrap, group_id="aio-roll",
                                group_instance_id=instance, session_timeout_ms=6000,
                                heartbeat_interval_ms=300, enable_auto_commit=False)

    async def settle(consumers, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            settled = settled_group(broker, "aio-roll", consumers)
            if settled:
                return settled
        raise AssertionError(f"group aio-roll did not settle: {group(broker, 'aio-roll')}")

    async def scenario():
        consumers = {name: member(name) for name in ("x-a", "x-b")}
        for c in consumers.values():
            await c.start()
        try:
            before, owned_before = await settle(consumers)
            for name in ("x-a", "x-b"):
                await consumers[name].stop()  # static: aiokafka sends no LeaveGroup
                assert name in group(broker, "aio-roll").static_members
                consumers[name] = member(name)
                await consumers[name].start()
                after, owned = await settle(consumers)
                assert after.generation == before.generation  # no rebalance
                assert owned == owned_before                 # same partitions
                assert after.static_members[name] != before.static_members[name]
        finally:
            for c in consumers.values():
                await c.stop()

    asyncio.run(scenario())
