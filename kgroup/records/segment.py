"""Finding and streaming `.log` segment files: single files, partition dirs, log dirs, stdin.

Only `.log` files hold data; a broker's directories also contain indexes, snapshots,
checkpoints and transient files that must be skipped, in the order the broker replays them.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from typing import Callable, Iterator

from ..errors import KgroupError
from .batch import scan
from .batch_model import Batch, BatchError, ReadFailed
from .framing import entry_starts

__all__ = ["SegmentFile", "SegmentPathError", "find_segments", "segment_file", "iter_segment",
           "family_for_topic", "scan_batch_boundaries", "FAMILIES"]

# a segment, or (named as a file) one being deleted, cleaned or swapped: the base offset is in its name
_SEGMENT_NAME = re.compile(r"^(\d{20})\.log(?:\.(?:deleted|cleaned|swap))?$")
# the shared vectors' flattened paths: <label><partition dir>__<20 digits>.log, where the
# label is a short tag ("A") glued to an internal topic name ("__consumer_offsets")
_FLAT_NAME = re.compile(r"^(.+)-(\d+)__(\d{20})\.log$")
_FLAT_LABEL = re.compile(r"^[A-Za-z0-9]{1,8}(__.+)$")
_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")
_SKIPPED_DIR_SUFFIXES = ("-delete", "-future", "-stray")
# What else a broker keeps in a partition directory (Kafka's LogFileUtils and the partition's
# metadata files): named as a file to decode, it is said to be one of these rather than misread
_NOT_SEGMENTS = {".index": "an offset index", ".timeindex": "a time index", ".txnindex": "a transaction index",
                 ".snapshot": "a producer state snapshot", "partition.metadata": "the partition's metadata file",
                 "leader-epoch-checkpoint": "the leader epoch checkpoint"}

FAMILIES = {"__consumer_offsets": "consumer", "__worker_offsets": "connect", "__share_group_state": "share-state"}


class SegmentPathError(KgroupError):
    """A path given for decoding that does not exist or holds no segment files."""


@dataclass(slots=True)
class SegmentFile:
    path: str
    topic: str | None
    partition: int | None
    base_offset: int


def family_for_topic(topic: str | None) -> str | None:
    """Which record family a topic's logs hold: "consumer", "connect", "share-state", or None if unknown."""
    return FAMILIES.get(topic) if topic else None


def _partition_of(dirname: str) -> tuple[str, int] | None:
    if dirname.endswith(_SKIPPED_DIR_SUFFIXES):
        return None
    m = _PARTITION_DIR.match(dirname)
    return (m.group(1), int(m.group(2))) if m else None


def segment_file(path: str) -> SegmentFile:
    """Describe one .log file from its own name and its parent directory's name."""
    name = os.path.basename(path)
    parent = os.path.basename(os.path.dirname(os.path.abspath(path)))
    m = _SEGMENT_NAME.match(name)
    if m:
        tp = _partition_of(parent)
        return SegmentFile(path, tp[0] if tp else None, tp[1] if tp else None, int(m.group(1)))
    m = _FLAT_NAME.match(name)
    if m:
        labelled = _FLAT_LABEL.match(m.group(1))
        topic = labelled.group(1) if labelled else m.group(1)
        return SegmentFile(path, topic, int(m.group(2)), int(m.group(3)))
    tp = _partition_of(parent)
    return SegmentFile(path, tp[0] if tp else None, tp[1] if tp else None, 0)


def _logs_in(directory: str) -> list[SegmentFile]:
    try:
        names = os.listdir(directory)
    except OSError as exc:
        raise SegmentPathError(f"{directory}: cannot list directory: {exc.strerror}") from None
    found = [segment_file(os.path.join(directory, n)) for n in names
             if n.endswith(".log") and os.path.isfile(os.path.join(directory, n))]
    found.sort(key=lambda s: (s.base_offset, s.path))
    return found


def find_segments(path) -> list[SegmentFile]:
    """The segment files under a .log file, a partition directory, or a log directory.

    A directory holding <topic>-<N> directories is a log directory (its own .log files, such as
    log4j's server.log, are not segments) unless its own name is <topic>-<N>. In a log directory
    only the __consumer_offsets-N / __worker_offsets-N partition directories are read when there
    are any (a broker's other topics are not coordinator logs); otherwise every <topic>-<N>
    directory is. Partition directories come sorted by topic then partition
    number; segments within one by base offset. Raises SegmentPathError naming the path when
    nothing is found.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise SegmentPathError(f"{path}: no such file or directory")
    if os.path.isfile(path):
        name = os.path.basename(path)
        for suffix, kind in _NOT_SEGMENTS.items():
            if name.endswith(suffix):
                raise SegmentPathError(f"{path}: {kind}, not a log segment (give a .log file or the partition "
                                       "directory)")
        return [segment_file(path)]
    if not os.path.isdir(path):
        raise SegmentPathError(f"{path}: not a regular file or directory")
    partitions = []
    try:
        entries = os.listdir(path)
    except OSError as exc:
        raise SegmentPathError(f"{path}: cannot list directory: {exc.strerror}") from None
    for name in entries:
        full = os.path.join(path, name)
        tp = _partition_of(name)
        if tp and os.path.isdir(full):
            partitions.append((tp[0], tp[1], full))
    # A directory's own .log files are its segments unless it holds partition directories and is not
    # named as one: a broker's log dir may share its directory with log4j's server.log, controller.log...
    if not partitions or _partition_of(os.path.basename(os.path.normpath(path))):
        direct = _logs_in(path)
        if direct:
            return direct
    # A broker's log directory holds every topic; only the coordinator topics hold these records.
    # A directory of other partition directories (e.g. renamed copies) is read whole.
    internal = [p for p in partitions if p[0] in FAMILIES]
    if internal:
        partitions = internal
    partitions.sort()
    found = [seg for _topic, _partition, full in partitions for seg in _logs_in(full)]
    if not found:
        raise SegmentPathError(f"{path}: holds no .log segment files "
                               "(expected a segment, a <topic>-<N> partition dir, or a log dir)")
    return found


def _raise(error: BatchError) -> None:
    raise error


def iter_segment(path, *, on_error: Callable[[BatchError], None] | None = None, lean: bool = False,
                 resync: bool = False) -> Iterator[Batch]:
    """Stream one segment (a path, a SegmentFile, or "-" for stdin), reporting every problem.

    on_error gets each BatchError (CrcMismatch before its still-yielded batch, TrailingBytes
    for a partial write at the end, SkippedBytes for damage passed over with `resync`); decoding
    goes on after recoverable ones and stops after the rest. If on_error raises, iteration stops
    with that exception. Default: raise.
    lean: a data batch's records may be LazyRecords; resync: see `scan`.
    """
    handler = on_error or _raise
    if isinstance(path, SegmentFile):
        path = path.path
    path = os.fspath(path)
    if path == "-":
        yield from _events(sys.stdin.buffer, "-", handler, lean, resync)
        return
    try:
        f = open(path, "rb", buffering=0)
    except OSError as exc:
        handler(ReadFailed(path, 0, f"cannot open: {exc.strerror}"))
        return
    with f:
        yield from _events(f, path, handler, lean, resync)


def _events(stream, path: str, handler, lean: bool = False, resync: bool = False) -> Iterator[Batch]:
    try:
        for event in scan(stream, path, lean=lean, resync=resync):
            if isinstance(event, Batch):
                yield event
            else:
                handler(event)
    except OSError as exc:
        handler(ReadFailed(path, 0, f"read failed: {exc.strerror or exc}"))


def scan_batch_boundaries(path, target_bytes: int = 64 << 20) -> list[tuple[int, int]]:
    """Byte ranges of about target_bytes each, cut only at batch boundaries.

    Reads just the prefix of each batch (seeking over the bodies), as Kafka's reader frames them
    (`framing.entry_starts`, no resync). The last range always runs to the end of the file so a
    damaged tail is seen by whoever reads it.
    """
    path = os.fspath(path)
    ranges: list[tuple[int, int]] = []
    with open(path, "rb", buffering=0) as f:
        size = f.seek(0, os.SEEK_END)
        start = 0
        for pos, _offset, _by_length in entry_starts(f, size, resync=False):
            if pos - start >= target_bytes:
                ranges.append((start, pos))
                start = pos
        if start < size:
            ranges.append((start, size))
    return ranges
