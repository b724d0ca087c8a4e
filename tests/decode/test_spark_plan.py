"""The Spark engine's driver plan and task-side reading, without Spark: byte ranges cut at batch
boundaries, ranges read one by one equal to the local reader, and the per-range reduction + replay of
--view state equal to the local replay (transactions whose markers are in other ranges, tombstones,
mixed codecs, damaged batches)."""

import os
import random
import struct
from operator import itemgetter

import pytest
from hypothesis import HealthCheck, given, settings

from kgroup.records import encode_key, encode_value
from kgroup.records.batch import LOG_OVERHEAD
from kgroup.decode.decoder import ProblemLog
from kgroup.decode.inputs import Input, iter_input, resolve_inputs
from kgroup.records.segment import find_segments
from kgroup.decode.state import PartitionState, committed_offset
from kgroup.records.writer import LogWriter
from kgroup.decode.render import COLUMNS, ParquetRows
from kgroup.decode.spark.plan import plan_tasks, split_file
from kgroup.sizes import parse_size
from kgroup.decode.spark.reader import RangeReader
from kgroup.decode.spark.replay import kept_records, pack_range, pack_state, replay, unpack_state
from decode.test_fast_rows import dumps as random_dumps

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
BASE_TS = 1_700_000_000_000


def _commit_value(offset, ts, version=3):
    if version == 1:
        return encode_value(1, 1, {"offset": offset, "metadata": "m", "commitTimestamp": ts,
                                   "expireTimestamp": ts + 1000})
    return encode_value(1, version, {"offset": offset, "leaderEpoch": 4, "metadata": "",
                                     "commitTimestamp": ts})


def _group_value(group, generation, ts):
    return encode_value(2, 3, {"protocolType": "consumer", "generation": generation, "protocol": "range",
                               "leader": f"{group}-m0", "currentStateTimestamp": ts, "members": [
                                   {"memberId": f"{group}-m0", "groupInstanceId": f"{group}-i0",
                                    "clientId": "c", "clientHost": "/10.0.0.1", "rebalanceTimeout": 1000,
                                    "sessionTimeout": 45000, "subscription": b"", "assignment": b""}]})


def write_mixed_dump(path, *, seed=1, rounds=120, groups=4, partitions=3, start_offset=0):
    """A coordinator log with every replay rule in play, each batch with a randomly chosen codec:
    plain commits (key types 0 and 1 for the same partition), transactional commits of several
    producers whose COMMIT/ABORT markers come many batches later (some never), tombstones (some in
    transactional batches), group metadata upserts/tombstones and KIP-848 type 3 records."""
    rng = random.Random(seed)
    names = [f"grp-{g}" for g in range(groups)]
    open_txns: dict[int, int] = {}  # producer id -> rounds left before its marker
    ts = BASE_TS
    with open(path, "wb") as f:
        w = LogWriter(f, next_offset=start_offset)
        for r in range(rounds):
            ts += rng.randint(1, 50)
            codec = rng.choice(CODECS)
            group = rng.choice(names)
            p = rng.randrange(partitions)
            kind = rng.random()
            key_type = rng.choice((0, 1))
            key = encode_key(key_type, {"group": group, "topic": "orders", "partition": p})
            if kind < 0.35:
                rows = [(encode_key(1, {"group": group, "topic": "orders", "partition": q}),
                         _commit_value(rng.randint(0, 10**6), ts), ts) for q in range(partitions)]
                if rng.random() < 0.3:
                    rows.append((key, _commit_value(rng.randint(0, 10**6), ts, version=1 if key_type == 0
                                                    else 3), ts))
                w.append(rows, compression=codec)
            elif kind < 0.6:
                pid = rng.choice((1000, 1001, 1002, 1003))
                rows = [(encode_key(1, {"group": group, "topic": "orders", "partition": q}),
                         _commit_value(rng.randint(0, 10**6), ts), ts) for q in range(partitions)
                        if rng.random() < 0.7]
                if rows:
                    w.append(rows, compression=codec, producer_id=pid, producer_epoch=0, base_sequence=0,
                             transactional=True)
                    open_txns.setdefault(pid, rng.randint(3, 25))
            elif kind < 0.7:
                txn_pid = rng.choice((-1, 1000, 1001))
                opts = {} if txn_pid == -1 else dict(producer_id=txn_pid, producer_epoch=0, base_sequence=0,
                                                     transactional=True)
                w.append([(key, None, ts)], compression=codec, **opts)
            elif kind < 0.85:
                gkey = encode_key(2, {"group": group})
                value = None if rng.random() < 0.2 else _group_value(group, r, ts)
                w.append([(gkey, value, ts)], compression=codec)
            else:
                ckey = encode_key(3, {"groupId": group})
                value = None if rng.random() < 0.25 else encode_value(3, 0, {"epoch": r})
                w.append([(ckey, value, ts)], compression=codec)
            for pid in list(open_txns):
                open_txns[pid] -= 1
                if open_txns[pid] <= 0 and pid != 1003:  # 1003 never ends: an open transaction
                    del open_txns[pid]
                    w.append_control("COMMIT" if rng.random() < 0.7 else "ABORT", producer_id=pid,
                                     producer_epoch=0, coordinator_epoch=3, timestamp=ts)
    return path


def batch_positions(path):
    """(position, size) of every batch, by walking the length fields."""
    out = []
    data = open(path, "rb").read()
    pos = 0
    while pos + LOG_OVERHEAD <= len(data):
        (length,) = struct.unpack_from(">i", data, pos + 8)
        out.append((pos, LOG_OVERHEAD + length))
        pos += LOG_OVERHEAD + length
    return out


def damage(path):
    """A bad CRC in one batch, an undecodable record (unknown key type) and a partial batch at the end."""
    with open(path, "r+b") as f:
        batches = batch_positions(path)
        pos, size = batches[len(batches) // 3]
        f.seek(pos + size - 2)
        byte = f.read(1)
        f.seek(pos + size - 2)
        f.write(bytes([byte[0] ^ 0x55]))
    with open(path, "ab") as f:
        w = LogWriter(f, next_offset=10**6)
        w.append([(struct.pack(">h", 77) + b"junk", b"\x00\x00", BASE_TS)])
        f.write(b"\x00" * 10)  # a partial write


def damage_length(path, *where):
    """Batches' lengths overwritten (a quarter of a gigabyte; where: fractions of the batches, 0.5 by
    default): the readers search for the next whole batch. Returns their positions."""
    batches = batch_positions(path)
    positions = [batches[int(len(batches) * w)][0] for w in where or (0.5,)]
    with open(path, "r+b") as f:
        for pos in positions:
            f.seek(pos + 8)
            f.write(b"\x10\x00\x13\x37")
    return positions


@pytest.fixture
def log_dir(tmp_path):
    """Two partitions; partition 3 in two segments (the second starts after the first's last offset)."""
    p3 = tmp_path / "__consumer_offsets-3"
    p9 = tmp_path / "__consumer_offsets-9"
    p3.mkdir()
    p9.mkdir()
    write_mixed_dump(p3 / "00000000000000000000.log", seed=3, rounds=150)
    write_mixed_dump(p3 / "00000000000000100000.log", seed=4, rounds=60, start_offset=100000)
    write_mixed_dump(p9 / "00000000000000000000.log", seed=9, rounds=150)
    return tmp_path


def local_run(paths, until_offset=None, until_time=None):
    """What the local engine reads: problems (as text) and rows per input, plus the replayed state."""
    problems = ProblemLog()
    inputs = resolve_inputs(paths, None, problems)
    rows, states = [], {}
    for inp in inputs:
        state = states.setdefault((inp.segment.topic or inp.segment.path, inp.segment.partition),
                                  PartitionState())
        for batch, batch_rows in iter_input(inp, problems, until_offset=until_offset, until_time=until_time):
            rows.extend(batch_rows)
            if batch.crc_valid:
                for row in batch_rows:
                    state.apply(row)
    return inputs, [str(p) for p in problems.problems], rows, states


def range_run(inputs, split, until_offset=None, until_time=None):
    tasks = plan_tasks(inputs, split, until_offset)
    problems, rows, stopped = [], [], set()
    for task in tasks:
        if task.input_index in stopped:
            continue
        reader = RangeReader(task, until_offset, until_time)
        for _batch, batch_rows in reader:
            rows.extend(batch_rows)
        problems.extend(str(p) for p in reader.summary.problem_objects())
        if reader.summary.stops_file:
            stopped.add(task.input_index)
    return tasks, problems, rows


def spark_like_state(inputs, split, until_offset=None, until_time=None):
    tasks = plan_tasks(inputs, split, until_offset)
    grouped: dict = {}
    for task in tasks:
        reader = RangeReader(task, until_offset, until_time)
        grouped.setdefault(task.log_partition, []).append((task.seq, pack_range(task, kept_records(reader))))
    return {k: unpack_state(pack_state(replay(v))) for k, v in grouped.items()}  # as it travels to the driver


def _row_key(row):
    return (row.file, row.offset, row.kind, row.record_type, row.error)


def _offset_key(row):
    k = row.key.data
    return (k["group"], k["topic"], k["partition"])


def _state_view(state: PartitionState):
    return ({_offset_key(r): committed_offset(r).to_json() for r in state.committed_rows()},
            {pid: {_offset_key(r): committed_offset(r).to_json() for r in rows}
             for pid, rows in state.pending_rows().items()},
            {ident: (row.file, row.offset) for ident, row in state.latest.items()})


# ------------------------------------------------------------------------------------------------ plan

def test_split_file_cuts_at_batch_boundaries_and_covers_the_file(tmp_path):
    path = write_mixed_dump(tmp_path / "00000000000000000000.log", rounds=200)
    boundaries = {pos for pos, _ in batch_positions(path)} | {os.path.getsize(path)}
    ranges = split_file(path, 4096)
    assert len(ranges) > 5
    assert ranges[0][0] == 0 and ranges[-1][1] == os.path.getsize(path)
    for (s1, e1), (s2, _e2) in zip(ranges, ranges[1:]):
        assert e1 == s2
    for start, end in ranges:
        assert start in boundaries and end in boundaries
    for start, end in ranges[:-1]:
        assert end - start >= 4096
        # cut at the first boundary at or past the target: dropping the last batch goes below it
        last = max(p for p in boundaries if p < end)
        assert last - start < 4096


def test_split_file_puts_a_damaged_tail_and_the_until_cut_in_the_last_range(tmp_path):
    path = write_mixed_dump(tmp_path / "00000000000000000000.log", rounds=100)
    size = os.path.getsize(path)
    with open(path, "ab") as f:
        f.write(struct.pack(">qi", 999, 20) + b"\x00" * 40)  # a 32-byte magic-0 entry, then length 0
    batches = batch_positions(path)
    ranges = split_file(path, 2048)
    assert ranges[-1][1] == size + 52
    assert ranges[-1][0] <= size
    # --until-offset: no range starts after the first batch whose offset is past the cut-off
    cut = 40
    ranges = split_file(path, 512, until_offset=cut)
    data = open(path, "rb").read()
    first_past = next(pos for pos, _ in batches if struct.unpack_from(">q", data, pos)[0] > cut)
    assert ranges[-1] == (first_past, size + 52) or ranges[-1][0] < first_past
    assert all(start <= first_past for start, _ in ranges)


def test_parse_size():
    assert parse_size("64m") == 64 << 20
    assert parse_size("1g") == 1 << 30
    assert parse_size("1.5k") == 1536
    assert parse_size("4096") == 4096
    assert parse_size("2MiB") == 2 << 20
    for bad in ("", "x", "-1", "0"):
        with pytest.raises(ValueError):
            parse_size(bad)


def test_empty_file_gets_one_empty_task(tmp_path):
    d = tmp_path / "__consumer_offsets-1"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(b"")
    inputs = resolve_inputs([str(d)], None, ProblemLog())
    tasks = plan_tasks(inputs, 1024)
    assert [(t.start, t.end, t.partition, t.family) for t in tasks] == [(0, 0, 1, "consumer")]


# ------------------------------------------------------------------------------------------------ reading

@pytest.mark.parametrize("split", [700, 4096, 64 << 20])
def test_ranges_read_one_by_one_give_the_local_rows_and_problems(log_dir, split):
    damage(log_dir / "__consumer_offsets-9" / "00000000000000000000.log")
    inputs, local_problems, local_rows, _ = local_run([str(log_dir)])
    tasks, problems, rows = range_run(inputs, split)
    # CRC mismatch, the flipped byte's record, the unknown record type, the partial batch
    wanted = ["CRC-32C mismatch", "Could not read record", "Unknown record type 77", "Found 10 invalid bytes"]
    assert len(local_problems) == len(wanted)
    assert all(w in p for w, p in zip(wanted, local_problems))
    assert problems == local_problems
    assert [_row_key(r) for r in rows] == [_row_key(r) for r in local_rows]
    if split == 700:
        assert len(tasks) > 30


@pytest.mark.parametrize("split", [300, 700, 4096, 64 << 20])
def test_ranges_read_past_a_damaged_length_as_the_local_reader_does(log_dir, split):
    segment = log_dir / "__consumer_offsets-3" / "00000000000000000000.log"
    bad, _ = damage_length(segment, 0.5, 0.8)
    inputs, local_problems, local_rows, _ = local_run([str(log_dir)])
    skipped = [p for p in local_problems if " skipped: " in p]
    assert len(skipped) == 2 and skipped[0].startswith(f"{segment}: bytes {bad}–")
    tasks, problems, rows = range_run(inputs, split)
    assert problems == local_problems
    assert [_row_key(r) for r in rows] == [_row_key(r) for r in local_rows]
    assert _state_view(spark_like_state(inputs, split)[(str(segment.parent.name).rsplit("-", 1)[0], 3)]) == \
        _state_view(local_run([str(log_dir)])[3][("__consumer_offsets", 3)])


@pytest.mark.parametrize("until", [(57, None), (None, BASE_TS + 2500), (100030, None)])
def test_until_cut_offs_match_the_local_reader(log_dir, until):
    inputs, local_problems, local_rows, _ = local_run([str(log_dir)], *until)
    _tasks, problems, rows = range_run(inputs, 600, *until)
    assert problems == local_problems
    assert [_row_key(r) for r in rows] == [_row_key(r) for r in local_rows]
    assert 0 < len(rows) < len(local_run([str(log_dir)])[2])


def test_missing_file_is_reported_as_the_local_reader_does(tmp_path):
    path = write_mixed_dump(tmp_path / "00000000000000000000.log", rounds=10)
    inputs = resolve_inputs([str(path)], "consumer", ProblemLog())
    tasks = plan_tasks(inputs, 1 << 20)
    os.remove(path)
    reader = RangeReader(tasks[0])
    assert list(reader) == []
    assert [str(p) for p in reader.summary.problem_objects()] == [f"{path}: byte 0: cannot open: No such file or directory"]
    assert reader.summary.stops_file


def test_a_relative_path_is_read_where_the_driver_found_it(tmp_path, monkeypatch):
    """An executor's working directory is not the driver's: a task opens the file by the absolute path
    the driver planned, and its rows and problems show the path as given, as the local engine does."""
    d = tmp_path / "logs" / "__consumer_offsets-3"
    d.mkdir(parents=True)
    write_mixed_dump(d / "00000000000000000000.log", rounds=40)
    monkeypatch.chdir(tmp_path)
    inputs, local_problems, local_rows, _ = local_run(["logs"])
    tasks = plan_tasks(inputs, 700)
    assert {t.open_path for t in tasks} == {str(d / "00000000000000000000.log")}
    monkeypatch.chdir(d)  # where an executor runs
    readers = [RangeReader(task) for task in tasks]
    rows = [row for reader in readers for _batch, batch_rows in reader for row in batch_rows]
    assert [p for reader in readers for p in reader.summary.problems] == local_problems == []
    assert [_row_key(r) for r in rows] == [_row_key(r) for r in local_rows]
    assert {r.file for r in rows} == {os.path.join("logs", "__consumer_offsets-3", "00000000000000000000.log")}


# ------------------------------------------------------------------------------------------------ state

def _markers_in_other_ranges(inputs, split) -> int:
    """How many COMMIT/ABORT markers are read by a different task than some of their transaction's data."""
    tasks = plan_tasks(inputs, split)
    first_data: dict = {}
    crossing = 0
    for task in tasks:
        for _batch, rows in RangeReader(task):
            for row in rows:
                key = (task.input_index, row.producer_id)
                if row.kind == "data" and row.transactional:
                    first_data.setdefault(key, task.seq)
                elif row.kind == "control":
                    if first_data.pop(key, task.seq) != task.seq:
                        crossing += 1
    return crossing


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("split", [900, 5000])
def test_reduced_ranges_replay_to_the_local_state(tmp_path, seed, split):
    d = tmp_path / "__consumer_offsets-0"
    d.mkdir()
    write_mixed_dump(d / "00000000000000000000.log", seed=seed, rounds=250)
    inputs, _, _, local_states = local_run([str(d)])
    assert _markers_in_other_ranges(inputs, split) >= 3
    states = spark_like_state(inputs, split)
    assert list(states) == list(local_states)
    for key, local in local_states.items():
        assert _state_view(states[key]) == _state_view(local)
    # the dump exercises what it claims to
    local = next(iter(local_states.values()))
    assert local.pending_rows() and local.committed_rows() and local.latest


def test_reduction_drops_only_superseded_rows(tmp_path):
    """A range keeps its markers, its transactional commits and the latest plain write per key bytes,
    undecoded (offset, control marker, key and value bytes as read); the rest it drops."""
    d = tmp_path / "__consumer_offsets-0"
    d.mkdir()
    write_mixed_dump(d / "00000000000000000000.log", seed=5, rounds=300)
    inputs = resolve_inputs([str(d)], None, ProblemLog())
    task = plan_tasks(inputs, 1 << 30)[0]
    all_rows = [r for _b, rows in RangeReader(task) for r in rows]
    kept = kept_records(RangeReader(task))
    offset, control, key, value = (itemgetter(i) for i in (7, 5, 9, 10))  # replay._OFFSET, ...
    controls = [r for r in all_rows if r.kind == "control"]
    assert [(offset(r), control(r)) for r in kept if control(r)] == [(r.offset, r.marker) for r in controls]
    txn = [r.offset for r in all_rows if r.kind == "data" and r.transactional and r.record_type in (0, 1)]
    assert set(txn) <= {offset(r) for r in kept}
    by_offset = {r.offset: r for r in all_rows}
    assert all((key(r), value(r)) == (by_offset[offset(r)].key_bytes, by_offset[offset(r)].value_bytes)
               for r in kept if not control(r))
    latest = {}
    for r in all_rows:
        if r.kind == "data" and r.producer_id == -1:
            latest[r.key_bytes] = r.offset
    assert set(latest.values()) <= {offset(r) for r in kept}
    assert len(kept) < len(all_rows) / 2


@pytest.mark.parametrize("name", ["A", "B"])
def test_shared_segments_state_through_one_batch_ranges(segments_dir, kafka_vectors, name):
    file = {"A": "A__consumer_offsets-7__00000000000000000000.log",
            "B": "B__consumer_offsets-12__00000000000000000000.log"}[name]
    path = segments_dir / file
    inputs = [Input(find_segments(path)[0], str(path), "consumer", os.path.getsize(path))]
    (state,) = spark_like_state(inputs, 1).values()  # every batch its own range
    vec = next(v for v in kafka_vectors if v["category"] == "segment" and v["name"] == f"segment {name}")
    want = vec["expected"]["latest_state"]["committed_offsets"]
    got = {}
    for c in state.committed_rows():
        group, topic, partition = _offset_key(c)
        got.setdefault(group, {})[f"{topic}-{partition}"] = {
            k: committed_offset(c).to_json()[k] for k in ("offset", "leaderEpoch", "metadata", "commitTimestamp",
                                        "value_version", "record_offset")}
    assert got == want
    assert state.pending_rows() == {}


# ------------------------------------------------------------------------------------------------ parquet rows

def test_parquet_rows_have_every_column_and_flatten_offset_commits(segments_dir):
    path = segments_dir / "A__consumer_offsets-7__00000000000000000000.log"
    inputs = resolve_inputs([str(path)], None, ProblemLog())
    conv = ParquetRows()
    names = [c[0] for c in COLUMNS]
    rows = [dict(zip(names, conv.row(r))) for t in plan_tasks(inputs) for _b, rs in RangeReader(t) for r in rs]
    assert all(len(r) == len(COLUMNS) for r in rows)
    commit = next(r for r in rows if r["offset"] == 15)
    assert (commit["type"], commit["group"], commit["topic"], commit["topic_partition"],
            commit["committed_offset"], commit["transactional"], commit["value_json"]) == (
        "offset_commit", commit["group"], "orders", 0, 500, True, None)
    marker = next(r for r in rows if r["type"] == "control")
    assert marker["marker"] in ("COMMIT", "ABORT") and marker["group"] is None


def test_missing_java_or_pyspark_names_the_fix(monkeypatch):
    import builtins

    from kgroup.decode.spark import session

    monkeypatch.setattr(session, "find_java", lambda: None)
    assert session.unavailable_reason() == (
        "the Spark engine needs Java (17 or 21), which was not found: install it (for example "
        "apt-get install openjdk-17-jre-headless) or set JAVA_HOME, or use --engine local")
    real_import = builtins.__import__

    def no_pyspark(name, *args, **kwargs):
        if name == "pyspark" or name.startswith("pyspark."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyspark)
    assert session.unavailable_reason().startswith(
        "the Spark engine needs pyspark, which is not installed: pip install 'kgroup[spark]'")


@pytest.mark.parametrize("master, loopback", [
    ("local[2]", True), ("spark://127.0.0.1:7077", True), ("spark://localhost:7077", True),
    ("spark://127.0.0.1:7077,127.0.0.2:7078", True), ("spark://[::1]:7077", True),
    ("spark://10.0.0.5:7077", False), ("spark://127.0.0.1:7077,spark-2:7077", False), ("yarn", False),
    ("k8s://https://127.0.0.1:6443", False)])
def test_the_driver_listens_on_loopback_for_a_master_on_loopback(master, loopback):
    """Executors of a master on loopback run on this machine: the driver listens on 127.0.0.1 there
    (Spark would take the first interface's address when the hostname resolves to loopback)."""
    from kgroup.decode.spark.session import driver_on_loopback, quiet_conf

    conf = quiet_conf(master, {})
    assert driver_on_loopback(master) is loopback
    assert (conf.get("spark.driver.host"), conf.get("spark.driver.bindAddress")) == (
        ("127.0.0.1", "127.0.0.1") if loopback else (None, None))
    assert conf.get("spark.ui.enabled") == ("false" if master.startswith("local") else None)
    assert quiet_conf(master, {"spark.driver.host": "10.1.1.1"})["spark.driver.host"] == "10.1.1.1"


def test_executors_without_kgroup_are_named_with_the_fix(monkeypatch):
    from kgroup.decode.spark.driver import executor_python_hint

    monkeypatch.setenv("PYSPARK_PYTHON", "/usr/bin/python3")
    assert executor_python_hint(Exception("Traceback ...\nModuleNotFoundError: No module named 'kgroup'")) == (
        "; the executors' Python (PYSPARK_PYTHON=/usr/bin/python3) has no kgroup: install kgroup in it on "
        "every node, or ship an environment with spark.archives and point PYSPARK_PYTHON into it")
    assert executor_python_hint(Exception("PermissionError: [Errno 13]")) == ""


@pytest.mark.parametrize("master, executors, noted", [
    ("spark://10.0.0.5:7077", 0, True), ("spark://10.0.0.5:7077", 2, False), ("local[2]", 0, False)])
def test_a_cluster_that_places_no_executor_is_noted_once(capsys, master, executors, noted):
    """Spark's own "Initial job has not accepted any resources" goes to its log: kgroup says it."""
    import threading
    from types import SimpleNamespace

    from kgroup.decode.spark.driver import _ExecutorWait

    infos = ["driver"] + ["executor"] * executors
    tracker = SimpleNamespace(getExecutorInfos=lambda: infos)
    jsc = SimpleNamespace(sc=lambda: SimpleNamespace(statusTracker=lambda: tracker))
    context = SimpleNamespace(master=master, _jsc=jsc, getConf=lambda: {"spark.executor.memory": "2g"})
    before = set(threading.enumerate())
    waiting = _ExecutorWait(SimpleNamespace(sparkContext=context), seconds=0.05)
    for thread in set(threading.enumerate()) - before:
        thread.join(5)
    waiting.stop()
    err = capsys.readouterr().err
    assert err == ("kgroup decode-offsets: note: no Spark executor has started in 0.05 s: the cluster "
                   f"({master}) may have no free core, or no worker with spark.executor.memory=2g free (give "
                   "less with --spark-conf spark.executor.memory=...); its master's web UI says why the "
                   "application waits\n" if noted else "")


def test_engine_spark_without_spark_is_a_clear_error(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from kgroup.commands.cli import cli
    from kgroup.decode.spark import session

    path = write_mixed_dump(tmp_path / "00000000000000000000.log", rounds=5)
    monkeypatch.setattr(session, "find_java", lambda: None)
    result = CliRunner().invoke(cli, ["decode-offsets", "--engine", "spark", "--family", "consumer", str(path)])
    assert result.exit_code == 1
    assert result.stderr == ("kgroup decode-offsets: the Spark engine needs Java (17 or 21), which was not found: install it "
                             "(for example apt-get install openjdk-17-jre-headless) or set JAVA_HOME, or use "
                             "--engine local\n")
    result = CliRunner().invoke(cli, ["decode-offsets", "--engine", "auto", "--spark-threshold", "1", "-o",
                                      "jsonl", "--family", "consumer", str(path)])
    assert result.exit_code == 0
    assert result.stderr.startswith("kgroup decode-offsets: note: --engine auto: decoding locally although the input is ")
    assert len(result.stdout.splitlines()) > 5


def test_usage_errors_for_spark_only_outputs(tmp_path):
    from click.testing import CliRunner

    from kgroup.commands.cli import cli

    path = str(write_mixed_dump(tmp_path / "00000000000000000000.log", rounds=5))
    cases = [
        (["-o", "parquet", "--out", str(tmp_path / "o"), path], "-o parquet needs the Spark engine"),
        (["--engine", "spark", "-o", "dump-log", path], "-o dump-log runs on the local engine only"),
        (["--split-size", "abc", path], "'abc' is not a size"),
        (["--engine", "spark", "--spark-conf", "novalue", path], "'novalue' is not KEY=VALUE"),
        (["--engine", "spark", "-o", "csv", "--out", str(tmp_path / "o"), path],
         "the Spark engine writes records as parquet or jsonl part files"),
    ]
    for args, message in cases:
        result = CliRunner().invoke(cli, ["decode-offsets", "--family", "consumer", *args])
        assert result.exit_code == 2, (args, result.stderr)
        assert message in result.stderr


def test_local_engine_writes_under_out(tmp_path):
    from click.testing import CliRunner

    from kgroup.commands.cli import cli

    path = str(write_mixed_dump(tmp_path / "00000000000000000000.log", rounds=20))
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["decode-offsets", "--family", "consumer", "--out", str(out), path])
    assert result.exit_code == 0 and result.stdout == ""
    stdout = CliRunner().invoke(cli, ["decode-offsets", "--family", "consumer", "-o", "jsonl", path]).stdout
    assert (out / "part-00000.jsonl").read_text() == stdout


def test_nothing_to_read_is_reported_without_starting_spark(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from kgroup.commands.cli import cli
    from kgroup.decode.spark import session

    monkeypatch.setattr(session, "find_java", lambda: None)  # Spark could not start: it is not needed
    missing = str(tmp_path / "nope")
    spark = CliRunner().invoke(cli, ["decode-offsets", "--engine", "spark", "-o", "json", missing])
    local = CliRunner().invoke(cli, ["decode-offsets", "-o", "json", missing])
    assert (spark.exit_code, spark.stdout, spark.stderr) == (local.exit_code, local.stdout, local.stderr)
    assert local.exit_code == 1
    assert local.stderr.startswith(f"kgroup decode-offsets: {missing}: no such file or directory\n")


def test_a_local_masters_jvm_is_light_and_the_users_options_come_last():
    from kgroup.decode.spark.session import LOCAL_JVM_OPTIONS, quiet_conf

    local = quiet_conf("local[2]", {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=4"})
    options = local["spark.driver.extraJavaOptions"]
    assert options.startswith("-Dlog4j2.configurationFile=file:") and LOCAL_JVM_OPTIONS in options
    assert options.endswith(" -XX:TieredStopAtLevel=4")  # the JVM takes the last of a repeated option
    assert LOCAL_JVM_OPTIONS not in quiet_conf("spark://h:7077", {})["spark.driver.extraJavaOptions"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(data=random_dumps())
def test_random_dumps_replay_to_the_local_state(tmp_path, data):
    """Batches of commits of every layout (runs, odd metadata, values and keys that do not decode,
    tombstones, transactions and markers), read in ranges of every size: the state is the local one."""
    path = tmp_path / "__consumer_offsets-3" / "00000000000000000000.log"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(data)
    inputs, _, _, local_states = local_run([str(path.parent)])
    for split in (1, 300, 1 << 30):
        states = spark_like_state(inputs, split)
        assert {k: _state_view(v) for k, v in states.items()} == {k: _state_view(v) for k, v in local_states.items()}


def test_a_later_value_that_does_not_decode_does_not_hide_the_commit_before_it(tmp_path):
    """Collapsing by key bytes keeps the latest record of a key; when that record's value turns out
    not to decode it changes nothing, so the range reads the key's earlier writes again and keeps
    them: the state is the full replay's (the second write's problem reported once)."""
    d = tmp_path / "__consumer_offsets-0"
    d.mkdir()
    key = encode_key(1, {"group": "g", "topic": "t", "partition": 0})
    other = encode_key(1, {"group": "g", "topic": "t", "partition": 1})
    good = encode_value(1, 3, {"offset": 7, "leaderEpoch": 1, "metadata": "", "commitTimestamp": 5})
    with open(d / "00000000000000000000.log", "wb") as f:
        w = LogWriter(f)
        w.append([(key, good, BASE_TS), (other, good, BASE_TS)])
        w.append([(key, b"\x00\x63junk", BASE_TS + 1), (other, good, BASE_TS + 1)])
    inputs, local_problems, _, local_states = local_run([str(d)])
    for split in (1, 1 << 20):
        tasks = plan_tasks(inputs, split)
        readers = [RangeReader(task) for task in tasks]
        parts = [(task.seq, pack_range(task, kept_records(reader))) for task, reader in zip(tasks, readers)]
        assert [str(p) for r in readers for p in r.summary.problem_objects()] == local_problems
        assert _state_view(unpack_state(pack_state(replay(parts)))) == _state_view(local_states[("__consumer_offsets", 0)])
    assert len(local_problems) == 1 and "offset 2" in local_problems[0]
