"""Helpers that the generated readers and writers call (kept tiny: the hot paths are inline)."""

from __future__ import annotations

import base64
import re
import struct
from uuid import UUID as _UUID
from json.encoder import encode_basestring as _json_quote  # the C version when available


class ReadFailure(Exception):
    """Raised inside generated readers; ``detail`` is Kafka's inner message (None prints "null")."""

    def __init__(self, detail: str | None = None):
        super().__init__(detail)
        self.detail = detail


class WriteFailure(Exception):
    """Raised inside generated writers; ``path`` names the field that could not be written."""

    def __init__(self, path: str, cause: BaseException):
        super().__init__(path, cause)
        self.path = path
        self.cause = cause


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """Unsigned base-128 varint (at most 5 bytes, as Kafka's ByteUtils reads it)."""
    value = 0
    shift = 0
    while True:
        byte = buf[pos]  # IndexError = underflow, reported as Kafka's "null"
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value & 0xFFFFFFFF, pos  # Java keeps the low 32 bits
        shift += 7
        if shift > 28:
            raise ReadFailure(
                "Varint is too long, the most significant bit in the 5th byte is set, "
                f"converted value: {value & 0xFFFFFFFF:x}")


def read_uvarint_int32(buf: bytes, pos: int) -> tuple[int, int]:
    """The same varint seen as Java's signed int (lengths and counts above 2**31 go negative)."""
    value, pos = read_uvarint(buf, pos)
    return (value - 0x100000000 if value & 0x80000000 else value), pos


def write_uvarint(out: bytearray, value: int) -> None:
    if value < 0 or value > 0xFFFFFFFF:
        raise ValueError(f"unsigned varint out of range: {value}")
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def write_tagged(out: bytearray, tags: list) -> None:
    """Tagged-field section: count, then (tag, size, bytes) in ascending tag order."""
    tags.sort(key=lambda item: item[0])
    write_uvarint(out, len(tags))
    for tag, payload in tags:
        write_uvarint(out, tag)
        write_uvarint(out, len(payload))
        out += payload


def encode_utf8(value: str) -> bytes:
    if not isinstance(value, str):
        raise TypeError(f"expected str, got {type(value).__name__}")
    return value.encode("utf-8")


def as_bytes(value) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"expected bytes, got {type(value).__name__}")


def as_uuid(value) -> bytes:
    """uuids are 16-byte ``bytes`` in data dicts; a ``uuid.UUID`` is accepted on write."""
    if type(value) is _UUID:
        return value.bytes
    raw = getattr(value, "bytes", value)
    if not isinstance(raw, (bytes, bytearray)) or len(raw) != 16:
        raise TypeError(f"expected a 16-byte uuid, got {value!r}")
    return bytes(raw)


def b64(value: bytes | None) -> str | None:
    return None if value is None else base64.b64encode(value).decode("ascii")


def b64url(value: bytes | None) -> str | None:
    if value is None:
        return None
    return base64.urlsafe_b64encode(value).decode("ascii").rstrip("=")


def from_b64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text, validate=True)


def from_b64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


STRUCT_CODES = {"bool": "?", "int8": "b", "int16": "h", "uint16": "H", "int32": "i", "int64": "q",
                "uuid": "16s"}
STRUCT_SIZES = {"bool": 1, "int8": 1, "int16": 2, "uint16": 2, "int32": 4, "int64": 8, "uuid": 16}

unpack_from = struct.unpack_from
pack = struct.pack


# Jackson escapes control characters as \u00XX with uppercase hex; Python's encoder uses
# lowercase. Left to right, an escaped backslash pair is consumed whole, so a \u00xx matched
# here is a real escape and never a literal backslash followed by "u00xx".
_LOWER_ESCAPES = re.compile(r"\\(\\|u00[0-9a-f]{2})")


def _upper_escape(match: re.Match) -> str:
    text = match.group(0)
    return text if text == "\\\\" else "\\u" + text[2:].upper()


def jackson_fix(text: str) -> str:
    if "\\u00" in text:
        return _LOWER_ESCAPES.sub(_upper_escape, text)
    return text


def json_string(value: str) -> str:
    if type(value) is not str:
        raise TypeError(f"expected str, got {type(value).__name__}")
    text = _json_quote(value)
    return _LOWER_ESCAPES.sub(_upper_escape, text) if "\\u00" in text else text


def json_bytes(value: bytes) -> str:
    return '"' + base64.b64encode(value).decode("ascii") + '"'


def json_uuid(value: bytes) -> str:
    return '"' + base64.urlsafe_b64encode(value).decode("ascii").rstrip("=") + '"'


def json_int(value: int) -> str:
    if type(value) is not int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"expected int, got {type(value).__name__}")
    return str(int(value))
