"""The Connect draft's three group APIs on the wire, and kgroup's ConnectGroupSetConnectors and
ConnectGroupDescribe (EXPERIMENTAL, kgroup's own API keys 1000-1004).

Each request declared in ``kgroup.protocol`` is turned into the coordinator's dataclass of
``kgroup.coordinator.connect.protocol``, handled by the same coordinator as every group API, and its answer
turned back into the declared response. Connect requests are never parked, so the answer is
immediate (after the bridge has written the operation's ``__worker_offsets`` records).
"""

from __future__ import annotations

import inspect

from kgroup.coordinator.connect import protocol as C


def _items(wire) -> C.ConnectorsAndTasks | None:
    if wire is None:
        return None
    return C.ConnectorsAndTasks(tuple(wire.connectors), tuple(C.TaskId(t.connector, t.task) for t in wire.tasks))


def _wire_items(cls, items: C.ConnectorsAndTasks, version: int):
    task = cls.ConnectorTaskId
    return cls(version=version, connectors=list(items.connectors),
               tasks=[task(version=version, connector=t.connector, task=t.task) for t in items.tasks])


def _to_coordinator(request):
    if request.API_KEY == C.CONNECT_GROUP_HEARTBEAT:
        assignors = None if request.client_assignors is None else [
            C.Assignor(a.name, a.minimum_version, a.maximum_version, a.reason, a.metadata_version,
                       bytes(a.metadata)) for a in request.client_assignors]
        return C.ConnectGroupHeartbeatRequest(
            request.group_id, request.member_id, request.member_epoch, request.instance_id,
            request.rebalance_timeout_ms, request.server_assignor, assignors, _items(request.connectors_and_tasks))
    if request.API_KEY == C.SET_CONNECTORS:
        return C.ConnectGroupSetConnectors(request.group_id, {c.name: c.tasks for c in request.connectors})
    if request.API_KEY == C.CONNECT_GROUP_DESCRIBE:
        return C.ConnectGroupDescribeRequest(tuple(request.group_ids))
    if request.API_KEY == C.CONNECT_GROUP_PREPARE_ASSIGNMENT:
        return C.ConnectGroupPrepareAssignmentRequest(request.group_id, request.member_id, request.member_epoch)
    return C.ConnectGroupInstallAssignmentRequest(
        request.group_id, request.member_id, request.member_epoch, request.group_epoch, request.error,
        [C.InstallMember(m.member_id, _items(m.connectors_and_tasks), m.metadata_version, bytes(m.metadata))
         for m in request.members])


def _heartbeat_response(r, v):
    from kgroup.protocol import ConnectGroupHeartbeatResponse as R
    assignment = None
    if r.assignment is not None:
        a = r.assignment
        assignment = R.Assignment(version=v, error=a.error, metadata_version=a.version, metadata=a.metadata,
                                  connectors_and_tasks=_wire_items(R.Assignment.ConnectorsAndTasks,
                                                                   a.connectors_and_tasks, v))
    return R(version=v, throttle_time_ms=0, error_code=r.error_code, error_message=r.error_message,
             member_epoch=r.member_epoch, heartbeat_interval_ms=r.heartbeat_interval_ms, assignment=assignment)


def _prepare_response(r, v):
    from kgroup.protocol import ConnectGroupPrepareAssignmentResponse as R
    M = R.Member
    members = [M(version=v, member_id=m.member_id, member_epoch=m.member_epoch, instance_id=m.instance_id,
                 assignor=M.Assignor(version=v, metadata_version=m.version, reason=m.reason, metadata=m.metadata),
                 connectors_and_tasks=_wire_items(M.ConnectorsAndTasks, m.connectors_and_tasks, v))
               for m in r.members]
    connectors = [R.Connector(version=v, name=name, tasks=tasks) for name, tasks in sorted((r.connectors or {}).items())]
    return R(version=v, throttle_time_ms=0, error_code=r.error_code, error_message=r.error_message,
             group_epoch=r.group_epoch, assignor_name=r.assignor_name, members=members, connectors=connectors)


def _install_response(r, v):
    from kgroup.protocol import ConnectGroupInstallAssignmentResponse as R
    return R(version=v, throttle_time_ms=0, error_code=r.error_code, error_message=r.error_message)


def _set_connectors_response(r, v):
    from kgroup.protocol import ConnectGroupSetConnectorsResponse as R
    return R(version=v, throttle_time_ms=0, error_code=r.error_code, error_message=r.error_message,
             group_epoch=r.group_epoch)


def described_connect_error(v, group_id, error_code, error_message=None):
    """A ConnectGroupDescribe entry for a group that is not described (unknown, refused)."""
    from kgroup.protocol import ConnectGroupDescribeResponse as R
    G = R.DescribedGroup
    return G(version=v, error_code=error_code, error_message=error_message, group_id=group_id,
             group_state="Dead", group_epoch=-1, assignment_epoch=-1, connectors=[],
             unassigned=_wire_items(G.ConnectorsAndTasks, C.ConnectorsAndTasks(), v), members=[])


def _describe_response(r, v):
    from kgroup.protocol import ConnectGroupDescribeResponse as R
    G = R.DescribedGroup
    items, member_items = G.ConnectorsAndTasks, G.Member.ConnectorsAndTasks

    def described(entry):
        s = entry.snapshot
        if s is None:
            return described_connect_error(v, entry.group_id, entry.error_code, entry.error_message)
        members = [G.Member(version=v, member_id=m.member_id, instance_id=m.instance_id, client_id=m.client_id,
                            client_host=m.client_host, member_epoch=m.member_epoch,
                            assignment=_wire_items(member_items, m.owned, v),
                            target_assignment=_wire_items(member_items, m.target, v))
                   for m in s.members]
        return G(version=v, error_code=C.NONE, error_message=None, group_id=s.group_id, group_state=s.state,
                 group_epoch=s.group_epoch, assignment_epoch=s.assignment_epoch, assignor_name=s.assignor,
                 assigner=s.assigner, assignment_error=s.assignment_error,
                 connectors=[G.Connector(version=v, name=n, tasks=t) for n, t in sorted(s.connectors.items())],
                 unassigned=_wire_items(items, s.unassigned, v), members=members)

    return R(version=v, throttle_time_ms=0, groups=[described(g) for g in r.groups])


_RESPONSES = {C.CONNECT_GROUP_HEARTBEAT: _heartbeat_response,
              C.CONNECT_GROUP_PREPARE_ASSIGNMENT: _prepare_response,
              C.CONNECT_GROUP_INSTALL_ASSIGNMENT: _install_response,
              C.SET_CONNECTORS: _set_connectors_response,
              C.CONNECT_GROUP_DESCRIBE: _describe_response}


async def handle_connect_request(broker, request, ctx):
    if request.API_KEY == C.SET_CONNECTORS and len({c.name for c in request.connectors}) != len(request.connectors):
        return _set_connectors_response(C.ConnectGroupSetConnectorsResponse(
            C.INVALID_REQUEST, "a connector is named more than once"), request.version)
    answer = broker.groups.handle(_to_coordinator(request), ctx)
    if inspect.isawaitable(answer):
        answer = await answer
    return _RESPONSES[request.API_KEY](answer, request.version)
