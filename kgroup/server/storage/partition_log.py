"""One partition's log: segment files in Kafka's layout, an in-memory batch index, fsync on demand.

`<dir>/<20-digit base offset>.log` files hold concatenated magic-2 batches. On open every segment is
scanned; a torn or corrupt (bad CRC) tail of the last segment, a write cut short by a crash, is
truncated away as Kafka's recovery does (with a warning), so the log ends on the last whole batch.
Anything else (damage in an earlier segment, damage in the last one with a valid batch after it, a
non-magic-2 batch) stops the start-up and is left untouched.
"""

from __future__ import annotations

import bisect
import logging
import os
from dataclasses import dataclass

import crc32c

from kgroup.server.storage.batches import HEADER_SIZE, parse_header

log = logging.getLogger("kgroup.server")


class LogCorruptError(ValueError):
    """A segment other than the last one is damaged; the message names the file and byte."""


@dataclass(slots=True)
class IndexEntry:
    base_offset: int
    last_offset: int
    max_timestamp: int
    segment: int  # index into PartitionLog.segments
    position: int
    length: int
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1


@dataclass(slots=True)
class Segment:
    base_offset: int
    path: str
    fd: int
    size: int


def _entry(header, seg_no: int, pos: int) -> IndexEntry:
    return IndexEntry(header.base_offset, header.last_offset, header.max_timestamp, seg_no, pos,
                      header.length, header.producer_id, header.producer_epoch,
                      header.base_sequence)


def _next_valid_batch(data: bytes, start: int) -> int | None:
    """The position of the first whole magic-2 batch with a good CRC-32C at or after `start`, if any.

    Only run on a damaged last segment: a crash mid-append leaves a torn tail with nothing valid
    after it, so a valid batch further on means the damage is something else.
    """
    view = memoryview(data)
    pos = data.find(b"\x02", start + 16)
    while pos != -1:
        at = pos - 16
        if at + HEADER_SIZE <= len(data):
            header = parse_header(data, at)
            if (header.length >= HEADER_SIZE and at + header.length <= len(data)
                    and crc32c.crc32c(view[at + 21:at + header.length]) == header.crc):
                return at
        pos = data.find(b"\x02", pos + 1)
    return None


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}.log"


class PartitionLog:
    def __init__(self, directory: str, segment_bytes: int = 1073741824):
        self.directory = directory
        self.segment_bytes = segment_bytes
        self.segments: list[Segment] = []
        self.index: list[IndexEntry] = []
        self._last_offsets: list[int] = []
        self.next_offset = 0
        self.log_start_offset = 0
        self._dirty: set[int] = set()
        self._dir_dirty = False
        self.truncated_bytes = 0
        os.makedirs(directory, exist_ok=True)
        self._load()

    # -- opening -------------------------------------------------------------------------
    def _load(self):
        names = sorted(n for n in os.listdir(self.directory)
                       if n.endswith(".log") and n[:-4].isdigit())
        for i, name in enumerate(names):
            path = os.path.join(self.directory, name)
            fd = os.open(path, os.O_RDWR)
            segment = Segment(int(name[:-4]), path, fd, 0)
            self.segments.append(segment)
            self._scan(len(self.segments) - 1, last=(i == len(names) - 1))
        if not self.segments:
            self._roll(0)
        self.log_start_offset = self.index[0].base_offset if self.index else self.segments[0].base_offset
        if not self.index:
            self.next_offset = self.segments[-1].base_offset

    def _scan(self, seg_no: int, last: bool):
        segment = self.segments[seg_no]
        data = os.pread(segment.fd, os.fstat(segment.fd).st_size, 0)
        pos = 0
        problem = None
        while pos < len(data):
            if len(data) - pos < HEADER_SIZE:
                problem = f"{len(data) - pos} bytes too short for a batch header"
                break
            header = parse_header(data, pos)
            if header.magic != 2:
                # Not a torn write: legacy (magic 0/1) or foreign data. Never truncate it.
                raise LogCorruptError(
                    f"{segment.path}: byte {pos}: magic {header.magic}; kgroup serve reads and "
                    f"writes magic 2 batches only (the file is left untouched)")
            if header.length < HEADER_SIZE or pos + header.length > len(data):
                problem = f"batch length {header.length} runs past the end"
                break
            if crc32c.crc32c(memoryview(data)[pos + 21:pos + header.length]) != header.crc:
                problem = "CRC-32C mismatch"
                break
            self._add_index(_entry(header, seg_no, pos))
            pos += header.length
        if problem is not None:
            if not last:
                raise LogCorruptError(f"{segment.path}: byte {pos}: {problem}")
            following = _next_valid_batch(data, pos + 1)
            if following is not None:
                # Whole batches after the damage: not a write cut short by a crash but corruption.
                # Truncating would throw away every later commit; stop instead.
                raise LogCorruptError(
                    f"{segment.path}: byte {pos}: {problem}, and a valid batch follows at byte "
                    f"{following}: the file is damaged, not torn by a crash (left untouched)")
            self.truncated_bytes += len(data) - pos
            log.warning("%s: byte %d: %s; the last %d bytes were a write cut short by a crash "
                        "and are truncated", segment.path, pos, problem, len(data) - pos)
            os.ftruncate(segment.fd, pos)
            os.fsync(segment.fd)
        segment.size = pos

    def _add_index(self, entry: IndexEntry):
        self.index.append(entry)
        self._last_offsets.append(entry.last_offset)
        self.next_offset = entry.last_offset + 1

    def _roll(self, base_offset: int):
        path = os.path.join(self.directory, segment_name(base_offset))
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self.segments.append(Segment(base_offset, path, fd, 0))
        self._dir_dirty = True

    # -- writing -------------------------------------------------------------------------
    def append(self, data: bytes, headers) -> None:
        """Append batches already rebased to start at `next_offset` (see batches.rebase)."""
        segment = self.segments[-1]
        if segment.size > 0 and segment.size + len(data) > self.segment_bytes:
            self._roll(headers[0].base_offset)
            segment = self.segments[-1]
        written = os.pwrite(segment.fd, data, segment.size)
        if written != len(data):
            raise OSError(f"{segment.path}: short write ({written} of {len(data)} bytes)")
        pos = segment.size
        seg_no = len(self.segments) - 1
        for header in headers:
            self._add_index(_entry(header, seg_no, pos))
            pos += header.length
        segment.size = pos
        self._dirty.add(seg_no)

    def flush(self) -> None:
        """fsync every segment written since the last flush (and the directory after a roll)."""
        for seg_no in sorted(self._dirty):
            os.fsync(self.segments[seg_no].fd)
        self._dirty.clear()
        if self._dir_dirty:
            dir_fd = os.open(self.directory, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
            self._dir_dirty = False

    def close(self) -> None:
        for segment in self.segments:
            try:
                os.close(segment.fd)
            except OSError:
                pass
        self.segments = []

    # -- reading -------------------------------------------------------------------------
    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one holding `offset`; always at least one batch if any exists."""
        i = bisect.bisect_left(self._last_offsets, offset)
        chunks = []
        total = 0
        while i < len(self.index):
            entry = self.index[i]
            if chunks and total + entry.length > max_bytes:
                break
            segment = self.segments[entry.segment]
            chunks.append(os.pread(segment.fd, entry.length, entry.position))
            total += entry.length
            i += 1
        return b"".join(chunks)

    def iter_batches(self):
        """(IndexEntry, batch bytes) for every batch, in offset order (used for replay)."""
        for entry in self.index:
            yield entry, os.pread(self.segments[entry.segment].fd, entry.length, entry.position)

    def _records_of(self, entry: IndexEntry):
        from kgroup.records.batch import read_batches

        raw = os.pread(self.segments[entry.segment].fd, entry.length, entry.position)
        for batch in read_batches(raw, path=f"{self.directory} offset {entry.base_offset}"):
            yield from batch.records

    def offset_for_timestamp(self, timestamp: int):
        """(offset, timestamp) of the first record whose timestamp is >= `timestamp`, or None."""
        for entry in self.index:
            if entry.max_timestamp >= timestamp:
                for record in self._records_of(entry):
                    if record.timestamp >= timestamp:
                        return record.offset, record.timestamp
        return None

    def max_timestamp(self):
        """(offset, timestamp) of the first record with the largest timestamp, or None."""
        best = None
        for entry in self.index:
            if best is None or entry.max_timestamp > best.max_timestamp:
                best = entry
        if best is None:
            return None
        for record in self._records_of(best):
            if record.timestamp == best.max_timestamp:
                return record.offset, record.timestamp
        return best.last_offset, best.max_timestamp
