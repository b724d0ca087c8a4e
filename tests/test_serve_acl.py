"""`kgroup serve --acl`: each API's authorization check on the wire (Kafka's KafkaApis), real
consumers refused and allowed, and kgroup's client naming what it was not allowed to do."""

from __future__ import annotations

import subprocess
import time

import pytest
from kafka.protocol.admin import (CreateTopicsRequest, DeleteGroupsRequest, DescribeGroupsRequest,
                                  ListGroupsRequest)
from kafka.protocol.consumer import (FetchRequest, HeartbeatRequest, JoinGroupRequest,
                                     LeaveGroupRequest, ListOffsetsRequest, OffsetCommitRequest,
                                     OffsetDeleteRequest, OffsetFetchRequest, SyncGroupRequest)
from kafka.protocol.metadata import FindCoordinatorRequest, MetadataRequest
from kafka.protocol.producer import InitProducerIdRequest

from helpers.secure_clients import rdkafka_static_member_consumes
from kgroup.client.wire import ClusterClient
from kgroup.kafka_errors import (CLUSTER_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED, GROUP_ID_NOT_FOUND, NONE,
                                 TOPIC_AUTHORIZATION_FAILED)
from kgroup.protocol import (ConnectGroupHeartbeatRequest, ConsumerGroupDescribeRequest,
                             ConsumerGroupHeartbeatRequest)
from kgroup.server.acl import OPERATIONS, operations_field, parse_acl
from kgroup.server.harness import PYTHON, ROOT, ThreadedBroker
from kgroup.server.listeners import parse_listener

USERS = {"ops": "s3cret", "alice": "wonder", "bob": "b0b", "admin": "r00t"}
ACLS = ["User:ops:Read:Group:orders-*", "User:ops:Delete:Group:orders-*",
        "User:ops:Read:Topic:events", "User:ops:Write:Topic:events", "User:ops:All:Topic:auto-*",
        "User:alice:Describe:Group:orders-a", "User:alice:Describe:Topic:*",
        "User:bob:Delete:Group:orders-c", "User:bob:Read:Topic:events",
        "User:bob:Describe:Topic:secret", "User:admin:All:*:*", "User:ANONYMOUS:Describe:Topic:events"]
GROUP_OPS = {"ops": {OPERATIONS[op] for op in ("Read", "Describe", "Delete")},
             "alice": {OPERATIONS["Describe"]}}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = ThreadedBroker(tmp_path_factory.mktemp("logs"), topics=[("events", 2), ("secret", 1)],
                       listeners=[parse_listener("SASL_PLAINTEXT://127.0.0.1:0"),
                                  parse_listener("PLAINTEXT://127.0.0.1:0")],
                       users=USERS, acls=[parse_acl(rule) for rule in ACLS])
    b.sasl, b.plain = b.bootstraps
    with _client(b, "admin") as admin:  # orders-c: offsets on both topics
        assert _commit(admin, "orders-c", {"events": [0, 1], "secret": [0]}) == {
            ("events", 0): NONE, ("events", 1): NONE, ("secret", 0): NONE}
    yield b
    b.stop()


def _settings(user):
    return {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
            "sasl_plain_username": user, "sasl_plain_password": USERS[user]}


def _client(broker, user=None):
    if user is None:
        return ClusterClient(broker.plain, timeout_s=10)
    return ClusterClient(broker.sasl, _settings(user), timeout_s=10)


def _commit(client, group, partitions):
    T = OffsetCommitRequest.OffsetCommitRequestTopic
    request = OffsetCommitRequest(version=8, group_id=group, topics=[
        T(name=topic, partitions=[T.OffsetCommitRequestPartition(partition_index=p, committed_offset=0)
                                  for p in parts]) for topic, parts in partitions.items()])
    response = client.send(request)
    return {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}


def _join(client, group):
    return client.send(JoinGroupRequest(version=5, group_id=group, session_timeout_ms=10000,
                                        rebalance_timeout_ms=10000, member_id="",
                                        protocol_type="consumer", protocols=[("range", b"")]))


def _fetch_offsets(client, group, topics=None, version=7):
    T = OffsetFetchRequest.OffsetFetchRequestTopic
    wanted = None if topics is None else [T(name=t, partition_indexes=[0]) for t in topics]
    return client.send(OffsetFetchRequest(version=version, group_id=group, topics=wanted))


# -- the group APIs ---------------------------------------------------------------------------

def test_member_apis_need_read_on_the_group(broker):
    with _client(broker, "alice") as alice:   # Describe only on orders-a
        assert _join(alice, "orders-a").error_code == GROUP_AUTHORIZATION_FAILED
        assert alice.send(SyncGroupRequest(version=3, group_id="orders-a", generation_id=1,
                                           member_id="m", assignments=[])).error_code \
            == GROUP_AUTHORIZATION_FAILED
        assert alice.send(HeartbeatRequest(version=3, group_id="orders-a", generation_id=1,
                                           member_id="m")).error_code == GROUP_AUTHORIZATION_FAILED
        leave = LeaveGroupRequest(version=3, group_id="orders-a", members=[
            LeaveGroupRequest.MemberIdentity(member_id="", group_instance_id="i-1")])
        assert alice.send(leave).error_code == GROUP_AUTHORIZATION_FAILED  # an admin's removal too
        assert alice.send(ConnectGroupHeartbeatRequest(version=0, group_id="orders-a", member_id="",
                                                       member_epoch=0)).error_code \
            == GROUP_AUTHORIZATION_FAILED
    with _client(broker, "ops") as ops:
        assert _join(ops, "orders-x").error_code != GROUP_AUTHORIZATION_FAILED
    with _client(broker) as anonymous:  # PLAINTEXT: User:ANONYMOUS
        assert _join(anonymous, "orders-x").error_code == GROUP_AUTHORIZATION_FAILED


def test_offset_commit_needs_read_on_the_group_and_each_topic(broker):
    with _client(broker, "ops") as ops:
        assert _commit(ops, "orders-d", {"events": [0], "secret": [0]}) == {
            ("events", 0): NONE, ("secret", 0): TOPIC_AUTHORIZATION_FAILED}
        assert _commit(ops, "orders-d", {"secret": [0]}) == {("secret", 0): TOPIC_AUTHORIZATION_FAILED}
    with _client(broker, "alice") as alice:
        assert _commit(alice, "orders-a", {"events": [0, 1]}) == {
            ("events", 0): GROUP_AUTHORIZATION_FAILED, ("events", 1): GROUP_AUTHORIZATION_FAILED}
    assert broker.committed_offsets("orders-d").keys() == {("events", 0)}


def test_offset_fetch_hides_or_refuses_what_is_not_described(broker):
    with _client(broker, "ops") as ops:   # ops may not Describe topic secret
        every = _fetch_offsets(ops, "orders-c")
        assert {t.name for t in every.topics} == {"events"}
        named = _fetch_offsets(ops, "orders-c", ["events", "secret"])
        assert {t.name: t.partitions[0].error_code for t in named.topics} == {
            "events": NONE, "secret": TOPIC_AUTHORIZATION_FAILED}
        G = OffsetFetchRequest.OffsetFetchRequestGroup
        both = ops.send(OffsetFetchRequest(version=8, groups=[
            G(group_id="orders-c", topics=None), G(group_id="billing", topics=None)]))
        assert [(g.group_id, g.error_code, sorted(t.name for t in g.topics)) for g in both.groups] == [
            ("orders-c", NONE, ["events"]), ("billing", GROUP_AUTHORIZATION_FAILED, [])]
    with _client(broker, "alice") as alice:
        assert _fetch_offsets(alice, "orders-b").error_code == GROUP_AUTHORIZATION_FAILED


def test_describe_groups_per_group_with_authorized_operations(broker):
    for user in ("alice", "ops"):
        with _client(broker, user) as client:
            response = client.send(DescribeGroupsRequest(version=5, groups=["orders-a", "billing"],
                                                         include_authorized_operations=True))
            a, billing = response.groups
            assert (a.error_code, a.authorized_operations) == (NONE, GROUP_OPS[user])
            assert billing.error_code == GROUP_AUTHORIZATION_FAILED and billing.members == []


def test_list_groups_shows_only_groups_described_or_all_with_describe_on_the_cluster(broker):
    with _client(broker, "admin") as admin:
        _commit(admin, "billing", {"events": [0]})
        every = {g.group_id for g in admin.send(ListGroupsRequest(version=4)).groups}
    with _client(broker, "alice") as alice:
        seen = {g.group_id for g in alice.send(ListGroupsRequest(version=4)).groups}
    assert {"billing", "orders-c"} <= every
    assert seen <= {"orders-a"}


def test_delete_groups_and_offset_delete_need_delete(broker):
    with _client(broker, "alice") as alice:
        result = alice.send(DeleteGroupsRequest(version=2, groups_names=["orders-a"])).results[0]
        assert result.error_code == GROUP_AUTHORIZATION_FAILED
        T = OffsetDeleteRequest.OffsetDeleteRequestTopic
        request = OffsetDeleteRequest(version=0, group_id="orders-c", topics=[
            T(name="events", partitions=[T.OffsetDeleteRequestPartition(partition_index=0)])])
        assert alice.send(request).error_code == GROUP_AUTHORIZATION_FAILED
    with _client(broker, "ops") as ops:
        request = OffsetDeleteRequest(version=0, group_id="orders-c", topics=[
            T(name="secret", partitions=[T.OffsetDeleteRequestPartition(partition_index=0)])])
        response = ops.send(request)
        assert response.error_code == NONE
        assert response.topics[0].partitions[0].error_code == TOPIC_AUTHORIZATION_FAILED
        deleted = ops.send(DeleteGroupsRequest(version=2, groups_names=["billing", "orders-zz"]))
        assert {r.group_id: r.error_code for r in deleted.results} == {
            "billing": GROUP_AUTHORIZATION_FAILED, "orders-zz": GROUP_ID_NOT_FOUND}


def test_find_coordinator_needs_describe_on_the_group(broker):
    with _client(broker, "alice") as alice:
        response = alice.send(FindCoordinatorRequest(version=4, key_type=0,
                                                     coordinator_keys=["orders-a", "orders-b"]))
        assert [c.error_code for c in response.coordinators] == [NONE, GROUP_AUTHORIZATION_FAILED]
        single = alice.send(FindCoordinatorRequest(version=3, key="orders-b", key_type=0))
        assert (single.error_code, single.node_id) == (GROUP_AUTHORIZATION_FAILED, -1)


def test_consumer_group_heartbeat_needs_read_on_the_group_and_describe_on_its_topics(broker):
    def heartbeat(client, group, topics):
        return client.send(ConsumerGroupHeartbeatRequest(
            version=0, group_id=group, member_id="", member_epoch=0, rebalance_timeout_ms=5000,
            subscribed_topic_names=topics, topic_partitions=[])).error_code

    with _client(broker, "ops") as ops:
        assert heartbeat(ops, "orders-k", ["events", "secret"]) == TOPIC_AUTHORIZATION_FAILED
        assert heartbeat(ops, "orders-k", ["events"]) == NONE
        described = ops.send(ConsumerGroupDescribeRequest(version=0, group_ids=["orders-k", "billing"],
                                                          include_authorized_operations=True))
        k, billing = described.groups
        assert (k.error_code, k.authorized_operations) == (NONE, operations_field(GROUP_OPS["ops"]))
        assert billing.error_code == GROUP_AUTHORIZATION_FAILED
    with _client(broker, "alice") as alice:
        assert heartbeat(alice, "orders-k", ["events"]) == GROUP_AUTHORIZATION_FAILED


# -- topics and the cluster ---------------------------------------------------------------------

def _metadata(client, topics, allow_create=False):
    T = MetadataRequest.MetadataRequestTopic
    return client.send(MetadataRequest(version=9, topics=None if topics is None else [T(name=t) for t in topics],
                                       allow_auto_topic_creation=allow_create,
                                       include_topic_authorized_operations=True))


def test_metadata_filters_topics_and_auto_creation_needs_create(broker):
    with _client(broker, "ops") as ops:
        listed = _metadata(ops, None)
        assert {t.name for t in listed.topics} == {"events"}   # secret left out, not refused
        assert listed.topics[0].authorized_operations == {OPERATIONS[op] for op in ("Read", "Write", "Describe")}
        named = {t.name: t.error_code for t in _metadata(ops, ["events", "secret"]).topics}
        assert named == {"events": NONE, "secret": TOPIC_AUTHORIZATION_FAILED}
        created = {t.name: t.error_code for t in _metadata(ops, ["auto-1", "nope"], True).topics}
        assert created == {"auto-1": NONE, "nope": TOPIC_AUTHORIZATION_FAILED}
    assert broker.run(lambda: sorted(broker.broker.logdir.topics)).count("nope") == 0


def test_fetch_list_offsets_produce_and_create_topics(broker):
    with _client(broker, "alice") as alice:   # Describe on every topic, Read and Write on none
        F = FetchRequest.FetchTopic
        fetch = alice.send(FetchRequest(version=12, max_wait_ms=5000, min_bytes=1, topics=[
            F(topic="events", partitions=[F.FetchPartition(partition=0, partition_max_bytes=1024)])]))
        assert fetch.responses[0].partitions[0].error_code == TOPIC_AUTHORIZATION_FAILED
        L = ListOffsetsRequest.ListOffsetsTopic
        offsets = alice.send(ListOffsetsRequest(version=5, replica_id=-1, topics=[
            L(name="events", partitions=[L.ListOffsetsPartition(partition_index=0, timestamp=-1)])]))
        assert offsets.topics[0].partitions[0].error_code == NONE
        assert alice.send(InitProducerIdRequest(version=4, transactional_id=None,
                                                transaction_timeout_ms=0)).error_code \
            == CLUSTER_AUTHORIZATION_FAILED
    with _client(broker, "ops") as ops:   # Write on events: an idempotent producer may start
        assert ops.send(InitProducerIdRequest(version=4, transactional_id=None,
                                              transaction_timeout_ms=0)).error_code == NONE
        C = CreateTopicsRequest.CreatableTopic
        created = ops.send(CreateTopicsRequest(version=5, topics=[
            C(name="auto-2", num_partitions=1, replication_factor=1),
            C(name="other", num_partitions=1, replication_factor=1)]))
        assert {t.name: t.error_code for t in created.topics} == {"auto-2": NONE,
                                                                  "other": TOPIC_AUTHORIZATION_FAILED}
    with _client(broker) as anonymous:
        offsets = anonymous.send(ListOffsetsRequest(version=5, replica_id=-1, topics=[
            L(name="secret", partitions=[L.ListOffsetsPartition(partition_index=0, timestamp=-1)])]))
        assert offsets.topics[0].partitions[0].error_code == TOPIC_AUTHORIZATION_FAILED


def test_kafka_python_producer_is_refused_a_topic_it_may_not_write(broker):
    from kafka import KafkaProducer
    from kafka.errors import TopicAuthorizationFailedError

    producer = KafkaProducer(bootstrap_servers=broker.sasl, max_block_ms=5000, **_settings("ops"))
    try:
        producer.send("events", b"ok").get(10)
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send("secret", b"no").get(10)
    finally:
        producer.close()


# -- real consumers -------------------------------------------------------------------------------

def test_kafka_python_consumer_allowed_and_denied(broker):
    from kafka import KafkaConsumer
    from kafka.errors import GroupAuthorizationFailedError

    ok = KafkaConsumer("events", group_id="orders-kp", group_instance_id="kp-1",
                       bootstrap_servers=broker.sasl, auto_offset_reset="earliest",
                       session_timeout_ms=6000, heartbeat_interval_ms=500, **_settings("ops"))
    try:
        deadline = time.monotonic() + 30
        while broker.group("orders-kp") is None or broker.group("orders-kp").state != "Stable":
            ok.poll(300)
            assert time.monotonic() < deadline
    finally:
        ok.close()
    denied = KafkaConsumer("events", group_id="orders-b", bootstrap_servers=broker.sasl,
                           **_settings("alice"))
    try:
        with pytest.raises(GroupAuthorizationFailedError):
            for _ in range(20):
                denied.poll(300)
    finally:
        denied.close()


def _rdkafka(broker, user):
    return {"bootstrap.servers": broker.sasl, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": USERS[user]}


def test_confluent_kafka_consumer_allowed_and_denied(broker):
    from confluent_kafka import Consumer, KafkaError

    rdkafka_static_member_consumes(broker, _rdkafka(broker, "ops"), "events", "orders-rdk", 6)
    consumer = Consumer({**_rdkafka(broker, "alice"), "group.id": "orders-b",
                         "session.timeout.ms": 6000})
    try:
        consumer.subscribe(["events"])
        codes = set()
        deadline = time.monotonic() + 20
        while KafkaError.GROUP_AUTHORIZATION_FAILED not in codes and time.monotonic() < deadline:
            msg = consumer.poll(0.3)
            if msg is not None and msg.error() is not None:
                codes.add(msg.error().code())
        assert KafkaError.GROUP_AUTHORIZATION_FAILED in codes
    finally:
        consumer.close()


# -- kgroup's client --------------------------------------------------------------------------------

def _kgroup(broker, tmp_path, user, *args):
    config = tmp_path / f"{user}.properties"
    config.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
                      f"sasl.username={user}\nsasl.password={USERS[user]}\n")
    return subprocess.run([PYTHON, "-m", "kgroup.commands.cli", *args, "--bootstrap-server", broker.sasl,
                           "--command-config", str(config)], capture_output=True, text=True,
                          cwd=str(ROOT), timeout=60)


def _one_line(result, status, line):
    assert (result.returncode, result.stderr) == (status, f"{line}\n")


def test_kgroup_describe_wait_and_list_as_a_describe_only_user(broker, tmp_path):
    with _client(broker, "admin") as admin:
        _commit(admin, "orders-a", {"events": [0]})
    _one_line(_kgroup(broker, tmp_path, "alice", "describe", "orders-b"), 1,
              "kgroup describe: not authorized to Describe group orders-b")
    _one_line(_kgroup(broker, tmp_path, "alice", "describe", "orders-a", "orders-b"), 3,
              "kgroup describe: not authorized to Describe group orders-b")
    assert _kgroup(broker, tmp_path, "alice", "describe", "orders-a", "--offsets").returncode == 0
    _one_line(_kgroup(broker, tmp_path, "alice", "wait", "orders-b", "--state", "Empty",
                      "--timeout", "5"), 1, "kgroup wait: not authorized to Describe group orders-b")
    listed = _kgroup(broker, tmp_path, "alice", "list", "-o", "json")
    assert listed.returncode == 0 and '"orders-a"' in listed.stdout and "billing" not in listed.stdout


def test_kgroup_writes_name_the_operation_refused(broker, tmp_path):
    _one_line(_kgroup(broker, tmp_path, "alice", "delete", "orders-a"), 1,
              "kgroup delete: not authorized to Delete group orders-a")
    _one_line(_kgroup(broker, tmp_path, "alice", "reset-offsets", "orders-a", "--topic", "events",
                      "--to-earliest", "--execute"), 1,
              "kgroup reset-offsets: not authorized to Read group orders-a")
    _one_line(_kgroup(broker, tmp_path, "alice", "delete-offsets", "orders-a", "--topic", "events"), 1,
              "kgroup delete-offsets: not authorized to Delete group orders-a")
    _one_line(_kgroup(broker, tmp_path, "bob", "delete-offsets", "orders-c", "--topic", "events",
                      "--topic", "secret"), 3,
              "kgroup delete-offsets: not authorized to Read topic secret")


def test_kgroup_remove_members_needs_read_on_the_group(broker, tmp_path):
    with _client(broker, "ops") as ops:
        joined = ops.send(JoinGroupRequest(version=5, group_id="orders-a", session_timeout_ms=30000,
                                           rebalance_timeout_ms=10000, member_id="",
                                           group_instance_id="i-1", protocol_type="consumer",
                                           protocols=[("range", b"")]))
        assert joined.error_code == NONE
    _one_line(_kgroup(broker, tmp_path, "alice", "remove-members", "orders-a", "--all"), 1,
              "kgroup remove-members: not authorized to Read group orders-a")
    removed = _kgroup(broker, tmp_path, "ops", "remove-members", "orders-a", "--instance-id", "i-1")
    assert removed.returncode == 0, removed.stderr


def test_serve_refuses_a_bad_acl_with_usage_status(tmp_path):
    result = subprocess.run([PYTHON, "-m", "kgroup.commands.cli", "serve", "--log-dir", str(tmp_path),
                             "--acl", "User:ops:Reed:Group:x"], capture_output=True, text=True,
                            cwd=str(ROOT), timeout=60)
    assert result.returncode == 2
    assert "unknown operation 'Reed'" in result.stderr and not list(tmp_path.iterdir())


# -- every version of the answers that carry a refusal ---------------------------------------------

def test_refusals_encode_at_every_served_version(broker):
    T = OffsetFetchRequest.OffsetFetchRequestTopic
    with _client(broker, "alice") as alice:
        for v in range(1, 10):
            if v <= 7:
                response = alice.send(OffsetFetchRequest(version=v, group_id="orders-b", topics=[
                    T(name="events", partition_indexes=[0])]))
                codes = {response.error_code if v >= 2 else response.topics[0].partitions[0].error_code}
            else:
                G = OffsetFetchRequest.OffsetFetchRequestGroup
                response = alice.send(OffsetFetchRequest(version=v, groups=[G(group_id="orders-b", topics=None)]))
                codes = {g.error_code for g in response.groups}
            assert codes == {GROUP_AUTHORIZATION_FAILED}, v
        for v in range(0, 6):
            groups = alice.send(DescribeGroupsRequest(version=v, groups=["orders-b"])).groups
            assert groups[0].error_code == GROUP_AUTHORIZATION_FAILED, v
        for v in range(0, 4):
            assert alice.send(FindCoordinatorRequest(version=v, key="orders-b")).error_code \
                == GROUP_AUTHORIZATION_FAILED, v
    with _client(broker, "ops") as ops:
        M = MetadataRequest.MetadataRequestTopic
        for v in range(1, 13):
            fields = {"allow_auto_topic_creation": False} if v >= 4 else {}
            if v >= 8:
                fields["include_topic_authorized_operations"] = True
            if 8 <= v <= 10:
                fields["include_cluster_authorized_operations"] = True
            named = ops.send(MetadataRequest(version=v, topics=[M(name="events"), M(name="secret")], **fields))
            assert {t.name: t.error_code for t in named.topics} == {
                "events": NONE, "secret": TOPIC_AUTHORIZATION_FAILED}, v
