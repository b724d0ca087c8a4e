"""How entries are cut out of a segment, and where reading resumes after one that cannot be read.

One rule for every reader of segment files: the streaming scanner (`batch.scan`, local engine and
Spark tasks alike), and the Spark driver's planner, which cuts files into byte ranges from the
batch headers alone.

* **Framing.** An entry is an 8-byte offset, a 4-byte length and the length's bytes; its magic byte
  (0, 1 or 2) is at byte 16. The length must be at least the smallest entry of that magic and the
  entry must end within the file (`frame_problem`).
* **Resynchronising.** A length field is not covered by any checksum, so once an entry cannot be
  read — its frame is impossible, or it does not parse and its checksum does not match either — its
  length says nothing about where the next one starts. The next entry is then the first position
  after the bad one where a *whole* entry starts: framed as above, a plausible header, and a checksum
  over its bytes that matches (CRC-32C for magic 2, CRC-32 for the legacy magics 0 and 1;
  `next_whole_entry`). A chance match is a 32-bit checksum agreeing with bytes it does not cover.
  When the bad entry is where the batch read just before it ended, the search starts after that
  batch's start instead: bytes deleted or inserted inside a batch can leave it parsing (its
  checksum wrong, or even right when the byte lost equals the one that slid in) with a length that
  no longer ends where the next batch starts.
* **Cost.** Nothing here runs while the file is intact. Searching looks for the three magic bytes
  with `bytes.find` (C speed) and skips runs of one byte (a zero length frames nothing; a run of 1s or
  2s is one header all along, no batch's) with comparisons of whole blocks, so a zero-filled tail
  costs no per-byte Python work; a candidate's length is checked next, then its header, and its
  checksum only after every cheap check passed, read in chunks (a garbage length never makes the
  reader hold the bytes it claims).
"""

from __future__ import annotations

import struct
import zlib

from .crc import crc32c

#: Size of the offset + length prefix every entry starts with.
LOG_OVERHEAD = 12
#: Bytes needed to see an entry's length and magic.
HEADER_PEEK = 17
#: Smallest legal length field per magic (bytes after the 12-byte prefix).
MIN_LENGTH = {0: 14, 1: 22, 2: 49}
#: Kafka's own lower bound for any entry (FileLogInputStream).
MIN_ANY_LENGTH = 14
#: A stream (no known size) entry claiming more than this is treated as garbage, not read.
MAX_STREAM_BATCH = 256 << 20
#: Bytes read at a time while searching.
SEARCH_CHUNK = 1 << 20

_PREFIX = struct.Struct(">qi4xb")             # offset, length, (leader epoch / crc), magic
_V2_HEADER = struct.Struct(">qiibIhiqqqhii")  # the 61-byte magic-2 batch header
_V2_HEADER_SIZE = 61
_LEGACY_HEAD = struct.Struct(">qiIbB")        # offset, length, crc, magic, attributes
_INT32 = struct.Struct(">i")
_MAGIC_BYTES = (b"\x00", b"\x01", b"\x02")
_RUN_BLOCKS = {value: bytes([value]) * 4096 for value in range(3)}


def frames(magic: int, length: int, room: int | None) -> bool:
    """Whether the entry whose prefix reads (length, magic) can be cut out of the `room` bytes from its
    start (None for a stream, whose size is unknown: up to MAX_STREAM_BATCH)."""
    return length >= MIN_LENGTH.get(magic, MIN_ANY_LENGTH) and \
        LOG_OVERHEAD + length <= (MAX_STREAM_BATCH if room is None else room)


def frame_problem(magic: int, length: int, room: int | None) -> str | None:
    """Why the entry cannot be framed (`frames`), or None when it can."""
    if frames(magic, length, room):
        return None
    minimum = MIN_LENGTH.get(magic, MIN_ANY_LENGTH)
    if length < minimum:
        what = f"magic {magic}" if magic in MIN_LENGTH else "any entry"
        return f"batch length {length} is below the minimum {minimum} for {what}"
    if room is None:
        return f"batch length {length} is implausibly large for a stream"
    return f"batch length {length} exceeds the file"


def checksum_matches(read_at, position: int, magic: int, total: int, stored: int) -> bool:
    """Whether the entry of `total` bytes at `position` has the checksum `stored` (the one its header
    holds): CRC-32C from the attributes on for magic 2, CRC-32 from the magic byte on for 0 and 1.
    Read in chunks through ``read_at(position, count) -> bytes``."""
    if magic == 2:
        at, crc, update = position + 21, 0, crc32c
    elif magic in (0, 1):
        at, crc, update = position + 16, 0, zlib.crc32
    else:
        return False
    end = position + total
    while at < end:
        piece = read_at(at, min(SEARCH_CHUNK, end - at))
        if not piece:
            return False
        crc = update(piece, crc)
        at += len(piece)
    return crc == stored


def whole_entry_at(read_at, position: int, size: int | None) -> bool:
    """Whether a whole, valid entry starts at `position` of a file of `size` bytes (None: a stream)."""
    head = read_at(position, _V2_HEADER_SIZE)
    if len(head) < HEADER_PEEK:
        return False
    offset, length, magic = _PREFIX.unpack_from(head)
    if offset < 0 or magic not in MIN_LENGTH:
        return False
    if frame_problem(magic, length, None if size is None else size - position) is not None:
        return False
    total = LOG_OVERHEAD + length
    if magic == 2:
        if len(head) < _V2_HEADER_SIZE:
            return False
        (_, _, _, _, crc, attributes, last_delta, _, _, _, epoch, base_seq, count) = _V2_HEADER.unpack_from(head)
        # attributes: codec (0-4), timestamp type, transactional, control, delete horizon; the rest unused
        if attributes & ~0x7F or attributes & 7 > 4 or last_delta < 0 or not 0 <= count <= last_delta + 1 \
                or epoch < -1 or base_seq < -1:
            return False
        return checksum_matches(read_at, position, 2, total, crc)
    if len(head) < _LEGACY_HEAD.size:
        return False
    _, _, crc, _, attributes = _LEGACY_HEAD.unpack_from(head)
    if attributes & (0xF0 if magic else 0xF8) or attributes & 7 > 3:  # codec none/gzip/snappy/lz4
        return False
    key_at = position + (26 if magic else 18)  # after magic 1's timestamp
    end = position + total
    sizes = read_at(key_at, 4)
    if len(sizes) < 4:
        return False
    (key_size,) = _INT32.unpack(sizes)
    value_at = key_at + 4 + max(key_size, 0)
    if key_size < -1 or value_at + 4 > end:
        return False
    sizes = read_at(value_at, 4)
    if len(sizes) < 4:
        return False
    (value_size,) = _INT32.unpack(sizes)
    if value_size < -1 or value_at + 4 + max(value_size, 0) != end:
        return False
    return checksum_matches(read_at, position, magic, total, crc)


def next_whole_entry(read_at, after: int, stop: int | None, size: int | None, release=None) -> int | None:
    """The first position p with after < p < stop (stop None: no bound) where a whole, valid entry
    starts (`whole_entry_at`), or None if there is none.

    ``read_at(position, count)`` returns up to `count` bytes of the file at `position`; `size` is the
    file's size (None for a stream). ``release(position)``, when given, is told that nothing before
    `position` will be asked for again (a stream may drop it)."""
    pos = after + 1
    while stop is None or pos < stop:
        chunk = read_at(pos, SEARCH_CHUNK + HEADER_PEEK)
        if len(chunk) < HEADER_PEEK:
            return None
        room = len(chunk) - HEADER_PEEK + 1  # candidates whose magic byte the chunk holds
        if stop is not None:
            room = min(room, stop - pos)
        for index in _candidates(chunk, room):
            at = pos + index
            if frames(chunk[index + 16], _INT32.unpack_from(chunk, index + 8)[0], None if size is None else size - at) \
                    and whole_entry_at(read_at, at, size):
                return at
        pos += room
        if release is not None:
            release(pos)
    return None


def _candidates(chunk: bytes, room: int):
    """Indexes i < room of `chunk` whose byte i + 16 is a magic (0, 1 or 2), in order, less those a run
    of one byte rules out a block at a time: a zero length field (bytes i + 8 to i + 11) frames nothing,
    and where bytes i + 8 to i + 16 are one byte repeated (a run of 1s or 2s), the length, the epoch or
    checksum and the magic are the same all along the run, a header no batch has."""
    limit = room + 16
    upcoming = [chunk.find(m, 16, limit) for m in _MAGIC_BYTES]
    while True:
        found = [at for at in upcoming if at >= 0]
        if not found:
            return
        at = min(found)
        index = at - 16
        if chunk[index + 8:index + 12] == b"\x00\x00\x00\x00":
            # no length field starting in the run of zeros this one sits in can be non-zero
            resume = max(at + 1, _run_end(chunk, index + 8, 0) - 11 + 16)
        elif chunk[index + 8:index + 17] == chunk[at:at + 1] * 9:
            resume = max(at + 1, _run_end(chunk, index + 8, chunk[at]))
        else:
            yield index
            resume = at + 1
        upcoming = [chunk.find(m, resume, limit) if at_m >= 0 and at_m < resume else at_m
                    for m, at_m in zip(_MAGIC_BYTES, upcoming)]


def _run_end(chunk: bytes, start: int, value: int) -> int:
    """The index of the first byte of `chunk` at or after `start` that is not `value` (len(chunk) if
    none), compared a block at a time."""
    block = _RUN_BLOCKS[value]
    pos, size = start, len(block)
    while chunk[pos:pos + size] == block:
        pos += size
    tail = chunk[pos:pos + size]
    return pos + len(tail) - len(tail.lstrip(block[:1]))


def file_reader(f):
    """``read_at(position, count)`` over a seekable binary file object."""
    def read_at(position: int, count: int) -> bytes:
        f.seek(position)
        parts, left = [], count
        while left > 0:
            piece = f.read(left)
            if not piece:
                break
            parts.append(piece)
            left -= len(piece)
        return parts[0] if len(parts) == 1 else b"".join(parts)
    return read_at


def entry_starts(f, size: int, resync: bool):
    """(position, offset field, whether the entry before led here by its length) of each entry a reader
    of the whole file starts at, found from the
    headers alone (a seek and a 17-byte read each, never the bodies): the next entry starts where the
    length says; after a length that frames nothing, at the next whole entry after the start of the
    entry before it (resync, as `batch.scan` searches) or nowhere.

    An entry whose length frames but whose body is damaged is passed over by that length, which the
    damage may have made wrong (a reader that parses it resynchronises instead): a position found
    after it may be no entry at all. Whoever cuts a file at a position checks `whole_entry_at` there.
    """
    read_at = file_reader(f)
    pos, previous = 0, None
    while pos + HEADER_PEEK <= size:
        head = read_at(pos, HEADER_PEEK)
        if len(head) < HEADER_PEEK:
            return
        offset, length, magic = _PREFIX.unpack(head)
        if frame_problem(magic, length, size - pos) is not None:
            found = next_whole_entry(read_at, pos if previous is None else previous, None, size) if resync else None
            if found is None:
                return
            pos, previous = found, None
            continue
        yield pos, offset, previous is not None
        pos, previous = pos + LOG_OVERHEAD + length, pos
