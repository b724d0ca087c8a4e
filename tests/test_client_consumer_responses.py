"""ConsumerGroupDescribe replies as kgroup reads them: mixed groups (classic members inside a
consumer group, MemberType 0 in v1), v0 without MemberType, topic ids a broker did not name."""

from __future__ import annotations

import uuid

from kgroup.client.consumer_describe import group_from_consumer_described
from kgroup.client.wire import Coordinator
from kgroup.protocol import ConsumerGroupDescribeResponse

Described = ConsumerGroupDescribeResponse.DescribedGroup
Member = Described.Member
Assignment = Member.Assignment
TopicPartitions = Assignment.TopicPartitions
COORD = Coordinator(1, "broker-1", 9092)
ORDERS = uuid.UUID("5c1b2f52-3e43-4c55-9d1a-0f0b5ad0a001")


def member(member_id, instance, epoch, owned, target, member_type, name="orders"):
    def rows(parts):
        return Assignment(topic_partitions=[TopicPartitions(topic_id=ORDERS, topic_name=name, partitions=parts)]
                          if parts else [])
    return Member(member_id=member_id, instance_id=instance, rack_id="r1" if instance else None,
                  member_epoch=epoch, client_id="c", client_host="/10.0.0.1", subscribed_topic_names=["orders"],
                  subscribed_topic_regex=None, assignment=rows(owned), target_assignment=rows(target),
                  member_type=member_type)


def roundtrip(members, version):
    response = ConsumerGroupDescribeResponse(version=version, throttle_time_ms=0, groups=[Described(
        error_code=0, error_message=None, group_id="g", group_state="Reconciling", group_epoch=7,
        assignment_epoch=7, assignor_name="range", members=members)])
    return ConsumerGroupDescribeResponse.decode(response.encode(version=version), version=version).groups[0]


def test_a_mixed_group_shows_each_members_protocol_and_who_is_reconciling():
    raw = roundtrip([member("new", "i-1", 7, [0, 1], [0, 1], 1), member("old", "i-2", 6, [2, 3], [2], 0)], 1)
    view = group_from_consumer_described(raw, COORD, {})
    assert (view.group_type, view.protocol, view.assignor, view.group_epoch) == ("consumer", "range", "range", 7)
    new, old = view.members
    assert (new.member_type, old.member_type) == ("consumer", "classic")
    assert [view.reconciling(m) for m in view.members] == [False, True]
    assert not view.caught_up
    assert old.to_json()["target_assignment"] == [{"topic": "orders", "partitions": [2]}]
    assert (new.rack_id, new.subscribed_topic_regex, new.subscription) == ("r1", None, ["orders"])


def test_v0_has_no_member_type_and_unnamed_topic_ids_are_resolved_or_shown_as_ids():
    raw = roundtrip([member("m", None, 7, [0], [0], -1, name="")], 0)
    named = group_from_consumer_described(raw, COORD, {ORDERS: "orders"})
    assert named.members[0].member_type == "consumer"
    assert named.members[0].assignment == [{"topic": "orders", "partitions": [0]}]
    unnamed = group_from_consumer_described(raw, COORD, {})
    assert unnamed.members[0].assignment == [{"topic": str(ORDERS), "partitions": [0]}]
