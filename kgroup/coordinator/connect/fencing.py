"""Removing a Connect worker, and the three timers that do it or give up on it.

A removed worker (leave, session expiry, a revocation not acknowledged within its rebalance
timeout, FENCED_MEMBER_EPOCH) has its records tombstoned and its items freed at once; the group
epoch moves on, so the next target is computed without it. Its target entry stays until the next
install (the draft's case studies show the old target after a departure). The assigner's timer
abandons a computation not installed within the assigner's rebalance timeout, so another covering
worker is asked (kgroup's reading of the draft's "should finish within").
"""

from __future__ import annotations

from . import records as rec
from .group import ConnectGroup, assigner_timer_key, journaled, revocation_timer_key, session_timer_key


def remove_member(coord, group: ConnectGroup, member_id: str) -> None:
    rec.write(coord, rec.member_tombstones(group.group_id, member_id)
              + [rec.group_epoch_record(group.group_id, group.group_epoch + 1)])
    if group.computation is not None and group.computation.assigner == member_id:
        abandon_computation(coord, group)


def abandon_computation(coord, group: ConnectGroup) -> None:
    group.computation = None
    coord.cancel(assigner_timer_key(group.group_id))


def _connect_group(coord, group_id: str) -> ConnectGroup | None:
    group = journaled(coord, coord.get_group(group_id))
    return group if group is not None and group.group_type == ConnectGroup.group_type else None


def _expire(coord, group_id: str, member_id: str) -> None:
    group = _connect_group(coord, group_id)
    if group is not None and member_id in group.members:
        remove_member(coord, group, member_id)


def _revocation_overdue(coord, group_id: str, member_id: str) -> None:
    group = _connect_group(coord, group_id)
    member = None if group is None else group.members.get(member_id)
    if member is not None and not member.owned <= group.target.get(member_id, frozenset()):
        remove_member(coord, group, member_id)


def _computation_overdue(coord, group_id: str) -> None:
    """The assigner is skipped for the current group epoch if another worker covers the group."""
    group = _connect_group(coord, group_id)
    if group is None or group.computation is None:
        return
    if group.group_epoch not in group.timed_out:    # only the current epoch's are ever asked for
        group.timed_out = {group.group_epoch: set()}
    group.timed_out[group.group_epoch].add(group.computation.assigner)
    group.computation = None


def schedule_session(coord, group_id: str, member_id: str, timeout_ms: int | None = None) -> None:
    """The worker's session ends ``timeout_ms`` from now (default: the group's session timeout)."""
    if timeout_ms is None:
        timeout_ms = coord.config.group_connect_session_timeout_ms
    coord.schedule(session_timer_key(group_id, member_id), timeout_ms,
                   lambda: _expire(coord, group_id, member_id))


def arm_revocation(coord, group_id: str, member) -> None:
    """The member must acknowledge its revocation within its rebalance timeout (armed once)."""
    key = revocation_timer_key(group_id, member.member_id)
    if coord.timer_deadline(key) is None:
        member_id = member.member_id
        coord.schedule(key, max(member.rebalance_timeout_ms, 0),
                       lambda: _revocation_overdue(coord, group_id, member_id))


def disarm_revocation(coord, group_id: str, member_id: str) -> None:
    coord.cancel(revocation_timer_key(group_id, member_id))


def arm_computation(coord, group: ConnectGroup, assigner) -> None:
    group_id = group.group_id
    coord.schedule(assigner_timer_key(group_id), max(assigner.rebalance_timeout_ms, 0),
                   lambda: _computation_overdue(coord, group_id))


def restart_sessions(coord, group: ConnectGroup) -> None:
    """After a load: every worker's session restarts."""
    for member_id in group.members:
        schedule_session(coord, group.group_id, member_id)
