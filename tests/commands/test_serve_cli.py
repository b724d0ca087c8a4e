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
    (["--config", "group.bogus.ms=1"], "group.bogus.ms"),
    (["--config", "offsets.retention.minuts=5"], "offsets.retention.minuts"),
    (["--config", "group.max.session.timeout.ms=100"], "group.max.session.timeout.ms"),
    (["--config", "offset.metadata.max.bytes=-1"], "offset.metadata.max.bytes"),
    (["--topic", "t"], "NAME:PARTITIONS"),
    (["--topic", "t:0"], "NAME:PARTITIONS"),
    (["--topic", "bad/name:2"], "bad/name"),
    (["--topic", "__consumer_offsets:5"], "offsets.topic.num.partitions"),
    (["--listen", "nohost"], "HOST:PORT"),
    (["--advertised-host", "0.0.0.0"], "'0.0.0.0': a client cannot connect to a wildcard address"),
    (["--advertised-host", "[::]"], "'[::]': a client cannot connect to a wildcard address"),
    (["--config", "connection.failed.authentication.delay.ms=-1"], "connection.failed.authentication.delay.ms"),
    (["--config", "connection.failed.authentication.delay.ms=600000"], "less than connections.max.idle.ms"),
    (["--acl", "User:bob :All:Topic:*"], "the principal 'User:bob ' has surrounding whitespace"),
    (["--acl", "User:bob:Read:Group: orders"], "the resource name ' orders' has surrounding whitespace"),
])
def test_bad_options_are_usage_errors_naming_the_problem(tmp_path, args, needle):
    log_dir = tmp_path / "d"
    result = run_cli("serve", "--listen", "127.0.0.1:0", "--log-dir", str(log_dir), *args)
    assert result.returncode == 2, result.stderr
    assert needle in result.stderr
    assert "Traceback" not in result.stderr
    assert not log_dir.exists()  # refused before anything is created
    assert len(result.stderr.splitlines()) == 1, result.stderr


def test_acl_principals_that_match_no_connection_are_warned_about_once_each(server):
    """Users known: a principal naming none of them, or of another type than User, is one warning
    line at start; serve starts anyway (Kafka takes such an ACL too)."""
    s = server(listens=("SASL_PLAINTEXT://127.0.0.1:0",), users={"app": "pw", "ops": "pw"},
               acls=("User:aap:Read:Group:typo-app", "User:aap:Read:Topic:typo", "user:app:All:Topic:*",
                     "User:app:Read:Group:orders", "User:ANONYMOUS:Describe:Topic:*", "User:*:Describe:Group:*"))
    assert s.terminate() == 0
    assert s.proc.stderr.read().splitlines() == [
        "kgroup serve: warning: --acl principal User:aap names no user of --user/--users "
        "(did you mean User:app?): its rules match no connection",
        "kgroup serve: warning: --acl principal user:app matches no connection: principal types are "
        "compared exactly and every connection's is User (did you mean User:app?)"]


def _advertised_brokers(port):
    from kafka.protocol.metadata import MetadataRequest, MetadataResponse

    from kgroup.server.harness import raw_request

    metadata = MetadataResponse.decode(raw_request(("127.0.0.1", port), MetadataRequest(
        version=12, topics=None, allow_auto_topic_creation=False)), version=12, header=True)
    return [(b.host, b.port) for b in metadata.brokers]


def test_a_listener_on_every_interface_advertises_the_host_name_and_says_so(server):
    # 0.0.0.0 is where the server listens, never where a client can connect (Kafka refuses it in
    # advertised.listeners): Metadata names the machine instead, and stderr says which
    from kgroup.server.security.listeners import machine_host_name

    s = server(listens=("0.0.0.0:0",))
    name, port = s.address
    assert name == machine_host_name() and name not in ("0.0.0.0", "")
    assert _advertised_brokers(port) == [(name, port)]
    assert s.terminate() == 0
    assert s.proc.stderr.read() == (f"kgroup serve: listening on 0.0.0.0:{port}, advertising host {name} "
                                    f"(set --advertised-host to change)\n")


def test_advertised_host_wins_over_the_bound_address_quietly(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "kgroup.commands.cli", "serve", "--log-dir", str(tmp_path / "d"),
                             "--listen", "0.0.0.0:0", "--advertised-host", "kafka.example"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
    try:
        line = proc.stdout.readline()
        assert re.fullmatch(r"listening on kafka\.example:\d+\n", line), line
        port = int(line.split(":")[-1])
        assert _advertised_brokers(port) == [("kafka.example", port)]
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
    finally:
        proc.kill()
    assert proc.returncode == 0 and err == "", err


def test_every_coordinator_setting_is_accepted(tmp_path):
    from kgroup.coordinator.config import SETTINGS
    from kgroup.server.config import ServerConfig

    cfg = ServerConfig.from_pairs([f"{key}={default}" for key, (default, _lo, _hi)
                                   in SETTINGS.items()])
    assert set(cfg.coordinator) == set(SETTINGS)
    assert cfg.coordinator["offset.metadata.max.bytes"] == 4096


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


def test_kill_9_mid_stream_keeps_every_acknowledged_commit(server):
    """Commits stream in over one connection while the server is SIGKILLed: the offset found after
    the restart is the last acknowledged one, or the one in flight at the kill, never older."""
    import socket
    import threading

    from kafka.protocol.consumer import (OffsetCommitRequest, OffsetCommitResponse,
                                         OffsetFetchRequest, OffsetFetchResponse)
    from kgroup.server.harness import raw_request, read_frame

    C = OffsetCommitRequest.OffsetCommitRequestTopic
    s = server(topics=[("t", 2)])
    acked = {"offset": None}

    def commits():
        with socket.create_connection(s.address, timeout=10) as sock:
            for offset in range(1, 10 ** 6):
                req = OffsetCommitRequest(
                    version=8, group_id="stream", generation_id_or_member_epoch=-1, member_id="",
                    group_instance_id=None, topics=[C(name="t", partitions=[
                        C.OffsetCommitRequestPartition(partition_index=p, committed_offset=offset,
                                                       committed_leader_epoch=-1,
                                                       committed_metadata="")
                        for p in (0, 1)])])
                req.with_header(correlation_id=offset, client_id="stream")
                try:
                    sock.sendall(bytes(req.encode(header=True, framed=True)))
                    raw = read_frame(sock)
                except OSError:
                    return
                if raw is None:
                    return
                resp = OffsetCommitResponse.decode(raw, version=8, header=True)
                assert all(p.error_code == 0 for t in resp.topics for p in t.partitions)
                acked["offset"] = offset

    thread = threading.Thread(target=commits, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while (acked["offset"] or 0) < 50:
        assert time.monotonic() < deadline and thread.is_alive()
        time.sleep(0.01)
    s.kill()
    thread.join(10)
    last = acked["offset"]
    s2 = server()
    req = OffsetFetchRequest(version=8, groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
        group_id="stream", topics=None)], require_stable=True)
    resp = OffsetFetchResponse.decode(raw_request(s2.address, req), version=8, header=True)
    found = {p.partition_index: p.committed_offset
             for t in resp.groups[0].topics for p in t.partitions}
    assert set(found) == {0, 1}
    assert all(offset in (last, last + 1) for offset in found.values()), (last, found)
    assert s2.terminate() == 0


def test_json_output_is_one_event_per_line(tmp_path):
    """-o json: a listening event a script can parse, then a stopped event at a clean stop."""
    proc = subprocess.Popen([sys.executable, "-m", "kgroup.commands.cli", "serve", "-o", "json",
                             "--listen", "127.0.0.1:0", "--log-dir", str(tmp_path / "logs")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
    try:
        first = json.loads(proc.stdout.readline())
        assert first["event"] == "listening" and first["host"] == "127.0.0.1" and first["port"] > 0
        assert first["bootstrap"] == f"127.0.0.1:{first['port']}"
        assert first["log_dir"] == str(tmp_path / "logs")
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0
    assert [json.loads(line) for line in out.splitlines()] == [{"event": "stopped"}]


def test_a_second_server_on_a_log_dir_in_use_refuses_to_start_and_touches_nothing(server, tmp_path):
    # A second server on the same directory would replay the groups, expire their members on its
    # own clock and append at the same byte positions as the first: Kafka's .lock rule.
    first = server(topics=[("t", 1)])
    offsets = tmp_path / "logs" / "__consumer_offsets-0"
    sizes = {p.name: p.stat().st_size for p in sorted((tmp_path / "logs").rglob("*.log"))}
    second = run_cli("serve", "--listen", "127.0.0.1:0", "--log-dir", str(tmp_path / "logs"), timeout=20)
    assert second.returncode == 1
    assert second.stdout == ""
    assert second.stderr == (f"kgroup serve: {tmp_path / 'logs'} is in use by another kgroup serve "
                             f"(cannot lock {tmp_path / 'logs' / '.lock'}); stop that one first\n")
    assert {p.name: p.stat().st_size for p in sorted((tmp_path / "logs").rglob("*.log"))} == sizes
    assert offsets.is_dir()
    assert first.proc.poll() is None  # the first one is unaffected
    assert first.terminate() == 0
    again = server()  # the lock went with the process
    assert again.terminate() == 0
