"""JSON exactly as kafka-dump-log (Jackson) prints it, and back.

Jackson writes compact separators, keeps non-ASCII as UTF-8 and escapes only ``"``, ``\\`` and
control characters below 0x20: ``\\b \\t \\n \\f \\r`` in short form, the rest as ``\\u00XX``
with UPPERCASE hex. Python's json module differs only in that hex case, so its C encoder is
used and the rare lowercase escapes are rewritten.
"""

from __future__ import annotations

import json

from .consumer_protocol import (
    assignment_to_json,
    encode_assignment,
    encode_subscription,
    subscription_to_json,
)
from .schema import embedded_message
from .schema_jsongen import json_converter, text_emitter
from .schema_records import RecordDecodeError, record_schema
from .schema_runtime import from_b64, from_b64url, jackson_fix

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False,
                           allow_nan=False).encode


def jackson_dumps(value) -> str:
    """Serialize a JSON-ready value (dict/list/str/int/bool/None) as Jackson would."""
    return jackson_fix(_encode(value))


# ------------------------------------------------------------ record JSON (kafka-dump-log)

_KEY_CONVERTERS: dict = {}
_VALUE_CONVERTERS: dict = {}
_VALUE_TEXT: dict = {}


def _value_message(record_type: int, version: int, family: str):
    message = record_schema(record_type, family).value
    return message, message.clamp(version)


def key_to_json(key) -> dict:
    """JSON-ready key data with kafka-dump-log field names."""
    index = (key.family, key.record_type)
    converter = _KEY_CONVERTERS.get(index)
    if converter is None:
        schema = record_schema(key.record_type, key.family)
        converter = _KEY_CONVERTERS[index] = json_converter(schema.key, key.record_type)
    return converter(key.data)


def value_to_json(record_type: int, value, family: str = "consumer", *,
                  parse_consumer_protocol: bool = True) -> dict:
    """JSON-ready value data as kafka-dump-log prints it for that version.

    GroupMetadataValue members of a "consumer" group get their subscription and assignment
    replaced by the parsed consumer-protocol JSON, each left as base64 if it does not parse.
    """
    index = (family, record_type, value.version)
    converter = _VALUE_CONVERTERS.get(index)
    if converter is None:
        converter = _VALUE_CONVERTERS[index] = json_converter(
            *_value_message(record_type, value.version, family))
    result = converter(value.data)
    if parse_consumer_protocol and record_type == 2 and result.get("protocolType") == "consumer":
        for member, raw in zip(result.get("members") or (), value.data.get("members") or ()):
            for name, parse in (("subscription", subscription_to_json),
                                ("assignment", assignment_to_json)):
                blob = raw.get(name)
                if blob is None:
                    continue
                try:
                    member[name] = parse(blob)
                except RecordDecodeError:
                    pass
    return result


_KEY_TEXT: dict = {}


def dump_log_key(key) -> str:
    """Exactly kafka-dump-log's key text: {"type":"1","data":{...}}."""
    index = (key.family, key.record_type)
    emitter = _KEY_TEXT.get(index)
    if emitter is None:
        schema = record_schema(key.record_type, key.family)
        emitter = _KEY_TEXT[index] = text_emitter(schema.key, key.record_type)
    return '{"type":"%d","data":%s}' % (key.record_type, emitter(key.data))


def dump_log_payload(record_type: int, value, family: str = "consumer") -> str:
    """Exactly kafka-dump-log's payload text: {"version":"3","data":{...}}; <DELETE> for None."""
    if value is None:
        return "<DELETE>"
    if record_type == 2 and value.data.get("protocolType") == "consumer":
        text = jackson_dumps(value_to_json(record_type, value, family))
    else:
        index = (family, record_type, value.version)
        emitter = _VALUE_TEXT.get(index)
        if emitter is None:
            emitter = _VALUE_TEXT[index] = text_emitter(
                *_value_message(record_type, value.version, family))
        text = emitter(value.data)
    return '{"version":"%d","data":%s}' % (value.version, text)


# ------------------------------------------------------------ JSON back to data

def _struct_from_json(struct_, version: int, obj: dict) -> dict:
    if not isinstance(obj, dict):
        raise ValueError(f"{struct_.name}: expected a JSON object, got {type(obj).__name__}")
    return {f.json_name: _field_from_json(f, version, obj[f.json_name])
            for f in struct_.fields if version in f.versions and f.json_name in obj}


def _field_from_json(f, version: int, value):
    def one(kind, item):
        if item is None:
            return None
        if kind == "bytes":
            return item if isinstance(item, dict) else from_b64(item)
        if kind == "uuid":
            return from_b64url(item)
        if kind == "struct":
            return _struct_from_json(f.struct, version, item)
        return item

    if f.type == "array":
        return None if value is None else [one(f.element, item) for item in value]
    return one(f.type, value)


def key_from_json(record_type: int, data: dict, family: str = "consumer") -> dict:
    """Inverse of key_to_json: kafka-dump-log key data back to a data dict."""
    return _struct_from_json(record_schema(record_type, family).key.struct, record_type, data)


def value_from_json(record_type: int, version: int, data: dict, family: str = "consumer") -> dict:
    """Inverse of value_to_json. Parsed consumer-protocol JSON is re-encoded at the lowest
    version that carries its fields (JSON does not show the embedded version)."""
    message, layout = _value_message(record_type, version, family)
    result = _struct_from_json(message.struct, layout, data)
    if record_type == 2:
        for member in result.get("members") or ():
            subscription = member.get("subscription")
            if isinstance(subscription, dict):
                sub = _embedded_from_json("ConsumerProtocolSubscription", subscription)
                level = max([0] + [v for name, v in (("ownedPartitions", 1), ("generationId", 2),
                                                     ("rackId", 3)) if name in subscription])
                member["subscription"] = encode_subscription(sub, level)
            assignment = member.get("assignment")
            if isinstance(assignment, dict):
                member["assignment"] = encode_assignment(
                    _embedded_from_json("ConsumerProtocolAssignment", assignment), 0)
    return result


def _embedded_from_json(name: str, obj: dict) -> dict:
    message = embedded_message(name)
    return _struct_from_json(message.struct, message.valid.high, obj)
