"""SyncGroup v0-v5 (Kafka's GroupMetadataManager.classicGroupSync) and Heartbeat v0-v4 (classicGroupHeartbeat)."""

from __future__ import annotations

from .. import codes
from .group import DEAD, EMPTY, PREPARING_REBALANCE, STABLE
from .records import group_metadata_record
from .rebalance import propagate_assignment, remove_pending_sync, reschedule_member
from .responses import heartbeat_response, sync_response, wire_bytes


def handle_sync_group(coord, request, client_id: str, client_host: str):
    version = request.API_VERSION
    done = coord.done_reply
    if version >= 5 and (request.protocol_type is None or request.protocol_name is None):
        # the broker's API layer refuses v5+ syncs without both fields before the coordinator
        return done(sync_response(version, codes.INCONSISTENT_GROUP_PROTOCOL))
    group_id = request.group_id or ""
    if not group_id:
        return done(sync_response(version, codes.INVALID_GROUP_ID))
    group = coord.get_group(group_id)
    other = coord.classic_protocol(group)
    if other is not None and other.sync is not None:
        return other.sync(coord, group, request, version)      # a consumer group's classic member
    if group is None or other is not None or group.state == EMPTY:
        # another type (a Connect worker group): as Kafka's classicGroupSync, "not found" for a member
        return done(sync_response(version, codes.UNKNOWN_MEMBER_ID))
    if group.state == DEAD:
        return done(sync_response(version, codes.COORDINATOR_NOT_AVAILABLE))
    member_id = request.member_id or ""
    instance_id = request.group_instance_id if version >= 3 else None
    error = group.validate_member(member_id, instance_id)
    if error:
        return done(sync_response(version, error))
    if request.generation_id != group.generation_id:
        return done(sync_response(version, codes.ILLEGAL_GENERATION))
    if version >= 5 and (_inconsistent(request.protocol_type, group.protocol_type)
                         or _inconsistent(request.protocol_name, group.protocol_name)):
        return done(sync_response(version, codes.INCONSISTENT_GROUP_PROTOCOL))
    state = group.state
    if state == PREPARING_REBALANCE:
        return done(sync_response(version, codes.REBALANCE_IN_PROGRESS))
    member = group.members[member_id]
    if state == STABLE:
        remove_pending_sync(coord, group, member_id)
        return done(sync_response(version, codes.NONE, member.assignment, group.protocol_type,
                                  group.protocol_name))
    # CompletingRebalance: park until the leader's assignment is installed
    reply = coord.parked_reply()
    group.save_member(member)
    member.sync_reply = reply
    member.sync_version = version
    remove_pending_sync(coord, group, member_id)
    if member_id == group.leader_id:
        assignments = {}
        for entry in request.assignments or ():
            assignments[entry.member_id] = wire_bytes(
                entry.assignment, "SyncGroup group {!r} assignment of member {!r}", group_id, entry.member_id)
        # Kafka writes the record before it installs the assignment; here the assignment is
        # installed first and the record written from the group itself (its record cache then
        # holds the new encodings for the next write): a failed append reverts both as one unit.
        for member_entry in group.members.values():
            group.save_member(member_entry)
            member_entry.assignment = assignments.get(member_entry.member_id, b"")
            group.touch_record(member_entry.member_id)
        coord.append_records([group_metadata_record(group)])
        propagate_assignment(coord, group, codes.NONE)
        group.transition_to(STABLE, coord.now_ms)
    return reply


def _inconsistent(requested: str | None, current: str | None) -> bool:
    return requested is not None and current is not None and requested != current


def handle_heartbeat(coord, request, client_id: str, client_host: str):
    version = request.API_VERSION

    def answer(error: int):
        return coord.done_reply(heartbeat_response(version, error))

    group_id = request.group_id or ""
    if not group_id:
        return answer(codes.INVALID_GROUP_ID)
    group = coord.get_group(group_id)
    other = coord.classic_protocol(group)
    if other is not None and other.heartbeat is not None:
        return other.heartbeat(coord, group, request, version)      # a consumer group's classic member
    if group is None or other is not None:    # another type: as Kafka's classicGroupHeartbeat
        return answer(codes.UNKNOWN_MEMBER_ID)
    if group.state == DEAD:
        return answer(codes.COORDINATOR_NOT_AVAILABLE)
    member_id = request.member_id or ""
    error = group.validate_member(member_id, request.group_instance_id if version >= 3 else None)
    if error:
        return answer(error)
    if request.generation_id != group.generation_id:
        return answer(codes.ILLEGAL_GENERATION)
    state = group.state
    if state == EMPTY:
        return answer(codes.UNKNOWN_MEMBER_ID)
    reschedule_member(coord, group, group.members[member_id])
    if state == PREPARING_REBALANCE:
        return answer(codes.REBALANCE_IN_PROGRESS)
    return answer(codes.NONE)
