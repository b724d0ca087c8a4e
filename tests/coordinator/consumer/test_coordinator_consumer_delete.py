"""Deleting a consumer group — DeleteGroups on an Empty group, and its expiry once its offsets
expired — tombstones every record the group has (Kafka's ConsumerGroup.createGroupTombstoneRecords),
so a replay, like a compacted log, no longer holds it."""

from __future__ import annotations

from helpers.consumer import heartbeat, new_coordinator
from helpers.offsets import commit_request
from kafka.protocol.admin.groups import DeleteGroupsRequest

from kgroup.coordinator import GroupCoordinator
from kgroup.kafka_errors import NON_EMPTY_GROUP
from kgroup.records import decode_key

CURRENT, TARGET_ROW, TARGET_EPOCH, MEMBER, REGEX, PARTITIONS, EPOCH = 8, 7, 6, 5, 16, 4, 3


def _delete(coord, group_id="g") -> int:
    [result] = coord.handle(DeleteGroupsRequest[2](groups_names=[group_id])).response.results
    return result.error_code


def _live_keys(records, group_id="g") -> list:
    """The keys of ``group_id`` whose last record is not a tombstone (what compaction keeps)."""
    latest = {}
    for key, value in records:
        if decode_key(key).data.get("groupId", decode_key(key).data.get("group")) == group_id:
            latest[key] = value
    return [decode_key(k).data for k, v in latest.items() if v is not None]


def _types(records) -> list:
    return [(int.from_bytes(k[:2], "big"), v is None) for k, v in records]


def test_delete_tombstones_every_record_of_the_group():
    coord = new_coordinator()
    heartbeat(coord, member_id="a", topics=["foo"], instance_id="i-a")
    heartbeat(coord, member_id="b", topics=[], regex="ba.")
    assert _delete(coord) == NON_EMPTY_GROUP
    heartbeat(coord, member_id="a", epoch=-1, instance_id="i-a")
    heartbeat(coord, member_id="b", epoch=-1)
    assert _live_keys(coord.records) != []            # the Empty group's epoch, target epoch, ...
    before = len(coord.records)
    assert _delete(coord) == 0
    # an Empty group has no member rows and no regex left: Kafka's three group tombstones
    assert _types(coord.records[before:]) == [(TARGET_EPOCH, True), (PARTITIONS, True), (EPOCH, True)]
    assert _live_keys(coord.records) == []
    assert coord.group("g") is None
    assert GroupCoordinator.from_records(coord.records).group("g") is None


def test_a_resolution_left_in_the_log_is_tombstoned_with_the_group():
    # a log whose last regex subscriber left without the type-16 tombstone (another coordinator's)
    coord = new_coordinator()
    heartbeat(coord, member_id="a", topics=[], regex="fo+")
    heartbeat(coord, member_id="a", epoch=-1)
    kept = [(k, v) for k, v in coord.records if not (int.from_bytes(k[:2], "big") == REGEX and v is None)]
    loaded = GroupCoordinator.from_records(kept, config=dict(coord.config.as_dict()))
    assert loaded.group("g").resolved_regexes == {"fo+": frozenset({"foo"})}
    before = len(loaded.records)
    assert _delete(loaded) == 0
    assert _types(loaded.records[before:]) == [(TARGET_EPOCH, True), (REGEX, True), (PARTITIONS, True),
                                               (EPOCH, True)]
    assert _live_keys(kept + loaded.records[before:]) == []


def test_the_tombstones_follow_kafkas_order_for_every_member_and_regex():
    from kgroup.coordinator.consumer.records import group_tombstones
    coord = new_coordinator()
    heartbeat(coord, member_id="a", topics=["foo"])
    heartbeat(coord, member_id="b", topics=[], regex="ba.")
    keys = [(r.record_type, r.key.get("memberId", r.key.get("regularExpression")), r.value)
            for r in group_tombstones(coord.get_group("g"))]
    assert keys == [(CURRENT, "a", None), (CURRENT, "b", None), (TARGET_ROW, "a", None),
                    (TARGET_ROW, "b", None), (TARGET_EPOCH, None, None), (MEMBER, "a", None),
                    (MEMBER, "b", None), (REGEX, "ba.", None), (PARTITIONS, None, None), (EPOCH, None, None)]


def test_an_empty_consumer_group_expires_with_its_offsets():
    coord = new_coordinator(**{"offsets.retention.minutes": 1})
    heartbeat(coord, member_id="a")
    coord.handle(commit_request("g", {("foo", 0): 7}, generation=2, member_id="a"))
    coord.advance(1000)
    heartbeat(coord, member_id="a", epoch=-1)
    assert coord.offsets.expire_offsets() == [] and coord.group("g") is not None   # not expired yet
    coord.now_ms += 60_000
    before = len(coord.records)
    assert coord.offsets.expire_offsets() == [("g", "foo", 0)]
    assert _types(coord.records[before:]) == [(1, True), (TARGET_EPOCH, True), (PARTITIONS, True), (EPOCH, True)]
    assert coord.group("g") is None and coord.committed_offsets("g") == {}
    assert _live_keys(coord.records) == []
    assert GroupCoordinator.from_records(coord.records).group("g") is None


def test_a_consumer_group_with_members_does_not_expire():
    coord = new_coordinator(**{"offsets.retention.minutes": 1})
    heartbeat(coord, member_id="a")
    coord.handle(commit_request("g", {("bar", 0): 7}, generation=2, member_id="a"))
    coord.now_ms += 120_000
    assert coord.offsets.expire_offsets() == [("g", "bar", 0)]     # not subscribed: it expires
    assert coord.group("g") is not None and coord.group("g").state == "Stable"
