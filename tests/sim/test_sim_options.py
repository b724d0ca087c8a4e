"""`kgroup simulate` rejects options its scenario does not take (one table, kgroup/sim/scenario_options)."""

import click
import pytest
from click.testing import CliRunner

from kgroup.commands.cli import cli
from kgroup.commands.simulate import SCENARIOS, simulate
from kgroup.sim.model import COMPARE
from kgroup.sim.scenario_options import COMMON, SCENARIO_OPTIONS, inapplicable


def invoke(*args):
    return CliRunner().invoke(cli, ["simulate", *args])


@pytest.mark.parametrize("args, message", [
    (["rolling-bounce", "--remove-members"],
     "--remove-members does not apply to rolling-bounce (it applies to scale-down)"),
    (["duplicate-instance", "--membership", "dynamic"],
     "--membership dynamic does not apply to duplicate-instance (it takes static)"),
    (["scale-up", "--restart-ms", "5"], "--restart-ms does not apply to scale-up (it applies to rolling-bounce, "),
    (["upgrade", "--membership", "static"], "--membership does not apply to upgrade (it applies to "),
    (["upgrade-protocol", "--protocol", "consumer"], "--protocol does not apply to upgrade-protocol"),
    (["rolling-bounce", "--migration-policy", "disabled"], "--migration-policy does not apply to rolling-bounce"),
    (["scale-up", "--order", "reverse"], "--order does not apply to scale-up"),
    (["leader-bounce", "--count", "2"], "--count does not apply to leader-bounce (it applies to crash, scale-down, "),
    (["crash", "--compare", "removal"], "--compare removal does not apply to crash (it takes membership or "),
    (["duplicate-instance", "--compare", "membership"], "--compare membership does not apply to duplicate-instance"),
    # an option only the other group protocol's consumers use
    (["rolling-bounce", "--protocol", "consumer", "--assignor", "sticky"],
     "--assignor does not apply with --protocol consumer (a consumer-protocol consumer has no "
     "partition.assignment.strategy"),
    (["rolling-bounce", "--compare", "assignor", "--protocol", "consumer", "--assignor", "sticky"],
     "--assignor does not apply with --protocol consumer"),
    (["crash", "--protocol", "consumer", "--sort-by", "member-id"], "--sort-by does not apply with --protocol consumer"),
    (["scale-up", "--protocol", "consumer", "--initial-rebalance-delay-ms", "0"],
     "--initial-rebalance-delay-ms does not apply with --protocol consumer"),
    (["rolling-bounce", "--server-assignor", "range"], "--server-assignor does not apply with --protocol classic"),
    (["upgrade", "--server-assignor", "range"], "--server-assignor does not apply with --protocol classic"),
    # dynamic members leave on their own: nothing to remove
    (["scale-down", "--membership", "dynamic", "--remove-members"],
     "--remove-members does not apply with --membership dynamic"),
    (["scale-down", "--membership", "dynamic", "--compare", "removal"],
     "--compare removal does not apply with --membership dynamic"),
])
def test_an_option_the_scenario_ignores_is_a_one_line_usage_error(args, message):
    result = invoke(*args, "-o", "json")
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.splitlines() == [result.stderr.strip()]
    assert result.stderr.startswith(f"kgroup simulate: {message}"), result.stderr


def test_options_that_apply_still_run():
    for args in (["scale-down", "--count", "1", "--remove-members"], ["duplicate-instance", "--membership", "static"],
                 ["crash", "--count", "1", "--concurrency", "1", "--restart-ms", "1000"],
                 ["downgrade-protocol", "--migration-policy", "bidirectional", "--order", "reverse"],
                 # both protocols' consumers run: each protocol's assignor applies
                 ["rolling-bounce", "--compare", "protocol", "--assignor", "sticky", "--server-assignor", "range"],
                 ["upgrade-protocol", "--assignor", "sticky", "--server-assignor", "range", "--sort-by", "member-id"],
                 ["rolling-bounce", "--protocol", "consumer", "--server-assignor", "range"],
                 ["scale-down", "--compare", "membership", "--remove-members"]):
        result = invoke(*args, "--members", "2", "--topic", "t:2", "-o", "json")
        assert result.exit_code == 0, (args, result.output)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_scenario_runs_with_its_defaults(scenario):
    assert inapplicable(scenario, {}, {}) is None
    result = invoke(scenario, "--members", "2", "--topic", "t:2", "-o", "json")
    assert result.exit_code == 0, result.output


def test_the_table_covers_every_option_and_scenario():
    options = {p.name for p in simulate.params if isinstance(p, click.Option)} - {"help"}
    named = COMMON | {name for row in SCENARIO_OPTIONS.values() for name in row}
    assert options - named == set(), "a simulate option is in neither COMMON nor a scenario's row"
    assert named - options == set()
    assert sorted(SCENARIO_OPTIONS) == sorted(SCENARIOS)
    choices = {p.name: p.type.choices for p in simulate.params if isinstance(p.type, click.Choice)}
    choices["compare"] = COMPARE             # a free-form value: concurrency=1,5,10
    for row in SCENARIO_OPTIONS.values():
        for name, allowed in row.items():
            assert allowed is None or set(allowed) <= set(choices[name]), (name, allowed)
