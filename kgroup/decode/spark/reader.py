"""What one Spark task does with its byte range: the local engine's reading loop, range-bounded.

The same scanner, RowDecoder and ProblemLog as `kgroup.decode.decoder.iter_decoded` and
`kgroup.decode.inputs.iter_input`, with the same rules (a CRC mismatch is reported and the batch still
read, damage is passed over to the next whole batch, the --until-offset stop is decided after reading
the batch, --until-time filters rows), so the problems and rows of all ranges of a file, concatenated,
are exactly those of the local engine. A range's batches are those that start in it (the scanner's
`stop`); a batch may end past it.

Iterating a reader decodes every record; `records()` gives each batch's records undecoded, as the
local engine's fast paths take them (`kgroup.decode.fast_rows`, `fast_parquet`, the compacting state
reduction of `replay`), which decode through `reader.decoder` only what they need.
No pyspark import: this runs in Spark's Python workers and in plain tests alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kgroup.records.batch import scan
from kgroup.records.batch_model import Batch, BatchError
from kgroup.decode.decoder import ForeignLogCheck, Problem, ProblemLog, RowDecoder
from kgroup.records.segment import SegmentFile


@dataclass(slots=True)
class RangeSummary:
    """What the driver needs besides the rows: problems in order, counts, and whether reading stopped."""

    seq: int
    problems: list = field(default_factory=list)  # (file, byte position, offset, message, end) in order
    records_ok: int = 0
    batches: int = 0
    stops_file: bool = False  # the local reader would read nothing more of this file

    def problem_objects(self) -> list[Problem]:
        return [Problem(*item) for item in self.problems]


class RangeReader:
    """Iterates (batch, rows) for one RangeTask, or with `records()` (batch, undecoded records);
    problems land in `summary` as they are found."""

    def __init__(self, task, until_offset=None, until_time=None):
        self.task = task
        self.until_offset = until_offset
        self.until_time = until_time
        self.summary = RangeSummary(task.seq)
        self._log = ProblemLog(report=self._collect)
        #: the task's RowDecoder, reporting to `summary` (set once reading starts)
        self.decoder: RowDecoder | None = None

    @property
    def whole_batches(self) -> bool:
        """Every batch comes with all its records (no --until cut-off): what the text fast paths need."""
        return self.until_offset is None and self.until_time is None

    def _collect(self, problem: Problem) -> None:
        self.summary.problems.append((problem.file, problem.position, problem.offset, problem.message,
                                      problem.end))

    def __iter__(self):
        """(batch, rows): every record decoded, the rows of a batch past --until-offset too (their
        problems reported), as `iter_decoded` decodes a batch before `apply_cutoffs` sees it."""
        return self._read(decode=True)

    def records(self):
        """(batch, records): the records within the cut-offs undecoded (a list, or LazyRecords from
        the reader's lean scan), as `iter_input(..., decode=False)` gives them to the local engine's
        fast sinks. Whatever the caller decodes through `decoder` is counted and reported in `summary`;
        a caller that decodes after the last batch calls `count_records()` when done."""
        return self._read(decode=False)

    def count_records(self) -> None:
        """The records decoded so far, into the summary."""
        self.summary.records_ok = self._log.records_ok

    def _read(self, decode: bool):
        task, log, summary = self.task, self._log, self.summary
        segment = SegmentFile(task.path, task.topic, task.partition, task.base_offset)
        decoder = self.decoder = RowDecoder(segment, task.family, log)
        foreign = ForeignLogCheck(segment, task.family)
        foreign.active = foreign.active and task.start == 0  # the file's start is in this range
        until_offset, until_time = self.until_offset, self.until_time
        try:
            f = open(task.open_path or task.path, "rb", buffering=0)
        except OSError as exc:
            log.add(task.path, 0, None, f"cannot open: {exc.strerror}")
            summary.stops_file = True
            return
        with f:
            try:
                for event in scan(f, task.path, task.start, lean=not decode, resync=task.resync, stop=task.end):
                    if not isinstance(event, Batch):
                        self._batch_error(event, foreign.batch_error(event))
                        continue
                    message = foreign.first_batch(event)
                    if message is not None:
                        log.add(task.path, event.position, None, message)
                        summary.stops_file = True
                        break
                    rows = decoder.rows(event) if decode else event.records
                    if until_offset is not None and event.base_offset > until_offset:
                        summary.stops_file = True
                        break
                    if until_offset is not None or until_time is not None:
                        rows = [r for r in rows
                                if (until_offset is None or r.offset <= until_offset)
                                and (until_time is None or r.timestamp <= until_time)]
                    summary.batches += 1
                    summary.records_ok = log.records_ok
                    yield event, rows
            except OSError as exc:
                log.add(task.path, 0, None, f"read failed: {exc.strerror or exc}")
                summary.stops_file = True
        summary.records_ok = log.records_ok

    def _batch_error(self, err: BatchError, message: str | None = None) -> None:
        self._log.add(self.task.path, err.position, None, message or err.message, getattr(err, "end", None))
        if not err.recoverable:
            self.summary.stops_file = True
