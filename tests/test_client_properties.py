"""--command-config: Kafka client properties mapped onto kafka-python settings."""

import pytest

from kgroup.client.properties import load_properties, parse_properties, properties_to_settings
from kgroup.errors import KgroupError


def settings(text, source="client.properties"):
    return properties_to_settings(parse_properties(text, source), source)


def test_sasl_ssl_with_jaas_and_pem_files():
    text = """
# production
security.protocol=sasl_ssl
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\
    username="ops" password="p\\"w=d";
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
    ("ssl.keystore.location=/etc/ks.jks\n", "client.properties:1: ssl.keystore.location '/etc/ks.jks' looks like a "
                                            "Java keystore"),
    ("\nfetch.max.bytes=1\n", "client.properties:2: unsupported client property 'fetch.max.bytes'"),
    ("request.timeout.ms=soon\n", "client.properties:1: request.timeout.ms must be an integer, got 'soon'"),
    ("request.timeout.ms=-5\n", "client.properties:1: request.timeout.ms must be at least 0, got -5"),
    ("security.protocol=TLS\n", "client.properties: security.protocol 'TLS' is not one of"),
    ("sasl.mechanism=KERBEROS\n", "client.properties: sasl.mechanism 'KERBEROS' is not one of"),
    ("sasl.jaas.config=Module required;\n", "client.properties:1: sasl.jaas.config needs username="),
])
def test_errors_name_file_line_and_key(text, message):
    with pytest.raises(KgroupError) as info:
        settings(text)
    assert str(info.value).startswith(message)


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
    with pytest.raises(KgroupError) as info:
        load_properties(str(path))
    assert str(info.value) == f"{path}:3: ssl.key.location '/nonexistent/key.pem': no such file"
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
    with pytest.raises(KgroupError, match="bad bootstrap server ',': expected HOST:PORT"):
        ClusterClient(",")
