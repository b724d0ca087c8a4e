"""Per-record text of Kafka's tools: kafka-dump-log's key/payload and the console formatters."""

from __future__ import annotations

import struct

from .schema_json import dump_log_key, dump_log_payload, jackson_dumps, key_to_json, value_to_json
from .schema_records import RecordDecodeError, UnknownRecordType, decode_key, decode_value

_INT16 = struct.Struct(">h")
OFFSETS_FORMATTER = "org.apache.kafka.tools.consumer.OffsetsMessageFormatter"
GROUP_METADATA_FORMATTER = "org.apache.kafka.tools.consumer.GroupMetadataMessageFormatter"


def dump_log_record(key: bytes | None, value: bytes | None, offset: int = 0,
                    family: str = "consumer") -> tuple[str, str | None]:
    """(key text, payload text or None) as ``kafka-dump-log --offsets-decoder`` prints them.

    Like trunk's serde, value versions are not range-checked here. An unknown record type
    or a decode error replaces the key text and leaves no payload. A missing key raises.
    """
    if key is None:
        raise RecordDecodeError(
            f"Failed to decode message at offset {offset} using offset topic decoder "
            "(message had a missing key)", part="key")
    try:
        decoded_key = decode_key(key, family)
        decoded_value = decode_value(decoded_key.record_type, value, family, strict_versions=False)
    except UnknownRecordType as exc:
        return f"Unknown record type {exc.record_type} at offset {offset}, skipping.", None
    except RecordDecodeError as exc:
        return f"Error at offset {offset}, skipping. {exc.message}", None
    return (dump_log_key(decoded_key),
            dump_log_payload(decoded_key.record_type, decoded_value, family))


def console_formatter_line(formatter: str, key: bytes | None, value: bytes | None) -> str:
    """One line of ``kafka-console-consumer --formatter Offsets|GroupMetadataMessageFormatter``.

    Returns "" where the formatter prints nothing (a record of the other kind). As in Kafka,
    only key types 0-2 are recognised and the value is read as the formatter's own value type
    whatever the key type was.
    """
    if formatter in (OFFSETS_FORMATTER, "offsets"):
        own_types, other_types, value_type = (0, 1), (2,), 1
    elif formatter in (GROUP_METADATA_FORMATTER, "group_metadata"):
        own_types, other_types, value_type = (2,), (0, 1), 2
    else:
        raise ValueError(f"unknown console formatter {formatter!r}")
    key_json = value_json = None
    if key is not None:
        if len(key) < 2:
            raise RecordDecodeError("Could not read version from key's buffer.", part="key")
        record_type = _INT16.unpack_from(key)[0]
        if record_type in other_types:
            return ""
        if record_type in own_types:
            key_json = {"version": record_type, "data": key_to_json(decode_key(key))}
        else:
            key_json = {"version": record_type, "data": "unknown"}
    if value is not None:
        if len(value) < 2:
            raise RecordDecodeError("Could not read version from value's buffer.", part="value")
        version = _INT16.unpack_from(value)[0]
        if 0 <= version <= 4:
            decoded = decode_value(value_type, value)
            data = value_to_json(value_type, decoded, parse_consumer_protocol=False)
            value_json = {"version": version, "data": data}
        else:
            value_json = {"version": version, "data": "unknown"}
    return jackson_dumps({"key": key_json, "value": value_json})
