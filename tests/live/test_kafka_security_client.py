"""kgroup's client against a real Kafka 4.4 SASL listener (SCRAM-SHA-512 only) — issue 28 point 7: the
enabled mechanisms come from Kafka's own SaslHandshake answer to the user's mechanism, never to a
made-up one, and Kafka's log shows only what the user configured.

Its own node (a SASL_PLAINTEXT listener next to PLAINTEXT, users added at format time, no
authorizer): the shared ``kafka`` fixture is plaintext only.
"""

from __future__ import annotations

import re
import subprocess

import pytest

from helpers.kafka_cluster import KafkaCluster, free_port
from kgroup.server.harness import PYTHON, ROOT

MECHANISM = "SCRAM-SHA-512"
USER, PASSWORD = "ops", "s3cret"


@pytest.fixture(scope="module")
def sasl_kafka(tmp_path_factory):
    from helpers.kafka_jars import fetch, require_java

    require_java()
    root = tmp_path_factory.mktemp("sasl-kafka")       # pytest keeps the last runs' (server.log)
    port = free_port()
    cluster = KafkaCluster(
        fetch(), root, settings={
            "sasl.enabled.mechanisms": MECHANISM,
            "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;"},
        listeners={"SASL_PLAINTEXT": lambda node: f"127.0.0.1:{port}"},
        security_protocols={"SASL_PLAINTEXT": "SASL_PLAINTEXT"},
        format_args=["--add-scram", f"{MECHANISM}=[name={USER},password={PASSWORD}]"])
    try:
        cluster.start()
    except Exception as exc:  # noqa: BLE001 - said in the failure
        cluster.stop()
        pytest.fail(f"the SASL Kafka did not start ({str(exc)[-800:]}); its logs are in {root}", pytrace=False)
    cluster.sasl = f"127.0.0.1:{port}"
    yield cluster
    cluster.stop()


def _kgroup_list(address: str, properties: str, tmp_path) -> subprocess.CompletedProcess:
    config = tmp_path / "client.properties"
    config.write_text(properties)
    return subprocess.run([PYTHON, "-m", "kgroup.commands.cli", "list", "--bootstrap-server", address,
                           "--command-config", str(config), "--timeout", "30"],
                          capture_output=True, text=True, cwd=str(ROOT), timeout=120)


def _mechanisms_kafka_was_asked_for(cluster) -> set[str]:
    """From Kafka's server.log: `Failed authentication with /127.0.0.1 (channelId=...) (Unsupported SASL
    mechanism X)`, X each mechanism a client asked for that the listener does not enable."""
    text = cluster.nodes[0].log.read_text(errors="replace")
    return set(re.findall(r"Unsupported SASL mechanism (\S+?)\)", text))


CREDENTIALS = f"sasl.username={USER}\nsasl.password={PASSWORD}\n"


def test_a_mechanism_kafka_does_not_enable_is_named_with_kafkas_own_list(sasl_kafka, tmp_path):
    result = _kgroup_list(sasl_kafka.sasl, "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n" + CREDENTIALS,
                          tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stderr == (f"kgroup list: cannot connect to {sasl_kafka.sasl}: SASL mechanism PLAIN "
                             f"(sasl.mechanism) is not enabled on {sasl_kafka.sasl} (enabled: {MECHANISM})\n")
    assert _mechanisms_kafka_was_asked_for(sasl_kafka) == {"PLAIN"}      # no `kgroup-probe`, no `None`


def test_a_plaintext_client_on_the_sasl_listener_learns_the_mechanisms_by_asking_for_plain(sasl_kafka, tmp_path):
    result = _kgroup_list(sasl_kafka.sasl, "security.protocol=PLAINTEXT\n", tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stderr == (f"kgroup list: cannot connect to {sasl_kafka.sasl}: the listener requires SASL "
                             f"authentication (enabled: {MECHANISM}) but security.protocol=PLAINTEXT\n")
    assert _mechanisms_kafka_was_asked_for(sasl_kafka) <= {"PLAIN"}


def test_the_configured_mechanism_logs_in(sasl_kafka, tmp_path):
    result = _kgroup_list(sasl_kafka.sasl, f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism={MECHANISM}\n"
                          + CREDENTIALS, tmp_path)
    assert result.returncode == 0, result.stderr
