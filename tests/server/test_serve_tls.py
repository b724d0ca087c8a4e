"""kgroup serve's SSL and SASL_SSL listeners with a PEM keystore made by `openssl` at test time."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from helpers.secure_clients import (kafka_python_static_member_consumes,
                                    rdkafka_static_member_consumes)
from kgroup.server.harness import PYTHON, ROOT, ThreadedBroker
from kgroup.server.security.listeners import ListenerError, parse_listener

OPENSSL = shutil.which("openssl")
pytestmark = pytest.mark.skipif(OPENSSL is None, reason="the openssl command is needed to make "
                                                        "test certificates")
TOPIC = "events"


@pytest.fixture(scope="module")
def pem(tmp_path_factory):
    """(keystore: certificate + key in one PEM file, CA file for clients): self-signed for 127.0.0.1."""
    where = tmp_path_factory.mktemp("tls")
    key, cert = where / "key.pem", where / "cert.pem"
    subprocess.run([OPENSSL, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    keystore = where / "keystore.pem"
    keystore.write_text(cert.read_text() + key.read_text())
    return str(keystore), str(cert)


@pytest.fixture(scope="module")
def broker(tmp_path_factory, pem):
    keystore, _ca = pem
    b = ThreadedBroker(tmp_path_factory.mktemp("logs"), topics=[(TOPIC, 2)],
                       listeners=[parse_listener("SSL://127.0.0.1:0"),
                                  parse_listener("SASL_SSL://127.0.0.1:0")],
                       users={"ops": "s3cret"},
                       config={"ssl.keystore.type": "PEM", "ssl.keystore.location": keystore})
    b.ssl, b.sasl_ssl = b.bootstraps
    yield b
    b.stop()


def test_a_tls_listener_needs_a_loadable_keystore(tmp_path):
    with pytest.raises(ListenerError, match="ssl.keystore.location"):
        ThreadedBroker(tmp_path, listeners=[parse_listener("SSL://127.0.0.1:0")])
    missing = tmp_path / "none.pem"
    with pytest.raises(ListenerError, match="cannot load"):
        ThreadedBroker(tmp_path, listeners=[parse_listener("SSL://127.0.0.1:0")],
                       config={"ssl.keystore.location": str(missing)})


def test_kafka_python_over_ssl_and_sasl_ssl(broker, pem):
    from kafka import KafkaConsumer

    _keystore, ca = pem
    plain_tls = KafkaConsumer(bootstrap_servers=broker.ssl, security_protocol="SSL", ssl_cafile=ca)
    try:
        assert plain_tls.partitions_for_topic(TOPIC) == {0, 1}
    finally:
        plain_tls.close()
    scram = KafkaConsumer(bootstrap_servers=broker.sasl_ssl, security_protocol="SASL_SSL",
                          ssl_cafile=ca, sasl_mechanism="SCRAM-SHA-512",
                          sasl_plain_username="ops", sasl_plain_password="s3cret")
    try:
        assert scram.partitions_for_topic(TOPIC) == {0, 1}
    finally:
        scram.close()


def test_kgroup_list_over_sasl_ssl(broker, pem, tmp_path):
    _keystore, ca = pem
    config = tmp_path / "client.properties"
    config.write_text(f"security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
                      f"sasl.username=ops\nsasl.password=s3cret\nssl.ca.location={ca}\n")
    result = subprocess.run([PYTHON, "-m", "kgroup.commands.cli", "list", "--bootstrap-server",
                             broker.sasl_ssl, "--command-config", str(config)],
                            capture_output=True, text=True, cwd=str(ROOT), timeout=60)
    assert result.returncode == 0, result.stderr


def test_confluent_kafka_static_member_consumes_over_sasl_ssl_scram_sha_512(broker, pem):
    _keystore, ca = pem
    secure = {"bootstrap.servers": broker.sasl_ssl, "security.protocol": "SASL_SSL",
              "ssl.ca.location": ca, "sasl.mechanism": "SCRAM-SHA-512",
              "sasl.username": "ops", "sasl.password": "s3cret"}
    rdkafka_static_member_consumes(broker, secure, TOPIC, "rdk-tls", 6)


def test_kafka_python_static_member_consumes_over_sasl_ssl_scram_sha_512(broker, pem):
    _keystore, ca = pem
    kafka_python_static_member_consumes(broker, {
        "bootstrap_servers": broker.sasl_ssl, "security_protocol": "SASL_SSL", "ssl_cafile": ca,
        "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "ops",
        "sasl_plain_password": "s3cret"}, TOPIC, "kp-tls")
