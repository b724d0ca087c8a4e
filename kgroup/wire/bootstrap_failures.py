"""Why the bootstrap connection fails, said at once in one line instead of after `--timeout`.

kafka-python treats every failed bootstrap connection as transient: it logs the cause and retries
until its bootstrap timeout, so a wrong password, an untrusted certificate or a protocol mismatch
would all end as "cannot reach a Kafka broker". Before the bootstrap, kgroup probes what is cheap
to know (nothing listens; a plaintext listener under a TLS client); during it, `BootstrapWatch`
reads kafka-python's bootstrap log records and, at the first failure that no retry can heal, stops
the bootstrap with that cause. Probes that need the broker's word (the mechanisms it enables,
whether it speaks TLS) run only then, once.
"""

from __future__ import annotations

import logging
import re
import socket
import ssl

# kafka-python's records from inside its bootstrap loop: an exception raised while one is logged
# leaves that loop, which is how the watch stops a bootstrap that cannot succeed.
_BOOTSTRAP_RECORDS = ("Bootstrap connection to ", "Bootstrap attempt to ")
_VERIFY_FAILED = re.compile(r"certificate verify failed: (.*?)(?: \(_ssl\.c:\d+\))?$")


class BootstrapFailure(Exception):
    """A bootstrap that cannot succeed; the message is the cause, one line."""


def _unverified_tls():
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def refuses(address: tuple[str, int], timeout_s: float) -> bool:
    """True only when the address actively refuses a TCP connection (nothing listens there); a
    timeout, a name that does not resolve or an accepted connection are left to kafka-python.
    A refusal comes back at once, so the probe waits at most a second: a silent (filtered) address
    must not add more than that before kafka-python's own attempt."""
    try:
        with socket.create_connection(address, timeout=min(timeout_s, 1.0)):
            return False
    except ConnectionRefusedError:
        return True
    except OSError:
        return False


def _tls_handshake(address: tuple[str, int], timeout_s: float) -> OSError | None:
    """None when a TLS handshake (certificate unchecked) completes; else what stopped it."""
    try:
        with socket.create_connection(address, timeout=timeout_s) as sock:
            with _unverified_tls().wrap_socket(sock, server_hostname=address[0]):
                return None
    except OSError as exc:  # ssl.SSLError included
        return exc


def tls_unanswered(address: tuple[str, int], timeout_s: float) -> bool:
    """True when the address accepts TCP but closes or answers garbage to a TLS ClientHello (a
    plaintext listener); certificate problems and timeouts are left to kafka-python's own report."""
    exc = _tls_handshake(address, min(timeout_s, 5.0))
    if isinstance(exc, (ssl.SSLEOFError, ConnectionResetError, ConnectionAbortedError)):
        return True
    if isinstance(exc, ssl.SSLError):  # e.g. WRONG_VERSION_NUMBER: the reply is not TLS
        return "WRONG_VERSION_NUMBER" in str(exc) or "record layer failure" in str(exc)
    return False


def speaks_tls(address: tuple[str, int], timeout_s: float) -> bool:
    """True when a TLS handshake (certificate unchecked) completes: an SSL or SASL_SSL listener."""
    return _tls_handshake(address, min(timeout_s, 2.0)) is None


def tls_closes_requests(address: tuple[str, int], timeout_s: float) -> bool:
    """True when a TLS listener completes the handshake with a client that shows no certificate
    (certificates unchecked) but closes the connection at its first request: with TLS 1.3 that is
    how a listener with ssl.client.auth=required refuses it."""
    from kafka.protocol.metadata import ApiVersionsRequest

    request = ApiVersionsRequest(version=0)
    request.with_header(correlation_id=1, client_id="kgroup")
    try:
        with socket.create_connection(address, timeout=min(timeout_s, 2.0)) as raw:
            with _unverified_tls().wrap_socket(raw, server_hostname=address[0]) as sock:
                sock.sendall(bytes(request.encode(header=True, framed=True)))
                return not sock.recv(4)
    except ssl.SSLError as exc:  # TLS 1.2, or an alert before the close: "certificate required"
        return "CERTIFICATE" in str(exc).upper()
    except (ConnectionResetError, ConnectionAbortedError, ssl.SSLEOFError):
        return True
    except OSError:
        return False


def sasl_mechanisms(address: tuple[str, int], tls: bool, mechanism: str, timeout_s: float) -> list[str] | None:
    """The mechanisms a SASL listener enables, from its answer to a SaslHandshake for `mechanism`;
    None when the listener does not speak SASL (it closes, or answers without mechanisms).

    Kafka's handshake answer lists the enabled mechanisms whether or not it enables the one asked
    for, so the probe asks for a real one — the user's — and the broker logs what it logs for any
    client with that setting, not a made-up name that reads like an attack."""
    from kafka.protocol.sasl import SaslHandshakeRequest, SaslHandshakeResponse

    request = SaslHandshakeRequest(version=1, mechanism=mechanism)
    request.with_header(correlation_id=1, client_id="kgroup")
    try:
        with socket.create_connection(address, timeout=min(timeout_s, 2.0)) as raw:
            sock = _unverified_tls().wrap_socket(raw, server_hostname=address[0]) if tls else raw
            sock.sendall(bytes(request.encode(header=True, framed=True)))
            size = int.from_bytes(_read(sock, 4), "big")
            if size > 1 << 16:
                return None  # not a SaslHandshake answer
            response = SaslHandshakeResponse.decode(_read(sock, size), version=1, header=True)
    except Exception:  # noqa: BLE001 - a closed connection or any oddity: not a SASL listener
        return None
    return list(response.mechanisms) or None


def sasl_refused(address: tuple[str, int], tls: bool, settings: dict, timeout_s: float) -> bool:
    """True when the listener answers the client's SASL exchange (its mechanism, user and password)
    with SASL_AUTHENTICATION_FAILED. Kafka answers a failed exchange and then closes the connection
    (an unknown SCRAM user at the client-first message, a wrong password one step later); over TLS
    kafka-python may read the close before the answer and report only a disconnect."""
    from kafka.protocol.sasl import (SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
                                     SaslHandshakeResponse)

    from kgroup import kafka_errors as codes

    mechanism = settings.get("sasl_mechanism", "PLAIN")
    user = str(settings.get("sasl_plain_username") or "")
    password = str(settings.get("sasl_plain_password") or "")
    if mechanism == "PLAIN":
        tokens = iter([b"\0" + user.encode() + b"\0" + password.encode()])
        answer = lambda _data: next(tokens, None)  # noqa: E731
    elif mechanism.startswith("SCRAM-"):
        from kafka.net.sasl.scram import ScramClient

        scram = ScramClient(user, password, mechanism)
        steps = iter([lambda _d: scram.first_message(),
                      lambda d: (scram.process_server_first_message(d), scram.final_message())[1]])
        answer = lambda data: next(steps, lambda _d: None)(data)  # noqa: E731
    else:
        return False

    correlation = 0

    def exchange(sock, request, response_class):
        nonlocal correlation
        correlation += 1
        request.with_header(correlation_id=correlation, client_id="kgroup")
        sock.sendall(bytes(request.encode(header=True, framed=True)))
        size = int.from_bytes(_read(sock, 4), "big")
        if size > 1 << 16:
            raise ValueError("not a SASL answer")
        return response_class.decode(_read(sock, size), version=1, header=True)

    try:
        with socket.create_connection(address, timeout=min(timeout_s, 2.0)) as raw:
            sock = _unverified_tls().wrap_socket(raw, server_hostname=address[0]) if tls else raw
            if exchange(sock, SaslHandshakeRequest(version=1, mechanism=mechanism), SaslHandshakeResponse).error_code:
                return False
            data = b""
            while (token := answer(data)) is not None:
                response = exchange(sock, SaslAuthenticateRequest(version=1, auth_bytes=token),
                                    SaslAuthenticateResponse)
                if response.error_code:
                    return response.error_code == codes.SASL_AUTHENTICATION_FAILED
                data = response.auth_bytes
    except Exception:  # noqa: BLE001 - a closed connection or any oddity: not this cause
        return False
    return False


def _read(sock, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise EOFError("closed")
        data += chunk
    return data


class BootstrapWatch(logging.Handler):
    """Reads kafka-python's bootstrap failures while a client bootstraps (a context manager) and
    raises BootstrapFailure, from inside kafka-python's bootstrap loop, at the first one that
    retrying cannot heal."""

    def __init__(self, bootstrap: str, addresses, settings: dict, timeout_s: float):
        super().__init__(logging.WARNING)
        self.bootstrap = bootstrap
        self.addresses = list(addresses)
        self.settings = settings
        self.timeout_s = timeout_s
        self.protocol = settings.get("security_protocol", "PLAINTEXT")
        self._probed_disconnect = False
        self._logger = logging.getLogger("kafka")

    def emit(self, record):
        text = record.getMessage()
        if not text.startswith(_BOOTSTRAP_RECORDS):
            return
        cause = self.cause(text)
        if cause is not None:
            raise BootstrapFailure(cause)

    def cause(self, text: str) -> str | None:
        """The one-line cause of a failed bootstrap connection, or None if a retry may help."""
        if "SaslAuthenticationFailed" in text:
            return self._authentication_failed()
        if "UnsupportedSaslMechanism" in text:
            return self._mechanism_not_enabled()
        verify = _VERIFY_FAILED.search(text.split(" (backoff ")[0])
        if verify is not None:
            return f"TLS: certificate verify failed: {verify.group(1)}{self._truststore_hint(verify.group(1))}"
        if "socket disconnected" in text and not self._probed_disconnect:
            self._probed_disconnect = True  # probe once: a disconnect may also be transient
            return self._listener_mismatch()
        return None

    def _authentication_failed(self) -> str:
        return (f"authentication failed for user {self.settings.get('sasl_plain_username')} "
                f"({self.settings.get('sasl_mechanism', 'PLAIN')})")

    def _truststore_hint(self, reason: str) -> str:
        """For a certificate no trusted CA vouches for (self-signed, or its issuer unknown): where
        the CA goes. A host name mismatch or an expired certificate is not the truststore's doing."""
        if not any(word in reason for word in ("self-signed", "self signed", "issuer certificate")):
            return ""
        cafile = self.settings.get("ssl_cafile")
        if cafile:
            return (f" (the CA file {cafile} does not vouch for the broker's certificate: set "
                    "ssl.truststore.location, or ssl.ca.location, to the PEM file of the CA that signed it)")
        return (" (no CA file is set, so only the system's CAs are trusted: set ssl.truststore.location, or "
                "ssl.ca.location, to the PEM file of the CA that signed the broker's certificate)")

    def _mechanism_not_enabled(self, address: tuple[str, int] | None = None,
                               enabled: list[str] | None = None) -> str:
        """`SASL mechanism X is not enabled on HOST:PORT (enabled: ...)`: X the user's sasl.mechanism,
        the list from the broker's own handshake answer (asked for X again when not given)."""
        mechanism = self.settings.get("sasl_mechanism")
        if not mechanism:       # settings not from --command-config, which requires one
            return f"sasl.mechanism is not set, and {self.bootstrap} refuses a handshake without one"
        tls = self.protocol == "SASL_SSL"
        for host, port in [address] if address else self.addresses:
            enabled = enabled or sasl_mechanisms((host, port), tls, mechanism, self.timeout_s)
            if enabled:
                return (f"SASL mechanism {mechanism} (sasl.mechanism) is not enabled on {host}:{port} "
                        f"(enabled: {', '.join(enabled)})")
        return f"SASL mechanism {mechanism} (sasl.mechanism) is not enabled on {self.bootstrap}"

    def _listener_mismatch(self) -> str | None:
        """A plaintext client closed by a TLS listener, a PLAINTEXT one by a SASL listener, or a
        TLS client without a certificate by a listener that requires one — or a SASL client refused
        in its SASL exchange (Kafka closes after answering; kafka-python may see only the close)."""
        if self.protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
            # The close may follow an UNSUPPORTED_SASL_MECHANISM answer that kafka-python did not read.
            # No answer to the handshake (a TLS listener, say): no SASL exchange to try either.
            first, tls = self.addresses[0], self.protocol == "SASL_SSL"
            mechanism = self.settings.get("sasl_mechanism")
            enabled = sasl_mechanisms(first, tls, mechanism, self.timeout_s) if mechanism else None
            if enabled and mechanism not in enabled:
                return self._mechanism_not_enabled(first, enabled)
            if enabled and all(sasl_refused(address, tls, self.settings, self.timeout_s)
                               for address in self.addresses):
                return self._authentication_failed()
        if self.protocol in ("SSL", "SASL_SSL"):
            if self.settings.get("ssl_certfile") or not all(
                    tls_closes_requests(address, self.timeout_s) for address in self.addresses):
                return None
            return ("the listener closes TLS connections without a client certificate "
                    "(ssl.client.auth=required): set ssl.keystore.location (PEM certificate and key)")
        if all(speaks_tls(address, self.timeout_s) for address in self.addresses):
            return (f"the listener speaks TLS (SSL or SASL_SSL) but security.protocol="
                    f"{self.protocol}: a protocol mismatch")
        if self.protocol == "PLAINTEXT":
            # No mechanism of the user's to ask for: PLAIN, the one every Kafka client knows.
            enabled = sasl_mechanisms(self.addresses[0], False, self.settings.get("sasl_mechanism") or "PLAIN",
                                      self.timeout_s)
            if enabled:
                return (f"the listener requires SASL authentication (enabled: "
                        f"{', '.join(enabled)}) but security.protocol=PLAINTEXT")
        return None

    def __enter__(self):
        self._level = self._logger.level
        if self._logger.getEffectiveLevel() > logging.WARNING:  # the records the watch reads
            self._logger.setLevel(logging.WARNING)
        self._logger.addHandler(self)
        return self

    def __exit__(self, *exc):
        self._logger.removeHandler(self)
        self._logger.setLevel(self._level)
        return False
