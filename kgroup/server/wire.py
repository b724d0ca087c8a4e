"""Request framing: split a frame into its header and body with kafka-python's message classes.

A frame is a 4-byte big-endian size followed by the request. The first 8 bytes of every request
header (api key, api version, correlation id) are fixed-width in every header version, so they are
read directly; that is enough to answer even a request whose body cannot be decoded.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

UNSUPPORTED_VERSION = 35

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
