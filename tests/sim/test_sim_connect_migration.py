"""`kgroup simulate connect migration`: three classic Connect workers rolled to the draft's protocol one by
one and back. The group converts only once it is empty (kgroup's reading of the draft's migration), at the
classic generation and back at the group epoch; the workers on the other protocol wait meanwhile."""

import functools
import json

from click.testing import CliRunner

from kgroup.commands.cli import cli
from kgroup.sim.connect.simulation import run
from kgroup.sim.connect.params import resolve

# (at_ms, event, worker, group type, group epoch or generation), the retried GROUP_ID_NOT_FOUND left out
STEPS = [
    (0, 'join', 'W1', None, None),
    (0, 'join', 'W2', 'classic', 0),
    (0, 'join', 'W3', 'classic', 0),
    (6000, 'compute-assignment', 'W1', 'classic', 1),
    (6000, 'assign', 'W1', 'classic', 1),
    (6000, 'assign', 'W2', 'classic', 1),
    (6000, 'assign', 'W3', 'classic', 1),
    (30000, 'revoke', 'W1', 'classic', 1),
    (30000, 'leave', 'W1', 'classic', 1),
    (30000, 'join', 'W1', 'classic', 1),
    # the leader W1 left: Kafka's members HashMap puts W3-00000002 (bucket 11) before W2-00000001 (12)
    (30000, 'compute-assignment', 'W3', 'classic', 2),
    (30000, 'assign', 'W2', 'classic', 2),
    (30000, 'assign', 'W3', 'classic', 2),
    (60000, 'revoke', 'W2', 'classic', 2),
    (60000, 'leave', 'W2', 'classic', 2),
    (60000, 'join', 'W2', 'classic', 2),
    (60000, 'compute-assignment', 'W3', 'classic', 3),
    (60000, 'assign', 'W3', 'classic', 3),
    (90000, 'revoke', 'W3', 'classic', 3),
    (90000, 'leave', 'W3', 'classic', 4),
    (90000, 'converted', 'W3', 'connect', 4),   # its first heartbeat's SetConnectors converts the group
    (90000, 'join', 'W3', 'connect', 5),        # recorded once the coordinator handled the heartbeat
    (90000, 'epoch', 'W3', 'connect', 5),
    (90000, 'compute-assignment', 'W3', 'connect', 5),
    (90000, 'install', 'W3', 'connect', 5),
    (90000, 'epoch', 'W1', 'connect', 6),
    (90000, 'epoch', 'W2', 'connect', 7),
    (93000, 'assign', 'W3', 'connect', 7),
    (93000, 'compute-assignment', 'W3', 'connect', 7),
    (93000, 'install', 'W3', 'connect', 7),
    (96000, 'revoke', 'W3', 'connect', 7),
    (99000, 'assign', 'W1', 'connect', 7),
    (99000, 'assign', 'W2', 'connect', 7),
    (150000, 'revoke', 'W1', 'connect', 7),
    (150000, 'leave', 'W1', 'connect', 8),
    (150000, 'join', 'W1', 'connect', 8),
    (150000, 'compute-assignment', 'W3', 'connect', 8),
    (150000, 'install', 'W3', 'connect', 8),
    (153000, 'assign', 'W2', 'connect', 8),
    (180000, 'revoke', 'W2', 'connect', 8),
    (180000, 'leave', 'W2', 'connect', 9),
    (180000, 'join', 'W2', 'connect', 9),
    (180000, 'compute-assignment', 'W3', 'connect', 9),
    (180000, 'install', 'W3', 'connect', 9),
    (183000, 'assign', 'W3', 'connect', 9),
    (210000, 'revoke', 'W3', 'connect', 9),
    (210000, 'leave', 'W3', 'connect', 10),
    (210000, 'join', 'W3', 'connect', 10),
    (210000, 'converted', 'W3', 'classic', 10),
    (216000, 'compute-assignment', 'W3', 'classic', 11),
    (216000, 'assign', 'W3', 'classic', 11),
    (216000, 'assign', 'W2', 'classic', 11),
    (216000, 'assign', 'W1', 'classic', 11),
]


@functools.cache
def document():
    """One run for every test (none changes it)."""
    return run(resolve("migration"))


def test_the_exact_steps():
    steps = document()["steps"]
    assert [(s["at_ms"], s["event"], s["worker"], s["group_type"], s["group_epoch"])
            for s in steps if s["event"] != "error"] == STEPS


def test_conversions_start_at_the_other_groups_epoch():
    assert document()["conversions"] == [
        {"at_ms": 90_000, "worker": "W3", "from": "classic", "to": "connect", "from_epoch": 4, "group_epoch": 4},
        {"at_ms": 210_000, "worker": "W3", "from": "connect", "to": "classic", "from_epoch": 10, "group_epoch": 10}]


def test_the_other_protocol_waits_until_the_group_is_empty():
    errors = document()["errors"]
    assert {e["error"] for e in errors} == {"GROUP_ID_NOT_FOUND"}
    by_worker = {}
    for e in errors:
        by_worker.setdefault((e["worker"], e["api"]), []).append(e["at_ms"])
    assert by_worker == {
        ("W1", "ConnectGroupHeartbeat"): list(range(30_000, 90_000, 3_000)),
        ("W2", "ConnectGroupHeartbeat"): list(range(60_000, 90_000, 3_000)),
        ("W1", "JoinGroup"): list(range(150_000, 210_000, 3_000)),
        ("W2", "JoinGroup"): list(range(180_000, 210_000, 3_000))}


def test_members_are_of_the_groups_protocol_and_no_item_runs_twice():
    for step in document()["steps"]:
        assert {m["protocol"] for m in step["members"].values()} <= {step["group_type"]}
        held = [i for m in step["members"].values() for i in m["connectors"] + m["tasks"]]
        assert len(held) == len(set(held)), step


def test_every_item_runs_once_on_the_new_protocol_and_at_the_end():
    doc = document()
    settled_on_connect = [s for s in doc["steps"] if s["at_ms"] == 99_000][-1]["members"]
    assert {w: (m["member_epoch"], m["connectors"] + m["tasks"]) for w, m in settled_on_connect.items()} == {
        "W1": (7, ["B", "B-1"]), "W2": (7, ["A-2"]), "W3": (7, ["A", "A-1"])}
    final = doc["final"]
    assert (final["group_type"], final["group_epoch"], doc["rebalances"], doc["settled_at_ms"]) == (
        "classic", 11, 11, 216_000)
    assert {w: m["connectors"] + m["tasks"] for w, m in final["members"].items()} == {
        "W1": ["A", "A-2"], "W2": ["B", "B-1"], "W3": ["A-1"]}
    assert final["unassigned"] == {"connectors": [], "tasks": []}


def test_cli_table_and_usage():
    runner = CliRunner()
    table = runner.invoke(cli, ["simulate", "connect", "migration", "-o", "table"])
    assert table.exit_code == 0, table.output
    assert "converted: 90000 ms classic -> connect at epoch 4 (W3 joined)" in table.output
    assert "error response: 30000-87000 ms W1 ConnectGroupHeartbeat GROUP_ID_NOT_FOUND (x20)" in table.output
    assert json.loads(runner.invoke(cli, ["simulate", "connect", "migration", "-o", "json"]).output)["protocol"] \
        == "migration"
    assert runner.invoke(cli, ["simulate", "connect", "migration", "--compare", "protocol"]).exit_code == 2
    assert runner.invoke(cli, ["simulate", "connect", "worker-joins", "--event", "0:upgrade:W1"]).exit_code == 2
    assert runner.invoke(cli, ["simulate", "connect", "migration", "--initial-epoch", "3",
                               "--initial-assignment", "W1=A"]).exit_code == 2
