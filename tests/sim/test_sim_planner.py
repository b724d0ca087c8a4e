"""The figures a planner reads from `kgroup simulate`: hand-offs (restore cost) beside partitions ever
moved, which partitions each member gained and lost, the peak of unowned partitions and the longest
wait, `--compare concurrency`, the state restore model, and the safe restart window."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from kgroup.commands.cli import cli
from kgroup.sim.model import SimParams
from kgroup.sim.restore import Restores
from kgroup.sim.scenarios import run_scenario

FLEET = dict(members=10, topics=(("state", 30),))


def invoke(*args):
    return CliRunner().invoke(cli, ["simulate", *args])


def bounce(**params):
    return run_scenario("rolling-bounce", SimParams(**{**FLEET, **params}))


# ---- hand-offs -----------------------------------------------------------------------------
def test_handoffs_show_what_partitions_ever_moved_hides():
    """Restarts past the session: every assignor moves every partition at some point, but range
    reshuffles at every rebalance where sticky moves each restarted member's partitions out and back."""
    runs = {a: bounce(assignor=a, restart_ms=60_000) for a in ("range", "sticky", "cooperative-sticky")}
    assert {r.partitions_moved for r in runs.values()} == {30}
    assert runs["sticky"].handoffs == runs["cooperative-sticky"].handoffs == 2 * 30   # out, and back
    assert runs["range"].handoffs > 3 * runs["sticky"].handoffs
    document = runs["range"].as_dict(events=False)
    assert document["handoffs"] == runs["range"].handoffs
    assert document["partitions_ever_moved"] == document["partitions_moved"] == 30


def test_a_process_coming_back_to_its_own_partitions_hands_nothing_off():
    static = bounce(restart_ms=10_000)
    assert static.rebalances == 0 and static.handoffs == 0 and static.partitions_moved == 0


def test_eager_members_log_their_revocation_and_what_really_changed():
    result = run_scenario("scale-up", SimParams(members=3, topics=(("t", 9),), membership="dynamic"))
    events = list(result.events)
    revoked = [e for e in events if e["event"] == "revoked"]
    assert {e["member"] for e in revoked} == {"c0", "c1", "c2"}      # eager: everything, at the join
    assert all(e["partitions"] == 3 for e in revoked)
    synced = {e["member"]: e for e in events if e["event"] == "synced"}
    # range over 4 members of 9 partitions: c0 keeps 0,1,2 (nothing added, nothing lost), the
    # newcomer gains; counts are against each member's last assignment, not the eager revocation
    assert (synced["c0"]["added"], synced["c0"]["revoked"], synced["c0"]["added_partitions"]) == (0, 0, "")
    assert synced["c3"]["added"] == synced["c3"]["partitions"] == 2

    def count(text):
        return sum(len(part.split(":")[1].split(",")) for part in text.split()) if text else 0
    for e in synced.values():
        assert (count(e["added_partitions"]), count(e["revoked_partitions"])) == (e["added"], e["revoked"])
    moved_from_old = sum(e["revoked"] for e in synced.values())
    moved_to = sum(e["added"] for name, e in synced.items() if name != "c3")
    assert moved_from_old - moved_to == synced["c3"]["added"]      # every partition lost went somewhere


def test_consumer_protocol_assignments_name_their_partitions():
    result = run_scenario("scale-up", SimParams(members=2, topics=(("t", 4),), protocol="consumer"))
    assigned = [e for e in result.events if e["event"] == "assigned"]
    assert assigned and all(set(e) >= {"added_partitions", "revoked_partitions"} for e in assigned)
    newcomer = [e for e in assigned if e["member"] == "c2"][-1]
    assert newcomer["added_partitions"].startswith("t:") and newcomer["partitions"] >= 1


# ---- peak and wait ------------------------------------------------------------------------------
def test_concurrency_shows_in_the_peak_not_in_the_total():
    one, all_at_once = bounce(concurrency=1), bounce(concurrency=10)
    assert one.unowned_partition_seconds == all_at_once.unowned_partition_seconds == 300.0
    assert (one.peak_unowned_partitions, all_at_once.peak_unowned_partitions) == (3, 30)
    assert one.longest_partition_wait_ms == all_at_once.longest_partition_wait_ms == 10_000
    assert one.time_to_stable_ms > all_at_once.time_to_stable_ms


def test_compare_concurrency_marks_the_fastest_setting_without_a_rebalance():
    result = invoke("rolling-bounce", "--members", "6", "--topic", "t:12", "--restart-ms", "40000",
                    "--compare", "concurrency=1,3,6")
    assert result.exit_code == 0, result.output
    header = result.output.splitlines()[0]
    assert re.search(r"concurrency 6 \*", header) and "concurrency 1 *" not in header
    assert "* the fastest setting with no rebalance" in result.output
    assert re.search(r"peak unowned\s+2\s+6\s+12\b", result.output)
    document = json.loads(invoke("rolling-bounce", "--members", "4", "--compare", "concurrency",
                                 "-o", "json").output)
    assert [d["concurrency"] for d in document] == [1, 5, 10, 50]


def test_every_setting_rebalancing_is_said():
    result = invoke("rolling-bounce", "--members", "3", "--membership", "dynamic", "--compare", "concurrency=1,3")
    assert result.exit_code == 0 and "every setting rebalanced" in result.output


@pytest.mark.parametrize("args, message", [
    (["rolling-bounce", "--compare", "concurrency=1,x"], "'x' is not a concurrency"),
    (["rolling-bounce", "--compare", "concurrency=3"], "at least two settings"),
    (["rolling-bounce", "--compare", "assignor=range"], "takes no values"),
    (["rolling-bounce", "--compare", "speed"], "unknown comparison"),
    (["scale-up", "--compare", "concurrency=1,2"], "does not apply to scale-up"),
    (["rolling-bounce", "--state-bytes-per-partition", "1g"], "go together"),
    (["rolling-bounce", "--state-bytes-per-partition", "lots", "--restore-rate", "1m"], "is not a size"),
])
def test_planner_options_refuse_what_cannot_apply(args, message):
    result = invoke(*args)
    assert result.exit_code == 2 and message in result.output, result.output
    assert "Traceback" not in result.output


# ---- restore ------------------------------------------------------------------------------------
def test_restores_run_one_after_another_and_stop_with_the_partition():
    restores = Restores(bytes_per_partition=1000, rate_bytes_per_s=1000)     # one second each
    restores.gain(0, "a", ("t", 0))
    restores.gain(0, "a", ("t", 1))
    restores.gain(500, "b", ("t", 2))
    restores.drop(1500, "a", ("t", 1))                # half restored when given up
    restores.finish()
    figures = restores.figures()
    a, b = figures["members"]
    assert (a["partitions"], a["bytes"], a["restore_ms"], a["done_at_ms"]) == (1, 1500, 1500, 1500)
    assert (b["partitions"], b["bytes"], b["done_at_ms"]) == (1, 1000, 1500)
    assert restores.steps() == [(0, 2), (500, 3), (1000, 2), (1500, 0)]
    assert figures["restoring_partition_seconds"] == 3.5
    assert figures["peak_restoring_partitions"] == 3 and figures["all_restored_at_ms"] == 1500


def test_state_makes_hand_offs_cost_bytes_and_time():
    result = bounce(assignor="sticky", restart_ms=60_000, state_bytes_per_partition=1 << 30,
                    restore_rate=100 << 20)
    restore = result.restore
    assert restore["partitions"] == result.handoffs                   # sticky: every restore completes
    assert restore["bytes"] == result.handoffs << 30
    assert restore["restore_ms_total"] == round(result.handoffs * 10_240)
    assert restore["restoring_partition_seconds"] > 0 and result.restoring_steps
    assert result.as_dict(events=False)["restore"] == restore
    calm = bounce(restart_ms=10_000, state_bytes_per_partition=1 << 30, restore_rate=100 << 20)
    assert calm.restore["bytes"] == 0 and calm.restore["members"] == []


def test_the_restore_rows_in_the_table():
    result = invoke("rolling-bounce", "--members", "4", "--topic", "t:8", "--restart-ms", "60000",
                    "--assignor", "sticky", "--state-bytes-per-partition", "2g", "--restore-rate", "200m/s")
    assert result.exit_code == 0, result.output
    assert re.search(r"bytes restored\s+32\.0 GiB", result.output)
    assert re.search(r"hand-offs\s+16\b", result.output)


# ---- the safe window ----------------------------------------------------------------------------
def test_the_safe_window_holds_whatever_the_phase():
    result = bounce(restart_ms=10_000)
    assert result.safe_restart_ms == 42_000                      # 45 s session - 3 s heartbeat
    assert 42_000 <= result.least_session_left_ms <= 45_000
    for seed in range(3):
        assert bounce(restart_ms=result.safe_restart_ms - 1, seed=seed).rebalances == 0
    assert bounce(restart_ms=45_001).rebalances > 0
    # within a run, a restart longer than the least session left is the one that rebalances
    risky = bounce(restart_ms=42_100, seed=1)
    assert (risky.rebalances > 0) == (risky.least_session_left_ms < 42_100)
    assert bounce(membership="dynamic").safe_restart_ms is None


def test_the_safe_window_is_printed_with_a_static_scenario():
    result = invoke("rolling-bounce", "--members", "3")
    assert re.search(r"safe restart: static members back within 42000 ms cause no rebalance, whatever their "
                     r"heartbeat phase .*least session a stopped member had left: \d+ ms\n", result.output)
    compared = invoke("rolling-bounce", "--members", "3", "--compare", "concurrency=1,3")
    assert compared.output.count("safe restart:") == 1
    assert re.search(r"had left: \d+ ms \(concurrency 1\), \d+ ms \(concurrency 3\)", compared.output)
    assert re.search(r"safe restart \(ms\)\s+42000", result.output)
    document = json.loads(invoke("rolling-bounce", "--members", "3", "-o", "json").output)
    assert document["safe_restart_ms"] == 42000 and document["least_session_left_ms"] >= 42000
    dynamic = invoke("rolling-bounce", "--members", "3", "--membership", "dynamic")
    assert "safe restart" not in dynamic.output


# ---- progress -------------------------------------------------------------------------------------
def test_a_run_reports_its_waves_and_a_long_one_shows_the_time_left(capsys):
    from kgroup.writers import StepProgress

    seen = []
    run_scenario("rolling-bounce", SimParams(members=6, concurrency=2), on_progress=lambda *a: seen.append(a))
    assert seen == [("forming the group", 0, 0), ("wave", 0, 3), ("wave", 1, 3), ("wave", 2, 3),
                    ("settling", 0, 0)]
    rolled = []
    run_scenario("upgrade-protocol", SimParams(members=4), on_progress=lambda *a: rolled.append(a))
    assert rolled == [("forming the group", 0, 0), *[("step", i, 4) for i in range(4)], ("settling", 0, 0)]

    now = [0.0]
    progress = StepProgress("simulate rolling-bounce", enabled=True, clock=lambda: now[0])
    progress.update("wave", 0, 200)
    now[0] = 1.5
    progress.update("wave", 10, 200)            # under 2 s: a quick run draws nothing
    assert capsys.readouterr().err == ""
    now[0] = 30.0
    progress.update("wave", 50, 200)
    progress.clear()
    err = capsys.readouterr().err
    assert "simulate rolling-bounce: wave 51 of 200, 30s so far, about 1m30s left" in err
    assert err.endswith("\r\033[K")                # erased before the table is printed


def test_a_long_phase_redraws_its_line_between_waves_and_a_phase_without_a_count_shows_its_time(
        capsys, monkeypatch):
    """A wave of a large dynamic group, its forming and its settling take seconds each: the engine's
    tick reports the phase under way again, so the line's clock moves within one."""
    from kgroup.sim import engine
    from kgroup.writers import StepProgress

    monkeypatch.setattr(engine, "TICK_STEPS", 1)
    for scenario, protocol in (("rolling-bounce", "consumer"), ("upgrade-protocol", "classic"),
                               ("scale-up", "classic")):
        seen = []
        run_scenario(scenario, SimParams(members=4, membership="dynamic", protocol=protocol),
                     on_progress=lambda *a: seen.append(a))
        phases = [a for i, a in enumerate(seen) if i == 0 or a != seen[i - 1]]
        assert phases[0] == ("forming the group", 0, 0) and phases[-1] == ("settling", 0, 0)
        assert len(seen) > len(phases)            # the same figures again, between the phases

    now = [0.0]
    progress = StepProgress("simulate scale-up", enabled=True, clock=lambda: now[0])
    progress.update("settling", 0, 0)
    now[0] = 3.0
    progress.update("settling", 0, 0)
    progress.clear()
    assert "simulate scale-up: settling, 3s so far" in capsys.readouterr().err
