"""What an operator meets in the first hour (issue 26): the same table whether or not stdout is a
terminal (`kgroup describe g | grep s-0` used to grep JSON), `describe` showing committed offsets
and lag by default as `kafka-consumer-groups --describe` does, and one coordinator form per format."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from kgroup.commands.cli import cli
from kgroup.server.harness import ThreadedBroker

TOPIC = "orders"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    from kafka import KafkaProducer

    b = ThreadedBroker(tmp_path_factory.mktemp("defaults") / "logs", topics=[(TOPIC, 2)])
    producer = KafkaProducer(bootstrap_servers=b.bootstrap, enable_idempotence=False)
    for partition in range(2):
        for i in range(5):
            producer.send(TOPIC, value=b"%d" % i, partition=partition)
    producer.flush(10)
    producer.close()
    committed = kgroup(b, "reset-offsets", "ops", "--topic", TOPIC, "--to-offset", "2", "--execute")
    assert committed.exit_code == 0, committed.stderr
    yield b
    b.stop()


def kgroup(b, command, *args):
    """`kgroup COMMAND --bootstrap-server B ARGS` with stdout a pipe, as in `kgroup describe g | grep`."""
    return CliRunner().invoke(cli, [*command.split(), "--bootstrap-server", b.bootstrap, "--timeout", "10", *args])


@pytest.mark.parametrize("command", [
    "list", "describe ops", "describe ops --no-offsets", "reset-offsets ops --all-topics --to-earliest",
    "delete ops --dry-run", "delete-offsets ops --topic no-such-topic", "wait ops --state Empty",
    "remove-members ops --instance-id gone --dry-run"])
def test_the_default_output_is_the_table_a_terminal_shows_also_in_a_pipe(broker, command):
    """It was JSON whenever stdout was not a terminal; a script says -o json."""
    name, *args = command.split()
    default = kgroup(broker, name, *args)
    table = kgroup(broker, name, *args, "-o", "table")
    assert default.exit_code == table.exit_code, (default.stderr, table.stderr)
    assert default.stdout == table.stdout
    assert default.stdout.strip() and not default.stdout.lstrip().startswith(("[", "{")), default.stdout
    as_json = kgroup(broker, name, *args, "-o", "json")
    assert as_json.exit_code == default.exit_code
    json.loads(as_json.stdout)
    via_root = CliRunner().invoke(cli, ["-o", "json", name, "--bootstrap-server", broker.bootstrap, *args])
    assert via_root.stdout == as_json.stdout


@pytest.mark.parametrize("command", ["list", "describe", "remove-members", "reset-offsets", "delete-offsets", "delete",
                                     "wait", "simulate", "simulate connect", "serve", "demo"])
def test_help_says_the_default_is_table(command):
    result = CliRunner().invoke(cli, [*command.split(), "--help"])
    text = " ".join(result.stdout.split())
    assert re.search(r"Output format: [a-z, -]+ \(default: table\)\.", text), text
    assert "json otherwise" not in text


def test_decode_offsets_still_streams_jsonl_into_a_pipe():
    result = CliRunner().invoke(cli, ["decode-offsets", "--help"])
    assert "(default: table on a terminal, jsonl otherwise)" in " ".join(result.stdout.split())


def test_describe_shows_committed_offsets_and_lag_by_default_and_no_offsets_skips_them(broker, monkeypatch):
    table = kgroup(broker, "describe", "ops").stdout
    assert re.search(r"^TOPIC\s+PARTITION\s+COMMITTED\s+LOG-END\s+LAG\s+INSTANCE-ID\s+MEMBER-ID$", table, re.M), table
    assert re.search(rf"^{TOPIC}\s+0\s+2\s+5\s+3\s", table, re.M) and re.search(r"^OWNER\s+TOTAL-LAG$", table, re.M)
    assert kgroup(broker, "describe", "ops", "--offsets").stdout == table      # still accepted: says the default
    doc = json.loads(kgroup(broker, "describe", "ops", "-o", "json").stdout)
    assert [(r["partition"], r["committed"], r["log_end"], r["lag"]) for r in doc[0]["offsets"]] == [
        (0, 2, 5, 3), (1, 2, 5, 3)]
    csv = kgroup(broker, "describe", "ops", "-o", "csv").stdout.splitlines()
    assert csv[0] == "group,topic,partition,committed,log_end,lag,member_id,group_instance_id"
    assert csv[1:] == [f"ops,{TOPIC},0,2,5,3,,", f"ops,{TOPIC},1,2,5,3,,"]

    # --no-offsets: no OffsetFetch or ListOffsets at all
    import kgroup.client.groups as groups

    def no_offsets_wanted(*args, **kwargs):
        raise AssertionError("--no-offsets fetched offsets")

    monkeypatch.setattr(groups, "attach_offsets", no_offsets_wanted)
    bare = kgroup(broker, "describe", "ops", "--no-offsets")
    assert bare.exit_code == 0, bare.stderr
    assert "COMMITTED" not in bare.stdout and "TOTAL-LAG" not in bare.stdout and "ops" in bare.stdout
    assert json.loads(kgroup(broker, "describe", "ops", "--no-offsets", "-o", "json").stdout)[0]["offsets"] == []
    members = kgroup(broker, "describe", "ops", "--no-offsets", "-o", "csv").stdout.splitlines()
    assert members[0].startswith("group,state,protocol_type,protocol,coordinator,member_id,")


def test_the_coordinator_is_one_form_in_list_and_describe(broker):
    """`list -o csv` said host:port where `describe -o csv` and both tables say host:port (id: N); JSON
    keeps its object."""
    import csv
    import io

    from kgroup.client.fleet import FleetConsumer, stop_all, wait_until

    fuller = f"{broker.bootstrap} (id: 0)"
    consumers = [FleetConsumer(broker.bootstrap, "coord", [TOPIC], "c-0", session_timeout_ms=2000)]
    try:
        assert wait_until(lambda: (broker.group("coord") is not None
                                   and broker.group("coord").state == "Stable"), 30)
        listed = [row for row in csv.DictReader(io.StringIO(kgroup(broker, "list", "-o", "csv").stdout))
                  if row["group"] == "coord"]
        described = list(csv.DictReader(io.StringIO(kgroup(broker, "describe", "coord", "--no-offsets",
                                                           "-o", "csv").stdout)))
        assert [r["coordinator"] for r in listed] == [r["coordinator"] for r in described] == [fuller]
        assert fuller in kgroup(broker, "list").stdout and fuller in kgroup(broker, "describe", "coord").stdout
        host, port = broker.bootstrap.rsplit(":", 1)
        assert [g["coordinator"] for g in json.loads(kgroup(broker, "list", "-o", "json").stdout)
                if g["group"] == "coord"] == [{"id": 0, "host": host, "port": int(port)}]
    finally:
        stop_all(consumers)
