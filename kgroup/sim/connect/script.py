"""A `simulate connect` case's script on a cluster's clock: its workers join at 0, its scripted
worker and connector actions are scheduled in command-line order at equal times, and the run goes
on until the group settles (or ``until_ms``). Any cluster with at/run/next_time/settled: the draft's
workers (``cluster``), the classic ones (``classic``), or both rolling between the
protocols (``migration``).
"""

from __future__ import annotations

from kgroup.sim.connect.cluster import Cluster
from kgroup.sim.connect.params import ConnectParams

# scripted connector action -> step event
CONNECTOR_EVENTS = {"add-connector": "connector-added", "remove-connector": "connector-removed",
                    "set-tasks": "tasks-changed"}


def schedule_events(cluster: Cluster, params: ConnectParams) -> int:
    """Scripted events on the cluster's clock, in command-line order at equal times; the last time."""
    events = [(0, "join", (w,)) for w in params.workers] + list(params.events)
    connectors = dict(params.connectors)
    for ms, action, args in sorted(events, key=lambda e: e[0]):
        if action in CONNECTOR_EVENTS:
            connectors = dict(connectors)
            if action == "remove-connector":
                connectors.pop(args[0], None)
            else:
                connectors[args[0]] = int(args[1])
            cluster.at(ms, "connectors", None, connectors, CONNECTOR_EVENTS[action])
        else:
            cluster.at(ms, action, args[0])
    return max((ms for ms, _, _ in events), default=0)


def run_until_settled(cluster, params: ConnectParams, last: int) -> int | None:
    """Run past the last event until ``cluster.settled()`` (or to ``until_ms``); when it settled for good.
    Any cluster with at/run/next_time/settled: the draft's workers or the classic ones."""
    limit = params.until_ms if params.until_ms is not None else (
        last + params.scheduled_rebalance_max_delay_ms + params.rebalance_timeout_ms
        + 10 * params.session_timeout_ms)
    cluster.run(min(last, limit))
    settled_at = None
    while True:
        if cluster.settled():
            settled_at = cluster.now if settled_at is None else settled_at
            if params.until_ms is None:
                break
        else:
            settled_at = None
        t = cluster.next_time()
        if t is None or t > limit:
            break
        cluster.run(t)
    if params.until_ms is not None:
        cluster.run(params.until_ms)
    return settled_at
