"""Failover: GroupCoordinator.from_records(log) must land on the offsets the live coordinator had.

Covers committed offsets, open and aborted transactions, tombstones, expiry, a second failover
that continues the first one's log, the real segment files of the shared vectors, and a
hypothesis property over random operation sequences.
"""

from __future__ import annotations

import itertools
import uuid

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from kafka.protocol.admin.groups import DeleteGroupsRequest

from kgroup.coordinator import GroupCoordinator, LogEntry
from kgroup.records import decode_key, decode_value
from kgroup.records.segment import iter_segment
from helpers.offsets import (
    commit_request,
    delete_request,
    errors,
    fetch_request,
    fetched,
    txn_commit_request,
)

FAST = {"group.min.session.timeout.ms": 10, "group.initial.rebalance.delay.ms": 0,
        "offsets.retention.minutes": 1, "offsets.retention.check.interval.ms": 1000}


def make_coord(config=FAST, now_ms=0):
    counter = itertools.count()
    return GroupCoordinator(config=dict(config), now_ms=now_ms,
                            uuid_source=lambda: str(uuid.UUID(int=next(counter))))


def state(coord, groups):
    return {g: (coord.committed_offsets(g), coord.offsets.pending(g)) for g in groups}


def test_round_trip_with_committed_open_and_aborted_transactions():
    coord = make_coord()
    coord.handle(commit_request("a", {("t", 0): 1, ("t", 1): 2}))
    coord.handle(commit_request("a", {("t", 2): (3, "ret")}, version=2, retention=500_000))
    coord.handle(txn_commit_request("a", {("t", 0): 10, ("t", 3): 30}, producer_id=1))
    coord.handle(txn_commit_request("b", {("u", 0): 5}, producer_id=1))
    coord.handle(txn_commit_request("a", {("t", 1): 20}, producer_id=2))
    coord.handle(commit_request("a", {("t", 0): 11}))            # later than pid 1's write
    coord.end_transaction(1, 0, commit=True)
    coord.end_transaction(2, 0, commit=False)
    coord.handle(txn_commit_request("b", {("u", 1): 7}, producer_id=3))   # left open
    coord.handle(delete_request("a", {"t": [1]}))
    live = state(coord, ["a", "b"])
    assert live == {
        "a": ({("t", 0): coord.committed_offsets("a")[("t", 0)],
               ("t", 2): coord.committed_offsets("a")[("t", 2)],
               ("t", 3): coord.committed_offsets("a")[("t", 3)]}, {}),
        "b": ({("u", 0): coord.committed_offsets("b")[("u", 0)]},
              {3: {("u", 1): coord.offsets.pending("b")[3][("u", 1)]}}),
    }
    assert {tp: v.offset for tp, v in live["a"][0].items()} == {("t", 0): 11, ("t", 2): 3, ("t", 3): 30}
    assert live["a"][0][("t", 2)].expire_timestamp == 500_000
    replayed = GroupCoordinator.from_records(coord.log, config=FAST)
    assert state(replayed, ["a", "b"]) == live
    # the open transaction is still open after failover: require_stable sees it, COMMIT installs it
    resp = replayed.handle(fetch_request("b", {"u": [1]}, version=7, require_stable=True)).response
    assert fetched(resp) == {("u", 1): (-1, -1, "", 88)}
    replayed.end_transaction(3, 0, commit=True)
    assert replayed.committed_offsets("b")[("u", 1)].offset == 7


def test_plain_records_list_replays_non_transactional_state():
    coord = make_coord()
    coord.handle(commit_request("a", {("t", 0): 1, ("t", 1): 2}))
    coord.handle(commit_request("a", {("t", 0): 5}))
    coord.handle(delete_request("a", {"t": [1]}))
    replayed = GroupCoordinator.from_records(coord.records, config=FAST)
    assert replayed.committed_offsets("a") == coord.committed_offsets("a")
    assert {tp: v.offset for tp, v in replayed.committed_offsets("a").items()} == {("t", 0): 5}


def test_second_failover_continues_the_first_log():
    first = make_coord()
    first.handle(txn_commit_request("g", {("t", 0): 100}, producer_id=9))
    first.handle(commit_request("g", {("t", 1): 1}))
    second = GroupCoordinator.from_records(first.log, config=FAST)
    # a plain commit after failover is later in the log than pid 9's pending write
    second.handle(commit_request("g", {("t", 0): 200}))
    second.end_transaction(9, 0, commit=True)
    assert second.committed_offsets("g")[("t", 0)].offset == 200
    third = GroupCoordinator.from_records(first.log + second.log, config=FAST)
    assert state(third, ["g"]) == state(second, ["g"])


def test_expiry_tombstones_replay_to_the_same_state():
    coord = make_coord()
    coord.handle(commit_request("g", {("t", 0): 1}))
    coord.advance(30_000)
    coord.handle(commit_request("g", {("t", 1): 2}))
    coord.advance(31_000)
    assert set(coord.committed_offsets("g")) == {("t", 1)}
    replayed = GroupCoordinator.from_records(coord.log, config=FAST, now_ms=coord.now_ms)
    assert state(replayed, ["g"]) == state(coord, ["g"])


# ---------------------------------------------------------------- the shared segment files
def segment_entries(path):
    """The segment's batches as LogEntry objects (markers as control entries), with Kafka offsets."""
    entries = []
    for batch in iter_segment(path):
        if batch.is_control:
            for record in batch.records:
                if record.control in ("COMMIT", "ABORT"):
                    entries.append((LogEntry(records=[], producer_id=batch.producer_id,
                                             producer_epoch=batch.producer_epoch, transactional=True,
                                             control=record.control,
                                             coordinator_epoch=record.coordinator_epoch or 0),
                                    [record.offset]))
            continue
        entries.append((LogEntry(records=[(r.key, r.value) for r in batch.records],
                                 producer_id=batch.producer_id, producer_epoch=batch.producer_epoch,
                                 transactional=batch.is_transactional),
                        [r.offset for r in batch.records]))
    return entries


def expected_state(kafka_vectors, name):
    (vector,) = [v for v in kafka_vectors if v.get("name") == name]
    out = {}
    for group, partitions in vector["expected"]["latest_state"]["committed_offsets"].items():
        for tp, value in partitions.items():
            topic, _, partition = tp.rpartition("-")
            out.setdefault(group, {})[(topic, int(partition))] = (
                value["offset"], value["leaderEpoch"], value["metadata"], value["commitTimestamp"])
    return out, vector["expected"]["latest_state"]["pending_transactional_offsets"]


def observed(coord, groups):
    return {g: {tp: (v.offset, v.leader_epoch, v.metadata, v.commit_timestamp)
                for tp, v in coord.committed_offsets(g).items()} for g in groups}


def test_segment_a_replays_to_the_expected_latest_state(kafka_vectors, segments_dir):
    expected, pending = expected_state(kafka_vectors, "segment A")
    entries = segment_entries(segments_dir / "A__consumer_offsets-7__00000000000000000000.log")
    coord = GroupCoordinator.from_records([e for e, _ in entries])
    assert observed(coord, expected) == expected
    assert {tp: v[0] for tp, v in expected["txn-group"].items()} == {("orders", 0): 500, ("orders", 1): 650}
    assert pending == {} and all(coord.offsets.pending(g) == {} for g in expected)


def test_segment_a_with_kafka_record_offsets(kafka_vectors, segments_dir):
    """Same replay, but with the log offsets Kafka assigned (gaps and all) instead of indexes."""
    expected, _ = expected_state(kafka_vectors, "segment A")
    coord = make_coord()
    for entry, offsets in segment_entries(segments_dir / "A__consumer_offsets-7__00000000000000000000.log"):
        if entry.control:
            coord.offsets.replay_end_transaction(entry.producer_id, entry.control == "COMMIT", offsets[0])
            continue
        for (key, value), offset in zip(entry.records, offsets):
            k = decode_key(key)
            if k.record_type in (0, 1):
                coord.offsets.replay(k, decode_value(k.record_type, value), offset, entry)
    assert observed(coord, expected) == expected


def test_segment_b_legacy_formats_replay(kafka_vectors, segments_dir):
    expected, _ = expected_state(kafka_vectors, "segment B")
    entries = segment_entries(segments_dir / "B__consumer_offsets-12__00000000000000000000.log")
    coord = GroupCoordinator.from_records([e for e, _ in entries])
    assert observed(coord, expected) == expected


# ---------------------------------------------------------------- property
GROUPS = ["a", "b"]
TPS = [("t", 0), ("t", 1), ("u", 0)]
PIDS = [1, 2, 3]

operations = st.lists(st.one_of(
    st.tuples(st.just("commit"), st.sampled_from(GROUPS), st.sampled_from(TPS),
              st.integers(0, 1000), st.sampled_from([None, 2_000, 90_000])),
    st.tuples(st.just("txn"), st.sampled_from(GROUPS), st.sampled_from(TPS),
              st.integers(0, 1000), st.sampled_from(PIDS)),
    st.tuples(st.just("marker"), st.sampled_from(PIDS), st.booleans()),
    st.tuples(st.just("delete"), st.sampled_from(GROUPS), st.sampled_from(TPS)),
    st.tuples(st.just("delete_group"), st.sampled_from(GROUPS)),
    st.tuples(st.just("advance"), st.sampled_from([0, 700, 20_000, 65_000])),
    st.tuples(st.just("failover")),
), max_size=30)


def apply(coord, op):
    kind = op[0]
    if kind == "commit":
        _, group, tp, offset, retention = op
        resp = coord.handle(commit_request(group, {tp: offset}, version=2 if retention else 8,
                                           retention=retention or -1)).response
        assert errors(resp) == {tp: 0}
    elif kind == "txn":
        _, group, tp, offset, pid = op
        assert errors(coord.handle(txn_commit_request(group, {tp: offset}, producer_id=pid)).response) == {tp: 0}
    elif kind == "marker":
        coord.end_transaction(op[1], 0, commit=op[2])
    elif kind == "delete":
        coord.handle(delete_request(op[1], {op[2][0]: [op[2][1]]}))
    elif kind == "delete_group":
        coord.handle(DeleteGroupsRequest(version=2, groups_names=[op[1]]))
    elif kind == "advance":
        coord.advance(op[1])


@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(operations)
def test_replay_of_any_operation_sequence_matches_live_state(ops):
    coord = make_coord()
    history: list[LogEntry] = []
    for op in ops:
        if op[0] == "failover":
            history += coord.log
            coord = GroupCoordinator.from_records(history, config=FAST, now_ms=coord.now_ms)
            continue
        apply(coord, op)
    history += coord.log
    replayed = GroupCoordinator.from_records(history, config=FAST, now_ms=coord.now_ms)
    assert state(replayed, GROUPS) == state(coord, GROUPS)
    for group in GROUPS:
        stable = fetched(replayed.handle(fetch_request(group, None, version=7, require_stable=True)).response)
        live = fetched(coord.handle(fetch_request(group, None, version=7, require_stable=True)).response)
        assert stable == live



oracle_operations = st.lists(st.one_of(      # small domains so keys collide often
    st.tuples(st.just("commit"), st.sampled_from(GROUPS), st.sampled_from(TPS[:2]),
              st.integers(0, 1000), st.just(None)),
    st.tuples(st.just("txn"), st.sampled_from(GROUPS), st.sampled_from(TPS[:2]),
              st.integers(0, 1000), st.sampled_from(PIDS[:2])),
    st.tuples(st.just("marker"), st.sampled_from(PIDS[:2]), st.booleans()),
    st.tuples(st.just("delete"), st.sampled_from(GROUPS), st.sampled_from(TPS[:2])),
), max_size=40)


def oracle(ops):
    """Committed offsets by Kafka's replay rule (OffsetMetadataManager.replay) stated as: among the writes that materialised (plain
    commits at once, transactional ones at their COMMIT) and were not wiped by a tombstone
    between write and materialisation, the one latest in the log wins, unless a tombstone came
    after its materialisation."""
    position = 0
    writes = []            # dicts: group, tp, offset, pos, pid, done_at, wiped
    tombstones = []        # (group, tp, time)
    committed_now = {}     # what the oracle believes is committed, to know if OffsetDelete writes
    for time, op in enumerate(ops):
        kind = op[0]
        if kind in ("commit", "txn"):
            _, group, tp, offset, pid = op
            writes.append(dict(group=group, tp=tp, offset=offset, pos=position, pid=pid,
                               done_at=time if kind == "commit" else None, wiped=False))
            position += 1
        elif kind == "marker":
            for w in writes:
                if w["pid"] == op[1] and w["done_at"] is None and not w["wiped"]:
                    if op[2]:
                        w["done_at"] = time
                    else:
                        w["wiped"] = True
            position += 1
        elif kind == "delete":
            _, group, tp = op
            open_write = any((w["group"], w["tp"]) == (group, tp) and w["done_at"] is None
                             and not w["wiped"] for w in writes)
            if (group, tp) in committed_now or open_write:
                tombstones.append((group, tp, time))
                for w in writes:
                    if (w["group"], w["tp"]) == (group, tp) and w["done_at"] is None:
                        w["wiped"] = True
                position += 1
        # recompute what is committed after this step
        committed_now = {}
        for w in writes:
            if w["done_at"] is None or w["wiped"]:
                continue
            key = (w["group"], w["tp"])
            if any(t[:2] == key and t[2] >= w["done_at"] for t in tombstones):
                continue
            if key not in committed_now or committed_now[key]["pos"] < w["pos"]:
                committed_now[key] = w
    return {g: {tp: committed_now[(g, tp)]["offset"] for (gg, tp) in committed_now if gg == g}
            for g in GROUPS}


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(oracle_operations)
@example([("commit", "a", ("t", 0), 1, None), ("txn", "a", ("t", 0), 2, 1),
          ("delete", "a", ("t", 0)), ("marker", 1, True)])      # tombstone wipes the open txn
@example([("txn", "a", ("t", 0), 5, 1), ("commit", "a", ("t", 0), 6, None),
          ("marker", 1, True), ("txn", "a", ("t", 0), 7, 2), ("marker", 2, False)])  # segment A
def test_committed_offsets_match_an_independent_model_of_the_transaction_rules(ops):
    coord = make_coord()
    for op in ops:
        apply(coord, op)
    assert {g: {tp: v.offset for tp, v in coord.committed_offsets(g).items()} for g in GROUPS} == oracle(ops)
    replayed = GroupCoordinator.from_records(coord.log, config=FAST)
    assert state(replayed, GROUPS) == state(coord, GROUPS)


def test_expiry_after_failover_counts_from_the_persisted_empty_time():
    from kafka.protocol.consumer.group import JoinGroupRequest, SyncGroupRequest
    from helpers.offsets import subscription
    coord = make_coord()
    join = coord.handle(JoinGroupRequest(
        version=5, group_id="g", session_timeout_ms=10_000, rebalance_timeout_ms=5_000, member_id="",
        group_instance_id="i1", protocol_type="consumer",
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=subscription("t"))]))
    coord.advance(0)
    member, gen = join.response.member_id, join.response.generation_id
    coord.handle(SyncGroupRequest(version=3, group_id="g", generation_id=gen, member_id=member,
                                  group_instance_id="i1", assignments=[]))
    coord.handle(commit_request("g", {("t", 0): 5}, version=7, generation=gen, member_id=member,
                                instance_id="i1"))
    coord.advance(20_000)             # no heartbeats: the member expires at 10 s, the group empties
    assert coord.group("g").state == "Empty" and coord.group("g").current_state_timestamp == 10_000
    replayed = GroupCoordinator.from_records(coord.log, config=FAST, now_ms=coord.now_ms)
    assert replayed.group("g").current_state_timestamp == 10_000
    replayed.advance(49_000)          # 69 s: 59 s after the group became Empty
    assert set(replayed.committed_offsets("g")) == {("t", 0)}
    replayed.advance(1_000)           # 70 s = Empty time + 1 min retention
    assert replayed.committed_offsets("g") == {} and replayed.group("g") is None
