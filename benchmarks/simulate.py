"""`kgroup simulate` speed: a 1,000-member, 3,000-partition static rolling bounce.

Two figures from the same run, on one core:
  simulation  run_scenario("rolling-bounce", ...) end to end: group formation, every
              restart, the consumers' protocol handling, assignor, ledger;
  baseline    the coordinator alone: the very requests (and heartbeat session refreshes)
              the simulation made, replayed at the same virtual times into a fresh
              GroupCoordinator, with nothing else around them.
The ratio says how much the simulation adds to the coordinator work it cannot avoid.
By default quiet heartbeats are coalesced (a member of a Stable group refreshes its session
once per session timeout until something changes; see kgroup/sim/engine.py), which gives the
same run as sending every heartbeat; --wire-heartbeats sends each one as a request.

    .venv/bin/python benchmarks/simulate.py [--members 1000] [--partitions 3000]
        [--restart-ms 5000] [--concurrency 1] [--membership static] [--wire-heartbeats]
"""

from __future__ import annotations

import argparse
import collections
import itertools
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from kgroup.coordinator import GroupCoordinator  # noqa: E402
from kgroup.sim import scenarios  # noqa: E402
from kgroup.sim.scenarios import SimParams, run_scenario  # noqa: E402


class RecordingCoordinator(GroupCoordinator):
    """Notes every request and session refresh with the virtual time it happened at."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = []

    def handle(self, request, client_id="client", client_host="/127.0.0.1"):
        self.calls.append((self.now_ms, request, client_id))
        return super().handle(request, client_id, client_host)

    def refresh_session(self, group, member_id):
        self.calls.append((self.now_ms, None, member_id))
        return super().refresh_session(group, member_id)

    def set_session_deadline(self, group_id, member_id, timeout_ms):
        """The simulation moving a stopped sleeper's session deadline back (coalesced heartbeats)."""
        self.calls.append((self.now_ms, timeout_ms, member_id))
        return super().set_session_deadline(group_id, member_id, timeout_ms)


def _apply(coord, request, who):
    if request is None:
        coord.refresh_session(coord.get_classic_group("g"), who)
    elif isinstance(request, int):
        coord.set_session_deadline("g", who, request)
    else:
        coord.handle(request, client_id=who)


def replay(calls, initial_delay_ms):
    counter = itertools.count()
    coord = GroupCoordinator(config={"group.initial.rebalance.delay.ms": initial_delay_ms},
                             uuid_source=lambda: f"{next(counter):08d}")
    start, cpu = time.perf_counter(), time.process_time()
    for at, request, who in calls:
        if at > coord.now_ms:
            coord.advance(at - coord.now_ms)
        _apply(coord, request, who)
    return time.perf_counter() - start, time.process_time() - cpu, coord


def requests_only(calls, initial_delay_ms):
    """CPU seconds of the JoinGroup/SyncGroup/... requests alone within a replay."""
    counter = itertools.count()
    coord = GroupCoordinator(config={"group.initial.rebalance.delay.ms": initial_delay_ms},
                             uuid_source=lambda: f"{next(counter):08d}")
    spent = 0.0
    clock = time.process_time
    for at, request, who in calls:
        if at > coord.now_ms:
            coord.advance(at - coord.now_ms)
        if request is None or isinstance(request, int):
            _apply(coord, request, who)
        else:
            t = clock()
            coord.handle(request, client_id=who)
            spent += clock() - t
    return spent


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=3000)
    parser.add_argument("--restart-ms", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--membership", choices=["static", "dynamic"], default="static")
    parser.add_argument("--assignor", default="range")
    parser.add_argument("--wire-heartbeats", action="store_true")
    args = parser.parse_args()

    params = SimParams(members=args.members, topics=(("t", args.partitions),),
                       membership=args.membership, assignor=args.assignor,
                       restart_ms=args.restart_ms, concurrency=args.concurrency,
                       wire_heartbeats=args.wire_heartbeats)
    recorders = []

    def recording(*a, **kw):
        coord = RecordingCoordinator(*a, **kw)
        recorders.append(coord)
        return coord

    scenarios.GroupCoordinator = recording
    try:
        start, cpu = time.perf_counter(), time.process_time()
        result = run_scenario("rolling-bounce", params)
        simulation_s = time.perf_counter() - start
        simulation_cpu = time.process_time() - cpu
    finally:
        scenarios.GroupCoordinator = GroupCoordinator
    calls = recorders[0].calls
    baseline_s, baseline_cpu, replayed = replay(calls, params.initial_rebalance_delay_ms)
    assert replayed.group("g").generation == result.generation_end, "replay diverged"

    kinds = collections.Counter("session refresh" if r is None
                                else "session deadline moved back" if isinstance(r, int)
                                else type(r).__name__ for _, r, _ in calls)
    virtual_s = recorders[0].now_ms / 1000
    print(f"rolling bounce: {args.members} {args.membership} members, {args.partitions} "
          f"partitions, {args.assignor}, restart {args.restart_ms} ms, concurrency "
          f"{args.concurrency}, {'wire' if args.wire_heartbeats else 'coalesced'} heartbeats")
    print(f"  virtual time {virtual_s:,.0f} s; rebalances {result.rebalances}; generation "
          f"{result.generation_start} -> {result.generation_end}; moved {result.partitions_moved}; "
          f"settled {result.settled}")
    print("  coordinator calls: " + ", ".join(f"{n} {k}" for k, n in kinds.most_common()))
    print(f"  simulation (end to end)       {simulation_s:8.2f} s wall {simulation_cpu:8.2f} s CPU")
    print(f"  baseline (coordinator alone)  {baseline_s:8.2f} s wall {baseline_cpu:8.2f} s CPU")
    print(f"    of which JoinGroup/SyncGroup/LeaveGroup requests  "
          f"{requests_only(calls, params.initial_rebalance_delay_ms):8.2f} s CPU")
    print(f"  ratio simulation / baseline   {simulation_s / baseline_s:8.2f}x wall "
          f"{simulation_cpu / baseline_cpu:5.2f}x CPU")
    print(f"  target <= 10 s wall: {'met' if simulation_s <= 10 else 'NOT met'}"
          f" (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
