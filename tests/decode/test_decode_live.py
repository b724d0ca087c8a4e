"""`decode-offsets --bootstrap-server`: a cluster's __consumer_offsets decoded as its files are.

The first tests serve the shared segment files through a stand-in for `TopicLog` (Fetch answers cut
at a byte limit, as a broker cuts them), so every codec, transaction and problem of the vectors goes
through the live path; the rest run `kgroup serve` with real consumers committing.
"""

from __future__ import annotations

import io
import json
import re
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from helpers import VECTORS
from kgroup.client.topic_log import EARLIEST, FetchedPartition
from kgroup.commands.cli import cli
from kgroup.decode import live, run as local
from kgroup.records.batch import scan
from kgroup.records.batch_model import Batch
from kgroup.server.harness import PYTHON, ROOT, ThreadedBroker
from decode.test_decode_state import write_shadowing_dump

SEGMENT_A = VECTORS / "segments" / "A__consumer_offsets-7__00000000000000000000.log"  # transactions
COMMON = dict(family=None, groups=[], topics=[], types=[], until_offset=None, until_time=None, strict=False)


class SegmentTopicLog:
    """Stands in for TopicLog: one partition (7 of 50) whose log is a segment file's bytes; a Fetch
    answers from the batch holding the offset and cuts its bytes at `limit` (the last batch may be
    partial, as a broker's size limit leaves it)."""

    limit = 300

    def __init__(self, data: bytes):
        self.topic = "__consumer_offsets"
        self.data = data
        self.leaders = {p: 0 for p in range(50)}
        self.batches = [e for e in scan(data) if isinstance(e, Batch)]

    partition_count = 50

    def refresh_leaders(self):
        pass

    def offsets(self, partitions, timestamp):
        end = self.batches[-1].last_offset + 1
        return {p: (0 if timestamp == EARLIEST or p != 7 else end) for p in partitions}

    def fetch(self, positions, max_wait_ms=0):
        out = []
        for p, pos in positions.items():
            records = b""
            first = next((b for b in self.batches if b.last_offset >= pos), None) if p == 7 else None
            if first is not None:
                records = self.data[first.position:first.position + max(self.limit, first.size)]
            out.append(FetchedPartition(p, 0, 0, 0, records))
        return out


class FakeClient:
    timeout_s = 5

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def decode_both(data, tmp_path, monkeypatch, **options):
    """(exit, output) of the live path on `data` served as partition 7, and of the file path."""
    monkeypatch.setattr("kgroup.decode.live.TopicLog", lambda client, topic: SegmentTopicLog(data))
    opts = dict(COMMON, **options)
    live_out = io.StringIO()
    live_code = live.decode_cluster(FakeClient, stream=live_out, **opts)
    path = tmp_path / "__consumer_offsets-7" / "00000000000000000000.log"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(data)
    file_out = io.StringIO()
    file_code = local.decode([str(path)], progress=False, stream=file_out, **opts)
    return (live_code, live_out.getvalue()), (file_code, file_out.getvalue().replace(str(path), "__consumer_offsets-7"))


@pytest.mark.parametrize("view,output", [("state", "json"), ("records", "jsonl"), ("records", "csv"),
                                         ("state", "table")])
def test_fetched_bytes_decode_exactly_as_the_segment_file(tmp_path, monkeypatch, view, output):
    got, expected = decode_both(SEGMENT_A.read_bytes(), tmp_path, monkeypatch, view=view, output=output)
    assert got == expected
    assert got[0] == 0 and got[1]


def test_until_offset_and_filters_apply_as_for_files(tmp_path, monkeypatch):
    got, expected = decode_both(SEGMENT_A.read_bytes(), tmp_path, monkeypatch, view="state", output="json",
                                until_offset=5, types=["offset_commit", "control"])
    assert got == expected


def test_a_bad_crc_is_reported_by_partition_and_offset_and_decoding_goes_on(tmp_path, monkeypatch, capsys):
    data = bytearray(SEGMENT_A.read_bytes())
    data[171 + 100] ^= 0x01  # inside the second batch (position 171): its CRC no longer matches
    got, expected = decode_both(bytes(data), tmp_path, monkeypatch, view="records", output="jsonl")
    assert got == expected and got[0] == 3
    err = capsys.readouterr().err
    assert "kgroup decode-offsets: __consumer_offsets-7: offset 2: " in err and "CRC" in err  # no byte position


def test_a_value_that_does_not_decode_names_the_key_whose_earlier_write_may_be_missing(tmp_path, monkeypatch,
                                                                                       capsys):
    """A cluster's topic is read once: the collapsed replay cannot look for the earlier write of a key whose
    latest value does not decode (a file can, `state_replay`), so a note names that key."""
    path = tmp_path / "dump" / "00000000000000000000.log"
    write_shadowing_dump(path, "later batch")
    (live_code, live_out), (file_code, file_out) = decode_both(path.read_bytes(), tmp_path, monkeypatch,
                                                               view="state", output="json")
    assert live_code == file_code == 3
    assert [c["partition"] for c in json.loads(live_out)["committed_offsets"]] == [1]
    assert [c["partition"] for c in json.loads(file_out)["committed_offsets"]] == [0, 1]
    notes = [line for line in capsys.readouterr().err.splitlines() if "note:" in line]
    assert notes == ["kgroup decode-offsets: note: __consumer_offsets-7: offset 2: any earlier write of this key "
                     "(group g, topic t, partition 0) since offset 0 is missing from the state: this input cannot "
                     "be read twice to find the last one that decodes (decode the partition's files)"]


class MovingTopicLog(SegmentTopicLog):
    """Answers the first Fetch with NOT_LEADER_OR_FOLLOWER (a moved leader), and offsets below 4 with
    OFFSET_OUT_OF_RANGE (deleted by retention meanwhile)."""

    def __init__(self, data):
        super().__init__(data)
        self.refreshed = 0

    def refresh_leaders(self):
        self.refreshed += 1

    def fetch(self, positions, max_wait_ms=0):
        if not self.refreshed:
            return [FetchedPartition(p, 6, -1, -1, b"") for p in positions]
        if positions.get(7, 4) < 4:
            return [FetchedPartition(7, 1, -1, 4, b"")]
        return super().fetch(positions, max_wait_ms)


def test_a_moved_leader_is_found_again_and_deleted_offsets_are_skipped(monkeypatch, capsys):
    log = MovingTopicLog(SEGMENT_A.read_bytes())
    monkeypatch.setattr("kgroup.decode.live.TopicLog", lambda client, topic: log)
    out = io.StringIO()
    code = live.decode_cluster(FakeClient, stream=out, view="records", output="jsonl", **COMMON)
    assert code == 0 and log.refreshed
    assert [json.loads(line)["offset"] for line in out.getvalue().splitlines()][:2] == [4, 5]  # mid-batch
    assert "__consumer_offsets-7: offsets 0-3 were deleted; reading on from 4" in capsys.readouterr().err


def test_only_literal_group_ids_narrow_the_partitions():
    from kgroup.records import partition_for

    assert live.partitions_to_read(50, ["g1", "g2"]) == sorted({partition_for("g1", 50), partition_for("g2", 50)})
    assert live.partitions_to_read(50, ["g*"]) == list(range(50))
    assert live.partitions_to_read(3, []) == [0, 1, 2]


# ------------------------------------------------------------------------------------------ the CLI

def invoke(*args, env=None):
    return CliRunner(env=env).invoke(cli, ["decode-offsets", *args], catch_exceptions=False)


@pytest.mark.parametrize("args,message", [
    (["--bootstrap-server", "h:1", "x.log"], "not both"),
    (["--follow", "x.log"], "--follow reads a cluster"),
    ([], "or --bootstrap-server"),
    (["--bootstrap-server", "h:1", "--engine", "spark"], "--engine spark"),
    (["--bootstrap-server", "h:1", "-o", "dump-log"], "a cluster has no files"),
    (["--bootstrap-server", "h:1", "--follow", "--view", "state", "-o", "jsonl"], "--view state"),
    (["--bootstrap-server", "h:1", "--follow", "--until-offset", "3", "-o", "jsonl"], "--until-offset"),
    (["--bootstrap-server", "h:1", "--follow", "-o", "json"], "-o jsonl or csv"),
])
def test_usage_errors_exit_2(args, message):
    result = invoke(*args)
    assert result.exit_code == 2 and message in result.stderr, result.stderr


def test_paths_win_over_the_environments_bootstrap_server(tmp_path):
    result = invoke("-o", "jsonl", str(SEGMENT_A), env={"KGROUP_BOOTSTRAP_SERVER": "127.0.0.1:1"})
    assert result.exit_code == 0 and result.stdout


def test_bad_address_exit_2_and_unreachable_cluster_exit_1_in_one_line():
    bad = invoke("--bootstrap-server", "nohost")
    assert bad.exit_code == 2 and bad.stderr.strip().splitlines() == [
        "kgroup decode-offsets: bad bootstrap server 'nohost': expected HOST:PORT[,HOST:PORT...]"]
    down = invoke("--bootstrap-server", "127.0.0.1:1", "--timeout", "1")
    assert down.exit_code == 1 and len(down.stderr.strip().splitlines()) == 1
    assert "connection refused by 127.0.0.1:1" in down.stderr


# ------------------------------------------------------------------------------- against kgroup serve

@pytest.fixture(scope="module")
def log_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("decode-live") / "logs"


@pytest.fixture(scope="module")
def broker(log_dir):
    b = ThreadedBroker(log_dir, topics=[("orders", 3)])
    yield b
    b.stop()


def commit(bootstrap, group, offsets):
    """Commit {partition: offset} of topic orders as a real kafka-python consumer of `group`."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        consumer.commit({TopicPartition("orders", p): OffsetAndMetadata(o, f"m{o}", -1) for p, o in offsets.items()})
    finally:
        consumer.close()


def cli_run(*args):
    return subprocess.run([PYTHON, "-m", "kgroup.commands.cli", "decode-offsets", *args], cwd=str(ROOT),
                          capture_output=True, text=True, timeout=60)


def test_state_from_the_cluster_equals_decoding_its_log_dir(broker, log_dir):
    from kgroup.client.fleet import FleetConsumer, stop_all, wait_until

    for n, group in enumerate(["alpha", "beta", "gamma", "delta"]):
        for round_ in range(3):
            commit(broker.bootstrap, group, {p: 10 * round_ + p + n for p in range(3)})
    fleet = [FleetConsumer(broker.bootstrap, "fleet", ["orders"], f"f-{i}", session_timeout_ms=4000)
             for i in range(2)]  # a static group: group metadata records as well as auto-commits
    try:
        assert wait_until(lambda: len(broker.committed_offsets("fleet")) == 3, 20)
    finally:
        stop_all(fleet)
    from_cluster = cli_run("--bootstrap-server", broker.bootstrap, "--view", "state", "-o", "json")
    from_files = cli_run(str(log_dir), "--view", "state", "-o", "json")
    assert from_cluster.returncode == 0 and from_files.returncode == 0, from_cluster.stderr + from_files.stderr
    # the same, but for where a record is: a partition instead of a segment file
    assert from_cluster.stdout == re.sub(r'"file":"[^"]*/(__consumer_offsets-\d+)/\d{20}\.log"', r'"file":"\1"',
                                         from_files.stdout)
    state = json.loads(from_cluster.stdout)
    assert {(c["group"], c["partition"]): c["offset"] for c in state["committed_offsets"]
            if c["group"] == "gamma"} == {("gamma", p): 20 + p + 2 for p in range(3)}
    assert any(r["type"] == "group_metadata" and r["key"]["group"] == "fleet" for r in state["records"])

    one = cli_run("--bootstrap-server", broker.bootstrap, "--group", "beta", "-o", "jsonl")
    from kgroup.records import partition_for

    rows = [json.loads(line) for line in one.stdout.splitlines()]
    assert rows and {r["file"] for r in rows} == {f"__consumer_offsets-{partition_for('beta', 50)}"}
    assert {r["key"]["group"] for r in rows} == {"beta"}


def test_follow_shows_a_commit_within_a_second_and_stops_cleanly_on_sigint(broker):
    commit(broker.bootstrap, "watched", {0: 1})
    proc = subprocess.Popen([PYTHON, "-m", "kgroup.commands.cli", "decode-offsets", "--bootstrap-server",
                             broker.bootstrap, "--follow", "-o", "jsonl", "--group", "watched"],
                            cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = json.loads(proc.stdout.readline())  # what the topic held: the follow loop runs from here
        assert first["key"]["group"] == "watched" and first["value"]["offset"] == 1
        time.sleep(0.5)
        latencies = []
        for offset in (2, 3):
            from confluent_kafka import Consumer, TopicPartition

            consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "watched"})
            consumer.commit(offsets=[TopicPartition("orders", 0, offset)], asynchronous=False)
            committed = time.monotonic()
            row = json.loads(proc.stdout.readline())
            latencies.append(time.monotonic() - committed)
            consumer.close()
            assert row["value"]["offset"] == offset and row["key"] == {"group": "watched", "topic": "orders",
                                                                        "partition": 0}
        assert max(latencies) < 1.0, latencies
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert "Traceback" not in err and out == ""


def test_follow_outlives_a_broker_restart(tmp_path):
    first = ThreadedBroker(tmp_path / "logs", topics=[("orders", 1)])
    host, port = first.address
    commit(first.bootstrap, "restarted", {0: 1})
    proc = subprocess.Popen([PYTHON, "-m", "kgroup.commands.cli", "decode-offsets", "--bootstrap-server",
                             first.bootstrap, "--follow", "-o", "jsonl", "--timeout", "20"],
                            cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    second = None
    try:
        assert json.loads(proc.stdout.readline())["value"]["offset"] == 1
        first.stop()
        time.sleep(1)
        second = ThreadedBroker(tmp_path / "logs", topics=[("orders", 1)], port=port)
        commit(second.bootstrap, "restarted", {0: 2})
        row = json.loads(proc.stdout.readline())
        assert row["key"]["group"] == "restarted" and row["value"]["offset"] == 2
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
        if second is not None:
            second.stop()
    assert proc.returncode == 0, err
    assert "retrying" in err and "Traceback" not in err


def test_out_dir_not_empty_is_a_usage_error(tmp_path):
    (tmp_path / "x").write_text("")
    result = invoke("--out", str(tmp_path), "-o", "jsonl", str(SEGMENT_A))
    assert result.exit_code == 2 and "directory exists and is not empty" in result.stderr
