"""kgroup.protocol: the share-group (KIP-932) and streams-group (KIP-1071) messages kafka-python lacks.

Requests are checked against bytes laid out by hand from the flexible-version wire rules (compact
string/array = unsigned varint length + 1, null = 0, an empty tagged-field section = 00 per struct);
the nested responses round-trip (encode, decode, equal) with every struct filled in, so a field
missing from or misplaced in a schema shows up as a difference.
"""

from __future__ import annotations

import uuid

import pytest

from kgroup.protocol import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    StreamsGroupDescribeRequest,
    StreamsGroupDescribeResponse,
)

TOPIC_ID = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")


@pytest.mark.parametrize("request_cls, response_cls, key, newest", [
    (ShareGroupDescribeRequest, ShareGroupDescribeResponse, 77, 1),
    (StreamsGroupDescribeRequest, StreamsGroupDescribeResponse, 89, 1),
    (DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse, 90, 1),
    (AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse, 91, 0),
    (DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse, 92, 0),
])
def test_api_keys_and_kafka_4_4_versions(request_cls, response_cls, key, newest):
    for cls in (request_cls, response_cls):
        assert cls.API_KEY == key
        assert cls.max_version == newest
        assert cls.flexible_version_q(newest)


@pytest.mark.parametrize("cls, version, tail", [
    (ShareGroupDescribeRequest, 1, ""), (StreamsGroupDescribeRequest, 0, ""),
    (StreamsGroupDescribeRequest, 1, "00"),             # v1: IncludeTopologyDescription false
])
def test_describe_request_bytes(cls, version, tail):
    expected = bytes.fromhex("02" "0267" "00" + tail + "00")   # group ids ["g"], authorized ops false, tags
    request = cls(version=version, group_ids=["g"], include_authorized_operations=False)
    assert request.encode(version=version) == expected
    assert cls.decode(expected, version=version) == request


def test_describe_share_group_offsets_request_bytes():
    group = DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup
    topic = group.DescribeShareGroupOffsetsRequestTopic
    request = DescribeShareGroupOffsetsRequest(version=1, groups=[
        group(group_id="g", topics=[topic(topic_name="t", partitions=[0, 2])])])
    expected = bytes.fromhex(
        "02" "0267"                         # groups [ "g"
        "02" "0274" "03" "00000000" "00000002" "00"   # topics [ "t", partitions [0, 2], tags ]
        "00" "00")                          # group tags, request tags
    assert request.encode(version=1) == expected
    assert DescribeShareGroupOffsetsRequest.decode(expected, version=1) == request
    every_topic = DescribeShareGroupOffsetsRequest(version=1, groups=[group(group_id="g", topics=None)])
    assert every_topic.encode(version=1) == bytes.fromhex("02" "0267" "00" "00" "00")


def test_share_group_describe_response_round_trip():
    group_cls = ShareGroupDescribeResponse.DescribedGroup
    member_cls = group_cls.Member
    assignment_cls = member_cls.Assignment
    tp = assignment_cls.TopicPartitions(topic_id=TOPIC_ID, topic_name="t", partitions=[0, 1])
    member = member_cls(member_id="m", rack_id="r1", member_epoch=3, client_id="c", client_host="/127.0.0.1",
                        subscribed_topic_names=["t"], assignment=assignment_cls(topic_partitions=[tp]))
    response = ShareGroupDescribeResponse(version=1, throttle_time_ms=0, groups=[group_cls(
        error_code=0, error_message=None, group_id="g", group_state="Stable", group_epoch=3,
        assignment_epoch=3, assignor_name="simple", members=[member], authorized_operations=-2147483648)])
    decoded = ShareGroupDescribeResponse.decode(response.encode(version=1), version=1)
    assert decoded == response
    assert decoded.groups[0].members[0].assignment.topic_partitions[0].topic_id == TOPIC_ID


def test_describe_share_group_offsets_response_round_trip():
    group_cls = DescribeShareGroupOffsetsResponse.DescribeShareGroupOffsetsResponseGroup
    topic_cls = group_cls.DescribeShareGroupOffsetsResponseTopic
    partition_cls = topic_cls.DescribeShareGroupOffsetsResponsePartition
    response = DescribeShareGroupOffsetsResponse(version=1, throttle_time_ms=0, groups=[group_cls(
        group_id="g", error_code=0, error_message=None, topics=[topic_cls(
            topic_name="t", topic_id=TOPIC_ID, partitions=[partition_cls(
                partition_index=0, start_offset=5, leader_epoch=0, lag=7, error_code=0, error_message=None)])])])
    decoded = DescribeShareGroupOffsetsResponse.decode(response.encode(version=1), version=1)
    assert decoded == response
    assert decoded.groups[0].topics[0].partitions[0].lag == 7
    assert response.encode(version=0) != response.encode(version=1)    # v1 added Lag


def test_streams_group_describe_response_round_trip():
    group_cls = StreamsGroupDescribeResponse.DescribedGroup
    topology_cls, member_cls = group_cls.Topology, group_cls.Member
    subtopology = topology_cls.Subtopology(
        subtopology_id="0", source_topics=["in"], repartition_sink_topics=["app-rep"],
        state_changelog_topics=[topology_cls.Subtopology.TopicInfo(
            name="app-store-changelog", partitions=0, replication_factor=0, topic_configs=[])],
        repartition_source_topics=[])
    tasks = member_cls.Assignment.TaskIds
    assignment = member_cls.Assignment(active_tasks=[tasks(subtopology_id="0", partitions=[0, 1])],
                                       standby_tasks=[], warmup_tasks=[])
    member = member_cls(
        member_id="m", member_epoch=2, instance_id=None, rack_id=None, client_id="c", client_host="/127.0.0.1",
        topology_epoch=0, process_id="p", user_endpoint=member_cls.Endpoint(host="h", port=8080),
        client_tags=[member_cls.KeyValue(key="k", value="v")],
        task_offsets=[member_cls.TaskOffset(subtopology_id="0", partition=0, offset=4)], task_end_offsets=[],
        assignment=assignment, target_assignment=assignment, is_classic=False)
    response = StreamsGroupDescribeResponse(version=1, throttle_time_ms=0, groups=[group_cls(
        error_code=0, error_message=None, group_id="app", group_state="Stable", group_epoch=2,
        assignment_epoch=2, topology=topology_cls(epoch=0, subtopologies=[subtopology]),
        members=[member], authorized_operations=-2147483648, topology_description=None,
        topology_description_status=0, assignor_name="sticky")])
    encoded = response.encode(version=1)
    decoded = StreamsGroupDescribeResponse.decode(encoded, version=1)
    # decoded nested structs also carry their version, so compare the reprs without it
    assert repr(decoded).replace("(version=1, ", "(") == repr(response).replace("(version=1, ", "(")
    group = decoded.groups[0]
    assert group.topology.subtopologies[0].state_changelog_topics[0].name == "app-store-changelog"
    assert group.members[0].target_assignment.active_tasks[0].partitions == [0, 1]
    assert group.members[0].task_offsets[0].offset == 4
    assert group.assignor_name == "sticky"
    assert decoded.groups[0].members[0].user_endpoint.port == 8080


def test_alter_and_delete_share_group_offsets_requests_round_trip():
    alter_topic = AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestTopic
    alter = AlterShareGroupOffsetsRequest(version=0, group_id="g", topics=[alter_topic(
        topic_name="t", partitions=[alter_topic.AlterShareGroupOffsetsRequestPartition(
            partition_index=0, start_offset=9)])])
    assert AlterShareGroupOffsetsRequest.decode(alter.encode(version=0), version=0) == alter
    delete_topic = DeleteShareGroupOffsetsRequest.DeleteShareGroupOffsetsRequestTopic
    delete = DeleteShareGroupOffsetsRequest(version=0, group_id="g", topics=[delete_topic(topic_name="t")])
    assert delete.encode(version=0) == bytes.fromhex("0267" "02" "0274" "00" "00")
