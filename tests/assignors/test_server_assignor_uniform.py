"""The uniform server-side assignor against Kafka's UniformHeterogeneousAssignmentBuilderTest and
UniformHomogeneousAssignmentBuilderTest (the cases whose result Kafka fixes; the homogeneous ones
that depend on Java's hash order are checked for validity, balance and stickiness instead)."""

import pytest
from helpers.server_assignors import T1, T2, T3, T4, group, member, rows, topics

from kgroup.assignors.server_api import HETEROGENEOUS, PartitionAssignorError, get_server_assignor

uniform = get_server_assignor("uniform")


# ---- heterogeneous (Kafka's test orders members by id, as kgroup always does) -----------------
def test_two_members_no_topic_subscription():
    g = group({"A": member([]), "B": member([])}, HETEROGENEOUS)
    assert uniform.assign(g, topics(T1=3)) == rows(A={}, B={})


def test_two_members_subscribed_to_nonexistent_topics():
    g = group({"A": member([T3]), "B": member([T2])})
    with pytest.raises(PartitionAssignorError):
        uniform.assign(g, topics(T1=3))


def test_first_assignment_two_members_two_topics():
    g = group({"A": member([T1, T3]), "B": member([T3])})
    assert uniform.assign(g, topics(T1=3, T3=6)) == rows(
        A={T1: [0, 1, 2], T3: [4]}, B={T3: [0, 1, 2, 3, 5]})


def test_first_assignment_more_members_than_partitions():
    g = group({"A": member([T3]), "B": member([T3]), "C": member([T1])})
    assert uniform.assign(g, topics(T3=1, T1=2)) == rows(A={T3: [0]}, B={}, C={T1: [0, 1]})


def test_reassignment_two_members_three_topics_unbalanced_previous():
    g = group({
        "A": member([T1], {T1: [0, 1, 2]}),
        "B": member([T1, T2], {T1: [3], T2: [0]}),
        "C": member([T1, T2, T3], {T1: [4, 5], T2: [1, 2, 3], T3: [0, 1, 2, 3]}),
    })
    assert uniform.assign(g, topics(T1=6, T2=4, T3=4)) == rows(
        A={T1: [0, 1, 2, 5]}, B={T1: [3], T2: [0, 1, 2, 3]}, C={T1: [4], T3: [0, 1, 2, 3]})


def test_reassignment_when_partitions_are_added_two_members():
    g = group({
        "A": member([T1, T3], {T1: [0, 1, 2, 3], T3: [0, 1]}),
        "B": member([T1, T2, T3, T4], {T2: [0, 1, 2], T4: [0, 1, 2]}),
    })
    assert uniform.assign(g, topics(T1=6, T2=5, T3=3, T4=3)) == rows(
        A={T1: [0, 1, 2, 3, 4, 5], T3: [0, 1, 2]}, B={T2: [0, 1, 2, 3, 4], T4: [0, 1, 2]})


def test_reassignment_one_member_and_partitions_added():
    g = group({
        "A": member([T1], {T1: [0, 2], T2: [0]}),
        "B": member([T1, T2], {T1: [1], T2: [1, 2]}),
        "C": member([T1, T2]),
    })
    assert uniform.assign(g, topics(T1=6, T2=7)) == rows(
        A={T1: [0, 2, 3, 4, 5]}, B={T1: [1], T2: [1, 2, 6]}, C={T2: [0, 3, 4, 5]})


def test_reassignment_one_member_removed_three_topics():
    g = group({
        "A": member([T1, T3], {T1: [0, 1, 2], T3: [0, 1]}),
        "B": member([T2], {T2: [3, 4, 5, 6]}),
    })
    assert uniform.assign(g, topics(T1=3, T2=8, T3=3)) == rows(
        A={T1: [0, 1, 2], T3: [0, 1, 2]}, B={T2: range(8)})


def test_reassignment_one_subscription_removed():
    g = group({
        "A": member([T1], {T1: [0, 2], T2: [1, 3]}),
        "B": member([T1, T2], {T1: [1], T2: [0, 2, 4]}),
    })
    assert uniform.assign(g, topics(T1=3, T2=5)) == rows(A={T1: [0, 1, 2]}, B={T2: range(5)})


def test_reassignment_when_topic_partitions_run_out():
    g = group({
        "A": member([T1, T2, T3], {T1: [0, 1], T2: [0, 1], T3: [0, 1]}),
        "B": member([T1, T2, T3]),
    }, HETEROGENEOUS)
    assert uniform.assign(g, topics(T1=2, T2=2, T3=2)) == rows(
        A={T2: [0], T3: [0, 1]}, B={T1: [0, 1], T2: [1]})


def test_first_assignment_one_member_without_subscriptions():
    g = group({"A": member([T1]), "B": member([])})
    assert uniform.assign(g, topics(T1=3)) == rows(A={T1: [0, 1, 2]}, B={})


# ---- homogeneous ------------------------------------------------------------------------------
def test_homogeneous_one_member_no_topic_subscription():
    # Kafka returns no rows at all; kgroup's contract gives every member a row, empty here.
    assert uniform.assign(group({"A": member([])}), topics(T1=3)) == rows(A={})


def test_homogeneous_member_subscribed_to_nonexistent_topic():
    with pytest.raises(PartitionAssignorError):
        uniform.assign(group({"A": member([T2])}), topics(T1=3))


def test_homogeneous_reassignment_unbalanced_previous():
    g = group({
        "A": member([T1, T2], {T1: [0, 1], T2: [0, 1]}),
        "B": member([T1, T2], {T1: [2], T2: [2]}),
    })
    # A walks its topics in its assignment map's order (T2 hashes first) and gives up T1's last
    assert uniform.assign(g, topics(T1=3, T2=3)) == rows(
        A={T2: [0, 1], T1: [0]}, B={T1: [1, 2], T2: [2]})


def test_homogeneous_extra_partition_goes_to_the_last_members_that_need_it():
    # KAFKA-18688 (4.0.1): A, first in hash order, holds nothing beyond the minimum, so it leaves
    # the one extra partition to B, the last member that could take it
    g = group({"B": member([T1]), "A": member([T1])})
    assert uniform.assign(g, topics(T1=3)) == rows(A={T1: [0]}, B={T1: [1, 2]})


def test_homogeneous_member_holding_the_extra_partition_keeps_it():
    g = group({"A": member([T1], {T1: [0, 1]}), "B": member([T1], {T1: [2]})})
    assert uniform.assign(g, topics(T1=3)) == rows(A={T1: [0, 1]}, B={T1: [2]})


def test_homogeneous_partitions_added_keeps_current_and_fills_in_hash_order():
    g = group({
        "A": member([T1, T2], {T1: [0, 2], T2: [0]}),
        "B": member([T1, T2], {T1: [1], T2: [1, 2]}),
    })
    # 11 partitions: A (first in hash order) could hold 6 but holds 3, so leaves the extra one to
    # B; the free partitions are dealt in the order Kafka's topic set walks them (T2 first)
    assert uniform.assign(g, topics(T1=6, T2=5)) == rows(
        A={T1: [0, 2], T2: [0, 3, 4]}, B={T1: [1, 3, 4, 5], T2: [1, 2]})


def test_homogeneous_unsubscribed_topic_is_dropped_not_reassigned():
    g = group({"A": member([T1], {T1: [0], T2: [0, 1]}), "B": member([T1], {T1: [1]})})
    assert uniform.assign(g, topics(T1=2, T2=2)) == rows(A={T1: [0]}, B={T1: [1]})


def test_empty_group():
    assert uniform.assign(group({}), topics(T1=3)) == {}


# ---- homogeneous fast paths (a topic kept whole, member order) ---------------------------------
def test_homogeneous_member_keeping_a_topic_whole_is_topped_up_from_it():
    # A keeps all it holds of T1 and still has room: it is filled with T1's free partition 5
    g = group({"A": member([T1], {T1: [0, 1]}), "B": member([T1], {T1: [2, 3, 4]})})
    assert uniform.assign(g, topics(T1=6)) == rows(A={T1: [0, 1, 5]}, B={T1: [2, 3, 4]})


def test_homogeneous_member_order_hashes_utf16_code_units():
    # String.hashCode runs over UTF-16 code units (U+1F600 is a surrogate pair): U+FF21 hashes to
    # an earlier bucket, so it comes first and leaves the extra partition to the emoji
    high, emoji = "\uff21", "\U0001F600"
    g = group({high: member([T1]), emoji: member([T1])})
    assert g.member_order() == [high, emoji]
    assert uniform.assign(g, topics(T1=3)) == rows(**{high: {T1: [0]}, emoji: {T1: [1, 2]}})
