"""OffsetCommit / OffsetFetch / TxnOffsetCommit / OffsetDelete through the real GroupCoordinator.

Every scenario drives `coord.handle` with kafka-python request objects and checks exact error
codes, offsets, the records appended to the log, and that every response encodes at its version.
"""

from __future__ import annotations

import dataclasses
import itertools
import uuid

import pytest
from kafka.protocol.consumer.group import JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest

from kgroup.coordinator import GroupCoordinator
from kgroup.coordinator.offsets.manager import OffsetAndMetadata
from kgroup.records import decode_key, decode_value
from helpers.offsets import (
    commit_request,
    delete_request,
    errors,
    fetch_groups_request,
    fetch_request,
    fetched,
    roundtrip,
    subscription,
    txn_commit_request,
)

DAY_MS = 24 * 3600 * 1000
RETENTION_MS = 10080 * 60_000           # offsets.retention.minutes default (7 days)
CHECK_MS = 600_000                      # offsets.retention.check.interval.ms default


def make_coord(**config):
    settings = {"group.min.session.timeout.ms": 10, "group.initial.rebalance.delay.ms": 0}
    settings.update({k.replace("_", "."): v for k, v in config.items()})
    counter = itertools.count()
    return GroupCoordinator(config=settings, now_ms=0,
                            uuid_source=lambda: str(uuid.UUID(int=next(counter))))


def call(coord, request):
    reply = coord.handle(request)
    assert reply.done, request
    response = reply.response
    assert response.API_VERSION == request.API_VERSION
    roundtrip(response)
    return response


def oam(offset, ts=0, metadata="", epoch=-1, expire=None):
    return OffsetAndMetadata(offset, epoch, metadata, ts, expire)


# Kafka 4.4's tagged OffsetCommitValue.topicId (v4+), at its default on the values kgroup writes
NO_TOPIC_ID = bytes(16)


def offset_records(coord):
    """[(group, topic, partition, value version or None, value data or None)] in log order."""
    out = []
    for key, value in coord.records:
        k = decode_key(key)
        if k.record_type in (0, 1):
            v = decode_value(k.record_type, value)
            out.append((k.data["group"], k.data["topic"], k.data["partition"],
                        None if v is None else v.version, None if v is None else v.data))
    return out


# ---------------------------------------------------------------- group formation helpers
def form_group(coord, group_id, instances, topics=("orders",), protocol_type="consumer", metadata=None,
               rebalance_timeout_ms=5_000):
    """Join then sync static members; returns {instance id: member id} and leaves the group Stable."""
    replies = {}
    for inst in instances:
        req = JoinGroupRequest(version=5, group_id=group_id, session_timeout_ms=10_000,
                               rebalance_timeout_ms=rebalance_timeout_ms, member_id="",
                               group_instance_id=inst,
                               protocol_type=protocol_type,
                               protocols=[JoinGroupRequest.JoinGroupRequestProtocol(
                                   name="range",
                                   metadata=subscription(*topics) if metadata is None else metadata)])
        replies[inst] = coord.handle(req)
    coord.advance(0)
    if not all(r.done for r in replies.values()):
        coord.advance(rebalance_timeout_ms)
    members = {inst: r.response.member_id for inst, r in replies.items()}
    generation = next(iter(replies.values())).response.generation_id
    for inst, member_id in members.items():
        coord.handle(SyncGroupRequest(version=3, group_id=group_id, generation_id=generation,
                                      member_id=member_id, group_instance_id=inst,
                                      assignments=[]))
    assert coord.group(group_id).state == "Stable"
    return members


def generation_of(coord, group_id):
    return coord.group(group_id).generation


# ---------------------------------------------------------------- OffsetCommit: simple groups
@pytest.mark.parametrize("version", range(0, 10))
def test_simple_commit_every_version_creates_empty_group_and_is_fetchable(version):
    coord = make_coord()
    coord.advance(1234)
    resp = call(coord, commit_request("g", {("t", 0): (10, "m", 4), ("t", 1): (11, None)},
                                      version=version))
    assert errors(resp) == {("t", 0): 0, ("t", 1): 0}
    epoch = 4 if version >= 6 else -1          # CommittedLeaderEpoch exists from v6
    assert coord.committed_offsets("g") == {("t", 0): oam(10, 1234, "m", epoch),
                                            ("t", 1): oam(11, 1234, "")}
    assert coord.group("g").state == "Empty"
    assert coord.group("g").protocol_type in (None, "")
    # OffsetCommitValue v4 (Kafka 4.1+); "t" is not in the image, so no topic id tag
    assert offset_records(coord) == [
        ("g", "t", 0, 4, {"offset": 10, "leaderEpoch": epoch, "metadata": "m",
                          "commitTimestamp": 1234, "expireTimestamp": -1, "topicId": NO_TOPIC_ID}),
        ("g", "t", 1, 4, {"offset": 11, "leaderEpoch": -1, "metadata": "",
                          "commitTimestamp": 1234, "expireTimestamp": -1, "topicId": NO_TOPIC_ID})]


def test_v1_commit_timestamp_from_request_is_kept():
    coord = make_coord()
    coord.advance(50)
    call(coord, commit_request("g", {("t", 0): 1}, version=1, commit_timestamp=777))
    call(coord, commit_request("g", {("t", 1): 2}, version=1, commit_timestamp=-1))
    assert coord.committed_offsets("g") == {("t", 0): oam(1, 777), ("t", 1): oam(2, 50)}


@pytest.mark.parametrize("version", [2, 3, 4])
def test_explicit_retention_writes_value_v1_with_expire_timestamp(version):
    coord = make_coord()
    coord.advance(1000)
    call(coord, commit_request("g", {("t", 0): (5, "x")}, version=version, retention=60_000))
    assert coord.committed_offsets("g") == {("t", 0): oam(5, 1000, "x", expire=61_000)}
    assert offset_records(coord) == [("g", "t", 0, 1, {
        "offset": 5, "leaderEpoch": -1, "metadata": "x", "commitTimestamp": 1000,
        "expireTimestamp": 61_000, "topicId": NO_TOPIC_ID})]


def test_a_retention_past_the_end_of_time_wraps_like_javas_long_instead_of_crashing():
    """Found by the frame fuzzer: now + retention overflowed the record's int64 expireTimestamp."""
    coord = make_coord()
    coord.advance(1000)
    call(coord, commit_request("g", {("t", 0): (5, "x")}, version=2, retention=(1 << 63) - 1))
    expire = 1000 + (1 << 63) - 1 - (1 << 64)
    assert coord.committed_offsets("g") == {("t", 0): oam(5, 1000, "x", expire=expire)}
    assert offset_records(coord)[0][4]["expireTimestamp"] == expire


def test_metadata_too_large_is_per_partition():
    coord = make_coord(**{"offset.metadata.max.bytes": 4})
    resp = call(coord, commit_request("g", {("t", 0): (1, "abcd"), ("t", 1): (2, "abcde"),
                                            ("t", 2): (3, "\U0001F600\U0001F600\U0001F600")}))
    # Java counts UTF-16 units: three emoji are 6 units > 4
    assert errors(resp) == {("t", 0): 0, ("t", 1): 12, ("t", 2): 12}
    assert coord.committed_offsets("g") == {("t", 0): oam(1, 0, "abcd")}


@pytest.mark.parametrize("version,code", [(2, 22), (8, 22), (9, 69)])
def test_unknown_group_with_generation_is_rejected_and_not_created(version, code):
    coord = make_coord()
    resp = call(coord, commit_request("nope", {("t", 0): 1}, version=version, generation=3,
                                      member_id="m"))
    assert errors(resp) == {("t", 0): code}
    assert coord.group("nope") is None
    assert coord.committed_offsets("nope") == {}
    assert offset_records(coord) == []


def test_empty_group_id_is_accepted_for_commit_and_fetch():
    coord = make_coord()
    assert errors(call(coord, commit_request("", {("t", 0): 9}))) == {("t", 0): 0}
    assert fetched(call(coord, fetch_request("", {"t": [0]}))) == {("t", 0): (9, -1, "", 0)}


# ---------------------------------------------------------------- OffsetCommit: members
def test_member_commit_validation_in_stable_group():
    coord = make_coord()
    members = form_group(coord, "g", ["i1", "i2"])
    gen = generation_of(coord, "g")
    m1 = members["i1"]
    ok = call(coord, commit_request("g", {("orders", 0): 5}, version=7, generation=gen,
                                    member_id=m1, instance_id="i1"))
    assert errors(ok) == {("orders", 0): 0}
    cases = [
        (dict(generation=gen + 1, member_id=m1, instance_id="i1"), 22),
        (dict(generation=gen, member_id="ghost"), 25),
        (dict(generation=gen, member_id=m1, instance_id="i2"), 82),
        (dict(generation=gen, member_id="", instance_id="i1"), 82),
        (dict(generation=gen, member_id=m1, instance_id="unknown-instance"), 25),
        (dict(generation=-1, member_id=""), 25),        # no identity on a non-empty group
    ]
    for kwargs, code in cases:
        resp = call(coord, commit_request("g", {("orders", 1): 7}, version=7, **kwargs))
        assert errors(resp) == {("orders", 1): code}, kwargs
    assert coord.committed_offsets("g") == {("orders", 0): oam(5, coord.now_ms)}


def test_accepted_commit_refreshes_the_member_session():
    coord = make_coord()
    members = form_group(coord, "g", ["i1"])
    gen = generation_of(coord, "g")
    for _ in range(3):
        coord.advance(9_000)              # session timeout is 10 s
        resp = call(coord, commit_request("g", {("orders", 0): 1}, version=7, generation=gen,
                                          member_id=members["i1"], instance_id="i1"))
        assert errors(resp) == {("orders", 0): 0}
    assert coord.group("g").state == "Stable"
    assert [m.member_id for m in coord.group("g").members] == [members["i1"]]
    coord.advance(10_001)
    assert coord.group("g").members == ()


def test_rejected_commit_does_not_refresh_the_session():
    coord = make_coord()
    members = form_group(coord, "g", ["i1"])
    gen = generation_of(coord, "g")
    coord.advance(9_000)
    resp = call(coord, commit_request("g", {("orders", 0): 1}, version=7, generation=gen + 5,
                                      member_id=members["i1"], instance_id="i1"))
    assert errors(resp) == {("orders", 0): 22}
    coord.advance(1_001)
    assert coord.group("g").members == ()


def test_commit_during_completing_rebalance_is_rebalance_in_progress_but_txn_is_accepted():
    coord = make_coord()
    members = form_group(coord, "g", ["i1"])
    leader = members["i1"]
    # the leader rejoins with its known id: PreparingRebalance, then (sole member) completes at once
    join = coord.handle(JoinGroupRequest(
        version=5, group_id="g", session_timeout_ms=10_000, rebalance_timeout_ms=5_000,
        member_id=leader, group_instance_id="i1", protocol_type="consumer",
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=subscription("orders"))]))
    coord.advance(0)
    assert join.done and coord.group("g").state == "CompletingRebalance"
    gen = join.response.generation_id
    resp = call(coord, commit_request("g", {("orders", 0): 3}, version=7, generation=gen,
                                      member_id=leader, instance_id="i1"))
    assert errors(resp) == {("orders", 0): 27}
    resp = call(coord, txn_commit_request("g", {("orders", 0): 4}, producer_id=1, generation=gen,
                                          member_id=leader, instance_id="i1"))
    assert errors(resp) == {("orders", 0): 0}
    assert coord.committed_offsets("g") == {}


def test_commit_in_preparing_rebalance_with_current_generation_is_accepted():
    coord = make_coord()
    members = form_group(coord, "g", ["i1", "i2"])
    gen = generation_of(coord, "g")
    # i1 (leader) rejoins: PreparingRebalance until i2 rejoins or the rebalance timeout
    coord.handle(JoinGroupRequest(
        version=5, group_id="g", session_timeout_ms=10_000, rebalance_timeout_ms=5_000,
        member_id=members["i1"], group_instance_id="i1", protocol_type="consumer",
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=subscription("orders"))]))
    assert coord.group("g").state == "PreparingRebalance"
    resp = call(coord, commit_request("g", {("orders", 1): 8}, version=7, generation=gen,
                                      member_id=members["i2"], instance_id="i2"))
    assert errors(resp) == {("orders", 1): 0}
    assert coord.committed_offsets("g") == {("orders", 1): oam(8, coord.now_ms)}


def test_commit_in_preparing_rebalance_keeps_a_non_rejoined_member_alive():
    coord = make_coord()
    members = form_group(coord, "g", ["i1", "i2"], rebalance_timeout_ms=60_000)
    gen = generation_of(coord, "g")
    coord.handle(JoinGroupRequest(
        version=5, group_id="g", session_timeout_ms=10_000, rebalance_timeout_ms=60_000,
        member_id=members["i1"], group_instance_id="i1", protocol_type="consumer",
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=subscription("orders"))]))
    assert coord.group("g").state == "PreparingRebalance"
    for _ in range(4):            # 36 s with a 10 s session: only the commits keep i2 alive
        coord.advance(9_000)
        resp = call(coord, commit_request("g", {("orders", 1): 8}, version=7, generation=gen,
                                          member_id=members["i2"], instance_id="i2"))
        assert errors(resp) == {("orders", 1): 0}
    assert coord.group("g").state == "PreparingRebalance"
    assert {m.group_instance_id for m in coord.group("g").members} == {"i1", "i2"}
    coord.advance(10_001)
    assert {m.group_instance_id for m in coord.group("g").members} == {"i1"}


def test_generation_minus_one_commit_accepted_once_group_is_empty_again():
    coord = make_coord()
    members = form_group(coord, "g", ["i1"])
    coord.handle(LeaveGroupRequest(version=3, group_id="g", members=[
        LeaveGroupRequest.MemberIdentity(member_id=members["i1"], group_instance_id="i1")]))
    coord.advance(0)
    assert coord.group("g").state == "Empty"
    resp = call(coord, commit_request("g", {("orders", 0): 42}, version=8))
    assert errors(resp) == {("orders", 0): 0}
    assert coord.committed_offsets("g")[("orders", 0)].offset == 42


# ---------------------------------------------------------------- topic ids (v10)
def test_v10_topic_ids_resolve_through_the_registry():
    coord = make_coord()
    known, unknown = uuid.UUID(int=1), uuid.UUID(int=2)
    coord.offsets.topic_ids["orders"] = known
    resp = call(coord, commit_request("g", {("orders", 0): 5, ("other", 0): 6}, version=10,
                                      topic_ids={"orders": known, "other": unknown}))
    assert errors(resp) == {(known, 0): 0, (unknown, 0): 100}
    # the resolved id is persisted (OffsetCommitValue v4's topicId, Kafka 4.1+)
    assert coord.committed_offsets("g") == {("orders", 0): dataclasses.replace(oam(5), topic_id=known)}
    resp = call(coord, fetch_groups_request({"g": None}, version=10))
    assert fetched(resp) == {(known, 0): (5, -1, "", 0)}
    resp = call(coord, fetch_groups_request({"g": {"orders": [0], "other": [0]}}, version=10,
                                            topic_ids={"orders": known, "other": unknown}))
    assert fetched(resp) == {(known, 0): (5, -1, "", 0), (unknown, 0): (-1, -1, "", 100)}


def test_v10_commit_with_only_unknown_topics_does_not_create_the_group():
    coord = make_coord()
    resp = call(coord, commit_request("g", {("x", 0): 1}, version=10, topic_ids={"x": uuid.UUID(int=9)}))
    assert errors(resp) == {(uuid.UUID(int=9), 0): 100}
    assert coord.group("g") is None


# ---------------------------------------------------------------- OffsetFetch
@pytest.mark.parametrize("version", range(0, 8))
def test_fetch_single_group_versions(version):
    coord = make_coord()
    call(coord, commit_request("g", {("t", 0): (10, "a", 7), ("t", 1): (11, "b")}))
    resp = call(coord, fetch_request("g", {"t": [0, 1, 2], "u": [0]}, version=version))
    epoch = 7 if version >= 5 else -1          # CommittedLeaderEpoch is on the wire from v5
    assert fetched(roundtrip(resp)) == {("t", 0): (10, epoch, "a", 0), ("t", 1): (11, -1, "b", 0),
                                        ("t", 2): (-1, -1, "", 0), ("u", 0): (-1, -1, "", 0)}


@pytest.mark.parametrize("version", range(2, 8))
def test_fetch_all_partitions_with_null_topics(version):
    coord = make_coord()
    call(coord, commit_request("g", {("t", 1): 11, ("t", 0): 10, ("u", 3): 5}))
    resp = call(coord, fetch_request("g", None, version=version))
    assert fetched(resp) == {("t", 1): (11, -1, "", 0), ("t", 0): (10, -1, "", 0),
                             ("u", 3): (5, -1, "", 0)}
    assert fetched(call(coord, fetch_request("unknown", None, version=version))) == {}


@pytest.mark.parametrize("version", [8, 9])
def test_fetch_batched_groups(version):
    coord = make_coord()
    call(coord, commit_request("a", {("t", 0): 1}))
    call(coord, commit_request("b", {("t", 0): 2, ("t", 1): 3}))
    resp = call(coord, fetch_groups_request({"a": {"t": [0, 1]}, "b": None, "c": {"t": [0]}},
                                            version=version))
    assert [g.group_id for g in resp.groups] == ["a", "b", "c"]
    assert [g.error_code for g in resp.groups] == [0, 0, 0]
    assert fetched(resp, "a") == {("t", 0): (1, -1, "", 0), ("t", 1): (-1, -1, "", 0)}
    assert fetched(resp, "b") == {("t", 0): (2, -1, "", 0), ("t", 1): (3, -1, "", 0)}
    assert fetched(resp, "c") == {("t", 0): (-1, -1, "", 0)}


def test_fetch_require_stable_reports_pending_transactional_offsets():
    coord = make_coord()
    call(coord, commit_request("g", {("t", 0): 1, ("t", 1): 2}))
    call(coord, txn_commit_request("g", {("t", 0): 50}, producer_id=9))
    stable = call(coord, fetch_request("g", {"t": [0, 1]}, version=7, require_stable=True))
    assert fetched(stable) == {("t", 0): (-1, -1, "", 88), ("t", 1): (2, -1, "", 0)}
    # fetch-all lists only committed partitions, the pending one flagged
    assert fetched(call(coord, fetch_request("g", None, version=7, require_stable=True))) == {
        ("t", 0): (-1, -1, "", 88), ("t", 1): (2, -1, "", 0)}
    # without require_stable (and before v7) the last committed offset is returned
    assert fetched(call(coord, fetch_request("g", {"t": [0]}, version=7))) == {("t", 0): (1, -1, "", 0)}
    assert fetched(call(coord, fetch_request("g", {"t": [0]}, version=6))) == {("t", 0): (1, -1, "", 0)}
    batched = call(coord, fetch_groups_request({"g": {"t": [0]}}, version=9, require_stable=True))
    assert fetched(batched) == {("t", 0): (-1, -1, "", 88)}
    coord.end_transaction(9, 0, commit=True)
    assert fetched(call(coord, fetch_request("g", {"t": [0]}, version=7, require_stable=True))) == {
        ("t", 0): (50, -1, "", 0)}


def test_fetch_ignores_member_identity_for_classic_groups():
    coord = make_coord()
    form_group(coord, "g", ["i1"])
    call(coord, commit_request("g", {("orders", 0): 3}, version=7,
                                generation=generation_of(coord, "g"),
                                member_id=coord.group("g").members[0].member_id, instance_id="i1"))
    req = fetch_groups_request({"g": {"orders": [0]}}, version=9)
    req.groups[0].member_id = "somebody-else"
    req.groups[0].member_epoch = 99
    assert fetched(call(coord, req)) == {("orders", 0): (3, -1, "", 0)}


# ---------------------------------------------------------------- TxnOffsetCommit + markers
@pytest.mark.parametrize("version", range(0, 6))
def test_txn_commit_is_pending_until_commit_marker(version):
    coord = make_coord()
    coord.advance(100)
    resp = call(coord, txn_commit_request("g", {("t", 0): (5, "tx", 2)}, producer_id=77,
                                          producer_epoch=3, version=version))
    assert errors(resp) == {("t", 0): 0}
    epoch = 2 if version >= 2 else -1
    assert coord.committed_offsets("g") == {}
    assert coord.offsets.pending("g") == {77: {("t", 0): oam(5, 100, "tx", epoch)}}
    entry = coord.log[-1]
    assert (entry.producer_id, entry.producer_epoch, entry.transactional, entry.control) == (77, 3, True, None)
    coord.advance(5)
    coord.end_transaction(77, 3, commit=True, coordinator_epoch=4)
    marker = coord.log[-1]
    assert (marker.records, marker.producer_id, marker.producer_epoch, marker.control,
            marker.coordinator_epoch, marker.timestamp_ms) == ([], 77, 3, "COMMIT", 4, 105)
    assert coord.committed_offsets("g") == {("t", 0): oam(5, 100, "tx", epoch)}
    assert coord.offsets.pending("g") == {}


def test_txn_abort_drops_pending_offsets():
    coord = make_coord()
    call(coord, commit_request("g", {("t", 0): 1}))
    call(coord, txn_commit_request("g", {("t", 0): 9, ("t", 1): 9}, producer_id=5))
    coord.end_transaction(5, 0, commit=False)
    assert coord.committed_offsets("g") == {("t", 0): oam(1)}
    assert coord.offsets.pending("g") == {}
    assert coord.log[-1].control == "ABORT"


def test_segment_a_transaction_scenario_through_the_coordinator():
    coord = make_coord()
    call(coord, txn_commit_request("my-group", {("orders", 0): 500, ("orders", 1): 600}, producer_id=4000))
    call(coord, commit_request("my-group", {("orders", 1): 650}))
    coord.end_transaction(4000, 0, commit=True)
    call(coord, txn_commit_request("my-group", {("orders", 0): 999}, producer_id=4001))
    coord.end_transaction(4001, 0, commit=False)
    assert {tp: v.offset for tp, v in coord.committed_offsets("my-group").items()} == {
        ("orders", 0): 500, ("orders", 1): 650}
    replayed = GroupCoordinator.from_records(coord.log)
    assert replayed.committed_offsets("my-group") == coord.committed_offsets("my-group")


def test_txn_commit_validation():
    coord = make_coord()
    assert errors(call(coord, txn_commit_request("", {("t", 0): 1}, producer_id=1))) == {("t", 0): 24}
    # unknown group with a generation: ILLEGAL_GENERATION at every version (no v9-style 69)
    assert errors(call(coord, txn_commit_request("nope", {("t", 0): 1}, producer_id=1,
                                                 generation=2, member_id="m"))) == {("t", 0): 22}
    assert coord.group("nope") is None
    members = form_group(coord, "g", ["i1"])
    gen = generation_of(coord, "g")
    cases = [
        (dict(generation=gen, member_id=members["i1"], instance_id="i1"), 0),
        (dict(generation=gen + 1, member_id=members["i1"], instance_id="i1"), 22),
        (dict(generation=gen, member_id=members["i1"], instance_id="other"), 25),
        (dict(generation=gen, member_id="x", instance_id="i1"), 82),
        (dict(generation=-1, member_id=""), 0),        # old producers send no identity
    ]
    for kwargs, code in cases:
        resp = call(coord, txn_commit_request("g", {("orders", 0): 1}, producer_id=2, **kwargs))
        assert errors(resp) == {("orders", 0): code}, kwargs


def test_txn_commit_with_stale_producer_epoch_is_fenced():
    coord = make_coord()
    call(coord, txn_commit_request("g", {("t", 0): 1}, producer_id=3, producer_epoch=5))
    assert errors(call(coord, txn_commit_request("g", {("t", 0): 2}, producer_id=3,
                                                 producer_epoch=4))) == {("t", 0): 47}
    assert coord.offsets.pending("g") == {3: {("t", 0): oam(1)}}
    with pytest.raises(ValueError, match="producer id 3 epoch 4"):
        coord.end_transaction(3, 4, commit=True)
    coord.end_transaction(3, 6, commit=True)
    assert coord.committed_offsets("g") == {("t", 0): oam(1)}


def test_txn_commit_without_producer_id_is_refused():
    coord = make_coord()
    assert errors(call(coord, txn_commit_request("g", {("t", 0): 1}, producer_id=-1))) == {("t", 0): -1}
    assert coord.committed_offsets("g") == {} and coord.offsets.pending("g") == {}
    with pytest.raises(ValueError, match="producer id -1"):
        coord.end_transaction(-1, 0, commit=True)


def test_txn_metadata_too_large():
    coord = make_coord(**{"offset.metadata.max.bytes": 1})
    resp = call(coord, txn_commit_request("g", {("t", 0): (1, "ab"), ("t", 1): (2, "a")}, producer_id=8))
    assert errors(resp) == {("t", 0): 12, ("t", 1): 0}
    assert coord.offsets.pending("g") == {8: {("t", 1): oam(2, 0, "a")}}


# ---------------------------------------------------------------- OffsetDelete
def test_offset_delete_on_empty_group_writes_tombstones():
    coord = make_coord()
    call(coord, commit_request("g", {("t", 0): 1, ("t", 1): 2, ("u", 0): 3}))
    call(coord, txn_commit_request("g", {("p", 0): 9}, producer_id=4))
    before = len(offset_records(coord))
    resp = call(coord, delete_request("g", {"t": [0, 5], "x": [0], "p": [0]}))
    assert resp.error_code == 0
    # every partition is answered; tombstones only where an offset (committed or pending) exists
    assert errors(resp) == {("t", 0): 0, ("t", 5): 0, ("x", 0): 0, ("p", 0): 0}
    assert [t.name for t in resp.topics] == ["t", "x", "p"]
    assert coord.committed_offsets("g") == {("t", 1): oam(2), ("u", 0): oam(3)}
    assert offset_records(coord)[before:] == [("g", "t", 0, None, None), ("g", "p", 0, None, None)]
    coord.end_transaction(4, 0, commit=True)          # its key was wiped by the tombstone
    assert ("p", 0) not in coord.committed_offsets("g")


def test_offset_delete_top_level_errors():
    coord = make_coord()
    assert call(coord, delete_request("", {"t": [0]})).error_code == 24
    assert call(coord, delete_request("nope", {"t": [0]})).error_code == 69
    form_group(coord, "connect-like", ["w1"], protocol_type="connect")
    call(coord, commit_request("connect-like", {("t", 0): 1}, generation=-1))  # refused: 25
    assert call(coord, delete_request("connect-like", {"t": [0]})).error_code == 68


def test_offset_delete_refuses_subscribed_topics_of_a_live_consumer_group():
    coord = make_coord()
    members = form_group(coord, "g", ["i1", "i2"], topics=("orders", "payments"))
    gen = generation_of(coord, "g")
    call(coord, commit_request("g", {("orders", 0): 1, ("stale", 0): 2}, version=7, generation=gen,
                                member_id=members["i1"], instance_id="i1"))
    resp = call(coord, delete_request("g", {"orders": [0, 1], "stale": [0]}))
    assert resp.error_code == 0
    assert errors(resp) == {("orders", 0): 86, ("orders", 1): 86, ("stale", 0): 0}
    assert set(coord.committed_offsets("g")) == {("orders", 0)}


def test_unparsable_subscription_means_no_known_subscription():
    coord = make_coord(**{"offsets.retention.minutes": 1, "offsets.retention.check.interval.ms": 1000})
    members = form_group(coord, "g", ["i1"], metadata=b"not a subscription")
    gen = generation_of(coord, "g")
    call(coord, commit_request("g", {("orders", 0): 1, ("orders", 1): 2}, version=7, generation=gen,
                                member_id=members["i1"], instance_id="i1"))
    # OffsetDelete: a "consumer" group with an unknown subscription counts as subscribed to all
    assert errors(call(coord, delete_request("g", {"orders": [0], "x": [1]}))) == {
        ("orders", 0): 86, ("x", 1): 86}
    # expiry of a Stable consumer group needs a known subscription: nothing expires
    from kafka.protocol.consumer.group import HeartbeatRequest
    for _ in range(14):
        coord.advance(5_000)
        coord.handle(HeartbeatRequest(version=3, group_id="g", generation_id=gen,
                                      member_id=members["i1"], group_instance_id="i1"))
    assert set(coord.committed_offsets("g")) == {("orders", 0), ("orders", 1)}


# ---------------------------------------------------------------- DeleteGroups
def test_delete_groups_tombstones_offsets_including_pending_only_partitions():
    from kafka.protocol.admin.groups import DeleteGroupsRequest
    coord = make_coord()
    call(coord, commit_request("g", {("t", 0): 1}))
    call(coord, txn_commit_request("g", {("t", 0): 2, ("t", 9): 3}, producer_id=11))
    reply = coord.handle(DeleteGroupsRequest(version=2, groups_names=["g"]))
    assert reply.done and reply.response.results[0].error_code == 0
    assert coord.group("g") is None
    assert coord.committed_offsets("g") == {}
    tail = offset_records(coord)[-2:]
    assert tail == [("g", "t", 0, None, None), ("g", "t", 9, None, None)]
    # the transaction is still open but lost its keys: its COMMIT installs nothing
    coord.end_transaction(11, 0, commit=True)
    assert coord.committed_offsets("g") == {}
    assert not coord.offsets.has_offsets("g")


def test_deleted_group_with_an_open_transaction_is_not_found():
    """Spec c.3: a missing group is not found even if an open transaction still names it."""
    from kafka.protocol.admin.groups import DeleteGroupsRequest
    coord = make_coord()
    call(coord, txn_commit_request("g", {("t", 0): 2}, producer_id=11))
    assert coord.handle(DeleteGroupsRequest(version=2, groups_names=["g"])).response.results[0].error_code == 0
    assert coord.group("g") is None and coord.offsets.has_offsets("g")
    for version, code in ((8, 22), (9, 69)):
        resp = call(coord, commit_request("g", {("t", 0): 5}, version=version, generation=3, member_id="m"))
        assert errors(resp) == {("t", 0): code}
    resp = call(coord, txn_commit_request("g", {("t", 0): 5}, producer_id=12, generation=3, member_id="m"))
    assert errors(resp) == {("t", 0): 22}
    assert call(coord, delete_request("g", {"t": [0]})).error_code == 69
    assert coord.group("g") is None


# ---------------------------------------------------------------- retention
def group_tombstones(coord):
    out = []
    for key, value in coord.records:
        k = decode_key(key)
        if k.record_type == 2 and value is None:
            out.append(k.data["group"])
    return out


def test_simple_group_offsets_expire_on_the_default_timer_and_the_group_is_deleted():
    coord = make_coord()
    call(coord, commit_request("g", {("t", 0): 1}))
    assert coord.next_deadline_ms() == CHECK_MS
    coord.advance(RETENTION_MS - 1)
    assert coord.committed_offsets("g") == {("t", 0): oam(1)}
    coord.advance(1)          # the check at 7 days exactly (1008 intervals) finds it expired
    assert coord.committed_offsets("g") == {}
    assert coord.group("g") is None
    assert offset_records(coord)[-1] == ("g", "t", 0, None, None)
    assert group_tombstones(coord) == ["g"]
    assert coord.log[-1].timestamp_ms == RETENTION_MS


def fast_retention_coord():
    # retention 1 minute, checked every second
    return make_coord(**{"offsets.retention.minutes": 1, "offsets.retention.check.interval.ms": 1000})


def test_expiry_uses_commit_time_per_partition_in_a_simple_group():
    coord = fast_retention_coord()
    call(coord, commit_request("g", {("t", 0): 1}))
    coord.advance(30_000)
    call(coord, commit_request("g", {("t", 1): 2}))
    coord.advance(30_000)
    assert set(coord.committed_offsets("g")) == {("t", 1)}
    coord.advance(30_000)
    assert coord.committed_offsets("g") == {} and coord.group("g") is None


def test_explicit_retention_expires_at_its_own_timestamp():
    coord = fast_retention_coord()
    call(coord, commit_request("g", {("t", 0): 1}, version=2, retention=5_500))
    call(coord, commit_request("g", {("t", 1): 1}, version=2))
    coord.advance(5_999)
    assert set(coord.committed_offsets("g")) == {("t", 0), ("t", 1)}
    coord.advance(1)          # first check at or after 5 500 ms
    assert set(coord.committed_offsets("g")) == {("t", 1)}


def test_empty_consumer_group_expires_from_the_time_it_became_empty():
    from kafka.protocol.consumer.group import HeartbeatRequest
    coord = fast_retention_coord()
    members = form_group(coord, "g", ["i1"])
    call(coord, commit_request("g", {("orders", 0): 5}, version=7, generation=generation_of(coord, "g"),
                                member_id=members["i1"], instance_id="i1"))
    for _ in range(20):       # stay alive 100 s (session timeout 10 s), well past commit + 1 min
        coord.advance(5_000)
        coord.handle(HeartbeatRequest(version=3, group_id="g", generation_id=generation_of(coord, "g"),
                                      member_id=members["i1"], group_instance_id="i1"))
    assert coord.group("g").state == "Stable"
    assert set(coord.committed_offsets("g")) == {("orders", 0)}   # subscribed: kept
    coord.handle(LeaveGroupRequest(version=3, group_id="g", members=[
        LeaveGroupRequest.MemberIdentity(member_id=members["i1"], group_instance_id="i1")]))
    coord.advance(0)
    empty_at = coord.now_ms
    assert coord.group("g").state == "Empty"
    coord.advance(59_000)
    assert set(coord.committed_offsets("g")) == {("orders", 0)}
    assert empty_at % 1_000 == 0          # checks run on whole seconds here
    coord.advance(1_000)
    assert coord.committed_offsets("g") == {}
    assert coord.group("g") is None


def test_stable_consumer_group_expires_only_unsubscribed_topics():
    from kafka.protocol.consumer.group import HeartbeatRequest
    coord = fast_retention_coord()
    members = form_group(coord, "g", ["i1"], topics=("orders",))
    gen = generation_of(coord, "g")
    call(coord, commit_request("g", {("orders", 0): 5, ("old-topic", 0): 6}, version=7, generation=gen,
                                member_id=members["i1"], instance_id="i1"))
    for _ in range(14):
        coord.advance(5_000)
        coord.handle(HeartbeatRequest(version=3, group_id="g", generation_id=gen,
                                      member_id=members["i1"], group_instance_id="i1"))
    assert coord.group("g").state == "Stable"
    assert set(coord.committed_offsets("g")) == {("orders", 0)}
    assert coord.group("g") is not None


def test_non_consumer_protocol_group_keeps_offsets_while_members_are_alive():
    from kafka.protocol.consumer.group import HeartbeatRequest
    coord = fast_retention_coord()
    members = form_group(coord, "w", ["w1"], protocol_type="connect")
    gen = generation_of(coord, "w")
    call(coord, commit_request("w", {("cfg", 0): 5}, version=7, generation=gen,
                                member_id=members["w1"], instance_id="w1"))
    for _ in range(14):
        coord.advance(5_000)
        coord.handle(HeartbeatRequest(version=3, group_id="w", generation_id=gen,
                                      member_id=members["w1"], group_instance_id="w1"))
    assert set(coord.committed_offsets("w")) == {("cfg", 0)}


def test_open_transaction_blocks_expiry_and_group_deletion():
    coord = fast_retention_coord()
    call(coord, commit_request("g", {("t", 0): 1, ("t", 1): 1}))
    call(coord, txn_commit_request("g", {("t", 0): 2}, producer_id=6))
    coord.advance(61_000)
    # t-1 expired; t-0 has a pending transactional offset; the group stays
    assert set(coord.committed_offsets("g")) == {("t", 0)}
    assert coord.group("g") is not None
    coord.end_transaction(6, 0, commit=False)
    coord.advance(1_000)
    assert coord.committed_offsets("g") == {} and coord.group("g") is None


def test_empty_group_without_offsets_is_deleted_by_the_cleanup():
    coord = fast_retention_coord()
    members = form_group(coord, "g", ["i1"])
    coord.handle(LeaveGroupRequest(version=3, group_id="g", members=[
        LeaveGroupRequest.MemberIdentity(member_id=members["i1"], group_instance_id="i1")]))
    coord.advance(0)
    assert coord.group("g").state == "Empty"
    coord.advance(1_000)
    assert coord.group("g") is None
    assert group_tombstones(coord) == ["g"]


# ---------------------------------------------------------------- error responses on the wire
@pytest.mark.parametrize("version", range(1, 11))
def test_commit_error_responses_encode_at_every_version(version):
    coord = make_coord()
    topic_id = uuid.UUID(int=3)
    coord.offsets.topic_ids["t"] = topic_id
    resp = call(coord, commit_request("nope", {("t", 0): 1, ("t", 1): 2}, version=version,
                                      generation=1, member_id="m", topic_ids={"t": topic_id}))
    ident = topic_id if version >= 10 else "t"
    code = 69 if version >= 9 else 22
    assert errors(roundtrip(resp)) == {(ident, 0): code, (ident, 1): code}


@pytest.mark.parametrize("version", range(0, 6))
def test_txn_error_responses_encode_at_every_version(version):
    coord = make_coord()
    resp = call(coord, txn_commit_request("", {("t", 0): 1}, producer_id=1, version=version))
    assert errors(roundtrip(resp)) == {("t", 0): 24}


def test_simple_group_from_a_commit_writes_no_group_record_and_is_rebuilt_on_failover():
    # Kafka persists a group created by an offset commit only through its offsets; its loader
    # recreates the "simple" group when it replays them.
    coord = make_coord()
    call(coord, commit_request("simple", {("orders", 0): 5}, generation=-1))
    types = [int.from_bytes(k[:2], "big") for k, _ in coord.records]
    assert types == [1]
    assert coord.group("simple").state == "Empty"
    replayed = GroupCoordinator.from_records(coord.records, config={"group.min.session.timeout.ms": 10})
    assert replayed.group("simple").state == "Empty"
    assert replayed.committed_offsets("simple")[("orders", 0)].offset == 5


def test_subscribed_topics_are_the_ones_cached_at_the_last_generation():
    """Kafka's ClassicGroup caches subscribedTopics in initNextGeneration and on load (replay): a
    static restart in Stable with another subscription (no rebalance, KAFKA-12759) and a newcomer
    still in the join phase do not change what OffsetDelete (and expiry) treat as subscribed."""
    def join(instance, topic, version=5):
        return coord.handle(JoinGroupRequest(
            version=version, group_id="g", session_timeout_ms=10_000, rebalance_timeout_ms=5_000,
            member_id="", group_instance_id=instance, protocol_type="consumer",
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=subscription(topic))]))

    coord = make_coord()
    form_group(coord, "g", ["i1"], topics=("orders",))
    restart = join("i1", "payments")
    assert restart.done and restart.response.error_code == 0 and coord.group("g").state == "Stable"
    assert errors(call(coord, delete_request("g", {"orders": [0], "payments": [0]}))) == {
        ("orders", 0): 86, ("payments", 0): 0}
    # the load recomputes them from the record, which holds the restarted member's subscription
    loaded = GroupCoordinator.from_records(coord.records)
    assert errors(call(loaded, delete_request("g", {"orders": [0], "payments": [0]}))) == {
        ("orders", 0): 0, ("payments", 0): 86}
    # a newcomer's topics count from the generation it joins
    join(None, "refunds", version=3)
    assert coord.group("g").state == "PreparingRebalance"
    assert errors(call(coord, delete_request("g", {"refunds": [0], "orders": [0]}))) == {
        ("refunds", 0): 0, ("orders", 0): 86}


@pytest.mark.parametrize("header", [3, -1])
def test_subscribed_topics_are_read_as_the_v0_prefix_of_any_version(header):
    """Kafka's ClassicGroup.computeSubscribedTopics skips the version header (deserializeVersion
    checks nothing) and reads the v0 layout (topics, user data) that every version extends: a
    v3 header over a body whose later fields are missing, or a negative version, still names
    the subscribed topics."""
    coord = make_coord()
    metadata = header.to_bytes(2, "big", signed=True) + subscription("orders")[2:]
    form_group(coord, "g", ["i1"], metadata=metadata)
    assert errors(call(coord, delete_request("g", {"orders": [0], "other": [0]}))) == {
        ("orders", 0): 86, ("other", 0): 0}
