"""`kgroup describe` of a Connect worker group on kgroup serve, through kgroup's experimental
ConnectGroupDescribe (API key 1004): epochs, connectors, who runs what, the worker computing; a group
of another type or an unknown id is left to DescribeGroups, as before."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from helpers.connect_wire import heartbeat, settle_one_worker

from kgroup.commands.cli import cli
from kgroup.coordinator import GroupCoordinator
from kgroup.coordinator.connect.protocol import (GROUP_ID_NOT_FOUND, NONE, ConnectGroupDescribeRequest,
                                        ConnectGroupSetConnectors)
from kgroup.server.harness import ThreadedBroker


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = ThreadedBroker(tmp_path_factory.mktemp("live") / "logs")
    settle_one_worker(b, connectors={"A": 1, "B": 2})
    assert heartbeat(b, "W2", 0).error_code == 0         # joins; the next target is not computed yet
    yield b
    b.stop()


def describe(broker, *args):
    result = CliRunner().invoke(cli, ["describe", *args, "--bootstrap-server", "%s:%s" % broker.address])
    return result


def test_coordinator_describes_worker_groups_only():
    coord = GroupCoordinator()
    coord.handle(ConnectGroupSetConnectors("cc", {"A": 1}))
    answer = coord.handle(ConnectGroupDescribeRequest(("cc", "nope"))).response
    assert [(g.group_id, g.error_code) for g in answer.groups] == [("cc", NONE), ("nope", GROUP_ID_NOT_FOUND)]
    assert answer.groups[0].snapshot == coord.connect_group("cc")


def test_describe_json(broker):
    result = describe(broker, "cc", "-o", "json")
    assert result.exit_code == 0, result.output
    [view] = json.loads(result.stdout)
    assert {k: view[k] for k in ("state", "type", "group_epoch", "assignment_epoch", "assigner", "connectors")} == {
        "state": "Assigning", "type": "connect", "group_epoch": 2, "assignment_epoch": 1, "assigner": "W1",
        "connectors": {"A": 1, "B": 2}}
    assert view["coordinator"]["port"] == broker.address[1]
    assert [(m["member_id"], m["member_epoch"], m["assignment"]["tasks"]) for m in view["members"]] == [
        ("W1", 1, ["A-1"]), ("W2", 1, [])]
    assert view["unassigned"] == {"connectors": ["B"], "tasks": ["B-1", "B-2"]}


def test_describe_table_and_an_unknown_group(broker):
    result = describe(broker, "cc", "nope", "-o", "table")
    assert result.exit_code == 3
    lines = result.stdout.splitlines()
    assert lines[1].split()[4:11] == ["Assigning", "connect", "2", "1", "incremental-cooperative", "W1", "2"]
    assert lines[-1] == "all 2 worker(s) caught up at assignment epoch 1"
    assert result.stderr.strip().startswith("kgroup describe: group 'nope' does not exist")


def test_describe_csv(broker):
    import csv
    import io
    result = describe(broker, "cc", "-o", "csv")
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [(r["group"], r["state"], r["protocol_type"], r["member_id"], r["assignment"]) for r in rows] == [
        ("cc", "Assigning", "connect", "W1", "A,A-1"), ("cc", "Assigning", "connect", "W2", "-")]


def test_member_and_offset_verbs_refuse_a_worker_group_and_wait_reads_it(broker):
    """remove-members (a dry run too), reset-offsets and delete-offsets used to end in an
    AttributeError traceback or a wrong 'does not exist'; wait crashed printing the counts."""
    def run(*args):
        return CliRunner().invoke(cli, [*args, "--bootstrap-server", "%s:%s" % broker.address])

    leave = "LeaveGroup does not remove its workers; a worker leaves with its own heartbeat"
    offsets = "it commits no offsets here (the coordinator refuses OffsetCommit and OffsetDelete for it)"
    for args, why in ((["remove-members", "cc", "--member-id", "W1", "--dry-run"], leave),
                      (["remove-members", "cc", "--member-id", "W1"], leave),
                      (["remove-members", "cc", "--all"], leave),
                      (["reset-offsets", "cc", "--all-topics", "--to-earliest", "--execute"], offsets),
                      (["delete-offsets", "cc", "--topic", "__consumer_offsets:0"], offsets)):
        result = run(*args)
        assert (result.exit_code, result.stderr) == (
            1, f"kgroup {args[0]}: group 'cc' is a Connect worker group (type connect): {why}\n"), args
    result = run("wait", "cc", "--state", "Assigning", "--timeout", "5", "-o", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"group": "cc", "state": "Assigning", "members": 2, "static": 0,
                                         "dynamic": 2}
    result = run("wait", "cc", "--caught-up", "--timeout", "0.5")
    assert result.exit_code == 1 and result.stderr.startswith("kgroup wait: group 'cc': timed out after 0.5s"), \
        result.output
