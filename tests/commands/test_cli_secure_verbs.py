"""kgroup's live verbs with `--command-config` against a secured serve, for every protocol and
mechanism: list, describe, wait, remove-members and reset-offsets, end to end with a static
kafka-python member connected the same way."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from helpers.certificates import certificates_fixture
from helpers.secure_clients import PASSWORD, client_settings
from kgroup.client.fleet import FleetConsumer, stop_all, wait_until
from kgroup.commands.cli import cli
from kgroup.server.harness import ThreadedBroker
from kgroup.server.security.listeners import parse_listener

TOPIC = "orders"
PROTOCOLS = ("SSL", "SASL_PLAINTEXT", "SASL_SSL")
COMBINATIONS = [("SSL", None)] + [(protocol, mechanism) for protocol in PROTOCOLS[1:]
                                  for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")]


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return certificates_fixture(tmp_path_factory)


@pytest.fixture(scope="module")
def broker(tmp_path_factory, certs):
    b = ThreadedBroker(tmp_path_factory.mktemp("logs"), topics=[(TOPIC, 2)],
                       listeners=[parse_listener(f"{p}://127.0.0.1:0") for p in PROTOCOLS],
                       users={"ops": PASSWORD}, config={"ssl.keystore.location": certs.server})
    b.by_protocol = dict(zip(PROTOCOLS, b.bootstraps))
    yield b
    b.stop()


def _kgroup(bootstrap, config, *args):
    result = CliRunner().invoke(cli, [*args, "--bootstrap-server", bootstrap, "--command-config",
                                      config, "--timeout", "20"], catch_exceptions=False)
    assert result.exit_code == 0, (args, result.stdout, result.stderr)
    return result.stdout


@pytest.mark.parametrize("protocol, mechanism", COMBINATIONS)
def test_verbs_end_to_end(broker, certs, tmp_path, protocol, mechanism):
    group = "-".join(filter(None, ("secure", protocol, mechanism))).lower()
    bootstrap = broker.by_protocol[protocol]
    text, settings = client_settings(protocol, mechanism, certs.ca)
    config = tmp_path / "client.properties"
    config.write_text(text)
    member = FleetConsumer(bootstrap, group, [TOPIC], "static-1", session_timeout_ms=30000,
                           poll_timeout_ms=300, **settings)
    try:
        assert wait_until(lambda: len(member.assignment) == 2, 30), member.error
        assert wait_until(lambda: len(broker.committed_offsets(group)) == 2, 15)
        listed = json.loads(_kgroup(bootstrap, str(config), "list", "-o", "json"))
        assert group in [row["group"] for row in listed]
        described = json.loads(_kgroup(bootstrap, str(config), "describe", group, "-o", "json"))
        (row,) = described if isinstance(described, list) else [described]
        assert row["state"] == "Stable"
        assert [m["group_instance_id"] for m in row["members"]] == ["static-1"]
        _kgroup(bootstrap, str(config), "wait", group, "--state", "Stable")
    finally:
        stop_all([member])  # a static member leaves no LeaveGroup: it stays until removed
    assert broker.group(group).static_members
    removed = json.loads(_kgroup(bootstrap, str(config), "remove-members", group,
                                 "--instance-id", "static-1", "-o", "json"))
    assert removed["removed"] == 1
    _kgroup(bootstrap, str(config), "wait", group, "--state", "Empty")
    _kgroup(bootstrap, str(config), "reset-offsets", group, "--topic", TOPIC, "--to-offset", "0",
            "--execute")
    assert {tp: om.offset for tp, om in broker.committed_offsets(group).items()} == \
        {(TOPIC, 0): 0, (TOPIC, 1): 0}
