"""Keyed timers on virtual time.

Rescheduling a key replaces its previous deadline (Kafka's coordinator timer does the same).
Timers fire in (deadline, schedule order). The heap holds, for every live key, one entry
no later than its timer (the key's *bound*): a session timer pushed back by every heartbeat
costs one dict write, and its bound, when it surfaces early, is pushed again once at the
timer's real place. Entries that are no key's bound any more are skipped when they surface,
and the heap is compacted when they pile up. Every change pushes the key's previous entry to
the undo journal (if one is set), so a reverted operation gets its timers back, the one that
fired included.
"""

from __future__ import annotations

import heapq
from typing import Callable, Hashable

# _live[key]: (deadline, seq, fn, bound); bound is the (deadline, seq) of the key's heap entry


class TimerQueue:
    __slots__ = ("_heap", "_live", "_seq", "undo")

    def __init__(self, undo=None) -> None:
        self._heap: list[tuple[int, int, Hashable]] = []
        self._live: dict[Hashable, tuple[int, int, Callable[[], None], tuple[int, int]]] = {}
        self._seq = 0
        self.undo = undo

    def schedule(self, key: Hashable, deadline_ms: int, fn: Callable[[], None]) -> None:
        live = self._live
        previous = live.get(key)
        undo = self.undo
        if undo is not None and undo.open:
            undo.actions.append((self._restore, (key, previous)))
        self._seq += 1
        seq = self._seq
        if previous is not None and previous[3][0] <= deadline_ms:
            live[key] = (deadline_ms, seq, fn, previous[3])    # its bound still comes first
            return
        live[key] = (deadline_ms, seq, fn, (deadline_ms, seq))
        heapq.heappush(self._heap, (deadline_ms, seq, key))
        if len(self._heap) > 4 * len(live) + 1024:
            self._compact()

    def cancel(self, key: Hashable) -> None:
        entry = self._live.pop(key, None)
        if entry is not None:
            undo = self.undo
            if undo is not None and undo.open:
                undo.push(self._restore, key, entry)

    def _restore(self, key: Hashable, entry) -> None:
        """Put back a key's earlier entry (None: the key had no timer)."""
        if entry is None:
            self._live.pop(key, None)
            return
        deadline, seq, fn, _ = entry
        # its bound may have surfaced since: the entry itself goes back as its bound
        self._live[key] = (deadline, seq, fn, (deadline, seq))
        heapq.heappush(self._heap, (deadline, seq, key))

    def deadline(self, key: Hashable) -> int | None:
        entry = self._live.get(key)
        return None if entry is None else entry[0]

    def __contains__(self, key: Hashable) -> bool:
        return key in self._live

    def __len__(self) -> int:
        return len(self._live)

    def _settle_top(self) -> tuple[int, int, Hashable] | None:
        """Drop stale entries and move surfaced bounds to their timers' places until the heap's
        top is a live timer itself (returned), or the heap is empty (None)."""
        heap, live = self._heap, self._live
        while heap:
            top = heap[0]
            deadline, seq, key = top
            entry = live.get(key)
            if entry is not None and entry[3] == (deadline, seq):
                if entry[1] == seq:
                    return top
                real = entry[:2]
                live[key] = (*real, entry[2], real)
                heapq.heapreplace(heap, (*real, key))
            else:
                heapq.heappop(heap)
        return None

    def next_deadline(self) -> int | None:
        top = self._settle_top()
        return None if top is None else top[0]

    def pop_due(self, now_ms: int) -> tuple[int, Callable[[], None]] | None:
        """Remove and return (deadline, fn) of the earliest timer due at or before now_ms."""
        top = self._settle_top()
        if top is None or top[0] > now_ms:
            return None
        deadline, _, key = heapq.heappop(self._heap)
        entry = self._live.pop(key)
        undo = self.undo
        if undo is not None and undo.open:
            undo.push(self._restore, key, entry)
        return deadline, entry[2]

    def _compact(self) -> None:
        live = self._live
        for key, (deadline, seq, fn, _) in live.items():
            live[key] = (deadline, seq, fn, (deadline, seq))
        self._heap = [(deadline, seq, key) for key, (deadline, seq, _, _) in live.items()]
        heapq.heapify(self._heap)
