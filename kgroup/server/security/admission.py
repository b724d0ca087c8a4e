"""What each listener asks of a connection before its requests are served: TLS (SSL, SASL_SSL)
and SASL authentication (SASL_PLAINTEXT, SASL_SSL), from the security settings of `--config`
(`sasl.enabled.mechanisms`, `ssl.*`) and the `--user`/`--users` credentials.

Each admitted connection gets a principal (`RequestContext.principal`, Kafka's `User:NAME` form):
the SASL user, the client certificate's subject on an SSL listener with `ssl.client.auth`, or
`User:ANONYMOUS`."""

from __future__ import annotations

import logging

from kgroup.server.security.listeners import ListenerError, certificate_principal, server_ssl_context
from kgroup.server.security.sasl import MECHANISMS, authenticate, parse_mechanisms, sasl_api_entries
from kgroup.server.security.scram import CredentialStore

log = logging.getLogger("kgroup.server")

ANONYMOUS = "User:ANONYMOUS"  # Kafka's principal of a connection without authentication


class SecuredListeners:
    def __init__(self, security: dict, users: dict[str, str], listeners,
                 failed_authentication_delay_ms: int = 0):
        self.failed_authentication_delay_ms = failed_authentication_delay_ms
        self.mechanisms = parse_mechanisms(security.get("sasl.enabled.mechanisms",
                                                        ",".join(MECHANISMS)))
        self.store = CredentialStore(users)  # only salted credentials are kept
        self._ssl = {}  # SSL listeners verify client certificates (ssl.client.auth); SASL_SSL do not
        for sasl in {l.sasl for l in listeners if l.tls}:
            self._ssl[sasl] = server_ssl_context(security, client_auth=not sasl)
        if any(l.sasl for l in listeners) and not users:
            raise ListenerError("a SASL listener needs at least one --user NAME:PASSWORD "
                                "(or --users FILE)")
        self._sasl_tables = {}

    def ssl_context(self, listener):
        return self._ssl[listener.sasl] if listener.tls else None

    async def admit(self, listener, reader, writer, peer_text, api_table):
        """(the API table this connection is served, its principal); raises FrameError to close."""
        if not listener.sasl:
            certificate = writer.get_extra_info("peercert") if listener.tls else None
            principal = certificate_principal(certificate)
            if principal is not None:
                log.info("%s authenticated as %s (TLS client certificate)", peer_text, principal)
            return api_table, principal or ANONYMOUS
        table = self._sasl_tables.get(id(api_table))
        if table is None:
            table = self._sasl_tables[id(api_table)] = {**api_table, **sasl_api_entries()}
        principal = await authenticate(reader, writer, table, self.mechanisms, self.store,
                                       peer_text, self.failed_authentication_delay_ms)
        return table, principal


def parse_user(value: str, where: str) -> tuple[str, str]:
    """`NAME:PASSWORD` (the password may hold colons) → (name, password); `where` leads the message."""
    name, sep, password = value.partition(":")
    if not sep or not name or not password:
        raise ListenerError(f"{where}: expected NAME:PASSWORD")
    return name, password


def read_users_file(path: str) -> dict[str, str]:
    """`serve --users FILE`: one `NAME:PASSWORD` a line; blank lines and `#` comments skipped;
    surrounding whitespace stripped. A bad line or a name given twice is an error naming
    FILE:LINE (exit 2)."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ListenerError(f"--users {path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    users, first_seen = {}, {}
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        name, password = parse_user(text, f"{path}:{number}")
        if name in users:
            raise ListenerError(f"{path}:{number}: user {name!r} is already defined on line "
                                f"{first_seen[name]}")
        users[name], first_seen[name] = password, number
    return users
