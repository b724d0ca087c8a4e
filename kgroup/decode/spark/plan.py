"""The driver's plan: every segment file cut into byte ranges at batch boundaries, one Spark task each.

Only batch prefixes are read (offset, length and the magic byte, seeking over the bodies), so
planning a terabyte costs one small read per batch. Entries are found as the reader finds them
(`kgroup.records.framing.entry_starts`: the same framing and, after damage, the same search for the
next whole batch). With resync every cut is at a whole batch (its checksum read: one batch per range)
that the batch before it leads to by its length, which the local reader reaches too: a damaged batch
before it is followed by a search that stops there at the latest. Each task's search past damage may
end at its range's end, where the next task starts. (A search that starts back inside the batch before
the damaged one, see `framing`, resumes before the damage: the planner never cuts where a search led.)
The plan never starts a range past a point where the local reader would stop (a partial write at
the end, the --until-offset cut-off, and without resync an impossible length); whatever follows
such a point goes to the last range, whose task stops there and reports it as the local engine does.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kgroup.records.framing import entry_starts, file_reader, whole_entry_at

DEFAULT_SPLIT_BYTES = 64 << 20


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
    resync: bool = True  # read on past damage (kgroup.decode.run.reads_past_damage)
    #: The file the task opens: `path` made absolute on the driver, since an executor's working
    #: directory is not the driver's. `path` stays what rows and problems show, as the local engine does.
    open_path: str = ""

    @property
    def log_partition(self) -> tuple:
        """The replay key the local state view uses for this file's partition."""
        return (self.topic or self.path, self.partition)


def split_file(path: str, target_bytes: int = DEFAULT_SPLIT_BYTES,
               until_offset: int | None = None, resync: bool = True) -> list[tuple[int, int]]:
    """Byte ranges of about target_bytes, cut only at whole batches the reader reaches.

    A batch whose prefix offset is past until_offset starts the last range (its prefix offset is the
    batch's last offset, so no earlier batch can be past the cut-off).
    """
    if target_bytes <= 0:
        raise ValueError("target_bytes must be positive")
    ranges: list[tuple[int, int]] = []
    with open(path, "rb", buffering=0) as f:
        size = f.seek(0, os.SEEK_END)
        read_at = file_reader(f)
        start = 0
        for pos, offset, by_length in entry_starts(f, size, resync):
            if pos - start >= target_bytes and (not resync or by_length and whole_entry_at(read_at, pos, size)):
                ranges.append((start, pos))
                start = pos
            if until_offset is not None and offset > until_offset:
                break
        if start < size or not ranges:
            ranges.append((start, size))
    return ranges


def plan_tasks(inputs, target_bytes: int = DEFAULT_SPLIT_BYTES, until_offset: int | None = None,
               resync: bool = True) -> list[RangeTask]:
    """RangeTasks for every input file in reading order (inputs from kgroup.decode.inputs.resolve_inputs).

    An empty file still gets one (empty) task so its summary says it was read.
    """
    tasks: list[RangeTask] = []
    for index, inp in enumerate(inputs):
        seg = inp.segment
        try:
            ranges = split_file(seg.path, target_bytes, until_offset, resync)
        except OSError:
            ranges = [(0, 0)]  # the task reports the error the local reader reports
        for start, end in ranges:
            tasks.append(RangeTask(len(tasks), index, seg.path, seg.topic, seg.partition, seg.base_offset,
                                   inp.family, start, end, resync, os.path.abspath(seg.path)))
    return tasks
