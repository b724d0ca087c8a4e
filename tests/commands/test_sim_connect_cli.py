"""`kgroup simulate connect CASE -o json`: each case study preset reproduces the spec's assignments and
epochs through the CLI; a custom run with --event; usage errors."""

import json

import pytest
from click.testing import CliRunner

from kgroup.commands.cli import cli


def simulate(*args):
    result = CliRunner().invoke(cli, ["simulate", "connect", *args, "-o", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def items(connectors=(), tasks=()):
    return {"connectors": list(connectors), "tasks": list(tasks)}


def runs(document):
    return {w: (m["member_epoch"], items(m["connectors"], m["tasks"]))
            for w, m in document["final"]["members"].items()}


EVENTS = {"join", "leave", "crash", "restart", "hang", "resume", "connector-added", "connector-removed",
          "tasks-changed", "session-expired", "rebalance-timeout", "fenced", "error", "compute-assignment",
          "install", "install-rejected", "revoke", "abandon", "assign", "epoch", "delay-expired"}


def check_every_step(document):
    """Steps use the contract's event names; no item runs on two members at any step; the run ends
    with everyone at its target."""
    for step in document["steps"]:
        assert step["event"] in EVENTS, step
        held = [i for m in step["members"].values() for i in m["connectors"] + m["tasks"]]
        assert len(held) == len(set(held)), step
    final = document["final"]
    for worker, member in final["members"].items():
        assert member["member_epoch"] == final["assignment_epoch"]
        assert items(member["connectors"], member["tasks"]) == final["target"][worker]


def test_worker_joins():
    d = simulate("worker-joins")
    assert (d["scenario"], d["protocol"], d["assignor"]) == ("worker-joins", "connect", "incremental-cooperative")
    # each join recorded once the coordinator handled the worker's heartbeat (the draft's §15.1)
    assert [(s["at_ms"], s["worker"], s["group_epoch"]) for s in d["steps"] if s["event"] == "join"] == [
        (0, "W1", 1), (20_000, "W2", 2)]
    assert (d["group_epoch_start"], d["group_epoch_end"], d["assignment_epoch_end"], d["rebalances"]) == (0, 2, 2, 2)
    assert [(t["assignment_epoch"], t["assigner"], t["members"]) for t in d["targets"]] == [
        (1, "W1", {"W1": items(["A", "B"], ["A-1", "A-2", "B-1"])}),
        (2, "W1", {"W1": items(["A"], ["A-1", "A-2"]), "W2": items(["B"], ["B-1"])})]
    assert [(r["worker"], r["connectors"], r["tasks"], r["cause"]) for r in d["revoked"]] == [
        ("W1", ["B"], ["B-1"], "revoked")]
    w2_assigned = [a["at_ms"] for a in d["assigned"] if a["worker"] == "W2"]
    assert w2_assigned and w2_assigned[0] >= d["revoked"][0]["at_ms"]
    assert runs(d) == {"W1": (2, items(["A"], ["A-1", "A-2"])), "W2": (2, items(["B"], ["B-1"]))}
    assert d["errors"] == [] and d["settled_at_ms"] is not None
    check_every_step(d)


def test_worker_leaves():
    d = simulate("worker-leaves")
    assert (d["group_epoch_start"], d["group_epoch_end"], d["rebalances"]) == (35, 37, 2)
    expired = next(s["at_ms"] for s in d["steps"] if s["event"] == "session-expired")
    assert 8_000 < expired <= 11_000
    first, second = d["targets"]
    assert (first["assignment_epoch"], first["assigner"], first["members"], first["unassigned"]) == (
        36, "W3", {"W1": items(["A"], ["A-1"]), "W3": items([], ["A-2"])}, items(["B"], ["B-1"]))
    delay = next(s for s in d["steps"] if s["event"] == "delay-expired")
    # recorded after the coordinator handled the heartbeat the expired delay sent: the new epoch
    assert (delay["worker"], delay["group_epoch"]) == ("W3", 37) and delay["at_ms"] >= expired + 300_000
    assert (second["assignment_epoch"], second["assigner"], second["unassigned"]) == (37, "W3", items())
    counts = {w: len(m["connectors"]) + len(m["tasks"]) for w, m in second["members"].items()}
    assert counts == {"W1": 3, "W3": 2}
    b_started = min(a["at_ms"] for a in d["assigned"] if "B" in a["connectors"] or "B-1" in a["tasks"])
    assert expired + 300_000 <= b_started <= expired + 300_000 + 3 * 3_000
    assert d["revoked"] == []
    check_every_step(d)


def test_worker_bounce():
    d = simulate("worker-bounce")
    assert (d["group_epoch_end"], d["ended_at_ms"], d["rebalances"]) == (37, 400_000, 2)
    assert [(e["worker"], e["api"], e["error"]) for e in d["errors"]] == [
        ("W2", "ConnectGroupHeartbeat", "UNKNOWN_MEMBER_ID")]
    assert d["targets"][0]["members"] == {"W1": items(["A"], ["A-1"]), "W3": items([], ["A-2"])}
    assert (d["targets"][1]["assignment_epoch"], d["targets"][1]["assigner"], d["targets"][1]["members"]) == (
        37, "W3", {"W1": items(["A"], ["A-1"]), "W2": items(["B"], ["B-1"]), "W3": items([], ["A-2"])})
    assert runs(d) == {"W1": (37, items(["A"], ["A-1"])), "W2": (37, items(["B"], ["B-1"])),
                       "W3": (37, items([], ["A-2"]))}
    assert {r["worker"] for r in d["revoked"]} == {"W2"}
    assert max(a["at_ms"] for a in d["assigned"] if a["worker"] == "W2") <= 60_000 + 3 * 3_000
    check_every_step(d)


def test_worker_bounce_epoch_zero_variant_has_no_error():
    d = simulate("worker-bounce", "--event", "1000:crash:W2", "--event", "60000:restart:W2")
    assert d["errors"] == [] and d["group_epoch_end"] == 37
    assert runs(d)["W2"] == (37, items(["B"], ["B-1"]))


def test_assigner_selection():
    d = simulate("assigner-selection")
    assert [(t["assignment_epoch"], t["assigner"]) for t in d["targets"]] == [(1, "W2"), (2, "W3"), (3, "W1")]
    assert [(e["worker"], e["error"]) for e in d["errors"]] == [("W4", "UNSUPPORTED_ASSIGNOR")]
    assert d["group_epoch_end"] == 3 and "W4" not in d["final"]["members"]
    assert {w: m["member_epoch"] for w, m in d["final"]["members"].items()} == {"W1": 3, "W2": 3, "W3": 3}
    assert d["final"]["unassigned"] == items()
    check_every_step(d)


def test_connector_change():
    d = simulate("connector-change")
    assert d["targets"][1]["members"] == {"W1": items(["A"], ["A-1", "A-2"]), "W2": items(["B"], ["B-1"])}
    added = next(s for s in d["steps"] if s["event"] == "connector-added")
    removed = next(s for s in d["steps"] if s["event"] == "connector-removed")
    assert (added["at_ms"], added["group_epoch"], removed["at_ms"], removed["group_epoch"]) == (30_000, 3, 60_000, 4)
    after_join = [r for r in d["revoked"] if r["at_ms"] >= 30_000]
    assert [(r["worker"], r["connectors"], r["tasks"]) for r in after_join] == [("W2", ["B"], ["B-1"])]
    assert runs(d) == {"W1": (4, items(["A"], ["A-1", "A-2"])), "W2": (4, items(["C"], ["C-1"]))}
    assert d["rebalances"] == 4
    check_every_step(d)


def test_custom_run_with_events_and_seed():
    d = simulate("custom", "--connectors", "X:3", "--initial-epoch", "5", "--initial-assignment", "W1=X,X-1,X-2,X-3",
                 "--event", "2000:join:W2", "--event", "40000:set-tasks:X:1", "--until-ms", "60000")
    assert d["connectors"] == {"X": 3} and d["group_epoch_start"] == 5 and d["ended_at_ms"] == 60_000
    assert [s["event"] for s in d["steps"] if s["event"] in ("join", "tasks-changed")] == ["join", "tasks-changed"]
    final = d["final"]
    held = sorted(i for m in final["members"].values() for i in m["connectors"] + m["tasks"])
    assert held == ["X", "X-1"] and final["group_epoch"] == 7
    check_every_step(d)


def test_table_output_shows_final_assignment_and_steps():
    result = CliRunner().invoke(cli, ["simulate", "connect", "worker-joins", "-o", "table", "--events"])
    assert result.exit_code == 0, result.output
    assert "W1        2        A,A-1,A-2" in result.output and "revoked: 24000 ms W1: B,B-1" in result.output
    assert "compute-assignment" in result.output


@pytest.mark.parametrize("args", [
    ["sideways"], ["custom", "--connectors", "A"], ["custom", "--event", "5:fly:W1"],
    ["custom", "--event", "5:leave:W9"], ["custom", "--assignor-versions", "W1=3-1"],
    ["custom", "--initial-assignment", "W1=A"], ["worker-leaves", "--initial-assigner", "W9"],
    ["custom", "--initial-epoch", "3"], ["custom", "--initial-epoch", "3", "--initial-assignment", "W1=A-7"],
    ["custom", "--connectors", "A:2147483647"],
    ["custom", "--workers", "W1", "--event", "10:add-connector:C:999999999"],
    ["custom", "--workers", "W1", "--event", "10:set-tasks:A:100001", "--compare", "protocol"],
    ["custom", "--initial-epoch", "3", "--initial-assignment", "W1=A", "--initial-assignment", "W2=A"],
    # a value given twice would silently lose the first one
    ["custom", "--connectors", "A:2,A:3"], ["custom", "--workers", "W1,W1"],
    ["custom", "--initial-epoch", "3", "--initial-assignment", "W1=A", "--initial-assignment", "W1=B"],
    ["custom", "--workers", "W1", "--assignor-versions", "W1=0-2", "--assignor-versions", "W1=1-2"],
    # a worker or connector the run never has
    ["custom", "--workers", "W1", "--assignor-versions", "W9=0-2"],
    ["custom", "--workers", "W1", "--event", "10:set-tasks:Z:2"],
    ["custom", "--workers", "W1", "--event", "10:remove-connector:Z"],
    ["custom", "--workers", "W1", "--event", "10:add-connector:A:1"],
    ["custom", "--workers", "W1", "--event", "10:remove-connector:A", "--event", "20:set-tasks:A:3"],
    # an event that does not fit what the worker does then
    ["custom", "--workers", "W1", "--event", "10:leave:W1", "--event", "20:leave:W1"],
    ["custom", "--workers", "W1", "--event", "10:resume:W1"],
    ["custom", "--workers", "W1", "--event", "10:join:W1"],
    ["custom", "--workers", "W1", "--event", "10:hang:W1", "--event", "20:leave:W1"],
    ["custom", "--initial-epoch", "3", "--initial-assignment", "W1=A", "--workers", "W1"],
    ["migration", "--event", "10:upgrade:W1", "--event", "20:upgrade:W1"],
    ["migration", "--event", "10:downgrade:W1"],
    # beyond Kafka's 32-bit ints
    ["worker-joins", "--rebalance-timeout-ms", "99999999999"],
    ["worker-joins", "--scheduled-rebalance-max-delay-ms", "99999999999"],
    ["custom", "--initial-epoch", "99999999999", "--initial-assignment", "W1=A"],
    # sessions that expire between two heartbeats
    ["worker-joins", "--session-timeout-ms", "1000"],
    ["custom", "--workers", "W1", "--session-timeout-ms", "3000", "--heartbeat-interval-ms", "3000"]])
def test_usage_errors_exit_2_with_one_error_line(args):
    result = CliRunner().invoke(cli, ["simulate", "connect", *args])
    assert result.exit_code == 2, result.output
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("kgroup simulate connect: ")


def test_messages_name_the_duplicate_and_the_missing_connector():
    twice = CliRunner().invoke(cli, ["simulate", "connect", "custom", "--connectors", "A:2,A:3"])
    assert "connector 'A' given twice" in twice.output
    missing = CliRunner().invoke(cli, ["simulate", "connect", "custom", "--workers", "W1",
                                       "--event", "10:remove-connector:A", "--event", "20:set-tasks:A:3"])
    assert "--event 20:set-tasks:A:3: connector 'A' does not exist at 20 ms" in missing.output


def test_an_event_that_does_not_fit_the_worker_names_its_state():
    result = CliRunner().invoke(cli, ["simulate", "connect", "custom", "--workers", "W1",
                                      "--event", "10:leave:W1", "--event", "20:leave:W1"])
    assert "--event 20:leave:W1: W1 is stopped at 20 ms" in result.output
    result = CliRunner().invoke(cli, ["simulate", "connect", "migration", "--event", "10:downgrade:W1"])
    assert "--event 10:downgrade:W1: W1 already speaks the classic protocol at 10 ms" in result.output


@pytest.mark.parametrize("events", [
    ["10:leave:W1", "20:join:W1"], ["10:crash:W1", "20:restart:W1"], ["10:hang:W1", "20:resume:W1"],
    ["10:hang:W1", "20:restart:W1"], ["10:hang:W1", "20:crash:W1", "30:join:W1"]])
def test_events_that_fit_the_worker_run(events):
    document = simulate("custom", "--workers", "W1,W2", *(a for e in events for a in ("--event", e)))
    assert document["final"]["members"]


def test_a_preset_event_that_no_longer_fits_says_it_is_the_presets():
    result = CliRunner().invoke(cli, ["simulate", "connect", "worker-joins", "--initial-epoch", "5",
                                      "--initial-assignment", "W1=A"])
    assert result.exit_code == 2
    assert ("--event 0:join:W1: W1 is already running at 0 ms (an event of the worker-joins preset; "
            "--event replaces them)") in result.output


def test_connector_removed_then_added_again_is_fine():
    document = simulate("custom", "--workers", "W1", "--event", "10:remove-connector:A",
                        "--event", "20:add-connector:A:3")
    assert document["settled_at_ms"] is not None


def test_table_says_not_settled_with_the_end_time():
    result = CliRunner().invoke(cli, ["simulate", "connect", "custom", "--workers", "W1", "--event",
                                      "1000:hang:W1", "--until-ms", "20000", "-o", "table"])
    assert result.exit_code == 0, result.output
    first = result.output.splitlines()[0]
    assert first.endswith("not settled (ran to 20000 ms)") and "never" not in first


def test_man_page_and_readme_list_every_option_of_help():
    from pathlib import Path
    import re
    root = Path(__file__).resolve().parents[2]
    help_text = CliRunner().invoke(cli, ["simulate", "connect", "--help"]).output
    options = set(re.findall(r"(--[a-z][a-z-]+)", help_text)) - {"--help"}
    page, readme = (root / "man" / "kgroup-simulate-connect.1").read_text(), (root / "docs" / "simulate.md").read_text()
    assert sorted(o for o in options if o.replace("-", r"\-") not in page) == []
    assert sorted(o for o in options if o not in readme) == []
