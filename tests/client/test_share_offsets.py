"""Share groups (KIP-932) in the offset and wait verbs, without a broker: AlterShareGroupOffsets as
kgroup sends it and reads Kafka 4.4's answer (built from its schemas, encoded and decoded), the
one-line refusal of a group with members, per-topic deletes, the rights a dry run asks with
ShareGroupDescribe, and when a share group is caught up. The live side, against Kafka 4.4 and
kafka-share-groups, is tests/live/test_kafka_share_offsets.py."""

from __future__ import annotations

import uuid

import pytest

from client.test_client_share_responses import COORD, share_group, share_member
from kgroup.client.reset import PartitionPlan
from kgroup.client.share_describe import group_from_share_described
from kgroup.client.share_offsets import _whole_topics, alter_start_offsets, not_empty_error
from kgroup.errors import KgroupError, KgroupUsageError
from kgroup.protocol import (AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse,
                             ShareGroupDescribeRequest, ShareGroupDescribeResponse)

Topic = AlterShareGroupOffsetsResponse.AlterShareGroupOffsetsResponseTopic
Partition = Topic.AlterShareGroupOffsetsResponsePartition


class AlterBroker:
    """Answers AlterShareGroupOffsets (v0) with `error_code` or per-partition `errors`, recording it."""

    def __init__(self, error_code=0, errors=None):
        self.error_code, self.errors, self.sent = error_code, errors or {}, []

    def max_version(self, cls):
        return 0 if cls is AlterShareGroupOffsetsRequest else -1

    def to_coordinator(self, group, build, what, code_of=None, coordinator=None):
        request = AlterShareGroupOffsetsRequest.decode(build(coordinator).encode(version=0), version=0)
        self.sent.append(request)
        response = AlterShareGroupOffsetsResponse(version=0, throttle_time_ms=0, error_code=self.error_code,
                                                  error_message=None, responses=[] if self.error_code else [
            Topic(topic_name=t.topic_name, topic_id=uuid.uuid4(), partitions=[
                Partition(partition_index=p.partition_index, error_code=self.errors.get((t.topic_name, p.partition_index), 0),
                          error_message=None) for p in t.partitions]) for t in request.topics])
        response = AlterShareGroupOffsetsResponse.decode(response.encode(version=0), version=0)
        if code_of is not None:
            code_of(response)
        return response, coordinator


def empty_view():
    view = group_from_share_described(share_group(), COORD, {})
    view.state = "Empty"
    return view


def test_alter_sends_each_partitions_new_start_offset_and_reads_its_error():
    plans = [PartitionPlan("orders", 0, 12, 3, 0, 40), PartitionPlan("orders", 1, None, 5, 0, 40),
             PartitionPlan("audit", 0, 1, 0, 0, 2)]
    broker = AlterBroker(errors={("orders", 1): 3})       # UNKNOWN_TOPIC_OR_PARTITION
    alter_start_offsets(broker, empty_view(), plans)
    (sent,) = broker.sent
    assert sent.group_id == "sg"
    assert sorted((t.topic_name, p.partition_index, p.start_offset) for t in sent.topics for p in t.partitions) == [
        ("audit", 0, 0), ("orders", 0, 3), ("orders", 1, 5)]
    assert [p.error for p in plans] == [None, "UNKNOWN_TOPIC_OR_PARTITION", None]


def test_a_member_that_joined_since_the_plan_is_one_line_naming_the_group():
    view = group_from_share_described(share_group(share_member("m1", [0]), share_member("m2", [1])), COORD, {})
    with pytest.raises(KgroupError) as refused:
        alter_start_offsets(AlterBroker(error_code=68), view, [PartitionPlan("orders", 0, 12, 3, 0, 40)])
    (line,) = str(refused.value).splitlines()
    assert line.startswith("group 'sg' is a share group with 2 member(s) (Stable): Kafka resets a share group's "
                           "offsets only while it is Empty; stop its consumers (console-share-consumer")
    assert line.endswith("then wait (kgroup wait sg --state Empty) (NON_EMPTY_GROUP)")


def test_the_refusal_wording_counts_the_members():
    view = group_from_share_described(share_group(share_member("m1", [0])), COORD, {})
    assert "with 1 member(s) (Stable): Kafka deletes a share group's offsets only while it is Empty" in \
        not_empty_error("sg", view, "deletes")


def test_share_offsets_are_deleted_per_topic():
    assert _whole_topics("sg", [("orders", None), ("audit", None), ("orders", None)]) == ["orders", "audit"]
    with pytest.raises(KgroupUsageError, match=r"bad --topic orders:0,1: group 'sg' is a share group, whose "
                                               r"offsets are deleted per topic \(give --topic orders\)"):
        _whole_topics("sg", [("orders", [0, 1])])


class RightsBroker:
    """Answers ShareGroupDescribe v1 with the authorized operations `bits` (Kafka's AclOperation codes)."""

    def __init__(self, bits):
        self.bits, self.sent = bits, []

    def max_version(self, cls):
        return 1 if cls is ShareGroupDescribeRequest else 5

    def send(self, request, node_id=None, what=""):
        self.sent.append(request)
        assert isinstance(request, ShareGroupDescribeRequest) and request.include_authorized_operations
        described = ShareGroupDescribeResponse.DescribedGroup
        response = ShareGroupDescribeResponse(version=1, throttle_time_ms=0, groups=[described(
            error_code=0, error_message=None, group_id="sg", group_state="Empty", group_epoch=4, assignment_epoch=4,
            assignor_name="simple", members=[], authorized_operations=sum(1 << b for b in self.bits))])
        return ShareGroupDescribeResponse.decode(response.encode(version=1), version=1)


def test_a_dry_run_asks_a_share_groups_rights_with_share_group_describe():
    from kgroup.client.rights import group_refusal

    assert group_refusal(RightsBroker({3, 8}), empty_view(), "Delete") == "not authorized to Delete group sg"
    assert group_refusal(RightsBroker({3, 6, 8}), empty_view(), "Delete") is None


def test_a_share_group_is_caught_up_when_every_member_is_at_the_group_epoch():
    behind = share_member("m2", [1])
    behind.member_epoch = 3
    view = group_from_share_described(share_group(share_member("m1", [0]), behind), COORD, {})
    assert view.group_epoch == 4 and not view.caught_up
    assert [view.reconciling(m) for m in view.members] == [False, True]
    view = group_from_share_described(share_group(share_member("m1", [0]), share_member("m2", [1])), COORD, {})
    assert view.caught_up
