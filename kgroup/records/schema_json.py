"""JSON text exactly as kafka-dump-log (Jackson) prints it.

Jackson writes compact separators, keeps non-ASCII as UTF-8 and escapes only ``"``, ``\\`` and
control characters below 0x20: ``\\b \\t \\n \\f \\r`` in short form, the rest as ``\\u00XX``
with UPPERCASE hex. Python's json module differs only in that hex case, so its C encoder is
used and the rare lowercase escapes are rewritten.
"""

from __future__ import annotations

import json
import re

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False,
                           allow_nan=False).encode
# Left to right, an escaped backslash pair is consumed whole, so a \u00xx matched here is a
# real escape and never the tail of a literal backslash followed by "u00xx".
_ESCAPES = re.compile(r"\\(\\|u00[0-9a-f]{2})")


def _upper(match: re.Match) -> str:
    text = match.group(0)
    return text if text == "\\\\" else text.upper().replace("\\U", "\\u")


def jackson_dumps(value) -> str:
    """Serialize a JSON-ready value (dict/list/str/int/bool/None) as Jackson would."""
    text = _encode(value)
    if "\\u00" in text:
        text = _ESCAPES.sub(_upper, text)
    return text


# ------------------------------------------------------------ record JSON (kafka-dump-log)

def key_to_json(key) -> dict:
    """JSON-ready key data with kafka-dump-log field names."""
    from . import codegen
    from .schema_records import record_schema

    schema = record_schema(key.record_type, key.family)
    return codegen.json_converter(schema.key, key.record_type)(key.data)


def value_to_json(record_type: int, value, family: str = "consumer", *,
                  parse_consumer_protocol: bool = True) -> dict:
    """JSON-ready value data as kafka-dump-log prints it for that version.

    GroupMetadataValue members of a "consumer" group get their subscription and assignment
    replaced by the parsed consumer-protocol JSON, each left as base64 if it does not parse.
    """
    from . import codegen
    from .consumer_protocol import assignment_to_json, subscription_to_json
    from .schema_records import RecordDecodeError, record_schema

    message = record_schema(record_type, family).value
    result = codegen.json_converter(message, message.clamp(value.version))(value.data)
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


def dump_log_key(key) -> str:
    """Exactly kafka-dump-log's key text: {"type":"1","data":{...}}."""
    return '{"type":"%d","data":%s}' % (key.record_type, jackson_dumps(key_to_json(key)))


def dump_log_payload(record_type: int, value, family: str = "consumer") -> str:
    """Exactly kafka-dump-log's payload text: {"version":"3","data":{...}}; <DELETE> for None."""
    if value is None:
        return "<DELETE>"
    return '{"version":"%d","data":%s}' % (
        value.version, jackson_dumps(value_to_json(record_type, value, family)))


# ------------------------------------------------------------ JSON back to data

def _struct_from_json(struct_, version: int, obj: dict) -> dict:
    if not isinstance(obj, dict):
        raise ValueError(f"{struct_.name}: expected a JSON object, got {type(obj).__name__}")
    return {f.json_name: _field_from_json(f, version, obj[f.json_name])
            for f in struct_.fields if version in f.versions and f.json_name in obj}


def _field_from_json(f, version: int, value):
    from .schema_runtime import from_b64, from_b64url

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
    from .schema_records import record_schema

    return _struct_from_json(record_schema(record_type, family).key.struct, record_type, data)


def value_from_json(record_type: int, version: int, data: dict, family: str = "consumer") -> dict:
    """Inverse of value_to_json. Parsed consumer-protocol JSON is re-encoded at the lowest
    version that carries its fields (JSON does not show the embedded version)."""
    from .consumer_protocol import encode_assignment, encode_subscription
    from .schema_records import record_schema

    message = record_schema(record_type, family).value
    result = _struct_from_json(message.struct, message.clamp(version), data)
    if record_type == 2:
        for member in result.get("members") or ():
            subscription = member.get("subscription")
            if isinstance(subscription, dict):
                sub = _struct_from_json_embedded("ConsumerProtocolSubscription", subscription)
                level = max([0] + [v for name, v in (("ownedPartitions", 1), ("generationId", 2),
                                                     ("rackId", 3)) if name in subscription])
                member["subscription"] = encode_subscription(sub, level)
            assignment = member.get("assignment")
            if isinstance(assignment, dict):
                member["assignment"] = encode_assignment(
                    _struct_from_json_embedded("ConsumerProtocolAssignment", assignment), 0)
    return result


def _struct_from_json_embedded(name: str, obj: dict) -> dict:
    from .schema import embedded_message

    message = embedded_message(name)
    return _struct_from_json(message.struct, message.valid.high, obj)
