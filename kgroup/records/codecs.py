"""Kafka's batch compression codecs, with the on-disk quirks Kafka's own writers produce.

Kafka's blobs are not what the Python libraries emit by default: snappy uses snappy-java's
xerial framing, magic-0 LZ4 frames carry a wrongly computed header checksum (KAFKA-3160)
and zstd frames carry no content size. Readers here accept all of these.
"""

from __future__ import annotations

import struct
import zlib

CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")
CODEC_IDS = {name: i for i, name in enumerate(CODEC_NAMES)}

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024
_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_INT32 = struct.Struct(">i")
#: Decompressed bytes allowed per batch; more is treated as corrupt (a decompression bomb).
MAX_DECOMPRESSED = 256 << 20
_ZSTD_PIECE = 4096  # zstd input fed this much at a time, so output is checked as it grows


class CodecError(ValueError):
    """Compressed data that cannot be decoded (or a codec that does not exist)."""


def codec_name(codec_id: int) -> str:
    if 0 <= codec_id < len(CODEC_NAMES):
        return CODEC_NAMES[codec_id]
    return f"unknown({codec_id})"


def decompress(codec_id: int, data, magic: int = 2) -> bytes:
    """Decompress one batch blob; raises CodecError (never a library exception) on bad data."""
    try:
        if codec_id == 0:
            return bytes(data)
        if codec_id == 1:
            return _gunzip(data)
        if codec_id == 2:
            return _unsnappy(data)
        if codec_id == 3:
            return _unlz4(data, magic)
        if codec_id == 4:
            if magic < 2:
                raise CodecError(f"zstd is not allowed with magic {magic}")
            return _unzstd(data)
    except CodecError:
        raise
    except MemoryError:
        raise _too_big() from None
    except Exception as exc:  # the codec libraries raise assorted types on garbage
        raise CodecError(f"corrupt {codec_name(codec_id)} data: {exc}") from None
    raise CodecError(f"unknown compression codec {codec_id}")


def compress(codec_id: int, data: bytes, magic: int = 2) -> bytes:
    """Compress the way Kafka's Java producer does, so Kafka tools could read the result."""
    if codec_id == 0:
        return bytes(data)
    if codec_id == 1:
        c = zlib.compressobj(6, zlib.DEFLATED, 31)
        return c.compress(data) + c.flush()
    if codec_id == 2:
        return _snappy_xerial(data)
    if codec_id == 3:
        return _lz4_frame(data, magic)
    if codec_id == 4:
        if magic < 2:
            raise CodecError(f"zstd is not allowed with magic {magic}")
        import zstandard

        return zstandard.ZstdCompressor(write_content_size=False).compress(data)
    raise CodecError(f"unknown compression codec {codec_id}")


def _too_big() -> CodecError:
    return CodecError(f"decompresses to more than {MAX_DECOMPRESSED} bytes")


def _gunzip(data) -> bytes:
    """All gzip members in the blob (Java's GZIPInputStream reads concatenated members too)."""
    parts = []
    total = 0
    rest = bytes(data)
    while True:
        d = zlib.decompressobj(47)  # gzip or zlib header, auto-detected
        out = d.decompress(rest, MAX_DECOMPRESSED - total + 1)
        total += len(out)
        if total > MAX_DECOMPRESSED:
            raise _too_big()
        parts.append(out)
        if not d.eof:
            raise CodecError("corrupt gzip data: stream ends early")
        rest = d.unused_data
        if not rest:
            return b"".join(parts) if len(parts) > 1 else parts[0]


def _unsnappy(data) -> bytes:
    import cramjam

    data = bytes(data)
    if not data.startswith(XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(data))
    if len(data) < 16:
        raise CodecError("corrupt snappy data: truncated xerial header")
    parts = []
    pos, end = 16, len(data)
    while pos < end:
        if pos + 4 > end:
            raise CodecError(f"corrupt snappy data: truncated xerial block length at {pos}")
        (size,) = _INT32.unpack_from(data, pos)
        pos += 4
        if size < 0 or pos + size > end:
            raise CodecError(f"corrupt snappy data: xerial block of {size} bytes at {pos - 4} "
                             f"exceeds the {end}-byte blob")
        parts.append(bytes(cramjam.snappy.decompress_raw(data[pos:pos + size])))
        pos += size
    return b"".join(parts)


def _snappy_xerial(data: bytes) -> bytes:
    import cramjam

    out = [_XERIAL_HEADER]
    for i in range(0, len(data), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(data[i:i + _XERIAL_BLOCK]))
        out.append(_INT32.pack(len(block)))
        out.append(block)
    return b"".join(out)


def _lz4_header_checksum(descriptor: bytes) -> int:
    import xxhash

    return (xxhash.xxh32_intdigest(descriptor, 0) >> 8) & 0xFF


def _unlz4(data, magic: int) -> bytes:
    import lz4.frame

    data = bytes(data)
    if magic == 0 and len(data) >= 7 and data.startswith(_LZ4_MAGIC):
        flg = data[4]
        desc_end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)  # size, dict id
        if len(data) > desc_end:
            fixed = _lz4_header_checksum(data[4:desc_end])
            data = data[:desc_end] + bytes((fixed,)) + data[desc_end + 1:]
    d = lz4.frame.LZ4FrameDecompressor()
    out = d.decompress(data, max_length=MAX_DECOMPRESSED + 1)
    if len(out) > MAX_DECOMPRESSED:
        raise _too_big()
    if not d.eof:
        raise CodecError("corrupt lz4 data: frame ends early")
    return out


def _lz4_frame(data: bytes, magic: int) -> bytes:
    import lz4.frame

    blob = lz4.frame.compress(data, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False,
                              content_checksum=False, store_size=False)
    if magic == 0:  # reproduce Kafka's old checksum over magic+FLG+BD
        blob = blob[:6] + bytes((_lz4_header_checksum(blob[0:6]),)) + blob[7:]
    return blob


def _unzstd(data) -> bytes:
    import zstandard

    d = zstandard.ZstdDecompressor().decompressobj()
    data = bytes(data)
    if len(data) <= _ZSTD_PIECE:
        out = d.decompress(data)
    else:
        parts = []
        total = 0
        for i in range(0, len(data), _ZSTD_PIECE):
            piece = d.decompress(data[i:i + _ZSTD_PIECE])
            total += len(piece)
            if total > MAX_DECOMPRESSED:
                raise _too_big()
            parts.append(piece)
            if d.eof:
                break
        out = b"".join(parts)
    if len(out) > MAX_DECOMPRESSED:
        raise _too_big()
    if not d.eof:
        raise CodecError("corrupt zstd data: frame ends early")
    return out
