"""The transaction and tombstone rules of Kafka's OffsetMetadataManager.replay, on the bare OffsetStore."""

from kgroup.coordinator.offsets.store import OffsetAndMetadata, OffsetStore


def oam(offset, ts=0):
    return OffsetAndMetadata(offset, -1, "", ts, None)


def test_plain_commit_replaces_and_tombstone_deletes():
    s = OffsetStore()
    s.put("g", ("t", 0), oam(1), 0)
    s.put("g", ("t", 0), oam(2), 1)
    assert s.committed("g") == {("t", 0): oam(2)}
    s.tombstone("g", ("t", 0))
    assert s.committed("g") == {}
    assert s.groups() == []


def test_pending_is_invisible_until_commit_marker():
    s = OffsetStore()
    s.put("g", ("t", 0), oam(5), 0, producer_id=7)
    assert s.committed("g") == {}
    assert s.pending("g") == {7: {("t", 0): oam(5)}}
    assert s.has_pending("g", ("t", 0)) and s.has_open_transactions("g")
    s.end_transaction(7, commit=True)
    assert s.committed("g") == {("t", 0): oam(5)}
    assert s.pending("g") == {} and not s.has_open_transactions("g")


def test_abort_drops_pending_and_keeps_committed():
    s = OffsetStore()
    s.put("g", ("t", 0), oam(1), 0)
    s.put("g", ("t", 0), oam(9), 1, producer_id=7)
    s.end_transaction(7, commit=False)
    assert s.committed("g") == {("t", 0): oam(1)}
    assert s.pending("g") == {}


def test_later_plain_commit_survives_the_commit_marker():
    # Segment A of the shared vectors: pid 4000 writes orders-0=500 and orders-1=600 (offsets 15,
    # 16), a plain commit writes orders-1=650 (offset 17), pid 4000 commits, pid 4001 writes
    # orders-0=999 and aborts.
    s = OffsetStore()
    s.put("my-group", ("orders", 0), oam(500), 15, producer_id=4000)
    s.put("my-group", ("orders", 1), oam(600), 16, producer_id=4000)
    s.put("my-group", ("orders", 1), oam(650), 17)
    s.end_transaction(4000, commit=True)
    s.put("my-group", ("orders", 0), oam(999), 19, producer_id=4001)
    s.end_transaction(4001, commit=False)
    assert s.committed("my-group") == {("orders", 0): oam(500), ("orders", 1): oam(650)}


def test_earlier_plain_commit_is_overridden_by_the_commit_marker():
    s = OffsetStore()
    s.put("g", ("t", 0), oam(1), 3)
    s.put("g", ("t", 0), oam(2), 4, producer_id=7)
    s.end_transaction(7, commit=True)
    assert s.committed("g") == {("t", 0): oam(2)}


def test_tombstone_removes_key_from_open_transactions_of_that_group_only():
    s = OffsetStore()
    s.put("g", ("t", 0), oam(1), 0, producer_id=7)
    s.put("g", ("t", 1), oam(2), 1, producer_id=7)
    s.put("h", ("t", 0), oam(3), 2, producer_id=7)
    s.tombstone("g", ("t", 0))
    # the transaction stays open for g although one key was removed
    assert s.has_open_transactions("g")
    s.end_transaction(7, commit=True)
    assert s.committed("g") == {("t", 1): oam(2)}
    assert s.committed("h") == {("t", 0): oam(3)}


def test_marker_without_pending_offsets_is_a_no_op():
    s = OffsetStore()
    s.put("g", ("t", 0), oam(1), 0)
    s.end_transaction(99, commit=True)
    s.end_transaction(99, commit=False)
    assert s.committed("g") == {("t", 0): oam(1)}


def test_open_transaction_without_marker_stays_pending():
    s = OffsetStore()
    s.put("g", ("t", 0), oam(1), 0, producer_id=1)
    s.put("g", ("t", 0), oam(2), 1, producer_id=2)
    assert s.committed("g") == {}
    assert s.pending("g") == {1: {("t", 0): oam(1)}, 2: {("t", 0): oam(2)}}
    assert s.pending_partitions("g") == [("t", 0)]
    assert s.groups() == ["g"]
