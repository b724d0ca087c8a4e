"""Kafka 4.3+ (KAFKA-20268): a new consumer group starts at group epoch 1 with an empty target at
assignment epoch 1 (TargetAssignmentMetadata.INITIAL, in memory, never written). The bump a new
group used to get for being new (``groupEpoch == 0 ||``) is gone: the first member's subscription
bumps it to 2, and the first computed target has epoch 2. A target-epoch tombstone leaves -1."""

from __future__ import annotations

from helpers.consumer import FOO, assignment_of, heartbeat, new_coordinator
from kafka.protocol.admin.groups import DeleteGroupsRequest

from kgroup.coordinator import GroupCoordinator
from kgroup.coordinator.consumer import records as rec
from kgroup.protocol import ConsumerGroupDescribeRequest
from kgroup.records import decode_key, decode_value


def _written(coord, start=0) -> list:
    """(record type, value data or None) of the records appended since ``start``."""
    out = []
    for key, value in coord.records[start:]:
        record_type = decode_key(key).record_type
        out.append((record_type, None if value is None else decode_value(record_type, value).data))
    return out


def _describe(coord, group_id="g"):
    [group] = coord.handle(ConsumerGroupDescribeRequest[1](
        group_ids=[group_id], include_authorized_operations=False)).response.groups
    return group


def test_the_first_member_of_a_new_group_is_at_epoch_2():
    coord = new_coordinator()
    response = heartbeat(coord, member_id="a")
    assert (response.error_code, response.member_epoch) == (0, 2)
    assert assignment_of(response) == {FOO: frozenset(range(6))}
    group = coord.get_group("g")
    assert (group.group_epoch, group.assignment_epoch, group.state) == (2, 2, "Stable")
    written = _written(coord)
    assert [value["epoch"] for t, value in written if t == rec.METADATA] == [2]
    assert [value["assignmentEpoch"] for t, value in written if t == rec.TARGET_ASSIGNMENT_METADATA] == [2]
    [current] = [value for t, value in written if t == rec.CURRENT_MEMBER_ASSIGNMENT]
    assert (current["memberEpoch"], current["previousMemberEpoch"]) == (2, 0)
    assert current["assignedPartitions"][0]["assignmentEpochs"] == [2] * 6
    described = _describe(coord)
    assert (described.group_epoch, described.assignment_epoch, described.members[0].member_epoch) == (2, 2, 2)


def test_a_new_group_before_any_target_is_at_epoch_1():
    """A first member subscribing to nothing changes no subscription: no bump, no target computed,
    nothing written for the group itself — the member reconciles to the initial empty target at
    epoch 1, and a load of the log gives the same group (the initial epochs are nobody's record)."""
    coord = new_coordinator()
    response = heartbeat(coord, member_id="a", topics=[])
    assert (response.error_code, response.member_epoch, assignment_of(response)) == (0, 1, {})
    assert [t for t, _ in _written(coord)] == [rec.MEMBER_METADATA, rec.CURRENT_MEMBER_ASSIGNMENT]
    described = _describe(coord)
    assert (described.group_state, described.group_epoch, described.assignment_epoch) == ("Stable", 1, 1)
    assert described.members[0].member_epoch == 1
    loaded = GroupCoordinator.from_records(coord.records, config=dict(coord.config.as_dict()))
    assert loaded.group("g") == coord.group("g")
    # subscribing later is the change that bumps: the first computed target has epoch 2
    again = heartbeat(coord, member_id="a", epoch=1, topics=["foo"], owned_partitions={})
    assert (again.member_epoch, assignment_of(again)) == (2, {FOO: frozenset(range(6))})
    assert coord.get_group("g").assignment_epoch == 2


def test_a_target_epoch_tombstone_leaves_epoch_minus_1_and_a_deleted_group_starts_again_at_1():
    coord = new_coordinator()
    heartbeat(coord, member_id="a")
    heartbeat(coord, member_id="a", epoch=-1)
    group = coord.get_group("g")
    assert (group.group_epoch, group.assignment_epoch, group.members) == (3, 3, {})
    # Kafka's replay of the target epoch's tombstone: -1, not a new group's 1 (its group tombstone
    # requires it, and follows in the same batch)
    rec.apply(coord, rec.TARGET_ASSIGNMENT_METADATA, {"groupId": "g"}, None)
    assert (coord.get_group("g").assignment_epoch, coord.get_group("g").assignment_timestamp) == (-1, 0)
    rec.apply(coord, rec.METADATA, {"groupId": "g"}, None)
    assert coord.get_group("g") is None

    coord = new_coordinator()
    heartbeat(coord, member_id="a")
    heartbeat(coord, member_id="a", epoch=-1)
    [result] = coord.handle(DeleteGroupsRequest[2](groups_names=["g"])).response.results
    assert result.error_code == 0 and coord.get_group("g") is None
    assert GroupCoordinator.from_records(coord.records).get_group("g") is None
    # the group id is new again: its first member is at epoch 2, as in any new group
    assert heartbeat(coord, member_id="b").member_epoch == 2
    loaded = GroupCoordinator.from_records(coord.records, config=dict(coord.config.as_dict()))
    assert (loaded.get_group("g").group_epoch, loaded.get_group("g").assignment_epoch) == (2, 2)
