"""`--view state` and the coordinator replay offsets with one store (OffsetStore), by Kafka's rule:
a commit written with a producer id is pending until that producer's marker (OffsetMetadataManager.replay
is given the batch's producer id by CoordinatorLoaderImpl, whatever the transactional attribute says)."""

import json

from click.testing import CliRunner

from kgroup.commands.cli import cli
from kgroup.coordinator import GroupCoordinator, LogEntry
from kgroup.decode.decoder import ProblemLog, iter_decoded
from kgroup.decode.state import PartitionState
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
