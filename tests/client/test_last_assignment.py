"""reset-offsets --instance-id: a static member's partitions from the group's current members, or from
its last assignment in __consumer_offsets once it has stopped (classic GroupMetadata, consumer-group
member metadata and current assignment, kept through tombstones)."""

import uuid

import pytest

from kgroup.client.last_assignment import LastAssignments, instance_assignments
from kgroup.views.model import GroupView, MemberView
from kgroup.errors import KgroupUsageError
from kgroup.records.consumer_protocol import encode_assignment
from kgroup.records.schema_records import encode_key, encode_value

TOPIC_ID = uuid.UUID("00000000-0000-0000-0000-0000000000aa")


def group_metadata(group, members):
    """A GroupMetadata record (v3) with (member id, instance id, {topic: partitions}) members."""
    value = {"protocolType": "consumer", "generation": 1, "protocol": "range", "leader": None,
             "currentStateTimestamp": 0, "members": [
                 {"memberId": m, "groupInstanceId": i, "clientId": "c", "clientHost": "/h", "rebalanceTimeout": 1,
                  "sessionTimeout": 1, "subscription": b"",
                  "assignment": encode_assignment({"assignedPartitions": [
                      {"topic": t, "partitions": ps} for t, ps in owned.items()], "userData": None}, 0)}
                 for m, i, owned in members]}
    return encode_key(2, {"group": group}), encode_value(2, 3, value)


def member_metadata(group, member, instance):
    value = None if instance is None else encode_value(5, 0, {
        "instanceId": instance, "rackId": None, "clientId": "c", "clientHost": "/h", "subscribedTopicNames": ["t"],
        "subscribedTopicRegex": None, "rebalanceTimeoutMs": 1, "serverAssignor": None})
    return encode_key(5, {"groupId": group, "memberId": member}), value


def current_assignment(group, member, partitions):
    value = None if partitions is None else encode_value(8, 0, {
        "memberEpoch": 2, "previousMemberEpoch": 1, "state": 0,
        "assignedPartitions": [{"topicId": TOPIC_ID, "partitions": partitions}], "partitionsPendingRevocation": []})
    return encode_key(8, {"groupId": group, "memberId": member}), value


def replay(group, instances, records):
    last = LastAssignments(group, frozenset(instances))
    for offset, (key, value) in enumerate(records):
        last.add(key, value, offset, 1_000 + offset)
    return last.latest()


def test_classic_group_the_last_group_metadata_that_had_the_member():
    found = replay("g", ["c-0", "c-1"], [
        group_metadata("g", [("m-0", "c-0", {"t": [0, 1, 2]})]),
        group_metadata("g", [("m-0", "c-0", {"t": [0, 2]}), ("m-1", "c-1", {"t": [1]})]),
        group_metadata("other", [("x", "c-0", {"t": [9]})]),            # another group on the partition
        group_metadata("g", [("m-1", "c-1", {"t": [0, 1, 2]})]),       # c-0 left
        group_metadata("g", []),                                        # everybody stopped: Empty
    ])
    assert (found["c-0"].partitions, found["c-0"].offset) == ([("t", [0, 2])], 1)
    assert (found["c-1"].partitions, found["c-1"].offset) == ([("t", [0, 1, 2])], 3)


def test_consumer_group_member_and_current_assignment_kept_through_tombstones():
    found = replay("g", ["k-0", "k-9"], [
        member_metadata("g", "old", "k-0"), current_assignment("g", "old", [0]),
        member_metadata("g", "new", "k-0"),                              # the instance rejoined as "new"
        current_assignment("g", "new", [0, 1]), current_assignment("g", "new", [1]),
        current_assignment("g", "new", None), member_metadata("g", "new", None),  # session expired
    ])
    assert list(found) == ["k-0"]
    assert (found["k-0"].partitions, found["k-0"].offset, found["k-0"].timestamp) == ([(TOPIC_ID, [1])], 4, 1004)


def test_the_later_of_classic_and_consumer_records_wins():
    found = replay("g", ["s"], [group_metadata("g", [("m", "s", {"t": [0]})]),
                                member_metadata("g", "m2", "s"), current_assignment("g", "m2", [3])])
    assert found["s"].partitions == [(TOPIC_ID, [3])]


def test_present_members_use_the_current_assignment_and_never_seen_ids_are_named(monkeypatch):
    view = GroupView("g", "Stable", "consumer", "range", None, [
        MemberView("m-1", "a", "c", "h", assignment=[{"topic": "t", "partitions": [0, 2]}])])
    (only,) = instance_assignments(None, view, ["a"])
    assert (only.partitions, only.to_json()) == ({("t", 0), ("t", 2)}, {"instance_id": "a", "source": "current"})
    monkeypatch.setattr("kgroup.client.last_assignment.read_last_assignments", lambda client, group, ids: {})
    with pytest.raises(KgroupUsageError, match=r"unknown --instance-id zz: no member of group 'g' has had it.*a\)"):
        instance_assignments(None, view, ["a", "zz"])


def test_an_unreadable_offsets_topic_is_one_error_naming_the_ids(monkeypatch):
    from kgroup.errors import KgroupError

    def denied(client, group, ids):
        raise KgroupError("topic __consumer_offsets: TOPIC_AUTHORIZATION_FAILED")

    monkeypatch.setattr("kgroup.client.last_assignment.read_last_assignments", denied)
    view = GroupView("g", "Empty", "consumer", "", None, [])
    with pytest.raises(KgroupError, match=r"^--instance-id a: not in group 'g' now, and its last assignment could "
                                          r"not be read from __consumer_offsets: topic __consumer_offsets: TOPIC_AUTH"):
        instance_assignments(None, view, ["a"])
