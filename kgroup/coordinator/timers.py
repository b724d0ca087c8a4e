"""Keyed timers on virtual time.

Rescheduling a key replaces its previous deadline (Kafka's coordinator timer does the
same), so a heartbeat costs one dict write and one heap push; replaced entries stay in
the heap and are skipped when they surface, and the heap is compacted when they pile up.
Every change pushes the key's previous entry to the undo journal (if one is set), so a reverted
operation gets its timers back, the one that fired included.
"""

from __future__ import annotations

import heapq
from typing import Callable, Hashable


class TimerQueue:
    __slots__ = ("_heap", "_live", "_seq", "undo")

    def __init__(self, undo=None) -> None:
        self._heap: list[tuple[int, int, Hashable]] = []
        self._live: dict[Hashable, tuple[int, int, Callable[[], None]]] = {}
        self._seq = 0
        self.undo = undo

    def schedule(self, key: Hashable, deadline_ms: int, fn: Callable[[], None]) -> None:
        undo = self.undo
        if undo is not None and undo.open:
            undo.actions.append((self._restore, (key, self._live.get(key))))
        self._seq += 1
        self._live[key] = (deadline_ms, self._seq, fn)
        heapq.heappush(self._heap, (deadline_ms, self._seq, key))
        if len(self._heap) > 4 * len(self._live) + 1024:
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
        self._live[key] = entry
        # the heap may still hold this entry too: the duplicate is skipped when it surfaces
        heapq.heappush(self._heap, (entry[0], entry[1], key))

    def deadline(self, key: Hashable) -> int | None:
        entry = self._live.get(key)
        return None if entry is None else entry[0]

    def __contains__(self, key: Hashable) -> bool:
        return key in self._live

    def __len__(self) -> int:
        return len(self._live)

    def next_deadline(self) -> int | None:
        heap, live = self._heap, self._live
        while heap:
            deadline, seq, key = heap[0]
            entry = live.get(key)
            if entry is not None and entry[1] == seq:
                return deadline
            heapq.heappop(heap)
        return None

    def pop_due(self, now_ms: int) -> tuple[int, Callable[[], None]] | None:
        """Remove and return (deadline, fn) of the earliest timer due at or before now_ms."""
        heap, live = self._heap, self._live
        while heap and heap[0][0] <= now_ms:
            deadline, seq, key = heapq.heappop(heap)
            entry = live.get(key)
            if entry is not None and entry[1] == seq:
                del live[key]
                undo = self.undo
                if undo is not None and undo.open:
                    undo.push(self._restore, key, entry)
                return deadline, entry[2]
        return None

    def _compact(self) -> None:
        self._heap = [(d, s, k) for k, (d, s, _) in self._live.items()]
        heapq.heapify(self._heap)
