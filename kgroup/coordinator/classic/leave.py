"""LeaveGroup v0-v5 (Kafka's GroupMetadataManager.classicGroupLeave): batch removal by member id and/or instance id.

On a group of another type its ``ClassicProtocol.leave`` answers (a consumer group fences the named
members, ``consumer.admin.remove_members``)."""

from __future__ import annotations

import logging

from kafka.protocol.consumer.group import LeaveGroupResponse

from .. import codes
from .group import COMPLETING_REBALANCE, DEAD, PREPARING_REBALANCE, STABLE
from .rebalance import (heartbeat_key, maybe_complete_join_phase,
                        maybe_prepare_rebalance_or_complete_join, remove_member)

log = logging.getLogger("kgroup.coordinator")
_MemberResponse = LeaveGroupResponse.MemberResponse


def handle_leave_group(coord, request, client_id: str, client_host: str):
    version = request.API_VERSION
    if version < 3:
        identities = [(request.member_id or "", None, None)]
    else:
        identities = [(m.member_id or "", m.group_instance_id, m.reason if version >= 5 else None)
                      for m in request.members or ()]
    group_id = request.group_id or ""
    if not group_id:
        return coord.done_reply(_response(version, codes.INVALID_GROUP_ID, []))
    group = coord.get_group(group_id)
    other = coord.classic_protocol(group)
    if other is not None and other.leave is not None:     # a consumer group fences the named members
        return coord.done_reply(_response(version, codes.NONE, other.leave(coord, group, identities)))
    group = coord.get_classic_group(group_id)
    if group is None:
        return coord.done_reply(_response(
            version, codes.NONE, [(mid, iid, codes.UNKNOWN_MEMBER_ID) for mid, iid, _ in identities]))
    if group.state == DEAD:
        return coord.done_reply(_response(version, codes.COORDINATOR_NOT_AVAILABLE, []))

    results = []
    removed_any = False
    for member_id, instance_id, reason in identities:
        if not member_id:
            mapped = group.static_members.get(instance_id) if instance_id is not None else None
            if mapped is None:
                results.append((member_id, instance_id, codes.UNKNOWN_MEMBER_ID))
                continue
            target = mapped
        elif member_id in group.pending_members:
            group.remove(member_id)
            coord.cancel(heartbeat_key(group_id, member_id))
            results.append((member_id, instance_id, codes.NONE))
            removed_any = True
            continue
        else:
            error = group.validate_member(member_id, instance_id)
            if error:
                results.append((member_id, instance_id, error))
                continue
            target = member_id
        if log.isEnabledFor(logging.INFO):
            log.info("group %s: member %s (instance %s) leaves; reason: %s", group_id, target,
                     instance_id, reason if reason is not None else "not provided")
        remove_member(coord, group, group.members[target])
        results.append((member_id, instance_id, codes.NONE))
        removed_any = True

    if removed_any:
        if group.state in (STABLE, COMPLETING_REBALANCE):
            maybe_prepare_rebalance_or_complete_join(coord, group)
        elif group.state == PREPARING_REBALANCE:
            maybe_complete_join_phase(coord, group)
    return coord.done_reply(_response(version, codes.NONE, results))


def _response(version: int, error: int, results: list) -> LeaveGroupResponse:
    if version < 3:
        # v0-2 carry one code: the top-level error, else the single member's error
        if error == codes.NONE and results:
            error = results[0][2]
        return LeaveGroupResponse(version=version, throttle_time_ms=0, error_code=error)
    return LeaveGroupResponse(
        version=version, throttle_time_ms=0, error_code=error,
        members=[_MemberResponse(member_id=mid, group_instance_id=iid, error_code=code)
                 for mid, iid, code in results])
