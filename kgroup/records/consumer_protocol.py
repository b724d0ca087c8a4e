"""The consumer protocol embedded in GroupMetadataValue members (subscription / assignment).

Both are an int16 version and a non-flexible struct (versions 0-3). Like Kafka's
``ConsumerProtocol``, a version above 3 is parsed with the v3 layout and a negative version
is an error. Assignment v1-v3 have the v0 bytes.
"""

from __future__ import annotations

import struct

from . import codegen
from .schema import embedded_message
from .schema_records import RecordDecodeError, RecordEncodeError, _encode
from .schema_jsongen import json_converter
from .schema_runtime import ReadFailure

_INT16 = struct.Struct(">h")
SUBSCRIPTION = "ConsumerProtocolSubscription"
ASSIGNMENT = "ConsumerProtocolAssignment"


def _decode(name: str, kind: str, buf: bytes, layout: int | None = None) -> tuple[int, dict]:
    """(version, data); ``layout``: read the body with this version's layout whatever the header
    says (no check of the version either)."""
    if buf is None:
        raise RecordDecodeError(f"null {kind}", part=kind)
    if type(buf) is not bytes:
        buf = bytes(buf)
    message = embedded_message(name)
    if len(buf) < 2:
        raise RecordDecodeError(f"Could not read {kind} version: {len(buf)} byte(s)", part=kind)
    version = _INT16.unpack_from(buf)[0]
    if layout is None:
        if version < 0:
            raise RecordDecodeError(f"Unsupported {kind} version: {version}", part=kind, version=version)
        layout = min(version, message.valid.high)
    try:
        data, _ = codegen.reader(message, layout)(buf, 2)
    except ReadFailure as exc:
        detail = "null" if exc.detail is None else exc.detail
    except (IndexError, struct.error):
        detail = "null"
    else:
        return version, data
    raise RecordDecodeError(f"Could not read {name} version {version}: {detail}",
                            part=kind, version=version)


def decode_subscription(buf: bytes, *, with_version: bool = False):
    """ConsumerProtocolSubscription -> dict (``(version, dict)`` with ``with_version``)."""
    version, data = _decode(SUBSCRIPTION, "subscription", buf)
    return (version, data) if with_version else data


def subscription_topics_v0(buf: bytes) -> list[str]:
    """The topics of a subscription read as a broker reads them (Kafka's
    ClassicGroup.computeSubscribedTopics): the int16 version is skipped whatever it says
    (ConsumerProtocol.deserializeVersion checks nothing) and the body is read with the v0 layout
    (topics, user data), the prefix of every later version. RecordDecodeError if it does not parse."""
    return _decode(SUBSCRIPTION, "subscription", buf, layout=0)[1]["topics"]


def decode_assignment(buf: bytes, *, with_version: bool = False):
    """ConsumerProtocolAssignment -> dict (``(version, dict)`` with ``with_version``)."""
    version, data = _decode(ASSIGNMENT, "assignment", buf)
    return (version, data) if with_version else data


def _encode_embedded(name: str, data: dict, version: int) -> bytes:
    message = embedded_message(name)
    if version not in message.valid:
        raise RecordEncodeError(f"{name} has no version {version} (valid 0-{message.valid.high})")
    return _encode(message, version, data, f"{name} v{version}")


def encode_subscription(data: dict, version: int) -> bytes:
    return _encode_embedded(SUBSCRIPTION, data, version)


def encode_assignment(data: dict, version: int) -> bytes:
    return _encode_embedded(ASSIGNMENT, data, version)


def subscription_to_json(buf: bytes) -> dict:
    """kafka-dump-log's JSON for a subscription; raises RecordDecodeError if it does not parse."""
    version, data = _decode(SUBSCRIPTION, "subscription", buf)
    message = embedded_message(SUBSCRIPTION)
    return json_converter(message, min(version, message.valid.high))(data)


def assignment_to_json(buf: bytes) -> dict:
    version, data = _decode(ASSIGNMENT, "assignment", buf)
    message = embedded_message(ASSIGNMENT)
    return json_converter(message, min(version, message.valid.high))(data)
