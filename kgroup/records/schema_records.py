"""Key/value dispatch for ``__consumer_offsets`` and the draft ``__worker_offsets`` records.

A key is an int16 record type followed by the key struct; a value is an int16 version followed
by the value struct, whose schema is chosen by the *key's* record type. Error texts are Kafka
trunk's (``CoordinatorRecordSerde``) so they can be compared with kafka-dump-log output.

Data dicts use kafka-dump-log field names. ``bytes`` fields are ``bytes``; uuids are 16-byte
``bytes`` (``uuid.UUID`` is also accepted when encoding); unknown tagged fields read from a
flexible struct are kept under ``"_unknownTaggedFields"`` ({tag: bytes}) and written back.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import cache

from . import codegen
from .schema import RecordSchema, record_schemas
from .schema_runtime import ReadFailure, WriteFailure

FAMILIES = ("consumer", "connect", "share-state")
_INT16 = struct.Struct(">h")
_KEY_PREFIX = struct.Struct(">hh")  # record type, then the group id's int16 length
_KEY_CACHE_LIMIT = 65_536


class RecordDecodeError(ValueError):
    """A key or value that Kafka's reader would reject; ``message`` is Kafka's text."""

    def __init__(self, message: str, *, part: str | None = None,
                 record_type: int | None = None, version: int | None = None):
        super().__init__(message)
        self.message = message
        self.part = part  # "key" or "value"
        self.record_type = record_type
        self.version = version


class UnknownRecordType(RecordDecodeError):
    """Kafka's loaders skip these records ("a left over from an aborted upgrade")."""

    def __init__(self, record_type: int, family: str = "consumer"):
        super().__init__(f"unknown record type {record_type}", part="key", record_type=record_type)
        self.family = family


class RecordEncodeError(ValueError):
    """A data dict that cannot be written with the requested schema and version."""


@dataclass(slots=True)
class DecodedKey:
    """A decoded key. Keys are cached by their bytes: treat instances as read-only."""

    record_type: int
    name: str
    data: dict
    unread_bytes: int = 0
    family: str = "consumer"


@dataclass(slots=True)
class DecodedValue:
    version: int
    data: dict
    unread_bytes: int = 0


_new = object.__new__


def _value_top(version: int) -> codegen.TopLevel:
    """A value reader returns its DecodedValue, built slot by slot (cheaper than __init__)."""
    return codegen.TopLevel(2, ("_o = _new(_DV)", f"_o.version = {version}", "_o.data = {data}",
                                "_o.unread_bytes = _n - pos", "return _o"),
                            (("_new", _new), ("_DV", DecodedValue)))


def _key_top(record_type: int, name: str, family: str) -> codegen.TopLevel:
    return codegen.TopLevel(2, ("_o = _new(_DK)", f"_o.record_type = {record_type}",
                                f"_o.name = {name!r}", "_o.data = {data}",
                                "_o.unread_bytes = _n - pos", f"_o.family = {family!r}",
                                "return _o"),
                            (("_new", _new), ("_DK", DecodedKey)))


class _Family:
    """Per-family tables; readers are compiled on first use."""

    def __init__(self, family: str):
        self.family = family
        self.schemas: dict[int, RecordSchema] = record_schemas(family)
        self.key_readers: dict[int, object] = {}
        self.value_readers: dict[int, list] = {}

    def schema(self, record_type: int) -> RecordSchema:
        try:
            return self.schemas[record_type]
        except KeyError:
            raise UnknownRecordType(record_type, self.family) from None

    def key_reader(self, record_type: int):
        """``read(buf) -> DecodedKey`` for a key of this type."""
        reader = self.key_readers.get(record_type)
        if reader is None:
            schema = self.schema(record_type)
            reader = codegen.record_reader(schema.key, record_type,
                                           _key_top(record_type, schema.name, self.family))
            self.key_readers[record_type] = reader
        return reader

    def value_reader(self, record_type: int, version: int, strict: bool):
        """``read(buf) -> DecodedValue`` for this version (clamped when not strict)."""
        readers = self.value_readers.get(record_type)
        message = self.schema(record_type).value
        if readers is None:
            readers = [None] * (message.valid.high - message.valid.low + 1)
            self.value_readers[record_type] = readers
        index = version - message.valid.low
        if not 0 <= index < len(readers):
            if strict:
                raise RecordDecodeError(
                    _version_error(record_type, version, self.schemas[record_type]),
                    part="value", record_type=record_type, version=version)
            index = message.clamp(version) - message.valid.low
        reader = readers[index]
        if reader is None:
            read_as = message.valid.low + index
            reader = readers[index] = codegen.record_reader(message, read_as, _value_top(read_as))
        return reader


def _version_error(record_type: int, version: int, schema: RecordSchema) -> str:
    valid = schema.value.valid
    if record_type in (0, 1):
        head = f"Unknown offset message version: {version}"
    elif record_type == 2:
        head = f"Unknown group metadata message version: {version}"
    else:
        head = f"Unknown {schema.value.name} version: {version}"
    span = str(valid.low) if valid.low == valid.high else f"{valid.low}-{valid.high}"
    return f"{head} (record type {record_type} {schema.name} has value versions {span})"


_FAMILY_TABLES: dict[str, _Family] = {}
#: Decoded keys by their bytes, per family (bounded: cleared when full).
_KEY_CACHES: dict[str, dict[bytes, DecodedKey]] = {family: {} for family in FAMILIES}


def _table(family: str) -> _Family:
    table = _FAMILY_TABLES.get(family)
    if table is None:
        if family not in FAMILIES:
            raise ValueError(f"unknown record family {family!r} (expected one of {FAMILIES})")
        table = _FAMILY_TABLES[family] = _Family(family)
    return table


def decode_key(buf: bytes, family: str = "consumer") -> DecodedKey:
    """Decode a record key; the result may be shared with other calls for equal bytes."""
    try:  # hot path: a key seen before (the cache holds bytes; equal buffers find them)
        hit = _KEY_CACHES[family].get(buf)
    except (KeyError, TypeError, ValueError):  # unknown family, unhashable buffer
        hit = None
    if hit is not None:
        return hit
    return _decode_key_slow(buf, family)


def _decode_key_slow(buf, family: str) -> DecodedKey:
    if type(buf) is not bytes:
        buf = bytes(buf)
    table = _FAMILY_TABLES.get(family) or _table(family)
    cache = _KEY_CACHES[family]
    hit = cache.get(buf)  # a bytearray/memoryview key missed the hashable-only hot path
    if hit is not None:
        return hit
    if len(buf) < 2:
        raise RecordDecodeError("Could not read version from key's buffer.", part="key")
    record_type = _INT16.unpack_from(buf)[0]
    reader = table.key_reader(record_type)
    try:
        key = reader(buf)
    except _READ_FAILURES as exc:
        raise _read_error(exc, "key", record_type, record_type=record_type) from None
    if len(cache) >= _KEY_CACHE_LIMIT:
        cache.clear()
    cache[buf] = key
    return key


def group_id_of_key(key: bytes) -> str:
    """The group id of a ``__consumer_offsets`` key, without decoding the rest of it.

    Every key schema of both families starts with the group id as a non-flexible string (int16
    length, UTF-8), after the int16 record type; test_record_schemas checks it for every type.
    Reading only that is what places a record on its partition (``partition_for``).
    """
    _record_type, length = _KEY_PREFIX.unpack_from(key, 0)
    return bytes(key[_KEY_PREFIX.size:_KEY_PREFIX.size + length]).decode("utf-8")


#: What a generated reader raises on bad bytes: Kafka's message, or an underflow (Kafka's "null").
_READ_FAILURES = (ReadFailure, IndexError, struct.error)


def _read_error(exc, part: str, shown_version: int, **fields) -> RecordDecodeError:
    """Kafka's message for a key or value that its reader could not read."""
    detail = exc.detail if isinstance(exc, ReadFailure) else None
    return RecordDecodeError(
        f"Could not read record with version {shown_version} from {part}'s buffer due to: "
        f"{'null' if detail is None else detail}.", part=part, **fields)


def decode_value(record_type: int, buf: bytes | None, family: str = "consumer", *,
                 strict_versions: bool = True) -> DecodedValue | None:
    """Decode a value for the key's record type; None is a tombstone, b"" is an error.

    With ``strict_versions=False`` an out-of-range version is read the way trunk's serde does
    (above the highest like the highest, below the lowest like the lowest) instead of raising.
    """
    # Hot path: bytes of a (record type, version) pair already seen. Readers are listed by
    # the version's low byte, taken straight from the buffer (versions above 255 go the slow way).
    if type(buf) is bytes:
        try:
            reader = _FAST_VALUE_READERS[family][record_type][buf[1]] if not buf[0] else None
        except (KeyError, IndexError, TypeError):
            reader = None
        if reader is not None:
            try:
                return reader(buf)
            except _READ_FAILURES as exc:
                raise _read_error(exc, "value", buf[1], record_type=record_type, version=buf[1]) from None
    elif buf is None:
        return None
    else:
        return decode_value(record_type, bytes(buf), family, strict_versions=strict_versions)
    return _decode_value_slow(record_type, buf, family, strict_versions)


#: family -> record type -> [reader or None by version]; only versions in the valid range.
_FAST_VALUE_READERS: dict[str, dict[int, list]] = {family: {} for family in FAMILIES}


def _decode_value_slow(record_type: int, buf: bytes, family: str, strict: bool) -> DecodedValue:
    table = _table(family)
    if len(buf) < 2:
        table.schema(record_type)
        raise RecordDecodeError("Could not read version from value's buffer.", part="value",
                                record_type=record_type)
    version = _INT16.unpack_from(buf)[0]
    reader = table.value_reader(record_type, version, strict)
    if 0 <= version < 256 and version in table.schema(record_type).value.valid:
        by_version = _FAST_VALUE_READERS[family].setdefault(record_type, [])
        if len(by_version) <= version:
            by_version += [None] * (version + 1 - len(by_version))
        by_version[version] = reader
    try:
        value = reader(buf)
    except _READ_FAILURES as exc:
        raise _read_error(exc, "value", version, record_type=record_type, version=version) from None
    value.version = version  # a lenient read may have used a neighbouring version's layout
    return value


def _encode(message, version: int, data: dict, what: str) -> bytes:
    return _write(codegen.writer(message, version), bytearray(_INT16.pack(version)), data, what)


def _write(write, out: bytearray, data: dict, what: str) -> bytes:
    """``out`` followed by what the generated ``write`` makes of ``data``, or RecordEncodeError."""
    if not isinstance(data, dict):
        raise RecordEncodeError(f"{what}: data must be a dict, got {type(data).__name__}")
    try:
        write(out, data)
    except WriteFailure as exc:
        cause = exc.cause
        if isinstance(cause, KeyError):
            # A fixed-width run is packed at once: the missing key names the field exactly.
            parent, _, _ = exc.path.rpartition(".")
            exc.path = f"{parent}.{cause.args[0]}" if parent else str(cause.args[0])
            reason = "missing"
        else:
            reason = f"{type(cause).__name__}: {cause}"
        raise RecordEncodeError(f"{what}: field {exc.path}: {reason}") from cause
    return bytes(out)


def encode_key(record_type: int, data: dict, family: str = "consumer") -> bytes:
    message, what = _key_encoding(family, record_type)
    return _encode(message, record_type, data, what)


def encode_value(record_type: int, version: int, data: dict, family: str = "consumer") -> bytes:
    """Write a value; fields the version lacks are ignored, absent optional ones defaulted."""
    message, what = _value_encoding(family, record_type, version)
    return _encode(message, version, data, what)


@cache
def value_element_encoder(record_type: int, version: int, field: str, family: str = "consumer"):
    """``encode(data) -> bytes``: one element of the value's array ``field`` (of structs), its bytes
    as the value holds them. A host that writes large values whose elements seldom change keeps
    their encodings and joins them (the coordinator's GroupMetadata members)."""
    message, what = _value_encoding(family, record_type, version)
    write = codegen.element_writer(message, version, field)
    what = f"{what} {field} element"

    def encode(data: dict) -> bytes:
        return _write(write, bytearray(), data, what)

    return encode


@cache
def _key_encoding(family: str, record_type: int) -> tuple:
    """(key message, its name in errors): looked up once per type, not per record written."""
    key = _schema_to_encode(family, record_type).key
    return key, f"{key.name} (record type {record_type})"


@cache
def _value_encoding(family: str, record_type: int, version: int) -> tuple:
    message = _schema_to_encode(family, record_type).value
    if version not in message.valid:
        raise RecordEncodeError(
            f"{message.name} (record type {record_type}) has no version {version} "
            f"(valid {message.valid.low}-{message.valid.high})")
    return message, f"{message.name} v{version} (record type {record_type})"


def _schema_to_encode(family: str, record_type: int) -> RecordSchema:
    try:
        return _table(family).schema(record_type)
    except UnknownRecordType:
        raise RecordEncodeError(f"unknown record type {record_type} in family {family!r}") from None


def record_type_name(record_type: int, family: str = "consumer") -> str:
    """snake_case name of a record type; raises UnknownRecordType for others."""
    return _table(family).schema(record_type).name


def record_types(family: str = "consumer") -> list[int]:
    """Every key type the family's schemas define, in order."""
    return sorted(_table(family).schemas)


def record_schema(record_type: int, family: str = "consumer") -> RecordSchema:
    return _table(family).schema(record_type)
