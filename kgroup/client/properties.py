"""Kafka client properties files (`--command-config`) mapped onto kafka-python settings.

Operators keep one `client.properties` for kafka-consumer-groups.sh; kgroup reads the same file, in
Java's properties syntax. As Kafka's tools do with a setting they do not use, a key kgroup does not
know (`retries`, `acks`, `key.deserializer`, ...) is reported and skipped; a key it knows with a value
it cannot honour (a Java keystore, a security protocol Kafka does not have) is a usage error naming
file, line, key and value. Java keystores (JKS/PKCS12) cannot be read by Python's ssl module: only
PEM files are accepted.
"""

from __future__ import annotations

import re

from kgroup.errors import KgroupUsageError

# Java/librdkafka property -> kafka-python setting, for values passed through as strings.
_DIRECT = {
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
# Known, and deliberately without effect here (they tune producers/consumers, or say what the
# command line says): accepted without a word.
_WITHOUT_EFFECT = frozenset({
    "default.api.timeout.ms", "ssl.enabled.protocols", "ssl.protocol", "sasl.login.class", "group.id",
    "bootstrap.servers",
})
_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_SASL_MECHANISMS = ("PLAIN", "GSSAPI", "OAUTHBEARER", "SCRAM-SHA-256", "SCRAM-SHA-512")
_KEYSTORE_SUFFIXES = (".jks", ".p12", ".pfx", ".keystore", ".truststore")
_PEM_FILE_KEYS = "ssl.ca.location / ssl.certificate.location / ssl.key.location"
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def _refuse(where: str, key: str, value: str, why: str) -> KgroupUsageError:
    """A key kgroup knows with a value it cannot honour: exit 2, naming file, line, key and value."""
    return KgroupUsageError(f"{where}: {key}={value}: {why}")


def _choice(setting: str, choices):
    def apply(settings, key, value, where):
        if value.upper() not in choices:
            raise _refuse(where, key, value, f"not one of {', '.join(choices)}")
        settings[setting] = value.upper()
    return apply


def _integer(setting: str):
    def apply(settings, key, value, where):
        try:
            number = int(value)
        except ValueError:
            raise _refuse(where, key, value, "not an integer") from None
        if number < 0 and key != "connections.max.idle.ms":  # Kafka's atLeast(0)
            raise _refuse(where, key, value, "must be at least 0")
        settings[setting] = number
    return apply


def _direct(setting: str):
    def apply(settings, key, value, where):
        settings[setting] = value
    return apply


def _jaas(settings, key, value, where):
    """`sasl.jaas.config` for PLAIN/SCRAM: the username and password options of the login module."""
    options = {k: v.replace('\\"', '"').replace("\\\\", "\\") for k, v in _JAAS_OPTION.findall(value)}
    if "username" not in options or "password" not in options:
        module = value.split()[0] if value.split() else ""
        raise KgroupUsageError(f"{where}: sasl.jaas.config {module!r} needs username=\"...\" and "
                               f"password=\"...\" (only PLAIN and SCRAM login modules are supported)")
    settings.update(sasl_plain_username=options["username"], sasl_plain_password=options["password"])


def _endpoint_identification(settings, key, value, where):
    if value.lower() not in ("", "https"):
        raise _refuse(where, key, value, "kgroup checks the host name (https) or not (empty)")
    settings["ssl_check_hostname"] = value.lower() == "https"


def _store_location(settings, key, value, where):
    """ssl.truststore.location / ssl.keystore.location: PEM files here (a CA bundle; a certificate
    with its key), never a Java keystore."""
    if value.lower().endswith(_KEYSTORE_SUFFIXES):
        raise _refuse(where, key, value, f"looks like a Java keystore; kgroup needs PEM files ({_PEM_FILE_KEYS})")
    settings["ssl_cafile" if key.startswith("ssl.truststore") else "ssl_certfile"] = value


def _store_type(settings, key, value, where):
    if value.upper() != "PEM":
        raise _refuse(where, key, value, f"kgroup reads PEM files only ({_PEM_FILE_KEYS})")


def _inline_pem(settings, key, value, where):
    """PEM text in the file itself: refused, as a path is what kgroup passes on."""
    raise KgroupUsageError(f"{where}: {key}: PEM text inline is not supported; put it in a file and name the file "
                           f"({_PEM_FILE_KEYS})")


def _without_effect(settings, key, value, where):
    pass


# Every client property kgroup knows, and what it does with a value: the one list of keys.
KNOWN_PROPERTIES = {
    **{key: _direct(setting) for key, setting in _DIRECT.items()},
    **{key: _integer(setting) for key, setting in _INTEGER.items()},
    **{key: _without_effect for key in _WITHOUT_EFFECT},
    "security.protocol": _choice("security_protocol", _SECURITY_PROTOCOLS),
    "sasl.mechanism": _choice("sasl_mechanism", _SASL_MECHANISMS),
    "sasl.jaas.config": _jaas,
    "ssl.endpoint.identification.algorithm": _endpoint_identification,
    "ssl.truststore.location": _store_location,
    "ssl.keystore.location": _store_location,
    "ssl.truststore.type": _store_type,
    "ssl.keystore.type": _store_type,
    "ssl.truststore.certificates": _inline_pem,
    "ssl.keystore.certificate.chain": _inline_pem,
    "ssl.keystore.key": _inline_pem,
}

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_BLANK = " \t\f"


def _logical_lines(text: str):
    """(first line number, logical line) as java.util.Properties.load joins them: leading blanks
    skipped; a natural line starting with `#` or `!` is a comment (even one ending in a backslash);
    an odd number of trailing backslashes continues the line on the next, whose leading blanks go."""
    lines = re.split(r"\r\n|\r|\n", text)
    i = 0
    while i < len(lines):
        number = i + 1
        line = lines[i].lstrip(_BLANK)
        i += 1
        if not line or line[0] in "#!":
            continue
        while _continued(line) and i < len(lines):
            line = line[:-1] + lines[i].lstrip(_BLANK)
            i += 1
        if _continued(line):            # a backslash ending the file: Java drops it
            line = line[:-1]
        yield number, line


def _continued(line: str) -> bool:
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _unescape(text: str, where: str) -> str:
    """Java's escapes: \\t \\n \\r \\f, \\uXXXX, and a backslash before any other character is that
    character (`C:\\\\certs`, `a\\=b`)."""
    if "\\" not in text:
        return text
    out, i = [], 0
    while i < len(text):
        char = text[i]
        if char != "\\" or i + 1 == len(text):
            out.append(char)
            i += 1
            continue
        escaped = text[i + 1]
        if escaped == "u":
            digits = text[i + 2:i + 6]
            if not re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                raise KgroupUsageError(f"{where}: malformed \\uXXXX escape {text[i:i + 6]!r}")
            out.append(chr(int(digits, 16)))
            i += 6
        else:
            out.append(_ESCAPES.get(escaped, escaped))
            i += 2
    return "".join(out)


def parse_properties(text: str, source: str = "<properties>") -> list[tuple[int, str, str]]:
    """Java properties text -> [(line number, key, value)], as java.util.Properties.load reads it:
    `key=value`, `key: value`, `key value` (the key ends at the first unescaped `=`, `:` or blank),
    `#`/`!` comment lines, blank lines, backslash continuation lines, Java's escapes. Values are
    trimmed, as Kafka's ConfigDef trims them. A line with no key (`=value`) is an error naming the
    file and line."""
    entries = []
    for number, line in _logical_lines(text):
        where = f"{source}:{number}"
        match = re.match(r"((?:[^=:\s\\]|\\.)*)[ \t\f]*(?:[=:][ \t\f]*)?(.*)$", line, re.DOTALL)
        raw_key, raw_value = match.group(1), match.group(2)
        if not raw_key:
            raise KgroupUsageError(f"{where}: no key before {line[:1]!r} in {line!r}: expected key=value")
        entries.append((number, _unescape(raw_key, where), _unescape(raw_value, where).strip()))
    return entries


def properties_to_settings(entries, source: str = "<properties>", on_unknown=None) -> dict:
    """Mapped kafka-python keyword arguments. A key kgroup does not know is skipped, and given once
    to `on_unknown(key)` (the command warns); a known key with a value kgroup cannot honour is a
    KgroupUsageError naming file, line, key and value."""
    settings: dict = {}
    unknown: set[str] = set()
    for number, key, value in entries:
        apply = KNOWN_PROPERTIES.get(key)
        if apply is not None:
            apply(settings, key, value, f"{source}:{number}")
        elif key not in unknown:
            unknown.add(key)
            if on_unknown is not None:
                on_unknown(key)
    return settings


# The keys that name a PEM file kgroup reads: those mapped to a kafka-python *file setting, and the
# two keystore keys, which name PEM files here (see _store_location).
_FILE_KEYS = frozenset({k for k, setting in _DIRECT.items() if setting.endswith("file")}
                       | {"ssl.truststore.location", "ssl.keystore.location"})


def load_properties(path: str, on_unknown=None) -> dict:
    """Read a properties file into kafka-python settings (`on_unknown` as for properties_to_settings).
    A missing or unreadable file is a KgroupUsageError, and so is a certificate or key file it names
    that is not there (else the TLS handshake fails later, with a cause that does not name the file)."""
    import os

    try:
        with open(path, encoding="utf-8-sig") as handle:     # -sig: an editor's byte order mark is not a key
            text = handle.read()
    except FileNotFoundError:
        raise KgroupUsageError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise KgroupUsageError(f"{path}: cannot read: {exc}") from None
    entries = parse_properties(text, path)
    settings = properties_to_settings(entries, path, on_unknown)
    for number, key, value in entries:
        if key in _FILE_KEYS and value and not os.path.isfile(value):
            raise _refuse(f"{path}:{number}", key, value, "no such file")
    return settings
