"""`kgroup decode-offsets` end to end on the shared segment files and on damaged copies of them."""

import json
import shutil

import pytest
from click.testing import CliRunner

from helpers import VECTORS
from kgroup.commands.cli import cli

SEGMENTS = {
    "A": ("A__consumer_offsets-7__00000000000000000000.log", "__consumer_offsets-7"),
    "B": ("B__consumer_offsets-12__00000000000000000000.log", "__consumer_offsets-12"),
}


def run(*args, input=None):
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


@pytest.fixture
def partition_dirs(tmp_path, monkeypatch):
    """The shared segments laid out as a broker does: <topic>-<N>/<20-digit base offset>.log."""
    out = {}
    for name, (file, dirname) in SEGMENTS.items():
        d = tmp_path / dirname
        d.mkdir()
        shutil.copy(VECTORS / "segments" / file, d / "00000000000000000000.log")
        (d / "00000000000000000000.index").write_bytes(b"\0" * 80)
        (d / "00000000000000000000.timeindex").write_bytes(b"\0" * 120)
        (d / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
        (d / "partition.metadata").write_text("version: 0\n")
        out[name] = d
    monkeypatch.chdir(tmp_path)
    return out


@pytest.mark.parametrize("name", ["A", "B"])
def test_dump_log_output_is_byte_for_byte_kafka_dump_log(partition_dirs, name):
    expected = (VECTORS / "segments" / f"{name}.dump_offsets_decoder.txt").read_text()
    rel = f"{SEGMENTS[name][1]}/00000000000000000000.log"
    result = run("decode-offsets", "-o", "dump-log", rel)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == expected if expected.endswith("\n") else expected + "\n"
    assert result.stderr == ""


def test_dump_log_of_a_partition_directory_names_each_segment(partition_dirs):
    result = run("decode-offsets", "-o", "dump-log", str(partition_dirs["B"]))
    assert result.exit_code == 0
    first = result.stdout.splitlines()[0]
    assert first == f"Dumping {partition_dirs['B']}/00000000000000000000.log"


def _expected_state(kafka_vectors, name):
    vec = next(v for v in kafka_vectors if v["category"] == "segment" and v["name"] == f"segment {name}")
    return vec["expected"]["latest_state"]


@pytest.mark.parametrize("name", ["A", "B"])
def test_state_view_matches_expected_final_state(partition_dirs, kafka_vectors, name):
    result = run("decode-offsets", "--view", "state", "-o", "json", str(partition_dirs[name]))
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    expected = _expected_state(kafka_vectors, name)
    fields = ("offset", "leaderEpoch", "metadata", "commitTimestamp", "value_version", "record_offset")
    got = {}
    for c in doc["committed_offsets"]:
        got.setdefault(c["group"], {})[f"{c['topic']}-{c['partition']}"] = {k: c[k] for k in fields}
    want = expected["committed_offsets"]
    assert got == want
    groups = {r["key"]["group"]: r["offset"] for r in doc["records"] if r["type"] == "group_metadata"}
    assert groups == {g: v["record_offset"] for g, v in expected["groups_with_metadata"].items()}
    assert doc["open_transactions"] == []


def test_state_before_the_commit_marker_shows_the_transaction_open(partition_dirs):
    # Segment A: pid 4000 writes orders-0=500 / orders-1=600 at 15-16, a plain commit orders-1=650 at 17,
    # the COMMIT marker at 18.
    result = run("decode-offsets", "--view", "state", "-o", "json", "--until-offset", "17",
                 "--group", "txn-group", str(partition_dirs["A"]))
    doc = json.loads(result.stdout)
    assert [(c["topic"], c["partition"], c["offset"]) for c in doc["committed_offsets"]] == [("orders", 1, 650)]
    assert doc["open_transactions"] == [{"producer_id": 4000, "offsets": [
        {"group": "txn-group", "topic": "orders", "partition": 0, "offset": 500, "leaderEpoch": 0,
         "metadata": "", "commitTimestamp": 1700000000020, "expireTimestamp": None, "value_version": 3,
         "record_offset": 15},
        {"group": "txn-group", "topic": "orders", "partition": 1, "offset": 600, "leaderEpoch": 0,
         "metadata": "", "commitTimestamp": 1700000000020, "expireTimestamp": None, "value_version": 3,
         "record_offset": 16}]}]


def test_until_time_cuts_by_record_timestamp(partition_dirs):
    result = run("decode-offsets", "--view", "state", "-o", "json", "--until-time", "1700000000000",
                 str(partition_dirs["A"]))
    doc = json.loads(result.stdout)
    assert [(c["group"], c["partition"], c["offset"]) for c in doc["committed_offsets"]] == [("my-group", 0, 100)]
    iso = run("decode-offsets", "--view", "state", "-o", "json", "--until-time", "2023-11-14T22:13:20Z",
              str(partition_dirs["A"]))
    assert json.loads(iso.stdout) == doc


def test_jsonl_contract(partition_dirs):
    result = run("decode-offsets", "-o", "jsonl", str(partition_dirs["A"]))
    assert result.exit_code == 0
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(rows) == 27
    first = rows[0]
    assert first == {
        "offset": 0, "timestamp": 1700000000000, "type": "offset_commit", "key_version": 1,
        "key": {"group": "my-group", "topic": "orders", "partition": 0}, "value_version": 3,
        "value": {"offset": 100, "leaderEpoch": 0, "metadata": "", "commitTimestamp": 1700000000000},
        "producer_id": -1, "transactional": False, "partition": 7,
        "file": str(partition_dirs["A"] / "00000000000000000000.log")}
    gm = rows[2]
    assert gm["type"] == "group_metadata" and gm["key_version"] == 2
    member = gm["value"]["members"][0]
    assert member["groupInstanceId"] is None
    assert member["assignment"] == {"assignedPartitions": [{"topic": "orders", "partitions": [0, 1]}],
                                    "userData": None}
    controls = [r for r in rows if r["type"] == "control"]
    assert [(c["offset"], c["marker"], c["producer_id"], c["coordinatorEpoch"]) for c in controls] == [
        (18, "COMMIT", 4000, 5), (20, "ABORT", 4001, 5)]
    tomb = next(r for r in rows if r["offset"] == 21)
    assert tomb["value"] is None and tomb["value_version"] is None
    txn = next(r for r in rows if r["offset"] == 15)
    assert txn["transactional"] is True and txn["producer_id"] == 4000


def test_json_and_csv_carry_the_same_records(partition_dirs):
    jl = [json.loads(x) for x in run("decode-offsets", "-o", "jsonl", str(partition_dirs["B"])).stdout.splitlines()]
    js = json.loads(run("decode-offsets", "-o", "json", str(partition_dirs["B"])).stdout)
    assert js == jl
    csv_text = run("decode-offsets", "-o", "csv", str(partition_dirs["B"])).stdout
    lines = csv_text.splitlines()
    assert lines[0].startswith("file,partition,offset,timestamp,type")
    assert len(lines) == 1 + len(jl)


def test_filters(partition_dirs):
    out = run("decode-offsets", "-o", "jsonl", "--group", "*zip*", str(partition_dirs["A"])).stdout
    rows = [json.loads(x) for x in out.splitlines()]
    assert {r["key"]["group"] for r in rows} == {"gzip-group"}
    assert [r["offset"] for r in rows] == [3, 4, 5, 22]
    out = run("decode-offsets", "-o", "jsonl", "--type", "group_metadata", str(partition_dirs["A"])).stdout
    assert [json.loads(x)["offset"] for x in out.splitlines()] == [2, 22]
    out = run("decode-offsets", "-o", "jsonl", "--type", "control", str(partition_dirs["A"])).stdout
    assert [json.loads(x)["marker"] for x in out.splitlines()] == ["COMMIT", "ABORT"]
    out = run("decode-offsets", "-o", "jsonl", "--type", "2", str(partition_dirs["A"])).stdout
    assert [json.loads(x)["offset"] for x in out.splitlines()] == [2, 22]
    bad = run("decode-offsets", "--type", "nope", str(partition_dirs["A"]))
    assert bad.exit_code == 2 and "unknown record type" in bad.stderr
    for empty in ("", ",", " , "):          # `--type "$TYPES"` with nothing in it is not "every type"
        bad = run("decode-offsets", "--type", empty, str(partition_dirs["A"]))
        assert (bad.exit_code, bad.stdout) == (2, "")
        assert bad.stderr == f"kgroup decode-offsets: Invalid value for --type: {empty!r} names no record type\n"


def test_table_is_the_terminal_default_and_state_table_lists_members(partition_dirs):
    out = run("decode-offsets", "-o", "table", "--view", "state", str(partition_dirs["A"])).stdout
    assert "GROUPS" in out and "MEMBERS" in out and "COMMITTED OFFSETS" in out
    assert "my-group" in out and "orders:0,1" in out and "DYNAMIC" in out


def test_stdin_needs_nothing_but_bytes():
    data = (VECTORS / "segments" / SEGMENTS["A"][0]).read_bytes()
    result = run("decode-offsets", "-o", "jsonl", "--family", "consumer", "-", input=data)
    assert result.exit_code == 0, result.stderr
    assert len(result.stdout.splitlines()) == 27


@pytest.mark.parametrize("args", [["-o", "jsonl"], ["-o", "dump-log"], ["--view", "state", "-o", "json"]])
def test_empty_stdin_is_reported_as_an_empty_file_named_on_the_command_line_is(tmp_path, args):
    """`ssh broker cat wrong/path | kgroup decode-offsets -` must not look like a partition with nothing in it."""
    empty = tmp_path / "__consumer_offsets-1.log"
    empty.write_bytes(b"")
    for path, message in (("-", "-: empty input"), (str(empty), f"{empty}: empty file")):
        result = run("decode-offsets", *args, path, input=b"")
        assert result.exit_code == 1
        assert result.stderr.splitlines() == [f"kgroup decode-offsets: {message}: no record batch to decode",
                                              "kgroup decode-offsets: 1 problem; 0 records decoded from 0 batches"]


def test_empty_segments_named_by_a_glob_beside_full_ones_are_read_as_found_ones_are(partition_dirs, tmp_path):
    """`kgroup decode-offsets __consumer_offsets-*/*.log`: fresh partitions' empty active segments are
    normal, not problems (exit 0); only when nothing named holds a byte is each one said (exit 1)."""
    fresh = [tmp_path / f"__consumer_offsets-{n}" / "00000000000000000000.log" for n in (1, 2)]
    for path in fresh:
        path.parent.mkdir()
        path.write_bytes(b"")
    full = str(partition_dirs["A"] / "00000000000000000000.log")
    result = run("decode-offsets", "-o", "jsonl", str(fresh[0]), full, str(fresh[1]))
    assert (result.exit_code, result.stderr, len(result.stdout.splitlines())) == (0, "", 27)
    dump = run("decode-offsets", "-o", "dump-log", str(fresh[0]), full).stdout.splitlines()
    assert dump[:3] == [f"Dumping {fresh[0]}", "Log starting offset: 0", f"Dumping {full}"]  # as kafka-dump-log
    alone = run("decode-offsets", "-o", "jsonl", *map(str, fresh))
    assert alone.exit_code == 1 and alone.stderr.splitlines() == [
        *(f"kgroup decode-offsets: {p}: empty file: no record batch to decode" for p in fresh),
        "kgroup decode-offsets: 2 problems; 0 records decoded from 0 batches"]


def test_missing_path_is_one_clear_line_and_exit_1(tmp_path):
    result = run("decode-offsets", str(tmp_path / "nope.log"))
    assert result.exit_code == 1
    assert "nope.log" in result.stderr and "Traceback" not in result.stderr


def test_directory_without_segments_is_an_error(tmp_path):
    d = tmp_path / "__consumer_offsets-3"
    d.mkdir()
    (d / "00000000000000000000.index").write_bytes(b"")
    result = run("decode-offsets", "-o", "jsonl", str(d))
    assert result.exit_code == 1
    assert str(d) in result.stderr


def test_one_missing_path_among_good_ones_is_partial(partition_dirs, tmp_path):
    result = run("decode-offsets", "-o", "jsonl", str(partition_dirs["B"]), str(tmp_path / "gone"))
    assert result.exit_code == 3
    assert len(result.stdout.splitlines()) == 13


def _damaged_copy(tmp_path, name, mutate):
    d = tmp_path / "damaged" / SEGMENTS[name][1]
    d.mkdir(parents=True)
    data = bytearray((VECTORS / "segments" / SEGMENTS[name][0]).read_bytes())
    mutate(data)
    path = d / "00000000000000000000.log"
    path.write_bytes(bytes(data))
    return path


def test_bad_crc_is_reported_with_file_and_position_and_decoding_goes_on(tmp_path):
    # Flip a byte inside the second batch of A (position 171, size 207): its CRC no longer matches.
    path = _damaged_copy(tmp_path, "A", lambda b: b.__setitem__(171 + 100, b[171 + 100] ^ 0x01))
    result = run("decode-offsets", "-o", "jsonl", str(path))
    assert result.exit_code == 3
    assert f"{path}: byte 171" in result.stderr and "CRC" in result.stderr
    offsets = [json.loads(x)["offset"] for x in result.stdout.splitlines()]
    assert 26 in offsets and 0 in offsets  # batches before and after still decoded
    dump = run("decode-offsets", "-o", "dump-log", str(path))
    assert "position: 171 CreateTime: 1700000000002 size: 207 magic: 2 compresscodec: none crc: 868927818 " \
           "isvalid: false" in dump.stdout


def test_partial_batch_at_the_end_is_reported_as_kafka_dump_log_does(tmp_path):
    path = _damaged_copy(tmp_path, "A", lambda b: b.__delitem__(slice(len(b) - 10, len(b))))
    result = run("decode-offsets", "-o", "dump-log", str(path))
    assert result.stdout.rstrip("\n").splitlines()[-1] == "Found 86 invalid bytes at the end of " \
                                                           "00000000000000000000.log"
    assert result.exit_code == 3


def test_strict_stops_at_the_first_problem(tmp_path):
    path = _damaged_copy(tmp_path, "A", lambda b: b.__setitem__(171 + 100, b[171 + 100] ^ 0x01))
    result = run("decode-offsets", "-o", "jsonl", "--strict", str(path))
    assert result.exit_code == 1
    assert "--strict" in result.stderr
    assert [json.loads(x)["offset"] for x in result.stdout.splitlines()] == [0, 1]


def test_dump_log_refuses_filters(partition_dirs):
    result = run("decode-offsets", "-o", "dump-log", "--group", "x", str(partition_dirs["A"]))
    assert result.exit_code == 2


def test_root_help_lists_commands_and_version():
    result = run("--help")
    assert "decode-offsets" in result.stdout
    assert run("--version").stdout.startswith("kgroup, version ")


def _write_log(path, records):
    from kgroup.records.writer import LogWriter

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        LogWriter(f).append(records, timestamp=1700000000000)


def test_family_comes_from_the_directory_and_is_never_guessed(tmp_path):
    from kgroup.records import encode_key, encode_value

    records = [(encode_key(3, {"groupId": "workers"}, "connect"), encode_value(3, 0, {"epoch": 4}, "connect")),
               (encode_key(8, {"groupId": "workers"}, "connect"),
                encode_value(8, 0, {"configurations": [{"name": "k", "value": "v"}]}, "connect"))]
    connect = tmp_path / "__worker_offsets-0" / "00000000000000000000.log"
    _write_log(connect, records)
    rows = [json.loads(x) for x in run("decode-offsets", "-o", "jsonl", str(connect)).stdout.splitlines()]
    assert [r["type"] for r in rows] == ["connect_worker_group_metadata", "connect_worker_group_configuration"]
    assert rows[1]["value"] == {"configurations": [{"name": "k", "value": "v"}]}

    loose = tmp_path / "copy" / "segment.log"  # nothing in the path names the topic
    _write_log(loose, records)
    result = run("decode-offsets", "-o", "jsonl", str(loose))
    assert result.exit_code == 1  # nothing could be decoded
    assert "--family" in result.stderr
    rows = [json.loads(x) for x in result.stdout.splitlines()]
    assert [r["type"] for r in rows] == ["error", "error"]
    ok = run("decode-offsets", "-o", "jsonl", "--family", "connect", str(loose))
    assert ok.exit_code == 0
    assert [json.loads(x)["type"] for x in ok.stdout.splitlines()] == [
        "connect_worker_group_metadata", "connect_worker_group_configuration"]


def test_unknown_type_zero_length_value_and_bad_version_are_reported_not_skipped(tmp_path):
    from kgroup.records import encode_key

    key = encode_key(1, {"group": "g", "topic": "t", "partition": 0})
    records = [(b"\x7f\xff\x00\x01g", b"\x00\x00"),          # unknown record type 32767
               (key, b""),                                     # zero-length value (not a tombstone)
               (key, b"\x00\x09" + b"\x00" * 22),              # value version 9: out of range
               (key, None)]                                    # a real tombstone
    path = tmp_path / "__consumer_offsets-1" / "00000000000000000000.log"
    _write_log(path, records)
    result = run("decode-offsets", "-o", "jsonl", str(path))
    assert result.exit_code == 3
    rows = [json.loads(x) for x in result.stdout.splitlines()]
    assert [r["type"] for r in rows] == ["error", "error", "error", "offset_commit"]
    assert rows[0]["error"] == "Unknown record type 32767 at offset 0, skipping."
    assert rows[0]["key_hex"] == "7fff000167" and rows[0]["value_hex"] == "0000"
    assert "Could not read version from value's buffer" in rows[1]["error"]
    assert "version: 9" in rows[2]["error"]
    for offset in (0, 1, 2):
        assert f"{path}: byte 0: offset {offset}: " in result.stderr
    assert "3 problems" in result.stderr
    dump = run("decode-offsets", "-o", "dump-log", str(path)).stdout.splitlines()
    assert dump[3].endswith("key: Unknown record type 32767 at offset 0, skipping.")
    assert "key: Error at offset 1, skipping. Could not read version from value's buffer." in dump[4]


def _connect_records():
    from kgroup.records import encode_key, encode_value

    return [(encode_key(3, {"groupId": "workers"}, "connect"), encode_value(3, 0, {"epoch": 4}, "connect")),
            (encode_key(8, {"groupId": "workers"}, "connect"),
             encode_value(8, 0, {"configurations": [{"name": "k", "value": "v"}]}, "connect"))]


def test_table_shows_connect_values_with_the_connect_schema(tmp_path):
    path = tmp_path / "__worker_offsets-0" / "00000000000000000000.log"
    _write_log(path, _connect_records())
    result = run("decode-offsets", "-o", "table", str(path))
    assert result.exit_code == 0, result.stderr
    line = next(x for x in result.stdout.splitlines() if "connect_worker_group_configuration" in x)
    assert line.endswith('{"configurations":[{"name":"k","value":"v"}]}')


def test_a_log_dir_reads_only_the_coordinator_topics(partition_dirs, tmp_path):
    other = tmp_path / "orders-0"
    other.mkdir()
    (other / "00000000000000000000.log").write_bytes(b"application data, not a coordinator log")
    result = run("decode-offsets", "-o", "jsonl", str(tmp_path))
    assert result.exit_code == 0, result.stderr
    files = {json.loads(x)["file"] for x in result.stdout.splitlines()}
    assert files == {str(partition_dirs[n] / "00000000000000000000.log") for n in ("A", "B")}


def test_bad_until_time_is_a_usage_error(partition_dirs):
    result = run("decode-offsets", "--until-time", "yesterday", str(partition_dirs["A"]))
    assert result.exit_code == 2
    assert "--until-time" in result.stderr and "Traceback" not in result.stderr


def test_family_that_contradicts_the_path_wins_with_a_note(tmp_path):
    path = tmp_path / "__worker_offsets-0" / "00000000000000000000.log"
    _write_log(path, _connect_records())
    result = run("decode-offsets", "-o", "jsonl", "--family", "consumer", str(path))
    assert "the path names __worker_offsets but --family consumer was given" in result.stderr
    assert json.loads(result.stdout.splitlines()[0])["type"] == "consumer_group_metadata"
    same = run("decode-offsets", "-o", "jsonl", "--family", "connect", str(path))
    assert same.exit_code == 0 and "note" not in same.stderr


class _Tty:
    def __init__(self, tty):
        self.tty = tty
        self.text = []

    def isatty(self):
        return self.tty

    def write(self, text):
        self.text.append(text)

    def flush(self):
        pass


def test_progress_default_and_clearing(monkeypatch):
    import sys

    from kgroup.decode import run as decode_run
    from kgroup.writers import Progress

    for out_tty, err_tty, view, expected in [(False, True, "records", True), (True, True, "records", False),
                                             (True, True, "state", True), (False, False, "state", False)]:
        monkeypatch.setattr(sys, "stdout", _Tty(out_tty))
        monkeypatch.setattr(sys, "stderr", _Tty(err_tty))
        assert decode_run.default_progress(view) is expected
    err = _Tty(True)
    monkeypatch.setattr(sys, "stderr", err)
    meter = Progress(0, "decoding")  # stdin: size unknown, so no percentage
    meter.update(2_000_000, 10)
    assert "%" not in err.text[-1] and "2.0 MB" in err.text[-1]
    meter.clear()
    assert err.text[-1] == "\r\033[K" and not meter.shown
    meter.clear()  # nothing shown: nothing written
    assert len(err.text) == 2


def test_problem_reports_clear_the_progress_line(tmp_path, monkeypatch):
    import sys

    from kgroup.decode import run as decode_run
    from kgroup.writers import Progress

    path = _damaged_copy(tmp_path, "A", lambda b: b.__setitem__(171 + 100, b[171 + 100] ^ 0x01))
    events = []
    real_clear = Progress.clear

    def clear(self):
        events.append("clear")
        real_clear(self)

    class Recorder:
        def __init__(self, name):
            self.name = name

        def write(self, text):
            if not text.startswith("\r"):  # the meter's own redraws
                events.append((self.name, text))

        def flush(self):
            pass

        def isatty(self):
            return False

    monkeypatch.setattr(Progress, "clear", clear)
    monkeypatch.setattr(sys, "stdout", Recorder("out"))
    monkeypatch.setattr(sys, "stderr", Recorder("err"))
    code = decode_run.decode([str(path)], output="jsonl", view="records", family=None, groups=[], topics=[],
                             types=[], until_offset=None, until_time=None, strict=False, progress=True)
    assert code == 3
    crc = next(i for i, e in enumerate(events) if isinstance(e, tuple) and "CRC-32C" in e[1])
    assert events[crc - 1] == "clear"


def test_state_csv_carries_the_latest_records_too(partition_dirs):
    import csv
    import io

    text = run("decode-offsets", "--view", "state", "-o", "csv", str(partition_dirs["A"])).stdout
    rows = list(csv.DictReader(io.StringIO(text)))
    records = [r for r in rows if r["status"] == "record"]
    assert [(r["type"], r["group"], r["record_offset"]) for r in records] == [("group_metadata", "my-group", "2")]
    assert json.loads(records[0]["value"])["members"][0]["memberId"] == "m1"
    assert sum(r["status"] == "committed" for r in rows) == 17


def test_consumer_group_regular_expression_records_are_shown(tmp_path):
    from kgroup.records import encode_key, encode_value

    key = encode_key(16, {"groupId": "g", "regularExpression": "foo.*"})
    value = encode_value(16, 0, {"topics": ["foo", "food"], "version": 42, "timestamp": 1000})
    path = tmp_path / "__consumer_offsets-1" / "00000000000000000000.log"
    _write_log(path, [(key, value), (key, None)])
    result = run("decode-offsets", "-o", "jsonl", str(path))
    assert result.exit_code == 0, result.stderr
    rows = [json.loads(x) for x in result.stdout.splitlines()]
    assert [r["type"] for r in rows] == ["consumer_group_regular_expression"] * 2
    dump = run("decode-offsets", "-o", "dump-log", str(path)).stdout
    assert "foo.*" in dump and "food" in dump
    for spelling in ("consumer_group_regular_expression", "16"):   # --type knows every schema's type
        only = run("decode-offsets", "-o", "jsonl", "--type", spelling, str(path))
        assert only.exit_code == 0, only.stderr
        assert len(only.stdout.splitlines()) == 2


def test_an_out_dir_that_cannot_be_created_is_one_line_exit_1(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    segment = VECTORS / "segments" / "B__consumer_offsets-12__00000000000000000000.log"
    result = run("decode-offsets", "--engine", "local", "-o", "jsonl", "--out", str(blocker / "sub"),
                 str(segment))
    assert result.exit_code == 1
    assert result.stderr.strip().count("\n") == 0 and "--out" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_interrupted_out_run_leaves_no_partial_file_and_a_finished_one_its_file(tmp_path, monkeypatch):
    from kgroup.decode import run as local

    segment = str(VECTORS / "segments" / "A__consumer_offsets-7__00000000000000000000.log")
    done = tmp_path / "done"
    assert run("decode-offsets", "-o", "csv", "--out", str(done), segment).exit_code == 0
    assert sorted(p.name for p in done.iterdir()) == ["part-00000.csv"]       # no hidden file left
    assert len((done / "part-00000.csv").read_text().splitlines()) == 28

    batches = []
    real_batch = local.RowSink.batch

    def interrupted_at_the_third_batch(self, batch, rows):
        batches.append(batch)
        if len(batches) == 3:
            raise KeyboardInterrupt
        real_batch(self, batch, rows)

    monkeypatch.setattr(local.RowSink, "batch", interrupted_at_the_third_batch)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["decode-offsets", "-o", "csv", "--out", str(out), segment])
    assert result.exit_code == 130 and result.stderr == "kgroup decode-offsets: interrupted\n"
    assert not out.exists()         # not a part-00000.csv cut after two batches that looks complete


def test_a_reader_that_goes_away_ends_the_output_with_exit_0(tmp_path):
    """`kgroup decode-offsets ... | head -1` in every format: exit 0, nothing on stderr."""
    import subprocess
    import sys

    segment = str(VECTORS / "segments" / SEGMENTS["A"][0])
    for args in (["-o", "jsonl"], ["-o", "table"], ["-o", "dump-log"], ["--view", "state", "-o", "json"]):
        proc = subprocess.Popen([sys.executable, "-m", "kgroup.commands.cli", "decode-offsets", *args, segment],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        proc.stdout.close()
        err = proc.stderr.read()
        assert (proc.wait(timeout=60), err) == (0, b""), args


def test_state_replays_a_partitions_segments_in_log_order_whatever_order_they_are_named_in(tmp_path):
    """Kafka loads a partition from its first segment to its last; naming 100.log before 0.log (or
    a segment twice) must not make an older commit win."""
    from kgroup.records import encode_key, encode_value
    from kgroup.records.writer import encode_batch

    part = tmp_path / "__consumer_offsets-9"
    part.mkdir()
    key = encode_key(1, {"group": "g", "topic": "t", "partition": 0})

    def commit(offset, at):
        value = encode_value(1, 3, {"offset": offset, "leaderEpoch": 0, "metadata": "", "commitTimestamp": at})
        return encode_batch([(key, value, at)], base_offset=offset)

    (part / "00000000000000000000.log").write_bytes(commit(1, 1700000000001))
    (part / "00000000000000000100.log").write_bytes(commit(100, 1700000000100))
    later, earlier = str(part / "00000000000000000100.log"), str(part / "00000000000000000000.log")
    for paths in ([later, earlier], [later, str(part), earlier]):
        state = run("decode-offsets", "--view", "state", "-o", "json", *paths)
        assert [(o["offset"], o["record_offset"]) for o in json.loads(state.stdout)["committed_offsets"]] == [
            (100, 100)], paths
        view = run("describe", *sum((["--from-dump", p] for p in paths), []), "g", "-o", "json")
        assert [(o["partition"], o["committed"]) for o in json.loads(view.stdout)[0]["offsets"]] == [(0, 100)]
    records = run("decode-offsets", "-o", "jsonl", later, earlier)      # records: in the order named
    assert [json.loads(line)["offset"] for line in records.stdout.splitlines()] == [100, 1]


def test_engine_auto_says_sizes_in_the_binary_units_they_are_given_in():
    """--spark-threshold 1g is 1.0 GiB (the note said 1.07 GB), and a small input is not 0.0 MB; without
    --spark-threshold the note gives the cost model's estimates (engine_choice)."""
    segment = str(VECTORS / "segments" / SEGMENTS["A"][0])
    result = run("decode-offsets", "--engine", "auto", "--spark-threshold", "1g", "-o", "jsonl", segment)
    assert result.exit_code == 0
    assert result.stderr == ("kgroup decode-offsets: note: --engine auto: decoding locally (2.1 KiB of input is "
                             "below the Spark threshold of 1.0 GiB, see --spark-threshold)\n")
    result = run("decode-offsets", "--engine", "auto", "-o", "jsonl", segment)
    assert result.exit_code == 0
    assert result.stderr.startswith("kgroup decode-offsets: note: --engine auto: decoding locally (2.1 KiB of "
                                    "input: about 0.0 s on the local engine, ")
    assert " on Spark local[*] with " in result.stderr and result.stderr.endswith("; see --spark-threshold)\n")
