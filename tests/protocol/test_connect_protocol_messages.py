"""kgroup.protocol's Connect messages (experimental API keys 1000-1004) round-trip through kafka-python."""

import pytest

import kgroup.protocol as P


def _round_trip(cls, **fields):
    message = cls(version=0, **fields)
    assert cls.decode(message.encode(), version=0) == message
    return message


def test_heartbeat_request_and_response_round_trip():
    req = P.ConnectGroupHeartbeatRequest
    cat = req.ConnectorsAndTasks(connectors=["A"], tasks=[req.ConnectorsAndTasks.ConnectorTaskId(connector="A", task=1)])
    _round_trip(req, group_id="cc", member_id="W1", member_epoch=0, instance_id=None, rebalance_timeout_ms=60000,
                server_assignor=None, connectors_and_tasks=cat,
                client_assignors=[req.Assignor(name="incremental-cooperative", minimum_version=0, maximum_version=2,
                                               reason=1, metadata_version=2, metadata=b"url")])
    resp = P.ConnectGroupHeartbeatResponse
    assignment = resp.Assignment(error=0, connectors_and_tasks=resp.Assignment.ConnectorsAndTasks(
        connectors=["A"], tasks=[]), metadata_version=2, metadata=b"")
    _round_trip(resp, throttle_time_ms=0, error_code=1000, error_message=None, member_epoch=3,
                heartbeat_interval_ms=3000, assignment=assignment)


@pytest.mark.parametrize("cls, key", [
    (P.ConnectGroupHeartbeatRequest, 1000), (P.ConnectGroupPrepareAssignmentRequest, 1001),
    (P.ConnectGroupInstallAssignmentRequest, 1002), (P.ConnectGroupInstallAssignmentResponse, 1002),
    (P.ConnectGroupSetConnectorsRequest, 1003), (P.ConnectGroupSetConnectorsResponse, 1003),
    (P.ConnectGroupDescribeRequest, 1004), (P.ConnectGroupDescribeResponse, 1004)])
def test_api_keys_are_kgroups_own(cls, key):
    assert cls.API_KEY == key


def test_prepare_response_carries_the_connector_set():
    resp = P.ConnectGroupPrepareAssignmentResponse
    _round_trip(resp, throttle_time_ms=0, error_code=0, error_message=None, group_epoch=2,
                assignor_name="incremental-cooperative", members=[],
                connectors=[resp.Connector(name="A", tasks=2)])


def test_set_connectors_request_and_response_round_trip():
    req = P.ConnectGroupSetConnectorsRequest
    _round_trip(req, group_id="cc", connectors=[req.Connector(name="A", tasks=2), req.Connector(name="B", tasks=1)])
    _round_trip(P.ConnectGroupSetConnectorsResponse, throttle_time_ms=0, error_code=0, error_message=None,
                group_epoch=4)


def test_describe_request_and_response_round_trip():
    _round_trip(P.ConnectGroupDescribeRequest, group_ids=["cc", "other"])
    G = P.ConnectGroupDescribeResponse.DescribedGroup
    items = G.ConnectorsAndTasks(connectors=["A"], tasks=[G.ConnectorsAndTasks.ConnectorTaskId(connector="A", task=1)])
    member_items = G.Member.ConnectorsAndTasks(connectors=["A"], tasks=[])
    member = G.Member(member_id="W1", instance_id=None, client_id="c", client_host="/h", member_epoch=3,
                      assignment=member_items, target_assignment=member_items)
    message = P.ConnectGroupDescribeResponse(version=0, throttle_time_ms=0, groups=[G(
        error_code=0, error_message=None, group_id="cc", group_state="Stable", group_epoch=3, assignment_epoch=3,
        assignor_name="incremental-cooperative", assigner="W1", assignment_error=None,
        connectors=[G.Connector(name="A", tasks=1)], unassigned=items, members=[member])])
    decoded = P.ConnectGroupDescribeResponse.decode(message.encode(), version=0)
    assert decoded.encode() == message.encode()
    [group] = decoded.groups
    assert (group.assigner, group.unassigned.tasks[0].task, group.members[0].assignment.connectors) == ("W1", 1, ["A"])
