"""Operational scenarios played on the embedded coordinator with simulated consumers.

    from kgroup.sim.model import SimParams
    result = run_scenario("rolling-bounce", SimParams(members=3, membership="static"))
    result.as_dict()   # the JSON document of `kgroup simulate`

Every scenario first forms a Stable group (the warm-up is not measured), then acts, then
runs until the group has settled: Stable, every live consumer synced in the current
generation (a consumer group: at the group epoch, owning its target, acknowledged), every
partition owned, and no member left in the group that is not a live consumer (a static
member that stopped stays until its session times out).
"""

from __future__ import annotations

import gc
import itertools
import random
from contextlib import contextmanager
from dataclasses import replace
from functools import partial

from kafka.protocol.consumer.group import LeaveGroupRequest

from kgroup.coordinator import GroupCoordinator

from . import consumer_group, group_config
from .client import ConsumerConfig, SimConsumer
from .consumer_client import ConsumerProtocolConsumer
from .engine import Engine, counted_ids
from .metrics import Ledger
from .restore import Restores
from .model import (GROUP, PROTOCOL_ROLLS, SCENARIOS, ParameterError, ScenarioError, SimParams,
                    SimResult)
from .protocol_roll import ProtocolRoll
from .restart_spread import draw, maximum, restart_random


class Run:
    """One scenario run: the coordinator, the consumers, the ledger and the clock."""

    def __init__(self, params: SimParams, scenario: str | None = None, on_progress=None):
        params.validate()
        self.params = params
        # on_progress(what, done, total): the phase under way (the command's status line; a large
        # dynamic bounce runs for minutes), see run_scenario
        self.on_progress = on_progress or (lambda what, done, total: None)
        self._phase = None                 # the last (what, done, total) reported
        self.mixed = scenario in PROTOCOL_ROLLS      # both protocols in one group, in turn
        if self.mixed:
            params = self.params = replace(params, protocol=PROTOCOL_ROLLS[scenario][0])
        self.consumer_protocol = params.protocol == "consumer"
        self.protocols = set(PROTOCOL_ROLLS[scenario]) if self.mixed else {params.protocol}
        self.broker = group_config.broker_config(params)      # the simulated broker's settings
        group_config.check(params, self.broker, self.protocols)
        self.coordinator = GroupCoordinator(config=self.broker, uuid_source=counted_ids())
        image = consumer_group.topic_image(params.topics)
        self.coordinator.set_topics(image)
        self.topic_names = {topic_id: name for name, (topic_id, _) in image.items()}
        partitions = [(t, p) for t, n in sorted(params.topics) for p in range(n)]
        self.ledger = Ledger(partitions)
        if params.state_bytes_per_partition is not None:
            self.ledger.restores = Restores(params.state_bytes_per_partition, params.restore_rate)
        self.engine = Engine(self.coordinator, GROUP, on_transition=self.ledger.transition,
                             protocol="mixed" if self.mixed else params.protocol,
                             on_epoch_bump=self.ledger.epoch_bump)
        if on_progress is not None:
            self.engine.on_tick = self._progress_again
        self.consumers: list[SimConsumer] = []
        self.random = random.Random(params.seed)
        self._restart_random = restart_random(params.seed)
        self._names = itertools.count()
        self.roll = ProtocolRoll(self, scenario) if self.mixed else None
        self.retired = self.roll.retired if self.mixed else []
        self._holdout: SimConsumer | None = None      # see settled()
        self.members_start: int | None = None          # live processes when the scenario began

    def config(self, protocol: str | None = None, **overrides) -> ConsumerConfig:
        """A consumer's settings; a consumer-protocol member's session timeout and heartbeat
        interval are the broker's."""
        p = self.params
        protocol = protocol or p.protocol
        session_ms, heartbeat_ms = self._timeouts(protocol)
        values = dict(topics=tuple(sorted(t for t, _ in p.topics)),
                      partitions_per_topic=tuple(sorted(p.topics)),
                      assignor=p.server_assignor if protocol == "consumer" else p.assignor,
                      session_timeout_ms=session_ms,
                      rebalance_timeout_ms=p.rebalance_timeout_ms,
                      heartbeat_interval_ms=heartbeat_ms,
                      by_instance_id=p.by_instance_id, wire_heartbeats=p.wire_heartbeats,
                      topic_regex=p.topic_regex if protocol == "consumer" else None)
        values.update(overrides)
        return ConsumerConfig(**values)

    def _timeouts(self, protocol: str) -> tuple[int, int]:
        """(session timeout, heartbeat interval) of a consumer speaking ``protocol``."""
        if protocol == "consumer":
            return (self.broker.group_consumer_session_timeout_ms,
                    self.broker.group_consumer_heartbeat_interval_ms)
        return self.params.session_timeout_ms, self.params.heartbeat_interval_ms

    def add_consumer(self, static: bool, name: str | None = None, instance_id: str | None = None,
                     protocol: str | None = None, replacing=None) -> SimConsumer:
        """A new process (``replacing``: in that one's place, which has stopped)."""
        name = name or f"c{next(self._names)}"
        instance_id = (instance_id or name) if static else None
        protocol = protocol or self.params.protocol
        if protocol == "consumer":
            consumer = ConsumerProtocolConsumer(self.engine, self.ledger, name,
                                                self.config(protocol), self.topic_names,
                                                instance_id=instance_id, group_id=GROUP,
                                                rng=self.random)
        else:
            consumer = SimConsumer(self.engine, self.ledger, name, self.config(protocol),
                                   instance_id=instance_id, group_id=GROUP, rng=self.random)
        if replacing is not None:
            self.consumers[self.consumers.index(replacing)] = consumer
            if self._holdout is replacing:
                self._holdout = None         # settled() asks only processes of this run
        else:
            self.consumers.append(consumer)
        return consumer

    def progress(self, what: str, done: int = 0, total: int = 0) -> None:
        """A phase starts: ``what`` and, for waves or steps, how many are done of how many (0 of 0:
        a phase without a count, forming the group or settling)."""
        self._phase = (what, done, total)
        self.on_progress(what, done, total)

    def _progress_again(self) -> None:
        """The engine's tick: the phase under way, reported again (the line's clock moves on)."""
        if self._phase is not None:
            self.on_progress(*self._phase)

    # ---- conditions ---------------------------------------------------------------------
    def live(self) -> list[SimConsumer]:
        return [c for c in self.consumers if c.running]

    def any_live(self) -> bool:
        return any(c.running for c in self.consumers)

    def settled(self) -> bool:
        """Checked after every step. A live process that held the group back last time and still
        does answers False at once, where a scan of every process would reach it anyway."""
        group = self.engine.group()
        if group is None:
            return False
        holdout = self._holdout
        if holdout is not None and holdout.running and _holds_back(holdout, group):
            return False
        consumer_protocol = group.group_type == "consumer"
        if not consumer_protocol and group.state != "Stable":
            return False
        live = self.live()
        self._holdout = next((c for c in live if _holds_back(c, group)), None)
        if self._holdout is not None:
            return False
        if consumer_protocol:
            return consumer_group.settled(group, live, self.ledger)
        if set(group.members) != {c.member_id for c in live}:
            return False
        return not live or len(self.ledger.owner) == len(self.ledger.partitions)

    def leader(self) -> SimConsumer | None:
        group = self.engine.group()
        if group is None or group.group_type == "consumer":
            return None                  # a consumer group has no leader
        return next((c for c in self.live() if c.member_id == group.leader_id), None)

    def cap_ms(self) -> int:
        """How long one phase (forming, one wave, settling) may take before it counts as stuck.

        Every legitimate wait is bounded by a session timeout, a rebalance timeout or a
        restart; three of each is ample and keeps a stuck run short.
        """
        p = self.params
        if p.max_time_ms is not None:
            return p.max_time_ms
        session_ms = max(self._timeouts(protocol)[0] for protocol in self.protocols)
        return maximum(p.restart_ms) + 3 * (session_ms + p.rebalance_timeout_ms)

    # ---- phases -------------------------------------------------------------------------
    def warm_up(self, static: bool) -> None:
        self.progress("forming the group")
        for _ in range(self.params.members):
            self.add_consumer(static)
        for consumer in self.consumers:
            consumer.start()
        limit = self.engine.now + self.cap_ms()
        if not self.engine.run_until(limit, lambda: self.settled() or not self.any_live()):
            raise ScenarioError(self._stuck("the group did not form", limit))
        if not self.live():
            errors = [c.error for c in self.consumers if c.error]
            raise ScenarioError("the group did not form: every consumer stopped"
                                + (f" ({errors[0]})" if errors else ""))

    def _stuck(self, what: str, limit: int) -> str:
        errors = [c.error for c in self.consumers if c.error]
        group = self.engine.group()
        if group is None:
            state = "no group"
        elif group.group_type == "consumer":
            state = f"group {group.state} epoch {group.group_epoch}"
        else:
            state = f"group {group.state} generation {group.generation_id}"
        detail = f"; {errors[0]}" if errors else ""
        return f"{what} within {limit} ms of virtual time ({state}){detail}"

    def restart_duration(self) -> int:
        """How long this restart stays down: --restart-ms, or a draw from its spread."""
        return draw(self.params.restart_ms, self._restart_random)

    def restart(self, consumer: SimConsumer, crash: bool = False, static: bool | None = None,
                then=None) -> None:
        """Stop the process, start it again after restart_duration() (optionally switching membership)."""
        consumer.stop(crash=crash)
        self.note_session_left(consumer)

        def back():
            if static is not None:
                consumer.instance_id = consumer.name if static else None
            consumer.start()
            if then is not None:
                then()
        self.engine.after(self.restart_duration(), back)

    def note_session_left(self, consumer) -> None:
        """A stopped static member keeps its place for what is left of its session: a restart
        shorter than that causes no rebalance (``Ledger.session_left``)."""
        if consumer.instance_id is None or not consumer.member_id:
            return
        deadline = self.coordinator.session_deadline(GROUP, consumer.member_id)
        if deadline is not None:
            config = consumer.config
            self.ledger.session_left(deadline - self.engine.now,
                                     config.session_timeout_ms - config.heartbeat_interval_ms)

    def bounce_all(self, order: list[SimConsumer], crash=False, static=None) -> None:
        """Rolling bounce in waves of `concurrency` members.

        The next wave starts once this one is back and the group has settled, as an operator
        watching the group's health between restarts would do.
        """
        waves = [order[i:i + self.params.concurrency]
                 for i in range(0, len(order), self.params.concurrency)]
        for done, wave in enumerate(waves):
            self.progress("wave", done, len(waves))
            limit = self.engine.now + self.cap_ms()
            for consumer in wave:
                self.restart(consumer, crash=crash, static=static)
            self.engine.step(self.engine.now)      # let the stops reach the coordinator
            ok = self.engine.run_until(limit, partial(self.wave_done, wave))
            if not ok:
                raise ScenarioError(self._stuck("a bounced member did not come back", limit))

    def wave_done(self, wave: list[SimConsumer]) -> bool:
        """Every process of the wave back (or stopped for good), and the group settled: asked after
        every step of a wave."""
        for consumer in wave:
            if consumer.state not in _WAVE_OVER:
                return False
        return self.settled()

    def bounce_order(self) -> list[SimConsumer]:
        members = [c for c in self.consumers if c.running]
        order = self.params.order
        if order == "reverse":
            return members[::-1]
        if order == "random":
            members = list(members)
            self.random.shuffle(members)
            return members
        if order in ("leader-first", "leader-last"):
            leader = self.leader()
            rest = [c for c in members if c is not leader]
            if leader is None:
                return rest
            return [leader] + rest if order == "leader-first" else rest + [leader]
        return members

    def finish(self, scenario: str, membership: str, start_ms: int, epoch_start: int) -> SimResult:
        """``epoch_start``: the classic generation, or the consumer group's epoch, at the start."""
        self.progress("settling")
        limit = self.engine.now + self.cap_ms()
        settled = self.engine.run_until(limit, self.settled)
        ledger = self.ledger
        ledger.close(self.engine.now)
        group = self.engine.group()
        if self.roll is not None:
            epochs = self.roll.result_fields(group, epoch_start)
        elif self.consumer_protocol:     # a "rebalance" is a group-epoch bump
            epoch_end = group.group_epoch
            epochs = {"protocol": "consumer", "group_epoch_start": epoch_start,
                      "group_epoch_end": epoch_end, "generation_start": None,
                      "generation_end": None, "rebalances": epoch_end - epoch_start}
        else:
            epoch_end = group.generation_id
            pending = 1 if group.state == "PreparingRebalance" else 0
            epochs = {"generation_start": epoch_start, "generation_end": epoch_end,
                      "rebalances": epoch_end - epoch_start + pending}
        lost = never_rejoined(self, start_ms)
        # a process that never came back is still stopped at the end: its stop counts until then
        counted = {c.name for c in self.live()} | {m["member"] for m in lost}
        stops = [v for n, v in ledger.longest_stop.items() if n in counted]
        stops += [self.engine.now - max(since, start_ms) for n, since in ledger.stopped_since.items()
                  if n in counted]
        return SimResult(
            scenario=scenario, membership=membership,
            assignor=self.config("classic" if self.mixed else None).assignor,
            members=len(self.live()), members_start=self.members_start, never_rejoined=lost,
            partitions=len(ledger.partitions),
            partitions_moved=len(ledger.moved),
            unowned_partition_seconds=round(ledger.unowned_ms / 1000, 3),
            time_to_stable_ms=(self.engine.now - start_ms) if settled else None,
            longest_stop_ms=max(stops, default=0), settled=settled,
            errors=[c.error for c in self.consumers + self.retired if c.error],
            events=ledger.events, intervals=ledger.intervals, unowned_steps=ledger.unowned_steps,
            handoffs=ledger.handoffs, peak_unowned_partitions=ledger.peak_unowned,
            longest_partition_wait_ms=ledger.longest_wait_ms, safe_restart_ms=ledger.safe_restart_ms,
            least_session_left_ms=ledger.least_session_left_ms,
            restore=None if ledger.restores is None else ledger.restores.figures(),
            restoring_steps=[] if ledger.restores is None else ledger.restores.steps(),
            rebalance_times=ledger.rebalance_times, duration_ms=self.engine.now - start_ms,
            remove_members=self.params.remove_members, concurrency=self.params.concurrency,
            config=group_config.document(self.params, self.broker, self.protocols), **epochs)


# What to do about a process a fatal error stopped: Kafka's clients do not rejoin after one (Java's
# ConsumerHeartbeatRequestManager and AbstractCoordinator raise it to the application).
ADVICE = {
    "UNRELEASED_INSTANCE_ID": "a crashed static member must wait out group.consumer.session.timeout.ms "
                              "({session_timeout_ms} ms) before restarting",
    "FENCED_INSTANCE_ID": "another process took its group.instance.id; every process needs its own",
}


def never_rejoined(run: Run, start_ms: int) -> list[dict]:
    """The processes a fatal error (UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID, ...) stopped for good
    whose place no live process holds: a member the group lost, not one it swapped (a duplicate
    instance's loser leaves its group.instance.id to the other process). Protocol rolls' replaced
    processes are not asked: their successors run."""
    live_instances = {c.instance_id for c in run.live() if c.instance_id is not None}
    lost = []
    for consumer in run.consumers:
        if consumer.state not in ("failed", "fenced") or consumer.instance_id in live_instances:
            continue
        since = run.ledger.stopped_since.get(consumer.name, run.engine.now)
        advice = ADVICE.get(consumer.error_name, "")
        lost.append({"member": consumer.name, "instance_id": consumer.instance_id,
                     "error": consumer.error_name, "stopped_at_ms": max(since, start_ms) - start_ms,
                     "advice": advice.format(session_timeout_ms=consumer.config.session_timeout_ms)})
    return lost


_WAVE_OVER = frozenset(("stable", "fenced", "failed"))     # a bounced process's states once back


def _holds_back(consumer, group) -> bool:
    """This live process alone keeps ``group`` from having settled."""
    if group.group_type == "consumer":
        return consumer_group.holds_back(consumer, group)
    return consumer.state != "stable" or consumer.generation != group.generation_id


# ---- scenarios ------------------------------------------------------------------------------
def _begin(run: Run) -> tuple[int, int]:
    start = run.engine.now
    run.ledger.begin(start)
    run.members_start = len(run.live())
    group = run.engine.group()
    return start, group.group_epoch if group.group_type == "consumer" else group.generation_id


def run_scenario(scenario: str, params: SimParams, on_progress=None) -> SimResult:
    """Play one scenario; raises ScenarioError when it cannot run (message says why).
    ``on_progress(what, done, total)`` is told of each phase as it starts (forming the group, each
    wave or protocol-roll step with how many are done of how many, settling: 0 of 0 for a phase
    without a count), and again with the same figures every ``engine.TICK_STEPS`` steps while it
    runs."""
    with _rare_collections():
        return _play(scenario, params, on_progress)


@contextmanager
def _rare_collections():
    """A run allocates millions of short-lived objects that make no reference cycles (requests,
    replies, events): the cyclic collector's default pace (a pass every 700 allocations, and full
    passes over everything the run keeps) only costs time, some 7% of a large run's."""
    thresholds = gc.get_threshold()
    gc.set_threshold(max(thresholds[0], 100_000), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


def _play(scenario: str, params: SimParams, on_progress=None) -> SimResult:
    if scenario not in SCENARIOS:
        raise ParameterError(f"unknown scenario {scenario!r}; choose from {', '.join(SCENARIOS)}")
    params.validate()
    run = Run(params, scenario, on_progress)
    static = params.membership == "static"
    membership = params.membership
    if scenario == "upgrade":
        static, membership = False, "dynamic->static"
    elif scenario == "downgrade":
        static, membership = True, "static->dynamic"
    if scenario in ("scale-down", "crash") and params.count >= params.members:
        raise ParameterError(f"--count ({params.count}) must be lower than --members "
                            f"({params.members}) for {scenario}")
    run.warm_up(static)
    start, generation_start = _begin(run)
    if scenario == "rolling-bounce":
        run.bounce_all(run.bounce_order())
    elif scenario == "upgrade":
        run.bounce_all(run.bounce_order(), static=True)
    elif scenario == "downgrade":
        run.bounce_all(run.bounce_order(), static=False)
    elif scenario in PROTOCOL_ROLLS:
        run.roll.play()
    elif scenario == "leader-bounce":       # a consumer group has no leader: its first member
        run.bounce_all([run.leader() or run.bounce_order()[0]])
    elif scenario == "crash":
        run.bounce_all(run.bounce_order()[:params.count], crash=True)
    elif scenario == "scale-down":
        _scale_down(run)
    elif scenario == "scale-up":
        for _ in range(params.count):
            run.add_consumer(static).start()
    elif scenario == "duplicate-instance":
        original = run.consumers[0]
        twin = run.add_consumer(static, name=f"{original.name}-twin",
                                instance_id=original.instance_id)
        twin.start()
    return run.finish(scenario, membership, start, generation_start)


def _scale_down(run: Run) -> None:
    victims = run.bounce_order()[-run.params.count:]
    admin = [(c.member_id, c.instance_id) for c in victims if c.instance_id is not None]
    for consumer in victims:
        consumer.stop()
    if run.params.remove_members and admin:
        request = LeaveGroupRequest(version=5, group_id=GROUP, members=[
            LeaveGroupRequest.MemberIdentity(member_id="", group_instance_id=instance,
                                             reason="kgroup remove-members")
            for _, instance in admin])
        run.ledger.event(run.engine.now, "remove-members", None,
                         instances=[instance for _, instance in admin])
        run.engine.handle(request, "kgroup-admin")
