"""`kgroup simulate upgrade-protocol` / `downgrade-protocol`: every process rolled between the classic
and the consumer protocol in one mixed group, the conversions the coordinator makes on the way, and the
migration policy that can forbid them."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from kgroup.commands.cli import cli
from kgroup.sim.model import ParameterError, ScenarioError, SimParams, variants
from kgroup.sim.protocol_roll import classic_rejoins
from kgroup.sim.scenarios import run_scenario


def roll(scenario, **params):
    return run_scenario(scenario, SimParams(**params))


def test_a_static_upgrade_converts_at_the_first_step_and_moves_nothing():
    result = roll("upgrade-protocol", members=3, membership="static")
    m = result.migration
    assert result.settled and result.errors == []
    assert result.protocol == "classic->consumer"
    assert (m["converted_at_step"], m["converted_back_at_step"], m["group_type_end"]) == (1, None, "consumer")
    # the first consumer-protocol join converts the group; as Kafka 4.4 converts it (the metadata
    # hash of its topics computed at once, KIP-1101) nothing moves the group epoch: the static
    # replacements change nothing the assignor sees
    assert m["group_epoch_bumps"] == 0 and m["classic_rebalances"] == 0 and result.rebalances == 0
    assert (result.generation_start, result.group_epoch_end) == (1, 1)
    assert result.partitions_moved == 0
    # each process's 3 partitions wait only for its own 10 s restart
    assert result.unowned_partition_seconds == 3 * 3 * 10.0
    # no epoch bump: the members still classic never rejoin
    assert m["classic_rejoins"] == {"c0": 0, "c1": 0, "c2": 0}
    assert [s["members"] for s in m["per_step"]] == [["c0"], ["c1"], ["c2"]]
    assert [s["group_epoch_bumps"] for s in m["per_step"]] == [0, 0, 0]


def test_a_static_downgrade_converts_back_at_the_last_step_without_a_rebalance():
    result = roll("downgrade-protocol", members=3, membership="static")
    m = result.migration
    assert result.settled and result.protocol == "consumer->classic"
    assert (m["converted_at_step"], m["converted_back_at_step"], m["group_type_end"]) == (None, 3, "classic")
    assert m["blocked"] is None
    # a classic static joiner replacing the last consumer-protocol member: no rebalance
    assert result.rebalances == 0 and result.partitions_moved == 0
    assert result.generation_end == result.group_epoch_start
    assert result.assignor == "range"


@pytest.mark.parametrize("scenario,step", [("upgrade-protocol", "converted_at_step"),
                                           ("downgrade-protocol", "converted_back_at_step")])
def test_a_dynamic_roll_settles_with_every_partition_owned(scenario, step):
    result = roll(scenario, members=4, membership="dynamic")
    m = result.migration
    assert result.settled and result.members == 4
    assert m[step] == (1 if scenario == "upgrade-protocol" else 4)
    assert m["group_epoch_bumps"] > 0 and result.partitions_moved > 0
    assert result.rebalances == m["group_epoch_bumps"] + m["classic_rebalances"]
    # the classic members still in the group see every bump the leaves and joins cause
    assert max(m["classic_rejoins"].values()) >= 3


def test_concurrency_and_order_shape_the_steps():
    result = roll("upgrade-protocol", members=4, concurrency=2, order="reverse")
    steps = result.migration["per_step"]
    assert result.migration["steps"] == 2 and [s["members"] for s in steps] == [["c3", "c2"], ["c1", "c0"]]
    assert result.migration["converted_at_step"] == 1 and result.settled


@pytest.mark.parametrize("scenario,membership", [("upgrade-protocol", "static"),
                                                 ("upgrade-protocol", "dynamic"),
                                                 ("downgrade-protocol", "dynamic")])
def test_coalesced_heartbeats_give_the_same_roll_as_wire_heartbeats(scenario, membership):
    coalesced = roll(scenario, members=3, membership=membership).as_dict()
    wire = roll(scenario, members=3, membership=membership, wire_heartbeats=True).as_dict()
    assert coalesced == wire


@pytest.mark.parametrize("policy", ["downgrade", "disabled"])
def test_a_policy_that_forbids_the_upgrade_stops_the_roll_with_a_message(policy):
    with pytest.raises(ScenarioError) as caught:
        roll("upgrade-protocol", members=3, migration_policy=policy)
    message = str(caught.value)
    assert message.startswith("step 1: c0: ConsumerGroupHeartbeat failed with GROUP_ID_NOT_FOUND")
    assert f"group.consumer.migration.policy={policy} does not allow the online upgrade" in message
    assert "0 of 3 processes switched" in message


@pytest.mark.parametrize("policy", ["upgrade", "disabled"])
def test_a_policy_that_forbids_the_downgrade_leaves_a_consumer_group_of_classic_members(policy):
    result = roll("downgrade-protocol", members=3, membership="dynamic", migration_policy=policy)
    m = result.migration
    assert result.settled and m["group_type_end"] == "consumer" and m["converted_back_at_step"] is None
    assert f"group.consumer.migration.policy={policy} does not allow the online downgrade" in m["blocked"]
    assert result.group_epoch_end is not None and result.generation_end is None


def test_the_allowing_policies_convert():
    assert roll("upgrade-protocol", migration_policy="upgrade").migration["converted_at_step"] == 1
    assert roll("downgrade-protocol", migration_policy="downgrade").migration["converted_back_at_step"] == 3


def test_compare_protocol_does_not_apply_to_a_protocol_roll():
    with pytest.raises(ParameterError):
        variants("upgrade-protocol", SimParams(), "protocol")
    assert len(variants("upgrade-protocol", SimParams(), "membership")) == 2


def test_classic_rejoins_count_joins_beyond_the_first_after_a_start_while_classic():
    events = [{"event": "protocol", "member": "a", "protocol": "classic"},
              {"event": "joined", "member": "a"},                       # a rejoin (started before)
              {"event": "protocol", "member": "b", "protocol": "consumer"},
              {"event": "joined", "member": "b"},                       # not classic
              {"event": "protocol", "member": "b", "protocol": "classic"},
              {"event": "start", "member": "b"},
              {"event": "joined", "member": "b"},                       # its first join
              {"event": "joined", "member": "b"}]
    assert classic_rejoins(events) == {"a": 1, "b": 1}


def test_the_cli_reports_the_mixed_phase():
    runner = CliRunner()
    table = runner.invoke(cli, ["simulate", "upgrade-protocol", "-o", "table"])
    assert table.exit_code == 0, table.output
    assert re.search(r"converted at step\s+1\b", table.output)
    assert "generation 1 -> group epoch 1" in table.output
    document = json.loads(runner.invoke(cli, ["simulate", "downgrade-protocol", "-o", "json"]).output)
    assert document["protocol"] == "consumer->classic"
    assert document["migration"]["converted_back_at_step"] == 3
    assert [e for e in document["events"] if e["event"] == "converted"] == [
        {"t_ms": 30000, "event": "converted", "to": "classic", "step": 3}]
    assert "migration" not in json.loads(runner.invoke(cli, ["simulate", "rolling-bounce", "-o", "json"]).output)


def test_the_cli_names_the_policy_that_forbids_the_upgrade():
    result = CliRunner().invoke(cli, ["simulate", "upgrade-protocol", "--migration-policy", "disabled"])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "group.consumer.migration.policy=disabled" in lines[0]
    assert "Traceback" not in result.output


def test_the_cli_says_when_the_downgrade_is_blocked():
    result = CliRunner().invoke(cli, ["simulate", "downgrade-protocol", "--migration-policy", "upgrade",
                                      "-o", "table"])
    assert result.exit_code == 0
    assert "does not allow the online downgrade" in result.output


def test_the_plot_shows_each_members_protocol(tmp_path):
    pytest.importorskip("matplotlib")
    from kgroup.sim.plot import _mixed_rebalances, plot_timeline

    result = roll("upgrade-protocol", members=4, membership="dynamic")
    kinds = {kind for kind, _ in _mixed_rebalances(result)}
    assert kinds == {"classic", "consumer"}      # classic rebalances beside group-epoch bumps
    target = tmp_path / "roll.png"
    plot_timeline([result], str(target))
    assert target.stat().st_size > 0


def test_a_classic_join_parked_when_the_group_converts_is_retried():
    """Restarts longer than the session: the classic group is rebalancing (an expired static member)
    when the first consumer-protocol join converts it, and the parked JoinGroups are answered
    REBALANCE_IN_PROGRESS. The classic consumers rejoin, as the Java client does, instead of failing."""
    result = roll("upgrade-protocol", members=3, session_timeout_ms=8000)
    assert result.settled and result.errors == []
    assert result.migration["classic_rebalances"] == 1 and result.migration["converted_at_step"] == 1


# ---- the subscription rules that bite ----------------------------------------------------------
def test_a_subscription_change_makes_the_static_downgrade_rebalance():
    """KAFKA-19546: the classic process replacing the last consumer-protocol member subscribes to
    one more topic, so the group goes back to classic with a rebalance (without it: none)."""
    plain = roll("downgrade-protocol", members=3).migration
    assert plain["downgrade_rebalanced"] is False and plain["notes"] == [] and plain["added_topic"] is None
    result = roll("downgrade-protocol", members=3, add_topic=("u", 3))
    m = result.migration
    assert result.settled and result.errors == [] and result.partitions == 12
    assert m["added_topic"] == {"topic": "u", "partitions": 3}
    assert m["converted_back_at_step"] == 3 and m["downgrade_rebalanced"] is True
    assert m["conversions"][-1]["rebalance"] is True and m["classic_rebalances"] == 1
    assert [s["classic_rebalances"] for s in m["per_step"]] == [0, 0, 1]
    assert m["notes"] == ["step 3: the classic process that replaced the last consumer-protocol member "
                          "subscribes to u too: the group went back to classic with a rebalance "
                          "(KAFKA-19546), every classic member rejoined"]
    # the added topic's partitions had no owner to move from: not counted as moved
    assert result.partitions_moved == sum(s["partitions_moved"] for s in m["per_step"])


def test_an_added_topic_gives_the_same_roll_with_wire_heartbeats():
    coalesced = roll("downgrade-protocol", members=3, add_topic=("u", 3)).as_dict()
    wire = roll("downgrade-protocol", members=3, add_topic=("u", 3), wire_heartbeats=True).as_dict()
    assert coalesced == wire


def test_regex_subscribers_keep_the_group_mixed_and_the_last_replacement_rebalances():
    """KAFKA-19720 then KAFKA-19546: every classic process replacing a regex subscriber changes the
    member's subscription (names, not the regex): the group epoch bumps while it stays a consumer
    group, and the last replacement converts it back with a rebalance."""
    result = roll("downgrade-protocol", members=3, topic_regex="t")
    m = result.migration
    assert result.settled and m["topic_regex"] == "t"
    assert [s["group_epoch_bumps"] for s in m["per_step"]] == [1, 1, 0]
    assert [s["group_type"] for s in m["per_step"]] == ["consumer", "consumer", "classic"]
    assert m["downgrade_rebalanced"] is True and len(m["notes"]) == 2
    assert "KAFKA-19720" in m["notes"][0] and "not by the regex" in m["notes"][1]
    upgrade = roll("upgrade-protocol", members=3, topic_regex="t")
    assert upgrade.settled and upgrade.partitions_moved == 0
    assert [s["group_epoch_bumps"] for s in upgrade.migration["per_step"]] == [1, 1, 1]


def test_a_policy_that_forbids_the_downgrade_reports_instead_of_stalling():
    result = roll("downgrade-protocol", members=3, topic_regex="t", migration_policy="upgrade")
    m = result.migration
    assert result.settled and m["group_type_end"] == "consumer" and m["downgrade_rebalanced"] is None
    assert "does not allow the online downgrade" in m["blocked"]


@pytest.mark.parametrize("scenario, params, message", [
    ("upgrade-protocol", {"add_topic": ("t", 3)}, "already subscribes to it"),
    ("upgrade-protocol", {"topic_regex": "x.*"}, "must match every --topic (it matches none of t)"),
    ("upgrade-protocol", {"topic_regex": "(t"}, "--topic-regex: SubscribedTopicRegex"),
    ("downgrade-protocol", {"topic_regex": "t", "add_topic": ("u", 1)}, "cannot be combined"),
])
def test_subscription_options_that_cannot_apply_are_usage_errors(scenario, params, message):
    with pytest.raises(ParameterError, match=message.replace("(", r"\(").replace(")", r"\)")):
        roll(scenario, **params)


def test_the_cli_reports_the_rebalancing_downgrade():
    result = CliRunner().invoke(cli, ["simulate", "downgrade-protocol", "--add-topic", "u:3", "-o", "table"])
    assert result.exit_code == 0, result.output
    assert re.search(r"downgrade rebalanced\s+yes\b", result.output)
    assert "subscribes to u too: the group went back to classic with a rebalance" in result.output
    document = json.loads(CliRunner().invoke(cli, ["simulate", "downgrade-protocol", "--topic-regex", "t",
                                                   "-o", "json"]).output)
    assert document["migration"]["downgrade_rebalanced"] is True and document["migration"]["topic_regex"] == "t"
    bad = CliRunner().invoke(cli, ["simulate", "rolling-bounce", "--add-topic", "u:3"])
    assert bad.exit_code == 2
    assert "--add-topic does not apply to rolling-bounce (it applies to upgrade-protocol, downgrade-protocol)" \
        in bad.output
