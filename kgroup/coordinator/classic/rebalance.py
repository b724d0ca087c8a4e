"""The rebalance engine shared by every group API: timers, join completion, removals.

Mirrors Kafka's GroupMetadataManager (prepareRebalance, completeClassicGroupJoin,
expireClassicGroupMemberHeartbeat, expirePendingSync, the initial-delay loop).
"""

from __future__ import annotations

from .. import codes
from ..config import NEW_MEMBER_JOIN_TIMEOUT_MS
from .group import (COMPLETING_REBALANCE, EMPTY, PREPARING_REBALANCE, STABLE, ClassicGroup, Member,
                    heartbeat_key, join_key, sync_key)
from .subscriptions import remember_subscriptions
from .records import group_metadata_record
from .responses import join_error, join_response, member_list, sync_response


# ---- session timers ----------------------------------------------------------------------
def reschedule_heartbeat(coord, group: ClassicGroup, member_id: str, timeout_ms: int) -> None:
    group_id = group.group_id
    coord.schedule(heartbeat_key(group_id, member_id), timeout_ms,
                   lambda: expire_heartbeat(coord, group_id, member_id))


def reschedule_member(coord, group: ClassicGroup, member: Member) -> None:
    reschedule_heartbeat(coord, group, member.member_id, member.session_timeout_ms)


def expire_heartbeat(coord, group_id: str, member_id: str) -> None:
    group = coord.get_classic_group(group_id)
    if group is None:
        return
    if member_id in group.pending_members:
        group.remove(member_id)
        if group.state == PREPARING_REBALANCE and group.has_all_members_joined():
            complete_join(coord, group)
        return
    member = group.members.get(member_id)
    if member is None or member.has_satisfied_heartbeat():
        return
    remove_member_and_update(coord, group, member)


def remove_member(coord, group: ClassicGroup, member: Member) -> None:
    """Remove a current member: its parked JoinGroup gets UNKNOWN_MEMBER_ID, its session timer goes."""
    reply = group.take_join_reply(member)
    if reply is not None:
        reply.complete(join_error(member.join_version, codes.UNKNOWN_MEMBER_ID, ""))
    group.remove(member.member_id)
    coord.cancel(heartbeat_key(group.group_id, member.member_id))


def remove_member_and_update(coord, group: ClassicGroup, member: Member) -> None:
    reply = group.take_join_reply(member)
    if reply is not None:
        reply.complete(join_error(member.join_version, codes.UNKNOWN_MEMBER_ID, ""))
    group.remove(member.member_id)
    if group.state in (STABLE, COMPLETING_REBALANCE):
        maybe_prepare_rebalance_or_complete_join(coord, group)
    elif group.state == PREPARING_REBALANCE and group.has_all_members_joined():
        complete_join(coord, group)


# ---- adding members ----------------------------------------------------------------------
def add_member_then_rebalance(coord, group: ClassicGroup, member: Member, reply, version: int) -> None:
    member.is_new = True
    if group.state == PREPARING_REBALANCE and group.previous_state == EMPTY:
        group.save()
        group.new_member_added = True
    group.add(member, reply, version)
    # a member without its id cannot heartbeat: it gets the new-member join timeout instead
    reschedule_heartbeat(coord, group, member.member_id, NEW_MEMBER_JOIN_TIMEOUT_MS)
    maybe_prepare_rebalance_or_complete_join(coord, group)


# ---- rebalance state machine -------------------------------------------------------------
def maybe_prepare_rebalance_or_complete_join(coord, group: ClassicGroup) -> None:
    if group.can_rebalance():
        prepare_rebalance(coord, group)
    else:
        maybe_complete_join_phase(coord, group)


def maybe_complete_join_phase(coord, group: ClassicGroup) -> None:
    """Never completes the initial round early (previous state Empty): the delay must run."""
    if (group.state == PREPARING_REBALANCE and group.previous_state != EMPTY
            and group.has_all_members_joined()):
        complete_join(coord, group)


def prepare_rebalance(coord, group: ClassicGroup) -> None:
    if group.state == COMPLETING_REBALANCE:
        reset_and_propagate_assignment_with_error(coord, group, codes.REBALANCE_IN_PROGRESS)
    group.save()
    group.undo.set_clear(group.pending_sync)
    coord.cancel(sync_key(group.group_id))
    initial = group.state == EMPTY
    if initial:
        delay = coord.config.group_initial_rebalance_delay_ms
        remaining = max(group.rebalance_timeout_ms() - delay, 0)
        _schedule_initial(coord, group.group_id, delay, remaining)
    group.transition_to(PREPARING_REBALANCE, coord.now_ms)
    if not initial:
        maybe_complete_join_else_schedule(coord, group)


def _schedule_initial(coord, group_id: str, delay: int, remaining: int) -> None:
    coord.schedule(join_key(group_id), delay,
                   lambda: try_complete_initial_rebalance(coord, group_id, delay, remaining))


def try_complete_initial_rebalance(coord, group_id: str, delay: int, remaining: int) -> None:
    """Each firing extends the initial round while members keep arriving, within the rebalance timeout."""
    group = coord.get_classic_group(group_id)
    if group is None or group.state != PREPARING_REBALANCE:
        return
    if group.new_member_added and remaining != 0:
        group.save()
        group.new_member_added = False
        configured = coord.config.group_initial_rebalance_delay_ms
        _schedule_initial(coord, group_id, min(configured, remaining), max(remaining - delay, 0))
    else:
        complete_join(coord, group)


def maybe_complete_join_else_schedule(coord, group: ClassicGroup) -> None:
    if group.has_all_members_joined():
        complete_join(coord, group)
    else:
        _schedule_join_timeout(coord, group)


def _schedule_join_timeout(coord, group: ClassicGroup) -> None:
    group_id = group.group_id

    def fire():
        current = coord.get_classic_group(group_id)
        if current is not None and current.state == PREPARING_REBALANCE:
            complete_join(coord, current)

    coord.schedule(join_key(group_id), group.rebalance_timeout_ms(), fire)


def complete_join(coord, group: ClassicGroup) -> None:
    coord.cancel(join_key(group.group_id))
    # dynamic members that did not rejoin are dropped; static ones are kept (KIP-345)
    absent = [m for m in group.members.values()
              if m.join_reply is None and m.group_instance_id is None]
    for member in absent:
        group.remove(member.member_id)
        coord.cancel(heartbeat_key(group.group_id, member.member_id))
    if not _maybe_elect_new_joined_leader(group) and group.members:
        # nobody rejoined: wait another rebalance timeout for a rejoin or session expiry
        _schedule_join_timeout(coord, group)
        return
    _init_next_generation(coord, group)
    if group.state == EMPTY:
        coord.append_records([group_metadata_record(group)])
        return
    leader = group.leader_id
    for member in group.members.values():
        reply = group.take_join_reply(member)
        if reply is not None:
            is_leader = member.member_id == leader
            reply.complete(join_response(
                member.join_version, codes.NONE, member.member_id, group.generation_id,
                group.protocol_type, group.protocol_name, leader,
                members=member_list(group) if is_leader else None))
        reschedule_member(coord, group, member)
        group.save_member(member)
        member.is_new = False
        group.undo.set_add(group.pending_sync, member.member_id)
    _schedule_pending_sync(coord, group)


def _maybe_elect_new_joined_leader(group: ClassicGroup) -> bool:
    if group.leader_id is None:
        return False
    leader = group.members.get(group.leader_id)
    if leader is not None and leader.join_reply is not None:
        return True
    # Kafka's maybeElectNewJoinedLeader: the first rejoined member in its members HashMap's order
    joined = group.java_first_member(m for m in group.members.values() if m.join_reply is not None)
    if joined is None:
        return False
    group.save()
    group.leader_id = joined.member_id
    return True


def _init_next_generation(coord, group: ClassicGroup) -> None:
    group.save()
    group.generation_id += 1
    if group.members:
        group.protocol_name = group.select_protocol()
        group.transition_to(COMPLETING_REBALANCE, coord.now_ms)
    else:
        group.protocol_name = None
        group.transition_to(EMPTY, coord.now_ms)
    remember_subscriptions(group)       # Kafka's initNextGeneration caches subscribedTopics
    group.undo.set_clear(group.pending_sync)
    # new_member_added is only cleared by the initial-delay timer, as in Kafka


# ---- sync phase --------------------------------------------------------------------------
def _schedule_pending_sync(coord, group: ClassicGroup) -> None:
    group_id, generation = group.group_id, group.generation_id
    coord.schedule(sync_key(group_id), group.rebalance_timeout_ms(),
                   lambda: expire_pending_sync(coord, group_id, generation))


def expire_pending_sync(coord, group_id: str, generation: int) -> None:
    """Members (static ones too) that did not SyncGroup within the rebalance timeout are removed."""
    group = coord.get_classic_group(group_id)
    if group is None or group.generation_id != generation:
        return
    if group.state not in (COMPLETING_REBALANCE, STABLE) or not group.pending_sync:
        return
    late = [mid for mid in group.members if mid in group.pending_sync]
    late += sorted(group.pending_sync.difference(late))
    for member_id in late:
        group.remove(member_id)
        coord.cancel(heartbeat_key(group_id, member_id))
    prepare_rebalance(coord, group)


def remove_pending_sync(coord, group: ClassicGroup, member_id: str) -> None:
    group.undo.set_discard(group.pending_sync, member_id)
    if not group.pending_sync and group.state in (COMPLETING_REBALANCE, STABLE):
        coord.cancel(sync_key(group.group_id))


def reset_and_propagate_assignment_with_error(coord, group: ClassicGroup, error: int) -> None:
    for member in group.members.values():
        group.save_member(member)
        member.assignment = b""
    group.drop_record_cache()
    propagate_assignment(coord, group, error)


def propagate_assignment(coord, group: ClassicGroup, error: int) -> None:
    ok = error == codes.NONE
    protocol_type = group.protocol_type if ok else None
    protocol_name = group.protocol_name if ok else None
    for member in group.members.values():
        reply = member.sync_reply
        if reply is None:
            continue
        group.save_member(member)
        member.sync_reply = None
        reply.complete(sync_response(member.sync_version, error, member.assignment,
                                     protocol_type, protocol_name))
        reschedule_member(coord, group, member)
