"""Record-batch headers as the server needs them: validate a client's batch, rewrite its offsets.

The 61-byte magic-2 header is parsed here to rewrite offsets; every record is also decoded with
kgroup's batch reader so a malformed batch is refused. The records stay as the client encoded them
(the CRC covers attributes..end, so rewriting baseOffset and partitionLeaderEpoch keeps it valid).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import crc32c

from kgroup.kafka_errors import CORRUPT_MESSAGE, INVALID_RECORD, UNSUPPORTED_FOR_MESSAGE_FORMAT

HEADER_SIZE = 61
_HEADER = struct.Struct(">qiibIhiqqqhii")
_BASE_OFFSET = struct.Struct(">q")
_LEADER_EPOCH = struct.Struct(">i")


class BatchValidationError(ValueError):
    """A batch a client sent that the log must refuse; `error_code` is Kafka's answer."""

    def __init__(self, message, error_code=CORRUPT_MESSAGE):
        super().__init__(message)
        self.error_code = error_code


@dataclass(slots=True)
class BatchHeader:
    base_offset: int
    length: int  # whole batch, 12 + batchLength
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & 0x20)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & 0x10)


def parse_header(buf, pos: int = 0) -> BatchHeader:
    (base_offset, batch_length, _epoch, magic, crc, attributes, last_delta, base_ts, max_ts,
     producer_id, producer_epoch, base_seq, count) = _HEADER.unpack_from(buf, pos)
    return BatchHeader(base_offset, 12 + batch_length, magic, crc, attributes, last_delta,
                       base_ts, max_ts, producer_id, producer_epoch, base_seq, count)


def split_batches(data: bytes, where: str) -> list[BatchHeader]:
    """Validate every batch in a Produce payload; returns their headers in order."""
    headers = []
    pos = 0
    view = memoryview(data)
    while pos < len(data):
        if len(data) - pos < HEADER_SIZE:
            raise BatchValidationError(
                f"{where}: {len(data) - pos} trailing bytes at byte {pos} are not a record batch")
        magic = data[pos + 16]
        if magic != 2:
            raise BatchValidationError(
                f"{where}: batch at byte {pos} has magic {magic}; only magic 2 is accepted",
                UNSUPPORTED_FOR_MESSAGE_FORMAT)
        header = parse_header(data, pos)
        if header.length < HEADER_SIZE or pos + header.length > len(data):
            raise BatchValidationError(
                f"{where}: batch at byte {pos} declares {header.length} bytes, "
                f"{len(data) - pos} available")
        actual = crc32c.crc32c(view[pos + 21:pos + header.length])
        if actual != header.crc:
            raise BatchValidationError(
                f"{where}: batch at byte {pos} fails its CRC-32C "
                f"(stored {header.crc:#010x}, computed {actual:#010x})")
        if header.records_count < 0 or header.last_offset_delta < 0:
            raise BatchValidationError(
                f"{where}: batch at byte {pos} has recordsCount {header.records_count} and "
                f"lastOffsetDelta {header.last_offset_delta}", INVALID_RECORD)
        if header.attributes & 0x07 > 4:
            raise BatchValidationError(
                f"{where}: batch at byte {pos} uses unknown compression codec "
                f"{header.attributes & 0x07}", CORRUPT_MESSAGE)
        headers.append(header)
        pos += header.length
    if not headers:
        raise BatchValidationError(f"{where}: no record batch in the request", INVALID_RECORD)
    _check_records(data, where)
    return headers


def _check_records(data: bytes, where: str) -> None:
    """Decode every record with kgroup's batch reader (decompressing), as Kafka validates."""
    from kgroup.records.batch import scan
    from kgroup.records.batch_model import BatchError

    for event in scan(data, path=where):
        if isinstance(event, BatchError):
            raise BatchValidationError(str(event), CORRUPT_MESSAGE)


def rebase(data: bytes, headers: list[BatchHeader], first_offset: int, leader_epoch: int = 0):
    """Copy of `data` with consecutive base offsets from `first_offset`; returns (bytes, next)."""
    out = bytearray(data)
    pos = 0
    offset = first_offset
    for header in headers:
        _BASE_OFFSET.pack_into(out, pos, offset)
        _LEADER_EPOCH.pack_into(out, pos + 12, leader_epoch)
        header.base_offset = offset
        offset += header.last_offset_delta + 1
        pos += header.length
    return bytes(out), offset
