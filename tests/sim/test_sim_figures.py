"""`kgroup simulate`'s figures do not mislead: members at the start and at the end, and a member that
never came back (a fatal error, as Kafka's clients treat it) reported, counted and exit 3."""

import json

import pytest
from click.testing import CliRunner

from kgroup.commands.cli import cli
from kgroup.sim.model import SCENARIOS, SimParams
from kgroup.sim.scenario_options import SCENARIO_OPTIONS
from kgroup.sim.scenarios import run_scenario


def invoke(*args):
    return CliRunner().invoke(cli, ["simulate", *args], catch_exceptions=False)


def table_row(output: str, label: str) -> str:
    """The value column of a one-run table row, its spacing collapsed."""
    for line in output.splitlines():
        if line.startswith(label + "  "):
            return " ".join(line[len(label):].split())
    raise AssertionError(f"no row {label!r} in:\n{output}")


# ---- (a) members: start and end -------------------------------------------------------------------
@pytest.mark.parametrize("scenario, protocol, start, end", [
    ("crash", "consumer", 3, 2), ("scale-up", "classic", 3, 4), ("scale-down", "classic", 3, 2),
    ("rolling-bounce", "classic", 3, 3)])
def test_members_are_shown_at_the_start_and_at_the_end(scenario, protocol, start, end):
    table = invoke(scenario, "--protocol", protocol, "-o", "table")
    assert table_row(table.stdout, "members") == f"{start} -> {end}"
    doc = json.loads(invoke(scenario, "--protocol", protocol, "-o", "json").stdout)
    # `members` keeps its meaning (the count at the end) for the scripts that read it
    assert (doc["members_start"], doc["members_end"], doc["members"]) == (start, end, end)


# ---- (b) a member that never rejoined -----------------------------------------------------------
def test_a_crashed_static_consumer_protocol_member_that_is_refused_is_reported_and_counted():
    r = run_scenario("crash", SimParams(protocol="consumer", membership="static"))
    # Java's consumer: UNRELEASED_INSTANCE_ID -> handleFatalFailure (transitionToFatal); it never rejoins.
    assert [(m["member"], m["instance_id"], m["error"]) for m in r.never_rejoined] == [
        ("c0", "c0", "UNRELEASED_INSTANCE_ID")]
    assert r.never_rejoined[0]["stopped_at_ms"] == 0
    assert "session.timeout.ms (45000 ms)" in r.never_rejoined[0]["advice"]
    # its stop lasts to the end of the run (the group settles without it when its session expires)
    assert r.longest_stop_ms == r.duration_ms == 45_000
    # its partitions are unowned until the group hands them to the others: 3 of 9, about 45 s
    assert 130 < r.unowned_partition_seconds <= 135


def test_the_command_says_who_never_rejoined_and_exits_3():
    result = invoke("crash", "--protocol", "consumer", "-o", "table")
    assert result.exit_code == 3
    assert table_row(result.stdout, "never rejoined") == "c0 (UNRELEASED_INSTANCE_ID)"
    assert table_row(result.stdout, "longest stop (ms)") == "45000+"
    assert ("kgroup simulate: warning: never rejoined: c0, fatal UNRELEASED_INSTANCE_ID; a crashed static "
            "member must wait out group.consumer.session.timeout.ms (45000 ms) before restarting") in result.stderr.splitlines()
    as_json = invoke("crash", "--protocol", "consumer", "-o", "json")
    assert as_json.exit_code == 3
    doc = json.loads(as_json.stdout)       # stdout stays one JSON document; the warning is on stderr
    assert [m["member"] for m in doc["never_rejoined"]] == ["c0"]
    assert "never rejoined: c0" in as_json.stderr


def test_compare_exits_3_when_any_variant_lost_a_member():
    result = invoke("crash", "--compare", "protocol", "-o", "table")
    assert result.exit_code == 3
    assert table_row(result.stdout, "never rejoined") == "- c0 (UNRELEASED_INSTANCE_ID)"
    assert "kgroup simulate: warning: consumer: never rejoined: c0, fatal UNRELEASED_INSTANCE_ID" in result.stderr


def test_a_static_member_restarted_after_its_session_expired_rejoins():
    """The advice holds: wait out the session timeout and the restart is accepted."""
    r = run_scenario("crash", SimParams(protocol="consumer", membership="static", restart_ms=50_000))
    assert r.never_rejoined == [] and r.errors == [] and (r.members_start, r.members_end) == (3, 3)
    assert invoke("crash", "--protocol", "consumer", "--restart-ms", "50000", "-o", "json").exit_code == 0


def _combinations():
    """Every scenario under each protocol and membership it takes (once where it sets them itself)."""
    for scenario in SCENARIOS:
        options = SCENARIO_OPTIONS[scenario]
        protocols = ("classic", "consumer") if "protocol" in options else ("classic",)
        memberships = options.get("membership", ("static",)) or ("static", "dynamic")
        for protocol in protocols:
            for membership in memberships:
                yield scenario, protocol, membership


def test_only_a_crashed_static_consumer_protocol_member_is_lost_in_any_scenario():
    """Every scenario, both protocols, both memberships: who ended fenced or failed for good. The
    duplicate-instance scenario's loser is no lost member: its instance id lives on in the other
    process (classic: the twin fences the first; consumer protocol: the twin is refused)."""
    lost = {}
    for scenario, protocol, membership in _combinations():
        r = run_scenario(scenario, SimParams(protocol=protocol, membership=membership))
        failed = [e for e in r.errors]
        if r.never_rejoined or failed:
            lost[(scenario, protocol, membership)] = ([m["member"] for m in r.never_rejoined], len(failed))
        assert r.members == r.members_end
    assert lost == {("crash", "consumer", "static"): (["c0"], 1),
                    ("duplicate-instance", "classic", "static"): ([], 1),
                    ("duplicate-instance", "consumer", "static"): ([], 1)}
    assert invoke("duplicate-instance", "-o", "json").exit_code == 0
