"""Request framing: split a frame into its header and body with kafka-python's message classes.

A frame is a 4-byte big-endian size followed by the request. The first 8 bytes of every request
header (api key, api version, correlation id) are fixed-width in every header version, so they are
read directly; that is enough to answer even a request whose body cannot be decoded.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

_FIXED = struct.Struct(">hhi")


class FrameError(Exception):
    """The peer sent something that is not a Kafka request; Kafka closes the connection."""


@dataclass(slots=True)
class RequestFrame:
    api_key: int
    api_version: int
    correlation_id: int
    payload: bytes


def peek_header(payload: bytes) -> RequestFrame:
    if len(payload) < _FIXED.size:
        raise FrameError(f"request of {len(payload)} bytes is shorter than a request header")
    api_key, api_version, correlation_id = _FIXED.unpack_from(payload, 0)
    return RequestFrame(api_key, api_version, correlation_id, payload)


def decode_request(request_class, frame: RequestFrame):
    """Decode header + body; any decode failure becomes a FrameError naming the API."""
    try:
        request = request_class.decode(frame.payload, version=frame.api_version, header=True)
    except Exception as exc:  # kafka-python raises ValueError, struct.error, IndexError, ...
        raise FrameError(f"malformed {request_class.__name__} v{frame.api_version}: "
                         f"{type(exc).__name__}: {exc}") from None
    return request


def encode_response(response, version: int, correlation_id: int) -> bytes:
    """Framed response bytes; ApiVersions keeps its non-flexible header via its own class.

    The version is set on the object before the header exists (kafka-python's version setter
    assumes a request header)."""
    if response.API_VERSION != version:
        response.API_VERSION = version
    response.with_header(correlation_id=correlation_id)
    return bytes(response.encode(header=True, framed=True))


def check_required_fields(request) -> None:
    """Refuse null where the schema does not allow it (an array, string or bytes sent as null,
    or a null string inside an array of strings).

    kafka-python decodes a null array, string or bytes whatever the schema says; Kafka's generated
    readers reject it ("non-nullable field ... was serialized as null"), so the request is invalid.
    """
    version = request.version
    _check_struct(request, request._struct, version, request.__class__.__name__)


def _check_struct(obj, struct, version, path):
    for field in struct._fields:
        if not field.for_version_q(version) or field.tagged_field_q(version):
            continue
        value = getattr(obj, field.name)
        if value is None:
            if field.is_struct() or field.type_str in ("records", "uuid"):
                continue
            if not field.nullable_for_version_q(version):
                raise FrameError(f"malformed {path}: non-nullable field {field.name} is null")
            continue
        if field.is_array() and not field.is_struct_array() and None in value:
            raise FrameError(f"malformed {path}: field {field.name} has a null element")
        if field.is_struct_array():
            for item in value:
                _check_struct(item, field, version, f"{path}.{field.name}")
        elif field.is_struct():
            _check_struct(value, field, version, f"{path}.{field.name}")
