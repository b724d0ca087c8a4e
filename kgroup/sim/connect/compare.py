"""`simulate connect --compare protocol`: the same workers, connectors and events under Connect's
current protocols (classic eager, classic incremental cooperative) and the draft's.

Each run goes on until it settles (or to ``--until-ms``); the figures are read off each run's
timeline of who runs what, integrated to one common horizon (the latest end of the three runs, a
settled run staying as it ended):

* ``rebalances`` — classic: generations completed; the draft: group-epoch bumps;
* ``tasks_stopped`` / ``connectors_stopped`` — items a live worker stopped (revoked, or abandoned
  after losing its membership; a crashed worker's items are not counted: nobody stopped them);
* ``task_seconds_without_worker`` — the configured tasks that no worker ran, integrated over time;
* ``stable_at_ms`` — when the running assignment last changed (None if the run never settled).

The classic runs use Kafka's broker default ``group.initial.rebalance.delay.ms`` (3000): a classic
group formed from nothing waits for it, the draft's group does not.
"""

from __future__ import annotations

from kgroup.assignors.connect_classic import COOPERATIVE, EAGER
from kgroup.coordinator.connect.protocol import TaskId, connector_items
from kgroup.sim.connect.simulation import document, play, simulate
from kgroup.sim.connect.classic import ClassicCluster
from kgroup.sim.connect.params import ConnectParams

CLASSIC_EAGER, CLASSIC_COOPERATIVE, DRAFT = "classic-eager", "classic-incremental-cooperative", "connect"
PROTOCOLS = (CLASSIC_EAGER, CLASSIC_COOPERATIVE, DRAFT)


def run_compare(params: ConnectParams) -> dict:
    """The draft's document with a ``compare`` object beside it."""
    cluster, start, settled_at = simulate(params)
    doc = document(params, cluster, start, settled_at)
    initial = params.seed()
    runs = {DRAFT: (doc["rebalances"], settled_at, cluster.revoked, cluster.now,
                    [(at, group.connectors, running) for at, _, _, group, running in cluster.steps])}
    for label, protocol in ((CLASSIC_EAGER, EAGER), (CLASSIC_COOPERATIVE, COOPERATIVE)):
        classic, generation_start, classic_settled = run_classic(params, protocol)
        runs[label] = (classic.generation() - generation_start, classic_settled, classic.revoked, classic.now,
                       [(at, connectors, running) for at, _, _, connectors, running in classic.steps])
    horizon = max(r[3] for r in runs.values())
    doc["compare"] = {"horizon_ms": horizon, "protocols": {
        label: _figures(params.connectors, initial, horizon, *runs[label]) for label in PROTOCOLS}}
    return doc


def run_classic(params: ConnectParams, protocol: str) -> tuple:
    """(the classic cluster after the run, its generation at the start, when it settled)."""
    cluster = ClassicCluster(protocol, dict(params.connectors), delay_ms=params.scheduled_rebalance_max_delay_ms,
                             session_timeout_ms=params.session_timeout_ms,
                             heartbeat_interval_ms=params.heartbeat_interval_ms,
                             rebalance_timeout_ms=params.rebalance_timeout_ms)
    return play(cluster, params, 0)


def _figures(connectors: dict, initial: dict, horizon: int, rebalances: int, settled_at, revoked: list,
             ended_at: int, timeline: list) -> dict:
    timeline = [(0, connectors, initial)] + timeline
    unrun_ms, stable_at, previous = 0, 0, None
    for (at, configured, running), (until, _, _) in zip(timeline, timeline[1:] + [(horizon, None, None)]):
        tasks = {i for i in connector_items(configured) if isinstance(i, TaskId)}
        unrun_ms += (until - at) * len(tasks - frozenset().union(frozenset(), *running.values()))
        shape = {w: items for w, items in running.items() if items}
        if shape != previous:
            stable_at, previous = at, shape
    stopped = [i for _, _, items, _ in revoked for i in items]
    return {"rebalances": rebalances,
            "tasks_stopped": sum(isinstance(i, TaskId) for i in stopped),
            "connectors_stopped": sum(not isinstance(i, TaskId) for i in stopped),
            "task_seconds_without_worker": round(unrun_ms / 1000, 3),
            "stable_at_ms": stable_at if settled_at is not None else None,
            "settled_at_ms": settled_at, "ended_at_ms": ended_at}
