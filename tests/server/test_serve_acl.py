"""`kgroup serve --acl` on the wire: each API's authorization check where Kafka's KafkaApis makes it,
at every served version of the answers that carry a refusal."""

from __future__ import annotations

from kafka.protocol.admin import (CreateTopicsRequest, DeleteGroupsRequest, DescribeGroupsRequest,
                                  ListGroupsRequest)
from kafka.protocol.consumer import (FetchRequest, HeartbeatRequest, LeaveGroupRequest,
                                     ListOffsetsRequest, OffsetDeleteRequest, OffsetFetchRequest,
                                     SyncGroupRequest)
from kafka.protocol.metadata import FindCoordinatorRequest, MetadataRequest
from kafka.protocol.producer import InitProducerIdRequest

from helpers.acl_broker import GROUP_OPS, acl_broker as broker, client_of, commit, fetch_offsets, join  # noqa: F401
from kgroup.kafka_errors import (CLUSTER_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED,
                                 GROUP_ID_NOT_FOUND, NONE, TOPIC_AUTHORIZATION_FAILED)
from kgroup.client.wire import ClusterClient
from kgroup.protocol import (ConnectGroupDescribeRequest, ConnectGroupHeartbeatRequest,
                             ConnectGroupSetConnectorsRequest, ConsumerGroupDescribeRequest,
                             ConsumerGroupHeartbeatRequest)
from kgroup.server.security.acl import OPERATIONS, operations_field


# -- the group APIs ---------------------------------------------------------------------------

def test_member_apis_need_read_on_the_group(broker):
    with client_of(broker, "alice") as alice:   # Describe only on orders-a
        assert join(alice, "orders-a").error_code == GROUP_AUTHORIZATION_FAILED
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
        assert alice.send(ConnectGroupSetConnectorsRequest(version=0, group_id="orders-a", connectors=[
        ])).error_code == GROUP_AUTHORIZATION_FAILED
        described = alice.send(ConnectGroupDescribeRequest(version=0, group_ids=["orders-a", "orders-b"]))
        assert [(g.group_id, g.error_code) for g in described.groups] == [
            ("orders-a", GROUP_ID_NOT_FOUND), ("orders-b", GROUP_AUTHORIZATION_FAILED)]
    with client_of(broker, "ops") as ops:
        assert join(ops, "orders-x").error_code != GROUP_AUTHORIZATION_FAILED
    with client_of(broker) as anonymous:  # PLAINTEXT: User:ANONYMOUS
        assert join(anonymous, "orders-x").error_code == GROUP_AUTHORIZATION_FAILED


def test_offset_commit_needs_read_on_the_group_and_each_topic(broker):
    with client_of(broker, "ops") as ops:
        assert commit(ops, "orders-d", {"events": [0], "secret": [0]}) == {
            ("events", 0): NONE, ("secret", 0): TOPIC_AUTHORIZATION_FAILED}
        assert commit(ops, "orders-d", {"secret": [0]}) == {("secret", 0): TOPIC_AUTHORIZATION_FAILED}
    with client_of(broker, "alice") as alice:
        assert commit(alice, "orders-a", {"events": [0, 1]}) == {
            ("events", 0): GROUP_AUTHORIZATION_FAILED, ("events", 1): GROUP_AUTHORIZATION_FAILED}
    assert broker.committed_offsets("orders-d").keys() == {("events", 0)}


def test_offset_fetch_hides_or_refuses_what_is_not_described(broker):
    with client_of(broker, "ops") as ops:   # ops may not Describe topic secret
        every = fetch_offsets(ops, "orders-c")
        assert {t.name for t in every.topics} == {"events"}
        named = fetch_offsets(ops, "orders-c", ["events", "secret"])
        assert {t.name: t.partitions[0].error_code for t in named.topics} == {
            "events": NONE, "secret": TOPIC_AUTHORIZATION_FAILED}
        G = OffsetFetchRequest.OffsetFetchRequestGroup
        both = ops.send(OffsetFetchRequest(version=8, groups=[
            G(group_id="orders-c", topics=None), G(group_id="billing", topics=None)]))
        assert [(g.group_id, g.error_code, sorted(t.name for t in g.topics)) for g in both.groups] == [
            ("orders-c", NONE, ["events"]), ("billing", GROUP_AUTHORIZATION_FAILED, [])]
    with client_of(broker, "alice") as alice:
        assert fetch_offsets(alice, "orders-b").error_code == GROUP_AUTHORIZATION_FAILED


def test_describe_groups_per_group_with_authorized_operations(broker):
    for user in ("alice", "ops"):
        with client_of(broker, user) as client:
            response = client.send(DescribeGroupsRequest(version=5, groups=["orders-a", "billing"],
                                                         include_authorized_operations=True))
            a, billing = response.groups
            assert (a.error_code, a.authorized_operations) == (NONE, GROUP_OPS[user])
            assert billing.error_code == GROUP_AUTHORIZATION_FAILED and billing.members == []


def test_list_groups_shows_only_groups_described_or_all_with_describe_on_the_cluster(broker):
    with client_of(broker, "admin") as admin:
        commit(admin, "billing", {"events": [0]})
        every = {g.group_id for g in admin.send(ListGroupsRequest(version=4)).groups}
    with client_of(broker, "alice") as alice:
        seen = {g.group_id for g in alice.send(ListGroupsRequest(version=4)).groups}
    assert {"billing", "orders-c"} <= every
    assert seen <= {"orders-a"}


def test_delete_groups_and_offset_delete_need_delete(broker):
    with client_of(broker, "alice") as alice:
        result = alice.send(DeleteGroupsRequest(version=2, groups_names=["orders-a"])).results[0]
        assert result.error_code == GROUP_AUTHORIZATION_FAILED
        T = OffsetDeleteRequest.OffsetDeleteRequestTopic
        request = OffsetDeleteRequest(version=0, group_id="orders-c", topics=[
            T(name="events", partitions=[T.OffsetDeleteRequestPartition(partition_index=0)])])
        assert alice.send(request).error_code == GROUP_AUTHORIZATION_FAILED
    with client_of(broker, "ops") as ops:
        request = OffsetDeleteRequest(version=0, group_id="orders-c", topics=[
            T(name="secret", partitions=[T.OffsetDeleteRequestPartition(partition_index=0)])])
        response = ops.send(request)
        assert response.error_code == NONE
        assert response.topics[0].partitions[0].error_code == TOPIC_AUTHORIZATION_FAILED
        deleted = ops.send(DeleteGroupsRequest(version=2, groups_names=["billing", "orders-zz"]))
        assert {r.group_id: r.error_code for r in deleted.results} == {
            "billing": GROUP_AUTHORIZATION_FAILED, "orders-zz": GROUP_ID_NOT_FOUND}


def test_find_coordinator_needs_describe_on_the_group(broker):
    with client_of(broker, "alice") as alice:
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

    with client_of(broker, "ops") as ops:
        assert heartbeat(ops, "orders-k", ["events", "secret"]) == TOPIC_AUTHORIZATION_FAILED
        assert heartbeat(ops, "orders-k", ["events"]) == NONE
        described = ops.send(ConsumerGroupDescribeRequest(version=0, group_ids=["orders-k", "billing"],
                                                          include_authorized_operations=True))
        k, billing = described.groups
        assert (k.error_code, k.authorized_operations) == (NONE, operations_field(GROUP_OPS["ops"]))
        assert billing.error_code == GROUP_AUTHORIZATION_FAILED
    with client_of(broker, "alice") as alice:
        assert heartbeat(alice, "orders-k", ["events"]) == GROUP_AUTHORIZATION_FAILED


# -- topics and the cluster ---------------------------------------------------------------------

def _metadata(client, topics, allow_create=False):
    T = MetadataRequest.MetadataRequestTopic
    return client.send(MetadataRequest(version=9, topics=None if topics is None else [T(name=t) for t in topics],
                                       allow_auto_topic_creation=allow_create,
                                       include_topic_authorized_operations=True))


def test_metadata_filters_topics_and_auto_creation_needs_create(broker):
    with client_of(broker, "ops") as ops:
        listed = _metadata(ops, None)
        assert {t.name for t in listed.topics} == {"events"}   # secret left out, not refused
        assert listed.topics[0].authorized_operations == {OPERATIONS[op] for op in ("Read", "Write", "Describe")}
        named = {t.name: t.error_code for t in _metadata(ops, ["events", "secret"]).topics}
        assert named == {"events": NONE, "secret": TOPIC_AUTHORIZATION_FAILED}
        created = {t.name: t.error_code for t in _metadata(ops, ["auto-1", "nope"], True).topics}
        assert created == {"auto-1": NONE, "nope": TOPIC_AUTHORIZATION_FAILED}
    assert broker.run(lambda: sorted(broker.broker.logdir.topics)).count("nope") == 0


def test_fetch_list_offsets_produce_and_create_topics(broker):
    with client_of(broker, "alice") as alice:   # Describe on every topic, Read and Write on none
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
    with client_of(broker, "ops") as ops:   # Write on events: an idempotent producer may start
        assert ops.send(InitProducerIdRequest(version=4, transactional_id=None,
                                              transaction_timeout_ms=0)).error_code == NONE
        C = CreateTopicsRequest.CreatableTopic
        created = ops.send(CreateTopicsRequest(version=5, topics=[
            C(name="auto-2", num_partitions=1, replication_factor=1),
            C(name="other", num_partitions=1, replication_factor=1)]))
        assert {t.name: t.error_code for t in created.topics} == {"auto-2": NONE,
                                                                  "other": TOPIC_AUTHORIZATION_FAILED}
    with client_of(broker) as anonymous:
        offsets = anonymous.send(ListOffsetsRequest(version=5, replica_id=-1, topics=[
            L(name="secret", partitions=[L.ListOffsetsPartition(partition_index=0, timestamp=-1)])]))
        assert offsets.topics[0].partitions[0].error_code == TOPIC_AUTHORIZATION_FAILED


# -- every version of the answers that carry a refusal ---------------------------------------------

def test_refusals_encode_at_every_served_version(broker):
    T = OffsetFetchRequest.OffsetFetchRequestTopic
    with client_of(broker, "alice") as alice:
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
    with client_of(broker, "ops") as ops:
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


def test_without_acls_every_supported_operation_is_reported_when_asked(tmp_path):
    from kgroup.server.security.acl import SUPPORTED_OPERATIONS
    from kgroup.server.harness import ThreadedBroker

    b = ThreadedBroker(tmp_path, topics=[("events", 1)])
    try:
        every = {kind: {OPERATIONS[op] for op in ops} for kind, ops in SUPPORTED_OPERATIONS.items()}
        with ClusterClient(b.bootstrap, timeout_s=10) as client:
            asked = client.send(DescribeGroupsRequest(version=5, groups=["g"], include_authorized_operations=True))
            assert asked.groups[0].authorized_operations == every["Group"]
            unasked = client.send(DescribeGroupsRequest(version=5, groups=["g"]))
            assert unasked.groups[0].authorized_operations is None   # not requested
            described = client.send(ConsumerGroupDescribeRequest(version=0, group_ids=["g"],
                                                                 include_authorized_operations=True))
            assert described.groups[0].authorized_operations == -2 ** 31  # an error: none reported
            M = MetadataRequest.MetadataRequestTopic
            topics = client.send(MetadataRequest(version=9, topics=[M(name="events")],
                                                 allow_auto_topic_creation=False,
                                                 include_topic_authorized_operations=True,
                                                 include_cluster_authorized_operations=True))
            assert topics.topics[0].authorized_operations == every["Topic"]
            assert topics.authorized_operations == every["Cluster"]
    finally:
        b.stop()
