"""Rough edges a new user hit (issue 17 point 4): a protocol mismatch said plainly on both sides."""

from __future__ import annotations

import logging

import pytest
from click.testing import CliRunner

from kgroup.commands.cli import cli
from kgroup.server.harness import ThreadedBroker


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = ThreadedBroker(tmp_path_factory.mktemp("edges") / "logs", topics=[("t", 1)])
    yield b
    b.stop()


@pytest.mark.parametrize("protocol", ["SSL", "SASL_SSL"])
def test_tls_client_against_a_plaintext_listener(broker, tmp_path, caplog, protocol):
    props = tmp_path / "client.properties"
    extra = "sasl.mechanism=PLAIN\nsasl.username=u\nsasl.password=p\n" if protocol == "SASL_SSL" else ""
    props.write_text(f"security.protocol={protocol}\n{extra}")
    with caplog.at_level(logging.INFO, logger="kgroup.server"):
        result = CliRunner().invoke(cli, ["list", "--bootstrap-server", broker.bootstrap, "--command-config",
                                          str(props), "--timeout", "30"])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"kgroup list: cannot connect to {broker.bootstrap}: the broker did not "
                                    f"answer the TLS handshake (security.protocol={protocol})"), result.stderr
    assert len(result.stderr.splitlines()) == 1
    closing = [r.getMessage() for r in caplog.records if "closing connection" in r.getMessage()]
    assert closing and all("a TLS handshake on this plaintext listener" in m for m in closing)
    assert not any("request size" in r.getMessage() for r in caplog.records)


def test_sasl_client_against_a_plaintext_listener_says_the_mismatch(broker, tmp_path):
    props = tmp_path / "client.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=u\nsasl.password=p\n")
    result = CliRunner().invoke(cli, ["describe", "g", "--bootstrap-server", broker.bootstrap, "--command-config",
                                      str(props), "--timeout", "30"])
    assert result.exit_code == 1
    assert result.stderr == (f"kgroup describe: cannot connect to {broker.bootstrap}: the listener does not speak "
                             "SASL (no SaslHandshake in its ApiVersions) but security.protocol=SASL_PLAINTEXT: a "
                             "protocol mismatch, is it a plaintext listener?\n")


def test_describe_all_groups_on_a_cluster_without_groups_says_none_and_the_group_rule_says_which(broker):
    run = CliRunner().invoke
    table = run(cli, ["describe", "--all-groups", "--bootstrap-server", broker.bootstrap, "-o", "table"])
    assert (table.exit_code, table.stdout) == (0, "(none)\n"), table.stderr
    doc = run(cli, ["describe", "--all-groups", "--bootstrap-server", broker.bootstrap, "-o", "json"])
    assert (doc.exit_code, doc.stdout) == (0, "[]\n"), doc.stderr
    neither = run(cli, ["describe", "--bootstrap-server", broker.bootstrap])
    assert neither.exit_code == 2 and neither.stderr == "kgroup describe: give GROUP names or --all-groups\n"
    both = run(cli, ["describe", "g", "--all-groups", "--bootstrap-server", broker.bootstrap])
    assert both.exit_code == 2 and both.stderr == "kgroup describe: give GROUP names or --all-groups, not both\n"


def test_serve_on_an_address_in_use_is_one_line_and_creates_nothing(broker, tmp_path):
    logs = tmp_path / "logs"
    host, port = broker.address
    result = CliRunner().invoke(cli, ["serve", "--listen", f"{host}:{port}", "--log-dir", str(logs)])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"kgroup serve: cannot listen on {host}:{port}: ")
    assert "in use" in result.stderr and len(result.stderr.splitlines()) == 1
    assert not logs.exists()


def test_serve_with_two_listeners_on_one_address_is_one_line_and_creates_nothing(tmp_path):
    import socket

    with socket.socket() as probe:                 # a free port, released before serve binds it
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    logs = tmp_path / "logs"
    result = CliRunner().invoke(cli, ["serve", "--listen", f"127.0.0.1:{port}", "--listen",
                                      f"SASL_PLAINTEXT://127.0.0.1:{port}", "--user", "a:b", "--log-dir", str(logs)])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"kgroup serve: cannot listen on 127.0.0.1:{port}: ")
    assert len(result.stderr.splitlines()) == 1 and not logs.exists()


def test_serve_on_an_address_that_is_not_local(tmp_path):
    result = CliRunner().invoke(cli, ["serve", "--listen", "192.0.2.1:0", "--log-dir", str(tmp_path / "logs")])
    assert result.exit_code == 1 and result.stderr.startswith("kgroup serve: cannot listen on 192.0.2.1:0: ")
    assert not (tmp_path / "logs").exists()


def test_serve_topic_without_partitions_names_the_option_and_the_form(tmp_path):
    result = CliRunner().invoke(cli, ["serve", "--topic", "orders", "--log-dir", str(tmp_path / "logs")])
    assert result.exit_code == 2
    assert "Invalid value for --topic: 'orders': expected NAME:PARTITIONS" in result.stderr
    assert "orders:6" in result.stderr


def test_decode_offsets_reports_an_empty_file_and_refuses_a_negative_until_offset(tmp_path):
    empty = tmp_path / "00000000000000000000.log"
    empty.write_bytes(b"")
    result = CliRunner().invoke(cli, ["decode-offsets", "-o", "jsonl", str(empty)])
    assert result.exit_code == 1 and result.stdout == ""
    assert f"{empty}: empty file: no record batch to decode" in result.stderr
    result = CliRunner().invoke(cli, ["decode-offsets", "--until-offset", "-5", str(empty)])
    assert result.exit_code == 2 and "--until-offset" in result.stderr
