"""`kgroup simulate connect`: one run of simulated Connect workers, as the contract's JSON document.

    from kgroup.sim.connect.simulation import run
    from kgroup.sim.connect.params import resolve
    document = run(resolve("worker-joins"))

The workers and the clock are ``kgroup.sim.connect.cluster``; this module seeds them, plays the
case's script on their clock until the group settles (``script``), and reports what happened.
"""

from __future__ import annotations

from kgroup.assignors.connect_cooperative import NAME
from kgroup.coordinator.connect.protocol import connector_items, error_name, item_set, items_of
from kgroup.sim.connect.cluster import Cluster
from kgroup.sim.connect.migration import run_migration
from kgroup.sim.connect.params import ConnectParams
from kgroup.sim.connect.script import run_until_settled, schedule_events


def run(params: ConnectParams) -> dict:
    if params.case == "migration":
        return run_migration(params)
    return document(params, *simulate(params))


def simulate(params: ConnectParams) -> tuple:
    """The run itself: (the cluster after it, the group epoch it started at, when it settled)."""
    cluster = Cluster(dict(params.connectors), versions=dict(params.assignor_versions),
                      delay_ms=params.scheduled_rebalance_max_delay_ms,
                      session_timeout_ms=params.session_timeout_ms,
                      heartbeat_interval_ms=params.heartbeat_interval_ms,
                      rebalance_timeout_ms=params.rebalance_timeout_ms)
    return play(cluster, params, cluster.group().group_epoch)


def play(cluster, params: ConnectParams, start: int) -> tuple:
    """Seed ``cluster`` (the draft's or the classic protocol's) as ``params`` say, schedule the
    events, run until settled: (the cluster, the epoch or generation it started at, when it settled)."""
    if params.initial_epoch is not None:
        seed = params.seed()
        cluster.seed(params.initial_epoch, seed, params.initial_assigner or next(iter(seed)))
        start = params.initial_epoch
    last = schedule_events(cluster, params)
    return cluster, start, run_until_settled(cluster, params, last)


def _members(group, running: dict) -> dict:
    return {m.member_id: {"member_epoch": m.member_epoch, **item_set(running.get(m.member_id, ()))}
            for m in sorted(group.members, key=lambda m: m.member_id)}


def _unassigned(connectors: dict, target: dict) -> dict:
    return item_set(connector_items(connectors) - frozenset().union(frozenset(), *target.values()))


def document(params: ConnectParams, cluster: Cluster, start: int, settled_at: int | None) -> dict:
    group = cluster.group()
    installs = [s for s in cluster.steps if s[1] == "install"]
    final_target = {m: items_of(c) for m, c in sorted(group.target.items())}
    return {
        "scenario": params.case, "protocol": "connect", "assignor": NAME,
        "connectors": dict(params.connectors),
        "config": params.config(),
        "group_epoch_start": start, "group_epoch_end": group.group_epoch,
        "assignment_epoch_end": group.assignment_epoch,
        "rebalances": group.group_epoch - start, "ended_at_ms": cluster.now, "settled_at_ms": settled_at,
        "steps": [{"at_ms": at, "event": event, "worker": worker, "group_epoch": g.group_epoch,
                   "assignment_epoch": g.assignment_epoch, "members": _members(g, running)}
                  for at, event, worker, g, running in cluster.steps],
        "targets": [{"at_ms": at, "assignment_epoch": epoch, "assigner": assigner,
                     "version": cluster.workers[assigner].versions[1], "error": None,
                     "members": {m: item_set(items) for m, items in sorted(target.items())},
                     "unassigned": _unassigned(step[3].connectors, target)}
                    for (at, epoch, assigner, target), step in zip(cluster.targets, installs)],
        "revoked": [{"at_ms": at, "worker": w, **item_set(items), "cause": cause}
                    for at, w, items, cause in cluster.revoked],
        "assigned": [{"at_ms": at, "worker": w, **item_set(items)} for at, w, items in cluster.assigned],
        "errors": [{"at_ms": at, "worker": w, "api": api, "error": error_name(code)}
                   for at, w, api, code in cluster.errors],
        "final": {"group_epoch": group.group_epoch, "assignment_epoch": group.assignment_epoch,
                  "members": _members(group, {n: w.running for n, w in cluster.workers.items()}),
                  "target": {m: item_set(items) for m, items in final_target.items()},
                  "unassigned": _unassigned(group.connectors, final_target)},
    }
