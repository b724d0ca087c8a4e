"""kgroup serve hosting KIP-848 consumer groups, driven by real librdkafka consumers
(confluent-kafka, ``group.protocol=consumer``, ConsumerGroupHeartbeat v1) and raw requests.

The broker's consumer-group minimums are lowered with ``--config`` keys so sessions expire in
seconds; every wait polls until a condition holds (the machine may be loaded), never a fixed sleep.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import threading
import time

import pytest

from kgroup.server.harness import PYTHON, ROOT, ThreadedBroker, raw_request

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


@pytest.fixture
def broker(tmp_path):
    b = ThreadedBroker(tmp_path / "logs", topics=[(TOPIC, PARTITIONS)], config=FAST_CONSUMER_GROUPS)
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


# -- the wire: ApiVersions, raw heartbeat and describe, config keys --------------------------------

def test_raw_heartbeat_and_describe_use_the_configured_interval(broker):
    import uuid

    from kgroup.protocol import (ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse,
                                 ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse)

    member = str(uuid.uuid4())
    raw = raw_request(broker.address, ConsumerGroupHeartbeatRequest(
        version=1, group_id="raw", member_id=member, member_epoch=0, rebalance_timeout_ms=30000,
        subscribed_topic_names=[TOPIC], topic_partitions=[]))
    beat = ConsumerGroupHeartbeatResponse.decode(raw, version=1, header=True)
    assert (beat.error_code, beat.member_id, beat.member_epoch) == (0, member, 1)
    assert beat.heartbeat_interval_ms == HEARTBEAT_MS
    topic_id = broker.run(lambda: broker.broker.logdir.topics[TOPIC].topic_id)
    assert [(t.topic_id, sorted(t.partitions)) for t in beat.assignment.topic_partitions] == \
        [(topic_id, list(range(PARTITIONS)))]
    raw = raw_request(broker.address, ConsumerGroupDescribeRequest(
        version=1, group_ids=["raw", "nope"], include_authorized_operations=False))
    described = ConsumerGroupDescribeResponse.decode(raw, version=1, header=True)
    found, missing = described.groups
    assert (found.error_code, found.group_epoch, found.assignor_name) == (0, 1, "uniform")
    assert [m.member_id for m in found.members] == [member]
    assert missing.error_code == 69  # GROUP_ID_NOT_FOUND


def test_consumer_group_keys_pass_through_config(tmp_path):
    b = ThreadedBroker(tmp_path / "logs", config={**FAST_CONSUMER_GROUPS,
                                                  "group.consumer.assignors": "range",
                                                  "group.consumer.max.size": "7"})
    try:
        config = b.run(lambda: b.broker.groups.coord.config)
        assert config.group_consumer_session_timeout_ms == SESSION_MS
        assert config.group_consumer_min_session_timeout_ms == 1000
        assert config.group_consumer_heartbeat_interval_ms == HEARTBEAT_MS
        assert config.group_consumer_min_heartbeat_interval_ms == 100
        assert config.group_consumer_assignors == ("range",)
        assert config.group_consumer_max_size == 7
    finally:
        b.stop()


@pytest.mark.parametrize("pair, needle", [
    ("group.consumer.assignors=sticky", "sticky"),
    ("group.consumer.session.timeout.ms=1000", "group.consumer.session.timeout.ms"),
    ("group.consumer.heartbeat.interval.ms=100", "group.consumer.heartbeat.interval.ms"),
])
def test_bad_consumer_group_config_exits_2(tmp_path, pair, needle):
    log_dir = tmp_path / "d"
    result = subprocess.run([PYTHON, "-m", "kgroup.commands.cli", "serve", "--listen",
                             "127.0.0.1:0", "--log-dir", str(log_dir), "--config", pair],
                            capture_output=True, text=True, timeout=30, cwd=str(ROOT))
    assert result.returncode == 2, result.stderr
    assert needle in result.stderr and "Traceback" not in result.stderr


# -- librdkafka consumers --------------------------------------------------------------------------

def test_static_consumers_join_consume_commit_and_an_added_one_gets_partitions(broker):
    from confluent_kafka import TopicPartition

    produce(broker, 60)
    consumers = [new_consumer(broker, f"i{n}") for n in range(3)]
    seen = set()
    try:
        poll_until(consumers, lambda: each_partition_once(consumers) and len(seen) == 60
                   and group_settled(broker, "cg", 3),
                   on_message=lambda c, m: seen.add((m.partition(), m.offset())))
        assert seen == {(p, o) for p in range(PARTITIONS) for o in range(10)}
        snapshot = broker.group("cg")
        assert set(snapshot.static_members) == {"i0", "i1", "i2"}
        for consumer in consumers:
            consumer.commit(asynchronous=False)
        offsets = broker.committed_offsets("cg")
        assert {tp: om.offset for tp, om in offsets.items()} == \
            {(TOPIC, p): 10 for p in range(PARTITIONS)}
        positions = consumers[0].committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)],
                                           10)
        assert [tp.offset for tp in positions] == [10] * PARTITIONS

        # A fourth consumer: the others give up partitions one by one and never stop owning some.
        epoch = snapshot.group_epoch
        consumers.append(new_consumer(broker, "i3"))
        emptied = []

        def rebalanced():
            emptied.extend(n for n, c in enumerate(consumers[:3]) if not owned(c))
            return each_partition_once(consumers) and group_settled(broker, "cg", 4)

        poll_until(consumers, rebalanced)
        assert emptied == []
        assert broker.group("cg").group_epoch == epoch + 1
    finally:
        close_all(consumers)


def test_static_restart_gets_its_partitions_back_without_an_epoch_bump(broker):
    consumers = [new_consumer(broker, f"s{n}") for n in range(2)]
    try:
        poll_until(consumers, lambda: each_partition_once(consumers)
                   and group_settled(broker, "cg", 2))
        before = broker.group("cg")
        mine = owned(consumers[0])
        consumers[0].close()  # a static member leaves temporarily (epoch -2)
        consumers[0] = new_consumer(broker, "s0")
        poll_until(consumers, lambda: owned(consumers[0]) == mine
                   and group_settled(broker, "cg", 2))
        after = broker.group("cg")
        assert after.group_epoch == before.group_epoch
        assert after.static_members["s0"] != before.static_members["s0"]
        assert after.static_members["s1"] == before.static_members["s1"]
    finally:
        close_all(consumers)


def test_a_duplicate_instance_id_fails_the_new_consumer(broker):
    from confluent_kafka import KafkaError

    first = new_consumer(broker, "dup")
    errors = []
    try:
        poll_until([first], lambda: owned(first) == set(range(PARTITIONS)))
        second = new_consumer(broker, "dup")
        try:
            # librdkafka raises UNRELEASED_INSTANCE_ID as a fatal error of the new consumer.
            poll_until([first, second], lambda: any(e.code() == KafkaError._FATAL for e in errors),
                       on_error=errors.append)
            fatal = next(e for e in errors if e.code() == KafkaError._FATAL)
            assert "instance ID is still used by another member" in fatal.str()
            assert not owned(second)
            assert owned(first) == set(range(PARTITIONS))
            assert len(broker.group("cg").members) == 1
        finally:
            second.close()
    finally:
        first.close()


# A consumer in a child process, so the test can kill -9 it.
CHILD_CONSUMER = """
import sys
from confluent_kafka import Consumer
consumer = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "cg",
                     "group.protocol": "consumer", "group.instance.id": sys.argv[2]})
consumer.subscribe([sys.argv[3]])
while True:
    consumer.poll(0.1)
"""


def test_kill_9_of_a_consumer_expires_its_session_and_its_partitions_move(broker):
    child = subprocess.Popen([PYTHON, "-c", CHILD_CONSUMER, broker.bootstrap, "k0", TOPIC],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    survivor = new_consumer(broker, "k1")
    try:
        poll_until([survivor], lambda: group_settled(broker, "cg", 2)
                   and 0 < len(owned(survivor)) < PARTITIONS)
        epoch = broker.group("cg").group_epoch
        child.kill()
        child.wait(10)
        poll_until([survivor], lambda: owned(survivor) == set(range(PARTITIONS))
                   and group_settled(broker, "cg", 1))
        snapshot = broker.group("cg")
        assert set(snapshot.static_members) == {"k1"}
        assert snapshot.group_epoch > epoch
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
        survivor.close()


def test_a_topic_created_while_subscribed_is_assigned(broker):
    from confluent_kafka import Consumer
    from confluent_kafka.admin import AdminClient, NewTopic

    consumer = Consumer(consumer_config(broker, "late"))
    consumer.subscribe(["later"])
    try:
        poll_until([consumer], lambda: group_settled(broker, "cg", 1))
        assert not owned(consumer)
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("later", 3, 1)])["later"].result(10)
        poll_until([consumer], lambda: len(consumer.assignment()) == 3)
        assert {tp.topic for tp in consumer.assignment()} == {"later"}
    finally:
        consumer.close()


def test_a_restarted_server_keeps_the_consumer_group(tmp_path):
    config = {**FAST_CONSUMER_GROUPS, "group.consumer.session.timeout.ms": "60000",
              "group.consumer.max.session.timeout.ms": "60000"}
    b = ThreadedBroker(tmp_path / "logs", topics=[(TOPIC, PARTITIONS)], config=config)
    consumers = [new_consumer(b, f"r{n}") for n in range(2)]
    try:
        poll_until(consumers, lambda: each_partition_once(consumers) and group_settled(b, "cg", 2))
        before = b.group("cg")
        owned_before = [owned(c) for c in consumers]
    finally:
        close_all(consumers)  # static members leave temporarily: their assignments stay
        b.stop()
    b = ThreadedBroker(tmp_path / "logs", config=config)
    consumers = []
    try:
        after = b.group("cg")
        assert (after.group_epoch, after.static_members, after.target) == \
            (before.group_epoch, before.static_members, before.target)
        # The members rejoin the restarted server with their partitions and no epoch bump (its
        # topic image was given back at start-up, so no subscribed topic looks deleted).
        consumers = [new_consumer(b, f"r{n}") for n in range(2)]
        poll_until(consumers, lambda: [owned(c) for c in consumers] == owned_before
                   and group_settled(b, "cg", 2))
        assert b.group("cg").group_epoch == before.group_epoch
    finally:
        close_all(consumers)
        b.stop()


# -- the Kafka Java client (ConsumerGroupHeartbeat v0: the server makes the member id) ----------

JAVA_SOURCE = ROOT / "tests" / "java" / "StaticConsumer.java"


def _kafka_client_jars():
    """kafka-clients 3.9 and slf4j-api from the shigawire-apache-flink-libraries wheel, or None."""
    for entry in sys.path:
        lib = pathlib.Path(entry) / "pyflink" / "lib"
        if (lib / "kafka-clients.jar").is_file():
            return [lib / "kafka-clients.jar", lib / "slf4j-api.jar"]
    return None


@pytest.fixture(scope="module")
def java_classpath(tmp_path_factory):
    if shutil.which("java") is None or shutil.which("javac") is None:
        pytest.skip("the Java client test needs java and javac on PATH")
    jars = _kafka_client_jars()
    if jars is None:
        pytest.skip("the Java client test needs kafka-clients.jar from the "
                    "shigawire-apache-flink-libraries wheel (pip install '.[test]')")
    classes = tmp_path_factory.mktemp("java-classes")
    subprocess.run(["javac", "-d", str(classes), "-cp", str(jars[0]), str(JAVA_SOURCE)],
                   check=True, capture_output=True, timeout=120)
    return os.pathsep.join([str(classes), *map(str, jars)])


def run_java_consumer(classpath, b, instance, records, timeout_s):
    return subprocess.Popen(["java", "-cp", classpath, "StaticConsumer", b.bootstrap, "cg",
                             instance, TOPIC, str(records), str(timeout_s)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def test_java_client_consumes_and_commits(broker, java_classpath):
    produce(broker, 60)
    java = run_java_consumer(java_classpath, broker, "java", 60, 90)
    out, _ = java.communicate(timeout=120)
    assert java.returncode == 0, out
    assert "consumed 60\ncommitted\n" in out
    offsets = broker.committed_offsets("cg")
    assert {tp: om.offset for tp, om in offsets.items()} == \
        {(TOPIC, p): 10 for p in range(PARTITIONS)}
    snapshot = broker.group("cg")
    # A static member that closes leaves temporarily (epoch -2) and keeps its partitions.
    (member,) = snapshot.members
    assert (member.instance_id, member.member_epoch) == ("java", -2)
    assert sorted(member.assigned[next(iter(member.assigned))]) == list(range(PARTITIONS))


def test_java_and_librdkafka_consumers_share_a_group(broker, java_classpath):
    rdk = new_consumer(broker, "rdk")
    try:
        poll_until([rdk], lambda: owned(rdk) == set(range(PARTITIONS)))
        java = run_java_consumer(java_classpath, broker, "java", 1_000_000, 120)
        lines = []
        reader = threading.Thread(target=lambda: lines.extend(java.stdout), daemon=True)
        reader.start()
        try:
            def java_owned():
                assigned = [line.split()[1:] for line in list(lines) if line.startswith("assigned")]
                return {int(p) for p in assigned[-1][0].split(",")} if assigned and assigned[-1] \
                    else set()

            # Each partition is owned once, and each consumer owns some.
            poll_until([rdk], lambda: java_owned() and owned(rdk)
                       and not owned(rdk) & java_owned()
                       and owned(rdk) | java_owned() == set(range(PARTITIONS))
                       and group_settled(broker, "cg", 2), timeout=90)
            assert set(broker.group("cg").static_members) == {"rdk", "java"}
        finally:
            java.kill()
            java.wait(10)
            reader.join(10)
    finally:
        rdk.close()
