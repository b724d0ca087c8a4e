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


def test_a_static_member_that_left_shows_left_not_reconciling(capsys):
    """Member epoch -2: a static member stopped and the coordinator keeps its partitions until it
    rejoins or its session times out. The group is Reconciling, as Kafka says, but the member is not
    'still reconciling': the table says LEFT and how to release its partitions."""
    from kgroup.commands.describe import _table

    raw = roundtrip([member("a", "i-1", 7, [0, 1], [0, 1], 1), member("b", "i-2", -2, [2, 3], [2, 3], 1)], 1)
    view = group_from_consumer_described(raw, COORD, {})
    assert [m.left for m in view.members] == [False, True] and not view.caught_up
    _table(view, with_offsets=False, offline=False)
    out = capsys.readouterr().out
    assert out.splitlines()[4].split()[-1] == "caught-up" and out.splitlines()[5].split()[-1] == "LEFT"
    assert out.endswith("1 of 2 member(s) caught up at group epoch 7\n"
                        "left (static, member epoch -2): i-2: the group keeps their partitions until they rejoin "
                        "or their session times out (kgroup remove-members releases them now)\n")
