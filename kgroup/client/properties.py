"""Kafka client properties files (`--command-config`) mapped onto kafka-python settings.

Operators keep one `client.properties` for kafka-consumer-groups.sh; kgroup reads the same file.
Java keystores (JKS/PKCS12) cannot be read by Python's ssl module, so only PEM files are accepted,
and a key kgroup cannot honour is an error naming the file and line rather than silently ignored.
"""

from __future__ import annotations

import re

from kgroup.errors import KgroupError, KgroupUsageError

# Java/librdkafka property -> kafka-python setting, for values passed through as strings.
_DIRECT = {
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "sasl.kerberos.service.name": "sasl_kerberos_service_name",
    "sasl.kerberos.domain.name": "sasl_kerberos_domain_name",
    "client.id": "client_id",
    "ssl.ca.location": "ssl_cafile",
    "ssl.cafile": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.certfile": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.keyfile": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
    "ssl.keystore.password": "ssl_password",
    "ssl.crl.location": "ssl_crlfile",
    "client.dns.lookup": "client_dns_lookup",
}
_INTEGER = {
    "request.timeout.ms": "request_timeout_ms",
    "reconnect.backoff.ms": "reconnect_backoff_ms",
    "reconnect.backoff.max.ms": "reconnect_backoff_max_ms",
    "retry.backoff.ms": "retry_backoff_ms",
    "connections.max.idle.ms": "connections_max_idle_ms",
    "metadata.max.age.ms": "metadata_max_age_ms",
}
# Accepted and deliberately without effect here (they tune producers/consumers, not admin calls).
_IGNORED = {
    "default.api.timeout.ms", "ssl.enabled.protocols", "ssl.protocol", "ssl.truststore.type",
    "ssl.keystore.type", "sasl.login.class", "group.id", "bootstrap.servers",
}
_SECURITY_PROTOCOLS = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}
_SASL_MECHANISMS = {"PLAIN", "GSSAPI", "OAUTHBEARER", "SCRAM-SHA-256", "SCRAM-SHA-512"}
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def parse_properties(text: str, source: str = "<properties>") -> list[tuple[int, str, str]]:
    """Java properties lines -> [(line number, key, value)]; `#`/`!` comments, `=` or `:` separators,
    backslash continuation lines."""
    entries = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        number = i + 1
        line = lines[i].strip()
        i += 1
        while line.endswith("\\") and i < len(lines):
            line = line[:-1] + lines[i].strip()
            i += 1
        if not line or line[0] in "#!":
            continue
        match = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)$", line)
        if match is None:
            if re.fullmatch(r"[^=:\s]+", line):
                entries.append((number, line, ""))
                continue
            raise KgroupError(f"{source}:{number}: cannot parse {line!r} as key=value")
        entries.append((number, match.group(1), match.group(2).strip()))
    return entries


def _jaas(value: str, where: str) -> dict:
    """`sasl.jaas.config` for PLAIN/SCRAM: the username and password options of the login module."""
    options = {k: v.replace('\\"', '"').replace("\\\\", "\\") for k, v in _JAAS_OPTION.findall(value)}
    if "username" not in options or "password" not in options:
        raise KgroupError(f"{where}: sasl.jaas.config needs username=\"...\" and password=\"...\" "
                          f"(only PLAIN and SCRAM login modules are supported)")
    return {"sasl_plain_username": options["username"], "sasl_plain_password": options["password"]}


def properties_to_settings(entries, source: str = "<properties>") -> dict:
    """Mapped kafka-python keyword arguments; any key kgroup cannot honour is an error."""
    settings: dict = {}
    for number, key, value in entries:
        where = f"{source}:{number}"
        if key in _DIRECT:
            settings[_DIRECT[key]] = value
        elif key in _INTEGER:
            try:
                settings[_INTEGER[key]] = int(value)
            except ValueError:
                raise KgroupError(f"{where}: {key} must be an integer, got {value!r}") from None
            if settings[_INTEGER[key]] < 0 and key != "connections.max.idle.ms":  # Kafka's atLeast(0)
                raise KgroupError(f"{where}: {key} must be at least 0, got {value}")
        elif key == "sasl.jaas.config":
            settings.update(_jaas(value, where))
        elif key == "ssl.endpoint.identification.algorithm":
            settings["ssl_check_hostname"] = value.lower() == "https"
        elif key in ("ssl.truststore.location", "ssl.keystore.location"):
            lowered = value.lower()
            if lowered.endswith((".jks", ".p12", ".pfx", ".keystore", ".truststore")):
                raise KgroupError(f"{where}: {key} {value!r} looks like a Java keystore; kgroup needs "
                                  f"PEM files (ssl.ca.location / ssl.certificate.location / "
                                  f"ssl.key.location)")
            settings["ssl_cafile" if key.startswith("ssl.truststore") else "ssl_certfile"] = value
        elif key in _IGNORED:
            continue
        else:
            raise KgroupError(f"{where}: unsupported client property {key!r}")
    protocol = settings.get("security_protocol")
    if protocol is not None:
        settings["security_protocol"] = protocol = protocol.upper()
        if protocol not in _SECURITY_PROTOCOLS:
            raise KgroupError(f"{source}: security.protocol {protocol!r} is not one of "
                              f"{', '.join(sorted(_SECURITY_PROTOCOLS))}")
    mechanism = settings.get("sasl_mechanism")
    if mechanism is not None:
        settings["sasl_mechanism"] = mechanism = mechanism.upper()
        if mechanism not in _SASL_MECHANISMS:
            raise KgroupError(f"{source}: sasl.mechanism {mechanism!r} is not one of "
                              f"{', '.join(sorted(_SASL_MECHANISMS))}")
    return settings


# The keys that name a PEM file kgroup reads: those mapped to a kafka-python *file setting, and the
# two keystore keys, which name PEM files here (see properties_to_settings).
_FILE_KEYS = frozenset({k for k, setting in _DIRECT.items() if setting.endswith("file")}
                       | {"ssl.truststore.location", "ssl.keystore.location"})


def load_properties(path: str) -> dict:
    """Read a properties file into kafka-python settings; unreadable files are a KgroupError, and so
    is a certificate or key file it names that is not there (else the TLS handshake fails later,
    with a cause that does not name the file)."""
    import os

    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise KgroupUsageError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise KgroupUsageError(f"{path}: cannot read: {exc}") from None
    entries = parse_properties(text, path)
    settings = properties_to_settings(entries, path)
    for number, key, value in entries:
        if key in _FILE_KEYS and value and not os.path.isfile(value):
            raise KgroupError(f"{path}:{number}: {key} {value!r}: no such file")
    return settings
