"""kgroup.protocol: ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69) encode to Kafka's bytes.

The expected bytes are laid out by hand from the flexible-version wire rules (compact strings and
arrays as unsigned varint length + 1, nullable as 0 / -1, one empty tagged-field section per struct),
so a schema typo shows up as a byte difference rather than as a passing round trip.
"""

from __future__ import annotations

import uuid

import pytest

from kgroup.protocol import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)

TOPIC_ID = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
TOPIC_ID_HEX = "00112233445566778899aabbccddeeff"


def _join(version: int, **extra) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest[version](
        group_id="g", member_id="m", member_epoch=0, rebalance_timeout_ms=300000,
        subscribed_topic_names=["t"], topic_partitions=[], **extra)


def test_api_keys_and_versions():
    for cls, key in ((ConsumerGroupHeartbeatRequest, 68), (ConsumerGroupHeartbeatResponse, 68),
                     (ConsumerGroupDescribeRequest, 69), (ConsumerGroupDescribeResponse, 69)):
        assert cls.API_KEY == key
        assert (cls.min_version, cls.max_version) == (0, 1)
        assert cls.flexible_version_q(0)


def test_heartbeat_request_v0_join_bytes():
    expected = bytes.fromhex(
        "0267" "026d" "00000000"      # group "g", member "m", epoch 0
        "00" "00" "000493e0"          # instance null, rack null, rebalance timeout 300000
        "02" "0274"                   # subscribed topic names ["t"]
        "00" "01" "00")               # server assignor null, topic partitions [], tags
    assert _join(0).encode(version=0) == expected
    assert ConsumerGroupHeartbeatRequest.decode(expected, version=0) == _join(0)


def test_heartbeat_request_v1_adds_regex_after_topic_names():
    request = _join(1, instance_id="i", subscribed_topic_regex=".*", server_assignor="range")
    expected = bytes.fromhex(
        "0267" "026d" "00000000" "0269" "00" "000493e0" "02" "0274"
        "032e2a"                      # regex ".*"
        "0672616e6765"                # server assignor "range"
        "01" "00")
    assert request.encode(version=1) == expected
    decoded = ConsumerGroupHeartbeatRequest.decode(expected, version=1)
    assert decoded.subscribed_topic_regex == ".*"
    assert decoded.server_assignor == "range"


def test_heartbeat_request_owned_partitions_bytes():
    request = ConsumerGroupHeartbeatRequest[0](
        group_id="g", member_id="m", member_epoch=3,
        topic_partitions=[ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=TOPIC_ID, partitions=[1])])
    expected = bytes.fromhex(
        "0267" "026d" "00000003" "00" "00" "ffffffff" "00" "00"
        "02" + TOPIC_ID_HEX + "02" "00000001" "00"   # one topic, partitions [1], its tags
        "00")
    assert request.encode(version=0) == expected
    assert ConsumerGroupHeartbeatRequest.decode(expected, version=0) == request


def test_heartbeat_response_without_assignment_bytes():
    response = ConsumerGroupHeartbeatResponse(
        throttle_time_ms=0, error_code=0, member_id="m", member_epoch=1, heartbeat_interval_ms=5000)
    expected = bytes.fromhex("00000000" "0000" "00" "026d" "00000001" "00001388" "ff" "00")
    assert response.encode(version=0) == expected
    assert ConsumerGroupHeartbeatResponse.decode(expected, version=0).assignment is None


def test_heartbeat_response_with_assignment_bytes():
    assignment = ConsumerGroupHeartbeatResponse.Assignment(topic_partitions=[
        ConsumerGroupHeartbeatResponse.Assignment.TopicPartitions(topic_id=TOPIC_ID, partitions=[0, 2])])
    response = ConsumerGroupHeartbeatResponse(
        throttle_time_ms=0, error_code=0, member_id="m", member_epoch=1, heartbeat_interval_ms=5000,
        assignment=assignment)
    expected = bytes.fromhex(
        "00000000" "0000" "00" "026d" "00000001" "00001388"
        "01" "02" + TOPIC_ID_HEX + "03" "00000000" "00000002" "00"  # present, one topic, [0, 2]
        "00" "00")                                                 # assignment tags, top tags
    assert response.encode(version=1) == expected
    decoded = ConsumerGroupHeartbeatResponse.decode(expected, version=1)
    assert decoded.assignment.topic_partitions[0].partitions == [0, 2]


def test_heartbeat_error_response_bytes():
    response = ConsumerGroupHeartbeatResponse(
        throttle_time_ms=0, error_code=110, error_message="x", member_epoch=0, heartbeat_interval_ms=0)
    expected = bytes.fromhex("00000000" "006e" "0278" "00" "00000000" "00000000" "ff" "00")
    assert response.encode(version=1) == expected


def test_describe_request_bytes():
    expected = bytes.fromhex("02" "0267" "01" "00")
    for version in (0, 1):
        request = ConsumerGroupDescribeRequest[version](group_ids=["g"], include_authorized_operations=True)
        assert request.encode() == expected
        assert ConsumerGroupDescribeRequest.decode(expected, version=version) == request


def _described(version: int) -> ConsumerGroupDescribeResponse:
    cls = ConsumerGroupDescribeResponse.DescribedGroup
    partitions = cls.Member.Assignment.TopicPartitions(topic_id=TOPIC_ID, topic_name="t", partitions=[0])
    member = cls.Member(
        member_id="m", instance_id=None, rack_id=None, member_epoch=2, client_id="c", client_host="/h",
        subscribed_topic_names=["t"], subscribed_topic_regex=None,
        assignment=cls.Member.Assignment(topic_partitions=[partitions]),
        target_assignment=cls.Member.Assignment(topic_partitions=[]), member_type=1)
    group = cls(error_code=0, group_id="g", group_state="Stable", group_epoch=2, assignment_epoch=2,
                assignor_name="uniform", members=[member])
    return ConsumerGroupDescribeResponse(throttle_time_ms=0, groups=[group])


@pytest.mark.parametrize("version, member_type", [(0, ""), (1, "01")])
def test_describe_response_bytes(version, member_type):
    expected = bytes.fromhex(
        "00000000" "02"                                   # throttle, one group
        "0000" "00" "0267" "07537461626c65"               # error 0, message null, "g", "Stable"
        "00000002" "00000002" "08756e69666f726d"          # epochs, assignor "uniform"
        "02" "026d" "00" "00" "00000002" "0263" "032f68"  # one member "m", epoch 2, "c", "/h"
        "02" "0274" "00"                                  # topics ["t"], regex null
        "02" + TOPIC_ID_HEX + "0274" "02" "00000000" "00" "00"  # assignment: t-0
        "01" "00"                                         # target assignment: empty
        + member_type + "00"                              # member type (v1), member tags
        "80000000" "00"                                   # authorized operations default, group tags
        "00")
    assert _described(version).encode(version=version) == expected
    decoded = ConsumerGroupDescribeResponse.decode(expected, version=version)
    assert decoded.groups[0].members[0].assignment.topic_partitions[0].topic_name == "t"
    assert decoded.groups[0].members[0].member_type == (1 if version else -1)


@pytest.mark.parametrize("version", [0, 1])
def test_fast_constructor_builds_the_same_heartbeat_response(version):
    from kgroup.protocol import fast_constructor

    response = fast_constructor(ConsumerGroupHeartbeatResponse)
    assignment = fast_constructor(ConsumerGroupHeartbeatResponse.Assignment)
    partitions = fast_constructor(ConsumerGroupHeartbeatResponse.Assignment.TopicPartitions)
    assert response.__name__ == "make"      # the shortcut, not the fallback, with kafka-python 3.0
    Assignment = ConsumerGroupHeartbeatResponse.Assignment
    for assigned, error in ((None, None), ([(TOPIC_ID, [0, 2])], None), (None, "boom")):
        rows = None if assigned is None else assignment(None, [partitions(None, t, p) for t, p in assigned])
        fast = response(version, 0, 27 if error else 0, error, "m", 5, 5000, rows)
        slow = ConsumerGroupHeartbeatResponse(
            version=version, throttle_time_ms=0, error_code=27 if error else 0, error_message=error,
            member_id="m", member_epoch=5, heartbeat_interval_ms=5000,
            assignment=None if assigned is None else Assignment(topic_partitions=[
                Assignment.TopicPartitions(topic_id=t, partitions=p) for t, p in assigned]))
        assert fast == slow and repr(fast) == repr(slow) and fast.encode() == slow.encode()
        assert fast.version == version
