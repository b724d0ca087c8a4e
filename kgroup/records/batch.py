"""Record batches as they sit in a Kafka `.log` file: the magic 2 reader and the streaming scanner.

The reader walks a buffer or a file object batch by batch with bounded memory and turns
every kind of damage into a BatchError carrying the file and byte position, so callers can
report it the way kafka-dump-log does and carry on where the format allows it.
"""

from __future__ import annotations

import os
import struct
from typing import Iterator

from .batch_model import (
    CONTROL_TYPES,
    NO_TIMESTAMP_TYPE,
    TIMESTAMP_TYPES,
    Batch,
    BatchError,
    CorruptBatch,
    CrcMismatch,
    Record,
    SkippedBytes,
    TrailingBytes,
)
from .codecs import CODEC_NAMES, CodecError, decompress
from .crc import crc32c as _crc32c
from .framing import (HEADER_PEEK, LOG_OVERHEAD, MAX_STREAM_BATCH, MIN_ANY_LENGTH, MIN_LENGTH, checksum_matches,
                      file_reader, frame_problem, next_whole_entry)
from .lazy_records import ZIGZAG, LazyRecords, build_run
from .legacy import parse_legacy

__all__ = ["read_batches", "scan", "parse_v2", "LOG_OVERHEAD", "HEADER_PEEK", "MIN_LENGTH", "MIN_ANY_LENGTH",
           "MAX_STREAM_BATCH"]


#: Read size for files and streams.
CHUNK = 1 << 20

_V2_HEADER = struct.Struct(">qiibIhiqqqhii")
_PREFIX = struct.Struct(">qi4xb")
_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")


# ---------------------------------------------------------------------------------------------
# varints


def _varint(data, pos: int) -> tuple[int, int]:
    """Zig-zag varint (up to 64 bits) at pos; returns (value, next position)."""
    shift = 0
    raw = 0
    for _ in range(10):
        b = data[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
    raise CorruptBatch(f"varint longer than 10 bytes ending at {pos}")


# ---------------------------------------------------------------------------------------------
# magic 2


_ZIGZAG = ZIGZAG


def _records_v2(data, pos: int, end: int, count: int, base_offset: int, base_ts: int,
                base_seq: int, append_time: int | None) -> list[Record]:
    """Parse `count` v2 records in data[pos:end].

    The hot path of every decode: one- and two-byte varints are decoded inline through a
    lookup table, longer ones by _varint; every record's declared length is checked.
    """
    records: list[Record] = []
    append = records.append
    new = Record
    varint = _varint
    zz = _ZIGZAG
    for _ in range(count):
        b = data[pos]
        if b < 0x80:
            length = zz[b]
            pos += 1
        else:
            b2 = data[pos + 1]
            if b2 < 0x80:
                raw = (b & 0x7F) | (b2 << 7)
                length = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                length, pos = varint(data, pos)
        rec_start = pos
        rec_end = pos + length
        if length < 0 or rec_end > end:
            raise CorruptBatch(f"record of {length} bytes at {rec_start} runs past the records end {end}")
        b = data[pos + 1]  # after the unused attributes byte
        if b < 0x80:
            ts_delta = zz[b]
            pos += 2
        else:
            ts_delta, pos = varint(data, pos + 1)
        b = data[pos]
        if b < 0x80:
            offset_delta = zz[b]
            pos += 1
        else:
            offset_delta, pos = varint(data, pos)
        b = data[pos]
        if b < 0x80:
            key_size = zz[b]
            pos += 1
        else:
            key_size, pos = varint(data, pos)
        if key_size >= 0:
            key = data[pos:pos + key_size]
            pos += key_size
        elif key_size == -1:
            key = None
        else:
            raise CorruptBatch(f"record at {rec_start}: negative key length {key_size}")
        b = data[pos]
        if b < 0x80:
            value_size = zz[b]
            pos += 1
        else:
            b2 = data[pos + 1]
            if b2 < 0x80:
                raw = (b & 0x7F) | (b2 << 7)
                value_size = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                value_size, pos = varint(data, pos)
        if value_size >= 0:
            value = data[pos:pos + value_size]
            pos += value_size
        elif value_size == -1:
            value = None
        else:
            raise CorruptBatch(f"record at {rec_start}: negative value length {value_size}")
        if data[pos] == 0:
            headers = []
            pos += 1
        else:
            headers, pos = _headers(data, pos, rec_end)
        if pos != rec_end:
            raise CorruptBatch(f"record at {rec_start} declares {length} bytes but its fields "
                           f"take {pos - rec_start}")
        if base_seq < 0:
            seq = -1
        else:
            seq = base_seq + offset_delta
            if seq > 0x7FFFFFFF:
                seq -= 0x80000000
        append(new(base_offset + offset_delta,
                   base_ts + ts_delta if append_time is None else append_time,
                   seq, key, value, headers, key_size, value_size))
    if pos != end:
        raise CorruptBatch(f"{end - pos} bytes left after the declared {count} records")
    return records


_SHAPES: dict[tuple[int, ...], struct.Struct] = {}
_alloc = object.__new__
_HIGH_BIT = bytes(0 if b < 0x80 else 1 for b in range(256))


def _short_varint(data, pos: int) -> tuple[int, int]:
    """(byte count, value) of a one- or two-byte zig-zag varint; (0, 0) if it is longer."""
    b = data[pos]
    if b < 0x80:
        return 1, _ZIGZAG[b]
    b2 = data[pos + 1]
    if b2 >= 0x80:
        return 0, 0
    raw = (b & 0x7F) | (b2 << 7)
    return 2, (raw >> 1) ^ -(raw & 1)


def _simple_shape(data, p: int, end: int):
    """Layout of the record at p if it is "simple" (short varints, a non-null key, a value or
    a tombstone, no headers): (size, n1, kn, key_size, vn, value_size); else None."""
    n1, length = _short_varint(data, p)
    size = n1 + length
    if n1 == 0 or length < 6 or p + size > end:
        return None
    q = p + n1
    if data[q + 1] >= 0x80 or data[q + 2] >= 0x80:
        return None
    kn, key_size = _short_varint(data, q + 3)
    if kn == 0 or key_size < 0:
        return None
    q += 3 + kn + key_size
    vn, value_size = _short_varint(data, q)
    if vn == 0 or value_size < -1:
        return None
    stored = value_size if value_size > 0 else 0
    if q + vn + stored + 1 - p != size or data[q + vn + stored] != 0:
        return None
    return size, n1, kn, key_size, vn, value_size


def _common_prefix(a: bytes, b: bytes) -> int:
    lo, hi = 0, len(a)
    if a == b:
        return hi
    while hi - lo > 1:  # a[:lo] == b[:lo] and a[:hi] != b[:hi]
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def _run_length(data, p: int, shape, k_max: int) -> int:
    """How many records from p (up to k_max) have exactly the layout of the one at p.

    Equal length bytes chain the boundaries (record i ends where i+1 begins), equal size
    bytes and a zero header count pin the layout, and single-byte deltas keep it fixed.
    """
    size, n1, kn, key_size, vn, _ = shape  # a tombstone's size byte is a fixed column too
    stop = p + k_max * size
    key_at = n1 + 3 + kn
    k = k_max
    for j in (*range(n1), *range(n1 + 3, key_at), *range(key_at + key_size, key_at + key_size + vn),
              size - 1):
        column = data[p + j:stop:size]
        same = column[:1] * k_max
        if column != same:
            k = min(k, _common_prefix(column, same))
    for j in (n1 + 1, n1 + 2):
        high = data[p + j:stop:size].translate(_HIGH_BIT).find(1)
        if high >= 0:
            k = min(k, high)
    return k


def _fast_records(data, pos: int, end: int, count: int, base_offset: int, base_ts: int,
                  base_seq: int, append_time: int | None, lean: bool = False) -> list[Record] | LazyRecords:
    """Parse records in runs of identical layout with one precompiled struct per run.

    The coordinator writes a commit as one batch whose records share a layout per topic
    (same group, fixed-width partition, same value version), so runs are long. Records
    that do not fit, and batches whose layout changes record by record, go through
    _records_v2, which also owns every error message; results are identical either way.
    lean: return LazyRecords, whose runs become Records only when asked.
    """
    records: list[Record] = []
    lazy = LazyRecords(base_offset, base_ts, base_seq) if lean else None
    p, left = pos, count
    zz = _ZIGZAG
    new = Record
    view = memoryview(data)
    misses = 0  # odd records and one-record runs; past a few, the plain loop is cheaper
    while left and misses < 8:
        shape = _simple_shape(data, p, end)
        if shape is None:
            misses += 1
            length, body = _varint(data, p)
            rec_end = body + length
            if length < 0 or rec_end > end:
                break  # _records_v2 reports it
            records += _records_v2(data, p, rec_end, 1, base_offset, base_ts, base_seq,
                                   append_time)
            p = rec_end
            left -= 1
            continue
        size = shape[0]
        k_max = min(left, (end - p) // size)
        k = _run_length(data, p, shape, k_max) if k_max > 1 else 1
        unpacker = _SHAPES.get(shape)
        if unpacker is None:
            _, n1, kn, key_size, vn, value_size = shape
            unpacker = _SHAPES[shape] = struct.Struct(
                f">{n1 + 1}xBB{kn}x{key_size}s{vn}x{max(value_size, 0)}sx")
        key_size, value_size = shape[3], shape[5]
        rows = unpacker.iter_unpack(view[p:p + k * size])
        if append_time is None and base_seq <= 0x7FFFFFFF - 63:  # 1-byte deltas can't wrap
            if lazy is None:
                records += build_run(rows, base_offset, base_ts, base_seq, key_size, value_size)
            else:
                lazy.add_records(records)
                records = []
                lazy.add_run(list(rows), key_size, value_size)
        else:
            for ts, od, key, value in rows:
                delta = zz[od]
                if base_seq < 0:
                    seq = -1
                else:
                    seq = base_seq + delta
                    if seq > 0x7FFFFFFF:
                        seq -= 0x80000000
                records.append(new(base_offset + delta, base_ts + zz[ts] if append_time is None
                                   else append_time, seq, key, None if value_size < 0 else value, [],
                                   key_size, value_size))
        p += k * size
        left -= k
        if k == 1:
            misses += 1
    if left:
        records += _records_v2(data, p, end, left, base_offset, base_ts, base_seq, append_time)
    elif p != end:
        raise CorruptBatch(f"{end - p} bytes left after the declared {count} records")
    if lazy is not None:
        lazy.add_records(records)
        return lazy
    return records


def _headers(data, pos: int, rec_end: int) -> tuple[list, int]:
    count, pos = _varint(data, pos)
    if count < 0 or count > rec_end - pos:
        raise CorruptBatch(f"impossible header count {count}")
    headers = []
    for _ in range(count):
        klen, pos = _varint(data, pos)
        if klen < 0 or pos + klen > rec_end:
            raise CorruptBatch(f"header key length {klen} at {pos} is invalid")
        hkey = bytes(data[pos:pos + klen]).decode("utf-8", "replace")
        pos += klen
        vlen, pos = _varint(data, pos)
        if vlen == -1:
            hval = None
        elif vlen < 0 or pos + vlen > rec_end:
            raise CorruptBatch(f"header value length {vlen} at {pos} is invalid")
        else:
            hval = data[pos:pos + vlen]
            pos += vlen
        headers.append((hkey, hval))
    return headers, pos


def _mark_control(records: list[Record]) -> None:
    """Fill the control fields of a control batch's records (end-transaction markers)."""
    for rec in records:
        key = rec.key
        if key is None or len(key) < 4:
            raise CorruptBatch(f"control record at offset {rec.offset} has a "
                           f"{'null' if key is None else len(key)}-byte key, needs 4")
        _, ctype = _CONTROL_KEY.unpack_from(key)
        name = CONTROL_TYPES.get(ctype)
        if name is None:
            rec.control = f"UNKNOWN({ctype})"
            continue
        value = rec.value
        if value is None or len(value) < 6:
            raise CorruptBatch(f"{name} marker at offset {rec.offset} has a "
                           f"{'null' if value is None else len(value)}-byte value, needs 6")
        rec.control = name
        rec.coordinator_epoch = _CONTROL_VALUE.unpack_from(value)[1]


def parse_v2(buf, off: int, total: int, position: int, path: str, lean: bool = False) -> tuple[Batch, int]:
    """Decode the magic-2 batch at buf[off:off+total]; returns it and its computed CRC-32C.
    lean: a data batch's records may be LazyRecords (see `lazy_records`)."""
    (base_offset, _length, leader_epoch, magic, crc, attributes, last_delta, base_ts, max_ts,
     producer_id, producer_epoch, base_seq, count) = _V2_HEADER.unpack_from(buf, off)
    end = off + total
    computed = _crc32c(memoryview(buf)[off + 21:end])
    codec = attributes & 7
    if codec >= len(CODEC_NAMES):
        raise CorruptBatch(f"unknown compression codec {codec} (attributes {attributes})")
    if count < 0:
        raise CorruptBatch(f"negative record count {count}")
    log_append = bool(attributes & 8)
    is_control = bool(attributes & 32)
    batch = _alloc(Batch)  # slot by slot: cheaper than the dataclass __init__ call
    batch.position = position
    batch.base_offset = base_offset
    batch.last_offset = base_offset + last_delta
    batch.magic = magic
    batch.size = total
    batch.crc = crc
    batch.crc_valid = computed == crc
    batch.attributes = attributes
    batch.compression = CODEC_NAMES[codec]
    batch.timestamp_type = TIMESTAMP_TYPES[log_append]
    batch.max_timestamp = max_ts
    batch.base_timestamp = base_ts
    batch.partition_leader_epoch = leader_epoch
    batch.producer_id = producer_id
    batch.producer_epoch = producer_epoch
    batch.base_sequence = base_seq
    batch.records_count = count
    batch.is_transactional = bool(attributes & 16)
    batch.is_control = is_control
    batch.delete_horizon_ms = base_ts if attributes & 64 else None
    if codec == 0:
        data, start, stop = buf, off + 61, end
        if count > stop - start:
            raise CorruptBatch(f"record count {count} is more than the {stop - start} bytes of records")
    else:
        try:
            data = decompress(codec, memoryview(buf)[off + 61:end], 2)
        except CodecError as exc:
            raise CorruptBatch(str(exc)) from None
        start, stop = 0, len(data)
        if count > stop:
            raise CorruptBatch(f"record count {count} is more than the {stop} decompressed bytes")
    append_time = max_ts if log_append else None
    if count > 1:
        batch.records = _fast_records(data, start, stop, count, base_offset, base_ts, base_seq, append_time,
                                      lean and not is_control)
    else:
        batch.records = _records_v2(data, start, stop, count, base_offset, base_ts, base_seq, append_time)
    if is_control:
        _mark_control(batch.records)
    return batch, computed


# ---------------------------------------------------------------------------------------------
# the streaming reader


class _Source:
    """A window over bytes or a file object: buf[off:] holds the bytes at file position `pos`."""

    __slots__ = ("file", "buf", "off", "pos", "eof", "left", "size", "seekable", "mark")

    def __init__(self, buf_or_file, start: int, end: int | None):
        self.off = 0
        self.pos = start
        self.seekable = False
        self.mark = None  # a position before the window whose bytes a refill keeps (resync: the last batch)
        if isinstance(buf_or_file, (bytes, bytearray, memoryview)):
            data = bytes(buf_or_file)
            stop = len(data) if end is None else min(end, len(data))
            self.file = None
            self.buf = data[start:stop] if (start or stop != len(data)) else data
            self.eof = True
            self.left = 0
            self.size = stop
            return
        self.file = buf_or_file
        self.buf = b""
        self.eof = False
        self.size = None
        self.left = None
        try:
            self.seekable = bool(buf_or_file.seekable())
        except (AttributeError, OSError, ValueError):
            self.seekable = False
        if self.seekable:
            here = buf_or_file.seek(0, os.SEEK_END)
            self.size = here if end is None else min(end, here)
            buf_or_file.seek(start)
        elif start:
            self._discard(start)
        self.left = None if end is None else max(0, end - start)
        if self.size is not None:
            self.left = max(0, self.size - start)

    def _discard(self, n: int) -> None:
        while n > 0:
            chunk = self.file.read(min(n, CHUNK))
            if not chunk:
                self.eof = True
                break
            n -= len(chunk)
            if self.left is not None:
                self.left = max(0, self.left - len(chunk))

    def ensure(self, need: int) -> int:
        """Make at least `need` bytes available (fewer only at the end); returns what's there."""
        have = len(self.buf) - self.off
        if have >= need or self.eof:
            return have
        keep = self.off if self.mark is None else max(0, self.off - (self.pos - self.mark))
        parts = [self.buf[keep:]] if len(self.buf) > keep else []
        while have < need:
            want = max(CHUNK, need - have)
            if self.left is not None:
                want = min(want, self.left)
                if want <= 0:
                    self.eof = True
                    break
            chunk = self.file.read(min(want, 1 << 30))
            if not chunk:
                self.eof = True
                break
            if self.left is not None:
                self.left -= len(chunk)
            parts.append(chunk)
            have += len(chunk)
        self.buf = parts[0] if len(parts) == 1 else b"".join(parts)
        self.off -= keep
        return have

    # Random access for the resync search (`framing.next_whole_entry`), only ever after damage.

    def read_at(self, position: int, count: int) -> bytes:
        """Up to `count` bytes at `position` (the window's, or the kept mark's onwards): from the buffer,
        by a positioned read of a seekable file (the window stays where it is), or by reading a stream
        further."""
        if self.size is not None:
            count = max(0, min(count, self.size - position))
        at = self.off + position - self.pos
        if self.file is None or (at >= 0 and at + count <= len(self.buf)):
            return self.buf[max(at, 0):at + count]
        if self.seekable:
            here = self.file.tell()
            try:
                return bytes(file_reader(self.file)(position, count))
            finally:
                self.file.seek(here)
        if at < 0:
            return b""  # a stream's bytes before the kept mark are gone
        self.ensure(at - self.off + count)
        at = self.off + position - self.pos
        return self.buf[at:at + count]

    def release(self, position: int) -> None:
        """Nothing before `position` is needed any more: a stream drops it (a search through a damaged
        stream holds one chunk, not everything since the damage)."""
        if self.file is not None and not self.seekable:
            self.jump(position)

    def jump(self, position: int) -> None:
        """Move the window to start at `position`: forward, or back to bytes still held (the mark)."""
        at = self.off + position - self.pos
        if self.file is None or 0 <= at <= len(self.buf):
            self.off = min(max(at, 0), len(self.buf))
        elif self.seekable:
            self.file.seek(position)
            self.buf, self.off, self.eof = b"", 0, False
            self.left = max(0, self.size - position)
        else:
            self._discard(at - len(self.buf))
            self.buf, self.off = b"", 0
        self.pos = position

    def end_position(self) -> int:
        """Where the data ends: the file's size, or how far a stream went."""
        if self.size is not None:
            return self.size
        self.ensure(1 << 62)
        return self.pos + len(self.buf) - self.off


def _parse(buf, off: int, total: int, position: int, path: str, magic: int, lean: bool = False):
    if magic == 2:
        return parse_v2(buf, off, total, position, path, lean)
    if magic == 0 or magic == 1:
        return parse_legacy(buf, off, total, position)
    raise CorruptBatch(f"unknown magic {magic}")


_PARSE_ERRORS = (CorruptBatch, IndexError, ValueError, struct.error, CodecError, UnicodeError)


def _parse_failure(entry: bytes, total: int, position: int, path: str, magic: int) -> str:
    """Why the entry (its bytes alone) does not parse; positions in the message count from its start."""
    head = f"batch (magic {magic}, {total} bytes)"
    try:
        _parse(entry, 0, total, position, path, magic)
    except CorruptBatch as exc:
        return f"{head}: {exc}"
    except IndexError:
        return f"{head}: a record runs past the end of the batch's record data"
    except (ValueError, struct.error, CodecError, UnicodeError) as exc:
        return f"{head} is corrupt: {type(exc).__name__}: {exc}"
    return f"{head}: unreadable"  # parses alone: cannot happen, the bytes are the same


def _stored_checksum(buf, off: int, magic: int) -> int | None:
    """The checksum an entry's header holds (magic 2: CRC-32C at byte 17; 0 and 1: CRC-32 at byte 12)."""
    if magic == 2:
        return _CHECKSUM.unpack_from(buf, off + 17)[0]
    if magic in (0, 1):
        return _CHECKSUM.unpack_from(buf, off + 12)[0]
    return None


_CHECKSUM = struct.Struct(">I")


def _resynchronise(src: _Source, path: str, position: int, reason: str, stop: int | None, previous: int | None):
    """After the entry at `position` could not be read (`reason`): move to the first whole entry after
    the start of the batch read just before it (`previous`; its length put us here, and bytes deleted
    or inserted inside it may have left it parsing with the wrong one), or after `position` itself.
    Reports the bytes skipped (SkippedBytes), or the entry, when the whole one starts inside the batch
    before it; returns True. With none: the rest is invalid bytes at the end, returns False. In a range
    (`stop`) the next range starts at a whole entry (the planner checks it), so a search that reaches
    `stop` resumes there."""
    found = next_whole_entry(src.read_at, position if previous is None else previous, stop, src.size,
                             src.release)
    if found is None and stop is not None and (src.size is None or stop < src.size):
        found = stop
    if found is None:
        end = src.end_position()
        yield TrailingBytes(path, position, end - position, reason)
        return False
    if found > position:
        yield SkippedBytes(path, position, found, reason)
    else:
        yield BatchError(path, position, f"{reason}; resumed at byte {found}, where a whole batch starts "
                                         f"inside the one before")
    src.mark = None
    src.jump(found)
    return True


def scan(buf_or_file, path: str = "<bytes>", start: int = 0, end: int | None = None, lean: bool = False,
         *, resync: bool = False, stop: int | None = None) -> Iterator[Batch | BatchError]:
    """Yield each Batch, and a BatchError event for every problem, in file order.

    lean: a data batch's records may be LazyRecords, built into Records only when asked.
    A CrcMismatch event comes right before its (still decoded) batch.

    Without `resync` (Kafka's reading, kafka-dump-log's text): an entry whose length frames nothing
    ends the scan (TrailingBytes, or a BatchError that is not recoverable: the last event), and an
    entry that does not parse is skipped by its length. With `resync`, an entry that cannot be read
    and whose checksum does not vouch for its length is followed by a search for the next whole
    entry (`kgroup.records.framing`): a SkippedBytes event names the bytes passed over, and reading
    goes on there; TrailingBytes, the last event, when no whole entry follows.
    stop: no entry starting at or after this position is read (a Spark task's range; entries may
    end past it, and `end` still bounds the data).
    """
    src = _Source(buf_or_file, start, end)
    unpack_prefix = _PREFIX.unpack_from
    previous = None  # resync: where the batch read just before this position starts
    while True:  # the ensure/advance calls are inlined for the common, already-buffered case
        position = src.pos
        if stop is not None and position >= stop:
            return
        if len(src.buf) - src.off < HEADER_PEEK:
            avail = src.ensure(HEADER_PEEK)
            if avail < HEADER_PEEK:
                if avail:
                    yield TrailingBytes(path, position, avail)
                return
        _, length, magic = unpack_prefix(src.buf, src.off)
        total = LOG_OVERHEAD + length
        room = None if src.size is None else src.size - position
        problem = frame_problem(magic, length, room)
        if problem is None and len(src.buf) - src.off < total and src.ensure(total) < total:
            problem = f"batch length {length} exceeds the file"  # a stream that ended inside the entry
        if problem is not None:
            if resync:
                if (yield from _resynchronise(src, path, position, problem, stop, previous)):
                    previous = None
                    continue
                return
            if length < MIN_LENGTH.get(magic, MIN_ANY_LENGTH) or (room is None and total > MAX_STREAM_BATCH):
                yield BatchError(path, position, f"{problem}; cannot find the next batch", recoverable=False)
            else:
                yield TrailingBytes(path, position, len(src.buf) - src.off if room is None else room, problem)
            return
        buf, off = src.buf, src.off
        try:
            batch, computed = _parse(buf, off, total, position, path, magic, lean)
        except _PARSE_ERRORS:
            # said again from the entry's own bytes: what the message says (byte positions, the error
            # itself) must not depend on what else the reader's buffer held (a Spark task's range)
            reason = _parse_failure(bytes(buf[off:off + total]), total, position, path, magic)
        else:
            if not batch.crc_valid:
                yield CrcMismatch(path, position, batch.crc, computed, magic)
            yield batch
            src.off += total
            src.pos += total
            if resync:
                previous = src.mark = position
            continue
        # The checksum vouches for the length: skip just this entry. Without it, the length may be
        # the damage itself.
        stored = _stored_checksum(buf, off, magic)
        if resync and (stored is None or not checksum_matches(src.read_at, position, magic, total, stored)):
            if (yield from _resynchronise(src, path, position, reason, stop, previous)):
                previous = None
                continue
            return
        yield BatchError(path, position, reason)
        src.off += total
        src.pos += total
        if resync:
            previous = src.mark = position


def read_batches(buf_or_file, path: str = "<bytes>", start: int = 0, end: int | None = None
                 ) -> Iterator[Batch]:
    """Stream the batches of bytes or a binary file object (seekable or not, e.g. stdin).

    Raises BatchError (or its TrailingBytes subclass) at the first damaged entry. A batch
    with a bad CRC is still yielded, with crc_valid False. Positions are absolute, so
    start/end select a byte range that begins at a batch boundary. A str/PathLike is
    opened (and named in errors unless `path` is given).
    """
    if isinstance(buf_or_file, (str, os.PathLike)):
        name = os.fspath(buf_or_file)
        with open(name, "rb", buffering=0) as f:
            yield from read_batches(f, name if path == "<bytes>" else path, start, end)
        return
    for event in scan(buf_or_file, path, start, end):
        if isinstance(event, Batch):
            yield event
        elif not isinstance(event, CrcMismatch):
            raise event
