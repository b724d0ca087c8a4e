"""`--view state` and the coordinator replay offsets with one store (OffsetStore), by Kafka's rule:
a commit written with a producer id is pending until that producer's marker (OffsetMetadataManager.replay
is given the batch's producer id by CoordinatorLoaderImpl, whatever the transactional attribute says)."""

import json

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgroup.commands.cli import cli
from kgroup.coordinator import GroupCoordinator, LogEntry
from kgroup.decode.decoder import ProblemLog, iter_decoded
from kgroup.decode.inputs import RowFilter
from kgroup.decode.render_state import state_json
from kgroup.decode.state import OffsetsState, PartitionState
from kgroup.records import encode_key, encode_value
from kgroup.records.segment import segment_file
from kgroup.records.writer import LogWriter


def _rows(path):
    return [r for _b, rows in iter_decoded(segment_file(str(path)), "consumer", ProblemLog()) for r in rows]


def _entry(row):
    """A row as `describe --from-dump` hands it to the coordinator."""
    if row.kind == "control":
        return LogEntry(records=[], producer_id=row.producer_id, control=row.marker,
                        coordinator_epoch=row.coordinator_epoch or 0, timestamp_ms=row.timestamp)
    return LogEntry(records=[(row.key_bytes, row.value_bytes)], producer_id=row.producer_id,
                    transactional=row.transactional, timestamp_ms=row.timestamp)


def _decode_view(state: PartitionState):
    committed, pending = {}, {}
    for r in state.committed_rows():
        k = r.key.data
        committed.setdefault(k["group"], {})[(k["topic"], k["partition"])] = r.value.data["offset"]
    for pid, rows in state.pending_rows().items():
        for r in rows:
            k = r.key.data
            pending.setdefault(k["group"], {}).setdefault(pid, {})[(k["topic"], k["partition"])] = \
                r.value.data["offset"]
    return committed, pending


def _coordinator_view(coord):
    groups = coord.offsets.groups()
    committed = {g: {tp: v.offset for tp, v in coord.committed_offsets(g).items()} for g in groups}
    pending = {g: {pid: {tp: v.offset for tp, v in offsets.items()}
                   for pid, offsets in coord.offsets.pending(g).items()} for g in groups}
    return ({g: v for g, v in committed.items() if v}, {g: v for g, v in pending.items() if v})


def test_segment_A_replays_the_same_in_decode_and_the_coordinator_at_every_offset(segments_dir):
    rows = _rows(segments_dir / "A__consumer_offsets-7__00000000000000000000.log")
    assert {r.marker for r in rows if r.kind == "control"} == {"COMMIT", "ABORT"}
    state = PartitionState()
    views = {}
    for n, row in enumerate(rows, 1):
        state.apply(row)
        coord = GroupCoordinator.from_records([_entry(r) for r in rows[:n] if r.kind != "error"],
                                              now_ms=row.timestamp)
        assert _decode_view(state) == _coordinator_view(coord), f"after offset {row.offset}"
        views[row.offset] = _decode_view(state)
    # pid 4000: orders-0=500, orders-1=600 at 15-16; a plain commit orders-1=650 at 17; COMMIT at 18
    committed, pending = views[17]
    assert pending["txn-group"] == {4000: {("orders", 0): 500, ("orders", 1): 600}}
    assert committed["txn-group"] == {("orders", 1): 650}
    committed, pending = views[18]  # installed, except where the later plain commit holds the key
    assert "txn-group" not in pending and committed["txn-group"] == {("orders", 0): 500, ("orders", 1): 650}
    assert views[19][1]["txn-group"] == {4001: {("orders", 0): 999}}
    committed, pending = views[20]  # ABORT drops it
    assert pending == {} and committed["txn-group"] == {("orders", 0): 500, ("orders", 1): 650}


def test_a_commit_with_a_producer_id_is_pending_whatever_the_transactional_flag_says(tmp_path):
    key = encode_key(1, {"group": "g", "topic": "t", "partition": 0})
    value = encode_value(1, 3, {"offset": 7, "leaderEpoch": -1, "metadata": "", "commitTimestamp": 1})
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    path.parent.mkdir()
    with open(path, "wb") as f:
        writer = LogWriter(f)
        writer.append([(key, value)], timestamp=1, producer_id=12, producer_epoch=0, transactional=False)
    result = CliRunner().invoke(cli, ["decode-offsets", "--view", "state", "-o", "json", str(path)])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["committed_offsets"] == []
    assert [(t["producer_id"], [c["offset"] for c in t["offsets"]]) for t in doc["open_transactions"]] == [(12, [7])]
    coord = GroupCoordinator.from_records([_entry(r) for r in _rows(path)])
    assert coord.committed_offsets("g") == {} and list(coord.offsets.pending("g")) == [12]


# -- the local engine's --view state decodes only the records compaction keeps (state_replay) ----------


def _full_replay_json(path, until_offset=None, until_time=None):
    """The state every decoded row replays to, the way --view state worked before it collapsed keys."""
    state = OffsetsState()
    partition = state.for_partition("__consumer_offsets", 0)
    for batch, rows in iter_decoded(segment_file(str(path)), "consumer", ProblemLog()):
        if batch.crc_valid:
            partition.apply_all([r for r in rows if (until_offset is None or r.offset <= until_offset)
                                 and (until_time is None or r.timestamp <= until_time)])
    return state_json(state, RowFilter())


_KEYS = [(1, "g", "t", 0), (1, "g", "t", 1), (0, "g", "t", 0), (1, "h", "t", 0), (0, "h", "u", 2)]
_OPS = st.one_of(
    st.tuples(st.just("plain"), st.lists(st.tuples(st.sampled_from(range(len(_KEYS))), st.booleans()),
                                          min_size=1, max_size=4)),
    st.tuples(st.just("txn"), st.sampled_from([7, 8]), st.lists(st.sampled_from(range(len(_KEYS))),
                                                                 min_size=1, max_size=3)),
    st.tuples(st.just("marker"), st.sampled_from([7, 8]), st.sampled_from(["COMMIT", "ABORT"])),
    st.tuples(st.just("group"), st.booleans()),
    st.tuples(st.just("undecodable"), st.sampled_from(range(len(_KEYS)))),
)
#: A value with a valid CRC that does not decode (an unknown OffsetCommitValue version).
UNDECODABLE = b"\x00\x63junk"


def _write_ops(path, ops) -> int:
    """Writes the ops as batches; returns the last offset written."""
    offset = 0
    with open(path, "wb") as f:
        writer = LogWriter(f)
        for n, op in enumerate(ops, 1):
            value = encode_value(1, 3, {"offset": n, "leaderEpoch": -1, "metadata": "", "commitTimestamp": n})

            def key(i):
                version, group, topic, partition = _KEYS[i]
                return encode_key(version, {"group": group, "topic": topic, "partition": partition})

            if op[0] == "plain":
                _, offset = writer.append([(key(i), None if delete else value) for i, delete in op[1]], timestamp=n)
            elif op[0] == "txn":
                _, offset = writer.append([(key(i), value) for i in op[2]], timestamp=n, producer_id=op[1],
                                          producer_epoch=0, transactional=True)
            elif op[0] == "undecodable":
                _, offset = writer.append([(key(op[1]), UNDECODABLE)], timestamp=n)
            elif op[0] == "marker":
                _, offset = writer.append_control(op[2], timestamp=n, producer_id=op[1], producer_epoch=0,
                                                  coordinator_epoch=0)
            else:
                meta = None if op[1] else encode_value(2, 3, {
                    "protocolType": "consumer", "generation": n, "protocol": "range", "leader": "m",
                    "currentStateTimestamp": n, "members": []})
                _, offset = writer.append([(encode_key(2, {"group": "g"}), meta)], timestamp=n)
    return offset


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_OPS, min_size=1, max_size=14), cut=st.integers(0, 40))
def test_state_view_equals_the_full_replay_of_every_row(tmp_path, ops, cut):
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    path.parent.mkdir(exist_ok=True)
    last = _write_ops(path, ops)
    for option, until in ((None, None), ("--until-offset", min(cut, last)), ("--until-time", cut // 2)):
        args = ["decode-offsets", "--view", "state", "-o", "json", str(path)]
        args += [] if option is None else [option, str(until)]
        result = CliRunner().invoke(cli, args)
        assert result.exit_code in ((0, 1, 3) if any(op[0] == "undecodable" for op in ops) else (0,)), result.stderr
        expected = _full_replay_json(path, until if option == "--until-offset" else None,
                                     until if option == "--until-time" else None)
        assert json.loads(result.stdout) == json.loads(json.dumps(expected))


_G_T_0 = encode_key(1, {"group": "g", "topic": "t", "partition": 0})
_G_T_1 = encode_key(1, {"group": "g", "topic": "t", "partition": 1})


def _commit(offset):
    return encode_value(1, 3, {"offset": offset, "leaderEpoch": -1, "metadata": "", "commitTimestamp": offset})


def write_shadowing_dump(path, layout: str) -> None:
    """A good commit for (g, t, 0), then in a later plain record the same key bytes with a value that
    does not decode (offset 2; 1 in "one batch", 4 "across a transaction"); layouts:
    "later batch", "one batch" (both in one batch), "then good" (a good write, offset 9, after the bad
    one), "across a transaction" (a transaction and its marker between the good and the bad write)."""
    path.parent.mkdir(exist_ok=True)
    with open(path, "wb") as f:
        w = LogWriter(f)
        if layout == "one batch":
            w.append([(_G_T_0, _commit(7)), (_G_T_0, UNDECODABLE), (_G_T_1, _commit(8))], timestamp=1)
            return
        w.append([(_G_T_0, _commit(7)), (_G_T_1, _commit(7))], timestamp=1)
        if layout == "across a transaction":
            w.append([(_G_T_1, _commit(20))], timestamp=2, producer_id=5, producer_epoch=0, transactional=True)
            w.append_control("COMMIT", timestamp=2, producer_id=5, producer_epoch=0, coordinator_epoch=0)
            w.append([(_G_T_0, UNDECODABLE)], timestamp=3)
            return
        w.append([(_G_T_0, UNDECODABLE), (_G_T_1, _commit(8))], timestamp=2)
        if layout == "then good":
            w.append([(_G_T_0, _commit(9))], timestamp=3)


def _committed(stdout) -> dict:
    return {(c["group"], c["topic"], c["partition"]): c["offset"] for c in json.loads(stdout)["committed_offsets"]}


@pytest.mark.parametrize("layout, expected", [
    ("later batch", {("g", "t", 0): 7, ("g", "t", 1): 8}),
    ("one batch", {("g", "t", 0): 7, ("g", "t", 1): 8}),
    ("then good", {("g", "t", 0): 9, ("g", "t", 1): 8}),
    ("across a transaction", {("g", "t", 0): 7, ("g", "t", 1): 20}),
])
def test_a_value_that_does_not_decode_keeps_the_earlier_write_of_its_key(tmp_path, layout, expected):
    """Collapsing keeps a key's latest record; when its value does not decode it changes nothing, so
    the state keeps the key's earlier write (the run is read again for it), as the full replay does;
    the value's problem is reported once (not at all when a later write overwrites it)."""
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_shadowing_dump(path, layout)
    for cut in ([], ["--until-offset", "9"], ["--until-time", "9"]):
        result = CliRunner().invoke(cli, ["decode-offsets", "--view", "state", "-o", "json", str(path), *cut])
        assert _committed(result.stdout) == expected
        assert json.loads(result.stdout) == json.loads(json.dumps(_full_replay_json(path)))
        problems = result.stderr.splitlines()
        if layout == "then good":
            assert result.exit_code == 0 and problems == []
        else:
            bad_offset = {"one batch": 1, "across a transaction": 4}.get(layout, 2)
            assert result.exit_code == 3
            assert len(problems) == 2 and f"offset {bad_offset}" in problems[0]
            assert problems[1].startswith("kgroup decode-offsets: 1 problem;")


def test_stdin_read_once_says_the_earlier_write_may_be_missing(tmp_path):
    """Stdin cannot be read twice: the state is what the collapsed replay gives, and a note names the key
    whose earlier writes may be missing."""
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    write_shadowing_dump(path, "later batch")
    result = CliRunner().invoke(cli, ["decode-offsets", "--view", "state", "-o", "json", "--family", "consumer",
                                      "-"], input=path.read_bytes())
    assert result.exit_code == 3
    assert _committed(result.stdout) == {("g", "t", 1): 8}
    lines = result.stderr.splitlines()
    assert len(lines) == 3 and "offset 2" in lines[0] and lines[2].startswith("kgroup decode-offsets: 1 problem;")
    assert lines[1] == ("kgroup decode-offsets: note: -: offset 2: any earlier write of this key (group g, topic t, "
                        "partition 0) since offset 0 is missing from the state: this input cannot be read twice "
                        "to find the last one that decodes (decode the partition's files)")
