"""The connect group type's requests: checks, selection, validation, timeouts and replay."""

import pytest

from kgroup.coordinator import GroupCoordinator
from kgroup.coordinator.connect.protocol import (
    COMPUTE_ASSIGNMENT, FENCED_MEMBER_EPOCH, GROUP_ID_NOT_FOUND, INVALID_ASSIGNMENT, INVALID_REQUEST, NONE,
    UNKNOWN_MEMBER_ID, UNSUPPORTED_ASSIGNOR, Assignor, ConnectGroupHeartbeatRequest,
    ConnectGroupInstallAssignmentRequest, ConnectGroupPrepareAssignmentRequest, ConnectGroupSetConnectors,
    ConnectorsAndTasks, InstallMember, TaskId)
from kgroup.records import decode_key

ICA = "incremental-cooperative"
A1, A2, B1 = TaskId("A", 1), TaskId("A", 2), TaskId("B", 1)


def assignor(low=0, high=2, reason=0, name=ICA):
    return Assignor(name=name, minimum_version=low, maximum_version=high, reason=reason, version=high)


def coordinator():
    coord = GroupCoordinator(config={"group.connect.session.timeout.ms": 10000,
                                     "group.connect.heartbeat.interval.ms": 3000}, now_ms=0)
    coord.handle(ConnectGroupSetConnectors(group_id="cc", connectors={"A": 2, "B": 1}))
    return coord


def join(coord, member, low=0, high=2, epoch=0, **fields):
    return coord.handle(ConnectGroupHeartbeatRequest(
        group_id="cc", member_id=member, member_epoch=epoch, rebalance_timeout_ms=60000,
        client_assignors=[assignor(low, high)], connectors_and_tasks=ConnectorsAndTasks(), **fields)).response


def heartbeat(coord, member, epoch, owned=None):
    return coord.handle(ConnectGroupHeartbeatRequest("cc", member, epoch, connectors_and_tasks=owned)).response


def install(coord, member, entries, epoch=0, group_epoch=None, error=0):
    if group_epoch is None:
        group_epoch = coord.handle(ConnectGroupPrepareAssignmentRequest("cc", member, epoch)).response.group_epoch
    return coord.handle(ConnectGroupInstallAssignmentRequest(
        "cc", member, epoch, group_epoch, error,
        [InstallMember(m, ConnectorsAndTasks(tuple(c), tuple(t))) for m, (c, t) in entries.items()])
    ).response.error_code


def test_the_readme_walkthrough_installs_a_hand_computed_assignment():
    coord = coordinator()
    r = coord.handle(ConnectGroupHeartbeatRequest(
        group_id="cc", member_id="W1", member_epoch=0, instance_id=None, rebalance_timeout_ms=60000,
        server_assignor=None, client_assignors=[assignor()], connectors_and_tasks=ConnectorsAndTasks()))
    assert r.done and r.response.error_code == COMPUTE_ASSIGNMENT and r.response.member_epoch == 0
    p = coord.handle(ConnectGroupPrepareAssignmentRequest(group_id="cc", member_id="W1", member_epoch=0)).response
    assert (p.error_code, p.group_epoch, p.assignor_name, p.connectors) == (NONE, 1, ICA, {"A": 2, "B": 1})
    assert [m.member_id for m in p.members] == ["W1"]
    assert install(coord, "W1", {"W1": (("A", "B"), (A1, A2, B1))}, group_epoch=1) == NONE
    r = join(coord, "W1")          # epoch 0 again: an ordinary heartbeat of a member still at epoch 0
    assert r.error_code == NONE and r.member_epoch == 1
    assert r.assignment.connectors_and_tasks == ConnectorsAndTasks(("A", "B"), (A1, A2, B1))
    g = coord.connect_group("cc")
    assert (g.group_epoch, g.assignment_epoch, g.state, g.assigner) == (1, 1, "Stable", "W1")


@pytest.mark.parametrize("fields, message", [
    ({"group_id": ""}, "GroupId"), ({"member_id": ""}, "MemberId"), ({"member_epoch": -2}, "MemberEpoch"),
    ({"instance_id": ""}, "InstanceId"), ({"rebalance_timeout_ms": 0}, "RebalanceTimeoutMs"),
    ({"server_assignor": "x"}, "both"), ({"client_assignors": []}, "ClientAssignors"),
    ({"client_assignors": [assignor(3, 2)]}, "version"),
    ({"client_assignors": [Assignor(ICA, 0, 2, 0, 3)]}, "version")])
def test_malformed_heartbeats_are_invalid_requests(fields, message):
    base = dict(group_id="cc", member_id="W1", member_epoch=0, rebalance_timeout_ms=60000,
                client_assignors=[assignor()])
    response = coordinator().handle(ConnectGroupHeartbeatRequest(**{**base, **fields})).response
    assert response.error_code == INVALID_REQUEST and message in response.error_message
    assert response.member_epoch == -1 and response.assignment is None


def test_worker_selection_takes_the_worker_whose_range_covers_every_other():
    from kgroup.coordinator.connect.selection import choose_assigner
    coord = coordinator()
    assert join(coord, "B", 3, 4).error_code == COMPUTE_ASSIGNMENT
    install(coord, "B", {"B": ((), ())})
    assert join(coord, "C", 2, 4).error_code == COMPUTE_ASSIGNMENT      # C covers B
    install(coord, "C", {"B": ((), ()), "C": ((), ())}, epoch=1)
    assert join(coord, "B", 3, 4).error_code == NONE
    assert join(coord, "A", 1, 5).error_code == COMPUTE_ASSIGNMENT      # only A covers all three
    group = coord.get_group("cc")
    assert choose_assigner(group) == "A" and group.assigner == "A"


def test_a_join_that_overlaps_nobody_or_leaves_no_covering_worker_is_refused():
    coord = coordinator()
    join(coord, "W1", 1, 5)
    assert join(coord, "W2", 6, 7).error_code == UNSUPPORTED_ASSIGNOR
    join(coord, "W3", 3, 6)      # overlaps W1, but then nobody covers both [1,5] and [3,6]
    group = coord.connect_group("cc")
    assert [m.member_id for m in group.members] == ["W1"] and group.group_epoch == 1
    assert join(coord, "W4", 2, 3).error_code == NONE
    other = coord.handle(ConnectGroupHeartbeatRequest(
        "cc", "W5", 0, None, 60000, None, [assignor(name="eager")])).response
    assert other.error_code == UNSUPPORTED_ASSIGNOR


def test_a_departure_that_leaves_no_covering_worker_is_reported():
    coord = coordinator()
    join(coord, "W1", 1, 5)
    join(coord, "W2", 3, 4)
    join(coord, "W3", 2, 3)     # covered only by W1
    assert heartbeat(coord, "W1", -1).member_epoch == -1
    assert join(coord, "W2", 3, 4).error_code == NONE
    group = coord.connect_group("cc")
    assert group.assignment_error == "NO_COVERING_WORKER" and group.state == "Assigning"


def test_a_server_assignor_is_unsupported_and_another_group_type_is_not_found():
    coord = coordinator()
    response = coord.handle(ConnectGroupHeartbeatRequest("cc", "W1", 0, None, 60000, "uniform", None)).response
    assert response.error_code == UNSUPPORTED_ASSIGNOR
    coord.get_or_create_classic_group("classic")
    response = coord.handle(ConnectGroupHeartbeatRequest("classic", "W1", 0, None, 60000, None,
                                                         [assignor()])).response
    assert response.error_code == GROUP_ID_NOT_FOUND


def _settled_pair():
    coord = coordinator()
    join(coord, "W1")
    install(coord, "W1", {"W1": (("A", "B"), (A1, A2, B1))})
    join(coord, "W1")
    join(coord, "W2")
    return coord


@pytest.mark.parametrize("entries, group_epoch", [
    ({"W1": (("A",), (A1, A2)), "W2": (("B", "A"), (B1,))}, None),           # A twice
    ({"W1": (("A", "A"), (A1, A2)), "W2": (("B",), (B1,))}, None),           # twice in one member
    ({"W1": (("A",), (A1, A2)), "W9": (("B",), (B1,))}, None),               # unknown worker
    ({"W1": (("A", "C"), (A1, A2)), "W2": (("B",), (B1,))}, None),           # not a connector
    ({"W1": (("A",), (A1, A2, TaskId("A", 3))), "W2": (("B",), (B1,))}, None),   # not a task
    ({"W1": (("A", "B"), (A1, A2, B1))}, None),                              # W2 has no entry
    ({"W1": (("A",), (A1, A2)), "W2": (("B",), (B1,))}, 1),                  # stale group epoch
])
def test_invalid_assignments_are_refused_against_the_snapshot(entries, group_epoch):
    coord = _settled_pair()
    assert heartbeat(coord, "W1", 1).error_code == COMPUTE_ASSIGNMENT
    assert install(coord, "W1", entries, epoch=1, group_epoch=group_epoch) == INVALID_ASSIGNMENT
    assert coord.connect_group("cc").assignment_epoch == 1
    assert install(coord, "W1", {"W1": (("A",), (A1, A2)), "W2": (("B",), (B1,))}, epoch=1) == NONE


def test_install_without_prepare_and_from_a_non_assigner_is_refused():
    coord = _settled_pair()
    heartbeat(coord, "W1", 1)
    assert install(coord, "W1", {"W1": ((), ()), "W2": ((), ())}, epoch=1, group_epoch=2) == INVALID_ASSIGNMENT
    assert install(coord, "W2", {"W1": ((), ()), "W2": ((), ())}, epoch=1, group_epoch=2) == UNKNOWN_MEMBER_ID
    prepare = coord.handle(ConnectGroupPrepareAssignmentRequest("cc", "W1", 7)).response
    assert prepare.error_code == FENCED_MEMBER_EPOCH
    assert coord.handle(ConnectGroupPrepareAssignmentRequest("nope", "W1", 1)).response.error_code == \
        GROUP_ID_NOT_FOUND


def test_an_assignor_error_keeps_the_current_target():
    coord = _settled_pair()
    heartbeat(coord, "W1", 1)
    assert install(coord, "W1", {"W1": ((), ()), "W2": ((), ())}, epoch=1, error=3) == NONE
    group = coord.connect_group("cc")
    assert group.assignment_epoch == 2 and group.target["W1"].connectors == ("A", "B")
    assert group.assignment_error == "UNKNOWN_ERROR_CODE_3" or group.assignment_error
    response = heartbeat(coord, "W1", 1)
    assert response.member_epoch == 2 and response.assignment.error == 3


def test_revoke_then_assign_and_the_lost_response():
    coord = _settled_pair()
    heartbeat(coord, "W1", 1)
    install(coord, "W1", {"W1": (("A",), (A1, A2)), "W2": (("B",), (B1,))}, epoch=1)
    revoke = heartbeat(coord, "W1", 1)
    assert revoke.member_epoch == 1 and revoke.assignment.connectors_and_tasks == ConnectorsAndTasks(("A",), (A1, A2))
    early = heartbeat(coord, "W2", 1)             # B still runs on W1: pending
    assert early.member_epoch == 2 and early.assignment.connectors_and_tasks == ConnectorsAndTasks()
    done = heartbeat(coord, "W1", 1, ConnectorsAndTasks(("A",), (A1, A2)))
    assert done.member_epoch == 2
    # the response moving W1 to 2 is lost: W1 retries with epoch 1 and what it runs
    retry = heartbeat(coord, "W1", 1, ConnectorsAndTasks(("A",), (A1, A2)))
    assert retry.error_code == NONE and retry.member_epoch == 2
    granted = heartbeat(coord, "W2", 2)
    assert granted.assignment.connectors_and_tasks == ConnectorsAndTasks(("B",), (B1,))
    assert heartbeat(coord, "W2", 5).error_code == FENCED_MEMBER_EPOCH
    assert [m.member_id for m in coord.connect_group("cc").members] == ["W1"]
    assert heartbeat(coord, "W2", 2).error_code == UNKNOWN_MEMBER_ID


def test_a_revocation_not_acknowledged_in_time_fences_the_worker():
    coord = _settled_pair()
    heartbeat(coord, "W1", 1)
    install(coord, "W1", {"W1": (("A",), (A1, A2)), "W2": (("B",), (B1,))}, epoch=1)
    heartbeat(coord, "W1", 1)                 # told to revoke B, B-1: never acknowledges
    assert heartbeat(coord, "W2", 1).member_epoch == 2
    for _ in range(24):                       # both keep their sessions
        coord.advance(2500)
        heartbeat(coord, "W1", 1)
        heartbeat(coord, "W2", 2)
    coord.advance(0)
    group = coord.connect_group("cc")
    assert [m.member_id for m in group.members] == ["W2"] and group.group_epoch == 3
    assert heartbeat(coord, "W1", 1).error_code == UNKNOWN_MEMBER_ID


def test_an_assigner_that_does_not_install_in_time_is_replaced():
    coord = coordinator()
    assert join(coord, "W1").error_code == COMPUTE_ASSIGNMENT
    assert join(coord, "W2").error_code == NONE
    for _ in range(20):
        coord.advance(3000)
        join(coord, "W1")
        response = join(coord, "W2")
    assert coord.now_ms == 60000 and response.error_code == COMPUTE_ASSIGNMENT
    assert coord.connect_group("cc").assigner == "W2"
    assert install(coord, "W1", {"W1": ((), ()), "W2": ((), ())}, group_epoch=2) == UNKNOWN_MEMBER_ID


def test_session_expiry_removes_the_worker():
    coord = _settled_pair()
    coord.advance(9999)
    heartbeat(coord, "W2", 1)
    coord.advance(1)
    group = coord.connect_group("cc")
    assert [m.member_id for m in group.members] == ["W2"] and group.group_epoch == 3


def test_records_replay_to_the_same_group_with_tombstones():
    coord = _settled_pair()
    heartbeat(coord, "W1", 1)
    install(coord, "W1", {"W1": (("A",), (A1, A2)), "W2": (("B",), (B1,))}, epoch=1)
    heartbeat(coord, "W1", 1, ConnectorsAndTasks(("A",), (A1, A2)))
    heartbeat(coord, "W2", 2)
    join(coord, "W3")
    heartbeat(coord, "W3", -1)
    records = coord.worker_records
    assert [decode_key(k, "connect").record_type for k, _ in records][:2] == [4, 3]
    assert any(v is None for _, v in records)
    rebuilt = GroupCoordinator.from_records([], worker_records=records)
    before, after = coord.connect_group("cc"), rebuilt.connect_group("cc")
    assert after.members == before.members and after.target == before.target
    assert (after.group_epoch, after.assignment_epoch, after.connectors) == \
        (before.group_epoch, before.assignment_epoch, before.connectors)
    assert rebuilt.timer_deadline(("connect-session", "cc", "W1")) == 10000


def test_connector_changes_bump_the_group_epoch_once_and_only_when_different():
    coord = _settled_pair()
    assert coord.connect_group("cc").group_epoch == 2
    coord.handle(ConnectGroupSetConnectors("cc", {"A": 2, "B": 1}))
    assert coord.connect_group("cc").group_epoch == 2
    coord.handle(ConnectGroupSetConnectors("cc", {"A": 3, "B": 1}))
    assert coord.connect_group("cc").group_epoch == 3
    assert ("cc", "connect", "Assigning", "connect") in [g.listed() for g in coord.all_groups()]


def test_a_worker_group_takes_no_offset_commits_and_outlives_offsets_expiry():
    from helpers.offsets import commit_request, delete_request
    coord = coordinator()
    join(coord, "W1")
    committed = coord.handle(commit_request("cc", {("t", 0): 5})).response
    assert committed.topics[0].partitions[0].error_code == GROUP_ID_NOT_FOUND
    assert coord.handle(delete_request("cc", {"t": [0]})).response.error_code == GROUP_ID_NOT_FOUND
    coord.advance(10 ** 9)                         # sessions and the retention check run
    group = coord.connect_group("cc")
    assert group.state == "Empty" and group.group_epoch == 2 and coord.records == []


def test_a_static_worker_restarting_under_a_new_member_id_replaces_its_predecessor():
    coord = _settled_pair()
    join(coord, "W3", instance_id="worker-3")
    before = coord.connect_group("cc").group_epoch
    assert join(coord, "W3b", instance_id="worker-3").error_code == NONE
    group = coord.connect_group("cc")
    assert [m.member_id for m in group.members] == ["W1", "W2", "W3b"] and group.group_epoch == before + 1
    assert join(coord, "W4", instance_id="").error_code == INVALID_REQUEST


def test_a_host_can_move_a_workers_session_deadline():
    coord = _settled_pair()
    assert coord.set_session_deadline("cc", "W2", 50_000)
    assert coord.timer_deadline(("connect-session", "cc", "W2")) == 50_000


def test_decode_offsets_reads_the_worker_records_the_coordinator_writes(tmp_path):
    import json

    from click.testing import CliRunner

    from kgroup.commands.cli import cli
    from kgroup.records.writer import encode_batch
    coord = _settled_pair()
    heartbeat(coord, "W2", -1)
    partition = tmp_path / "__worker_offsets-0"
    partition.mkdir()
    (partition / "00000000000000000000.log").write_bytes(encode_batch(coord.worker_records))
    result = CliRunner().invoke(cli, ["decode-offsets", str(partition / "00000000000000000000.log")],
                                catch_exceptions=False)
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert len(rows) == len(coord.worker_records)
    assert rows[-1]["type"] == "connect_worker_group_metadata" and rows[-1]["value"] == {"epoch": 3}
    assert [r["key"].get("memberId") for r in rows if r["value"] is None] == ["W2", "W2"]


def test_a_worker_restarting_with_epoch_zero_runs_nothing_and_gets_its_target_back_without_a_bump():
    coord = _settled_pair()
    heartbeat(coord, "W1", 1)
    install(coord, "W1", {"W1": (("A", "B"), (A1, A2, B1)), "W2": ((), ())}, epoch=1)
    assert heartbeat(coord, "W1", 1).member_epoch == 2
    restarted = join(coord, "W1")
    group = coord.connect_group("cc")
    assert group.group_epoch == 2 and restarted.member_epoch == 2
    assert restarted.assignment.connectors_and_tasks == ConnectorsAndTasks(("A", "B"), (A1, A2, B1))
    # items the worker reports but was never given are ignored
    odd = heartbeat(coord, "W2", 1, ConnectorsAndTasks(("A",), ()))
    assert odd.error_code == NONE and coord.connect_group("cc").members[1].owned == ConnectorsAndTasks()


@pytest.mark.parametrize("connectors, problem", [
    ({"A": -1}, "a task count is negative"),
    ({"A": 2_147_483_647}, "more than 100000 tasks"),          # found by serve's frame fuzzing: it built them all
    ({"A": 60_000, "B": 40_001}, "more than 100000 tasks")])
def test_a_connector_set_too_large_or_negative_is_refused_before_anything_is_built(connectors, problem):
    coord = coordinator()
    response = coord.handle(ConnectGroupSetConnectors("cc", connectors)).response
    assert response.error_code == INVALID_REQUEST and problem in response.error_message
    assert coord.connect_group("cc").connectors == {"A": 2, "B": 1}
