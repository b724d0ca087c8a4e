"""`kgroup serve` as a process: start-up line, signals, config errors, kill -9 durability, man page."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time

import pytest
from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition

from kgroup.server.harness import ROOT, SubprocessBroker


def run_cli(*args, timeout=20):
    return subprocess.run([sys.executable, "-m", "kgroup.commands.cli", *args],
                          capture_output=True, text=True, timeout=timeout, cwd=str(ROOT))


@pytest.fixture
def server(tmp_path):
    started = []

    def start(**kw):
        s = SubprocessBroker(tmp_path / "logs", **kw)
        started.append(s)
        return s

    yield start
    for s in started:
        s.kill()


def test_first_line_names_the_bound_port_and_sigterm_exits_cleanly(server):
    s = server(topics=[("t", 1)])
    host, port = s.address
    assert host == "127.0.0.1" and port > 0
    assert s.terminate() == 0
    s2 = server()
    s2.proc.send_signal(signal.SIGINT)
    assert s2.proc.wait(10) == 0


@pytest.mark.parametrize("args, needle", [
    (["--config", "bogus.key=1"], "bogus.key"),
    (["--config", "num.partitions=zero"], "num.partitions"),
    (["--config", "group.min.session.timeout.ms=abc"], "group.min.session.timeout.ms"),
    (["--topic", "t"], "NAME:PARTITIONS"),
    (["--listen", "nohost"], "HOST:PORT"),
])
def test_bad_options_fail_with_a_message_naming_the_problem(tmp_path, args, needle):
    result = run_cli("serve", "--listen", "127.0.0.1:0", "--log-dir", str(tmp_path / "d"), *args)
    assert result.returncode in (1, 2)
    assert needle in result.stderr
    assert "Traceback" not in result.stderr


def test_kill_9_loses_no_acknowledged_commit_or_group_write(server, tmp_path):
    from kafka.admin import KafkaAdminClient

    s = server(topics=[("t", 3)])
    c = KafkaConsumer(bootstrap_servers=s.bootstrap, group_id="durable",
                      enable_auto_commit=False)
    acknowledged = {}
    for i in range(1, 21):
        tp = TopicPartition("t", i % 3)
        c.commit({tp: OffsetAndMetadata(i * 7, f"m{i}", -1)})  # returns once acknowledged
        acknowledged[("t", i % 3)] = (i * 7, f"m{i}")
    member = KafkaConsumer(bootstrap_servers=s.bootstrap, group_id="static-durable",
                           group_instance_id="node-a", session_timeout_ms=30000,
                           enable_auto_commit=False)
    assert member.partitions_for_topic("t") == {0, 1, 2}
    member.subscribe(["t"])
    deadline = time.monotonic() + 20
    while len(member.assignment()) < 3:  # joined and synced: the group write was acknowledged
        assert time.monotonic() < deadline
        member.poll(timeout_ms=200)
    s.kill()  # SIGKILL straight after the last acknowledgements
    c.close(autocommit=False)
    member.close(autocommit=False, timeout_ms=1000)
    s2 = server()
    c = KafkaConsumer(bootstrap_servers=s2.bootstrap, group_id="durable",
                      enable_auto_commit=False)
    admin = KafkaAdminClient(bootstrap_servers=s2.bootstrap)
    try:
        for (topic, part), (offset, metadata) in acknowledged.items():
            assert c.committed(TopicPartition(topic, part)) == offset
        offsets = admin.list_group_offsets({"durable": None})["durable"]  # OffsetFetch v8
        assert {(tp.topic, tp.partition): (om.offset, om.metadata)
                for tp, om in offsets.items()} == acknowledged
        described = admin.describe_groups(["static-durable"])["static-durable"]
        assert described["group_state"] == "Stable"
        assert [m["group_instance_id"] for m in described["members"]] == ["node-a"]
    finally:
        admin.close()
        c.close(autocommit=False)
    assert s2.terminate() == 0
    # decode-offsets reads what the server wrote.
    from kgroup.records import partition_for
    part = partition_for("durable", 50)
    result = run_cli("decode-offsets", "-o", "jsonl", str(tmp_path / "logs" / f"__consumer_offsets-{part}"))
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    commits = [r for r in rows if r.get("type") == "offset_commit"]
    assert len(commits) == 20
    assert commits[-1]["key"] == {"group": "durable", "topic": "t", "partition": 20 % 3}
    assert commits[-1]["value"]["offset"] == 140


def test_man_page_is_in_step_with_help():
    help_text = run_cli("serve", "--help").stdout
    man = (ROOT / "man" / "kgroup-serve.1").read_text()
    options = set(re.findall(r"(--[a-z][a-z-]+)", help_text))
    assert {"--listen", "--log-dir", "--topic", "--config", "--advertised-host",
            "--verbose", "--help"} <= options
    for option in options:
        assert option.replace("-", r"\-") in man, f"{option} is missing from man/kgroup-serve.1"
    for section in (".SH DURABILITY", ".SH SIGNALS", "socket.request.max.bytes",
                    "offsets.topic.num.partitions"):
        assert section in man
