"""One virtual clock for the coordinator's timers and the simulated clients' events.

Responses are delivered as events at the current virtual time instead of inside the
coordinator's callback, so a thousand members answering one another never nest calls.
At equal times the coordinator's timers fire before client events.

Quiet heartbeats are coalesced. A member of a Stable group whose heartbeat could only be
answered NONE "sleeps": it refreshes its session once and next wakes shortly before the
session would expire, instead of every heartbeat.interval.ms. The engine wakes sleepers as
soon as a heartbeat might get another answer (the group leaves Stable or changes
generation, or a JoinGroup/LeaveGroup names a sleeper's instance or member id), and each
woken member heartbeats at its next slot on its own phase, exactly when it would have. A
sleeper that stops has its session deadline moved back to its last heartbeat slot. A run
with coalesced heartbeats equals one with every heartbeat sent (``--wire-heartbeats``).

The heartbeat that discovers a classic rebalance is not sent either. While the group prepares a
rebalance, a heartbeat of this generation from a member still its own gets REBALANCE_IN_PROGRESS
and restarts the session timer, and changes nothing else (Kafka's ``classicGroupHeartbeat``): the
client restarts the timer itself and ``answered`` puts the answer on the queue as the response
event would have been, after the same wake-up check, at the same time and under the next sequence
number (the coordinator completes no other reply during a heartbeat, so nothing else is queued
before it). The coordinator's timers and the events run in the same order as on the wire.

For a KIP-848 consumer group (``protocol="consumer"``) the generation is the group epoch: the
engine watches it after every request and timer, reports each bump (``on_epoch_bump``) and wakes
the sleepers, whose next heartbeat may then carry a new assignment.

``protocol="mixed"`` (an online migration: classic and consumer-protocol processes in one group)
watches whichever the group is now, and reports each conversion between the two
(``on_conversion(group type, now, previous epoch)``), waking every sleeper.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from functools import partial
from typing import Callable

from .wire_memo import WireMemo

# Steps between two on_tick calls: some 10-50 ms of a large run, so a progress line keeps moving
# within a wave (one of a 1,000-member dynamic group takes seconds) at no cost worth measuring.
TICK_STEPS = 1024


def counted_ids() -> Callable[[], str]:
    """The coordinator's uuid_source for a simulation: member ids end in a counter, not a random
    UUID, so a run is repeatable (which member Kafka's classic group makes leader after the leader
    leaves follows the hash of the member ids)."""
    counter = itertools.count()
    return lambda: f"{next(counter):08d}"


class Engine:
    def __init__(self, coordinator, group_id: str, observer: Callable | None = None,
                 on_transition: Callable | None = None, protocol: str = "classic",
                 on_epoch_bump: Callable | None = None):
        self.coordinator = coordinator
        self.group_id = group_id
        self.consumer_protocol = protocol == "consumer"
        self.mixed = protocol == "mixed"
        self.on_epoch_bump = on_epoch_bump   # on_epoch_bump(group, now) for a consumer group
        self.on_conversion: Callable | None = None
        self._group_epoch = None
        self._group_type = None              # mixed: the group's type as last seen
        self._generation = None              # mixed: its last classic generation
        if on_transition is not None:
            # on_transition(group, previous state, now) on every state change of this group, as
            # it happens: watching between steps would miss transitions made within one call
            def hook(group, previous, now_ms):
                if group.group_id == group_id:
                    on_transition(group, previous, now_ms)
            coordinator.on_group_transition = hook
        # Events run in (time, sequence) order. Those for a later time wait in a heap as (time,
        # sequence, call, time it was scheduled at); those for the time they are scheduled at
        # (every response) in a FIFO, ``_soon``, in sequence order. Everything the heap holds for
        # that time was scheduled earlier in virtual time, so under a lower sequence number: a
        # step runs the heap's due events, then the FIFO, which is the same order.
        self._events: list[tuple[int, int, Callable[[], None], int]] = []
        self._seq = 0
        self._soon: deque = deque()
        self._soon_ms = 0                    # the time the FIFO's events were scheduled at
        self.observer = observer       # observer(group or None, now) after every step
        self.steps = 0
        self.on_tick: Callable | None = None  # on_tick() every TICK_STEPS steps (a progress line)
        self._sleepers: dict = {}           # member id -> sleeping consumer
        self._sleeping_instances: dict = {}  # group.instance.id -> sleeping consumer
        self._sleep_generation = None
        self._born = 0                       # when the running event was scheduled
        self.wire_memo = WireMemo()          # the classic consumers' encodings, for their decoders

    @property
    def now(self) -> int:
        return self.coordinator.now_ms

    def at(self, time_ms: int, fn: Callable[[], None]) -> None:
        self._seq += 1
        now = self.coordinator.now_ms
        if time_ms > now:
            heapq.heappush(self._events, (time_ms, self._seq, fn, now))
            return
        if self._soon_ms != now:
            self._requeue_soon()
            self._soon_ms = now
        self._soon.append(fn)

    def _requeue_soon(self) -> None:
        """Time moved on (outside ``step``) past events still in the FIFO: into the heap at their
        time, after everything it holds for that time (as their sequence numbers were)."""
        soon, at_ms = self._soon, self._soon_ms
        while soon:
            self._seq += 1
            heapq.heappush(self._events, (at_ms, self._seq, soon.popleft(), at_ms))

    def after(self, delay_ms: int, fn: Callable[[], None]) -> None:
        self.at(self.coordinator.now_ms + delay_ms, fn)

    def soon(self, fn: Callable[[], None]) -> None:
        """``fn`` as an event now, after those already queued (a response, some five a member at every
        rebalance: ``at`` for the present, without its heap)."""
        self._seq += 1
        now = self.coordinator.now_ms
        if self._soon_ms != now:
            self._requeue_soon()
            self._soon_ms = now
        self._soon.append(fn)

    def handle(self, request, client_id: str, on_response: Callable | None = None):
        """Send one request; ``on_response(response)`` runs as an event once it is answered."""
        reply = self.coordinator.handle(request, client_id=client_id, client_host="/127.0.0.1")
        if self.mixed or self.consumer_protocol or self._sleepers:
            self._after_change(request, self._born)
        if on_response is not None:
            if reply.done:
                self.soon(partial(on_response, reply.response))
            else:
                reply.add_done_callback(partial(self._respond, on_response))
        return reply

    def _respond(self, on_response: Callable, reply) -> None:
        self.soon(partial(on_response, reply.response))

    def answered(self, on_response: Callable[[], None]) -> None:
        """A request the simulation answered for the coordinator (a heartbeat that could only
        discover a rebalance, see the module docstring): what ``handle`` does after the
        coordinator, with ``on_response`` at the place its response event would have had."""
        if self.mixed or self.consumer_protocol or self._sleepers:
            self._after_change(None, self._born)
        self.soon(on_response)

    def group(self):
        """The simulated group, live (read it, never change it: only requests change it)."""
        if self.mixed:
            return self.coordinator.get_group(self.group_id)
        if self.consumer_protocol:
            group = self.coordinator.get_group(self.group_id)
            return group if group is not None and group.group_type == "consumer" else None
        return self.coordinator.get_classic_group(self.group_id)

    def _after_change(self, request, born: int) -> None:
        """After a request (None: a timer): report and wake for whatever may have changed."""
        if self.mixed:
            self._watch_group_type(born)
            if self._group_type == "consumer":
                self._watch_group_epoch(born)
            elif self._sleepers:
                self._check_sleepers(request, born)
        elif self.consumer_protocol:
            self._watch_group_epoch(born)
        elif self._sleepers:
            self._check_sleepers(request, born)

    def _watch_group_type(self, born: int) -> None:
        group = self.coordinator.get_group(self.group_id)
        kind = None if group is None else group.group_type
        if kind != self._group_type:
            previous = self._group_epoch if self._group_type == "consumer" else self._generation
            self._group_type = kind
            # the converted group starts at the epoch (or generation) the other one had
            self._group_epoch = previous if kind == "consumer" else None
            if self.on_conversion is not None and kind is not None:
                self.on_conversion(kind, self.coordinator.now_ms, previous)
            if self._sleepers:
                self.wake_all(born)
        if kind == "classic":
            self._generation = group.generation_id

    # ---- coalesced heartbeats -------------------------------------------------------------
    def sleep(self, consumer) -> None:
        """``consumer`` heartbeats quietly until woken (``consumer.wake(now, born)``)."""
        generation = consumer.generation
        if self._sleepers and generation != self._sleep_generation:
            self.wake_all(self.coordinator.now_ms)
        self._sleep_generation = generation
        self._sleepers[consumer.member_id] = consumer
        if consumer.instance_id is not None:
            self._sleeping_instances[consumer.instance_id] = consumer

    def unsleep(self, consumer) -> None:
        if self._sleepers.get(consumer.member_id) is consumer:
            del self._sleepers[consumer.member_id]
        if (consumer.instance_id is not None
                and self._sleeping_instances.get(consumer.instance_id) is consumer):
            del self._sleeping_instances[consumer.instance_id]

    def wake_all(self, born: int) -> None:
        sleepers = list(self._sleepers.values())
        self._sleepers.clear()
        self._sleeping_instances.clear()
        now = self.coordinator.now_ms
        for consumer in sleepers:
            consumer.wake(now, born)

    def _wake(self, consumer, born: int) -> None:
        self.unsleep(consumer)
        consumer.wake(self.coordinator.now_ms, born)

    def _watch_group_epoch(self, born: int) -> None:
        """A consumer group's epoch moved: report the bump and wake every sleeper."""
        group = self.group()
        epoch = None if group is None else group.group_epoch
        if epoch == self._group_epoch:
            return
        self._group_epoch = epoch
        if group is not None and self.on_epoch_bump is not None:
            self.on_epoch_bump(group, self.coordinator.now_ms)
        if self._sleepers:
            self.wake_all(born)

    def _check_sleepers(self, request, born: int) -> None:
        """Wake every sleeper whose next heartbeat could be answered other than NONE.

        ``born`` is when the work that changed the group was scheduled (-1 for a coordinator
        timer): a heartbeat due this very millisecond was scheduled one interval ago, and
        runs after the change only if the change was scheduled earlier still.
        """
        group = self.group()
        if group is None or group.state != "Stable" or group.generation_id != self._sleep_generation:
            self.wake_all(born)
            return
        if request is None:
            return
        api_key = request.API_KEY
        if api_key == 11:        # JoinGroup: a static member may have replaced a sleeper
            instance = request.group_instance_id
            consumer = self._sleeping_instances.get(instance) if instance is not None else None
            if consumer is not None and group.static_members.get(instance) != consumer.member_id:
                self._wake(consumer, born)
        elif api_key == 13:      # LeaveGroup (an admin's, or a consumer's): who was removed
            members = getattr(request, "members", None)
            identities = ([(m.member_id, m.group_instance_id) for m in members] if members
                          else [(request.member_id, None)])
            for member_id, instance in identities:
                for consumer in (self._sleepers.get(member_id),
                                 self._sleeping_instances.get(instance) if instance else None):
                    if consumer is not None and (
                            consumer.member_id not in group.members
                            or (consumer.instance_id is not None
                                and group.static_members.get(consumer.instance_id)
                                != consumer.member_id)):
                        self._wake(consumer, born)

    def step(self, limit_ms: int) -> bool:
        """Run due work up to ``limit_ms`` until something may have changed; False if none is due.

        An event that returns True declares itself quiet (a heartbeat the coordinator could
        only acknowledge): batches of quiet events run back to back without waking the
        observer or the caller's condition, which they cannot have changed.
        """
        coordinator = self.coordinator
        events, soon = self._events, self._soon
        pop, pop_soon = heapq.heappop, soon.popleft
        while True:
            if soon and self._soon_ms != coordinator.now_ms:
                self._requeue_soon()
            target = events[0][0] if events else None
            if soon and (target is None or target > self._soon_ms):
                target = self._soon_ms
            deadline = coordinator.next_deadline_ms()
            timer_due = deadline is not None and (target is None or deadline <= target)
            if timer_due:
                target = deadline
            if target is None or target > limit_ms:
                return False
            if timer_due:
                coordinator.advance(max(target - coordinator.now_ms, 0))
                # Timers fire before client events: a heartbeat due at this very
                # millisecond has not run yet and sees the change.
                self._after_change(None, -1)
            elif target > coordinator.now_ms:
                # No timer is due by then (just asked): all advance would do is move the clock.
                coordinator.now_ms = target
            quiet = not timer_due
            now = coordinator.now_ms
            while events and events[0][0] <= now:
                _, _, call, self._born = pop(events)
                if not call():
                    quiet = False
            self._born = now           # the FIFO's events, and between steps: everything due has run
            while soon:
                if not pop_soon()():
                    quiet = False
            self.steps += 1
            if not self.steps % TICK_STEPS and self.on_tick is not None:
                self.on_tick()
            if not quiet:
                if self.observer is not None:
                    self.observer(self.group(), now)
                return True

    def run_until(self, limit_ms: int, done: Callable[[], bool] | None = None) -> bool:
        """Advance until ``done()`` holds (True) or virtual time reaches ``limit_ms`` (False)."""
        while True:
            if done is not None and done():
                return True
            if not self.step(limit_ms):
                if self.now < limit_ms:
                    self.coordinator.advance(limit_ms - self.now)
                    if self.consumer_protocol or self.mixed:
                        self._after_change(None, -1)
                    if self.observer is not None:
                        self.observer(self.group(), self.now)
                return done() if done is not None else True
