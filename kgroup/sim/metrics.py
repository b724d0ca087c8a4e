"""Who owns which partition over virtual time, and the figures a scenario reports.

Owners are consumer *names* (processes), not member ids: a process that restarts with a
new member id and gets its partitions back has moved nothing.

Two movement figures, for two questions. ``handoffs`` counts every change of a partition's owner
(the previous holder, even one that has stopped, to another process): each is state the new owner
restores, so range's reshuffles count every partition they move every time and sticky's only the
ones it must. ``moved`` (``partitions_ever_moved``) is the set of partitions that were at some point
with another process than their owner at the start, counted once even if they moved ten times.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .run_log import EventLog, Intervals, StepSeries

PREPARING = "PreparingRebalance"


@dataclass
class Ledger:
    partitions: list                      # every (topic, partition) of the subscription
    start_ms: int = 0
    owner: dict = field(default_factory=dict)          # tp -> consumer name
    start_owner: dict = field(default_factory=dict)
    moved: set = field(default_factory=set)
    unowned_ms: int = 0                                # partition-milliseconds without owner
    events: EventLog = field(default_factory=EventLog)
    intervals: Intervals = field(default_factory=Intervals)  # (name, start, end, partitions), ms from start
    rebalance_times: list = field(default_factory=list)
    stopped_since: dict = field(default_factory=dict)  # name -> time it stopped consuming
    longest_stop: dict = field(default_factory=dict)   # name -> longest stop (ms)
    # (t_ms from start, partitions without an owner) at every change of that count while recording:
    # the plots' aggregate view and the peak
    unowned_steps: StepSeries = field(default_factory=StepSeries)
    last_owner: dict = field(default_factory=dict)     # tp -> the process that held it last
    handoffs: int = 0
    handoffs_to: dict = field(default_factory=dict)    # name -> hand-offs it received
    unowned_since: dict = field(default_factory=dict)  # tp -> since when it has had no owner
    longest_wait_ms: int = 0                           # the longest time a partition had no owner
    restores: object = None                            # restore.Restores, when state is modelled
    least_session_left_ms: int | None = None   # the least session a static member had left at its stop
    safe_restart_ms: int | None = None    # the least session timeout minus heartbeat interval of those
    recording: bool = False
    _held_since: dict = field(default_factory=dict)    # name -> (time, count) of open interval
    _last_ms: int = 0

    # ---- recording window ---------------------------------------------------------------
    def begin(self, now_ms: int) -> None:
        """Start measuring: ownership now is the baseline."""
        self.recording = True
        self.start_ms = self._last_ms = now_ms
        self.start_owner = dict(self.owner)
        self.unowned_ms = 0
        self.moved.clear()
        self.events.clear()
        self.longest_stop.clear()
        self.stopped_since = {n: now_ms for n in self.stopped_since}
        self.intervals.clear()
        self._held_since = {n: (now_ms, c) for n, (_, c) in self._held_since.items()}
        self.unowned_steps = StepSeries(0, len(self.partitions) - len(self.owner))
        self.handoffs = self.longest_wait_ms = 0
        self.least_session_left_ms = self.safe_restart_ms = None
        self.handoffs_to.clear()
        self.unowned_since = {tp: now_ms for tp in self.partitions if tp not in self.owner}

    def add_partitions(self, now_ms: int, partitions) -> None:
        """Partitions that join the subscription (a topic the restarted processes also subscribe
        to): each counts as unowned from now until a process holds it."""
        self._tick(now_ms)
        self.partitions.extend(partitions)
        if self.recording:
            for tp in partitions:
                self.unowned_since.setdefault(tp, now_ms)
        self._unowned_changed(now_ms)

    def _tick(self, now_ms: int) -> None:
        if self.recording and now_ms > self._last_ms:
            self.unowned_ms += (len(self.partitions) - len(self.owner)) * (now_ms - self._last_ms)
            self._last_ms = now_ms

    def _unowned_changed(self, now_ms: int) -> None:
        if self.recording:
            self.unowned_steps.note(now_ms - self.start_ms, len(self.partitions) - len(self.owner))

    def event(self, now_ms: int, kind: str, member: str | None = None, **detail) -> None:
        if self.recording:
            self.events.append(now_ms - self.start_ms, kind, member, detail)

    def log(self, now_ms: int, kind: str, member: str | None, detail: dict) -> None:
        """``event`` with the detail as a dict: the simulated clients' call, some three a member at
        every rebalance, without packing their keywords twice."""
        if self.recording:
            self.events.append(now_ms - self.start_ms, kind, member, detail)

    def log_values(self, now_ms: int, shape: tuple, member: str | None, values) -> None:
        """``event`` with a kept shape, (kind, *detail names), and the detail values in its order
        (``EventLog.append_values``): the simulated clients' frequent events."""
        if self.recording:
            self.events.append_values(now_ms - self.start_ms, shape, member, values)

    # ---- ownership ----------------------------------------------------------------------
    def acquire(self, now_ms: int, name: str, partitions, holding: int) -> None:
        owner, last_owner = self.owner, self.last_owner
        if self.recording:
            if now_ms > self._last_ms:     # (a group's members mostly sync at one time: no tick)
                self._tick(now_ms)
            taken_from = {}
            start_owner, moved, unowned_since, restores = (self.start_owner, self.moved, self.unowned_since,
                                                           self.restores)
            handoffs, longest = 0, self.longest_wait_ms
            for tp in partitions:
                previous = owner.get(tp)
                if previous is not None and previous != name:
                    taken_from[previous] = taken_from.get(previous, 0) + 1
                owner[tp] = name
                if start_owner.get(tp) != name:
                    moved.add(tp)
                since = unowned_since.pop(tp, None)
                if since is not None and now_ms - since > longest:
                    longest = now_ms - since
                held = last_owner.get(tp)
                if held is not None and held != name:
                    handoffs += 1
                    if restores is not None:
                        restores.gain(now_ms - self.start_ms, name, tp)
                last_owner[tp] = name
            self.longest_wait_ms = longest
            if handoffs:
                self.handoffs += handoffs
                self.handoffs_to[name] = self.handoffs_to.get(name, 0) + handoffs
            for previous, count in taken_from.items():
                # The previous holder has not given these up yet (e.g. not yet fenced): both consume.
                self.event(now_ms, "double-owned", name, partitions=count, still_held_by=previous)
            self.unowned_steps.note(now_ms - self.start_ms, len(self.partitions) - len(owner))
        else:
            for tp in partitions:
                owner[tp] = name
                last_owner[tp] = name
        self._holding(now_ms, name, holding)

    def release(self, now_ms: int, name: str, partitions, holding: int) -> None:
        owner = self.owner
        if self.recording:
            if now_ms > self._last_ms:
                self._tick(now_ms)
            unowned_since, restores = self.unowned_since, self.restores
            for tp in partitions:
                if owner.get(tp) == name:
                    del owner[tp]
                    unowned_since[tp] = now_ms
                    if restores is not None:
                        restores.drop(now_ms - self.start_ms, name, tp)
            self.unowned_steps.note(now_ms - self.start_ms, len(self.partitions) - len(owner))
        else:
            for tp in partitions:
                if owner.get(tp) == name:
                    del owner[tp]
        self._holding(now_ms, name, holding)

    def _holding(self, now_ms, name, count) -> None:
        opened = self._held_since.pop(name, None)
        if opened is not None and opened[0] < now_ms and self.recording:
            self.intervals.append(name, opened[0] - self.start_ms, now_ms - self.start_ms,
                                  opened[1])
        if count:
            self._held_since[name] = (now_ms if opened is None or opened[0] < now_ms else opened[0],
                                      count)

    def consuming(self, now_ms: int, name: str, active: bool) -> None:
        """A process started or stopped consuming (stopped, rebalancing eagerly, fenced)."""
        if active:
            since = self.stopped_since.pop(name, None)
            if since is not None and self.recording:
                length = now_ms - max(since, self.start_ms)
                if length > self.longest_stop.get(name, -1):
                    self.longest_stop[name] = length
        else:
            self.stopped_since.setdefault(name, now_ms)

    # ---- group watch --------------------------------------------------------------------
    def transition(self, group, previous: str | None, now_ms: int) -> None:
        """The group changed state (called by the group itself, for every transition)."""
        if self.recording:
            if group.state == PREPARING:
                self.rebalance_times.append(now_ms - self.start_ms)
            self.event(now_ms, "group-state", state=group.state, generation=group.generation_id)

    def epoch_bump(self, group, now_ms: int) -> None:
        """A consumer group's epoch moved (its "rebalance": a new target assignment follows)."""
        if self.recording:
            self.rebalance_times.append(now_ms - self.start_ms)
            self.event(now_ms, "group-epoch", epoch=group.group_epoch, state=group.state)

    def session_left(self, left_ms: int, safe_ms: int) -> None:
        """A static member stopped with ``left_ms`` of its session left; any restart under ``safe_ms``
        (its session timeout minus one heartbeat interval) is within its session whatever its phase."""
        if self.recording:
            if self.least_session_left_ms is None or left_ms < self.least_session_left_ms:
                self.least_session_left_ms = left_ms
            if self.safe_restart_ms is None or safe_ms < self.safe_restart_ms:
                self.safe_restart_ms = safe_ms

    @property
    def peak_unowned(self) -> int:
        return self.unowned_steps.peak()

    def close(self, now_ms: int) -> None:
        self._tick(now_ms)
        for since in self.unowned_since.values():      # still without an owner at the end
            self.longest_wait_ms = max(self.longest_wait_ms, now_ms - since)
        if self.restores is not None:
            self.restores.finish()
        for name, (since, count) in list(self._held_since.items()):
            if since < now_ms:
                self.intervals.append(name, since - self.start_ms, now_ms - self.start_ms, count)
