"""The conversions' rules that bite: which members count for a downgrade when one LeaveGroup removes
several (Kafka's validateOnlineDowngradeWithFencedMembers), each conversion written with its
operation's records as one batch (Kafka appends one CoordinatorResult), and a classic member
replacing a regex subscriber (KAFKA-19720)."""

from __future__ import annotations

from kafka.protocol.consumer.group import LeaveGroupRequest

from helpers.migration import Mixed
from kgroup.coordinator import GroupCoordinator

GROUP_METADATA, CONSUMER_GROUP_METADATA = 2, 3


def _upgraded():
    mixed = Mixed()
    ids = mixed.classic_group()
    assert mixed.consumer(member_id="c").member_epoch == 2
    return mixed, ids


def _remove(mixed, *identities):
    """An admin LeaveGroup (v5) removing members by instance id or member id."""
    members = [LeaveGroupRequest.MemberIdentity(member_id=member_id, group_instance_id=instance, reason=None)
               for member_id, instance in identities]
    return mixed.handle(LeaveGroupRequest(version=5, group_id="g", members=members)).response


def _batch_types(entry) -> list:
    return [(int.from_bytes(key[:2], "big"), value is None) for key, value in entry.records]


def test_removing_a_classic_member_with_the_last_consumer_member_downgrades_the_rest():
    mixed, ids = _upgraded()
    response = _remove(mixed, ("", "a"), ("c", None))
    assert response.error_code == 0 and [m.error_code for m in response.members] == [0, 0]
    group = mixed.coord.get_group("g")
    assert group.group_type == "classic" and set(group.members) == {ids["b"]}
    assert group.state == "PreparingRebalance" and group.generation_id == 2


def test_removing_every_member_leaves_an_empty_consumer_group():
    mixed, ids = _upgraded()
    _remove(mixed, ("", "a"), ("", "b"), ("c", None))
    group = mixed.coord.get_group("g")
    assert group.group_type == "consumer" and not group.members


def test_removing_only_classic_members_keeps_the_consumer_group():
    mixed, ids = _upgraded()
    _remove(mixed, ("", "a"))
    assert mixed.coord.get_group("g").group_type == "consumer"


def test_the_upgrade_is_one_batch_with_the_joining_heartbeat():
    mixed = Mixed()
    mixed.classic_group()
    start = len(mixed.coord.log)
    mixed.consumer(member_id="c")
    entries = mixed.coord.log[start:]
    assert len(entries) == 1
    types = _batch_types(entries[0])
    assert types[0] == (GROUP_METADATA, True) and (CONSUMER_GROUP_METADATA, False) in types


def test_the_downgrade_after_a_leave_is_one_batch():
    mixed, ids = _upgraded()
    start = len(mixed.coord.log)
    mixed.consumer(member_id="c", epoch=-1, topics=None)
    entries = mixed.coord.log[start:]
    assert len(entries) == 1
    types = _batch_types(entries[0])
    assert types[-2:] == [(CONSUMER_GROUP_METADATA, True), (GROUP_METADATA, False)]


def test_the_downgrade_by_a_replacing_classic_join_is_one_batch_with_the_join():
    mixed, ids = _upgraded()
    mixed.consumer(member_id="c", epoch=-1, topics=None)
    mixed.classic_again_with_a_stopped_on_the_consumer_protocol(ids)
    start = len(mixed.coord.log)
    assert mixed.join(instance="a").response.error_code == 0
    entries = mixed.coord.log[start:]
    assert len(entries) == 1 and mixed.coord.get_group("g").group_type == "classic"
    types = _batch_types(entries[0])
    assert types[-1] == (GROUP_METADATA, False) and (CONSUMER_GROUP_METADATA, True) in types
    replayed = GroupCoordinator.from_records(mixed.coord.records, config=mixed.coord.config).get_group("g")
    assert replayed.group_type == "classic" and set(replayed.members) == set(mixed.coord.get_group("g").members)


def test_a_classic_member_replacing_a_regex_subscriber_drops_the_regex_and_bumps_the_epoch():
    """KAFKA-19720: a classic member subscribes by names; the regex of the static member it replaces
    goes (with its resolution, when no one else uses it) and the target is computed again."""
    mixed = Mixed()
    mixed.classic_group()
    assert mixed.consumer(member_id="c").error_code == 0                  # keeps the group a consumer group
    assert mixed.consumer(member_id="ra", instance_id="a", regex="fo.*", topics=[]).error_code == 0
    group = mixed.coord.get_group("g")
    assert "fo.*" in group.resolved_regexes
    mixed.consumer(member_id="ra", instance_id="a", epoch=-2, topics=None)
    epoch = mixed.coord.get_group("g").group_epoch
    joined = mixed.join(instance="a").response
    assert joined.error_code == 0
    group = mixed.coord.get_group("g")
    assert group.group_type == "consumer" and group.group_epoch == epoch + 1
    member = group.members[joined.member_id]
    assert member.subscribed_topic_regex is None and member.subscribed_topic_names == frozenset({"foo"})
    assert group.resolved_regexes == {}
