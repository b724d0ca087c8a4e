"""One decode pipeline from segment bytes to typed rows, shared by every output and both engines.

A row is a `DecodedRow`; problems (bad CRC, corrupt batch, undecodable record) are reported to a
`ProblemLog` with the file and byte position, and decoding goes on wherever the batch length is sane.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from kgroup.records import (
    RecordDecodeError,
    UnknownRecordType,
    decode_key,
    decode_value,
    record_type_name,
)
from kgroup.records.batch_model import BatchError, ReadFailed, TrailingBytes
from kgroup.records.segment import SegmentFile, family_for_topic, iter_segment

_alloc = object.__new__

# Record types whose meaning differs between __consumer_offsets and the draft __worker_offsets.
AMBIGUOUS_TYPES = frozenset(range(3, 9))


@dataclass(slots=True)
class DecodedRow:
    """One record as the tool reports it: data, control marker, or an error in place of the record."""

    kind: str  # "data" | "control" | "error"
    offset: int
    timestamp: int
    file: str
    partition: int | None
    producer_id: int = -1
    transactional: bool = False
    record_type: int | None = None
    type_name: str | None = None
    key: object = None  # DecodedKey
    value: object = None  # DecodedValue | None (tombstone)
    marker: str | None = None
    coordinator_epoch: int | None = None
    error: str | None = None
    key_bytes: bytes | None = None
    value_bytes: bytes | None = None


@dataclass
class Problem:
    file: str | None
    position: int | None
    offset: int | None
    message: str
    end: int | None = None  # skipped bytes: the message covers position to end ("skipped: ...")

    def __str__(self):
        if self.file is None:
            return self.message
        if self.end is not None:
            return f"{self.file}: bytes {self.position}–{self.end} {self.message}"
        where = [self.file]
        if self.position is not None:
            where.append(f"byte {self.position}")
        if self.offset is not None:
            where.append(f"offset {self.offset}")
        return f"{': '.join(where)}: {self.message}"


class StrictModeStop(Exception):
    """Raised by a strict ProblemLog at the first problem; carries it."""

    def __init__(self, problem: Problem):
        super().__init__(str(problem))
        self.problem = problem


@dataclass
class ProblemLog:
    """Collects problems; `report` is called for each one as it happens (e.g. to print it)."""

    strict: bool = False
    report: object = None
    problems: list[Problem] = field(default_factory=list)
    records_ok: int = 0
    trailing_bytes: dict[str, tuple[int, int]] = field(default_factory=dict)  # file -> (position, count)

    def add(self, file, position, offset, message, end=None):
        problem = Problem(file, position, offset, message, end)
        self.problems.append(problem)
        if self.report is not None:
            self.report(problem)
        if self.strict:
            raise StrictModeStop(problem)


def resolve_family(segment: SegmentFile, family: str | None) -> str | None:
    """The record family: the user's --family, else the topic name of the directory or file name."""
    if family:
        return family
    found = family_for_topic(segment.topic)
    if found:
        return found
    name = os.path.basename(segment.path)
    if "__worker_offsets" in name:
        return "connect"
    if "__share_group_state" in name:
        return "share-state"
    if "__consumer_offsets" in name:
        return "consumer"
    return None


class RowDecoder:
    """Decodes the records of batches into rows for one segment file and family."""

    def __init__(self, segment: SegmentFile, family: str | None, problems: ProblemLog):
        self.segment = segment
        self.family = family
        self.problems = problems
        self._file = segment.path
        self._partition = segment.partition

    def rows(self, batch, records=None) -> list[DecodedRow]:
        """Rows for batch.records, or for `records` (some of them) when given."""
        out = []
        if records is None:
            records = batch.records
        file, partition = self._file, self._partition
        pid = batch.producer_id if batch.magic >= 2 else -1
        txn = batch.is_transactional
        if batch.is_control:
            for rec in records:
                if rec.control in ("COMMIT", "ABORT"):
                    self.problems.records_ok += 1
                    out.append(DecodedRow("control", rec.offset, rec.timestamp, file, partition, pid, txn,
                                          marker=rec.control, coordinator_epoch=rec.coordinator_epoch))
                else:
                    self.problems.add(file, batch.position, rec.offset,
                                      f"control record of unknown type {rec.control}, ignored as Kafka does")
            return out
        family = self.family or "consumer"
        ambiguous = AMBIGUOUS_TYPES if self.family is None else ()
        dk, dv, alloc, row_class = decode_key, decode_value, _alloc, DecodedRow
        append = out.append
        ok = 0
        for rec in records:
            key = rec.key
            if key is None:
                row = self._error(rec, pid, txn, "Failed to decode message at offset %d using offset topic "
                                  "decoder (message had a missing key)" % rec.offset, batch)
                out.append(row)
                continue
            value = rec.value
            try:
                k = dk(key, family)
                rtype = k.record_type
                if rtype in ambiguous:
                    raise RecordDecodeError(
                        f"record type {rtype} means different things in __consumer_offsets and "
                        f"__worker_offsets, and the family can't be told from the path; pass --family")
                v = dv(rtype, value, family)
            except UnknownRecordType as exc:
                row = self._error(rec, pid, txn, f"Unknown record type {exc.record_type} at offset "
                                  f"{rec.offset}, skipping.", batch)
                row.record_type = exc.record_type
                out.append(row)
                continue
            except RecordDecodeError as exc:
                out.append(self._error(rec, pid, txn, str(exc), batch))
                continue
            ok += 1
            # built slot by slot: the dataclass __init__ call costs more than the sixteen stores
            row = alloc(row_class)
            row.kind = "data"
            row.offset = rec.offset
            row.timestamp = rec.timestamp
            row.file = file
            row.partition = partition
            row.producer_id = pid
            row.transactional = txn
            row.record_type = rtype
            row.type_name = k.name
            row.key = k
            row.value = v
            row.marker = row.coordinator_epoch = row.error = None
            row.key_bytes = key
            row.value_bytes = value
            append(row)
        self.problems.records_ok += ok
        return out

    def _error(self, rec, pid, txn, message, batch):
        self.problems.add(self._file, batch.position, rec.offset, message)
        return DecodedRow("error", rec.offset, rec.timestamp, self._file, self._partition, pid, txn,
                          error=message, key_bytes=rec.key, value_bytes=rec.value)


# Record types below this are taken for a coordinator's (Kafka's use a few dozen): an unknown one is
# a newer Kafka's record, not another topic's key.
PLAUSIBLE_RECORD_TYPES = 256
NOT_OFFSETS_LOG = "not a __consumer_offsets or __worker_offsets partition"


class ForeignLogCheck:
    """Tells a file that is not a coordinator partition (a normal topic's segment, a text file) by
    its start, so it is named in one line instead of one problem per record. Only for paths that do
    not name __consumer_offsets or __worker_offsets: a file that says it is one is decoded whatever
    it holds, every problem reported."""

    def __init__(self, segment: SegmentFile, family: str | None):
        self.active = resolve_family(segment, None) is None
        self.family = family or "consumer"

    def batch_error(self, error: BatchError) -> str | None:
        """The message for a file with no record batch at its start (None: report `error` as it is).
        A recoverable error (a CRC mismatch) has a batch after it: that batch is checked instead; a file
        that could not be opened or read says nothing about what it holds."""
        if not self.active or error.position != 0 or error.recoverable or isinstance(error, ReadFailed):
            return None
        self.active = False
        return f"{NOT_OFFSETS_LOG}: no record batch at its start ({error.message})"

    def first_batch(self, batch) -> str | None:
        """The message when the file's first data batch holds no group-coordinator key; checked once."""
        if not self.active or batch.is_control:
            return None
        self.active = False
        if any(self._coordinator_key(rec.key) for rec in batch.records):
            return None
        return (f"{NOT_OFFSETS_LOG}: no record of its first batch (offset {batch.base_offset}) has a "
                f"group-coordinator key (another topic's segment?); not read further")

    def _coordinator_key(self, key) -> bool:
        if key is None:
            return False
        try:
            decode_key(bytes(key), self.family)
        except UnknownRecordType as exc:
            return 0 <= exc.record_type < PLAUSIBLE_RECORD_TYPES
        except (RecordDecodeError, ValueError, IndexError):
            return False
        return True


def iter_decoded(segment: SegmentFile, family: str | None, problems: ProblemLog, *, progress=None,
                 decode=True, resync=True):
    """Yield (batch, rows) for every batch of one segment file (or "-", stdin); problems go to `problems`.

    A batch whose CRC does not match is still yielded (kafka-dump-log prints it as isvalid: false).
    After a batch that cannot be read, reading resumes at the next whole batch and the bytes passed
    over are one problem (`kgroup.records.framing`); resync=False reads as Kafka does, stopping
    where a length frames nothing (--strict, kafka-dump-log's text).
    With decode=False the rows are the batch's undecoded records (`--view state` decodes only
    the records compaction keeps, see `kgroup.decode.state_replay`).
    """
    decoder = RowDecoder(segment, family, problems)
    path = segment.path
    foreign = ForeignLogCheck(segment, family)
    read_anything = False

    def on_error(err: BatchError):
        nonlocal read_anything
        read_anything = True
        message = foreign.batch_error(err)
        if isinstance(err, TrailingBytes):  # kafka-dump-log's text says it whatever the file is
            problems.trailing_bytes[path] = (err.position, err.count)
        problems.add(path, err.position, None, message or err.message, getattr(err, "end", None))

    for batch in iter_segment(path, on_error=on_error, lean=not decode, resync=resync):
        read_anything = True
        message = foreign.first_batch(batch)
        if message is not None:
            problems.add(path, batch.position, None, message)
            return
        if progress is not None:
            progress(batch.position + batch.size)
        yield batch, decoder.rows(batch) if decode else batch.records
    if path == "-" and not read_anything:  # as for an empty file named on the command line (`inputs`)
        problems.add(path, None, None, "empty input: no record batch to decode")


def key_group(key: dict, default=None):
    """The group id of a decoded key: ``group`` in __consumer_offsets keys, ``groupId`` in the
    Connect family's."""
    return key.get("group", key.get("groupId", default))


def type_name(record_type: int, family: str | None) -> str:
    return record_type_name(record_type, family or "consumer")
