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
