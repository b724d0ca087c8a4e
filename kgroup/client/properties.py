"""Kafka client properties files (`--command-config`) mapped onto kafka-python settings.

Operators keep one `client.properties` for kafka-consumer-groups.sh; kgroup reads the same file, in
Java's properties syntax. As Kafka's tools do with a setting they do not use, a key kgroup does not
know (`retries`, `acks`, `key.deserializer`, ...) is reported and skipped — with a "did you mean" when
it is a near miss of one it knows; a key it knows with a value it cannot honour (a Java keystore, a
security protocol Kafka does not have) is a usage error naming file, line, key and value, and so is a
file that leaves out what its connection needs (a SASL protocol without a mechanism, a mechanism
without its user name or password): the user must fix the file, and no connection can tell them more.
Java keystores (JKS/PKCS12) cannot be read by Python's ssl module: only PEM files are accepted.
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
_SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
# The mechanisms kgroup's client runs: each takes a user name and a password.
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_MECHANISMS_TEXT = "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"
# Kafka's other mechanisms: they need a Kerberos ticket or a token provider, which a properties file
# cannot give kafka-python.
_OTHER_KAFKA_MECHANISMS = ("GSSAPI", "OAUTHBEARER")
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


def _mechanism(settings, key, value, where):
    """sasl.mechanism (and librdkafka's sasl.mechanisms, one mechanism too): one kgroup can run."""
    mechanism = value.upper()
    if mechanism in _OTHER_KAFKA_MECHANISMS:
        raise _refuse(where, key, value, f"not supported by kgroup; set {_MECHANISMS_TEXT}")
    if mechanism not in SASL_MECHANISMS:
        raise _refuse(where, key, value, f"not one of {', '.join(SASL_MECHANISMS)}")
    settings["sasl_mechanism"] = mechanism


def _direct(setting: str):
    def apply(settings, key, value, where):
        settings[setting] = value
    return apply


def _jaas(settings, key, value, where):
    """`sasl.jaas.config` for PLAIN/SCRAM: the username and password options of the login module."""
    options = {k: v.replace('\\"', '"').replace("\\\\", "\\") for k, v in _JAAS_OPTION.findall(value)}
    missing = [f'{option}="..."' for option in ("username", "password") if option not in options]
    if missing:
        module = value.split()[0] if value.split() else ""
        raise KgroupUsageError(f"{where}: sasl.jaas.config {module!r} has no {' and no '.join(missing)} "
                               f"(only PLAIN and SCRAM login modules are supported)")
    settings.update(sasl_plain_username=options["username"], sasl_plain_password=options["password"])


def _endpoint_identification(settings, key, value, where):
    """`https` checks the host name; Java's empty value and librdkafka's `none` do not."""
    if value.lower() not in ("", "none", "https"):
        raise _refuse(where, key, value, "kgroup checks the host name (https) or not (empty, or none)")
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
    "sasl.mechanism": _mechanism,
    "sasl.mechanisms": _mechanism,              # librdkafka's name: one mechanism, as sasl.mechanism

    "sasl.jaas.config": _jaas,
    "ssl.endpoint.identification.algorithm": _endpoint_identification,
    "ssl.truststore.location": _store_location,
    "ssl.keystore.location": _store_location,
    "ssl.truststore.type": _store_type,
    "ssl.keystore.type": _store_type,
    "ssl.truststore.certificates": _inline_pem,
    "ssl.keystore.certificate.chain": _inline_pem,
    "ssl.keystore.key": _inline_pem,
    "ssl.ca.pem": _inline_pem,                  # librdkafka's inline PEM keys
    "ssl.certificate.pem": _inline_pem,
    "ssl.key.pem": _inline_pem,
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


def _edits(a: str, b: str) -> int:
    """Edits from `a` to `b`: insertions, deletions, substitutions and swaps of neighbours (a typo's)."""
    previous2, previous = None, list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        row = [i]
        for j, other in enumerate(b, 1):
            row.append(min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (char != other)))
            if i > 1 and j > 1 and char == b[j - 2] and a[i - 2] == other:
                row[j] = min(row[j], previous2[j - 2] + 1)
        previous2, previous = previous, row
    return previous[-1]


# kafka-python's names for the settings, as a Python user may write them: the key kgroup reads instead.
_BY_SETTING = {setting: key for key, setting in reversed([*_DIRECT.items(), *_INTEGER.items()])}


def did_you_mean(key: str) -> str | None:
    """The known key an unknown one is a near miss of — another case or `_` for `.`
    (`SASL.MECHANISM`, `sasl_mechanism`), kafka-python's name (`sasl_plain_password`), or a typo of
    at most two edits (one for short keys) — or None. Far enough from the keys of Kafka's clients
    that kgroup does not use (`ssl.truststore.password` is not `ssl.keystore.password`)."""
    lowered = key.lower()
    if lowered in _BY_SETTING:
        return _BY_SETTING[lowered]
    normalised = lowered.replace("_", ".").replace("-", ".")
    if normalised in KNOWN_PROPERTIES:
        return normalised
    allowed = 2 if len(normalised) >= 10 else 1
    distance, nearest = min((_edits(normalised, known), known) for known in KNOWN_PROPERTIES)
    return nearest if distance <= allowed else None


def properties_to_settings(entries, source: str = "<properties>", on_unknown=None) -> dict:
    """Mapped kafka-python keyword arguments.

    A known key with a value kgroup cannot honour, and a file without a key its connection needs
    (see _check_needed_keys), are KgroupUsageErrors naming file, line and key. A key kgroup does not
    know is skipped, and given once to `on_unknown(key, suggestion)` (the command warns; `suggestion`
    is the known key it is a near miss of, or None) — after those checks, so a file that must be
    fixed says one line."""
    settings: dict = {}
    unknown: dict[str, tuple[int, str, str | None]] = {}
    for number, key, value in entries:
        apply = KNOWN_PROPERTIES.get(key)
        if apply is not None:
            apply(settings, key, value, f"{source}:{number}")
        elif key not in unknown:
            unknown[key] = (number, value, did_you_mean(key))
    _check_needed_keys(settings, entries, unknown, source)
    if on_unknown is not None:
        for key, (_number, _value, suggestion) in unknown.items():
            on_unknown(key, suggestion)
    return settings


def _last(entries, keys) -> tuple[int, str, str] | None:
    """The entry (line, key, value) that set one of `keys` last: the one whose value holds."""
    found = [entry for entry in entries if entry[1] in keys]
    return found[-1] if found else None


def _near_miss(unknown, wanted: str) -> str:
    """` (line N has 'KEY': did you mean WANTED?)` for an unknown key that is a near miss of
    `wanted`, else empty."""
    for key, (number, _value, suggestion) in unknown.items():
        if suggestion == wanted:
            return f" (line {number} has {key!r}: did you mean {wanted}?)"
    return ""


def _check_needed_keys(settings: dict, entries, unknown, source: str) -> None:
    """What the connection cannot do without, said before any connection (kafka-python would retry a
    SCRAM exchange without a password until --timeout, and a SASL_* listener without a mechanism
    sees kafka-python's `None`):

    - a near miss of security.protocol, with security.protocol unset: the connection would silently
      be PLAINTEXT (unless the misspelt line says PLAINTEXT);
    - security.protocol=SASL_*: sasl.mechanism. Kafka's clients (Java's and librdkafka) default to
      GSSAPI, which kgroup cannot run, so none set is an error rather than a default;
    - a mechanism under SASL_*: its user name and password (sasl.username / sasl.password, or
      sasl.jaas.config), not empty — Kafka's PLAIN server refuses an empty one.
    A near miss of the missing key is named in the line."""
    if "security_protocol" not in settings:
        for key, (number, value, suggestion) in unknown.items():
            if suggestion == "security.protocol" and value.upper() != "PLAINTEXT":
                raise KgroupUsageError(f"{source}:{number}: {key}={value}: not a client property, did you mean "
                                       f"security.protocol? (security.protocol is not set: the connection would "
                                       f"be PLAINTEXT)")
    protocol = settings.get("security_protocol", "PLAINTEXT")
    if protocol not in _SASL_PROTOCOLS:
        return
    protocol_line = _last(entries, ("security.protocol",))[0]
    mechanism = settings.get("sasl_mechanism")
    if mechanism is None:
        near = _near_miss(unknown, "sasl.mechanism")
        raise KgroupUsageError(f"{source}:{protocol_line}: security.protocol={protocol} but sasl.mechanism is not set"
                               + (near or f" (Kafka's default GSSAPI is not supported by kgroup; set "
                                          f"{_MECHANISMS_TEXT})"))
    mechanism_line = _last(entries, ("sasl.mechanism", "sasl.mechanisms"))[0]
    for what, key, setting in (("username", "sasl.username", "sasl_plain_username"),
                               ("password", "sasl.password", "sasl_plain_password")):
        value = settings.get(setting)
        if value:
            continue
        given = _last(entries, (key, "sasl.jaas.config"))
        if value is None or given is None:
            raise KgroupUsageError(f"{source}:{mechanism_line}: sasl.mechanism={mechanism} but {key} is not set "
                                   f"(nor {what}=\"...\" in sasl.jaas.config)"
                                   + _near_miss(unknown, key))
        empty = key if given[1] == key else f'{what}="" in sasl.jaas.config'
        raise KgroupUsageError(f"{source}:{given[0]}: sasl.mechanism={mechanism} but {empty} is empty")


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
    unknown: list = []
    settings = properties_to_settings(entries, path, lambda *key: unknown.append(key))
    for number, key, value in entries:
        if key in _FILE_KEYS and value and not os.path.isfile(value):
            raise _refuse(f"{path}:{number}", key, value, "no such file")
    if on_unknown is not None:                          # warnings only for a file that can be used
        for key in unknown:
            on_unknown(*key)
    return settings
