"""kgroup serve with kafka-python's admin client, and __consumer_offsets read back like on a broker."""

from __future__ import annotations

import time

import pytest
import kafka.errors as Errors
from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition
from kafka.admin import KafkaAdminClient

from kgroup.server.harness import ThreadedBroker


@pytest.fixture
def broker(tmp_path):
    b = ThreadedBroker(tmp_path / "logs", topics=[("src", 2)])
    yield b
    b.stop()


@pytest.fixture
def admin(broker):
    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    yield a
    a.close()


def _static_member(broker, group, instance):
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group,
                      group_instance_id=instance, session_timeout_ms=3000,
                      heartbeat_interval_ms=300, enable_auto_commit=False)
    # Topic metadata before the first join: kafka-python 3.0.12 can drop the result of the
    # metadata-triggered second join when it completes after a poll() timeout.
    assert c.partitions_for_topic("src") == {0, 1}
    c.subscribe(["src"])
    deadline = time.monotonic() + 15
    while not c.assignment() and time.monotonic() < deadline:
        c.poll(timeout_ms=50)
    assert c.assignment()
    return c


def test_create_topics(admin, broker, tmp_path):
    admin.create_topics({"made": {"num_partitions": 3}})
    assert broker.run(lambda: len(broker.broker.logdir.topics["made"].partitions)) == 3
    assert (tmp_path / "logs" / "made-2" / "00000000000000000000.log").exists()
    with pytest.raises(Errors.TopicAlreadyExistsError):
        admin.create_topics({"made": {"num_partitions": 1}})
    with pytest.raises(Errors.InvalidReplicationFactorError):
        admin.create_topics({"rf3": {"num_partitions": 1, "replication_factor": 3}})
    with pytest.raises(Errors.InvalidTopicError):
        admin.create_topics({"bad/name": {"num_partitions": 1}})


def test_describe_list_delete_groups_and_offsets(admin, broker):
    c = _static_member(broker, "ops", "ops-1")
    try:
        c.commit({TopicPartition("src", 0): OffsetAndMetadata(3, "", -1),
                  TopicPartition("src", 1): OffsetAndMetadata(4, "", -1)})
        described = admin.describe_groups(["ops"])["ops"]
        assert described["group_state"] == "Stable"
        assert described["protocol_type"] == "consumer"
        assert [m["group_instance_id"] for m in described["members"]] == ["ops-1"]
        listed = {g["group_id"]: g for g in admin.list_groups()}
        assert listed["ops"]["protocol_type"] == "consumer"
        # OffsetDelete refuses partitions the live group is subscribed to.
        result = admin.delete_group_offsets("ops", [TopicPartition("src", 0)])
        assert result[TopicPartition("src", 0)] is Errors.GroupSubscribedToTopicError
        # A non-empty group cannot be deleted.
        assert admin.delete_groups(["ops"])["ops"] == "NonEmptyGroupError"
    finally:
        c.close(autocommit=False)
    # Static members do not leave on close; remove it, then the empty group can be deleted.
    from kafka.admin import MemberToRemove
    admin.remove_group_members("ops", [MemberToRemove(group_instance_id="ops-1")])
    deadline = time.monotonic() + 10
    while broker.group("ops").state != "Empty":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert admin.delete_groups(["ops"])["ops"] == "OK"
    assert broker.committed_offsets("ops") == {}


def test_consumer_offsets_topic_can_be_fetched(broker):
    from kgroup.records import decode_key, decode_value, partition_for

    c = _static_member(broker, "readme", "r-1")
    c.commit({TopicPartition("src", 1): OffsetAndMetadata(42, "hello", -1)})
    c.close(autocommit=False)
    part = partition_for("readme", 50)
    reader = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                           consumer_timeout_ms=1500)
    reader.assign([TopicPartition("__consumer_offsets", part)])
    reader.seek_to_beginning()
    records = [(decode_key(m.key), m.value) for m in reader]
    reader.close()
    commits = [(k, decode_value(k.record_type, v)) for k, v in records if k.record_type == 1]
    assert len(commits) == 1
    key, value = commits[0]
    assert key.data == {"group": "readme", "topic": "src", "partition": 1}
    assert (value.data["offset"], value.data["metadata"]) == (42, "hello")
    groups = [k for k, v in records if k.record_type == 2]
    assert groups and all(k.data == {"group": "readme"} for k in groups)


def test_offset_commit_to_unknown_topic_or_partition_is_refused(broker):
    from kafka.protocol.consumer import OffsetCommitRequest, OffsetCommitResponse
    from kgroup.server.harness import raw_request

    C = OffsetCommitRequest.OffsetCommitRequestTopic
    P = C.OffsetCommitRequestPartition

    def commit(topics):
        req = OffsetCommitRequest(version=8, group_id="standalone", generation_id_or_member_epoch=-1,
                                  member_id="", group_instance_id=None, topics=[
                                      C(name=name, partitions=[P(partition_index=i, committed_offset=7,
                                                                 committed_leader_epoch=-1,
                                                                 committed_metadata="")
                                                               for i in parts])
                                      for name, parts in topics])
        resp = OffsetCommitResponse.decode(raw_request(broker.address, req), version=8, header=True)
        return sorted((t.name, p.partition_index, p.error_code)
                      for t in resp.topics for p in t.partitions)

    assert commit([("src", [0, 1, 5]), ("nope", [0])]) == [
        ("nope", 0, 3), ("src", 0, 0), ("src", 1, 0), ("src", 5, 3)]
    assert commit([("nope", [2])]) == [("nope", 2, 3)]
    committed = broker.committed_offsets("standalone")
    assert {tp: om.offset for tp, om in committed.items()} == {("src", 0): 7, ("src", 1): 7}


def test_offset_commit_v10_names_topics_by_id(broker):
    """OffsetCommit v10 (Kafka 4.4; the Java client 4.4 sends it): a known topic id commits (it was
    answered UNKNOWN_TOPIC_OR_PARTITION once, as serve looked its topics up by name, and the Java
    client retried for ever), an unknown id is UNKNOWN_TOPIC_ID, a partition the topic lacks
    UNKNOWN_TOPIC_OR_PARTITION — each answered under the request's topic id, as KafkaApis does."""
    import uuid

    from kafka.protocol.consumer import OffsetCommitRequest, OffsetCommitResponse
    from kafka.protocol.metadata import MetadataRequest, MetadataResponse
    from kgroup.server.harness import raw_request

    metadata = MetadataResponse.decode(raw_request(broker.address, MetadataRequest(
        version=12, topics=None, allow_auto_topic_creation=False)), version=12, header=True)
    src = next(t.topic_id for t in metadata.topics if t.name == "src")
    stranger = uuid.uuid4()
    C = OffsetCommitRequest.OffsetCommitRequestTopic
    P = C.OffsetCommitRequestPartition
    request = OffsetCommitRequest(version=10, group_id="by-id", generation_id_or_member_epoch=-1,
                                  member_id="", group_instance_id=None, topics=[
                                      C(topic_id=ident, partitions=[P(partition_index=i, committed_offset=9,
                                                                      committed_leader_epoch=-1,
                                                                      committed_metadata="") for i in parts])
                                      for ident, parts in [(src, [0, 1, 5]), (stranger, [0])]])
    response = OffsetCommitResponse.decode(raw_request(broker.address, request), version=10, header=True)
    assert sorted((str(t.topic_id), p.partition_index, p.error_code)
                  for t in response.topics for p in t.partitions) == sorted([
        (str(src), 0, 0), (str(src), 1, 0), (str(src), 5, 3), (str(stranger), 0, 100)])
    committed = broker.committed_offsets("by-id")
    assert {tp: om.offset for tp, om in committed.items()} == {("src", 0): 9, ("src", 1): 9}


def test_produced_minus_consumed_is_the_lag_kgroup_describe_reports(broker):
    import json
    import subprocess
    import sys

    from kafka import KafkaProducer
    from kgroup.server.harness import ROOT

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)  # idempotent by default
    for i in range(30):
        producer.send("src", value=b"%d" % i, partition=i % 2)
    producer.flush()
    producer.close()
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id="lagging",
                      group_instance_id="lag-1", auto_offset_reset="earliest",
                      enable_auto_commit=False, max_poll_records=4, session_timeout_ms=6000)
    try:
        assert c.partitions_for_topic("src") == {0, 1}
        c.subscribe(["src"])
        consumed = []
        deadline = time.monotonic() + 15
        while len(consumed) < 11 and time.monotonic() < deadline:
            consumed += [m for ms in c.poll(timeout_ms=100, max_records=4).values() for m in ms]
        assert 11 <= len(consumed) < 30
        c.commit()  # every assigned partition's position
        tps = [TopicPartition("src", p) for p in (0, 1)]
        end = c.end_offsets(tps)
        assert end == {tps[0]: 15, tps[1]: 15}
        expected = {tp.partition: 15 - c.position(tp) for tp in tps}
        assert {tp.partition: end[tp] - c.committed(tp) for tp in tps} == expected
        assert sum(expected.values()) == 30 - len(consumed)
        result = subprocess.run(
            [sys.executable, "-m", "kgroup.commands.cli", "describe", "lagging", "--offsets",
             "-o", "json", "--bootstrap-server", broker.bootstrap],
            capture_output=True, text=True, timeout=30, cwd=str(ROOT))
        assert result.returncode == 0, result.stderr
        (view,) = json.loads(result.stdout)
        assert {o["partition"]: (o["log_end"], o["lag"], o["group_instance_id"])
                for o in view["offsets"]} == {p: (15, lag, "lag-1") for p, lag in expected.items()}
    finally:
        c.close(autocommit=False)


def test_create_partitions_grows_a_topic_and_refuses_what_kafka_refuses(tmp_path):
    """CreatePartitions (the differential runner's partition increase): the new partitions are
    in Metadata and writable; a smaller or equal count and an unknown topic get Kafka's errors."""
    from kafka.admin import KafkaAdminClient, NewPartitions
    from kafka.errors import InvalidPartitionsError, UnknownTopicOrPartitionError

    from kgroup.server.harness import ThreadedBroker

    b = ThreadedBroker(tmp_path / "logs", topics=[("grow", 2)])
    try:
        admin = KafkaAdminClient(bootstrap_servers=b.bootstrap)
        try:
            admin.create_partitions({"grow": NewPartitions(5)})
            assert len(admin.describe_topics(["grow"])[0]["partitions"]) == 5
            assert len(b.broker.logdir.topics["grow"].partitions) == 5
            for count, error in ((5, InvalidPartitionsError), (3, InvalidPartitionsError)):
                try:
                    admin.create_partitions({"grow": NewPartitions(count)})
                except error:
                    pass
                else:
                    raise AssertionError(f"count {count} accepted")
            try:
                admin.create_partitions({"nope": NewPartitions(3)})
            except UnknownTopicOrPartitionError:
                pass
            else:
                raise AssertionError("unknown topic accepted")
        finally:
            admin.close()
    finally:
        b.stop()
