"""kgroup serve answers the Connect draft's three APIs (experimental keys 1000-1002): a worker joins,
is told to compute, prepares, installs an assignment computed by hand, and gets it in its next
heartbeat, all over the wire with the request classes ``kgroup.protocol`` declares."""

from __future__ import annotations

import pytest

import kgroup.protocol as P
from kgroup.coordinator.connect.protocol import COMPUTE_ASSIGNMENT, UNKNOWN_MEMBER_ID, ConnectGroupSetConnectors
from kgroup.server.harness import ThreadedBroker, raw_request


@pytest.fixture
def broker(tmp_path):
    b = ThreadedBroker(tmp_path / "logs")
    yield b
    b.stop()


def call(broker, request, response_class):
    return response_class.decode(raw_request(broker.address, request), version=0, header=True)


def heartbeat(broker, member_id, epoch, owned=None):
    req = P.ConnectGroupHeartbeatRequest
    cat = owned and req.ConnectorsAndTasks(connectors=owned[0], tasks=[
        req.ConnectorsAndTasks.ConnectorTaskId(connector=c, task=t) for c, t in owned[1]])
    return call(broker, req(version=0, group_id="cc", member_id=member_id, member_epoch=epoch, instance_id=None,
                            rebalance_timeout_ms=60000, server_assignor=None, connectors_and_tasks=cat,
                            client_assignors=[req.Assignor(name="incremental-cooperative", minimum_version=0,
                                                           maximum_version=2, reason=0, metadata_version=2,
                                                           metadata=b"http://w1:8083")]),
                P.ConnectGroupHeartbeatResponse)


def test_api_versions_lists_the_connect_apis(broker):  # and kgroup's SetConnectors and Describe
    from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse
    raw = raw_request(broker.address, ApiVersionsRequest(version=0))
    keys = {k[0]: tuple(k[1:]) for k in ApiVersionsResponse.decode(raw, version=0, header=True).api_keys}
    assert [keys.get(k) for k in (1000, 1001, 1002, 1003, 1004)] == [(0, 0)] * 5


def test_a_worker_joins_computes_installs_and_runs_its_assignment(broker):
    broker.run(lambda: broker.broker.groups.coord.handle(ConnectGroupSetConnectors("cc", {"A": 1})))
    joined = heartbeat(broker, "W1", 0)
    assert (joined.error_code, joined.member_epoch) == (COMPUTE_ASSIGNMENT, 0)
    prepared = call(broker, P.ConnectGroupPrepareAssignmentRequest(version=0, group_id="cc", member_id="W1",
                                                                   member_epoch=0),
                    P.ConnectGroupPrepareAssignmentResponse)
    assert (prepared.error_code, prepared.group_epoch, prepared.assignor_name) == (0, 1, "incremental-cooperative")
    assert [(m.member_id, m.assignor.metadata) for m in prepared.members] == [("W1", b"http://w1:8083")]
    assert [(c.name, c.tasks) for c in prepared.connectors] == [("A", 1)]
    install = P.ConnectGroupInstallAssignmentRequest
    member = install.Member
    cat = member.ConnectorsAndTasks(connectors=["A"], tasks=[
        member.ConnectorsAndTasks.ConnectorTaskId(connector="A", task=1)])
    request = install(version=0, group_id="cc", member_id="W1", member_epoch=0, group_epoch=1, error=0,
                      members=[member(member_id="W1", connectors_and_tasks=cat, metadata_version=2, metadata=b"")])
    assert call(broker, request, P.ConnectGroupInstallAssignmentResponse).error_code == 0
    request.member_id = "W9"
    assert call(broker, request, P.ConnectGroupInstallAssignmentResponse).error_code == UNKNOWN_MEMBER_ID
    beat = heartbeat(broker, "W1", 0)
    assert (beat.error_code, beat.member_epoch) == (0, 1)
    given = beat.assignment.connectors_and_tasks
    assert (given.connectors, [(t.connector, t.task) for t in given.tasks]) == (["A"], [("A", 1)])
    assert heartbeat(broker, "W1", 1, (["A"], [("A", 1)])).error_code == 0


def test_the_connector_set_over_the_wire(broker):
    """ConnectGroupSetConnectors (1003): a new group at epoch 0, the same set changes nothing, a new
    set bumps the group epoch and the joined worker is told to compute; a name twice is refused."""
    from helpers.connect_wire import prepare, set_connectors
    from kgroup.coordinator.connect.protocol import INVALID_REQUEST
    assert (set_connectors(broker, {"A": 1}).error_code, set_connectors(broker, {"A": 1}).group_epoch) == (0, 0)
    assert set_connectors(broker, {"A": 1}).group_epoch == 0
    assert heartbeat(broker, "W1", 0).error_code == COMPUTE_ASSIGNMENT
    changed = set_connectors(broker, {"A": 2, "B": 1})
    assert (changed.error_code, changed.group_epoch) == (0, 2)
    assert heartbeat(broker, "W1", 0).error_code == COMPUTE_ASSIGNMENT
    prepared = prepare(broker, "W1", 0)
    assert (prepared.group_epoch, [(c.name, c.tasks) for c in prepared.connectors]) == (2, [("A", 2), ("B", 1)])
    twice = set_connectors(broker, [("A", 1), ("A", 2)])
    assert (twice.error_code, twice.error_message, twice.group_epoch) == (
        INVALID_REQUEST, "a connector is named more than once", -1)
    assert broker.run(lambda: broker.broker.groups.coord.connect_group("cc").connectors) == {"A": 2, "B": 1}
