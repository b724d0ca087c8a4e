"""Connect worker groups over the wire (kgroup's experimental keys 1000-1003): request builders against
a ThreadedBroker, and a one-worker group settled through SetConnectors, Heartbeat, Prepare and Install."""

from __future__ import annotations

import kgroup.protocol as P
from kgroup.server.harness import raw_request


def call(broker, request, response_class):
    return response_class.decode(raw_request(broker.address, request), version=0, header=True)


def set_connectors(broker, connectors, group="cc"):
    """ConnectGroupSetConnectors (key 1003); ``connectors``: [(name, tasks), ...] or {name: tasks}."""
    req = P.ConnectGroupSetConnectorsRequest
    pairs = connectors.items() if isinstance(connectors, dict) else connectors
    return call(broker, req(version=0, group_id=group, connectors=[req.Connector(name=n, tasks=t) for n, t in pairs]),
                P.ConnectGroupSetConnectorsResponse)


def heartbeat(broker, member_id, epoch, owned=None, group="cc"):
    req = P.ConnectGroupHeartbeatRequest
    cat = owned and req.ConnectorsAndTasks(connectors=owned[0], tasks=[
        req.ConnectorsAndTasks.ConnectorTaskId(connector=c, task=t) for c, t in owned[1]])
    return call(broker, req(version=0, group_id=group, member_id=member_id, member_epoch=epoch, instance_id=None,
                            rebalance_timeout_ms=60000, server_assignor=None, connectors_and_tasks=cat,
                            client_assignors=[req.Assignor(name="incremental-cooperative", minimum_version=0,
                                                           maximum_version=2, reason=0, metadata_version=2,
                                                           metadata=b"http://w1:8083")]),
                P.ConnectGroupHeartbeatResponse)


def prepare(broker, member_id, epoch, group="cc"):
    return call(broker, P.ConnectGroupPrepareAssignmentRequest(version=0, group_id=group, member_id=member_id,
                                                               member_epoch=epoch),
                P.ConnectGroupPrepareAssignmentResponse)


def install_request(member_id, epoch, group_epoch, assignment: dict, group="cc"):
    """``assignment``: {member: (connectors, [(connector, task), ...])}."""
    install = P.ConnectGroupInstallAssignmentRequest
    member = install.Member
    task = member.ConnectorsAndTasks.ConnectorTaskId
    return install(version=0, group_id=group, member_id=member_id, member_epoch=epoch, group_epoch=group_epoch,
                   error=0, members=[member(member_id=m, metadata_version=2, metadata=b"",
                                            connectors_and_tasks=member.ConnectorsAndTasks(
                                                connectors=list(c), tasks=[task(connector=n, task=t) for n, t in ts]))
                                     for m, (c, ts) in assignment.items()])


def install(broker, member_id, epoch, group_epoch, assignment: dict, group="cc"):
    return call(broker, install_request(member_id, epoch, group_epoch, assignment, group),
                P.ConnectGroupInstallAssignmentResponse)


def settle_one_worker(broker, group="cc", connectors=(("A", 1),)):
    """The connector set is given, W1 joins, computes, installs A and A-1 for itself and runs them
    at the group epoch, which it returns."""
    assert set_connectors(broker, connectors, group).error_code == 0
    assert heartbeat(broker, "W1", 0, group=group).error_code != 0          # COMPUTE_ASSIGNMENT
    group_epoch = prepare(broker, "W1", 0, group).group_epoch
    assert install(broker, "W1", 0, group_epoch, {"W1": (["A"], [("A", 1)])}, group).error_code == 0
    beat = heartbeat(broker, "W1", 0, group=group)
    assert (beat.error_code, beat.member_epoch) == (0, group_epoch)
    assert heartbeat(broker, "W1", group_epoch, (["A"], [("A", 1)]), group).error_code == 0
    return group_epoch


def worker_group_log(logs, commits: dict | None = None):
    """A serve log dir (``logs``) holding a Connect worker group "cc" (connectors A:1 and B:2 set, W1
    runs A and A-1) and, per ``commits`` ({group: {(topic, partition): offset}}), classic groups'
    committed offsets of topic "t"."""
    import asyncio
    from types import SimpleNamespace

    from helpers.offsets import commit_request

    from kgroup.server.harness import ThreadedBroker

    broker = ThreadedBroker(logs, topics=[("t", 1)])
    try:
        settle_one_worker(broker, connectors={"A": 1, "B": 2})
        ctx = SimpleNamespace(client_id="c", client_host="/127.0.0.1")
        for group, offsets in (commits or {}).items():
            async def commit(group=group, offsets=offsets):
                answer = broker.broker.groups.handle(commit_request(group, offsets), ctx)
                return await answer if isinstance(answer, asyncio.Future) else answer
            broker.call(commit())
    finally:
        broker.stop()
    return logs
