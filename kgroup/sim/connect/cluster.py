"""A Connect worker cluster driven against the embedded coordinator on virtual time.

The core of `kgroup simulate connect` (``kgroup.sim.connect.simulation``) and of the case-study tests.

Workers heartbeat on fixed slots (join time + k x interval), once more right after a revocation and
right after a Reason change; the assigner runs Prepare, the incremental cooperative assignor and
Install within the heartbeat that told it to. At equal times coordinator timers fire first, then
scripted events in order, then heartbeats by worker name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kgroup.assignors.connect_cooperative import NAME, IncrementalCooperativeAssignor, assign_prepared
from kgroup.coordinator import GroupCoordinator
from kgroup.coordinator.connect.protocol import (
    COMPUTE_ASSIGNMENT, FENCED_MEMBER_EPOCH, GROUP_ID_NOT_FOUND, UNKNOWN_MEMBER_ID, Assignor,
    ConnectGroupHeartbeatRequest, ConnectGroupInstallAssignmentRequest, ConnectGroupPrepareAssignmentRequest,
    ConnectGroupSetConnectors, InstallMember, connectors_and_tasks, items_of)

GROUP = "cc"
API_HEARTBEAT = "ConnectGroupHeartbeat"


def due_times(clock, until: int):
    """``clock.next_time()`` while it is due by ``until``: the clock acts at each before the next is read."""
    while True:
        t = clock.next_time()
        if t is None or t > until:
            return
        yield t


@dataclass
class Worker:
    name: str
    versions: tuple = (0, 2)
    epoch: int = 0
    running: frozenset = frozenset()
    reason: int = 0
    state: str = "down"         # up, hung, down
    next_heartbeat: int = 0
    assignor: IncrementalCooperativeAssignor = field(default_factory=IncrementalCooperativeAssignor)


class Cluster:
    def __init__(self, connectors: dict, versions: dict | None = None, delay_ms: int = 300_000,
                 session_timeout_ms: int = 10_000, heartbeat_interval_ms: int = 3_000,
                 rebalance_timeout_ms: int = 60_000, coord: GroupCoordinator | None = None):
        """``coord``: a coordinator shared with classic workers (a migration); its group may be a classic
        one, which a worker's join takes over once it is empty (it sends the connector set first)."""
        self.migrating = coord is not None
        self.coord = coord or GroupCoordinator(config={"group.connect.session.timeout.ms": session_timeout_ms,
                                                       "group.connect.heartbeat.interval.ms": heartbeat_interval_ms})
        self.connectors = dict(connectors)
        if not self.migrating:
            self.coord.handle(ConnectGroupSetConnectors(GROUP, connectors))
        self.versions = versions or {}
        self.delay_ms = delay_ms
        self.interval = heartbeat_interval_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.steps: list = []            # (at, event, worker or None, group snapshot, {worker: running})
        self.assigned: list = []         # (at, worker, items)
        self.workers: dict[str, Worker] = {}
        self.targets: list = []          # (at, assignment epoch, assigner, {member: items})
        self.revoked: list = []          # (at, worker, items, cause)
        self.errors: list = []           # (at, worker, api, code)
        self.events: list = []           # (at, order, fn)
        self.now = 0

    # ---- setup ---------------------------------------------------------------------------
    def seed(self, epoch: int, assignment: dict, assigner: str) -> None:
        """A settled group at ``epoch`` (group = assignment = member epochs), built from its records."""
        from kgroup.coordinator.connect.group import ConnectMember
        from kgroup.coordinator.connect import records as rec
        records = [rec.connectors_record(GROUP, epoch, self.coord.get_group(GROUP).connectors)]
        items = {w: frozenset(i) for w, i in assignment.items()}
        for name in sorted(assignment):
            worker = self._worker(name)
            member = ConnectMember(name, member_epoch=epoch, assignors=(self._assignor(worker),), owned=items[name])
            records += [rec.member_record(GROUP, member, epoch), rec.current_assignment_record(GROUP, member)]
            worker.epoch, worker.running, worker.state = epoch, items[name], "up"
        records += [rec.target_record(GROUP, epoch, 0, items, {}), rec.group_epoch_record(GROUP, epoch)]
        rec.write(self.coord, records)
        self.coord.get_group(GROUP).assigner = assigner
        self.workers[assigner].assignor.remember(items)
        from kgroup.coordinator.connect.fencing import schedule_session
        for name in assignment:
            schedule_session(self.coord, GROUP, name)

    def _worker(self, name: str) -> Worker:
        if name not in self.workers:
            self.workers[name] = Worker(name, self.versions.get(name, (0, 2)),
                                        assignor=IncrementalCooperativeAssignor(self.delay_ms))
        return self.workers[name]

    def _assignor(self, worker: Worker) -> Assignor:
        low, high = worker.versions
        return Assignor(NAME, low, high, worker.reason, high, b"")

    def at(self, ms: int, action: str, name: str | None = None, *args) -> None:
        self.events.append((ms, len(self.events), action, name, args))

    # ---- one worker's requests -----------------------------------------------------------
    def heartbeat(self, worker: Worker, cause: str | None = None) -> None:
        """One ConnectGroupHeartbeat and what the worker does with the answer. ``cause`` (join,
        restart, resume, delay-expired) is the step that made the worker send it: recorded once
        the coordinator has handled the heartbeat, before the steps its answer leads to (the draft's
        §15.1: a step is recorded after the coordinator has handled what caused it)."""
        if self.migrating and worker.epoch == 0:
            classic = self.group() is None
            self.coord.handle(ConnectGroupSetConnectors(GROUP, self.connectors))
            if classic and self.group() is not None:
                self.step("converted", worker.name)
        request = ConnectGroupHeartbeatRequest(
            GROUP, worker.name, worker.epoch, None, self.rebalance_timeout_ms, None, [self._assignor(worker)],
            connectors_and_tasks(worker.running))
        epoch_before = self._group_epoch()
        response = self.coord.handle(request).response
        if cause is not None:
            self.step(cause, worker.name)
        if response.error_code in (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH):
            self.errors.append((self.now, worker.name, API_HEARTBEAT, response.error_code))
            self.step("error", worker.name)
            self._stop(worker, worker.running, "abandoned")
            worker.epoch = 0
            return self.heartbeat(worker)
        if response.error_code not in (0, COMPUTE_ASSIGNMENT):
            self.errors.append((self.now, worker.name, API_HEARTBEAT, response.error_code))
            if response.error_code != GROUP_ID_NOT_FOUND:
                worker.state = "down"   # refused (e.g. UNSUPPORTED_ASSIGNOR): the worker gives up
            self.step("error", worker.name)     # a classic group holds the id: it tries again
            return
        epoch_changed = worker.epoch != response.member_epoch
        worker.epoch = response.member_epoch
        again = False
        if response.assignment is not None:
            given = items_of(response.assignment.connectors_and_tasks)
            removed, added = worker.running - given, given - worker.running
            assert not (removed and added), "a response either revokes or assigns"
            if removed:
                self._stop(worker, removed, "revoked")
                again = True
            worker.running |= added
            if added:
                self.assigned.append((self.now, worker.name, frozenset(added)))
                self.step("assign", worker.name)
        if epoch_changed and response.assignment is None or self._group_epoch() != epoch_before:
            self.step("epoch", worker.name)
        if response.error_code == COMPUTE_ASSIGNMENT:
            self.step("compute-assignment", worker.name)
            self.compute(worker)
        self.check_no_item_twice()
        if again:
            self.heartbeat(worker)

    def _stop(self, worker: Worker, items, cause: str) -> None:
        worker.running = worker.running - frozenset(items)
        if items:
            self.revoked.append((self.now, worker.name, frozenset(items), cause))
            self.step("revoke" if cause == "revoked" else "abandon", worker.name)

    def compute(self, worker: Worker) -> None:
        prepared = self.coord.handle(ConnectGroupPrepareAssignmentRequest(GROUP, worker.name, worker.epoch)).response
        assert prepared.error_code == 0, prepared
        target = assign_prepared(worker.assignor, prepared, self.now)
        install = ConnectGroupInstallAssignmentRequest(
            GROUP, worker.name, worker.epoch, prepared.group_epoch, 0,
            [InstallMember(m, connectors_and_tasks(items), worker.versions[1], b"") for m, items in target.items()])
        code = self.coord.handle(install).response.error_code
        if code:
            self.errors.append((self.now, worker.name, "ConnectGroupInstallAssignment", code))
            self.step("install-rejected", worker.name)
            return
        self.targets.append((self.now, prepared.group_epoch, worker.name, target))
        self.step("install", worker.name)

    def check_no_item_twice(self) -> None:
        seen: dict = {}
        for worker in self.workers.values():
            for item in worker.running:
                assert item not in seen, f"{item} runs on {seen[item]} and {worker.name} at {self.now}"
                seen[item] = worker.name
        given: dict = {}
        group = self.coord.get_group(GROUP)
        for member in group.members.values() if group is not None and group.group_type == "connect" else ():
            for item in member.owned:
                assert item not in given, f"{item} given to {given[item]} and {member.member_id}"
                given[item] = member.member_id

    # ---- the clock -----------------------------------------------------------------------
    def next_time(self) -> int | None:
        times = [t for t in (self.coord.next_deadline_ms(), self.events[0][0] if self.events else None)
                 if t is not None]
        for w in self.workers.values():
            if w.state == "up":
                times.append(w.next_heartbeat)
                if w.assignor.reason_change_at is not None:
                    times.append(max(w.assignor.reason_change_at, self.now))
        return min(times, default=None)

    def run(self, until: int) -> None:
        self.events.sort()
        for t in due_times(self, until):
            self._advance(t)
            while self.events and self.events[0][0] == t:
                _, _, action, name, args = self.events.pop(0)
                self._event(action, name, args)
            for w in sorted(self.workers.values(), key=lambda w: w.name):
                if w.state != "up":
                    continue
                change = w.assignor.reason_change_at
                if change is not None and change <= t:
                    w.assignor.reason_change_at = None
                    w.reason += 1
                    self.heartbeat(w, cause="delay-expired")
                if w.next_heartbeat <= t and w.state == "up":
                    w.next_heartbeat = t + self.interval
                    self.heartbeat(w)
        self._advance(max(until, self.now))

    def _advance(self, t: int) -> None:
        """Coordinator timers up to ``t``; a member they remove is a session expiry or a fencing."""
        before = {m.member_id: m for m in self._members()}
        epoch = self._group_epoch()
        self.coord.advance(t - self.coord.now_ms)
        self.now = t
        after = {m.member_id for m in self._members()}
        for member_id in sorted(set(before) - after):
            self.step("fenced" if items_of(before[member_id].revoking) else "session-expired", member_id)
        if not set(before) - after and self._group_epoch() != epoch:
            self.step("rebalance-timeout")

    def _event(self, action: str, name: str | None, args) -> None:
        if action in ("join", "restart", "resume"):
            worker = self._worker(name)
            if action != "resume":
                worker.epoch, worker.running = 0, frozenset()
            worker.state, worker.next_heartbeat = "up", self.now + self.interval
            self.heartbeat(worker, cause=action)
        elif action == "leave":
            worker = self.workers[name]
            self._stop(worker, worker.running, "revoked")
            self.coord.handle(ConnectGroupHeartbeatRequest(GROUP, name, -1))
            worker.state, worker.epoch = "down", 0
            self.step(action, name)
        elif action == "crash":
            worker = self.workers[name]
            worker.state, worker.running = "down", frozenset()
            self.step(action, name)
        elif action == "hang":
            self.workers[name].state = "hung"
            self.step(action, name)
        elif action == "connectors":
            self.connectors = dict(args[0])
            self.coord.handle(ConnectGroupSetConnectors(GROUP, args[0]))
            self.step(args[1] if len(args) > 1 else "connectors-changed")

    # ---- the log -------------------------------------------------------------------------
    def step(self, event: str, worker: str | None = None) -> None:
        running = {name: w.running for name, w in self.workers.items()}
        self.steps.append((self.now, event, worker, self.group(), running))

    def _group_epoch(self) -> int | None:
        group = self.group()
        return None if group is None else group.group_epoch

    def _members(self) -> tuple:
        group = self.group()
        return () if group is None else group.members

    # ---- views ---------------------------------------------------------------------------
    def settled(self) -> bool:
        """No scripted event left, nothing held or to compute, every member at the group epoch
        running exactly its target."""
        group = self.group()
        if self.events or group is None or group.assignment_epoch != group.group_epoch:
            return False
        if any(w.assignor.lost or w.assignor.reason_change_at is not None for w in self.workers.values()):
            return False
        return all(m.member_epoch == group.group_epoch and items_of(m.owned) == items_of(m.target)
                   and items_of(m.owned) == self.workers[m.member_id].running for m in group.members)

    def group(self):
        return self.coord.connect_group(GROUP)

    def owned(self) -> dict:
        return {m.member_id: (m.member_epoch, items_of(m.owned)) for m in self.group().members}
