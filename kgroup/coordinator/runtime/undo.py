"""The undo journal of the coordinator's open operation (Kafka's SnapshotRegistry, reduced).

Every coordinator operation (a request, a timer firing, a transaction marker) changes state in
place and appends records; the host then makes those records durable. If that fails, the
operation is reverted as one unit: each mutation point pushed its inverse here before it
changed anything, and ``revert`` runs them newest first. Groups and members save themselves
once per operation (copy on first write: a group's fields and containers, a member's fields);
timers and offsets push one inverse per change. A heartbeat therefore costs one small tuple (the
session timer's previous entry), never a copy of its group.

Outside an operation (``open`` False) nothing is recorded: a coordinator rebuilt by
``from_records``, or driven by tests between requests, pays nothing; nor does a coordinator
without a ``log_writer``, whose operations cannot fail (the journal is opened only with one).
"""

from __future__ import annotations

from typing import Callable


class UndoJournal:
    __slots__ = ("open", "actions", "saved")

    def __init__(self) -> None:
        self.open = False
        # (inverse, args), newest last; the hot mutation points append to it directly
        self.actions: list[tuple[Callable, tuple]] = []
        self.saved: set = set()     # what saved itself in this operation (first_change)

    def begin(self) -> None:
        self.open = True

    def push(self, fn: Callable, *args) -> None:
        """Remember ``fn(*args)`` as the inverse of a change about to be made."""
        if self.open:
            self.actions.append((fn, args))

    def first_change(self, key) -> bool:
        """True the first time ``key`` (an object, or a hashable name of some state) is changed
        in this operation: the caller saves that state now."""
        if not self.open:
            return False
        saved = self.saved
        size = len(saved)
        saved.add(key)
        return len(saved) != size

    def commit(self) -> None:
        self.open = False
        if self.actions:
            self.actions = []
            self.saved = set()

    def revert(self) -> None:
        actions = self.actions
        self.open = False
        self.actions = []
        self.saved = set()
        for fn, args in reversed(actions):
            fn(*args)

    # ---- containers: change them and remember the inverse (one tuple, whatever their size) ----
    def set_add(self, target: set, item) -> None:
        if self.open and item not in target:
            self.actions.append((target.discard, (item,)))
        target.add(item)

    def set_discard(self, target: set, item) -> None:
        if item in target:
            if self.open:
                self.actions.append((target.add, (item,)))
            target.discard(item)

    def set_clear(self, target: set) -> None:
        if target and self.open:
            self.actions.append((target.update, (set(target),)))
        target.clear()

    def dict_put(self, target: dict, key, value) -> None:
        """An existing key keeps its place; a new one is removed again on revert."""
        if self.open:
            self.actions.append((_put_back, (target, key, target.get(key, _MISSING))))
        target[key] = value

    def dict_del(self, target: dict, key) -> None:
        """Delete ``key``; a revert puts it back last (for maps whose order does not matter)."""
        if self.open:
            self.actions.append((_put_back, (target, key, target[key])))
        del target[key]

    def dict_put_many(self, target: dict, keys, value) -> None:
        """``target[key] = value`` for every key; one inverse for them all."""
        if self.open:
            self.actions.append((_put_back_many, (target, {key: target.get(key, _MISSING) for key in keys})))
        target.update(dict.fromkeys(keys, value))

    def dict_del_many(self, target: dict, keys) -> None:
        """Delete those of ``keys`` present; a revert puts them back last."""
        if self.open:
            self.actions.append((target.update, ({key: target[key] for key in keys if key in target},)))
        for key in keys:
            target.pop(key, None)


_MISSING = object()


def _put_back(target: dict, key, value) -> None:
    if value is _MISSING:
        target.pop(key, None)
    else:
        target[key] = value


NO_UNDO = UndoJournal()     # never opened: what a group outside any coordinator changes through


def _put_back_many(target: dict, saved: dict) -> None:
    for key, value in saved.items():
        _put_back(target, key, value)
