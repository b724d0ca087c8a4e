"""Writing record batches the way a Kafka broker lays them out on disk.

Used to build test logs and benchmark dumps and by tools that produce `__consumer_offsets`
style segments; the output is readable by kafka-dump-log (CRC-32C, Kafka-style codecs).
Magic 0/1 entries can be written too, so the legacy reader can be round-trip tested.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from typing import BinaryIO, Iterable, Sequence

from .codecs import CODEC_IDS, compress

__all__ = ["OutRecord", "encode_batch", "encode_control_batch", "encode_legacy", "LogWriter",
           "zigzag_varint"]

_V2_TAIL = struct.Struct(">hiqqqhii")  # attributes .. recordsCount (after the crc)
_V2_HEAD = struct.Struct(">qiibI")  # baseOffset, length, leaderEpoch, magic, crc
_CONTROL_TYPES = {"ABORT": 0, "COMMIT": 1}

_SMALL_VARINTS = {v: bytes((((v << 1) ^ (v >> 63)) & 0xFF,)) for v in range(-64, 64)}


def zigzag_varint(value: int) -> bytes:
    """Kafka's record-level signed varint (zig-zag, base 128, low group first)."""
    small = _SMALL_VARINTS.get(value)
    if small is not None:
        return small
    raw = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


@dataclass(slots=True)
class OutRecord:
    """A record to write; offset is absolute (default: the next one after the previous record)."""

    key: bytes | None
    value: bytes | None
    timestamp: int | None = None
    headers: Sequence[tuple[str, bytes | None]] = field(default_factory=tuple)
    offset: int | None = None


def _normalise(records: Iterable, base_offset: int, default_ts: int) -> list[tuple]:
    """(offset_delta, timestamp, key, value, headers) per record, from several input shapes."""
    out = []
    next_delta = 0
    for rec in records:
        if isinstance(rec, tuple):
            key, value = rec[0], rec[1]
            ts = rec[2] if len(rec) > 2 else None
            headers: Sequence = ()
            offset = None
        else:
            key, value = rec.key, rec.value
            ts = getattr(rec, "timestamp", None)
            headers = getattr(rec, "headers", ()) or ()
            offset = getattr(rec, "offset", None)
        delta = next_delta if offset is None else offset - base_offset
        if delta < 0:
            raise ValueError(f"record offset {offset} is below the batch base offset {base_offset}")
        out.append((delta, default_ts if ts is None else ts, key, value, headers))
        next_delta = delta + 1
    return out


def _record_bytes(delta: int, ts_delta: int, key, value, headers) -> bytes:
    v = zigzag_varint
    parts = [b"\x00", v(ts_delta), v(delta)]
    if key is None:
        parts.append(b"\x01")
    else:
        parts.append(v(len(key)))
        parts.append(key)
    if value is None:
        parts.append(b"\x01")
    else:
        parts.append(v(len(value)))
        parts.append(value)
    parts.append(v(len(headers)))
    for hkey, hval in headers:
        raw = hkey.encode("utf-8")
        parts.append(v(len(raw)))
        parts.append(raw)
        if hval is None:
            parts.append(b"\x01")
        else:
            parts.append(v(len(hval)))
            parts.append(hval)
    body = b"".join(parts)
    return v(len(body)) + body


def encode_batch(records: Iterable, *, base_offset: int = 0, compression: str = "none",
                 timestamp: int = -1, log_append_time: int | None = None,
                 partition_leader_epoch: int = 0, producer_id: int = -1, producer_epoch: int = -1,
                 base_sequence: int = -1, transactional: bool = False, control: bool = False,
                 delete_horizon_ms: int | None = None, last_offset_delta: int | None = None
                 ) -> bytes:
    """One magic-2 batch. Records are OutRecord/Record objects or (key, value[, timestamp]).

    `timestamp` is used for records that carry none; log_append_time makes it a LogAppendTime
    batch; delete_horizon_ms sets attribute bit 6 and becomes the base timestamp, as the log
    cleaner does. last_offset_delta overrides the last delta (for batches emptied by cleaning).
    """
    import crc32c

    if compression not in CODEC_IDS:
        raise ValueError(f"unknown compression {compression!r}; use one of {sorted(CODEC_IDS)}")
    rows = _normalise(records, base_offset, timestamp)
    if rows:
        base_ts = rows[0][1]
        max_ts = max(r[1] for r in rows)
        last_delta = rows[-1][0]
    else:
        base_ts = max_ts = -1
        last_delta = 0
    if delete_horizon_ms is not None:
        base_ts = delete_horizon_ms
    if log_append_time is not None:
        max_ts = log_append_time
    if last_offset_delta is not None:
        last_delta = last_offset_delta
    body = b"".join([_record_bytes(d, ts - base_ts, k, val, h) for d, ts, k, val, h in rows])
    codec = CODEC_IDS[compression]
    if codec:
        body = compress(codec, body, 2)
    attributes = (codec | (8 if log_append_time is not None else 0) | (16 if transactional else 0)
                  | (32 if control else 0) | (64 if delete_horizon_ms is not None else 0))
    tail = _V2_TAIL.pack(attributes, last_delta, base_ts, max_ts, producer_id, producer_epoch,
                         base_sequence, len(rows)) + body
    crc = crc32c.crc32c(tail)
    return _V2_HEAD.pack(base_offset, 9 + len(tail), partition_leader_epoch, 2, crc) + tail


def encode_control_batch(marker: str, *, producer_id: int, producer_epoch: int,
                         coordinator_epoch: int, base_offset: int = 0, timestamp: int = -1,
                         partition_leader_epoch: int = 0) -> bytes:
    """An end-transaction marker batch (COMMIT or ABORT) for one producer."""
    if marker not in _CONTROL_TYPES:
        raise ValueError(f"unknown control marker {marker!r}; use COMMIT or ABORT")
    key = struct.pack(">hh", 0, _CONTROL_TYPES[marker])
    value = struct.pack(">hi", 0, coordinator_epoch)
    return encode_batch([(key, value, timestamp)], base_offset=base_offset,
                        producer_id=producer_id, producer_epoch=producer_epoch,
                        partition_leader_epoch=partition_leader_epoch, transactional=True,
                        control=True)


def _legacy_message(offset: int, magic: int, attributes: int, timestamp: int, key, value) -> bytes:
    parts = [struct.pack(">bB", magic, attributes)]
    if magic == 1:
        parts.append(struct.pack(">q", timestamp))
    for blob in (key, value):
        if blob is None:
            parts.append(b"\xff\xff\xff\xff")
        else:
            parts.append(struct.pack(">i", len(blob)))
            parts.append(blob)
    body = b"".join(parts)
    crc = zlib.crc32(body)
    return struct.pack(">qiI", offset, len(body) + 4, crc) + body


def encode_legacy(records: Iterable, *, magic: int, compression: str = "none",
                  base_offset: int = 0, timestamp: int = -1, log_append_time: int | None = None,
                  wrapper_offset: int | None = None) -> bytes:
    """Magic 0/1 entries: one message per record, or one compressed wrapper holding them all.

    For magic 1 the wrapper's inner offsets are relative and the wrapper carries the last
    absolute offset (wrapper_offset=0 imitates the librdkafka variant).
    """
    if magic not in (0, 1):
        raise ValueError(f"legacy magic must be 0 or 1, not {magic}")
    codec = CODEC_IDS.get(compression)
    if codec is None or codec == 4:
        raise ValueError(f"compression {compression!r} is not available for magic {magic}")
    rows = _normalise(records, base_offset, timestamp)
    if any(r[4] for r in rows):
        raise ValueError(f"magic {magic} messages cannot carry record headers")
    ts_bit = 8 if (magic == 1 and log_append_time is not None) else 0
    if codec == 0:
        return b"".join(_legacy_message(base_offset + d, magic, ts_bit,
                                        log_append_time if ts_bit else ts, k, v)
                        for d, ts, k, v, _h in rows)
    if not rows:
        raise ValueError("a compressed wrapper needs at least one record")
    inner = b"".join(_legacy_message(d if magic == 1 else base_offset + d, magic, 0, ts, k, v)
                     for d, ts, k, v, _h in rows)
    last = base_offset + rows[-1][0]
    if ts_bit:
        outer_ts = log_append_time
    else:
        outer_ts = max(r[1] for r in rows) if magic == 1 else -1
    return _legacy_message(last if wrapper_offset is None else wrapper_offset, magic,
                           codec | ts_bit, outer_ts, None, compress(codec, inner, magic))


class LogWriter:
    """Appends batches to a binary file, assigning consecutive offsets like a partition leader."""

    def __init__(self, file: BinaryIO, next_offset: int = 0):
        self.file = file
        self.next_offset = next_offset
        self.bytes_written = 0

    def _write(self, blob: bytes, last_offset: int) -> tuple[int, int]:
        base = self.next_offset
        self.file.write(blob)
        self.bytes_written += len(blob)
        self.next_offset = last_offset + 1
        return base, last_offset

    def append(self, records: Sequence, **batch_options) -> tuple[int, int]:
        """Write one v2 batch at the next offset; returns its (base offset, last offset)."""
        blob = encode_batch(records, base_offset=self.next_offset, **batch_options)
        (last_delta,) = struct.unpack_from(">i", blob, 23)
        return self._write(blob, self.next_offset + last_delta)

    def append_control(self, marker: str, **options) -> tuple[int, int]:
        blob = encode_control_batch(marker, base_offset=self.next_offset, **options)
        return self._write(blob, self.next_offset)
