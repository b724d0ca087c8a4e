"""OffsetCommit / OffsetFetch / TxnOffsetCommit / OffsetDelete through the real GroupCoordinator.

Every scenario drives `coord.handle` with kafka-python request objects and checks exact error
codes, offsets, the records appended to the log, and that every response encodes at its version.
"""

from __future__ import annotations

import itertools
import uuid

import pytest
from kafka.protocol.consumer.group import JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest

from kgroup.coordinator import GroupCoordinator
from kgroup.coordinator.offsets import OffsetAndMetadata
from kgroup.records import decode_key, decode_value
from test_coordinator_offsets_helpers import (
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
def form_group(coord, group_id, instances, topics=("orders",), protocol_type="consumer"):
    """Join then sync static members; returns {instance id: member id} and leaves the group Stable."""
    replies = {}
    for inst in instances:
        req = JoinGroupRequest(version=5, group_id=group_id, session_timeout_ms=10_000,
                               rebalance_timeout_ms=5_000, member_id="", group_instance_id=inst,
                               protocol_type=protocol_type,
                               protocols=[JoinGroupRequest.JoinGroupRequestProtocol(
                                   name="range", metadata=subscription(*topics))])
        replies[inst] = coord.handle(req)
    coord.advance(0)
    if not all(r.done for r in replies.values()):
        coord.advance(5_000)
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
    assert offset_records(coord) == [
        ("g", "t", 0, 3, {"offset": 10, "leaderEpoch": epoch, "metadata": "m",
                          "commitTimestamp": 1234, "expireTimestamp": -1}),
        ("g", "t", 1, 3, {"offset": 11, "leaderEpoch": -1, "metadata": "",
                          "commitTimestamp": 1234, "expireTimestamp": -1})]


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
        "expireTimestamp": 61_000})]


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
    assert coord.committed_offsets("g") == {("orders", 0): oam(5)}
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
