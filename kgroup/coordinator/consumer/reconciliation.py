"""One member's step towards the target assignment (Kafka's ``CurrentAssignmentBuilder``).

A member never receives a partition while another member (or its own pending revocation) still
owns it: it first revokes what the target takes away, and only once it reports that it no longer
owns those partitions does its epoch move to the target epoch and do new partitions arrive.
Partitions some other member still holds are withheld (state UNRELEASED_PARTITIONS) and handed
over on a later heartbeat, once their owner released them.

Pure functions: they read the member and return a new one (members are immutable values).
Assignments are ``{topic id: frozenset of partitions}``; ``owned`` is the request's
TopicPartitions in that shape, or None when the request did not send it.
"""

from __future__ import annotations

from typing import Callable, Mapping

from kgroup.kafka_errors import FENCED_MEMBER_EPOCH

# Kafka's MemberState, persisted as a byte in ConsumerGroupCurrentMemberAssignment
STABLE = 0
UNREVOKED_PARTITIONS = 1
UNRELEASED_PARTITIONS = 2
UNKNOWN = 127

EMPTY: Mapping = {}


def member_state(value: int) -> int:
    """Kafka's MemberState.fromValue: a state byte this coordinator does not know (written by a
    newer one) is UNKNOWN."""
    return value if value in (STABLE, UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS) else UNKNOWN


class ReconciliationError(Exception):
    """The member cannot be reconciled; ``code`` is the Kafka error to answer with."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def owns_any(owned: Mapping | None, partitions: Mapping) -> bool:
    """Whether the member still holds any of ``partitions``; not knowing (None) counts as holding."""
    if owned is None:
        return bool(partitions)
    for topic_id, parts in partitions.items():
        held = owned.get(topic_id)
        if held and not held.isdisjoint(parts):
            return True
    return False


def reconcile(member, target_epoch: int, target: Mapping, owned: Mapping | None,
              partition_epoch: Callable[[object, int], int], subscribed=None,
              subscription_changed: bool = False):
    """The member after this heartbeat (the same object when nothing changes).

    ``partition_epoch(topic_id, partition)`` is the epoch of the partition's current owner, -1
    when nobody owns it (Kafka's ``ConsumerGroup.currentPartitionEpoch``). ``subscribed``: the ids
    of the topics the member subscribes to (names and resolved regex) that exist; the target of
    any other topic counts as empty, and when ``subscription_changed`` the partitions of topics it
    left are revoked at once, whatever the epochs (Kafka 4.4, KAFKA-19431). None: no such check."""
    if not subscription_changed and member.state == STABLE and member.member_epoch == target_epoch:
        return member
    state = member.state
    if state == STABLE:
        if member.member_epoch != target_epoch:
            return _next(member, member.member_epoch, target_epoch, target, owned, partition_epoch, subscribed)
        return _unsubscribed_revoked(member, owned, subscribed)
    if state == UNREVOKED_PARTITIONS:
        if owns_any(owned, member.pending_revocation):
            return _unsubscribed_revoked(member, owned, subscribed) if subscription_changed else member
        # KAFKA-19974 (4.2+): the member keeps its epoch on leaving UNREVOKED_PARTITIONS (4.0: +1)
        return _next(member, member.member_epoch, target_epoch, target, owned, partition_epoch, subscribed)
    if state == UNRELEASED_PARTITIONS:
        return _next(member, member.member_epoch, target_epoch, target, owned, partition_epoch, subscribed)
    check_unknown_state(owned)
    return _next(member, target_epoch, target_epoch, target, owned, partition_epoch, subscribed)


def _unsubscribed_revoked(member, owned: Mapping | None, subscribed):
    """Kafka 4.4's CurrentAssignmentBuilder.updateCurrentAssignment: the partitions of topics the
    member no longer subscribes to leave its assignment at the same epoch — pending revocation if
    it still owns any of them, else simply gone."""
    if subscribed is None:
        return member
    assigned = member.assigned
    kept = {t: parts for t, parts in assigned.items() if t in subscribed}
    if len(kept) == len(assigned):
        return member
    pending = dict(member.pending_revocation)
    for topic_id, parts in assigned.items():
        if topic_id not in subscribed:
            pending[topic_id] = pending.get(topic_id, frozenset()) | parts
    if owns_any(owned, pending):
        epochs = _epochs(member, kept, pending, member.member_epoch)
        return member.evolve(member_epoch=member.member_epoch, state=UNREVOKED_PARTITIONS,
                             assigned=kept, pending_revocation=pending, assignment_epochs=epochs)
    # removed, but not owned any more: the assignment shrinks, the state and pending stay
    epochs = _epochs(member, kept, member.pending_revocation, member.member_epoch)
    return member.evolve(member_epoch=member.member_epoch, assigned=kept, assignment_epochs=epochs)


def check_unknown_state(owned: Mapping | None) -> None:
    """CurrentAssignmentBuilder's UNKNOWN case: the member is fenced unless it sent an empty
    TopicPartitions list (a topic listed without partitions counts as not empty)."""
    if owned is None or owned:
        raise ReconciliationError(FENCED_MEMBER_EPOCH, "The consumer group member is in a unknown state. "
                                                       "The member must abandon all its partitions and rejoin.")


def _next(member, epoch_if_revoking: int, target_epoch: int, target: Mapping,
          owned: Mapping | None, partition_epoch, subscribed=None):
    """Kafka's ``computeNextAssignment``: keep, revoke first, add what is free. A topic the member
    does not subscribe to (``subscribed``) has an empty target (Kafka 4.4)."""
    if subscribed is not None and any(t not in subscribed for t in target):
        target = {t: parts for t, parts in target.items() if t in subscribed}
    current = member.assigned
    if current == target:
        # nothing to revoke or add (the rows hold no empty topics): the member moves to the target
        # epoch as it is, which is what most members do at an epoch bump that left their row alone
        if not member.pending_revocation:
            return member.evolve(member_epoch=target_epoch, state=STABLE)
        return member.evolve(member_epoch=target_epoch, state=STABLE, pending_revocation=EMPTY,
                             assignment_epochs=_epochs(member, current, {}, target_epoch))
    keep: dict = {}
    revoke: dict = {}
    add: dict = {}
    unreleased = False
    for topic_id in current.keys() | target.keys():
        now = current.get(topic_id, frozenset())
        wanted = target.get(topic_id, frozenset())
        kept = now & wanted
        if kept:
            keep[topic_id] = kept
        if now - kept:
            revoke[topic_id] = now - kept
        free = set()
        pending = member.pending_revocation.get(topic_id, frozenset())
        for partition in wanted - kept:
            # KAFKA-19449 (4.2+): a partition the member itself is revoking is not unreleased
            if partition_epoch(topic_id, partition) != -1 and partition not in pending:
                unreleased = True
            else:
                free.add(partition)
        if free:
            add[topic_id] = frozenset(free)
    if revoke and owns_any(owned, revoke):
        return member.evolve(member_epoch=epoch_if_revoking, state=UNREVOKED_PARTITIONS,
                             assigned=keep, pending_revocation=revoke,
                             assignment_epochs=_epochs(member, keep, revoke, target_epoch))
    if add:
        for topic_id, parts in add.items():
            keep[topic_id] = keep.get(topic_id, frozenset()) | parts
    return member.evolve(member_epoch=target_epoch,
                         state=UNRELEASED_PARTITIONS if unreleased else STABLE,
                         assigned=keep, pending_revocation=EMPTY,
                         assignment_epochs=_epochs(member, keep, {}, target_epoch))


def _epochs(member, assigned: Mapping, pending: Mapping, target_epoch: int) -> dict:
    """KIP-1251's assignment epochs after a step: a partition the member already had keeps its
    epoch (kept or moved to pending revocation), a new one gets the target epoch (Kafka 4.4's
    CurrentAssignmentBuilder.computeNextAssignment)."""
    out: dict = {}
    default = max(member.member_epoch, 0)       # member.assignment_epoch's, looked up per topic
    for partitions in (assigned, pending):
        for topic_id, parts in partitions.items():
            epochs = out.setdefault(topic_id, {})
            held = member.assigned.get(topic_id, ())
            revoking = member.pending_revocation.get(topic_id, ())
            known = member.assignment_epochs.get(topic_id) or {}
            for partition in parts:
                if partition in held or partition in revoking:
                    epoch = known.get(partition)
                    epochs[partition] = default if epoch is None else epoch
                else:
                    epochs[partition] = target_epoch
    return out
