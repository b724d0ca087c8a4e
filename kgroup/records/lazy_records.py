"""A batch's records kept as the reader unpacked them, built into Record objects only when asked.

`--view state` keeps the latest record per key, so most records of a dump are overwritten before
anyone looks at them: building a Record for each costs more than the rest of the walk. The reader
(`batch._fast_records`) unpacks a run of identically laid out records with one struct into
(timestamp delta byte, offset delta byte, key, value) tuples; `LazyRecords` keeps those tuples and
builds a record with `build_run`, the same code the eager reader builds every record with.
"""

from __future__ import annotations

from itertools import chain
from operator import attrgetter, itemgetter

from .batch_model import Record

__all__ = ["LazyRecords", "build_run", "record_parts", "part_fields", "ZIGZAG"]

#: Value of every one-byte zig-zag varint (the reader decodes short varints through it).
ZIGZAG = [(b >> 1) ^ -(b & 1) for b in range(128)]
_alloc = object.__new__
_key_of_record = attrgetter("key")
_key_of_row = itemgetter(2)


def build_run(rows, base_offset: int, base_ts: int, base_seq: int, key_size: int, value_size: int
              ) -> list[Record]:
    """Records for unpacked rows of one run (create-time timestamps, a base sequence that the
    run's one-byte deltas cannot wrap). Records are built slot by slot: a dataclass __init__
    call costs more than the twelve stores."""
    records = []
    append = records.append
    zz = ZIGZAG
    new = Record
    alloc = _alloc
    has_seq = base_seq >= 0
    tombstones = value_size < 0  # the struct gave b"" for each null value
    for ts, od, key, value in rows:
        rec = alloc(new)
        delta = zz[od]
        rec.offset = base_offset + delta
        rec.timestamp = base_ts + zz[ts]
        rec.sequence = base_seq + delta if has_seq else -1
        rec.key = key
        rec.value = None if tombstones else value
        rec.headers = []
        rec.key_size = key_size
        rec.value_size = value_size
        rec.crc = rec.is_valid = rec.control = rec.coordinator_epoch = None
        append(rec)
    return records


class LazyRecords:
    """One batch's records in file order: parts that are lists of Records or unpacked runs.

    Iterating builds every Record; `keys()` and `at(i)` do not build the others.
    """

    __slots__ = ("parts", "starts", "count", "base_offset", "base_ts", "base_seq")

    def __init__(self, base_offset: int, base_ts: int, base_seq: int):
        self.parts: list = []  # list[Record] or (rows, key_size, value_size)
        self.starts: list[int] = []  # index of each part's first record
        self.count = 0
        self.base_offset, self.base_ts, self.base_seq = base_offset, base_ts, base_seq

    def add_records(self, records: list) -> None:
        if records:
            self.starts.append(self.count)
            self.parts.append(records)
            self.count += len(records)

    def add_run(self, rows: list, key_size: int, value_size: int) -> None:
        self.starts.append(self.count)
        self.parts.append((rows, key_size, value_size))
        self.count += len(rows)

    def __len__(self) -> int:
        return self.count

    def __iter__(self):
        return chain.from_iterable(map(self._built, self.parts))

    def _built(self, part) -> list:
        if type(part) is list:
            return part
        rows, key_size, value_size = part
        return build_run(rows, self.base_offset, self.base_ts, self.base_seq, key_size, value_size)

    def keys(self) -> list:
        """Every record's key bytes, in order."""
        out: list = []
        for part in self.parts:
            out += map(_key_of_record, part) if type(part) is list else map(_key_of_row, part[0])
        return out

    def at(self, index: int) -> Record:
        """The record at index, built alone."""
        starts = self.starts
        i = len(starts) - 1
        while starts[i] > index:
            i -= 1
        part = self.parts[i]
        j = index - starts[i]
        if type(part) is list:
            return part[j]
        rows, key_size, value_size = part
        return build_run(rows[j:j + 1], self.base_offset, self.base_ts, self.base_seq, key_size, value_size)[0]


def record_parts(records) -> list:
    """A batch's records (a LazyRecords or a list) as parts in order: lists of Records, and
    unpacked runs as (rows, key_size, value_size)."""
    return records.parts if type(records) is LazyRecords else [records]


def part_fields(records, part):
    """Each record of one part (see record_parts) as the tuple of Record's first eight fields
    (offset, timestamp, sequence, key, value, headers, key_size, value_size), without building a
    Record for a run's rows. ``Record(*fields)`` is the record itself (the magic-2 data records
    this walks have no CRC or control fields)."""
    if type(part) is not tuple:
        for r in part:
            yield r.offset, r.timestamp, r.sequence, r.key, r.value, r.headers, r.key_size, r.value_size
        return
    rows, key_size, value_size = part
    zz = ZIGZAG
    base_offset, base_ts, base_seq = records.base_offset, records.base_ts, records.base_seq
    has_seq = base_seq >= 0
    tombstones = value_size < 0
    for ts, od, key, value in rows:
        delta = zz[od]
        yield (base_offset + delta, base_ts + zz[ts], base_seq + delta if has_seq else -1, key,
               None if tombstones else value, [], key_size, value_size)
