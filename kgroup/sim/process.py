"""What both protocols' simulated consumer processes share: stopping, losing partitions, and the
client half of coalesced heartbeats.

A quiet member (one whose heartbeat the coordinator could only acknowledge) "sleeps": it
refreshes its session once and next wakes at its last heartbeat slot before the session would
expire. ``wake`` is the engine's call when a heartbeat may no longer be quiet; ``settle_session``
moves the session deadline back to the last slot when a sleeper stops, so a run with coalesced
heartbeats equals one with every heartbeat sent. Slots are ``_slot_ms + k * interval``. A classic
member's heartbeat that can only discover a rebalance is answered the same way, without a
request (``SimConsumer._send_heartbeat``; why that equals the wire run: the engine's docstring).
"""

from __future__ import annotations

from functools import partial


class SimProcess:
    """Base of a simulated consumer with ``engine``, ``ledger``, ``name``, ``config``, ``state``,
    ``owned``, ``running`` and its protocol's ``_leave()`` (what a clean close sends),
    ``_quiet()`` (its heartbeat could only refresh the session), ``_refresh_session()`` (that
    refresh, done directly), ``_send_heartbeat()`` and ``_move_session(last_slot_ms)`` (restart
    the session as if at that earlier slot)."""

    def stop(self, crash: bool = False) -> None:
        """Close (``_leave``), or crash: vanish without a word."""
        if not self.running:
            return
        if self.state == "stable" and not self.config.wire_heartbeats:
            self._settle_session()
        if not crash:
            self._leave()
        self._lose_all("crash" if crash else "stop")
        self.state = "stopped"
        self.incarnation += 1
        self._heartbeat_token += 1

    def _lose_all(self, why: str, **detail) -> None:
        now = self.engine.now
        if self.owned:
            self.ledger.release(now, self.name, sorted(self.owned), 0)
            self.owned = type(self.owned)()
        self.ledger.consuming(now, self.name, False)
        self.ledger.event(now, why, self.name, **detail)

    def _init_slots(self) -> None:
        self._heartbeat_token = 0
        self._beat = None                # the scheduled heartbeat call, reused while quiet
        self._slot_ms = 0
        self._refreshed_ms = 0           # when the coordinator last refreshed the session
        interval, session = self.config.heartbeat_interval_ms, self.config.session_timeout_ms
        self._sleep_ms = max(1, (session - 1) // interval) * interval if interval < session else interval

    def _schedule_heartbeat(self, delay_ms: int | None = None) -> None:
        self._heartbeat_token += 1
        token = self._heartbeat_token
        delay = self.config.heartbeat_interval_ms if delay_ms is None else delay_ms
        self._slot_ms = self.engine.now + delay
        self.engine.after(delay, partial(self._heartbeat, token))

    def _heartbeat(self, token: int) -> bool | None:
        """Returns True when nothing observable happened (the engine's quiet event)."""
        if token != self._heartbeat_token or self.state != "stable":
            return True
        now = self.engine.coordinator.now_ms
        self._slot_ms = self._refreshed_ms = now
        if not self.config.wire_heartbeats and self._quiet():
            # The coordinator could only acknowledge and restart the session timer: do just that,
            # without building request and response, and sleep through the heartbeats that would
            # only do the same again.
            self._refresh_session()
            self._sleep(token, now)
            return True
        self._send_heartbeat()
        return None

    def _sleep(self, token: int, now: int) -> None:
        """Next beat at the last slot before the session expires; the engine may wake it earlier."""
        beat = self._beat
        if beat is None or beat.args[0] != token:
            beat = self._beat = partial(self._heartbeat, token)
        self.engine.at(now + self._sleep_ms, beat)
        self.engine.sleep(self)

    def _settle_session(self) -> None:
        """Leaving the stable state: the session deadline the skipped heartbeats would have set."""
        engine = self.engine
        engine.unsleep(self)
        now = engine.coordinator.now_ms
        if now < self._slot_ms:
            return                        # no heartbeat since the assignment
        interval = self.config.heartbeat_interval_ms
        last = self._slot_ms + (now - self._slot_ms) // interval * interval
        if last <= self._refreshed_ms:
            return
        # The coordinator may have restarted the session itself since this member's own refresh (a
        # conversion between the protocols restarts every member's): a later deadline than the
        # skipped heartbeats would have set stands, as it would have on the wire.
        session = self.config.session_timeout_ms
        deadline = engine.coordinator.session_deadline(engine.group_id, self.member_id)
        if deadline is not None and deadline > self._refreshed_ms + session and deadline >= last + session:
            return
        if self._move_session(last):
            self._refreshed_ms = last

    def wake(self, now: int, born: int) -> None:
        """Beat at the next slot. A slot at ``now`` itself is still to come when the change was
        scheduled (``born``) before that heartbeat would have been, one interval ago."""
        if self.state != "stable":
            return
        interval = self.config.heartbeat_interval_ms
        elapsed = now - self._slot_ms
        slots = elapsed // interval + 1
        if elapsed > 0 and elapsed % interval == 0 and born < now - interval:
            slots -= 1
        at = self._slot_ms + slots * interval
        if at >= self._slot_ms + self._sleep_ms:
            return                        # the pending wake-up is that very slot
        self._heartbeat_token += 1
        self.engine.at(at, partial(self._heartbeat, self._heartbeat_token))
