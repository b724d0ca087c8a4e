"""Kafka 4.2-4.4's changes to a member's reconciliation (CurrentAssignmentBuilder): no epoch bump on
leaving UNREVOKED_PARTITIONS (KAFKA-19974), a partition the member itself is revoking is not
unreleased (KAFKA-19449), and a subscription change revokes the topics left at once (KAFKA-19431)."""

from __future__ import annotations

from helpers.consumer import BAR, FOO, assignment_of, heartbeat, new_coordinator

from kgroup.coordinator.consumer.group import ConsumerGroupMember
from kgroup.coordinator.consumer.reconciliation import STABLE, UNRELEASED_PARTITIONS, UNREVOKED_PARTITIONS, reconcile


def _member(epoch, state, assigned, pending=None):
    return ConsumerGroupMember("m", member_epoch=epoch, previous_member_epoch=epoch - 1, state=state,
                               assigned=assigned, pending_revocation=pending or {})


def test_leaving_unrevoked_partitions_keeps_the_epoch_when_more_must_be_revoked():
    member = _member(1, UNREVOKED_PARTITIONS, {FOO: frozenset({0, 1})}, {FOO: frozenset({2})})
    after = reconcile(member, 3, {FOO: frozenset({0})}, {FOO: frozenset({0, 1})}, lambda t, p: -1)
    assert (after.state, after.member_epoch, after.pending_revocation) == (
        UNREVOKED_PARTITIONS, 1, {FOO: frozenset({1})})      # Kafka 4.0 moved it to epoch 2 here


def test_a_partition_the_member_itself_revokes_is_handed_back_not_unreleased():
    member = _member(1, UNREVOKED_PARTITIONS, {FOO: frozenset({0})}, {FOO: frozenset({2})})
    owner = {(FOO, 0): 1, (FOO, 2): 1}     # the member still counts as 2's owner (pending revocation)
    after = reconcile(member, 2, {FOO: frozenset({0, 2})}, {FOO: frozenset({0})},
                      lambda t, p: owner.get((t, p), -1))
    assert (after.state, after.member_epoch, after.assigned) == (STABLE, 2, {FOO: frozenset({0, 2})})
    assert after.state != UNRELEASED_PARTITIONS


def test_a_subscription_change_revokes_the_topics_left_at_the_same_epoch():
    member = _member(3, STABLE, {FOO: frozenset({0}), BAR: frozenset({1})})
    member = member.evolve(assignment_epochs={FOO: {0: 2}, BAR: {1: 3}})
    target = {FOO: frozenset({0}), BAR: frozenset({1})}      # the target has not caught up yet
    owned = {FOO: frozenset({0}), BAR: frozenset({1})}
    after = reconcile(member, 3, target, owned, lambda t, p: -1, frozenset({FOO}), True)
    assert (after.state, after.member_epoch, after.previous_member_epoch) == (UNREVOKED_PARTITIONS, 3, 3)
    assert after.assigned == {FOO: frozenset({0})} and after.pending_revocation == {BAR: frozenset({1})}
    assert after.assignment_epoch(BAR, 1) == 3 and after.assignment_epoch(FOO, 0) == 2
    # already released: the assignment just shrinks
    released = reconcile(member, 3, target, {FOO: frozenset({0})}, lambda t, p: -1, frozenset({FOO}), True)
    assert (released.state, released.assigned, released.pending_revocation) == (STABLE, {FOO: frozenset({0})}, {})
    # no subscription change: a reconciled member is left alone
    assert reconcile(member, 3, target, owned, lambda t, p: -1, frozenset({FOO}), False) is member


def test_a_heartbeat_dropping_a_topic_revokes_it_before_the_new_target():
    coord = new_coordinator()
    a = heartbeat(coord, member_id="a", topics=["foo", "bar"])
    assert set(assignment_of(a)) == {FOO, BAR}
    after = heartbeat(coord, member_id="a", epoch=2, topics=["foo"], owned_partitions=assignment_of(a))
    member = coord.get_group("g").members["a"]
    # the new target (epoch 3) drops bar anyway; the member revokes it while at epoch 2
    assert after.error_code == 0 and member.state == UNREVOKED_PARTITIONS and BAR in member.pending_revocation
    assert BAR not in member.assigned
