"""`decode-offsets --engine spark` on local Spark (one session for the whole run): stdout, stderr and
exit status identical to the local engine for records and state, on generated dumps with transactions
whose markers fall in other ranges, tombstones, mixed codecs and damage; Parquet and JSONL under --out."""

import contextlib
import json
import os
import shutil

import pytest
from click.testing import CliRunner

from kgroup.commands.cli import cli
from kgroup.decode.render import COLUMNS
from kgroup.decode.spark.session import unavailable_reason
from decode.test_decode_state import write_shadowing_dump
from decode.test_spark_plan import BASE_TS, damage, damage_length, write_mixed_dump

REASON = unavailable_reason()
pytestmark = [pytest.mark.spark, pytest.mark.skipif(REASON is not None, reason=f"Spark unavailable: {REASON}")]
SPLIT = "700"  # bytes: dozens of ranges per file, transactions' markers in other ranges than their data


@pytest.fixture(scope="session")
def spark():
    from kgroup.decode.spark.session import get_session, jvm_log_file

    session, created = get_session("local[2]", {"spark.sql.shuffle.partitions": "2",
                                                 "spark.default.parallelism": "2"})
    yield session
    if created:
        session.stop()
        with contextlib.suppress(OSError):
            os.remove(jvm_log_file())


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    """A clean log dir (two partitions, one with two segments) and a damaged copy."""
    root = tmp_path_factory.mktemp("spark-dumps")
    clean = root / "clean"
    for part, segments in ((3, [(0, 3, 150), (100000, 4, 60)]), (9, [(0, 9, 150)])):
        d = clean / f"__consumer_offsets-{part}"
        d.mkdir(parents=True)
        for start, seed, rounds in segments:
            write_mixed_dump(d / f"{start:020d}.log", seed=seed, rounds=rounds, start_offset=start)
    damaged = root / "damaged"
    shutil.copytree(clean, damaged)
    damage(damaged / "__consumer_offsets-9" / "00000000000000000000.log")
    damage_length(damaged / "__consumer_offsets-3" / "00000000000000000000.log")  # read on past it
    return {"clean": str(clean), "damaged": str(damaged)}


def run(*args):
    return CliRunner().invoke(cli, ["decode-offsets", *args], catch_exceptions=False)


def both(*args):
    local = run(*args)
    spark = run("--engine", "spark", "--split-size", SPLIT, *args)
    return local, spark


def assert_same(local, spark):
    assert spark.exit_code == local.exit_code
    assert spark.stderr == local.stderr
    assert spark.stdout == local.stdout


@pytest.mark.parametrize("output", ["jsonl", "json", "csv", "table"])
def test_records_match_the_local_engine(spark, dumps, output):
    local, remote = both("-o", output, dumps["clean"])
    assert local.exit_code == 0 and local.stderr == ""
    assert_same(local, remote)
    if output == "jsonl":
        rows = [json.loads(line) for line in remote.stdout.splitlines()]
        types = {r["type"] for r in rows}
        assert {"offset_commit", "group_metadata", "consumer_group_metadata", "control"} <= types
        assert any(r["type"] == "offset_commit" and r["value"] is None for r in rows)  # tombstones
        assert any(r.get("transactional") for r in rows)


@pytest.mark.parametrize("output", ["json", "jsonl", "csv", "table"])
def test_state_matches_the_local_engine(spark, dumps, output):
    local, remote = both("--view", "state", "-o", output, dumps["clean"])
    assert local.exit_code == 0
    assert_same(local, remote)
    if output == "json":
        doc = json.loads(remote.stdout)
        assert doc["committed_offsets"] and doc["records"]
        assert 1003 in [t["producer_id"] for t in doc["open_transactions"]]  # never ends


@pytest.mark.parametrize("view", ["records", "state"])
def test_problems_are_reported_as_the_local_engine_does(spark, dumps, view):
    local, remote = both("--view", view, "-o", "jsonl", dumps["damaged"])
    assert local.exit_code == 3
    lines = local.stderr.splitlines()
    assert len(lines) == 6 and "byte " in lines[0] and lines[-1].startswith("kgroup decode-offsets: 5 problems;")
    assert " skipped: batch length 268440375 exceeds the file; resumed at byte " in lines[0]
    assert_same(local, remote)


def test_a_value_that_does_not_decode_keeps_the_earlier_write_as_locally(spark, tmp_path):
    """A key's latest record whose value does not decode changes nothing on either engine: both keep
    the key's earlier good commit (collapsing read the range or run again), report the value once, exit 3."""
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_shadowing_dump(path, "later batch")
    for split in ("1m", "100"):  # the good and the bad write in one range, in two
        local = run("--view", "state", "-o", "json", str(path))
        remote = run("--engine", "spark", "--split-size", split, "--view", "state", "-o", "json", str(path))
        assert local.exit_code == 3 and len(local.stderr.splitlines()) == 2
        assert [(c["partition"], c["offset"]) for c in json.loads(local.stdout)["committed_offsets"]] == [(0, 7), (1, 8)]
        assert_same(local, remote)


def test_strict_stops_at_the_same_problem(spark, dumps):
    local, remote = both("--strict", "-o", "jsonl", dumps["damaged"])
    assert local.exit_code == 1
    assert local.stderr.splitlines()[-1] == "kgroup decode-offsets: stopped at the first problem (--strict)"
    assert_same(local, remote)


@pytest.mark.parametrize("args", [
    ("--until-offset", "57"),
    ("--until-time", str(BASE_TS + 2500)),
    ("--group", "grp-1", "--group", "grp-3"),
    ("--type", "offset_commit,control", "--topic", "ord*"),
])
def test_cut_offs_and_filters_match(spark, dumps, args):
    for view in ("records", "state"):
        local, remote = both("--view", view, "-o", "json", *args, dumps["clean"])
        assert local.exit_code == 0
        assert_same(local, remote)


def test_a_partition_directory_and_a_single_file_match(spark, dumps):
    part = os.path.join(dumps["clean"], "__consumer_offsets-3")
    assert_same(*both("--view", "state", "-o", "json", part))
    assert_same(*both("-o", "jsonl", os.path.join(part, "00000000000000100000.log")))


def test_parquet_under_out(spark, dumps, tmp_path):
    out = tmp_path / "pq"
    result = run("--engine", "spark", "--split-size", SPLIT, "--out", str(out), dumps["clean"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "" and result.stderr == ""
    local = [json.loads(line) for line in run("-o", "jsonl", dumps["clean"]).stdout.splitlines()]
    df = spark.read.parquet(str(out))
    assert df.columns == [c[0] for c in COLUMNS]
    rows = sorted((r.asDict() for r in df.collect()), key=lambda r: (r["file"], r["offset"]))
    assert len(rows) == len(local)
    by_place = {(r["file"], r["offset"]): r for r in local}
    for row in rows:
        want = by_place[(row["file"], row["offset"])]
        assert (row["type"], row["timestamp"], row["partition"]) == (want["type"], want["timestamp"],
                                                                     want["partition"])
        if want["type"] == "offset_commit":
            key, value = want["key"], want["value"]
            assert (row["group"], row["topic"], row["topic_partition"]) == (key["group"], key["topic"],
                                                                           key["partition"])
            assert row["tombstone"] is (value is None)
            if value is not None:
                assert (row["committed_offset"], row["leader_epoch"], row["commit_timestamp"]) == (
                    value["offset"], value.get("leaderEpoch", -1), value["commitTimestamp"])
        elif want["type"] == "group_metadata" and want["value"] is not None:
            assert row["generation"] == want["value"]["generation"]
            assert json.loads(row["value_json"]) == want["value"]
        elif want["type"] == "control":
            assert (row["marker"], row["producer_id"]) == (want["marker"], want["producer_id"])


def test_jsonl_under_out_and_problems_from_the_tasks(spark, dumps, tmp_path):
    out = tmp_path / "jl"
    result = run("--engine", "spark", "--split-size", SPLIT, "-o", "jsonl", "--out", str(out), dumps["damaged"])
    local = run("-o", "jsonl", dumps["damaged"])
    assert result.exit_code == 3
    assert result.stderr == local.stderr
    parts = sorted(p for p in os.listdir(out) if p.startswith("part-"))
    text = "".join((out / p).read_text() for p in parts)
    assert text == local.stdout


def test_out_must_be_new(spark, dumps, tmp_path):
    (tmp_path / "x").write_text("")
    result = run("--engine", "spark", "--out", str(tmp_path), dumps["clean"])
    assert result.exit_code == 2  # a usage error, as the issue asks
    assert "directory exists and is not empty" in result.stderr


def test_auto_uses_spark_above_the_threshold(spark, dumps):
    result = run("--engine", "auto", "--spark-threshold", "1k", "--split-size", SPLIT, "--view", "state",
                 "-o", "json", dumps["clean"])
    assert result.exit_code == 0
    assert result.stderr.startswith("kgroup decode-offsets: note: --engine auto: decoding with Spark (")
    assert result.stdout == run("--view", "state", "-o", "json", dumps["clean"]).stdout


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_spark_writers_as_used_on_a_cluster(spark, dumps, tmp_path, fmt):
    """direct=False: Spark's own Parquet/text writers (what a non-local master uses) give the same rows."""
    from kgroup.decode.decoder import ProblemLog
    from kgroup.decode.inputs import RowFilter, resolve_inputs
    from kgroup.decode.spark.engine import ReadOptions, write_output
    from kgroup.decode.spark.plan import plan_tasks

    tasks = plan_tasks(resolve_inputs([dumps["damaged"]], None, ProblemLog()), 700)
    out = str(tmp_path / fmt)
    summaries = write_output(spark, tasks, ReadOptions(row_filter=RowFilter()), out, fmt, direct=False)
    assert sorted(summaries) == [t.seq for t in tasks]
    assert sum(len(s.problems) for s in summaries.values()) == 5
    local = run("-o", "jsonl", dumps["damaged"]).stdout.splitlines()
    if fmt == "jsonl":
        assert sorted(spark.sparkContext.textFile(out).collect()) == sorted(local)
    else:
        got = sorted((r.file, r.offset, r.type) for r in spark.read.parquet(out).collect())
        want = sorted((d["file"], d["offset"], d["type"]) for d in map(json.loads, local))
        assert got == want


def test_a_failed_job_is_reported_by_its_python_error():
    from kgroup.decode.spark.driver import spark_error_text

    trace = ("An error occurred while calling o42.collectAndServe.\n"
             ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 3 in stage 1.0 failed\n"
             "Traceback (most recent call last):\n"
             "  File \"/x/worker.py\", line 1, in main\n"
             "PermissionError: [Errno 13] Permission denied: '/data/__consumer_offsets-3/00000000000000000000.log'\n"
             "\tat org.apache.spark.api.python.BasePythonRunner.handlePythonException(PythonRunner.scala:1)\n")
    assert spark_error_text(Exception(trace)) == (
        "PermissionError: [Errno 13] Permission denied: '/data/__consumer_offsets-3/00000000000000000000.log'")
    assert spark_error_text(Exception("Connection refused\nmore")) == "Connection refused"


def test_rows_through_the_jvm_equal_rows_through_spool_files(spark, dumps, tmp_path):
    """Non-local masters send the rows through the JVM; local ones through spool files: same items."""
    from kgroup.decode.decoder import ProblemLog
    from kgroup.decode.inputs import RowFilter, resolve_inputs
    from kgroup.decode.spark.engine import ReadOptions, stream_items
    from kgroup.decode.spark.plan import plan_tasks

    tasks = plan_tasks(resolve_inputs([dumps["damaged"]], None, ProblemLog()), 2000)
    options = ReadOptions(row_filter=RowFilter())
    via_jvm = list(stream_items(spark, tasks, options, "jsonl"))
    via_files = list(stream_items(spark, tasks, options, "jsonl", spool=str(tmp_path)))
    assert via_jvm == via_files
    assert [kind for kind, _ in via_jvm].count("e") == len(tasks)
    assert [kind for kind, _ in via_jvm].count("p") == 5
    assert os.listdir(tmp_path) == []  # every spool file read and removed


def test_state_under_out_is_the_local_state(spark, dumps, tmp_path):
    out = tmp_path / "state"
    result = run("--engine", "spark", "--split-size", SPLIT, "--view", "state", "--out", str(out), dumps["clean"])
    assert result.exit_code == 0 and result.stdout == "" and result.stderr == ""
    assert os.listdir(out) == ["state.jsonl"]
    assert (out / "state.jsonl").read_text() == run("--view", "state", "-o", "jsonl", dumps["clean"]).stdout


def test_both_engines_fail_a_dump_in_which_no_record_decodes(tmp_path, spark):
    """Batches are read but every record is undecodable (truncated offset commit keys): problems and
    no decoded record is a failure on both engines, not a partial run."""
    from kgroup.records import encode_key
    from kgroup.records.writer import LogWriter

    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    path.parent.mkdir()
    records = [(encode_key(1, {"group": "g", "topic": "t", "partition": 0})[:5], b"\x00\x03")]
    with open(path, "wb") as f:
        for _ in range(3):
            LogWriter(f).append(records, timestamp=BASE_TS)
    for view in ("records", "state"):
        local, on_spark = both("-o", "jsonl", "--view", view, str(path))
        assert local.exit_code == on_spark.exit_code == 1, (view, local.stderr, on_spark.stderr)
        assert "0 records decoded" in local.stderr
        assert local.stdout == on_spark.stdout and local.stderr == on_spark.stderr


def test_a_file_that_is_not_an_offsets_partition_is_named_as_locally(spark, tmp_path):
    """A normal topic's segment (serve and a producer) and a text file: one line each, exit 1, as the
    local engine says it."""
    from decode.test_decode_not_offsets import NOT_OFFSETS, normal_topic_segment

    orders = normal_topic_segment(tmp_path)
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\nthis is not a log segment\n")
    for path in (orders, str(notes)):
        local, remote = both("-o", "jsonl", path)
        assert_same(local, remote)
        assert local.exit_code == 1 and local.stderr.count(NOT_OFFSETS) == 1, local.stderr
        assert len(local.stderr.splitlines()) == 2 and "Unknown record type" not in local.stderr


def test_share_group_state_is_replayed_in_full_as_locally(spark, tmp_path):
    """`__share_group_state` is not compacted: every ShareUpdate of every range counts (a range keeping
    the latest record per key would lose the earlier updates' acknowledgements)."""
    from decode.test_share_streams_offline import SHARE_STATE, T1, batch, write_partition

    updates = [(1, {"groupId": "sg", "topicId": T1.bytes, "partition": 0}, 0,
                {"snapshotEpoch": 1, "leaderEpoch": -1, "startOffset": -1, "deliveryCompleteCount": n,
                 "stateBatches": [batch(100 + 3 * n, 101 + 3 * n, 2 + n % 2, 1 + n % 3)]}) for n in range(40)]
    write_partition(tmp_path / "__share_group_state-0", SHARE_STATE + updates, family="share-state")
    for output in ("table", "json"):
        local, remote = both("--view", "state", "-o", output, str(tmp_path))
        assert local.exit_code == 0
        assert_same(local, remote)
    [p0, _p1] = json.loads(remote.stdout)["share_partitions"]
    assert p0["updates_since_snapshot"] == 42 and len(p0["batches"]) > 20
