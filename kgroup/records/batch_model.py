"""What a read batch is: Record and Batch, the errors the readers report, and the names both readers use.

`batch` (magic 2 and the scanner) and `legacy` (magic 0 and 1) both build these; neither imports the
other's internals.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
NO_TIMESTAMP_TYPE = "NoTimestampType"
CONTROL_TYPES = {0: "ABORT", 1: "COMMIT"}


@dataclass(slots=True)
class Record:
    offset: int
    timestamp: int
    sequence: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    key_size: int  # -1 for a null key
    value_size: int  # -1 for a null value (tombstone)
    crc: int | None = None  # magic 0/1 only: the message's own CRC-32
    is_valid: bool | None = None  # magic 0/1 only
    control: str | None = None  # "COMMIT" | "ABORT" | "UNKNOWN(n)" for control records
    coordinator_epoch: int | None = None


@dataclass(slots=True)
class Batch:
    position: int  # byte position of the batch in its file
    base_offset: int
    last_offset: int
    magic: int
    size: int  # total bytes including the 12-byte offset+length prefix
    crc: int
    crc_valid: bool
    attributes: int
    compression: str  # "none" | "gzip" | "snappy" | "lz4" | "zstd"
    timestamp_type: str  # "CreateTime" | "LogAppendTime" | "NoTimestampType"
    max_timestamp: int
    base_timestamp: int
    partition_leader_epoch: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    is_transactional: bool
    is_control: bool
    delete_horizon_ms: int | None
    records: list[Record] = field(default_factory=list)


class BatchError(Exception):
    """A damaged entry in a log; recoverable means the next batch can still be found."""

    def __init__(self, path: str, position: int, message: str, recoverable: bool = True):
        super().__init__(path, position, message, recoverable)
        self.path = path
        self.position = position
        self.message = message
        self.recoverable = recoverable

    def __str__(self) -> str:
        return f"{self.path}: position {self.position}: {self.message}"

    def __reduce__(self):  # keeps subclasses picklable (Spark ships errors between processes)
        return (_rebuild_error, (type(self), self.__dict__.copy()))


def _rebuild_error(cls, state: dict) -> BatchError:
    error = cls.__new__(cls)
    Exception.__init__(error, state.get("path"), state.get("position"), state.get("message"))
    error.__dict__.update(state)
    return error


class ReadFailed(BatchError):
    """The file could not be opened or read (permissions, an I/O error): nothing about its content."""

    def __init__(self, path: str, position: int, message: str):
        super().__init__(path, position, message, recoverable=False)


class CrcMismatch(BatchError):
    """The batch decoded but its stored CRC is wrong (kafka-dump-log prints isvalid: false)."""

    def __init__(self, path: str, position: int, stored: int, computed: int, magic: int = 2):
        kind = "CRC-32C" if magic >= 2 else "CRC-32"
        super().__init__(path, position, f"{kind} mismatch (magic {magic}): stored {stored}, "
                         f"computed {computed}", recoverable=True)
        self.stored = stored
        self.computed = computed


class TrailingBytes(BatchError):
    """The end of the log holds no whole batch: `count` bytes from `position` to the end (a partial
    write, or damage no whole batch follows). `reason` says what was wrong with the entry there."""

    def __init__(self, path: str, position: int, count: int, reason: str | None = None):
        super().__init__(path, position, _found_line(count, path) + (f" ({reason})" if reason else ""),
                         recoverable=False)
        self.count = count
        self.reason = reason

    @property
    def dump_line(self) -> str:
        """Exactly kafka-dump-log's line for this condition."""
        return _found_line(self.count, self.path)


def _found_line(count: int, path: str) -> str:
    return f"Found {count} invalid bytes at the end of {os.path.basename(path)}"


class SkippedBytes(BatchError):
    """Bytes from `position` to `end` that hold no readable batch: the entry at `position` could not be
    read (`reason`) and the next whole batch starts at `end`, where reading goes on."""

    def __init__(self, path: str, position: int, end: int, reason: str):
        super().__init__(path, position, f"skipped: {reason}; resumed at byte {end}", recoverable=True)
        self.end = end
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.path}: bytes {self.position}–{self.end} {self.message}"


class CorruptBatch(Exception):
    """A problem inside one batch, found by either reader (v2 or legacy); the scanner turns it into a
    recoverable BatchError with the file and position."""
