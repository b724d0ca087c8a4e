"""The driver's plan: every segment file cut into byte ranges at batch boundaries, one Spark task each.

Only batch prefixes are read (offset, length and the magic byte, seeking over the bodies), so
planning a terabyte costs one small read per batch. Cuts follow exactly the chain of lengths the
reader follows, and the plan never starts a range past a point where the local reader would stop
(an impossible length, a partial write at the end, the --until-offset cut-off); whatever follows
such a point goes to the last range, whose task stops there and reports it as the local engine does.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

from kgroup.records.batch import LOG_OVERHEAD, MIN_ANY_LENGTH, MIN_LENGTH

DEFAULT_SPLIT_BYTES = 64 << 20
_PEEK = struct.Struct(">qi4xb")  # offset, length, (partition leader epoch / crc), magic
_PEEK_SIZE = 17


@dataclass(frozen=True, slots=True)
class RangeTask:
    """One byte range of one segment file; `seq` orders tasks as the local engine reads them."""

    seq: int
    input_index: int
    path: str
    topic: str | None
    partition: int | None
    base_offset: int
    family: str | None
    start: int
    end: int

    @property
    def log_partition(self) -> tuple:
        """The replay key the local state view uses for this file's partition."""
        return (self.topic or self.path, self.partition)


def split_file(path: str, target_bytes: int = DEFAULT_SPLIT_BYTES,
               until_offset: int | None = None) -> list[tuple[int, int]]:
    """Byte ranges of about target_bytes, cut only where the reader would go on reading.

    A batch whose prefix offset is past until_offset starts the last range (its prefix offset is the
    batch's last offset, so no earlier batch can be past the cut-off).
    """
    if target_bytes <= 0:
        raise ValueError("target_bytes must be positive")
    ranges: list[tuple[int, int]] = []
    with open(path, "rb", buffering=0) as f:
        size = f.seek(0, os.SEEK_END)
        pos = start = 0
        while pos + _PEEK_SIZE <= size:
            f.seek(pos)
            head = f.read(_PEEK_SIZE)
            if len(head) < _PEEK_SIZE:
                break
            offset, length, magic = _PEEK.unpack(head)
            if length < MIN_LENGTH.get(magic, MIN_ANY_LENGTH) or pos + LOG_OVERHEAD + length > size:
                break
            if until_offset is not None and offset > until_offset:
                break
            pos += LOG_OVERHEAD + length
            if pos - start >= target_bytes:
                ranges.append((start, pos))
                start = pos
        if start < size or not ranges:
            ranges.append((start, size))
    return ranges


def plan_tasks(inputs, target_bytes: int = DEFAULT_SPLIT_BYTES, until_offset: int | None = None
               ) -> list[RangeTask]:
    """RangeTasks for every input file in reading order (inputs from kgroup.decode.inputs.resolve_inputs).

    An empty file still gets one (empty) task so its summary says it was read.
    """
    tasks: list[RangeTask] = []
    for index, inp in enumerate(inputs):
        seg = inp.segment
        try:
            ranges = split_file(seg.path, target_bytes, until_offset)
        except OSError:
            ranges = [(0, 0)]  # the task reports the error the local reader reports
        for start, end in ranges:
            tasks.append(RangeTask(len(tasks), index, seg.path, seg.topic, seg.partition, seg.base_offset,
                                   inp.family, start, end))
    return tasks


def parse_size(text: str) -> int:
    """`64m`, `1g`, `512k`, `1048576` -> bytes (binary units)."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    raw = str(text).strip().lower().removesuffix("ib").removesuffix("b")
    try:
        if raw and raw[-1] in units:
            value = float(raw[:-1]) * units[raw[-1]]
        else:
            value = float(raw)
    except ValueError:
        raise ValueError(f"{text!r} is not a size (e.g. 64m, 1g, 1048576)") from None
    if value <= 0:
        raise ValueError(f"{text!r}: a size must be positive")
    return int(value)
