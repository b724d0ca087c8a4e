"""decode-offsets on what is not a coordinator partition (a normal topic's segment written by serve
and a producer, a text file): one line naming the file, exit 1; every message it prints starts
`kgroup decode-offsets:`; the table shows each record's partition."""

import pytest
from click.testing import CliRunner

from helpers import VECTORS
from kgroup.commands.cli import cli

NOT_OFFSETS = "not a __consumer_offsets or __worker_offsets partition"
PREFIX = "kgroup decode-offsets: "


def run(*args):
    return CliRunner().invoke(cli, ["decode-offsets", *args])


def normal_topic_segment(root) -> str:
    """The partition directory of topic `orders` after a producer wrote 30 keyed records to serve."""
    from kafka import KafkaProducer

    from kgroup.server.harness import ThreadedBroker

    broker = ThreadedBroker(root / "logs", topics=[("orders", 1)])
    try:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=False)
        for i in range(30):
            producer.send("orders", key=b"order-%d" % i, value=b'{"amount": %d}' % i, partition=0)
        producer.flush(10)
        producer.close()
    finally:
        broker.stop()
    return str(root / "logs" / "orders-0")


@pytest.fixture(scope="module")
def orders_dir(tmp_path_factory):
    return normal_topic_segment(tmp_path_factory.mktemp("not-offsets"))


def assert_named_once(result, path):
    lines = result.stderr.splitlines()
    assert result.exit_code == 1, result.stderr
    assert "Unknown record type" not in result.stderr
    assert lines[0].startswith(f"{PREFIX}{path}: byte 0: {NOT_OFFSETS}: "), lines
    assert lines[1:] == [f"{PREFIX}1 problem; 0 records decoded from 0 batches"]


@pytest.mark.parametrize("output", ["jsonl", "table", "dump-log", "json"])
def test_a_normal_topics_segment_is_named_in_one_line(orders_dir, output):
    segment = f"{orders_dir}/00000000000000000000.log"
    result = run(segment, "-o", output)
    assert_named_once(result, segment)
    assert "group-coordinator key (another topic's segment?)" in result.stderr
    assert_named_once(run(orders_dir, "-o", output), segment)           # its partition directory
    assert_named_once(run(segment, "--view", "state", "-o", "json"), segment)


def test_a_text_file_is_named_in_one_line(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\nthis is not a log segment\n")
    result = run(str(notes), "-o", "jsonl")
    assert_named_once(result, str(notes))
    assert "no record batch at its start" in result.stderr


def test_a_path_naming_the_offsets_topic_is_decoded_whatever_it_holds(orders_dir, tmp_path):
    renamed = tmp_path / "__consumer_offsets-3"
    renamed.mkdir()
    (renamed / "00000000000000000000.log").write_bytes(open(f"{orders_dir}/00000000000000000000.log", "rb").read())
    result = run(str(renamed), "-o", "jsonl")
    assert result.exit_code == 1 and result.stderr.count("Unknown record type") == 30


def test_an_offsets_segment_with_another_file_name_is_still_decoded(tmp_path):
    copy = tmp_path / "dump.log"
    copy.write_bytes((VECTORS / "segments" / "A__consumer_offsets-7__00000000000000000000.log").read_bytes())
    result = run(str(copy), "--family", "consumer", "-o", "jsonl")
    assert result.exit_code == 0 and result.stdout and not result.stderr


@pytest.mark.parametrize("args", [
    ["--until-offset", "-5", "x"], ["--bogus"], [], ["x", "-o", "dump-log", "--view", "state"],
    ["x", "-o", "parquet"], ["--bootstrap-server", "nohost"], ["--spark-conf", "novalue", "x"],
    ["--engine", "spark", "-"],
])
def test_every_usage_error_is_one_line_with_the_prefix_exit_2(args):
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith(PREFIX), result.stderr
    assert "Usage:" not in result.output and "Error:" not in result.output


def test_problems_notes_and_failures_carry_the_prefix(tmp_path):
    missing = str(tmp_path / "nope")
    result = run(missing, "--engine", "auto", "-o", "jsonl")
    assert result.exit_code == 1
    assert all(line.startswith(PREFIX) for line in result.stderr.splitlines()), result.stderr
    down = run("--bootstrap-server", "127.0.0.1:1", "--timeout", "1")
    assert down.exit_code == 1 and down.stderr.startswith(PREFIX) and len(down.stderr.splitlines()) == 1


def test_the_table_shows_each_records_partition(tmp_path):
    a = tmp_path / "__consumer_offsets-7"
    a.mkdir()
    (a / "00000000000000000000.log").write_bytes(
        (VECTORS / "segments" / "A__consumer_offsets-7__00000000000000000000.log").read_bytes())
    lines = run(str(tmp_path), "-o", "table").stdout.splitlines()
    assert lines[0].split()[:3] == ["PARTITION", "OFFSET", "TIME"]
    assert {line.split()[0] for line in lines[1:]} == {"7"}
    stdin = CliRunner().invoke(cli, ["decode-offsets", "-", "--family", "consumer", "-o", "table"],
                               input=(a / "00000000000000000000.log").read_bytes())
    assert {line.split()[0] for line in stdin.stdout.splitlines()[1:]} == {"-"}


def test_a_bad_crc_at_the_start_of_an_unnamed_offsets_dump_is_reported_as_such(tmp_path):
    data = bytearray((VECTORS / "segments" / "A__consumer_offsets-7__00000000000000000000.log").read_bytes())
    data[18] ^= 0xFF      # the first batch's stored CRC-32C (bytes 17-20 of a magic 2 batch)
    dump = tmp_path / "dump.log"
    dump.write_bytes(bytes(data))
    result = run(str(dump), "--family", "consumer", "-o", "jsonl")
    assert "CRC" in result.stderr and NOT_OFFSETS not in result.stderr, result.stderr
    assert result.exit_code == 3 and result.stdout


def test_a_file_that_cannot_be_opened_says_so_not_that_it_is_another_topic(tmp_path, monkeypatch):
    import kgroup.records.segment as segment

    dump = tmp_path / "dump.log"       # a path that does not name the topic: the foreign-file check is on
    dump.write_bytes((VECTORS / "segments" / "A__consumer_offsets-7__00000000000000000000.log").read_bytes())

    def denied(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(segment, "open", denied, raising=False)
    for output in ("jsonl", "dump-log"):
        result = run(str(dump), "-o", output)
        assert result.exit_code == 1
        assert result.stderr.splitlines() == [f"{PREFIX}{dump}: byte 0: cannot open: Permission denied",
                                              f"{PREFIX}1 problem; 0 records decoded from 0 batches"]
