"""kgroup's client against a secured serve: each security failure is one line naming its cause,
said at once rather than after `--timeout` (kafka-python alone retries them all until then)."""

from __future__ import annotations

import subprocess
import time

import pytest

from helpers.certificates import OPENSSL, certificates_fixture
from kgroup.server.harness import PYTHON, ROOT, ThreadedBroker
from kgroup.server.security.listeners import parse_listener

TIMEOUT_S = 30  # what a failure must not wait for
SASL = "sasl.username=ops\nsasl.password=s3cret\n"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return certificates_fixture(tmp_path_factory)


@pytest.fixture(scope="module")
def brokers(tmp_path_factory, certs):
    """{protocol: bootstrap} of one serve with PLAIN only enabled, `elsewhere`: an SSL listener
    whose certificate names another host, and `mutual`: one requiring client certificates."""
    mutual = ThreadedBroker(tmp_path_factory.mktemp("logs"),
                            listeners=[parse_listener("SSL://127.0.0.1:0")],
                            config={"ssl.keystore.location": certs.server,
                                    "ssl.client.auth": "required",
                                    "ssl.truststore.location": certs.ca})
    main = ThreadedBroker(tmp_path_factory.mktemp("logs"),
                          listeners=[parse_listener(f"{p}://127.0.0.1:0") for p in
                                     ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")],
                          users={"ops": "s3cret"},
                          config={"ssl.keystore.location": certs.server,
                                  "sasl.enabled.mechanisms": "PLAIN"})
    elsewhere = ThreadedBroker(tmp_path_factory.mktemp("logs"),
                               listeners=[parse_listener("SSL://127.0.0.1:0")],
                               config={"ssl.keystore.location": certs.wrong_host_server})
    self_signed = ThreadedBroker(tmp_path_factory.mktemp("logs"),
                                 listeners=[parse_listener("SSL://127.0.0.1:0")],
                                 config={"ssl.keystore.location": _self_signed_keystore(tmp_path_factory)})
    yield {**dict(zip(("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"), main.bootstraps)),
           "elsewhere": elsewhere.bootstrap, "mutual": mutual.bootstrap, "self-signed": self_signed.bootstrap}
    for broker in (main, elsewhere, mutual, self_signed):
        broker.stop()


def _self_signed_keystore(tmp_path_factory) -> str:
    """A certificate signed by its own key, for 127.0.0.1 (README's example), with the key: PEM."""
    where = tmp_path_factory.mktemp("self-signed")
    key, cert = where / "key.pem", where / "cert.pem"
    subprocess.run([OPENSSL, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", key, "-out", cert],
                   check=True, capture_output=True)
    keystore = where / "keystore.pem"
    keystore.write_text(cert.read_text() + key.read_text())
    return str(keystore)


CASES = {
    "wrong password": ("SASL_PLAINTEXT", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                       "sasl.username=ops\nsasl.password=wrong\n",
                       "authentication failed for user ops (PLAIN)"),
    "unknown user over TLS": ("SASL_SSL", "security.protocol=SASL_SSL\nssl.ca.location={ca}\n"
                              "sasl.mechanism=PLAIN\nsasl.username=nobody\nsasl.password=x\n",
                              "authentication failed for user nobody (PLAIN)"),
    "mechanism not enabled": ("SASL_PLAINTEXT", "security.protocol=SASL_PLAINTEXT\n"
                              "sasl.mechanism=SCRAM-SHA-256\n" + SASL,
                              "SASL mechanism SCRAM-SHA-256 (sasl.mechanism) is not enabled on {address} "
                              "(enabled: PLAIN)"),
    "unknown CA": ("SSL", "security.protocol=SSL\nssl.ca.location={other_ca}\n",
                   "TLS: certificate verify failed: unable to get local issuer certificate (the CA file "
                   "{other_ca} does not vouch for the broker's certificate: set ssl.truststore.location, or "
                   "ssl.ca.location, to the PEM file of the CA that signed it)"),
    "self-signed certificate, no CA file": ("self-signed", "security.protocol=SSL\n",
                                            "TLS: certificate verify failed: self-signed certificate (no CA file "
                                            "is set, so only the system's CAs are trusted: set "
                                            "ssl.truststore.location, or ssl.ca.location, to the PEM file of the "
                                            "CA that signed the broker's certificate)"),
    "hostname mismatch": ("elsewhere", "security.protocol=SSL\nssl.ca.location={ca}\n",
                          "TLS: certificate verify failed: IP address mismatch"),
    "no client certificate": ("mutual", "security.protocol=SSL\nssl.ca.location={ca}\n",
                              "the listener closes TLS connections without a client certificate"),
    "TLS client, plaintext listener": ("PLAINTEXT", "security.protocol=SSL\nssl.ca.location={ca}\n",
                                       "did not answer the TLS handshake (security.protocol=SSL)"),
    "plaintext client, TLS listener": ("SSL", "security.protocol=PLAINTEXT\n",
                                       "the listener speaks TLS (SSL or SASL_SSL) but "
                                       "security.protocol=PLAINTEXT"),
    "SASL_PLAINTEXT client, SASL_SSL listener": ("SASL_SSL", "security.protocol=SASL_PLAINTEXT\n"
                                                 "sasl.mechanism=PLAIN\n" + SASL,
                                                 "security.protocol=SASL_PLAINTEXT: a protocol "
                                                 "mismatch"),
    "plaintext client, SASL listener": ("SASL_PLAINTEXT", "security.protocol=PLAINTEXT\n",
                                        "the listener requires SASL authentication (enabled: "
                                        "PLAIN) but security.protocol=PLAINTEXT"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_security_failure_is_one_line_naming_its_cause_at_once(brokers, certs, tmp_path, case):
    listener, properties, expected = CASES[case]
    address = brokers[listener]
    config = tmp_path / "client.properties"
    config.write_text(properties.format(ca=certs.ca, other_ca=certs.other_ca))
    started = time.monotonic()
    result = subprocess.run([PYTHON, "-m", "kgroup.commands.cli", "list", "--bootstrap-server",
                             address, "--command-config", str(config), "--timeout", str(TIMEOUT_S)],
                            capture_output=True, text=True, cwd=str(ROOT), timeout=120)
    elapsed = time.monotonic() - started
    assert result.returncode == 1, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"kgroup list: cannot connect to {address}: ")
    assert expected.format(address=address, other_ca=certs.other_ca) in result.stderr
    assert elapsed < TIMEOUT_S / 2, elapsed


def _kgroup_list(address, config, timeout_s=TIMEOUT_S):
    return subprocess.run([PYTHON, "-m", "kgroup.commands.cli", "list", "--bootstrap-server", address,
                           "--command-config", str(config), "--timeout", str(timeout_s)],
                          capture_output=True, text=True, cwd=str(ROOT), timeout=120)


@pytest.fixture
def listening_socket():
    """A bound, listening socket nobody accepts on: what a connection attempt would reach."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        sock.setblocking(False)
        yield sock


CONFIGURATION_ERRORS = {
    # issue 28 point 1: it waited --timeout, then `cannot reach a Kafka broker at ... within 30s`, exit 1
    "no password": ("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=ops\n"
                    "ssl.ca.location={ca}\n",
                    '{path}:2: sasl.mechanism=SCRAM-SHA-512 but sasl.password is not set (nor password="..." '
                    'in sasl.jaas.config)'),
    "no user name": ("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.password=s3cret\n",
                     '{path}:2: sasl.mechanism=PLAIN but sasl.username is not set (nor username="..." in '
                     'sasl.jaas.config)'),
    # point 7: kafka-python sent a SaslHandshake for `None`; Kafka's clients would use GSSAPI
    "no mechanism": ("security.protocol=SASL_SSL\n" + SASL,
                     "{path}:1: security.protocol=SASL_SSL but sasl.mechanism is not set (Kafka's default "
                     "GSSAPI is not supported by kgroup; set PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)"),
    # point 8: a near miss of a key the connection needs (a warning, then exit 1 at the broker)
    "misspelt mechanism key": ("security.protocol=SASL_SSL\nsasl.mechansim=SCRAM-SHA-512\n" + SASL,
                               "{path}:1: security.protocol=SASL_SSL but sasl.mechanism is not set (line 2 has "
                               "'sasl.mechansim': did you mean sasl.mechanism?)"),
    "Kerberos": ("security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n",
                 "{path}:2: sasl.mechanism=GSSAPI: not supported by kgroup; set PLAIN, SCRAM-SHA-256 or "
                 "SCRAM-SHA-512"),
    "missing CA file": ("security.protocol=SSL\nssl.truststore.location=/nonexistent/ca.pem\n",
                        "{path}:2: ssl.truststore.location=/nonexistent/ca.pem: no such file"),
    "missing keystore file": ("security.protocol=SSL\nssl.keystore.location=/nonexistent/client.pem\n",
                              "{path}:2: ssl.keystore.location=/nonexistent/client.pem: no such file"),
}


@pytest.mark.parametrize("case", CONFIGURATION_ERRORS)
def test_a_configuration_the_user_must_fix_is_exit_2_naming_file_and_key_before_any_connection(
        certs, tmp_path, listening_socket, case):
    properties, expected = CONFIGURATION_ERRORS[case]
    config = tmp_path / "client.properties"
    config.write_text(properties.format(ca=certs.ca))
    host, port = listening_socket.getsockname()
    started = time.monotonic()
    result = _kgroup_list(f"{host}:{port}", config)
    assert time.monotonic() - started < 5
    assert result.returncode == 2, result.stderr
    assert result.stderr == f"kgroup list: {expected.format(path=config)}\n"
    with pytest.raises(BlockingIOError):
        listening_socket.accept()           # nothing connected


def test_librdkafka_spelling_of_the_mechanism_works_and_a_misspelt_optional_key_is_a_warning(brokers, tmp_path):
    """librdkafka's sasl.mechanisms was `ignoring client property` and then a refused handshake, exit 1."""
    config = tmp_path / "client.properties"
    config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanisms=PLAIN\n" + SASL + "clientid=ops\n")
    result = _kgroup_list(brokers["SASL_PLAINTEXT"], config)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ("kgroup list: ignoring client property 'clientid' (not used by kgroup; did you mean "
                             "client.id?)\n")


@pytest.mark.parametrize("listener, properties, expected", [
    ("SASL_PLAINTEXT", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n" + SASL,
     "SASL mechanism SCRAM-SHA-512 (sasl.mechanism) is not enabled on {address} (enabled: PLAIN)"),
    ("SASL_SSL", "security.protocol=SASL_SSL\nssl.ca.location={ca}\nsasl.mechanism=SCRAM-SHA-256\n" + SASL,
     "SASL mechanism SCRAM-SHA-256 (sasl.mechanism) is not enabled on {address} (enabled: PLAIN)"),
    ("SASL_PLAINTEXT", "security.protocol=PLAINTEXT\n",
     "the listener requires SASL authentication (enabled: PLAIN) but security.protocol=PLAINTEXT"),
])
def test_the_broker_is_asked_for_its_mechanisms_with_a_real_one(brokers, certs, tmp_path, caplog, listener,
                                                                 properties, expected):
    """Issue 28 point 7: the probe for the enabled list asked for `kgroup-probe`, and serve logged
    `SASL mechanism 'kgroup-probe' is not enabled` (on a real broker that reads like an attack). Now
    every SaslHandshake names the user's mechanism (PLAIN when it has none: a PLAINTEXT client)."""
    import logging

    address = brokers[listener]
    config = tmp_path / "client.properties"
    config.write_text(properties.format(ca=certs.ca))
    with caplog.at_level(logging.INFO, logger="kgroup.server"):
        result = _kgroup_list(address, config)
    assert result.returncode == 1, result.stderr
    assert result.stderr == f"kgroup list: cannot connect to {address}: {expected.format(address=address)}\n"
    asked = [r.getMessage().split("SASL mechanism ")[1].split(" is not enabled")[0] for r in caplog.records
             if "is not enabled" in r.getMessage()]
    mechanism = properties.split("sasl.mechanism=")[1].split("\n")[0] if "sasl.mechanism=" in properties else None
    if mechanism:                       # the client's attempt, and the probe for the list: both the user's
        assert asked and set(asked) == {repr(mechanism)}, asked
    else:                               # PLAIN is enabled: the handshake succeeds, nothing to log
        assert asked == []
    assert not any("kgroup-probe" in r.getMessage() or "None" in r.getMessage() for r in caplog.records)
