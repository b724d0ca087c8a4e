"""Connect's incremental cooperative assignor, run by the worker that computes a Connect group's target.

Connect's ``IncrementalCooperativeAssignor`` (KIP-415) on the new protocol: sticky (every worker
keeps what its current target entry gives it), a departed worker's items held unassigned for up to
``scheduled.rebalance.max.delay.ms`` so it can come back for them, new items spread to the least
loaded worker, and a balance step that moves items only when nothing is held. The coordinator owns
rebalances now, so the assigner asks for the later one by changing the Reason of its assignor
(``reason_change_at``): that is a metadata change and bumps the group epoch.

Deterministic: items in sorted order (connectors by name, then tasks by connector and number),
ties broken by fewest items in total, then smallest worker id. State (``lost``, ``deadline``, the
last installed target) is the assigner's memory, like Connect's leader's: a new assigner starts
with none. The assignor is replaceable — the coordinator validates whatever is installed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .connect_items import TaskId, connector_items, item_order, items_of

NAME = "incremental-cooperative"


def _is_task(item) -> bool:
    return isinstance(item, TaskId)


@dataclass
class IncrementalCooperativeAssignor:
    delay_ms: int = 300_000
    lost: frozenset = frozenset()
    deadline: int | None = None
    last_target: dict | None = None      # member id -> items, the last target this worker installed
    reason_change_at: int | None = None  # when the assigner must ask for another rebalance

    def remember(self, target: dict) -> None:
        """A seeded assigner: it computed ``target`` itself."""
        self.last_target = {m: frozenset(items) for m, items in target.items()}

    def assign(self, members, connectors: dict, now_ms: int) -> dict:
        """``members``: [(member id, current-target items)]; returns member id -> items."""
        every = connector_items(connectors)
        prev = {m: frozenset(items) & every for m, items in sorted(members)}
        taken = frozenset().union(*prev.values()) if prev else frozenset()
        departed = frozenset()
        if self.last_target is not None:
            departed = frozenset().union(frozenset(), *(items for m, items in self.last_target.items()
                                                        if m not in prev))
        lost = (self.lost | departed) & every - taken
        if lost and self.deadline is None:
            self.deadline = now_ms + self.delay_ms
        newcomers = [m for m, items in prev.items() if not items]
        held = frozenset()
        if lost:
            if newcomers and now_ms < self.deadline:
                self._spread(prev, sorted(lost, key=item_order), newcomers)
            elif now_ms < self.deadline:
                held = lost
        self.lost = held
        self.deadline = self.deadline if held else None
        self.reason_change_at = self.deadline
        pool = every - frozenset().union(frozenset(), *prev.values()) - held
        self._spread(prev, sorted(pool, key=item_order), list(prev))
        if not held:
            for kind in (False, True):
                self._balance(prev, kind)
        self.last_target = dict(prev)
        return prev

    @staticmethod
    def _spread(target: dict, items: list, candidates: list) -> None:
        for item in items:
            kind = _is_task(item)
            chosen = min(candidates, key=lambda m: (sum(1 for i in target[m] if _is_task(i) == kind),
                                                    len(target[m]), m))
            target[chosen] = target[chosen] | {item}

    @staticmethod
    def _balance(target: dict, kind: bool) -> None:
        while len(target) > 1:
            count = {m: sum(1 for i in items if _is_task(i) == kind) for m, items in target.items()}
            most = max(target, key=lambda m: (count[m], m))
            least = min(target, key=lambda m: (count[m], m))
            if count[most] - count[least] <= 1:
                return
            item = max((i for i in target[most] if _is_task(i) == kind), key=item_order)
            target[most] = target[most] - {item}
            target[least] = target[least] | {item}


def assign_prepared(assignor: IncrementalCooperativeAssignor, prepared, now_ms: int) -> dict:
    """Run the assignor on a ConnectGroupPrepareAssignment response."""
    members = [(m.member_id, items_of(m.connectors_and_tasks)) for m in prepared.members]
    return assignor.assign(members, prepared.connectors, now_ms)
