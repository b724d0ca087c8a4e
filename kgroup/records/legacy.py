"""Magic 0 and 1 messages (brokers before 0.11), including compressed wrapper messages.

One outer entry becomes one Batch; a wrapper's inner messages become its records with
absolute offsets, each keeping its own CRC and validity because kafka-dump-log prints them.
"""

from __future__ import annotations

import struct
import zlib

from .batch_model import NO_TIMESTAMP_TYPE, TIMESTAMP_TYPES, Batch, CorruptBatch, Record
from .codecs import CODEC_NAMES, CodecError, decompress

_ENTRY = struct.Struct(">qiIbB")  # offset, size, crc, magic, attributes
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


def _message(buf, off: int, end: int):
    """Parse the message of the entry at buf[off:end]; returns its fields and computed CRC."""
    offset, _size, crc, magic, attributes = _ENTRY.unpack_from(buf, off)
    if magic not in (0, 1):
        raise CorruptBatch(f"message at {off} has magic {magic} inside a legacy entry")
    pos = off + 18
    if magic == 1:
        if end - pos < 16:
            raise CorruptBatch(f"magic 1 message at {off} is too short for its timestamp")
        (timestamp,) = _INT64.unpack_from(buf, pos)
        pos += 8
    else:
        timestamp = -1
    fields = []
    for name in ("key", "value"):
        if pos + 4 > end:
            raise CorruptBatch(f"message at {off} ends before its {name} length")
        (size,) = _INT32.unpack_from(buf, pos)
        pos += 4
        if size == -1:
            fields.append((None, -1))
            continue
        if size < 0 or pos + size > end:
            raise CorruptBatch(f"message at {off}: {name} length {size} runs past the message end")
        fields.append((bytes(buf[pos:pos + size]), size))
        pos += size
    if pos != end:
        raise CorruptBatch(f"message at {off} has {end - pos} bytes after its value")
    computed = zlib.crc32(memoryview(buf)[off + 16:end])
    (key, key_size), (value, value_size) = fields
    return offset, crc, computed, magic, attributes, timestamp, key, key_size, value, value_size


def _inner_records(blob: bytes, wrapper_offset: int, wrapper_magic: int, append_time: int | None
                   ) -> list[Record]:
    """The messages inside a decompressed wrapper value, with absolute offsets."""
    raw = []
    pos, end = 0, len(blob)
    while pos < end:
        if pos + 12 > end:
            raise CorruptBatch(f"{end - pos} stray bytes at the end of the decompressed wrapper")
        (size,) = _INT32.unpack_from(blob, pos + 8)
        if size < 14 or pos + 12 + size > end:
            raise CorruptBatch(f"inner message at {pos} of the wrapper has impossible size {size}")
        msg = _message(blob, pos, pos + 12 + size)
        if msg[4] & 7:
            raise CorruptBatch(f"inner message at {pos} of the wrapper is itself compressed")
        raw.append(msg)
        pos += 12 + size
    if not raw:
        raise CorruptBatch("compressed wrapper holds no messages")
    shift = 0
    if wrapper_magic >= 1 and wrapper_offset != 0:
        shift = wrapper_offset - raw[-1][0]
    records = []
    for offset, crc, computed, magic, _attrs, timestamp, key, key_size, value, value_size in raw:
        if append_time is not None:
            timestamp = append_time
        elif wrapper_magic == 0:
            timestamp = -1
        records.append(Record(offset + shift, timestamp, -1, key, value, [], key_size, value_size,
                              crc, crc == computed))
    return records


def parse_legacy(buf, off: int, total: int, position: int) -> tuple[Batch, int]:
    """Decode the magic 0/1 entry at buf[off:off+total]; returns it and its computed CRC-32."""
    (offset, crc, computed, magic, attributes, timestamp, key, key_size, value,
     value_size) = _message(buf, off, off + total)
    codec = attributes & 7
    if magic == 0:
        ts_type = NO_TIMESTAMP_TYPE
    else:
        ts_type = TIMESTAMP_TYPES[1 if attributes & 8 else 0]
    valid = crc == computed
    if codec == 0:
        records = [Record(offset, timestamp, -1, key, value, [], key_size, value_size, crc, valid)]
    elif codec >= 4:
        name = CODEC_NAMES[codec] if codec < len(CODEC_NAMES) else str(codec)
        raise CorruptBatch(f"compression codec {name} is not allowed with magic {magic}")
    else:
        if value is None:
            raise CorruptBatch(f"{CODEC_NAMES[codec]} wrapper message has a null value")
        try:
            blob = decompress(codec, value, magic)
        except CodecError as exc:
            raise CorruptBatch(str(exc)) from None
        append_time = timestamp if ts_type == "LogAppendTime" else None
        records = _inner_records(blob, offset, magic, append_time)
    batch = Batch(position, records[0].offset, offset, magic, total, crc, valid, attributes,
                  CODEC_NAMES[codec], ts_type, timestamp, timestamp, -1, -1, -1, -1,
                  len(records), False, False, None, records)
    return batch, computed
