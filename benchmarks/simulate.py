"""`kgroup simulate` speed: a 1,000-member, 3,000-partition static rolling bounce (or protocol roll).

--protocol consumer runs it with KIP-848 consumers: the group forms by 1,000 joins (each bumps the
group epoch and computes a new target assignment with the server-side assignor, as Kafka does), then
every member leaves with epoch -2 and rejoins with epoch 0 and its instance id.

--scenario upgrade-protocol rolls the same group from the classic to the consumer protocol, one
process at a time: 1,000 classic joins form it, the first consumer-protocol join converts it, and
each classic member rejoins the consumer group once (its epoch moved) before its own restart.

Two figures from the same process, on one core:
  simulation  run_scenario("rolling-bounce", ...) end to end, as `kgroup simulate` runs it
              (nothing recorded): group formation, every restart, the consumers' protocol
              handling, assignor, ledger;
  baseline    the coordinator alone: the very requests (and heartbeat session refreshes)
              the simulation made, noted in a second identical run (untimed) and replayed at
              the same virtual times into a fresh GroupCoordinator, with nothing else around
              them (the noted calls kept out of the garbage collector's sight).
The ratio says how much the simulation adds to the coordinator work it cannot avoid.
By default quiet heartbeats are coalesced (a member of a Stable group refreshes its session
once per session timeout until something changes; see kgroup/sim/engine.py), which gives the
same run as sending every heartbeat; --wire-heartbeats sends each one as a request.

--suite dynamic runs the dynamic-membership cases one after the other, each with its own
baseline: classic bounces with range (eager) and cooperative-sticky, a consumer-protocol bounce
and an upgrade-protocol roll. Their cost grows with the square of the members whatever the
simulation does: every classic rebalance takes a JoinGroup, a SyncGroup and the heartbeat that
finds it from each member, a dynamic bounce is two rebalances (three with cooperative-sticky),
and a consumer group's epoch bump takes a heartbeat from every member to reach its epoch.

--plot also times `--plot FILE.png` on the run's result, as the command does it after the
simulation: matplotlib's import (paid once per process: the first case of a suite), the figure
(above 50 members the aggregate view) and writing the file, and the ratio of the run with --plot to
the same run without it. --suite plot runs the case of issue 27 that way: 200 members, 600
partitions, restarts of 60 s, with range, cooperative-sticky and a consumer-protocol group.

    .venv/bin/python benchmarks/simulate.py [--members 1000] [--partitions 3000]
        [--restart-ms 5000] [--concurrency 1] [--membership static] [--wire-heartbeats]
        [--protocol classic|consumer] [--scenario rolling-bounce|upgrade-protocol]
        [--plot] [--suite dynamic|plot]
"""

from __future__ import annotations

import argparse
import collections
import gc
import os
import resource
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from kgroup.coordinator import GroupCoordinator  # noqa: E402
from kgroup.sim import consumer_client, scenarios  # noqa: E402
from kgroup.sim.engine import counted_ids  # noqa: E402
from kgroup.sim.model import SimParams  # noqa: E402
from kgroup.sim.scenarios import run_scenario  # noqa: E402


class RecordingCoordinator(GroupCoordinator):
    """Notes every request and session refresh with the virtual time it happened at."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = []
        self.init_config = kwargs.get("config")
        self.topics = {}

    def set_topics(self, topics):
        self.topics = topics
        return super().set_topics(topics)

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


class ConsumerSession:
    """A consumer-group member's session restarted as if at ``slot_ms`` (coalesced heartbeats)."""

    def __init__(self, slot_ms):
        self.slot_ms = slot_ms


def _apply(coord, request, who):
    if isinstance(request, ConsumerSession):
        consumer_client.session_from(coord, "g", who, request.slot_ms)
    elif request is None:
        coord.refresh_session(coord.get_classic_group("g"), who)
    elif isinstance(request, int):
        coord.set_session_deadline("g", who, request)
    else:
        coord.handle(request, client_id=who)


def fresh_coordinator(recorded):
    """A coordinator set up as the recorded one was (its settings and topic image)."""
    coord = GroupCoordinator(config=recorded.init_config, uuid_source=counted_ids())
    coord.set_topics(recorded.topics)
    return coord


def replay(calls, recorded):
    coord = fresh_coordinator(recorded)
    start, cpu = time.perf_counter(), time.process_time()
    for at, request, who in calls:
        if at > coord.now_ms:
            coord.advance(at - coord.now_ms)
        _apply(coord, request, who)
    return time.perf_counter() - start, time.process_time() - cpu, coord


def requests_only(calls, recorded):
    """CPU seconds of the JoinGroup/SyncGroup/... requests alone within a replay."""
    coord = fresh_coordinator(recorded)
    spent = 0.0
    clock = time.process_time
    for at, request, who in calls:
        if at > coord.now_ms:
            coord.advance(at - coord.now_ms)
        if request is None or isinstance(request, (int, ConsumerSession)):
            _apply(coord, request, who)
        else:
            t = clock()
            coord.handle(request, client_id=who)
            spent += clock() - t
    return spent


# --suite dynamic (see the module docstring)
DYNAMIC_SUITE = (
    dict(scenario="rolling-bounce", protocol="classic", assignor="range"),
    dict(scenario="rolling-bounce", protocol="classic", assignor="cooperative-sticky"),
    dict(scenario="rolling-bounce", protocol="consumer", assignor="range"),
    dict(scenario="upgrade-protocol", protocol="classic", assignor="range"),
)
# --suite plot: issue 27's fleet (see the module docstring)
PLOT_SUITE = (
    dict(protocol="classic", assignor="range"),
    dict(protocol="classic", assignor="cooperative-sticky"),
    dict(protocol="consumer", assignor="range"),
)
PLOT_FLEET = dict(scenario="rolling-bounce", members=200, partitions=600, restart_ms=60_000,
                  membership="static", concurrency=1, plot=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=3000)
    parser.add_argument("--restart-ms", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--membership", choices=["static", "dynamic"], default="static")
    parser.add_argument("--assignor", default="range")
    parser.add_argument("--wire-heartbeats", action="store_true")
    parser.add_argument("--protocol", choices=["classic", "consumer"], default="classic")
    parser.add_argument("--scenario", choices=["rolling-bounce", "upgrade-protocol"],
                        default="rolling-bounce")
    parser.add_argument("--plot", action="store_true",
                        help="also time --plot FILE.png on the result (import, figure, file)")
    parser.add_argument("--suite", choices=["dynamic", "plot"],
                        help="dynamic: run the dynamic-membership cases one after the other: classic "
                             "range and cooperative-sticky bounces, a consumer-protocol bounce, "
                             "an upgrade-protocol roll (--membership, --protocol, --assignor "
                             "and --scenario are theirs); plot: 200 members, 600 partitions, 60 s "
                             "restarts with --plot, range, cooperative-sticky and consumer protocol")
    args = parser.parse_args()
    if args.suite is None:
        bench(args)
        return
    cases = ([{"membership": "dynamic", **case} for case in DYNAMIC_SUITE] if args.suite == "dynamic"
             else [{**PLOT_FLEET, **case} for case in PLOT_SUITE])
    for case in cases:
        bench(argparse.Namespace(**{**vars(args), **case}))
        print()


def record_calls(scenario: str, params: SimParams) -> RecordingCoordinator:
    """The same simulation again (it is deterministic), its coordinator's calls noted for the
    baseline's replay: untimed."""
    recorders = []

    def recording(*a, **kw):
        coord = RecordingCoordinator(*a, **kw)
        recorders.append(coord)
        return coord

    def session_from(coordinator, group_id, member_id, slot_ms):
        coordinator.calls.append((coordinator.now_ms, ConsumerSession(slot_ms), member_id))
        return original_session_from(coordinator, group_id, member_id, slot_ms)

    original_session_from = consumer_client.session_from
    scenarios.GroupCoordinator = recording
    consumer_client.session_from = session_from
    try:
        run_scenario(scenario, params)
    finally:
        scenarios.GroupCoordinator = GroupCoordinator
        consumer_client.session_from = original_session_from
    return recorders[0]


def bench(args):
    """One case: the simulation end to end, then the coordinator alone on its recorded calls."""
    params = SimParams(members=args.members, topics=(("t", args.partitions),),
                       membership=args.membership, assignor=args.assignor,
                       restart_ms=args.restart_ms, concurrency=args.concurrency,
                       wire_heartbeats=args.wire_heartbeats, protocol=args.protocol)
    formation = []

    def warm_up(run, static):
        start = time.perf_counter()
        original_warm_up(run, static)
        formation.append(time.perf_counter() - start)

    original_warm_up = scenarios.Run.warm_up
    scenarios.Run.warm_up = warm_up
    try:
        # as `kgroup simulate` runs it: nothing recorded (recording holds every request, and the
        # collector walking them cost the run 13% with range and 70% with the consumer protocol)
        start, cpu = time.perf_counter(), time.process_time()
        result = run_scenario(args.scenario, params)
        simulation_s = time.perf_counter() - start
        simulation_cpu = time.process_time() - cpu
    finally:
        scenarios.Run.warm_up = original_warm_up
    plot_report = bench_plot(result, simulation_s) if args.plot else []
    recorded = record_calls(args.scenario, params)
    calls = recorded.calls
    gc.collect()
    gc.freeze()          # the recorded calls out of the collector's sight while the replays run
    try:
        baseline_s, baseline_cpu, replayed = replay(calls, recorded)
        requests_cpu = requests_only(calls, recorded)
    finally:
        gc.unfreeze()
    if result.group_epoch_end is not None:
        assert replayed.group("g").group_epoch == result.group_epoch_end, "replay diverged"
        start = (f"group epoch {result.group_epoch_start}" if result.generation_start is None
                 else f"generation {result.generation_start}")
        epochs = f"{start} -> group epoch {result.group_epoch_end}"
    else:
        assert replayed.group("g").generation == result.generation_end, "replay diverged"
        epochs = f"generation {result.generation_start} -> {result.generation_end}"

    kinds = collections.Counter("session refresh" if r is None or isinstance(r, ConsumerSession)
                                else "session deadline set" if isinstance(r, int)
                                else type(r).__name__ for _, r, _ in calls)
    virtual_s = recorded.now_ms / 1000
    assignor = result.assignor
    protocol = result.protocol if result.migration else f"{args.protocol}-protocol"
    print(f"{args.scenario}: {args.members} {args.membership} {protocol} members, "
          f"{args.partitions} partitions, {assignor}, restart {args.restart_ms} ms, concurrency "
          f"{args.concurrency}, {'wire' if args.wire_heartbeats else 'coalesced'} heartbeats")
    print(f"  virtual time {virtual_s:,.0f} s; rebalances {result.rebalances}; {epochs}; "
          f"moved {result.partitions_moved}; settled {result.settled}")
    if result.migration:
        migration = result.migration
        print(f"  converted at step {migration['converted_at_step']}; group-epoch bumps "
              f"{migration['group_epoch_bumps']}; classic rebalances {migration['classic_rebalances']}; "
              f"classic rejoins per member <= {max(migration['classic_rejoins'].values(), default=0)}")
    print("  coordinator calls: " + ", ".join(f"{n} {k}" for k, n in kinds.most_common()))
    print(f"  simulation (end to end)       {simulation_s:8.2f} s wall {simulation_cpu:8.2f} s CPU")
    print(f"    of which forming the group  {formation[0]:8.2f} s wall")
    print(f"  baseline (coordinator alone)  {baseline_s:8.2f} s wall {baseline_cpu:8.2f} s CPU")
    print(f"    of which requests (not session refreshes)  {requests_cpu:8.2f} s CPU")
    print(f"  ratio simulation / baseline   {simulation_s / baseline_s:8.2f}x wall "
          f"{simulation_cpu / baseline_cpu:5.2f}x CPU")
    print(f"  target <= 10 s wall: {'met' if simulation_s <= 10 else 'NOT met'}"
          f" (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    for line in plot_report:
        print(line)


def bench_plot(result, simulation_s: float) -> list:
    """`--plot FILE.png` on ``result`` as the command runs it (right after the simulation, before the
    baseline's replay: the memory peak is the run's), timed in its parts; the ratio is the run with
    --plot to the same run without (the simulation just measured). Returns the report's lines."""
    from kgroup.sim.plot import pyplot, save, timeline_figure

    # The recorded calls (millions of objects the command does not hold) out of the collector's
    # sight: a full collection walking them would be counted as the plot's (a second and more).
    gc.collect()
    gc.freeze()
    try:
        return _timed_plot(result, simulation_s, pyplot, timeline_figure, save)
    finally:
        gc.unfreeze()


def _timed_plot(result, simulation_s, pyplot, timeline_figure, save) -> list:
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    plt = pyplot("timeline.png")                         # matplotlib: imported once per process
    imported = time.perf_counter()
    fig = timeline_figure(plt, [result])
    view = "aggregate" if len(fig.axes) > 1 else "a row per member"
    drawn = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        save(plt, fig, os.path.join(folder, "timeline.png"))
    written = time.perf_counter()
    plot_s = written - start
    peak_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return [f"  --plot ({view} view)  {plot_s:8.2f} s wall: import {imported - start:.2f} s, figure "
            f"{drawn - imported:.2f} s, file {written - drawn:.2f} s; process peak RSS "
            f"{peak_after / 1024:.0f} MB, {(peak_after - peak_before) / 1024:+.0f} MB during the plot "
            f"(a suite's later cases: the earlier cases' peak may hide it)",
            f"  ratio with --plot / without {(simulation_s + plot_s) / simulation_s:8.2f}x wall; "
            f"target <= 10 s wall with --plot: {'met' if simulation_s + plot_s <= 10 else 'NOT met'}"]


if __name__ == "__main__":
    main()
