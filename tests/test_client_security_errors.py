"""kgroup's client against a secured serve: each security failure is one line naming its cause,
said at once rather than after `--timeout` (kafka-python alone retries them all until then)."""

from __future__ import annotations

import subprocess
import time

import pytest

from helpers.certificates import certificates_fixture
from kgroup.server.harness import PYTHON, ROOT, ThreadedBroker
from kgroup.server.listeners import parse_listener

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
    yield {**dict(zip(("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"), main.bootstraps)),
           "elsewhere": elsewhere.bootstrap, "mutual": mutual.bootstrap}
    for broker in (main, elsewhere, mutual):
        broker.stop()


CASES = {
    "wrong password": ("SASL_PLAINTEXT", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                       "sasl.username=ops\nsasl.password=wrong\n",
                       "authentication failed for user ops (PLAIN)"),
    "unknown user over TLS": ("SASL_SSL", "security.protocol=SASL_SSL\nssl.ca.location={ca}\n"
                              "sasl.mechanism=PLAIN\nsasl.username=nobody\nsasl.password=x\n",
                              "authentication failed for user nobody (PLAIN)"),
    "mechanism not enabled": ("SASL_PLAINTEXT", "security.protocol=SASL_PLAINTEXT\n"
                              "sasl.mechanism=SCRAM-SHA-256\n" + SASL,
                              "SASL mechanism SCRAM-SHA-256 is not enabled on {address} "
                              "(enabled: PLAIN)"),
    "unknown CA": ("SSL", "security.protocol=SSL\nssl.ca.location={other_ca}\n",
                   "TLS: certificate verify failed: unable to get local issuer certificate"),
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
    assert expected.format(address=address) in result.stderr
    assert elapsed < TIMEOUT_S / 2, elapsed
