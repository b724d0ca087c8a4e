"""One virtual clock for the coordinator's timers and the simulated clients' events.

Responses are delivered as events at the current virtual time instead of inside the
coordinator's callback, so a thousand members answering one another never nest calls.
At equal times the coordinator's timers fire before client events.
"""

from __future__ import annotations

import heapq
from typing import Callable


class Engine:
    def __init__(self, coordinator, group_id: str, observer: Callable | None = None):
        self.coordinator = coordinator
        self.group_id = group_id
        self._groups = coordinator.classic_groups()     # the live map: one lookup per use
        self._events: list[tuple[int, int, Callable[[], None]]] = []
        self._seq = 0
        self.observer = observer       # observer(group or None, now) after every step
        self.steps = 0

    @property
    def now(self) -> int:
        return self.coordinator.now_ms

    def at(self, time_ms: int, fn: Callable[[], None]) -> None:
        self._seq += 1
        now = self.coordinator.now_ms
        heapq.heappush(self._events, (time_ms if time_ms > now else now, self._seq, fn))

    def after(self, delay_ms: int, fn: Callable[[], None]) -> None:
        self.at(self.now + delay_ms, fn)

    def soon(self, fn: Callable[[], None]) -> None:
        self.at(self.now, fn)

    def handle(self, request, client_id: str, on_response: Callable | None = None):
        """Send one request; ``on_response(response)`` runs as an event once it is answered."""
        reply = self.coordinator.handle(request, client_id=client_id, client_host="/127.0.0.1")
        if on_response is not None:
            reply.add_done_callback(lambda r: self.soon(lambda: on_response(r.response)))
        return reply

    def group(self):
        return self._groups.get(self.group_id)

    def step(self, limit_ms: int) -> bool:
        """Run due work up to ``limit_ms`` until something may have changed; False if none is due.

        An event that returns True declares itself quiet (a heartbeat the coordinator could
        only acknowledge): batches of quiet events run back to back without waking the
        observer or the caller's condition, which they cannot have changed.
        """
        coordinator = self.coordinator
        events = self._events
        pop = heapq.heappop
        while True:
            target = events[0][0] if events else None
            deadline = coordinator.next_deadline_ms()
            timer_due = deadline is not None and (target is None or deadline <= target)
            if timer_due:
                target = deadline
            if target is None or target > limit_ms:
                return False
            if target > coordinator.now_ms or timer_due:
                coordinator.advance(max(target - coordinator.now_ms, 0))
            quiet = not timer_due
            now = coordinator.now_ms
            while events and events[0][0] <= now:
                if not pop(events)[2]():
                    quiet = False
            self.steps += 1
            if not quiet:
                if self.observer is not None:
                    self.observer(self._groups.get(self.group_id), now)
                return True

    def run_until(self, limit_ms: int, done: Callable[[], bool] | None = None) -> bool:
        """Advance until ``done()`` holds (True) or virtual time reaches ``limit_ms`` (False)."""
        while True:
            if done is not None and done():
                return True
            if not self.step(limit_ms):
                if self.now < limit_ms:
                    self.coordinator.advance(limit_ms - self.now)
                    if self.observer is not None:
                        self.observer(self.group(), self.now)
                return done() if done is not None else True
