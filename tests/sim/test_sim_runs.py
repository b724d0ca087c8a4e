"""`kgroup simulate --restart-ms` spreads and `--runs N`: how likely a roll is to rebalance
(kgroup/sim/restart_spread.py, kgroup/sim/runs.py, commands/_simulate/runs.py)."""

import json
import re

import pytest
from click.testing import CliRunner

from kgroup.commands.cli import cli
from kgroup.sim.model import ParameterError, SimParams
from kgroup.sim.restart_spread import (LogNormal, RestartSpreadError, Uniform, draw, maximum,
                                       parse_restart, restart_random)
from kgroup.sim.runs import RunSet, nearest_rank, spread
from kgroup.sim.scenarios import Run, run_scenario

# 3 static members, restarts 40-46 s against a 45 s session: some rolls stay inside it, some do not
MIXED = ["rolling-bounce", "--members", "3", "--restart-ms", "40000..46000", "--runs", "8"]


def invoke(*args):
    return CliRunner().invoke(cli, ["simulate", *args])


def gaps(result) -> list[int]:
    """Each restart's stop (or crash) -> start, from a run's event log."""
    stopped, out = {}, []
    for e in result.as_dict()["events"]:
        if e["event"] in ("stop", "crash"):
            stopped[e["member"]] = e["t_ms"]
        elif e["event"] == "start" and e["member"] in stopped:
            out.append(e["t_ms"] - stopped.pop(e["member"]))
    return out


# ---- the option's forms ---------------------------------------------------------------------
def test_a_number_stays_a_plain_int():
    assert parse_restart("40000") == 40000 and type(parse_restart("40000")) is int
    assert parse_restart("0") == 0


def test_a_range_is_uniform_between_its_bounds():
    assert parse_restart("30000..60000") == Uniform(30000, 60000)
    assert parse_restart(" 5 .. 5 ") == Uniform(5, 5)
    assert str(Uniform(30000, 60000)) == "30000..60000"


def test_two_percentiles_fit_a_log_normal_through_them_in_either_order():
    spread_ = parse_restart("p50=30000,p99=60000")
    assert spread_ == parse_restart("p99=60000, p50=30000") == LogNormal(((50.0, 30000), (99.0, 60000)))
    assert abs(spread_.quantile(0.50) - 30000) <= 1
    assert abs(spread_.quantile(0.99) - 60000) <= 1
    assert spread_.minimum < 30000 < 60000 < spread_.maximum
    assert str(spread_) == "p50=30000,p99=60000"
    other = parse_restart("p10=20000,p99.9=90000")
    assert abs(other.quantile(0.10) - 20000) <= 1 and abs(other.quantile(0.999) - 90000) <= 1


@pytest.mark.parametrize("value, message", [
    ("60000..30000", "60000..30000: the lower bound (60000) is above the upper one (30000)"),
    ("p99=20000,p50=30000", "p99 (20000) must be above p50 (30000)"),
    ("p50=30000,p99=30000", "p99 (30000) must be above p50 (30000)"),
    ("p50=30000", "give exactly two percentiles"),
    ("p50=1,p90=2,p99=3", "give exactly two percentiles"),
    ("p50=1,p50=2", "p50 is given twice"),
    ("p0=1,p50=2", "a percentile is above 0 and below 100"),
    ("p100=5,p50=3", "a percentile is above 0 and below 100"),
    ("p50=0,p99=5", "at least 1 ms"),
    ("p50=abc,p99=5", "expected pLEVEL=MS"),
    ("-5", "must not be negative (got -5)"),
    ("-5..10", "must not be negative (got -5)"),
    ("30s", "expected MS, MIN..MAX or two percentiles"),
    ("", "expected MS, MIN..MAX or two percentiles"),
])
def test_a_bad_restart_spread_is_one_usage_line(value, message):
    with pytest.raises(RestartSpreadError):
        parse_restart(value)
    result = invoke("rolling-bounce", "--restart-ms", value, "-o", "json")
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.splitlines() == [result.stderr.strip()]
    assert result.stderr.startswith("kgroup simulate: Invalid value for '--restart-ms'")
    assert message in result.stderr, result.stderr


@pytest.mark.parametrize("value", ["1..99999999999", "p50=1,p99=99999999999"])
def test_a_spread_beyond_kafkas_int_is_a_usage_error(value):
    result = invoke("rolling-bounce", "--restart-ms", value, "-o", "json")
    assert result.exit_code == 2 and result.stdout == ""
    assert "--restart-ms must be at most 2147483647 (got 99999999999)" in result.stderr


def test_params_validate_a_spread_and_stay_hashable():
    with pytest.raises(ParameterError, match=r"--restart-ms must be at most 2147483647 \(got 2147483648\)"):
        SimParams(restart_ms=Uniform(0, 2**31)).validate()
    with pytest.raises(ParameterError, match="--restart-ms must not be negative"):
        SimParams(restart_ms=Uniform(-1, 5)).validate()
    params = SimParams(restart_ms=parse_restart("p50=30000,p99=60000"))
    assert hash(params) == hash(SimParams(restart_ms=parse_restart("p99=60000,p50=30000")))


# ---- draws ----------------------------------------------------------------------------------
@pytest.mark.parametrize("restart", [Uniform(40000, 50000), LogNormal(((50.0, 30000), (99.0, 60000)))])
def test_draws_are_repeatable_by_seed_and_within_bounds(restart):
    def sample(seed):
        rng = restart_random(seed)
        return [draw(restart, rng) for _ in range(2000)]
    first = sample(7)
    assert first == sample(7)
    assert first != sample(8)
    assert all(restart.minimum <= ms <= restart.maximum for ms in first)
    assert all(type(ms) is int for ms in first)


def test_uniform_reaches_both_bounds_and_log_normal_keeps_its_median():
    rng = restart_random(0)
    assert {draw(Uniform(1, 3), rng) for _ in range(200)} == {1, 2, 3}
    rng = restart_random(0)
    values = sorted(draw(LogNormal(((50.0, 30000), (99.0, 60000))), rng) for _ in range(4001))
    assert 29000 < values[2000] < 31000                   # the median
    assert 57000 < values[int(0.99 * 4001)] < 63000       # the 99th percentile


def test_a_fixed_value_draws_nothing():
    rng = restart_random(3)
    state = rng.getstate()
    assert draw(40000, rng) == 40000
    assert rng.getstate() == state


def test_a_fixed_value_gives_the_results_of_a_spread_of_one_value():
    """Restarts draw from a stream of their own: a spread moves nothing but the restart times, so a
    spread that can only draw 40000 gives exactly the run a fixed 40000 gives."""
    for scenario, kw in (("rolling-bounce", {}), ("crash", {"protocol": "consumer"}),
                         ("upgrade-protocol", {})):
        fixed = run_scenario(scenario, SimParams(members=4, restart_ms=40000, seed=3, **kw))
        spread_ = run_scenario(scenario, SimParams(members=4, restart_ms=Uniform(40000, 40000), seed=3, **kw))
        assert fixed.as_dict() == spread_.as_dict(), scenario


@pytest.mark.parametrize("scenario, kw", [
    ("rolling-bounce", {"members": 6}),
    ("upgrade", {"members": 6}),
    ("crash", {"members": 6, "count": 4}),
    ("upgrade-protocol", {"members": 6}),        # protocol_roll restarts draw too
    ("downgrade-protocol", {"members": 6, "concurrency": 2}),
])
def test_every_restart_draws_its_own_time(scenario, kw):
    restart = Uniform(1000, 9000)
    result = run_scenario(scenario, SimParams(restart_ms=restart, **kw))
    restarts = gaps(result)
    assert len(restarts) == kw.get("count", kw["members"])
    assert len(set(restarts)) > 1
    assert all(1000 <= ms <= 9000 for ms in restarts), restarts
    again = run_scenario(scenario, SimParams(restart_ms=restart, **kw))
    assert gaps(again) == restarts


def test_a_crash_spread_across_the_session_loses_a_member_only_sometimes():
    params = dict(protocol="consumer", restart_ms=Uniform(30000, 60000))
    lost = [bool(run_scenario("crash", SimParams(seed=s, **params)).never_rejoined) for s in range(6)]
    assert any(lost) and not all(lost)


def test_the_time_cap_takes_the_spreads_maximum():
    spread_ = LogNormal(((50.0, 30000), (99.0, 60000)))
    run = Run(SimParams(restart_ms=spread_), "rolling-bounce")
    assert maximum(spread_) == spread_.maximum
    assert run.cap_ms() == spread_.maximum + 3 * (45_000 + 300_000)
    assert Run(SimParams(restart_ms=Uniform(1, 9000)), "rolling-bounce").cap_ms() == 9000 + 3 * 345_000


# ---- the summary ----------------------------------------------------------------------------
def test_spread_is_min_nearest_rank_max_and_mean_over_the_numbers():
    assert spread([3, 1, None, 2]) == {"min": 1, "p50": 2, "p90": 3, "max": 3, "mean": 2.0, "runs": 3}
    assert spread([None, None]) == {"min": None, "p50": None, "p90": None, "max": None, "mean": None, "runs": 0}
    ordered = list(range(1, 11))
    assert nearest_rank(ordered, 50) == 5 and nearest_rank(ordered, 90) == 9
    assert nearest_rank([7], 90) == 7


def test_every_numeric_top_level_figure_is_summarised_rebalances_first():
    """Figures other engineers add to SimResult.document() appear without a change here."""
    runs = RunSet("rolling-bounce", 10_000, seeds=[0, 1], documents=[
        {"scenario": "rolling-bounce", "handoffs": 2, "rebalances": 0, "settled": True,
         "time_to_stable_ms": None, "group_epoch_start": None, "config": {"a": 1}, "errors": []},
        {"scenario": "rolling-bounce", "handoffs": 4, "rebalances": 1, "settled": False,
         "time_to_stable_ms": None, "group_epoch_start": None, "config": {"a": 1}, "errors": []}])
    assert list(runs.figures()) == ["rebalances", "handoffs"]
    assert runs.figures()["handoffs"] == {"min": 2, "p50": 2, "p90": 4, "max": 4, "mean": 3.0, "runs": 2}
    assert runs.runs_rebalanced == 1 and runs.unsettled_seeds() == [1]
    assert runs.per_run()[0] == {"seed": 0, "handoffs": 2, "rebalances": 0, "settled": True,
                                 "time_to_stable_ms": None, "group_epoch_start": None, "errors": []}


# ---- --runs on the command line -------------------------------------------------------------
def test_runs_report_how_many_rolls_rebalanced_and_the_spread_of_each_figure():
    result = invoke(*MIXED, "--seed", "5", "-o", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["runs"] == 8 and doc["seeds"] == list(range(5, 13))
    assert 0 < doc["runs_rebalanced"] < 8
    assert doc["runs_rebalanced"] == sum(1 for r in doc["per_run"] if r["rebalances"] >= 1)
    for name in ("rebalances", "partitions_ever_moved", "unowned_partition_seconds", "time_to_stable_ms",
                 "longest_stop_ms"):
        values = sorted(r[name] for r in doc["per_run"])
        figure = doc["figures"][name]
        assert (figure["min"], figure["max"], figure["runs"]) == (values[0], values[-1], 8)
        assert figure["p50"] == values[3] and figure["p90"] == values[7]
        assert figure["mean"] == round(sum(values) / 8, 3)


def test_each_run_is_the_run_its_seed_gives_alone():
    doc = json.loads(invoke(*MIXED, "--seed", "5", "-o", "json").stdout)
    for summary in doc["per_run"][:3]:
        alone = json.loads(invoke(*MIXED[:-2], "--seed", str(summary["seed"]), "-o", "json").stdout)
        assert {k: alone[k] for k in summary if k != "seed"} == {k: v for k, v in summary.items() if k != "seed"}


def test_the_json_shape_is_stable():
    doc = json.loads(invoke(*MIXED, "-o", "json").stdout)
    assert list(doc) == ["scenario", "protocol", "membership", "assignor", "restart_ms", "runs", "seeds",
                         "runs_rebalanced", "runs_settled", "runs_never_rejoined", "figures", "per_run"]
    assert doc["restart_ms"] == "40000..46000" and doc["runs_settled"] == 8
    assert list(doc["figures"])[0] == "rebalances"
    assert "group_epoch_start" not in doc["figures"]          # null in every classic run
    assert all(list(f) == ["min", "p50", "p90", "max", "mean", "runs"] for f in doc["figures"].values())
    assert all("events" not in r and "migration" not in r for r in doc["per_run"])
    assert set(doc["per_run"][0]) >= {"seed", "rebalances", "settled", "errors", "never_rejoined"}


def test_one_fixed_run_gives_the_figures_one_run_gives():
    single = json.loads(invoke("rolling-bounce", "--restart-ms", "10000", "-o", "json").stdout)
    runs = json.loads(invoke("rolling-bounce", "--restart-ms", "10000", "--runs", "1", "-o", "json").stdout)
    assert runs["restart_ms"] == "10000"
    for name, figure in runs["figures"].items():
        assert figure["min"] == figure["max"] == single[name], name


def test_compare_gives_one_summary_per_variant():
    result = invoke("rolling-bounce", "--members", "3", "--restart-ms", "40000..46000", "--runs", "3",
                    "--compare", "membership", "-o", "json")
    assert result.exit_code == 0, result.output
    docs = json.loads(result.stdout)
    assert [d["membership"] for d in docs] == ["static", "dynamic"]
    assert docs[1]["runs_rebalanced"] == 3         # a dynamic member's leave and join rebalance


def test_the_table_puts_runs_rebalanced_first_then_a_row_per_figure():
    result = invoke(*MIXED, "-o", "table")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "rolling-bounce: 8 runs (seeds 0..7), restart 40000..46000 ms (uniform)"
    assert re.fullmatch(r"runs rebalanced: [1-7] of 8 \(\d+%\)", lines[1]), lines[1]
    assert lines[2].split() == ["figure", "min", "p50", "p90", "max", "mean"]
    assert lines[3].split()[0] == "rebalances"
    labels = " ".join(lines[3:])
    for label in ("hand-offs", "partitions ever moved", "unowned partition-s", "time to Stable (ms)", "longest stop (ms)"):
        assert label in labels
    assert result.stderr == ""


def test_the_table_with_compare_has_a_block_per_variant():
    result = invoke("rolling-bounce", "--members", "2", "--restart-ms", "p50=5000,p99=9000", "--runs", "2",
                    "--compare", "membership")
    assert result.exit_code == 0, result.output
    titles = [line for line in result.stdout.splitlines() if " runs (seeds " in line]
    assert titles == ["rolling-bounce (static): 2 runs (seeds 0..1), restart p50=5000,p99=9000 ms (log-normal)",
                      "rolling-bounce (dynamic): 2 runs (seeds 0..1), restart p50=5000,p99=9000 ms (log-normal)"]


def test_a_run_that_lost_a_member_makes_the_whole_set_exit_3():
    for output in ("json", "table"):
        result = invoke("crash", "--protocol", "consumer", "--restart-ms", "30000..60000", "--runs", "6",
                        "-o", output)
        assert result.exit_code == 3, result.output
        warnings = [line for line in result.stderr.splitlines() if "never rejoined" in line]
        assert warnings and all(line.startswith("kgroup simulate: warning: seed ") for line in warnings)
        if output == "json":
            doc = json.loads(result.stdout)
            assert 0 < doc["runs_never_rejoined"] < 6 == doc["runs"]
            assert len(warnings) == doc["runs_never_rejoined"]
        else:
            assert "runs with a member that never rejoined: " in result.stdout


def test_a_fixed_restart_that_never_loses_exits_0():
    result = invoke("crash", "--protocol", "consumer", "--restart-ms", "50000", "--runs", "2", "-o", "json")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("args, message", [
    (["--runs", "0"], "Invalid value for '--runs': must be at least 1 (got 0)"),
    (["--runs", "2", "--events"], "--events shows one run: it does not apply with --runs"),
    (["--runs", "2", "--plot", "x.png"], "--plot shows one run: it does not apply with --runs"),
])
def test_runs_usage_errors_are_one_line(args, message):
    result = invoke("rolling-bounce", *args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.startswith(f"kgroup simulate: {message}"), result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_a_scenario_that_cannot_run_names_its_seed():
    result = invoke("rolling-bounce", "--members", "1", "--config", "group.max.size=1", "--runs", "3")
    assert result.exit_code == 1
    assert result.stderr.startswith("kgroup simulate: rolling-bounce (seed 0): ")
    assert "GROUP_MAX_SIZE_REACHED" in result.stderr


# ---- the progress line ------------------------------------------------------------------------
def test_runs_show_the_time_left_from_the_runs_done_and_the_waves_of_the_one_under_way(capsys):
    from kgroup.writers import RunsProgress

    now = [0.0]
    progress = RunsProgress("simulate rolling-bounce", 4, enabled=True, clock=lambda: now[0])
    progress.run(0, " (seed 0)")
    now[0] = 1.5
    progress.update("wave", 1, 2)                 # under 2 s: nothing drawn
    assert capsys.readouterr().err == ""
    now[0] = 10.0
    progress.update("wave", 1, 2)                 # half of the first run of 4: 1/8 done in 10 s
    assert "simulate rolling-bounce: run 1 of 4 (seed 0), 10s so far, about 1m10s left" in \
        capsys.readouterr().err
    now[0] = 20.0
    progress.run(2, " (range) (seed 7)")          # two runs done: half of it in 20 s
    progress.clear()
    err = capsys.readouterr().err
    assert "run 3 of 4 (range) (seed 7), 20s so far, about 20s left" in err
    assert err.endswith("\r\033[K")


def test_the_runs_line_is_fed_each_runs_phases(monkeypatch):
    """The command hands the run's phases (its waves) to the line, not only each run's start."""
    from kgroup import writers

    seen = []

    class Recording(writers.RunsProgress):
        def run(self, index, text):
            seen.append(("run", index, self.runs, text))

        def update(self, what, done, total):
            seen.append((what, done, total))

    monkeypatch.setattr(writers, "RunsProgress", Recording)
    result = invoke("rolling-bounce", "--members", "3", "--runs", "2", "--compare", "membership")
    assert result.exit_code == 0, result.output
    runs = [s for s in seen if s[0] == "run"]
    assert runs == [("run", 0, 4, " (static) (seed 0)"), ("run", 1, 4, " (static) (seed 1)"),
                    ("run", 2, 4, " (dynamic) (seed 0)"), ("run", 3, 4, " (dynamic) (seed 1)")]
    assert ("wave", 2, 3) in seen
