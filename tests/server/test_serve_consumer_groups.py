"""kgroup serve hosting KIP-848 consumer groups, driven by raw requests and real librdkafka
consumers (confluent-kafka, ``group.protocol=consumer``, ConsumerGroupHeartbeat v1)."""

from __future__ import annotations

import subprocess

import pytest
from helpers.rdkafka_groups import broker  # noqa: F401 - the fixture
from helpers.rdkafka_groups import (FAST_CONSUMER_GROUPS, HEARTBEAT_MS, PARTITIONS, SESSION_MS,
                                    TOPIC, close_all, consumer_config, each_partition_once,
                                    group_settled, new_consumer, owned, poll_until, produce)

from kgroup.server.harness import PYTHON, ROOT, ThreadedBroker, raw_request


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
    assert (beat.error_code, beat.member_id, beat.member_epoch) == (0, member, 2)
    assert beat.heartbeat_interval_ms == HEARTBEAT_MS
    topic_id = broker.run(lambda: broker.broker.logdir.topics[TOPIC].topic_id)
    assert [(t.topic_id, sorted(t.partitions)) for t in beat.assignment.topic_partitions] == \
        [(topic_id, list(range(PARTITIONS)))]
    raw = raw_request(broker.address, ConsumerGroupDescribeRequest(
        version=1, group_ids=["raw", "nope"], include_authorized_operations=False))
    described = ConsumerGroupDescribeResponse.decode(raw, version=1, header=True)
    found, missing = described.groups
    assert (found.error_code, found.group_epoch, found.assignor_name) == (0, 2, "uniform")
    assert [m.member_id for m in found.members] == [member]
    assert missing.error_code == 69  # GROUP_ID_NOT_FOUND


def test_describe_groups_v6_and_list_groups_v5_answer_for_consumer_groups(broker):
    import uuid

    from kafka.protocol.admin.groups import (DescribeGroupsRequest, DescribeGroupsResponse,
                                             ListGroupsRequest, ListGroupsResponse)

    from kgroup.protocol import ConsumerGroupHeartbeatRequest

    raw_request(broker.address, ConsumerGroupHeartbeatRequest(
        version=1, group_id="new", member_id=str(uuid.uuid4()), member_epoch=0, rebalance_timeout_ms=30000,
        subscribed_topic_names=[TOPIC], topic_partitions=[]))
    raw = raw_request(broker.address, DescribeGroupsRequest(version=6, groups=["new", "nope"],
                                                            include_authorized_operations=False))
    described = DescribeGroupsResponse.decode(raw, version=6, header=True).groups
    assert [(g.error_code, g.group_state, g.error_message) for g in described] == [
        (69, "Dead", "Group new is not a classic group."), (69, "Dead", "Group nope not found.")]

    def listed(types):
        raw = raw_request(broker.address, ListGroupsRequest(version=5, states_filter=[], types_filter=types))
        return [(g.group_id, g.group_type) for g in ListGroupsResponse.decode(raw, version=5, header=True).groups]

    assert listed(["CONSUMER"]) == [("new", "consumer")]
    assert listed(["classic"]) == []


def test_metadata_v12_names_topics_by_id_as_assignments_need(broker):
    import uuid

    from kafka.protocol.metadata import MetadataRequest, MetadataResponse

    topic_id = broker.run(lambda: broker.broker.logdir.topics[TOPIC].topic_id)
    unknown = uuid.uuid4()
    by_id = MetadataRequest.MetadataRequestTopic
    raw = raw_request(broker.address, MetadataRequest(
        version=12, topics=[by_id(topic_id=topic_id, name=None), by_id(topic_id=unknown, name=None)],
        allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    known, missing = MetadataResponse.decode(raw, version=12, header=True).topics
    assert (known.error_code, known.name, known.topic_id, len(known.partitions)) == (0, TOPIC, topic_id, PARTITIONS)
    assert (missing.error_code, missing.name, missing.topic_id) == (100, None, unknown)   # UNKNOWN_TOPIC_ID


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

        # A fourth consumer: the others revoke only what moves and keep owning partitions.
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


