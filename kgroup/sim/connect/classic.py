"""Connect workers on today's classic protocol, driven against the embedded classic coordinator.

The other side of ``simulate connect --compare protocol``: the same workers, connectors and events
as ``cluster.Cluster`` (the draft's protocol), run the way Kafka Connect's
``WorkerCoordinator`` runs them now — JoinGroup with protocol type ``connect``, the leader worker
computing every assignment before its SyncGroup, heartbeats that discover rebalances — under either
``eager`` (every worker stops everything before it rejoins) or ``incremental-cooperative`` (KIP-415:
workers keep running, revoked items move in a second rebalance, a departed worker's items are held
for ``scheduled.rebalance.max.delay.ms`` and the workers rejoin when the delay is over). The
assignors are ``kgroup.assignors.connect_classic``. A change of the connector set makes every
running worker rejoin (Connect's herder requests a rebalance on a config-topic change). A worker
that lost its membership (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION) stops everything and rejoins.

Responses arrive as events at the current virtual time; at equal times the coordinator's timers
fire first, then scripted events in command-line order, then the workers' own events.
"""

from __future__ import annotations

import heapq
import json
from dataclasses import dataclass, field

from kafka.protocol.consumer.group import (HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest,
                                           SyncGroupRequest)

from kgroup.assignors.connect_classic import EAGER, PROTOCOL_NAMES, cooperative_round, eager_assignment
from kgroup.assignors.connect_cooperative import IncrementalCooperativeAssignor
from kgroup.coordinator import GroupCoordinator
from kgroup.coordinator.connect.protocol import TaskId, item_order
from kgroup.kafka_errors import (GROUP_ID_NOT_FOUND, MEMBER_ID_REQUIRED, NONE, REBALANCE_IN_PROGRESS,
                                 UNKNOWN_MEMBER_ID)
from kgroup.sim.connect.cluster import GROUP, due_times
from kgroup.sim.engine import counted_ids

PROTOCOL_TYPE = "connect"


def encode_items(items) -> list:
    return [[i.connector, i.task] if isinstance(i, TaskId) else i for i in sorted(items, key=item_order)]


def decode_items(values) -> frozenset:
    return frozenset(TaskId(*v) if isinstance(v, list) else v for v in values)


@dataclass
class ClassicWorker:
    name: str
    member_id: str = ""
    generation: int = -1
    running: frozenset = frozenset()
    state: str = "down"          # joining, syncing, stable, hung, down
    incarnation: int = 0         # bumped when the process stops answering: older replies are dropped
    beat: int = 0                # bumped to cancel the scheduled heartbeat
    rejoin_at: int | None = None  # a scheduled rebalance (the assignment's delay)
    assignor: IncrementalCooperativeAssignor = field(default_factory=IncrementalCooperativeAssignor)


class ClassicCluster:
    def __init__(self, protocol: str, connectors: dict, delay_ms: int = 300_000,
                 session_timeout_ms: int = 10_000, heartbeat_interval_ms: int = 3_000,
                 rebalance_timeout_ms: int = 60_000, coord: GroupCoordinator | None = None):
        """``coord``: a coordinator shared with new-protocol workers (a migration)."""
        self.protocol = protocol
        self.eager = protocol == EAGER
        self.coord = coord or GroupCoordinator(now_ms=0, uuid_source=counted_ids())
        self.connectors = dict(connectors)
        self.delay_ms, self.interval = delay_ms, heartbeat_interval_ms
        self.session_timeout_ms, self.rebalance_timeout_ms = session_timeout_ms, rebalance_timeout_ms
        self.workers: dict[str, ClassicWorker] = {}
        self.steps: list = []        # (at, event, worker or None, connectors, {worker: running})
        self.revoked: list = []      # (at, worker, items, cause)
        self.assigned: list = []     # (at, worker, items)
        self.errors: list = []       # (at, worker, api, code)
        self.events: list = []       # scripted: (at, order, fn)
        self._queue: list = []       # the workers' own: (at, order, fn)
        self._order = 0

    @property
    def now(self) -> int:
        """The coordinator's clock (shared with new-protocol workers in a migration)."""
        return self.coord.now_ms

    # ---- setup ---------------------------------------------------------------------------
    def seed(self, generation: int, assignment: dict, leader: str) -> None:
        """A Stable group at ``generation`` whose members run ``assignment``, from its GroupMetadata record."""
        from kgroup.coordinator.classic.group import STABLE, ClassicGroup, Member
        from kgroup.coordinator.classic.records import group_metadata_record
        group = ClassicGroup(GROUP)
        for name in [leader] + sorted(set(assignment) - {leader}):
            items = frozenset(assignment[name])
            worker = self._worker(name)
            worker.member_id, worker.generation, worker.running, worker.state = name, generation, items, "stable"
            group.add(Member(name, None, name, "/127.0.0.1", self.rebalance_timeout_ms, self.session_timeout_ms,
                             PROTOCOL_TYPE, [(PROTOCOL_NAMES[self.protocol], self._metadata(worker))],
                             self._assignment(items, (), 0)))
        group.protocol_type, group.protocol_name = PROTOCOL_TYPE, PROTOCOL_NAMES[self.protocol]
        group.generation_id, group.state = generation, STABLE
        self.coord = GroupCoordinator.from_records([group_metadata_record(group, cached=False)], now_ms=0)
        self.workers[leader].assignor.remember({n: frozenset(i) for n, i in assignment.items()})
        for name in assignment:
            self._schedule_heartbeat(self.workers[name])

    def _worker(self, name: str) -> ClassicWorker:
        if name not in self.workers:
            self.workers[name] = ClassicWorker(name, assignor=IncrementalCooperativeAssignor(self.delay_ms))
        return self.workers[name]

    def at(self, ms: int, action: str, name: str | None = None, *args) -> None:
        self._order += 1
        self.events.append((ms, self._order, lambda: self._event(action, name, args)))

    def _soon(self, ms: int, fn) -> None:
        self._order += 1
        heapq.heappush(self._queue, (max(ms, self.now), self._order, fn))

    # ---- the clock -----------------------------------------------------------------------
    def next_time(self) -> int | None:
        times = [self.coord.next_deadline_ms()] + [q[0][0] for q in (self.events, self._queue) if q]
        return min((t for t in times if t is not None), default=None)

    def run(self, until: int) -> None:
        self.events.sort()
        for t in due_times(self, until):
            self._advance(t)
            if self.events and self.events[0][0] <= t:
                self.events.pop(0)[2]()
            elif self._queue and self._queue[0][0] <= t:
                heapq.heappop(self._queue)[2]()
        self._advance(max(until, self.now))

    def _advance(self, t: int) -> None:
        self.coord.advance(t - self.coord.now_ms)

    def settled(self) -> bool:
        """No scripted event left, no scheduled rebalance, the group Stable with exactly the live workers."""
        group = self.coord.get_classic_group(GROUP)
        if self.events or group is None or group.state != "Stable":
            return False
        live = [w for w in self.workers.values() if w.state not in ("down", "hung")]
        if set(group.members) != {w.member_id for w in live}:
            return False        # a member whose process is gone: its session has yet to expire
        return all(w.state == "stable" and w.generation == group.generation_id and w.rejoin_at is None
                   for w in live)

    def generation(self) -> int:
        group = self.coord.get_classic_group(GROUP)
        return 0 if group is None else group.generation_id

    # ---- scripted events -----------------------------------------------------------------
    def _event(self, action: str, name: str | None, args) -> None:
        if action == "connectors":
            self.connectors = dict(args[0])
            self.step(args[1])
            for worker in sorted(self.workers.values(), key=lambda w: w.name):
                if worker.state in ("stable", "syncing"):
                    self._join(worker)
            return
        worker = self._worker(name)
        if action in ("join", "restart"):
            self._stopped(worker)
            worker.member_id, worker.generation, worker.running = "", -1, frozenset()
            self.step(action, name)
            self._join(worker)
        elif action == "leave":
            self._stop(worker, worker.running, "revoked")
            self.coord.handle(LeaveGroupRequest(version=5, group_id=GROUP, members=[
                LeaveGroupRequest.MemberIdentity(member_id=worker.member_id, group_instance_id=None,
                                                 reason="worker stopped")]), client_id=name)
            self._stopped(worker)
            self.step(action, name)
        elif action == "crash":
            self._stopped(worker)
            worker.running = frozenset()
            self.step(action, name)
        elif action == "hang":
            self._stopped(worker, "hung")
            self.step(action, name)
        elif action == "resume":
            worker.state, worker.incarnation = "stable", worker.incarnation + 1
            self.step(action, name)
            self._heartbeat(worker)

    def _stopped(self, worker: ClassicWorker, state: str = "down") -> None:
        worker.state, worker.incarnation, worker.beat, worker.rejoin_at = state, worker.incarnation + 1, \
            worker.beat + 1, None

    # ---- one worker's requests -----------------------------------------------------------
    def _send(self, worker: ClassicWorker, request, on_response) -> None:
        incarnation = worker.incarnation
        reply = self.coord.handle(request, client_id=worker.name)

        def deliver(done):
            self._soon(self.now, lambda: on_response(worker, done.response)
                       if worker.incarnation == incarnation else None)
        reply.add_done_callback(deliver)

    def _metadata(self, worker: ClassicWorker) -> bytes:
        """Connect's worker state: who it is and, under incremental cooperative, what it runs."""
        return json.dumps({"worker": worker.name,
                           "running": [] if self.eager else encode_items(worker.running)}).encode()

    @staticmethod
    def _assignment(assigned, revoked, delay_ms: int) -> bytes:
        return json.dumps({"assigned": encode_items(assigned), "revoked": encode_items(revoked),
                           "delay": delay_ms}).encode()

    def _join(self, worker: ClassicWorker) -> None:
        """WorkerCoordinator.onJoinPrepare, then JoinGroup: eager workers stop everything first."""
        worker.beat += 1
        worker.rejoin_at = None
        if self.eager:
            self._stop(worker, worker.running, "revoked")
        worker.state = "joining"
        group = self.coord.get_group(GROUP)
        converting = group is not None and group.group_type == "connect"
        self._send(worker, JoinGroupRequest(
            version=9, group_id=GROUP, session_timeout_ms=self.session_timeout_ms,
            rebalance_timeout_ms=self.rebalance_timeout_ms, member_id=worker.member_id,
            group_instance_id=None, protocol_type=PROTOCOL_TYPE,
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(
                name=PROTOCOL_NAMES[self.protocol], metadata=self._metadata(worker))], reason=None),
            self._on_join)
        if converting and self.coord.get_classic_group(GROUP) is not None:
            self.step("converted", worker.name)

    def _lost_membership(self, worker: ClassicWorker, code: int, api: str) -> bool:
        """The answer to an error: True if handled (the worker rejoins)."""
        if code == NONE:
            return False
        if code == MEMBER_ID_REQUIRED:
            self._join(worker)
            return True
        if code == GROUP_ID_NOT_FOUND:      # a worker group holds the id: try again a heartbeat later
            self.errors.append((self.now, worker.name, api, code))
            self.step("error", worker.name)
            incarnation = worker.incarnation
            self._soon(self.now + self.interval,
                       lambda: self._join(worker) if worker.incarnation == incarnation else None)
            return True
        if code != REBALANCE_IN_PROGRESS:     # a rebalance: rejoin, keeping what it runs
            self.errors.append((self.now, worker.name, api, code))
            self.step("error", worker.name)
            self._stop(worker, worker.running, "abandoned")
            if code == UNKNOWN_MEMBER_ID:
                worker.member_id, worker.generation = "", -1
        self._join(worker)
        return True

    def _on_join(self, worker: ClassicWorker, response) -> None:
        if response.error_code == MEMBER_ID_REQUIRED:
            worker.member_id = response.member_id
        if self._lost_membership(worker, response.error_code, "JoinGroup"):
            return
        worker.member_id, worker.generation = response.member_id, response.generation_id
        assignments = []
        if response.leader == worker.member_id and not response.skip_assignment:
            assignments = self._lead(worker, response.members)
            self.step("compute-assignment", worker.name)
        worker.state = "syncing"
        self._send(worker, SyncGroupRequest(
            version=5, group_id=GROUP, generation_id=worker.generation, member_id=worker.member_id,
            group_instance_id=None, protocol_type=PROTOCOL_TYPE, protocol_name=response.protocol_name,
            assignments=assignments), self._on_sync)

    def _lead(self, worker: ClassicWorker, members) -> list:
        """The leader's assignment (WorkerCoordinator.onLeaderElected), by worker name."""
        states = {m.member_id: json.loads(bytes(m.metadata)) for m in members}
        names = {member_id: state["worker"] for member_id, state in states.items()}
        if self.eager:
            given = eager_assignment(list(names.values()), self.connectors)
            out = {n: self._assignment(given[n], (), 0) for n in names.values()}
        else:
            running = {names[m]: decode_items(s["running"]) for m, s in states.items()}
            round_ = cooperative_round(worker.assignor, running, self.connectors, self.now)
            out = {n: self._assignment(round_.assigned[n], round_.revoked[n], round_.delay_ms) for n in running}
        return [SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=out[n])
                for m, n in names.items()]

    def _on_sync(self, worker: ClassicWorker, response) -> None:
        if self._lost_membership(worker, response.error_code, "SyncGroup"):
            return
        data = json.loads(bytes(response.assignment))
        revoked, assigned = decode_items(data["revoked"]), decode_items(data["assigned"])
        self._stop(worker, revoked & worker.running, "revoked")
        started = assigned - worker.running
        worker.running |= started
        if started:
            self.assigned.append((self.now, worker.name, started))
            self.step("assign", worker.name)
        worker.state = "stable"
        if revoked:         # revoked items move in the next rebalance: Connect's herder rejoins at once
            self._join(worker)
            return
        self._schedule_heartbeat(worker)
        if data["delay"]:
            at = worker.rejoin_at = self.now + data["delay"]
            self._soon(at, lambda: self._delay_over(worker, at))

    def _delay_over(self, worker: ClassicWorker, at: int) -> None:
        if worker.rejoin_at == at and worker.state == "stable":
            self.step("delay-expired", worker.name)
            self._join(worker)

    def _schedule_heartbeat(self, worker: ClassicWorker) -> None:
        worker.beat += 1
        beat = worker.beat
        self._soon(self.now + self.interval,
                   lambda: self._heartbeat(worker) if worker.beat == beat and worker.state == "stable" else None)

    def _heartbeat(self, worker: ClassicWorker) -> None:
        self._send(worker, HeartbeatRequest(version=4, group_id=GROUP, generation_id=worker.generation,
                                            member_id=worker.member_id, group_instance_id=None),
                   self._on_heartbeat)
        self._schedule_heartbeat(worker)

    def _on_heartbeat(self, worker: ClassicWorker, response) -> None:
        if worker.state == "stable":
            self._lost_membership(worker, response.error_code, "Heartbeat")

    def _stop(self, worker: ClassicWorker, items, cause: str) -> None:
        if items:
            worker.running = worker.running - frozenset(items)
            self.revoked.append((self.now, worker.name, frozenset(items), cause))
            self.step("revoke" if cause == "revoked" else "abandon", worker.name)

    # ---- the log -------------------------------------------------------------------------
    def step(self, event: str, worker: str | None = None) -> None:
        self.steps.append((self.now, event, worker, self.connectors,
                           {name: w.running for name, w in self.workers.items()}))

