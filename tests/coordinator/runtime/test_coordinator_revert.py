"""A failed append reverts the operation as one unit: the next request sees the state from before.

The host's ``log_writer`` raising is what a full disk looks like to the coordinator (``kgroup serve``
passes one that writes and fsyncs the ``__consumer_offsets`` partitions).
"""

import asyncio
from types import SimpleNamespace

import pytest
from kafka.protocol.consumer.group import SyncGroupRequest

from helpers.coordinator import RANGE, NONE, Harness, JoinGroupRequest, Protocol
from helpers.offsets import commit_request, fetch_request, fetched, txn_commit_request

from kgroup.coordinator import GroupCoordinator


class Disk:
    """A log_writer that keeps what it is given, or refuses while ``full``."""

    def __init__(self):
        self.full = False
        self.entries = []

    def __call__(self, entries):
        if self.full:
            raise OSError(28, "No space left on device")
        self.entries += entries


def attach(h: Harness) -> Disk:
    disk = Disk()
    h.coord.log_writer = disk
    return disk


def join_request(group, instance):
    """A static member's JoinGroup with an empty member id (a first join, or a restart)."""
    return JoinGroupRequest(version=9, group_id=group, session_timeout_ms=10_000,
                            rebalance_timeout_ms=30_000, member_id="", group_instance_id=instance,
                            protocol_type="consumer",
                            protocols=[Protocol(name=n, metadata=m) for n, m in RANGE])


def sync_request(member_id, instance, assignments=None):
    return SyncGroupRequest(
        version=5, group_id="g", generation_id=1, member_id=member_id, group_instance_id=instance,
        protocol_type="consumer", protocol_name="range",
        assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a)
                     for m, a in (assignments or {}).items()])


def committed(coord, group="g"):
    return {tp: v.offset for tp, v in coord.committed_offsets(group).items()}


def test_failed_offset_commit_leaves_the_old_offsets_visible():
    h = Harness()
    disk = attach(h)
    assert h.coord.handle(commit_request("g", {("t", 0): 5})).response is not None
    records, written = list(h.coord.records), len(disk.entries)
    disk.full = True
    reply = h.coord.handle(commit_request("g", {("t", 0): 9, ("t", 1): 3}))
    assert reply.done and reply.response is None and isinstance(reply.error, OSError)
    assert len(disk.entries) == written
    disk.full = False
    fetch = h.coord.handle(fetch_request("g", {"t": [0, 1]})).response
    assert fetched(fetch) == {("t", 0): (5, -1, "", NONE), ("t", 1): (-1, -1, "", NONE)}
    assert h.coord.records == records and committed(h.coord) == {("t", 0): 5}
    ok = h.coord.handle(commit_request("g", {("t", 0): 9}))
    assert ok.response is not None and [len(e.records) for e in ok.records] == [1]
    assert committed(h.coord) == {("t", 0): 9}


def test_failed_txn_commit_and_marker_leave_pending_offsets_and_epochs_as_before():
    h = Harness()
    disk = attach(h)
    h.coord.handle(txn_commit_request("g", {("t", 0): 7}, producer_id=4, producer_epoch=1))
    disk.full = True
    assert h.coord.handle(txn_commit_request("g", {("t", 0): 8}, producer_id=4,
                                             producer_epoch=2)).error is not None
    with pytest.raises(OSError):
        h.coord.end_transaction(4, 1, commit=True)
    assert h.coord.offsets.pending("g")[4][("t", 0)].offset == 7 and committed(h.coord) == {}
    disk.full = False
    h.coord.end_transaction(4, 1, commit=True)       # epoch 2 was never accepted
    assert committed(h.coord) == {("t", 0): 7}


def test_failed_leader_sync_leaves_the_group_completing_with_the_followers_parked():
    h = Harness()
    joins = h.static_join_round(["i0", "i1"])
    ids = {"i0": joins[0].response.member_id, "i1": joins[1].response.member_id}
    leader = joins[0].response.leader
    follower = next(m for m in ids.values() if m != leader)
    instance = {m: i for i, m in ids.items()}
    parked = h.coord.handle(sync_request(follower, instance[follower]))
    assert not parked.done
    before = h.group()
    timers = {k: h.coord.timer_deadline(k) for k in (f"heartbeat-g-{leader}", f"heartbeat-g-{follower}", "sync-g")}
    disk = attach(h)
    disk.full = True
    assignments = {leader: b"A0", follower: b"A1"}
    failed = h.coord.handle(sync_request(leader, instance[leader], assignments))
    assert failed.error is not None and not parked.done
    assert h.group() == before and h.group().state == "CompletingRebalance"
    assert {k: h.coord.timer_deadline(k) for k in timers} == timers
    assert disk.entries == [] and h.coord.records == [r for e in h.coord.log for r in e.records]
    disk.full = False
    ok = h.coord.handle(sync_request(leader, instance[leader], assignments))
    assert ok.response.error_code == NONE and ok.response.assignment == assignments[leader]
    assert parked.done and parked.response.assignment == assignments[follower]
    assert h.group().state == "Stable" and len(disk.entries) == 1
    # what was written is what memory holds: a failover lands on the same group
    restored = GroupCoordinator.from_records(h.coord.records, config=h.coord.config)
    assert restored.group("g").members == h.group().members


def test_failed_static_restart_keeps_the_old_member_id_and_order():
    h = Harness()
    ids = h.stable(instances=("i0", "i1", "i2"))
    before = h.group()
    disk = attach(h)
    disk.full = True
    assert h.coord.handle(join_request("g", "i0")).error is not None
    assert h.group() == before
    assert h.coord.timer_deadline(f"heartbeat-g-{ids['i0']}") is not None
    disk.full = False
    assert h.heartbeat(ids["i0"], 1, instance="i0").response.error_code == NONE


def test_failed_group_creation_leaves_no_group_and_no_timer():
    h = Harness()
    disk = attach(h)
    disk.full = True
    assert h.coord.handle(join_request("new", "s")).error is not None
    assert h.coord.group("new") is None and h.coord.groups() == []
    assert h.coord.timer_deadline("join-new") is None
    assert h.coord.next_deadline_ms() == h.coord.timer_deadline("expire-group-metadata")


def test_failed_timer_is_reverted_raised_and_fires_again():
    h = Harness()
    ids = h.stable(instances=(), dynamic=1)      # its session runs out: the group empties, a record
    key = f"heartbeat-g-{ids['d0']}"
    expiry = h.coord.timer_deadline(key)
    before = h.group()
    disk = attach(h)
    disk.full = True
    with pytest.raises(OSError):
        h.coord.advance(expiry - h.coord.now_ms + 5)
    assert h.coord.now_ms == expiry and h.group() == before and h.coord.timer_deadline(key) == expiry
    disk.full = False
    assert h.coord.advance(5) == disk.entries
    assert h.group().state == "Empty" and h.group().generation == before.generation + 1
    assert len(disk.entries) == 1 and h.coord.timer_deadline(key) is None


def test_serve_fails_a_commit_it_cannot_write_and_memory_stays_as_on_disk(tmp_path):
    from kgroup.server.harness import ThreadedBroker

    broker = ThreadedBroker(tmp_path / "logs", topics=[("t", 1)])
    bridge = broker.broker.groups
    ctx = SimpleNamespace(client_id="c", client_host="/127.0.0.1")

    async def commit(offset):
        answer = bridge.handle(commit_request("g", {("t", 0): offset}), ctx)
        return await answer if isinstance(answer, asyncio.Future) else answer

    def full(*_):
        raise OSError(28, "No space left on device")

    try:
        assert broker.call(commit(5)).topics[0].partitions[0].error_code == NONE
        bridge._write, write = full, bridge._write
        with pytest.raises(OSError):
            broker.call(commit(9))
        assert broker.committed_offsets("g")[("t", 0)].offset == 5
        bridge._write = write
        assert broker.call(commit(9)).topics[0].partitions[0].error_code == NONE
    finally:
        broker.stop()
    restarted = ThreadedBroker(tmp_path / "logs", topics=[("t", 1)])
    try:
        assert restarted.committed_offsets("g")[("t", 0)].offset == 9
    finally:
        restarted.stop()
