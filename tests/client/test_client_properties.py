"""--command-config: Kafka client properties mapped onto kafka-python settings."""

import pytest

from kgroup.client.properties import load_properties, parse_properties, properties_to_settings
from kgroup.errors import KgroupError, KgroupUsageError


def settings(text, source="client.properties"):
    return properties_to_settings(parse_properties(text, source), source)


def test_sasl_ssl_with_jaas_and_pem_files():
    text = """
# production
security.protocol=sasl_ssl
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\
    username="ops" password="p\\\\\\"w=d";
ssl.truststore.location=/etc/kafka/ca.pem
ssl.truststore.type=PEM
ssl.endpoint.identification.algorithm=
client.id : kgroup-ops
request.timeout.ms=15000
"""
    assert settings(text) == {
        "security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "ops", "sasl_plain_password": 'p"w=d',
        "ssl_cafile": "/etc/kafka/ca.pem", "ssl_check_hostname": False,
        "client_id": "kgroup-ops", "request_timeout_ms": 15000}


def test_librdkafka_style_keys():
    assert settings("security.protocol=SSL\nssl.ca.location=/ca\nssl.certificate.location=/crt\n"
                    "ssl.key.location=/key\nssl.key.password=secret\n") == {
        "security_protocol": "SSL", "ssl_cafile": "/ca", "ssl_certfile": "/crt", "ssl_keyfile": "/key",
        "ssl_password": "secret"}
    assert settings("sasl.mechanism=plain\nsasl.username=u\nsasl.password=p\n") == {
        "sasl_mechanism": "PLAIN", "sasl_plain_username": "u", "sasl_plain_password": "p"}


@pytest.mark.parametrize("text, message", [
    ("ssl.keystore.location=/etc/ks.jks\n", "client.properties:1: ssl.keystore.location=/etc/ks.jks: looks like a "
                                            "Java keystore"),
    ("request.timeout.ms=soon\n", "client.properties:1: request.timeout.ms=soon: not an integer"),
    ("request.timeout.ms=-5\n", "client.properties:1: request.timeout.ms=-5: must be at least 0"),
    ("\nsecurity.protocol=TLS\n", "client.properties:2: security.protocol=TLS: not one of PLAINTEXT, SSL"),
    ("sasl.mechanism=KERBEROS\n", "client.properties:1: sasl.mechanism=KERBEROS: not one of"),
    ("sasl.jaas.config=Module required;\n", "client.properties:1: sasl.jaas.config 'Module' has no username=\"...\" "
                                            "and no password=\"...\""),
    ('sasl.jaas.config=Module required username="ops";\n',
     "client.properties:1: sasl.jaas.config 'Module' has no password=\"...\" (only PLAIN and SCRAM"),
    ("sasl.mechanism=GSSAPI\n", "client.properties:1: sasl.mechanism=GSSAPI: not supported by kgroup; set PLAIN, "
                                "SCRAM-SHA-256 or SCRAM-SHA-512"),
    ("sasl.mechanisms=OAUTHBEARER\n", "client.properties:1: sasl.mechanisms=OAUTHBEARER: not supported by kgroup"),
    ("ssl.ca.pem=-----BEGIN\n", "client.properties:1: ssl.ca.pem: PEM text inline"),
    ("ssl.truststore.type=JKS\n", "client.properties:1: ssl.truststore.type=JKS: kgroup reads PEM files only"),
    ("ssl.endpoint.identification.algorithm=ldap\n",
     "client.properties:1: ssl.endpoint.identification.algorithm=ldap: kgroup checks the host name"),
    ("ssl.truststore.certificates=-----BEGIN\n", "client.properties:1: ssl.truststore.certificates: PEM text inline"),
    ("=value\n", "client.properties:1: no key before '=' in '=value'"),
    ("a.b=\\u12x4\n", "client.properties:1: malformed \\uXXXX escape"),
])
def test_a_known_key_with_a_value_kgroup_cannot_honour_is_a_usage_error_naming_file_line_key_and_value(
        text, message):
    """Exit 2 (usage), where these were exit 1: the file is the operator's input."""
    with pytest.raises(KgroupUsageError) as info:
        settings(text)
    assert str(info.value).startswith(message)
    assert info.value.exit_code == 2


def test_keys_kgroup_does_not_use_are_skipped_and_reported_once_each():
    """An operator's client.properties for Kafka's tools and clients: kgroup used to stop at the first
    of these (`unsupported client property 'retries'`, exit 1); Kafka's tools log them and go on."""
    text = ("retries=3\nacks=all\nauto.offset.reset=earliest\n"
            "key.deserializer=org.apache.kafka.common.serialization.StringDeserializer\n"
            "ssl.truststore.password=changeit\nretries=5\nclient.id=ops\n")
    unknown = []
    assert properties_to_settings(parse_properties(text, "c"), "c",
                                  lambda key, suggestion: unknown.append(key)) == {"client_id": "ops"}
    assert unknown == ["retries", "acks", "auto.offset.reset", "key.deserializer", "ssl.truststore.password"]
    assert settings(text) == {"client_id": "ops"}          # without a listener: skipped all the same


def test_java_properties_syntax():
    """What java.util.Properties.load reads, as Kafka's tools read the file."""
    text = (
        "# a comment\n"
        "! another comment \\\n"              # a comment ending in a backslash does not continue
        "client.id ops-1\n"                     # `key value`
        "   sasl.username :  alice  \n"         # `key : value`, blanks around it
        "sasl.password=pa\\\\ss\\=word\n"        # escapes: two backslashes are one, a backslash and = is =
        "\n"
        "ssl.ca.location=C:\\\\certs\\\\\n"       # an even number of backslashes: no continuation
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n"
        "    username=\"bob\" \\\n"
        "    password=\"s\\u00e9cret\";\r\n"
        "request.timeout.ms=\\\n"
        "   1000\n"
        "bootstrap.servers\n")                  # a key alone: an empty value
    entries = parse_properties(text, "c")
    assert [(n, k) for n, k, _ in entries] == [(3, "client.id"), (4, "sasl.username"), (5, "sasl.password"),
                                               (7, "ssl.ca.location"), (8, "sasl.jaas.config"),
                                               (11, "request.timeout.ms"), (13, "bootstrap.servers")]
    assert properties_to_settings(entries, "c") == {
        "client_id": "ops-1", "sasl_plain_username": "bob", "sasl_plain_password": "sécret",
        "ssl_cafile": "C:\\certs\\", "request_timeout_ms": 1000}
    assert dict((k, v) for _, k, v in entries)["sasl.password"] == "pa\\ss=word"


def test_a_byte_order_mark_is_not_a_key_and_a_file_that_is_not_text_is_a_usage_error(tmp_path):
    path = tmp_path / "c.properties"
    path.write_bytes(b"\xef\xbb\xbfclient.id=a\n")          # a byte order mark is not part of the key
    assert load_properties(str(path)) == {"client_id": "a"}
    path.write_bytes(b"client.id=\xff\n")
    with pytest.raises(KgroupUsageError, match="c.properties: cannot read"):
        load_properties(str(path))


def test_ignored_keys_and_missing_file(tmp_path):
    path = tmp_path / "c.properties"
    path.write_text("bootstrap.servers=ignored:9092\ngroup.id=x\nclient.id=a\n")
    assert load_properties(str(path)) == {"client_id": "a"}
    with pytest.raises(KgroupError, match=r"nope.properties: no such file"):
        load_properties(str(tmp_path / "nope.properties"))


def test_a_certificate_file_that_is_not_there_names_the_file_line_and_key(tmp_path):
    """It used to pass unchecked, and the TLS connection failed later without naming it."""
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    path = tmp_path / "c.properties"
    path.write_text(f"security.protocol=SSL\nssl.truststore.location={ca}\nssl.key.location=/nonexistent/key.pem\n")
    with pytest.raises(KgroupUsageError) as info:
        load_properties(str(path))
    assert str(info.value) == f"{path}:3: ssl.key.location=/nonexistent/key.pem: no such file"
    path.write_text(f"security.protocol=SSL\nssl.truststore.location={ca}\n")
    assert load_properties(str(path)) == {"security_protocol": "SSL", "ssl_cafile": str(ca)}


def test_bootstrap_server_must_be_host_port():
    from kgroup.client.wire import ClusterClient

    for bad in ("kafka-1", "kafka-1:notaport", "kafka-1:9092,:9093", "kafka-1:70000"):
        with pytest.raises(KgroupError, match="bad bootstrap server .*: expected HOST:PORT"):
            ClusterClient(bad)


def test_empty_bootstrap_entries_are_skipped_as_kafka_does():
    """'h:p,' and 'h:p,,h2:p' name the same brokers as without the empty entries (Kafka's
    ClientUtils.parseAndValidateAddresses); nothing but commas is still a usage error."""
    from kgroup.client.wire import ClusterClient

    for listed in ("127.0.0.1:1,", "127.0.0.1:1,,127.0.0.1:1", " ,127.0.0.1:1"):
        with pytest.raises(KgroupError, match="connection refused by"):
            ClusterClient(listed)
    with pytest.raises(KgroupError, match="bad bootstrap server ',': no HOST:PORT in it"):
        ClusterClient(",")


def test_librdkafka_spellings_kgroup_reads():
    """librdkafka's sasl.mechanisms (one mechanism, as Java's sasl.mechanism) and its `none` for no
    host name check, beside its sasl.username/sasl.password and ssl.ca.location."""
    assert settings("security.protocol=SASL_SSL\nsasl.mechanisms=scram-sha-512\nsasl.username=u\n"
                    "sasl.password=p\nssl.endpoint.identification.algorithm=none\n") == {
        "security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "u",
        "sasl_plain_password": "p", "ssl_check_hostname": False}


@pytest.mark.parametrize("key, suggestion", [
    ("sasl.mechansim", "sasl.mechanism"),            # a typo: two letters swapped
    ("sasl.pasword", "sasl.password"),
    ("ssl.truststore.locaton", "ssl.truststore.location"),
    ("SASL.MECHANISM", "sasl.mechanism"),            # Java's keys are case-sensitive
    ("security_protocol", "security.protocol"),
    ("sasl_plain_password", "sasl.password"),        # kafka-python's name
    ("ssl.truststore.password", None),               # Kafka's, not a near miss of ssl.keystore.password
    ("retries", None),
    ("retry.backoff.max.ms", None),
    ("client.rack", None),
])
def test_an_unknown_key_is_reported_with_the_known_key_it_is_a_near_miss_of(key, suggestion):
    reported = []
    assert properties_to_settings(parse_properties(f"{key}=plaintext\n", "c"), "c",
                                  lambda *unknown: reported.append(unknown)) == {}
    assert reported == [(key, suggestion)]


SASL_SSL = "security.protocol=SASL_SSL\n"


@pytest.mark.parametrize("text, message", [
    # issue 28 point 1: a mechanism without its password or user name (it waited for --timeout, then
    # said the broker could not be reached)
    (SASL_SSL + "sasl.mechanism=SCRAM-SHA-512\nsasl.username=ops\n",
     'c.properties:2: sasl.mechanism=SCRAM-SHA-512 but sasl.password is not set (nor password="..." in '
     'sasl.jaas.config)'),
    (SASL_SSL + "sasl.mechanism=PLAIN\nsasl.password=s3cret\n",
     'c.properties:2: sasl.mechanism=PLAIN but sasl.username is not set (nor username="..." in sasl.jaas.config)'),
    (SASL_SSL + "sasl.mechanism=PLAIN\nsasl.username=ops\nsasl.password=\n",
     "c.properties:4: sasl.mechanism=PLAIN but sasl.password is empty"),
    (SASL_SSL + 'sasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config=x.ScramLoginModule required username="" '
                'password="p";\n',
     'c.properties:3: sasl.mechanism=SCRAM-SHA-256 but username="" in sasl.jaas.config is empty'),
    # no mechanism: Kafka's clients default to GSSAPI, which kgroup cannot run (kafka-python sent none)
    (SASL_SSL + "sasl.username=ops\nsasl.password=s3cret\n",
     "c.properties:1: security.protocol=SASL_SSL but sasl.mechanism is not set (Kafka's default GSSAPI is not "
     "supported by kgroup; set PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)"),
    # a near miss of a key the connection needs: the error, naming it, rather than a warning
    (SASL_SSL + "sasl.mechansim=PLAIN\nsasl.username=ops\nsasl.password=s3cret\n",
     "c.properties:1: security.protocol=SASL_SSL but sasl.mechanism is not set (line 2 has 'sasl.mechansim': "
     "did you mean sasl.mechanism?)"),
    (SASL_SSL + "sasl.mechanism=PLAIN\nsasl.username=ops\nsasl.pasword=s3cret\n",
     "c.properties:2: sasl.mechanism=PLAIN but sasl.password is not set (nor password=\"...\" in "
     "sasl.jaas.config) (line 4 has 'sasl.pasword': did you mean sasl.password?)"),
    ("security.protocl=SSL\n",
     "c.properties:1: security.protocl=SSL: not a client property, did you mean security.protocol? "
     "(security.protocol is not set: the connection would be PLAINTEXT)"),
])
def test_a_file_without_what_its_connection_needs_is_a_usage_error_naming_the_key(text, message):
    reported = []
    with pytest.raises(KgroupUsageError) as info:
        properties_to_settings(parse_properties(text, "c.properties"), "c.properties",
                               lambda *unknown: reported.append(unknown))
    assert str(info.value) == message
    assert info.value.exit_code == 2
    assert reported == []           # the one line is the error: no warnings before it


@pytest.mark.parametrize("text", [
    "sasl.mechanism=SCRAM-SHA-512\n",                             # PLAINTEXT: Kafka ignores sasl.*
    "security.protocol=SSL\nsasl.mechanism=PLAIN\n",
    "security.protocl=plaintext\n",                               # the misspelt line changes nothing
    SASL_SSL + "sasl.mechanism=PLAIN\nsasl.username=ops\nsasl.password=s3cret\nsasl.pasword=x\n",
])
def test_credentials_are_needed_only_by_a_sasl_protocol_and_a_stray_near_miss_is_a_warning(text):
    reported = []
    properties_to_settings(parse_properties(text, "c"), "c", lambda *unknown: reported.append(unknown))
    assert all(suggestion for _key, suggestion in reported)


def test_warnings_wait_until_the_file_is_known_to_be_usable(tmp_path):
    """A file that must be fixed says one line, the error; a usable one its warnings."""
    path = tmp_path / "c.properties"
    path.write_text("retries=3\nsecurity.protocol=SSL\nssl.ca.location=/nonexistent/ca.pem\n")
    reported = []
    with pytest.raises(KgroupUsageError, match="c.properties:3: ssl.ca.location=/nonexistent/ca.pem: no such file"):
        load_properties(str(path), lambda *unknown: reported.append(unknown))
    assert reported == []
    path.write_text("retries=3\nsecurity.protocol=SSL\n")
    assert load_properties(str(path), lambda *unknown: reported.append(unknown)) == {"security_protocol": "SSL"}
    assert reported == [("retries", None)]
