"""Mutual TLS on kgroup serve's SSL listeners (`ssl.client.auth`): the principal named after the
client certificate's subject, clients without (or with a foreign) certificate refused at the
handshake; kafka-python, confluent-kafka and kgroup (`--command-config` keystore) as clients."""

from __future__ import annotations

import socket
import ssl
import subprocess

import pytest

from helpers.certificates import CLIENT_PRINCIPAL, KEY_PASSWORD, certificates_fixture
from kgroup.server.harness import PYTHON, ROOT, ThreadedBroker
from kgroup.server.security.listeners import ListenerError, certificate_principal, parse_listener

TOPIC = "events"
METADATA = 3


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return certificates_fixture(tmp_path_factory)


def _recording_principals(b):
    """Wrap the Metadata handler so the test sees each request's principal."""
    seen = []
    request_class, lo, hi, handler = b.broker.api_table[METADATA]

    def recording(broker, request, ctx):
        seen.append(ctx.principal)
        return handler(broker, request, ctx)
    b.broker.api_table[METADATA] = (request_class, lo, hi, recording)
    return seen


@pytest.fixture(scope="module", params=["required", "requested"])
def broker(request, tmp_path_factory, certs):
    b = ThreadedBroker(tmp_path_factory.mktemp("logs"), topics=[(TOPIC, 2)],
                       listeners=[parse_listener("SSL://127.0.0.1:0")],
                       config={"ssl.keystore.type": "PEM", "ssl.keystore.location": certs.server,
                               "ssl.client.auth": request.param, "ssl.truststore.type": "PEM",
                               "ssl.truststore.location": certs.ca})
    b.client_auth = request.param
    b.principals = _recording_principals(b)
    yield b
    b.stop()


def _handshake(broker, certs, keystore):
    """A TLS handshake and one ApiVersions request: None when answered, else what went wrong
    (TLS 1.3 reports a refused certificate only on the first read; asyncio's server closes the
    connection without an alert)."""
    from kafka.protocol.metadata import ApiVersionsRequest

    request = ApiVersionsRequest(version=0)
    request.with_header(correlation_id=1, client_id="mtls-test")
    context = ssl.create_default_context(cafile=certs.ca)
    if keystore:
        context.load_cert_chain(keystore)
    host, port = broker.address
    try:
        with socket.create_connection((host, port), timeout=5) as sock:
            with context.wrap_socket(sock, server_hostname=host) as tls:
                tls.sendall(bytes(request.encode(header=True, framed=True)))
                return None if tls.recv(4) else "closed"
    except (ssl.SSLError, OSError) as exc:
        return exc


def test_the_principal_is_the_certificate_subject_in_kafka_form(broker, certs):
    from kafka import KafkaConsumer

    broker.principals.clear()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, security_protocol="SSL",
                             ssl_cafile=certs.ca, ssl_certfile=certs.client)
    try:
        assert consumer.partitions_for_topic(TOPIC) == {0, 1}
    finally:
        consumer.close()
    assert set(broker.principals) == {CLIENT_PRINCIPAL}


def test_a_client_without_a_certificate_is_refused_only_when_required(broker, certs):
    outcome = _handshake(broker, certs, None)
    if broker.client_auth == "required":
        assert outcome is not None
    else:
        assert outcome is None


def test_a_certificate_from_another_ca_is_refused(broker, certs):
    assert _handshake(broker, certs, certs.rogue_client) is not None  # even when only requested


def test_confluent_kafka_with_a_client_certificate(broker, certs):
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": broker.bootstrap, "security.protocol": "SSL",
                         "ssl.ca.location": certs.ca, "ssl.certificate.location": certs.client,
                         "ssl.key.location": certs.client})
    broker.principals.clear()
    assert TOPIC in admin.list_topics(timeout=20).topics
    assert set(broker.principals) == {CLIENT_PRINCIPAL}


@pytest.mark.parametrize("encrypted", [False, True])
def test_kgroup_sends_the_keystore_of_its_command_config(broker, certs, tmp_path, encrypted):
    keystore = certs.encrypted_client if encrypted else certs.client
    password = f"ssl.key.password={KEY_PASSWORD}\n" if encrypted else ""
    config = tmp_path / "client.properties"
    config.write_text(f"security.protocol=SSL\nssl.truststore.type=PEM\n"
                      f"ssl.truststore.location={certs.ca}\nssl.keystore.type=PEM\n"
                      f"ssl.keystore.location={keystore}\n{password}")
    broker.principals.clear()
    result = subprocess.run([PYTHON, "-m", "kgroup.commands.cli", "list", "--bootstrap-server",
                             broker.bootstrap, "--command-config", str(config), "--timeout", "20"],
                            capture_output=True, text=True, cwd=str(ROOT), timeout=60)
    assert result.returncode == 0, result.stderr
    assert set(broker.principals) == {CLIENT_PRINCIPAL}


def test_certificate_principal_escapes_and_orders_like_x500_principal():
    subject = ((("countryName", "DE"),), (("organizationName", "Acme, Inc."),),
               (("organizationalUnitName", "ops"), ("userId", "7")), (("commonName", "#a+b "),))
    assert certificate_principal({"subject": subject}) == \
        "User:CN=\\#a\\+b\\ ,OU=ops+UID=7,O=Acme\\, Inc.,C=DE"
    assert certificate_principal({}) is None and certificate_principal(None) is None


def test_client_auth_needs_a_truststore_and_a_known_mode(tmp_path, certs):
    listeners = [parse_listener("SSL://127.0.0.1:0")]
    with pytest.raises(ListenerError, match="ssl.truststore.location"):
        ThreadedBroker(tmp_path, listeners=listeners,
                       config={"ssl.keystore.location": certs.server, "ssl.client.auth": "required"})
    with pytest.raises(ListenerError, match="ssl.client.auth"):
        ThreadedBroker(tmp_path, listeners=listeners,
                       config={"ssl.keystore.location": certs.server, "ssl.client.auth": "always"})
