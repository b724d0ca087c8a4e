"""The range server-side assignor against Kafka 4.0's RangeAssignorTest (its results do not depend
on hash order, so every case is ported with Kafka's expected assignment)."""

import pytest
from helpers.server_assignors import T1, T2, T3, group, member, rows, topics

from kgroup.assignors.server_api import HETEROGENEOUS, HOMOGENEOUS, PartitionAssignorError, get_server_assignor

range_assignor = get_server_assignor("range")


def test_one_member_no_topic():
    assert range_assignor.assign(group({"A": member([])}), topics(T1=3)) == rows(A={})


def test_one_member_subscribed_to_nonexistent_topic():
    with pytest.raises(PartitionAssignorError):
        range_assignor.assign(group({"A": member([T2])}), topics(T1=3))


def test_first_assignment_two_members_two_topics_same_subscriptions():
    g = group({"A": member([T1, T3]), "B": member([T1, T3])})
    assert range_assignor.assign(g, topics(T1=3, T3=2)) == rows(
        A={T1: [0, 1], T3: [0]}, B={T1: [2], T3: [1]})


def test_first_assignment_three_members_three_topics_different_subscriptions():
    g = group({"A": member([T1, T2]), "B": member([T3]), "C": member([T2, T3])})
    assert range_assignor.assign(g, topics(T1=3, T2=3, T3=2)) == rows(
        A={T1: [0, 1, 2], T2: [0, 1]}, B={T3: [0]}, C={T2: [2], T3: [1]})


def test_first_assignment_more_members_than_partitions():
    g = group({m: member([T1, T3]) for m in "ABC"})
    assert range_assignor.assign(g, topics(T1=3, T3=2)) == rows(
        A={T1: [0], T3: [0]}, B={T1: [1], T3: [1]}, C={T1: [2]})


def test_static_membership_keeps_ranges_across_a_new_member_id():
    first = range_assignor.assign(
        group({"A": member([T1], instance_id="instanceA"), "B": member([T1], instance_id="instanceB")}),
        topics(T1=3))
    second = range_assignor.assign(
        group({"memberA1": member([T1], instance_id="instanceA"), "B": member([T1], instance_id="instanceB")}),
        topics(T1=3))
    assert second["memberA1"] == first["A"] and second["B"] == first["B"]


def test_mixed_static_membership():
    def assign(a_id):
        return range_assignor.assign(group({
            a_id: member([T1], instance_id="instanceA"),
            "C": member([T1], instance_id="instanceC"),
            "B": member([T1]),
        }), topics(T1=5))
    first, second = assign("A"), assign("memberA1")
    assert second["memberA1"] == first["A"] and second["B"] == first["B"] and second["C"] == first["C"]
    # static members first, by instance id; the dynamic B last
    assert first == rows(A={T1: [0, 1]}, C={T1: [2, 3]}, B={T1: [4]})


def test_reassignment_more_members_than_partitions_when_one_member_added():
    g = group({
        "A": member([T1, T2], {T1: [0], T2: [0]}),
        "B": member([T1, T2], {T1: [1], T2: [1]}),
        "C": member([T1, T2]),
    })
    assert range_assignor.assign(g, topics(T1=2, T2=2)) == rows(
        A={T1: [0], T2: [0]}, B={T1: [1], T2: [1]}, C={})


def test_reassignment_when_one_partition_added():
    g = group({
        "A": member([T1, T2], {T1: [0, 1], T2: [0, 1]}),
        "B": member([T1, T2], {T1: [2], T2: [2]}),
    })
    assert range_assignor.assign(g, topics(T1=4, T2=4)) == rows(
        A={T1: [0, 1], T2: [0, 1]}, B={T1: [2, 3], T2: [2, 3]})


def test_reassignment_when_one_member_added():
    g = group({
        "A": member([T1, T2], {T1: [0, 1], T2: [0, 1]}),
        "B": member([T1, T2], {T1: [2], T2: [2]}),
        "C": member([T1, T2]),
    })
    assert range_assignor.assign(g, topics(T1=3, T2=3)) == rows(
        A={T1: [0], T2: [0]}, B={T1: [1], T2: [1]}, C={T1: [2], T2: [2]})


def test_reassignment_when_one_member_and_one_partition_added():
    g = group({
        "A": member([T1, T2], {T1: [0, 1], T2: [0, 1]}),
        "B": member([T1, T2], {T1: [2], T2: [2]}),
        "C": member([T1]),
    })
    assert range_assignor.assign(g, topics(T1=4, T2=3)) == rows(
        A={T1: [0, 1], T2: [0, 1]}, B={T1: [2], T2: [2]}, C={T1: [3]})


def test_reassignment_when_one_member_removed():
    g = group({"B": member([T1, T2], {T1: [2], T2: [2]})})
    assert range_assignor.assign(g, topics(T1=3, T2=3)) == rows(B={T1: [0, 1, 2], T2: [0, 1, 2]})


def test_reassignment_when_multiple_subscriptions_removed():
    g = group({
        "A": member([T1], {T1: [0, 1, 2], T2: [0]}),
        "B": member([T1, T2, T3], {T2: [1]}),
        "C": member([T2], {T2: [2], T3: [0, 1]}),
    })
    assert g.subscription_type == HETEROGENEOUS
    assert range_assignor.assign(g, topics(T1=3, T2=3, T3=2)) == rows(
        A={T1: [0, 1]}, B={T1: [2], T2: [0, 1], T3: [0, 1]}, C={T2: [2]})


def test_spec_example_seven_partitions_three_members():
    g = group({m: member([T1]) for m in "cab"}, HOMOGENEOUS)
    assert range_assignor.assign(g, topics(T1=7)) == rows(
        a={T1: [0, 1, 2]}, b={T1: [3, 4]}, c={T1: [5, 6]})


def test_member_order_is_java_string_order_utf16_code_units():
    # U+1F600 sorts after U+FF01 by code point but before it in UTF-16 (0xD83D < 0xFF01).
    g = group({"\uFF01": member([T1]), "\U0001F600": member([T1])})
    assert range_assignor.assign(g, topics(T1=2)) == rows(**{"\U0001F600": {T1: [0]}, "\uFF01": {T1: [1]}})


def test_empty_group():
    assert range_assignor.assign(group({}), topics(T1=3)) == {}
