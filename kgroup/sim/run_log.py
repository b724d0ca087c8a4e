"""A run's event log and ownership intervals, kept as columns while the run goes and read as
the JSON document's dicts and the plot's tuples, each built when it is read.

A dynamic rolling bounce logs every member's "joined" and "synced" at each rebalance: 360,000
events for 300 members, some 4 million for 1,000. Held as dicts ({"t_ms", "event", "member",
**detail}) they cost some 300 bytes each, as one tuple each still 130; here the log is a few
columns: times and shape numbers in arrays, members and detail values in lists (one pointer each:
the strings and most numbers are the simulated clients' own objects), a shape being the kind and
the detail names, stored once. Some 80 bytes an event (partition lists included). The dicts are built one at a time, only
when someone reads the log (iterating, indexing, ``of_kind``): the JSON document, ``--events``,
``--plot``, the protocol rolls' counts. A table without ``--events`` never builds one.

Detail values are str, int, bool or None (what the simulator logs), which orjson and json write
alike: the document writer relies on it (``kgroup.writers.write_json``). A partition list is logged
as the tuple of (topic, partition) pairs the client holds anyway and read as text,
``orders:0,3 payments:1`` ("" for none), built with the dict.

The intervals (who held how many partitions from when to when: one per holder at each rebalance,
about half as many as the events) are kept the same way, a list of names and an array of three
numbers each: 32 bytes an interval instead of 136.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence


class Columns(Sequence):
    """A sequence stored as columns: an item is built by ``_item`` each time it is read."""

    __slots__ = ()

    def _item(self, index: int):
        raise NotImplementedError

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self._item(i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"{type(self).__name__} index out of range")
        return self._item(index)

    def __iter__(self):
        return map(self._item, range(len(self)))

    def __eq__(self, other) -> bool:
        return (isinstance(other, Sequence) and not isinstance(other, str)
                and len(self) == len(other) and all(a == b for a, b in zip(self, other)))

    __hash__ = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} items)"


class EventLog(Columns):
    """The events of one run, in order: a sequence of dicts built on demand."""

    __slots__ = ("_t_ms", "_shape_of", "_members", "_first_value", "_values", "_shapes", "_shape_ids")

    def __init__(self):
        self._shapes: list[tuple[str, tuple]] = []     # (kind, detail names), each stored once
        self._shape_ids: dict[tuple, int] = {}         # (kind, *detail names) -> index in _shapes
        self.clear()

    def clear(self) -> None:
        self._t_ms = array("q")
        self._shape_of = array("I")          # index in _shapes
        self._members: list = []             # a name, or None
        self._first_value = array("Q")       # where the event's detail values start in _values (read)
        self._values: list = []              # every event's detail values, one event after another

    def append(self, t_ms: int, kind: str, member: str | None, detail: dict) -> None:
        self.append_values(t_ms, (kind, *detail), member, detail.values())

    def append_values(self, t_ms: int, shape: tuple, member: str | None, values) -> None:
        """``append`` with the event's shape given as (kind, *detail names) and its detail values in
        that order: the simulated clients' events, some three a member at every rebalance, name a
        shape they keep rather than build a dict."""
        number = self._shape_ids.get(shape)
        if number is None:
            number = self._shape_ids[shape] = len(self._shapes)
            self._shapes.append((shape[0], shape[1:]))
        self._t_ms.append(t_ms)
        self._shape_of.append(number)
        self._members.append(member)
        self._values.extend(values)

    def _value_starts(self):
        """Where each event's detail values start in ``_values``: the running sum of its shapes' sizes,
        worked out when the log is read (``append``, some three times a member at every rebalance,
        does not keep it)."""
        starts = self._first_value
        done = len(starts)
        if done < len(self._shape_of):
            shapes, shape_of = self._shapes, self._shape_of
            first = 0 if not done else starts[-1] + len(shapes[shape_of[done - 1]][1])
            for number in shape_of[done:]:
                starts.append(first)
                first += len(shapes[number][1])
        return starts

    def of_kind(self, *kinds: str, start: int = 0):
        """The events of these kinds from index ``start`` on, as dicts (the others are not built)."""
        numbers = {n for n, (kind, _) in enumerate(self._shapes) if kind in kinds}
        shape_of = self._shape_of
        return (self._item(i) for i in range(start, len(shape_of)) if shape_of[i] in numbers)

    def members(self) -> list:
        """Every member named in the log, in the order of its first event."""
        return [name for name in dict.fromkeys(self._members) if name is not None]

    def _item(self, index: int) -> dict:
        """One event as the document has it: t_ms, event, member (when there is one), then the
        detail in the order it was logged."""
        kind, names = self._shapes[self._shape_of[index]]
        event = {"t_ms": self._t_ms[index], "event": kind}
        member = self._members[index]
        if member is not None:
            event["member"] = member
        first = self._value_starts()[index]
        values = self._values[first:first + len(names)]
        event.update(zip(names, [_partitions_text(v) if type(v) is tuple else v for v in values]))
        return event

    def __len__(self) -> int:
        return len(self._t_ms)


class StepSeries(Columns):
    """(t_ms, value) at every change of a count, in time order, as two arrays: a dynamic bounce
    changes its unowned partitions some 700,000 times for 300 members, 16 bytes each here against
    some 120 as tuples. A value at the time of the last point replaces it; the same value again adds
    nothing."""

    __slots__ = ("_t", "_v")

    def __init__(self, t_ms: int = 0, value: int = 0):
        self._t = array("q", [t_ms])
        self._v = array("q", [value])

    def note(self, t_ms: int, value: int) -> None:
        if self._v[-1] == value:
            return
        if self._t[-1] == t_ms:
            self._v[-1] = value
        else:
            self._t.append(t_ms)
            self._v.append(value)

    def peak(self) -> int:
        return max(self._v)

    def __len__(self) -> int:
        return len(self._t)

    def _item(self, index: int) -> tuple:
        return (self._t[index], self._v[index])


def _partitions_text(partitions: tuple) -> str:
    """((topic, partition), ...) -> ``orders:0,3 payments:1``."""
    by_topic: dict = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    return " ".join(f"{topic}:{','.join(map(str, sorted(ps)))}" for topic, ps in sorted(by_topic.items()))


class Intervals(Columns):
    """(name, start, end, partitions held) of every holding, in ms from the start of the measure."""

    __slots__ = ("_names", "_spans")

    def __init__(self):
        self.clear()

    def clear(self) -> None:
        self._names: list = []
        self._spans = array("q")             # start, end, partitions: three numbers an interval

    def append(self, name: str, start: int, end: int, partitions: int) -> None:
        self._names.append(name)
        self._spans.extend((start, end, partitions))

    def __len__(self) -> int:
        return len(self._names)

    def holders(self) -> list:
        """Every name that held partitions, in the order of its first interval (without building
        the intervals: the plot's rows at 100,000 of them)."""
        return list(dict.fromkeys(self._names))

    def _item(self, index: int) -> tuple:
        return (self._names[index], *self._spans[3 * index:3 * index + 3])
