"""`simulate connect --compare protocol`: Connect's classic eager and incremental cooperative protocols
on the classic coordinator beside the draft's, on the same events; their assignors."""

import json

import pytest
from click.testing import CliRunner

from kgroup.assignors.connect_classic import COOPERATIVE, EAGER, cooperative_round, eager_assignment
from kgroup.assignors.connect_cooperative import IncrementalCooperativeAssignor
from kgroup.commands.cli import cli
from kgroup.coordinator.connect.protocol import TaskId, connector_items
from kgroup.sim.connect.compare import CLASSIC_COOPERATIVE, CLASSIC_EAGER, DRAFT, run_classic, run_compare
from kgroup.sim.connect.params import CASES, resolve

A1, A2, B1 = TaskId("A", 1), TaskId("A", 2), TaskId("B", 1)


def test_eager_deals_connectors_then_tasks_round_robin_with_one_iterator():
    # Connect's EagerAssignor: A->W1, B->W2, then A-1->W1, A-2->W2, B-1->W1
    assert eager_assignment(["W2", "W1"], {"A": 2, "B": 1}) == {
        "W1": frozenset({"A", A1, B1}), "W2": frozenset({"B", A2})}


def test_cooperative_round_revokes_now_and_assigns_the_moved_items_next_round():
    assignor = IncrementalCooperativeAssignor()
    everything = connector_items({"A": 2, "B": 1})
    first = cooperative_round(assignor, {"W1": everything, "W2": frozenset()}, {"A": 2, "B": 1}, 0)
    assert first.revoked == {"W1": frozenset({"B", B1}), "W2": frozenset()}
    assert first.assigned == {"W1": frozenset(), "W2": frozenset()}     # B, B-1 still run on W1
    assert first.delay_ms == 0
    second = cooperative_round(assignor, {"W1": frozenset({"A", A1, A2}), "W2": frozenset()},
                               {"A": 2, "B": 1}, 10)
    assert second.revoked == {"W1": frozenset(), "W2": frozenset()}
    assert second.assigned == {"W1": frozenset(), "W2": frozenset({"B", B1})}


def test_cooperative_round_holds_a_departed_workers_items_for_the_delay():
    assignor = IncrementalCooperativeAssignor(delay_ms=300_000)
    assignor.remember({"W1": {"A", A1}, "W2": {"B", B1}, "W3": {A2}})
    held = cooperative_round(assignor, {"W1": frozenset({"A", A1}), "W3": frozenset({A2})},
                             {"A": 2, "B": 1}, 12_000)
    assert held.delay_ms == 300_000 and not any(held.assigned.values()) and not any(held.revoked.values())
    after = cooperative_round(assignor, {"W1": frozenset({"A", A1}), "W3": frozenset({A2})},
                              {"A": 2, "B": 1}, 312_000)
    assert after.delay_ms == 0
    assert after.assigned["W1"] | after.assigned["W3"] == {"B", B1}


def test_worker_joins_compared():
    compare = run_compare(resolve("worker-joins"))["compare"]
    figures = {label: (f["rebalances"], f["tasks_stopped"], f["connectors_stopped"],
                       f["task_seconds_without_worker"], f["stable_at_ms"])
               for label, f in compare["protocols"].items()}
    assert figures == {
        # the classic group forms after group.initial.rebalance.delay.ms (3 s); eager stops everything
        # when W2 joins, incremental cooperative revokes B, B-1 and moves them in a second rebalance
        CLASSIC_EAGER: (2, 3, 2, 9.0, 21_000),
        CLASSIC_COOPERATIVE: (3, 1, 1, 12.0, 24_000),
        DRAFT: (2, 1, 1, 11.0, 26_000)}
    assert compare["horizon_ms"] == 26_000


def test_worker_leaves_compared():
    protocols = run_compare(resolve("worker-leaves"))["compare"]["protocols"]
    eager, cooperative, draft = (protocols[p] for p in (CLASSIC_EAGER, CLASSIC_COOPERATIVE, DRAFT))
    # eager reassigns at the first rebalance after W2's session expired (12 s), stopping the others
    assert (eager["rebalances"], eager["tasks_stopped"], eager["stable_at_ms"]) == (1, 2, 12_000)
    # both incremental cooperative protocols hold B, B-1 for scheduled.rebalance.max.delay.ms
    assert (cooperative["rebalances"], cooperative["tasks_stopped"], cooperative["stable_at_ms"]) == (2, 0, 312_000)
    assert (draft["rebalances"], draft["tasks_stopped"], draft["stable_at_ms"]) == (2, 0, 315_000)
    assert cooperative["task_seconds_without_worker"] == 311.0 and draft["task_seconds_without_worker"] == 314.0


@pytest.mark.parametrize("case", [c for c in CASES if c not in ("custom", "migration")])
@pytest.mark.parametrize("protocol", [EAGER, COOPERATIVE])
def test_every_preset_settles_with_every_item_run_once_under_the_classic_protocols(case, protocol):
    params = resolve(case)
    cluster, _, settled_at = run_classic(params, protocol)
    assert settled_at is not None
    running = [i for w in cluster.workers.values() if w.state == "stable" for i in w.running]
    assert sorted(map(str, running)) == sorted(map(str, connector_items(cluster.connectors)))


def test_cli_compare_table_and_json():
    runner = CliRunner()
    table = runner.invoke(cli, ["simulate", "connect", "worker-joins", "--compare", "protocol", "-o", "table"])
    assert table.exit_code == 0, table.output
    assert "task-seconds without a worker" in table.output
    for label in (CLASSIC_EAGER, CLASSIC_COOPERATIVE, DRAFT):
        assert label in table.output
    result = runner.invoke(cli, ["simulate", "connect", "worker-joins", "--compare", "protocol", "-o", "json"])
    document = json.loads(result.output)
    assert set(document["compare"]["protocols"]) == {CLASSIC_EAGER, CLASSIC_COOPERATIVE, DRAFT}
    plain = json.loads(runner.invoke(cli, ["simulate", "connect", "worker-joins", "-o", "json"]).output)
    assert {k: v for k, v in document.items() if k != "compare"} == plain     # the draft's document unchanged
    bad = runner.invoke(cli, ["simulate", "connect", "worker-joins", "--compare", "speed"])
    assert bad.exit_code == 2


@pytest.mark.parametrize("protocol", [EAGER, COOPERATIVE])
def test_classic_member_ids_are_counted_so_a_run_is_repeatable(protocol):
    """The coordinator's member ids (client id + suffix) decide which member a classic group makes
    leader when its leader leaves (Kafka's members HashMap order): a random UUID suffix would make
    the same run name different leaders, so the simulation counts instead."""
    cluster, _, _ = run_classic(resolve("connector-change"), protocol)
    suffixes = sorted(w.member_id.rsplit("-", 1)[1] for w in cluster.workers.values() if w.member_id)
    assert suffixes and all(s.isdigit() and len(s) == 8 for s in suffixes), suffixes
    again, _, _ = run_classic(resolve("connector-change"), protocol)
    assert [w.member_id for w in cluster.workers.values()] == [w.member_id for w in again.workers.values()]
