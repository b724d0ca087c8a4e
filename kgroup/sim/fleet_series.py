"""What the aggregate view of `kgroup simulate --plot` draws, as data (no matplotlib here).

Above ``AGGREGATE_ABOVE_MEMBERS`` rows a row per member is a wall of thin bars nobody can read; the
aggregate view shows the fleet instead, each series a step function of virtual time:

* partitions without an owner: the ledger's ``SimResult.unowned_steps``, as recorded;
* partitions owned but still restoring their state: ``SimResult.restoring_steps`` (empty when the run
  did not model restoring; then it is not drawn);
* members down: from the event log, a member is down from its "stop", "crash", "fenced" or "failed"
  until its next "start" (a member a fatal error stopped for good stays down to the end);
* rebalances: the times a classic rebalance began or a consumer group's epoch was bumped.

Every function here is one pass over what it reads (the log of a 200-member dynamic bounce holds a
quarter of a million events), so a fleet's plot costs no more than its run's length.
"""

from __future__ import annotations

from dataclasses import dataclass

AGGREGATE_ABOVE_MEMBERS = 50      # more rows than this: the aggregate view (--help, man page, docs say so)
DOWN_EVENTS = ("stop", "crash", "fenced", "failed")
UP_EVENTS = ("start",)


@dataclass(frozen=True)
class FleetSeries:
    """One run's aggregate view. The step series are ``[(t_ms, value), ...]``: the value holds from
    its time to the next point's (the last one to ``end_ms``), ``t_ms`` from the scenario's start,
    no two points at one time nor two in a row with one value."""
    unowned: list            # partitions without an owner
    restoring: list          # partitions owned but still restoring state ([] when not modelled)
    down: list               # members down
    rebalances: list         # (kind, t_ms): "classic" rebalance begins, "consumer" group-epoch bump
    duration_ms: int         # the run's (the group settled)
    partitions: int          # of the subscription (the partition axis' scale)

    @property
    def end_ms(self) -> int:
        """Where the time axis ends: the run's end, or later while partitions were still restoring
        (a restore goes on after the group settled)."""
        return max([self.duration_ms] + [series[-1][0] for series in (self.unowned, self.restoring, self.down)
                                         if series])


def uses_aggregate(rows_per_result) -> bool:
    """The aggregate view for every panel once any panel would have more than
    AGGREGATE_ABOVE_MEMBERS rows (the panels of a --compare read alike)."""
    return any(rows > AGGREGATE_ABOVE_MEMBERS for rows in rows_per_result)


def fleet_series(result) -> FleetSeries:
    """The series the aggregate view draws for ``result`` (a ``SimResult``)."""
    return FleetSeries(unowned=steps(result.unowned_steps), restoring=steps(result.restoring_steps),
                       down=members_down(result.events), rebalances=rebalance_marks(result),
                       duration_ms=result.duration_ms, partitions=result.partitions)


def steps(points) -> list:
    """``points`` (time-ordered ``(t_ms, value)``) as a step series: at one time the last value wins,
    and a point that repeats the value before it is dropped."""
    out: list = []
    for t, value in points:
        if out and out[-1][0] == t:
            out.pop()
        if not out or out[-1][1] != value:
            out.append((t, value))
    return out


def members_down(events) -> list:
    """Members down over time, from the event log (``EventLog``): from 0 at the start, up at a
    member's stop, crash, fence or fatal failure, down again at its next start."""
    down: set = set()
    points = [(0, 0)]
    for event in events.of_kind(*DOWN_EVENTS, *UP_EVENTS):
        member = event.get("member")
        if event["event"] in UP_EVENTS:
            down.discard(member)
        else:
            down.add(member)
        points.append((event["t_ms"], len(down)))
    return steps(points)


def rebalance_marks(result) -> list:
    """(kind, t_ms) of each rebalance: "classic" where one began (entered PreparingRebalance),
    "consumer" where a consumer group's epoch was bumped; a protocol roll has both, each from the
    event log (whichever the group was then)."""
    if result.migration is not None:
        return mixed_rebalances(result)
    kind = "consumer" if result.protocol == "consumer" else "classic"
    return [(kind, t) for t in result.rebalance_times]


def mixed_rebalances(result) -> list:
    """(kind, t_ms): classic rebalances and group-epoch bumps, whichever the group was then."""
    out = []
    for event in result.events.of_kind("group-epoch", "group-state"):
        if event["event"] == "group-epoch":
            out.append(("consumer", event["t_ms"]))
        elif event.get("state") == "PreparingRebalance":
            out.append(("classic", event["t_ms"]))
    return out
