"""A run's event log, kept compact while the run goes and read as the JSON document's dicts.

A dynamic rolling bounce logs every member's "joined" and "synced" at each rebalance: 360,000
events for 300 members, some 4 million for 1,000. Held as dicts ({"t_ms", "event", "member",
**detail}) they cost several hundred bytes each; here an event is one flat tuple
``(t_ms, shape, member, *detail values)`` whose ``shape`` — the kind and the detail names — is one
object shared by every event of that kind and those names. The dicts are built one at a time, only
when someone reads the log (iterating, indexing, ``list(log)``): the JSON document, ``--events``,
``--plot``. A table without ``--events`` never builds one.

Detail values are str, int, bool or None (what the simulator logs), which orjson and json write
alike: the document writer relies on it (``kgroup.writers.write_json``).
"""

from __future__ import annotations

from collections.abc import Sequence


class EventLog(Sequence):
    """The events of one run, in order: a sequence of dicts built on demand."""

    __slots__ = ("_entries", "_shapes")

    def __init__(self):
        self._entries: list[tuple] = []
        self._shapes: dict[tuple, tuple] = {}   # (kind, detail names) -> itself, one shared copy

    def append(self, t_ms: int, kind: str, member: str | None, detail: dict) -> None:
        key = (kind, tuple(detail))
        shape = self._shapes.get(key)
        if shape is None:
            shape = self._shapes[key] = key
        self._entries.append((t_ms, shape, member, *detail.values()))

    def clear(self) -> None:
        self._entries.clear()

    def of_kind(self, *kinds: str, start: int = 0):
        """The events of these kinds from index ``start`` on, as dicts (the others are not built)."""
        wanted = set(kinds)
        for index in range(start, len(self._entries)):
            entry = self._entries[index]
            if entry[1][0] in wanted:
                yield _as_dict(entry)

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [_as_dict(entry) for entry in self._entries[index]]
        return _as_dict(self._entries[index])

    def __iter__(self):
        return map(_as_dict, self._entries)

    def __eq__(self, other) -> bool:
        if isinstance(other, EventLog):
            return self._entries == other._entries
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None

    def __repr__(self) -> str:
        return f"EventLog({len(self._entries)} events)"


def _as_dict(entry: tuple) -> dict:
    """One event as the document has it: t_ms, event, member (when there is one), then the detail
    in the order it was logged."""
    t_ms, (kind, names), member = entry[:3]
    event = {"t_ms": t_ms, "event": kind}
    if member is not None:
        event["member"] = member
    event.update(zip(names, entry[3:]))
    return event
