"""`kgroup simulate`: outputs, exit codes, plot, and the man page in step with --help."""

import json
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kgroup.commands.cli import cli

MAN = Path(__file__).resolve().parents[2] / "man" / "kgroup-simulate.1"


def invoke(*args):
    return CliRunner().invoke(cli, ["simulate", *args], catch_exceptions=False)


def test_json_document_for_one_run():
    result = invoke("rolling-bounce", "-o", "json", "--members", "4", "--topic", "orders:8")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert {k: doc[k] for k in ("scenario", "membership", "members", "partitions", "rebalances",
                                "generation_start", "generation_end", "partitions_moved",
                                "unowned_partition_seconds", "time_to_stable_ms")} == {
        "scenario": "rolling-bounce", "membership": "static", "members": 4, "partitions": 8,
        "rebalances": 0, "generation_start": 1, "generation_end": 1, "partitions_moved": 0,
        "unowned_partition_seconds": 80.0, "time_to_stable_ms": 40_000}
    assert [e["event"] for e in doc["events"]][:2] == ["stop", "start"]


def test_compare_membership_is_a_list_in_json_and_columns_in_a_table():
    result = invoke("rolling-bounce", "--compare", "membership", "-o", "json")
    docs = json.loads(result.output)
    assert [(d["membership"], d["rebalances"]) for d in docs] == [("static", 0), ("dynamic", 6)]
    table = invoke("rolling-bounce", "--compare", "membership", "-o", "table").output.splitlines()
    assert table[0].split() == ["rolling-bounce", "static", "dynamic"]
    assert "rebalances 0 6" in [" ".join(line.split()) for line in table]
    assert "generation 1 -> 1 1 -> 7" in [" ".join(line.split()) for line in table]


def test_compare_removal_and_events_table():
    result = invoke("scale-down", "--compare", "removal", "-o", "table", "--events")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0].split() == ["scale-down", "session", "timeout", "remove-members"]
    assert "events (remove-members)" in lines
    assert any("remove-members" in line and "instances=['c2']" in line for line in lines)


def test_usage_errors_exit_2():
    assert invoke("rolling-bounce", "--members", "0").exit_code == 2
    assert invoke("sideways").exit_code == 2
    assert invoke("rolling-bounce", "--topic", "t:0").exit_code == 2
    bad = invoke("upgrade", "--compare", "membership")
    assert bad.exit_code == 2 and "does not apply to upgrade" in bad.output
    assert invoke("scale-down", "--count", "3").exit_code == 2


@pytest.mark.parametrize("option, value, problem", [
    ("--topic", "bad topic:5", "contains characters other than ASCII alphanumerics"),
    ("--topic", "..:3", "is illegal"),
    ("--topic", "t" * 250 + ":1", "longer than 249 characters"),
    ("--add-topic", "x/y:3", "contains characters other than ASCII alphanumerics")])
def test_a_topic_kafka_would_refuse_is_a_usage_error(option, value, problem):
    scenario = "upgrade-protocol" if option == "--add-topic" else "rolling-bounce"
    result = invoke(scenario, option, value, "-o", "json")
    assert result.exit_code == 2
    assert sum(problem in line for line in result.output.splitlines()) == 1


@pytest.mark.parametrize("option", ["--rebalance-timeout-ms", "--initial-rebalance-delay-ms", "--restart-ms"])
def test_a_timeout_beyond_kafkas_int_is_a_one_line_usage_error(option):
    result = CliRunner().invoke(cli, ["simulate", "rolling-bounce", option, "99999999999", "-o", "json"])
    assert result.exit_code == 2 and result.stdout == ""
    assert f"{option} must be at most 2147483647 (got 99999999999)" in result.stderr
    assert "Traceback" not in result.output


def test_a_scenario_that_cannot_run_exits_1_naming_the_error():
    """A full group (group.max.size) refuses the restarted static member's JoinGroup, as Kafka's
    acceptJoiningMember does; a session timeout the broker refuses is a usage error now
    (test_sim_config)."""
    result = invoke("rolling-bounce", "--members", "1", "--config", "group.max.size=1")
    assert result.exit_code == 1
    assert "JoinGroup failed with GROUP_MAX_SIZE_REACHED (81)" in result.output


@pytest.mark.parametrize("suffix,magic", [(".png", b"\x89PNG"), (".svg", b"<?xml")])
def test_plot_writes_the_timeline(tmp_path, suffix, magic):
    pytest.importorskip("matplotlib")
    path = tmp_path / f"timeline{suffix}"
    result = invoke("rolling-bounce", "--compare", "membership", "-o", "json", "--plot", str(path))
    assert result.exit_code == 0, result.output
    assert path.read_bytes().startswith(magic)


def test_plot_bars_carry_their_partition_count():
    """The shade alone does not say how many partitions a consumer holds: wide bars show the number."""
    pytest.importorskip("matplotlib")
    from kgroup.sim.model import SimParams
    from kgroup.sim.plot import pyplot, timeline_figure
    from kgroup.sim.scenarios import run_scenario

    result = run_scenario("rolling-bounce", SimParams(members=3, membership="dynamic"))
    plt = pyplot("x.png")
    fig = timeline_figure(plt, [result])
    try:
        labels = {t.get_text() for t in fig.axes[0].texts}
    finally:
        plt.close(fig)
    # 9 partitions: three members hold 3 each, two hold 4 and 5 while the third is away
    assert {"3", "4", "5"} <= labels and labels <= {str(n) for n in range(10)}


def test_plot_without_matplotlib_exits_1_with_a_clear_message(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)     # import matplotlib -> ImportError
    result = invoke("rolling-bounce", "-o", "json", "--plot", str(tmp_path / "x.png"))
    assert result.exit_code == 1
    assert "--plot needs matplotlib, which is not installed: pip install 'kgroup[plot]'" in result.output
    assert not (tmp_path / "x.png").exists()
    assert result.stdout == ""      # refused before simulating, not after


def test_plot_target_is_checked_before_the_simulation_runs(tmp_path, monkeypatch):
    import kgroup.sim.scenarios as scenarios

    def boom(*a, **kw):
        raise AssertionError("the simulation ran before the --plot target was checked")
    monkeypatch.setattr(scenarios, "run_scenario", boom)
    result = invoke("rolling-bounce", "--plot", str(tmp_path / "x.pdf"))
    assert result.exit_code == 1 and "must end in .png or .svg" in result.output


@pytest.mark.parametrize("where, reason", [("missing/x.png", "No such file or directory"),
                                           ("a-dir.png", "Is a directory"),
                                           ("a-file/x.svg", "Not a directory")])
def test_plot_to_a_place_it_cannot_write_is_refused_before_the_simulation_runs(tmp_path, monkeypatch, where,
                                                                                reason):
    """Checked after the run, the failure would throw the run's results away."""
    pytest.importorskip("matplotlib")
    import kgroup.sim.scenarios as scenarios

    (tmp_path / "a-dir.png").mkdir()
    (tmp_path / "a-file").write_text("")

    def boom(*a, **kw):
        raise AssertionError("the simulation ran before the --plot target was checked")
    monkeypatch.setattr(scenarios, "run_scenario", boom)
    result = invoke("rolling-bounce", "-o", "json", "--plot", str(tmp_path / where))
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith(f"--plot {tmp_path / where}: cannot write the file: {reason}")


def test_plot_rejects_other_file_types(tmp_path):
    result = invoke("rolling-bounce", "-o", "json", "--plot", str(tmp_path / "x.pdf"))
    assert result.exit_code == 1 and "must end in .png or .svg" in result.output


def test_root_help_lists_simulate_and_stays_light():
    result = CliRunner().invoke(cli, ["--help"])
    assert "simulate" in result.output
    assert "Predict rebalances" in result.output


def test_man_page_lists_every_option_of_help():
    help_text = invoke("--help").output
    options = set(re.findall(r"(--[a-z][a-z-]+)", help_text))
    page = MAN.read_text()
    missing = sorted(o for o in options if o.replace("-", r"\-") not in page)
    assert missing == []
    for scenario in ("rolling-bounce", "upgrade", "downgrade", "scale-down", "scale-up",
                     "leader-bounce", "crash", "duplicate-instance"):
        assert scenario.replace("-", r"\-") in page



@pytest.mark.parametrize("scenario, options, compare", [
    ("rolling-bounce", dict(members=12, membership="dynamic"), None),
    ("rolling-bounce", dict(members=5), "membership"),
    ("upgrade-protocol", dict(members=4), None)])
def test_json_is_json_dumps_of_the_document_though_its_events_are_streamed(scenario, options, compare):
    from kgroup.sim.model import SimParams, variants
    from kgroup.sim.scenarios import run_scenario

    flags = [f"--{k}={v}" for k, v in options.items()] + (["--compare", compare] if compare else [])
    result = invoke(scenario, *flags, "-o", "json")
    assert result.exit_code == 0, result.output
    docs = [run_scenario(scenario, p).as_dict()
            for p in variants(scenario, SimParams(**options), compare)]
    expected = docs if compare else docs[0]
    assert result.output == json.dumps(expected, ensure_ascii=False, indent=2) + "\n"


def test_a_scenario_that_cannot_run_is_one_line_prefixed_like_every_verb():
    """Not click's `Error: ...`: `kgroup simulate: SCENARIO: why`, exit 1."""
    result = invoke("rolling-bounce", "--members", "1", "--config", "group.max.size=1")
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert (line.startswith("kgroup simulate: rolling-bounce: a bounced member did not come back ")
            and "GROUP_MAX_SIZE_REACHED" in line)
    assert result.stdout == ""
