"""ConnectGroupPrepareAssignment, ConnectGroupInstallAssignment, ConnectGroupSetConnectors (and
kgroup's ConnectGroupDescribe).

The selected worker computes the target on its side: Prepare hands it the group's metadata (and
keeps that snapshot), Install validates the result against the snapshot — no item twice, every
worker exists, every item is a connector or task of the snapshot's connector set — and installs
it. "Every item is assigned" is not required: during ``scheduled.rebalance.max.delay.ms`` a
departed worker's items are held unassigned on purpose. An assignor error keeps the previous
target. ConnectGroupSetConnectors is kgroup's way of telling the coordinator the config topic's
connectors, which the draft lists as an epoch trigger without any API to carry them.
"""

from __future__ import annotations

from . import records as rec
from .protocol import (FENCED_MEMBER_EPOCH, GROUP_ID_NOT_FOUND, INVALID_ASSIGNMENT, INVALID_REQUEST, NONE,
                      UNKNOWN_MEMBER_ID, ConnectGroupDescribeResponse, ConnectGroupInstallAssignmentResponse,
                      ConnectGroupPrepareAssignmentResponse, ConnectGroupSetConnectorsResponse,
                      DescribedConnectGroup, PreparedMember, connector_items, connector_set_problem,
                      connectors_and_tasks, items_of)
from .fencing import abandon_computation
from .group import ConnectGroup, journaled
from .migration import convertible_classic, upgrade
from .selection import assignor_of, selected_assignor


def _assigner_problem(coord, request, answer):
    """Steps shared by Prepare and Install: (group, None) or (None, error reply)."""
    if not request.group_id or not request.member_id or request.member_epoch < 0:
        return None, coord.done_reply(answer(INVALID_REQUEST, "GroupId, MemberId or MemberEpoch is invalid."))
    group = journaled(coord, coord.get_group(request.group_id))
    if group is None or group.group_type != ConnectGroup.group_type:
        return None, coord.done_reply(answer(GROUP_ID_NOT_FOUND, None))
    member = group.members.get(request.member_id)
    if member is None:
        return None, coord.done_reply(answer(UNKNOWN_MEMBER_ID, None))
    if request.member_epoch != member.member_epoch:
        return None, coord.done_reply(answer(FENCED_MEMBER_EPOCH, None))
    computation = group.computation
    if computation is None or computation.assigner != request.member_id:
        return None, coord.done_reply(answer(UNKNOWN_MEMBER_ID, "The member is not computing an assignment."))
    return group, None


def handle_prepare_assignment(coord, request, client_id: str, client_host: str):
    group, error = _assigner_problem(coord, request, ConnectGroupPrepareAssignmentResponse)
    if error is not None:
        return error
    computation = group.computation
    computation.group_epoch = group.group_epoch
    computation.snapshot_members = frozenset(group.members)
    computation.snapshot_connectors = dict(group.connectors)
    name = selected_assignor(group.members.values())
    members = []
    for member_id, member in group.members.items():
        assignor = assignor_of(member, name)
        members.append(PreparedMember(member_id, member.member_epoch, member.instance_id, assignor.version,
                                      assignor.reason, assignor.metadata,
                                      connectors_and_tasks(group.target.get(member_id, frozenset()))))
    return coord.done_reply(ConnectGroupPrepareAssignmentResponse(
        NONE, None, group.group_epoch, name, tuple(members), dict(group.connectors)))


def install_problem(computation, request) -> str | None:
    """Why the assignment cannot be installed (INVALID_ASSIGNMENT), judged against the snapshot."""
    if computation.snapshot_members is None:
        return "no ConnectGroupPrepareAssignment was answered for this computation"
    if request.group_epoch != computation.group_epoch:
        return f"GroupEpoch {request.group_epoch} is not the prepared {computation.group_epoch}"
    known = connector_items(computation.snapshot_connectors)
    seen: set = set()
    entries = set()
    for entry in request.members:
        if entry.member_id not in computation.snapshot_members:
            return f"worker {entry.member_id} is not a member of the group"
        if entry.member_id in entries:
            return f"worker {entry.member_id} has two entries"
        entries.add(entry.member_id)
        items = entry.connectors_and_tasks
        listed = list(items.connectors) + list(items.tasks)
        as_set = items_of(items)
        if len(as_set) != len(listed) or not seen.isdisjoint(as_set):
            return "a connector or task is assigned twice"
        unknown = as_set - known
        if unknown:
            return f"{sorted(map(str, unknown))[0]} is not a connector or task of the group"
        seen |= as_set
    missing = computation.snapshot_members - entries
    if missing:
        return f"worker {sorted(missing)[0]} has no entry"
    return None


def handle_install_assignment(coord, request, client_id: str, client_host: str):
    if any(entry.connectors_and_tasks is None for entry in request.members):
        return coord.done_reply(ConnectGroupInstallAssignmentResponse(
            INVALID_REQUEST, "ConnectorsAndTasks must be set for every member."))
    group, error = _assigner_problem(coord, request, ConnectGroupInstallAssignmentResponse)
    if error is not None:
        return error
    problem = install_problem(group.computation, request)
    if problem is not None:
        return coord.done_reply(ConnectGroupInstallAssignmentResponse(INVALID_ASSIGNMENT, problem))
    if request.error:       # the assignor failed: the previous target stays
        target = {m: group.target.get(m, frozenset()) for m in group.members}
        versions = group.target_versions
    else:
        given = {e.member_id: e for e in request.members}
        target = {m: items_of(given[m].connectors_and_tasks) if m in given else frozenset()
                  for m in group.members}
        versions = {m: (e.version, e.metadata) for m, e in given.items()}
    rec.write(coord, [rec.target_record(group.group_id, request.group_epoch, request.error, target, versions)])
    abandon_computation(coord, group)
    return coord.done_reply(ConnectGroupInstallAssignmentResponse(NONE))


def handle_set_connectors(coord, request, client_id: str, client_host: str):
    connectors = {str(name): int(count) for name, count in request.connectors.items()}
    problem = "no group id" if not request.group_id else connector_set_problem(connectors)
    if problem:
        return coord.done_reply(ConnectGroupSetConnectorsResponse(INVALID_REQUEST, f"invalid connector set: {problem}"))
    group = coord.get_group(request.group_id)
    if group is not None and group.group_type != ConnectGroup.group_type:
        if not convertible_classic(group):
            return coord.done_reply(ConnectGroupSetConnectorsResponse(GROUP_ID_NOT_FOUND))
        group = upgrade(coord, group, connectors)
    if group is not None and group.connectors == connectors:
        return coord.done_reply(ConnectGroupSetConnectorsResponse(NONE, None, group.group_epoch))
    epoch = 0 if group is None else group.group_epoch + 1
    rec.write(coord, [rec.connectors_record(request.group_id, epoch, connectors),
                      rec.group_epoch_record(request.group_id, epoch)])
    return coord.done_reply(ConnectGroupSetConnectorsResponse(NONE, None, epoch))


def handle_connect_group_describe(coord, request, client_id: str, client_host: str):
    """kgroup's ConnectGroupDescribe: each named worker group's snapshot; GROUP_ID_NOT_FOUND for an
    unknown id or a group of another type (as ConsumerGroupDescribe answers a classic group)."""
    described = []
    for group_id in request.group_ids:
        snapshot = coord.connect_group(group_id)
        described.append(
            DescribedConnectGroup(group_id, NONE, None, snapshot) if snapshot is not None
            else DescribedConnectGroup(group_id, GROUP_ID_NOT_FOUND, f"Group {group_id} is not a connect group."))
    return coord.done_reply(ConnectGroupDescribeResponse(tuple(described)))
