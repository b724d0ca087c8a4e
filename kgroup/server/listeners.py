"""Listeners with Kafka's security protocols: `PROTOCOL://HOST:PORT` parsing and the TLS context.

A bare `HOST:PORT` is a PLAINTEXT listener (what `--listen` always meant). SASL listeners
authenticate each connection before any other request (`kgroup.server.sasl`); SSL listeners wrap
the socket in TLS from PEM files named by Kafka's keys (`ssl.keystore.type=PEM`,
`ssl.keystore.location`: certificate chain and private key in one file).
"""

from __future__ import annotations

from dataclasses import dataclass

from kgroup.errors import EXIT_USAGE, KgroupError

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


class ListenerError(KgroupError):
    """A --listen value or a security setting the server cannot use."""

    exit_code = EXIT_USAGE


@dataclass(frozen=True)
class Listener:
    protocol: str
    host: str
    port: int

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def tls(self) -> bool:
        return self.protocol.endswith("SSL")


def parse_listener(value: str) -> Listener:
    """`[PROTOCOL://]HOST:PORT` → Listener; the message of a ListenerError names the value."""
    protocol, sep, address = value.partition("://")
    if not sep:
        protocol, address = "PLAINTEXT", value
    protocol = protocol.upper()
    if protocol not in PROTOCOLS:
        raise ListenerError(f"{value!r}: security protocol must be one of {', '.join(PROTOCOLS)}")
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ListenerError(f"{value!r}: expected [PROTOCOL://]HOST:PORT (port 0 picks a free port)")
    if not 0 <= int(port) <= 65535:
        raise ListenerError(f"{value!r}: port must be 0..65535")
    return Listener(protocol, host.strip("[]"), int(port))


def server_ssl_context(security: dict):
    """The TLS context of SSL and SASL_SSL listeners, from the ssl.* settings."""
    import ssl

    store_type = security.get("ssl.keystore.type", "PEM").upper()
    location = security.get("ssl.keystore.location")
    if store_type != "PEM":
        raise ListenerError(f"config ssl.keystore.type: only PEM is supported, got {store_type}")
    if not location:
        raise ListenerError("an SSL or SASL_SSL listener needs --config ssl.keystore.location=FILE "
                            "(PEM: certificate chain and private key)")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(location, password=security.get("ssl.key.password"))
    except (OSError, ssl.SSLError) as exc:
        raise ListenerError(f"config ssl.keystore.location: cannot load {location}: {exc}") from None
    return context
