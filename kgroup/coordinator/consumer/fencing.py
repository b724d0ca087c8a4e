"""Fencing consumer-group members, and the timers that fence them (Kafka's
``consumerGroupFenceMember``, ``scheduleConsumerGroupSessionTimeout``,
``scheduleConsumerGroupRebalanceTimeout``).

A fenced member's records are tombstoned and the group epoch moves on, so the next heartbeat of
any member computes a target without it. The session timer fences a member that stopped
heartbeating (a static member parked at epoch -2 included); the rebalance timer fences a member
that did not revoke in time — only if it still has the epoch it was scheduled at. Fencing the last
consumer-protocol member of a group whose other members speak the classic protocol converts it
back to a classic group instead (``migration.maybe_downgrade``).
"""

from __future__ import annotations

from . import records as rec
from .group import (ConsumerGroup, ConsumerGroupMember, member_timer_keys, rebalance_timer_key, subscribed_names,
                             session_timer_key)
from .regex import plan_regexes
from .target import subscribed_topics
from .migration import maybe_downgrade
from .reconciliation import UNREVOKED_PARTITIONS


def fence_member(coord, group: ConsumerGroup, member_id: str) -> None:
    fence_members(coord, group, [member_id])


def fence_members(coord, group: ConsumerGroup, member_ids: list[str]) -> None:
    """Kafka's consumerGroupFenceMember(s): the members' records go (and the resolutions of regexes no
    one else uses), the group epoch moves on once."""
    group_id = group.group_id
    if maybe_downgrade(coord, group, member_ids):     # the last consumer-protocol member left
        return
    records = []
    counts = dict(group.subscriber_counts)
    for member_id in member_ids:
        records += rec.member_tombstones(group_id, member_id)
        for name in group.members[member_id].subscribed_topic_names:
            counts[name] -= 1
    resolved = group.resolved_regexes
    if resolved:
        staying = {m_id: m for m_id, m in group.members.items() if m_id not in member_ids}
        plan = plan_regexes(coord, group, staying, refresh=False)
        records += plan.records
        resolved = plan.resolved
    # Kafka 4.4 bumps the epoch with the hash of what the members left subscribe to; once every
    # member is gone the target epoch follows (timestamp 0, as a new group's: KIP-1263's interval
    # does not hold back the next assignment)
    names = subscribed_names(counts, resolved)
    epoch = group.group_epoch + 1
    records.append(rec.group_epoch_record(group_id, epoch, coord.metadata_hash(names)))
    if len(member_ids) == len(group.members):
        records.append(rec.target_epoch_record(group_id, epoch, 0))
    rec.write(coord, records)
    group = coord.get_group(group_id) or group
    group.set_field("subscribed_topics", subscribed_topics(coord.topic_image, names))
    for member_id in member_ids:
        for key in member_timer_keys(group_id, member_id):
            coord.cancel(key)


def _fence_on_timeout(coord, group_id: str, member_id: str, epoch: int | None = None) -> None:
    group = coord.get_group(group_id)
    if group is None or group.group_type != ConsumerGroup.group_type:
        return
    member = group.members.get(member_id)
    if member is None or (epoch is not None and member.member_epoch != epoch):
        return
    fence_member(coord, group, member_id)


def schedule_session_timeout(coord, group_id: str, member_id: str, timeout_ms: int | None = None) -> None:
    """The member's session ends ``timeout_ms`` from now: a classic member's own session timeout
    (from its JoinGroup), simulate's moved deadline, else the group's (as a heartbeat restarts it)."""
    session_key = session_timer_key(group_id, member_id)
    if timeout_ms is None:
        timeout_ms = coord.config.group_consumer_session_timeout_ms
    coord.schedule(session_key, timeout_ms, lambda: _fence_on_timeout(coord, group_id, member_id))


def schedule_rebalance_timeout(coord, group_id: str, member: ConsumerGroupMember) -> None:
    key = rebalance_timer_key(group_id, member.member_id)
    if member.state != UNREVOKED_PARTITIONS:
        coord.cancel(key)
        return
    epoch = member.member_epoch
    coord.schedule(key, max(member.rebalance_timeout_ms, 0),
                   lambda: _fence_on_timeout(coord, group_id, member.member_id, epoch))


def restart_sessions(coord, group: ConsumerGroup) -> None:
    """After a load: every member's session restarts, revocations in flight get their timeout.
    Kafka's GroupMetadataManager.onLoaded restarts them all with the group's consumer session
    timeout, a classic member's too (its own comes back with its next classic request)."""
    for member in group.members.values():
        schedule_session_timeout(coord, group.group_id, member.member_id)
        if member.state == UNREVOKED_PARTITIONS:
            schedule_rebalance_timeout(coord, group.group_id, member)
