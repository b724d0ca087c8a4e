"""Share groups (KIP-932) as kgroup reads them from recorded ShareGroupDescribe and
DescribeShareGroupOffsets replies (built from Kafka 4.4's schemas, encoded and decoded): members
with rack, subscription and assignment; per share partition its start offset and Kafka's lag."""

from __future__ import annotations

import json
import uuid

from kgroup.client.share_describe import attach_share_offsets, group_from_share_described
from kgroup.client.wire import Coordinator
from kgroup.protocol import (DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse,
                             ShareGroupDescribeResponse)

Described = ShareGroupDescribeResponse.DescribedGroup
Member = Described.Member
COORD = Coordinator(1, "broker-1", 9092)
ORDERS = uuid.UUID("5c1b2f52-3e43-4c55-9d1a-0f0b5ad0a001")


def share_group(*members, error_code=0):
    response = ShareGroupDescribeResponse(version=1, throttle_time_ms=0, groups=[Described(
        error_code=error_code, error_message=None, group_id="sg", group_state="Stable", group_epoch=4,
        assignment_epoch=4, assignor_name="simple", members=list(members), authorized_operations=-2147483648)])
    return ShareGroupDescribeResponse.decode(response.encode(version=1), version=1).groups[0]


def share_member(member_id, partitions, rack=None, name="orders"):
    tps = [Member.Assignment.TopicPartitions(topic_id=ORDERS, topic_name=name, partitions=partitions)]
    return Member(member_id=member_id, rack_id=rack, member_epoch=4, client_id="console-share-consumer",
                  client_host="/10.0.0.1", subscribed_topic_names=["orders"],
                  assignment=Member.Assignment(topic_partitions=tps))


class OffsetsBroker:
    """Answers DescribeShareGroupOffsets as a Kafka 4.4 coordinator would, recording the request."""

    def __init__(self):
        self.sent = []

    def max_version(self, cls):
        return 1 if cls is DescribeShareGroupOffsetsRequest else -1

    def send(self, request, node_id=None, what=""):
        self.sent.append((request, node_id))
        encoded = request.encode(version=1)
        assert DescribeShareGroupOffsetsRequest.decode(encoded, version=1).groups[0].topics is None
        group_cls = DescribeShareGroupOffsetsResponse.DescribeShareGroupOffsetsResponseGroup
        topic_cls = group_cls.DescribeShareGroupOffsetsResponseTopic
        part = topic_cls.DescribeShareGroupOffsetsResponsePartition
        response = DescribeShareGroupOffsetsResponse(version=1, throttle_time_ms=0, groups=[group_cls(
            group_id="sg", error_code=0, error_message=None, topics=[topic_cls(
                topic_name="orders", topic_id=ORDERS, partitions=[
                    part(partition_index=1, start_offset=-1, leader_epoch=-1, lag=-1, error_code=0, error_message=None),
                    part(partition_index=0, start_offset=12, leader_epoch=0, lag=30, error_code=0,
                         error_message=None)])])])
        return DescribeShareGroupOffsetsResponse.decode(response.encode(version=1), version=1)


def test_a_share_group_shows_its_members_epochs_and_assignor():
    view = group_from_share_described(share_group(share_member("m2", [1], rack="r1"), share_member("m1", [0])),
                                      COORD, {})
    assert (view.group_type, view.protocol_type, view.state, view.group_epoch, view.assignment_epoch,
            view.assignor) == ("share", "share", "Stable", 4, 4, "simple")
    assert [(m.member_id, m.rack_id, m.member_type, m.subscription) for m in view.members] == [
        ("m1", None, "share", ["orders"]), ("m2", "r1", "share", ["orders"])]
    assert view.members[1].assignment == [{"topic": "orders", "partitions": [1]}]
    unnamed = group_from_share_described(share_group(share_member("m", [0], name="")), COORD, {ORDERS: "orders"})
    assert unnamed.members[0].assignment == [{"topic": "orders", "partitions": [0]}]


def test_an_error_is_the_groups_error():
    view = group_from_share_described(share_group(error_code=69), COORD, {})
    assert view.error.startswith("GROUP_ID_NOT_FOUND") and view.group_type == "share"


def test_share_partitions_show_start_offset_and_kafkas_lag_in_table_and_json(capsys):
    from kgroup.commands.describe import _render

    view = group_from_share_described(share_group(share_member("m1", [0, 1], rack="r1")), COORD, {})
    broker = OffsetsBroker()
    attach_share_offsets(broker, view)
    assert broker.sent[0][1] == COORD.node_id
    assert [(r.topic, r.partition, r.start_offset, r.lag, r.committed) for r in view.offsets] == [
        ("orders", 0, 12, 30, None), ("orders", 1, -1, None, None)]
    _render([view], "table", True, False, [None])
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["GROUP", "COORDINATOR", "STATE", "TYPE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH",
                              "ASSIGNOR", "MEMBERS"]
    assert out[1].split() == ["sg", *str(COORD).split(), "Stable", "share", "4", "4", "simple", "1"]
    assert out[4].split() == ["m1", "console-share-consumer", "/10.0.0.1", "r1", "4", "orders", "orders:0,1"]
    assert out[-3].split() == ["TOPIC", "PARTITION", "START-OFFSET", "LEADER-EPOCH", "LAG", "ERROR"]
    assert out[-2].split() == ["orders", "0", "12", "0", "30", "-"]
    _render([view], "json", True, False, [None])
    data = json.loads(capsys.readouterr().out)[0]
    assert (data["type"], data["group_epoch"], data["assignor"]) == ("share", 4, "simple")
    assert data["offsets"][0] == {"topic": "orders", "partition": 0, "committed": None, "log_end": None,
                                  "lag": 30, "member_id": None, "group_instance_id": None, "leader_epoch": 0,
                                  "start_offset": 12}
    assert data["members"][0]["rack_id"] == "r1" and data["members"][0]["member_type"] == "share"


def test_a_group_level_offsets_error_is_the_views_error_not_the_whole_describes():
    class Denying(OffsetsBroker):
        def send(self, request, node_id=None, what=""):
            group_cls = DescribeShareGroupOffsetsResponse.DescribeShareGroupOffsetsResponseGroup
            return DescribeShareGroupOffsetsResponse(version=1, throttle_time_ms=0, groups=[group_cls(
                group_id="sg", error_code=30, error_message="denied", topics=[])])

    view = group_from_share_described(share_group(share_member("m1", [0])), COORD, {})
    attach_share_offsets(Denying(), view)
    assert view.error == "group 'sg': DescribeShareGroupOffsets: GROUP_AUTHORIZATION_FAILED: denied" and view.offsets == []
