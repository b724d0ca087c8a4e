"""Listeners with Kafka's security protocols: `PROTOCOL://HOST:PORT` parsing and the TLS context.

A bare `HOST:PORT` is a PLAINTEXT listener (what `--listen` always meant). SASL listeners
authenticate each connection before any other request (`kgroup.server.security.sasl`); SSL listeners wrap
the socket in TLS from PEM files named by Kafka's keys (`ssl.keystore.type=PEM`,
`ssl.keystore.location`: certificate chain and private key in one file). With `ssl.client.auth`
(`requested` or `required`) an SSL listener verifies client certificates against
`ssl.truststore.location` and names the connection's principal after the certificate's subject.
"""

from __future__ import annotations

import functools

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
    if not sep or not (port.isascii() and port.isdecimal()) or not host:
        raise ListenerError(f"{value!r}: expected [PROTOCOL://]HOST:PORT (port 0 picks a free port)")
    if not 0 <= int(port) <= 65535:
        raise ListenerError(f"{value!r}: port must be 0..65535")
    return Listener(protocol, host.strip("[]"), int(port))


# Addresses that bind every interface: no client can connect to one (Kafka refuses 0.0.0.0 in
# advertised.listeners), so such a listener advertises the machine's host name instead.
WILDCARD_HOSTS = ("0.0.0.0", "::")


def is_wildcard(host: str) -> bool:
    return host in WILDCARD_HOSTS


def check_advertised_host(host: str) -> str:
    """--advertised-host as given; a wildcard address (or nothing) is an error, as Kafka refuses it."""
    if not host.strip() or is_wildcard(host.strip("[]")):
        raise ListenerError(f"{host!r}: a client cannot connect to a wildcard address; give a host name or "
                            f"address clients can reach")
    return host


@functools.cache
def machine_host_name() -> str:
    """What a listener on every interface advertises: the machine's fully qualified name, as Kafka
    takes its canonical host name for a listener without a host (its host name where that says
    nothing more than localhost). Looked up once (getfqdn may wait on DNS)."""
    import socket

    name = socket.getfqdn()
    if not name or name.startswith("localhost") or is_wildcard(name):
        name = socket.gethostname()
    return name


CLIENT_AUTH = ("none", "requested", "required")  # Kafka's ssl.client.auth values


def server_ssl_context(security: dict, client_auth: bool = True):
    """The TLS context of SSL (`client_auth`: with ssl.client.auth) and SASL_SSL listeners (which,
    as in Kafka without a listener prefix, authenticate by SASL and ask for no certificate)."""
    import ssl

    location = _pem_location(security, "keystore")
    if not location:
        raise ListenerError("an SSL or SASL_SSL listener needs --config ssl.keystore.location=FILE "
                            "(PEM: certificate chain and private key)")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(location, password=security.get("ssl.key.password"))
    except (OSError, ssl.SSLError) as exc:
        raise ListenerError(f"config ssl.keystore.location: cannot load {location}: {exc}") from None
    mode = security.get("ssl.client.auth", "none").lower()
    if mode not in CLIENT_AUTH:
        raise ListenerError(f"config ssl.client.auth: expected one of {', '.join(CLIENT_AUTH)}, "
                            f"got {mode!r}")
    if mode == "none" or not client_auth:
        return context
    truststore = _pem_location(security, "truststore")
    if not truststore:
        raise ListenerError(f"ssl.client.auth={mode} needs --config ssl.truststore.location=FILE "
                            "(PEM: the certificates of the CAs client certificates are signed by)")
    try:
        context.load_verify_locations(cafile=truststore)
    except (OSError, ssl.SSLError) as exc:
        raise ListenerError(f"config ssl.truststore.location: cannot load {truststore}: "
                            f"{exc}") from None
    context.verify_mode = ssl.CERT_REQUIRED if mode == "required" else ssl.CERT_OPTIONAL
    return context


def _pem_location(security: dict, store: str):
    """ssl.<store>.location, after checking ssl.<store>.type is PEM (the only type read)."""
    store_type = security.get(f"ssl.{store}.type", "PEM").upper()
    if store_type != "PEM":
        raise ListenerError(f"config ssl.{store}.type: only PEM is supported, got {store_type}")
    return security.get(f"ssl.{store}.location")


# RFC 2253 keywords, as Java's X500Principal.getName() writes them; other attributes keep the
# name Python's ssl module gives them.
_RDN_KEYWORDS = {"commonName": "CN", "countryName": "C", "localityName": "L",
                 "stateOrProvinceName": "ST", "organizationName": "O",
                 "organizationalUnitName": "OU", "streetAddress": "STREET",
                 "domainComponent": "DC", "userId": "UID"}


def _rdn_value(text: str) -> str:
    escaped = "".join("\\" + c if c in ',+"\\<>;' else c for c in text)
    if escaped.startswith(("#", " ")):
        escaped = "\\" + escaped
    if escaped.endswith(" ") and not escaped.endswith("\\ "):
        escaped = escaped[:-1] + "\\ "
    return escaped


def certificate_principal(peercert: dict | None) -> str | None:
    """`User:` and the subject's distinguished name as Kafka's DefaultKafkaPrincipalBuilder names
    an SSL client (X500Principal.getName(): RFC 2253, most specific RDN first, e.g.
    `User:CN=ops,OU=platform,O=acme`); None without a verified certificate."""
    if not peercert or not peercert.get("subject"):
        return None
    rdns = ("+".join(f"{_RDN_KEYWORDS.get(name, name)}={_rdn_value(value)}" for name, value in rdn)
            for rdn in reversed(peercert["subject"]))
    return "User:" + ",".join(rdns)
