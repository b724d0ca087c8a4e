"""SASL authentication of a connection on a SASL_PLAINTEXT or SASL_SSL listener, as Kafka's
`SaslServerAuthenticator` does it.

Before authentication a connection may send only ApiVersions, SaslHandshake (v0–1) and
SaslAuthenticate (v0–2); anything else closes it. SaslHandshake v0 switches to raw tokens (each a
4-byte size and the bytes, no Kafka header); v1 expects SaslAuthenticate requests. Mechanisms are
PLAIN and SCRAM-SHA-256/512 (`sasl.enabled.mechanisms`), checked against `scram.CredentialStore`.
A failed authentication (wrong credentials, a mechanism not enabled) is answered with
SASL_AUTHENTICATION_FAILED or UNSUPPORTED_SASL_MECHANISM (raw tokens: no answer) and the connection
closed — both only after `connection.failed.authentication.delay.ms`, as Kafka's Selector holds a
failed channel (`DelayedAuthenticationFailureClose`): the client hears nothing until then, so one
with a wrong password cannot retry in a tight loop.
"""

from __future__ import annotations

import asyncio
import logging
import struct

from kgroup.kafka_errors import (NONE, SASL_AUTHENTICATION_FAILED,
                                 UNSUPPORTED_SASL_MECHANISM, UNSUPPORTED_VERSION)
from kgroup.server.security.scram import HASHES, CredentialStore, ScramError, ScramServer, password_matches
from kgroup.server.wire import FrameError, decode_request, encode_response, peek_header

log = logging.getLogger("kgroup.server")

SASL_HANDSHAKE, SASL_AUTHENTICATE, API_VERSIONS = 17, 36, 18
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_SIZE = struct.Struct(">i")
_MAX_TOKEN = 1 << 16


class AuthenticationFailed(Exception):
    """Wrong credentials or a broken exchange; the message is what the client is told."""


class AuthenticationRefused(FrameError):
    """A failed authentication, to be answered (`answer`: the response frame, None with raw tokens)
    after the failed-authentication delay, then the connection closed."""

    def __init__(self, message: str, answer: bytes | None = None):
        super().__init__(message)
        self.answer = answer


def parse_mechanisms(text: str) -> tuple[str, ...]:
    from kgroup.server.security.listeners import ListenerError

    names = tuple(m.strip().upper() for m in text.split(",") if m.strip())
    unknown = [m for m in names if m not in MECHANISMS]
    if unknown or not names:
        raise ListenerError(f"config sasl.enabled.mechanisms: {', '.join(unknown) or 'empty'}; "
                            f"supported: {', '.join(MECHANISMS)}")
    return names


def sasl_api_entries():
    """The two SASL APIs for a SASL listener's ApiVersions (after authentication they are refused)."""
    from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

    def after_authentication(broker, request, ctx):
        raise FrameError(f"{type(request).__name__} after authentication is not supported")
    return {SASL_HANDSHAKE: (SaslHandshakeRequest, 0, 1, after_authentication),
            SASL_AUTHENTICATE: (SaslAuthenticateRequest, 0, 2, after_authentication)}


class _Exchange:
    """One mechanism's server side: `step(token) -> reply token`; `done` once authenticated."""

    def __init__(self, mechanism: str, store: CredentialStore):
        self.mechanism = mechanism
        self.store = store
        self.scram = ScramServer(mechanism, store) if mechanism in HASHES else None
        self.principal = None
        self._steps = 0

    def step(self, token: bytes) -> bytes:
        self._steps += 1
        try:
            if self.scram is None:
                return self._plain(token)
            if self._steps == 1:
                return self.scram.first(token)
            reply = self.scram.final(token)
            self.principal = self.scram.username
            return reply
        except ScramError:
            raise AuthenticationFailed("Authentication failed during authentication due to invalid "
                                       f"credentials with SASL mechanism {self.mechanism}") from None

    def _plain(self, token: bytes) -> bytes:
        parts = token.split(b"\x00")
        if len(parts) != 3:
            raise AuthenticationFailed("Invalid SASL/PLAIN response: expected 3 tokens")
        authzid, user, password = (p.decode("utf-8", "replace") for p in parts)
        credential, known = self.store.lookup(user, "sha512")
        matches = password_matches("sha512", credential, password)
        if not (matches and known) or (authzid and authzid != user):
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        self.principal = user
        return b""

    @property
    def done(self):
        return self.principal is not None


async def authenticate(reader, writer, api_table, mechanisms, store, peer_text,
                       failure_delay_ms: int = 0) -> str:
    """Run the pre-authentication requests of one connection; return the principal `User:NAME`.

    Raises FrameError (the connection is closed) for anything Kafka would close it for; a failed
    authentication is answered `failure_delay_ms` later (Kafka's
    connection.failed.authentication.delay.ms), then raised."""
    try:
        return await _authenticate(reader, writer, api_table, mechanisms, store, peer_text)
    except AuthenticationRefused as refused:
        await asyncio.sleep(failure_delay_ms / 1000)
        if refused.answer is not None:
            await _send(writer, refused.answer)
        raise


async def _authenticate(reader, writer, api_table, mechanisms, store, peer_text) -> str:
    from kgroup.server.handlers.meta import api_versions_response

    exchange = None
    while True:
        (size,) = _SIZE.unpack(await reader.readexactly(4))
        if size < 0 or size > _MAX_TOKEN:
            raise FrameError(f"SASL request size {size} is outside 0..{_MAX_TOKEN}")
        frame = peek_header(await reader.readexactly(size))
        if frame.api_key == API_VERSIONS and exchange is None:
            _cls, lo, hi, _fn = api_table[API_VERSIONS]
            if lo <= frame.api_version <= hi:
                decode_request(_cls, frame)
                response = api_versions_response(api_table, frame.api_version)
                version = frame.api_version
            else:
                response, version = api_versions_response(api_table, 0, UNSUPPORTED_VERSION), 0
            await _send(writer, encode_response(response, version, frame.correlation_id))
        elif frame.api_key == SASL_HANDSHAKE and exchange is None:
            exchange = await _handshake(writer, api_table, frame, mechanisms, store)
            if frame.api_version == 0:
                return await _raw_tokens(reader, writer, exchange)
        elif frame.api_key == SASL_AUTHENTICATE and exchange is not None:
            await _authenticate_step(writer, api_table, frame, exchange)
            if exchange.done:
                log.info("%s authenticated as User:%s (%s)", peer_text, exchange.principal,
                         exchange.mechanism)
                return f"User:{exchange.principal}"
        else:
            raise FrameError(f"unexpected request (API key {frame.api_key}) during SASL "
                             f"authentication (Kafka: ILLEGAL_SASL_STATE, connection closed)")


async def _send(writer, data: bytes):
    writer.write(data)
    await writer.drain()


async def _handshake(writer, api_table, frame, mechanisms, store):
    request_class, lo, hi, _fn = api_table[SASL_HANDSHAKE]
    if not lo <= frame.api_version <= hi:
        raise FrameError(f"SaslHandshake version {frame.api_version} is not supported")
    request = decode_request(request_class, frame)
    from kafka.protocol.sasl import SaslHandshakeResponse

    mechanism = (request.mechanism or "").upper()
    error = NONE if mechanism in mechanisms else UNSUPPORTED_SASL_MECHANISM
    response = SaslHandshakeResponse(version=frame.api_version, error_code=error,
                                     mechanisms=list(mechanisms))
    answer = encode_response(response, frame.api_version, frame.correlation_id)
    if error != NONE:
        raise AuthenticationRefused(f"SASL mechanism {request.mechanism!r} is not enabled "
                                    f"(sasl.enabled.mechanisms: {', '.join(mechanisms)})", answer)
    await _send(writer, answer)
    return _Exchange(mechanism, store)


async def _authenticate_step(writer, api_table, frame, exchange):
    from kafka.protocol.sasl import SaslAuthenticateResponse

    request_class, lo, hi, _fn = api_table[SASL_AUTHENTICATE]
    if not lo <= frame.api_version <= hi:
        raise FrameError(f"SaslAuthenticate version {frame.api_version} is not supported")
    request = decode_request(request_class, frame)
    try:
        reply = exchange.step(bytes(request.auth_bytes or b""))
    except AuthenticationFailed as exc:
        response = SaslAuthenticateResponse(version=frame.api_version,
                                            error_code=SASL_AUTHENTICATION_FAILED,
                                            error_message=str(exc), auth_bytes=b"",
                                            session_lifetime_ms=0)
        raise AuthenticationRefused(f"authentication failed ({exchange.mechanism}): {exc}",
                                    encode_response(response, frame.api_version, frame.correlation_id)) from None
    response = SaslAuthenticateResponse(version=frame.api_version, error_code=NONE,
                                        error_message=None, auth_bytes=reply,
                                        session_lifetime_ms=0)
    await _send(writer, encode_response(response, frame.api_version, frame.correlation_id))


async def _raw_tokens(reader, writer, exchange) -> str:
    """After SaslHandshake v0: size-prefixed tokens with no Kafka header; a failure just closes."""
    while not exchange.done:
        (size,) = _SIZE.unpack(await reader.readexactly(4))
        if size < 0 or size > _MAX_TOKEN:
            raise FrameError(f"SASL token size {size} is outside 0..{_MAX_TOKEN}")
        try:
            reply = exchange.step(await reader.readexactly(size))
        except AuthenticationFailed as exc:
            raise AuthenticationRefused(f"authentication failed ({exchange.mechanism}): {exc}") from None
        await _send(writer, _SIZE.pack(len(reply)) + reply)
    return f"User:{exchange.principal}"
