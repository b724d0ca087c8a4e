"""ConnectGroupHeartbeat: join, heartbeat, leave and reconciliation of a Connect worker.

The KIP-848 heartbeat with connectors and tasks instead of partitions: the request checks, the
member's join or fencing, the metadata change that bumps the group epoch, then one reconciliation
step (revoke first; new items only once nothing is left to revoke and their owner released them),
and COMPUTE_ASSIGNMENT to the worker selected to compute the next target. Every change is written
as ``__worker_offsets`` records and applied through ``connect.records.apply``.
"""

from __future__ import annotations

from dataclasses import replace

from . import records as rec
from .protocol import (COMPUTE_ASSIGNMENT, FENCED_MEMBER_EPOCH, GROUP_ID_NOT_FOUND, INVALID_REQUEST, NONE,
                      UNKNOWN_MEMBER_ID, UNSUPPORTED_ASSIGNOR, Assignment, ConnectGroupHeartbeatResponse,
                      connectors_and_tasks, items_of)
from .fencing import (abandon_computation, arm_computation, arm_revocation, disarm_revocation,
                              remove_member, schedule_session)
from .group import Computation, ConnectGroup, ConnectMember, journaled
from .migration import convertible_classic, upgrade
from .selection import assignors_problem, choose_assigner


def _error(coord, code: int, message: str | None = None):
    return coord.done_reply(ConnectGroupHeartbeatResponse(
        code, message, -1, coord.config.group_connect_heartbeat_interval_ms))


def request_problem(request) -> str | None:
    """Why the request is malformed (INVALID_REQUEST), or None."""
    if not request.group_id:
        return "GroupId can't be empty."
    if not request.member_id:
        return "MemberId can't be empty."
    if request.member_epoch < -1:
        return f"MemberEpoch {request.member_epoch} is invalid."
    if request.instance_id is not None and not request.instance_id:
        return "InstanceId can't be empty."
    if request.member_epoch == 0 and request.rebalance_timeout_ms <= 0:
        return "RebalanceTimeoutMs must be provided in first request."
    if request.server_assignor is not None and request.client_assignors:
        return "ServerAssignor and ClientAssignors can't be both set."
    if request.member_epoch == 0 and request.server_assignor is None and not request.client_assignors:
        return "ClientAssignors must be provided in first request."
    for a in request.client_assignors or ():
        if not a.name or a.minimum_version < -1 or a.maximum_version < 0 \
                or a.maximum_version < a.minimum_version \
                or not a.minimum_version <= a.version <= a.maximum_version:
            return f"Assignor {a.name!r} has an invalid name or version range."
    return None


def handle_connect_group_heartbeat(coord, request, client_id: str, client_host: str):
    problem = request_problem(request)
    if problem is not None:
        return _error(coord, INVALID_REQUEST, problem)
    if request.server_assignor is not None:
        return _error(coord, UNSUPPORTED_ASSIGNOR, "no server-side assignor serves Connect worker groups")
    group = journaled(coord, coord.get_group(request.group_id))
    if group is not None and group.group_type != ConnectGroup.group_type:
        if request.member_epoch != 0 or not convertible_classic(group):
            return _error(coord, GROUP_ID_NOT_FOUND, f"Group {request.group_id} is not a connect group.")
        group = upgrade(coord, group)       # the first new-protocol worker takes the empty classic group
    member_id, epoch = request.member_id, request.member_epoch
    member = None if group is None else group.members.get(member_id)
    if epoch == -1:
        if member is None:
            return _error(coord, UNKNOWN_MEMBER_ID)
        remove_member(coord, group, member_id)
        return coord.done_reply(ConnectGroupHeartbeatResponse(
            NONE, None, -1, coord.config.group_connect_heartbeat_interval_ms))
    if epoch > 0:
        if member is None:
            return _error(coord, UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of the group.")
        if epoch != member.member_epoch and not _lost_response(group, member, request):
            remove_member(coord, group, member_id)
            return _error(coord, FENCED_MEMBER_EPOCH,
                          f"The member epoch {epoch} does not match the expected {member.member_epoch}.")
    joining = member is None or (epoch == 0 and member.member_epoch > 0)
    replaced = _static_predecessor(group, request) if joining else None
    updated = _updated_member(group, member, request, client_id, client_host, joining)
    if updated.assignors != (() if member is None else member.assignors):
        others = [] if group is None else [m for m in group.members.values()
                                           if m.member_id not in (member_id, replaced)]
        problem = assignors_problem(others + [updated], updated)
        if problem is not None:
            return _error(coord, UNSUPPORTED_ASSIGNOR, problem)
    records = []
    if replaced is not None:        # a static worker restarted under a new member id
        records += rec.member_tombstones(request.group_id, replaced)
        if group.computation is not None and group.computation.assigner == replaced:
            abandon_computation(coord, group)
    bump = member is None or updated.assignors != member.assignors
    if bump or updated.instance_id != member.instance_id:
        records.append(rec.member_record(request.group_id, updated, _epoch(group) + int(bump)))
    if joining:
        records.append(rec.current_assignment_record(request.group_id, updated))
    if bump:
        records.append(rec.group_epoch_record(request.group_id, _epoch(group) + 1))
    rec.write(coord, records)
    group = coord.get_group(request.group_id)
    member = group.members[member_id]
    member.rebalance_timeout_ms = updated.rebalance_timeout_ms
    schedule_session(coord, group.group_id, member_id)
    changed = reconcile(coord, group, member,
                        None if joining else items_of(request.connectors_and_tasks)
                        if request.connectors_and_tasks is not None else None)
    code = COMPUTE_ASSIGNMENT if _asked_to_compute(coord, group, member) else NONE
    assignment = None
    if changed or joining:
        version, metadata = group.target_versions.get(member_id, (member.version, member.metadata))
        # what the worker keeps running: its current assignment within its target
        running = member.owned & group.target.get(member_id, frozenset())
        assignment = Assignment(group.target_error, connectors_and_tasks(running), version, metadata)
    return coord.done_reply(ConnectGroupHeartbeatResponse(
        code, None, member.member_epoch, coord.config.group_connect_heartbeat_interval_ms, assignment))


def _epoch(group) -> int:
    return 0 if group is None else group.group_epoch


def _static_predecessor(group, request) -> str | None:
    """The member that held the joining worker's instance id under another member id (it is replaced:
    its items are freed and the join bumps the group epoch once for both changes)."""
    if group is None or request.instance_id is None:
        return None
    for other in group.members.values():
        if other.instance_id == request.instance_id and other.member_id != request.member_id:
            return other.member_id
    return None


def _lost_response(group, member, request) -> bool:
    """The draft's edge case: the worker missed the response that moved its epoch on."""
    return request.member_epoch == member.previous_epoch and \
        items_of(request.connectors_and_tasks) <= group.target.get(member.member_id, frozenset())


def _updated_member(group, member, request, client_id, client_host, joining) -> ConnectMember:
    """The member as this request leaves it (not stored yet: the assignor checks come first)."""
    if member is None:
        member = ConnectMember(request.member_id, member_epoch=0 if group is None else group.assignment_epoch)
    elif joining:       # a restarted worker runs nothing
        member = replace(member, member_epoch=group.assignment_epoch, owned=frozenset())
    changes = {"client_id": client_id, "client_host": client_host}
    if request.instance_id is not None:
        changes["instance_id"] = request.instance_id
    if request.rebalance_timeout_ms > 0:
        changes["rebalance_timeout_ms"] = request.rebalance_timeout_ms
    if request.client_assignors is not None:
        changes["assignors"] = tuple(request.client_assignors)
    return replace(member, **changes)


def reconcile(coord, group: ConnectGroup, member: ConnectMember, reported: frozenset | None) -> bool:
    """One step towards the target; True when the member's epoch or current assignment changed."""
    owned = member.owned
    if reported is not None and reported <= owned:
        owned = reported                  # the acknowledgement of a revocation
    target = group.target.get(member.member_id, frozenset())
    epoch = member.member_epoch
    if owned <= target:
        disarm_revocation(coord, group.group_id, member.member_id)
        epoch = group.assignment_epoch
        held = frozenset().union(*(m.owned for m in group.members.values() if m is not member))
        owned = owned | (target - held)
    else:
        arm_revocation(coord, group.group_id, member)
    if epoch == member.member_epoch and owned == member.owned:
        return not member.owned <= target
    rec.write(coord, [rec.current_assignment_record(group.group_id, replace(
        member, member_epoch=epoch, owned=owned, error=group.target_error))])
    return True


def _asked_to_compute(coord, group: ConnectGroup, member: ConnectMember) -> bool:
    """Whether this member must compute the next target (COMPUTE_ASSIGNMENT)."""
    if group.group_epoch <= group.assignment_epoch:
        group.assignment_error = None
        return False
    computation = group.computation
    if computation is None:
        assigner = choose_assigner(group)
        group.assignment_error = None if assigner is not None else "NO_COVERING_WORKER"
        if assigner != member.member_id:
            return False
        group.computation = Computation(group.group_epoch, assigner)
        group.assigner = assigner
        arm_computation(coord, group, member)
        return True
    return computation.assigner == member.member_id
