"""ConsumerGroupDescribe, DescribeGroups, ListGroups and DeleteGroups on consumer groups."""

from __future__ import annotations

import pytest
from helpers.consumer import BAR, FOO, assignment_of, classic_join, heartbeat, new_coordinator
from kafka.protocol.admin.groups import DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest

from kgroup.kafka_errors import GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP
from kgroup.protocol import ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse


def _describe(coord, *group_ids, version=1):
    response = coord.handle(ConsumerGroupDescribeRequest[version](
        group_ids=list(group_ids), include_authorized_operations=False)).response
    # what the client reads: the wire form at the request's version
    return ConsumerGroupDescribeResponse.decode(response.encode(version=version), version=version).groups


@pytest.mark.parametrize("version", [0, 1])
def test_describe_a_consumer_group(version):
    coord = new_coordinator()
    a = heartbeat(coord, member_id="a", instance_id="i-a", rack_id="r1", client_id="app")
    heartbeat(coord, member_id="b", topics=["foo", "bar"])
    [group] = _describe(coord, "g", version=version)
    assert (group.error_code, group.group_state, group.group_epoch, group.assignment_epoch) == (0, "Reconciling", 3, 3)
    assert group.assignor_name == "test-sticky"
    a_desc, b_desc = sorted(group.members, key=lambda m: m.member_id)   # listed in table order
    assert (a_desc.member_id, a_desc.instance_id, a_desc.rack_id, a_desc.member_epoch) == ("a", "i-a", "r1", 2)
    assert (a_desc.client_id, a_desc.client_host, a_desc.subscribed_topic_names) == ("app", "/127.0.0.1", ["foo"])
    assert a_desc.subscribed_topic_regex == ""
    assert [(tp.topic_name, tp.topic_id, tp.partitions) for tp in a_desc.assignment.topic_partitions] == [
        ("foo", FOO, sorted(assignment_of(a)[FOO]))]
    assert b_desc.subscribed_topic_names == ["bar", "foo"]
    assert [tp.topic_name for tp in b_desc.target_assignment.topic_partitions] == ["bar", "foo"]
    assert b_desc.member_type == (1 if version else -1)
    assert BAR in {tp.topic_id for tp in b_desc.target_assignment.topic_partitions}


def test_describe_states_from_stable_to_empty():
    coord = new_coordinator()
    a = heartbeat(coord, member_id="a")
    assert [(g.group_state, g.group_epoch, g.assignment_epoch) for g in _describe(coord, "g")] == [("Stable", 2, 2)]
    heartbeat(coord, member_id="a", epoch=a.member_epoch, topics=["foo", "bar"])
    assert _describe(coord, "g")[0].group_state == "Stable"       # the target moved with the member
    heartbeat(coord, member_id="a", epoch=-1)
    [group] = _describe(coord, "g")
    assert (group.error_code, group.group_state, group.group_epoch, group.members) == (0, "Empty", 4, [])


def test_describe_unknown_and_classic_groups():
    coord = new_coordinator()
    classic_join(coord, "classic")
    missing, classic = _describe(coord, "nope", "classic")
    assert (missing.error_code, missing.error_message) == (GROUP_ID_NOT_FOUND, "Group nope not found.")
    assert (classic.error_code, classic.error_message) == (GROUP_ID_NOT_FOUND, "Group classic is not a consumer group.")


@pytest.mark.parametrize("version, error, state", [(5, 0, "Dead"), (6, GROUP_ID_NOT_FOUND, "Dead")])
def test_describe_groups_does_not_describe_a_consumer_group(version, error, state):
    coord = new_coordinator()
    heartbeat(coord, member_id="a")
    [group] = coord.handle(DescribeGroupsRequest[version](groups=["g"])).response.groups
    assert (group.error_code, group.group_state, group.members) == (error, state, [])
    if version >= 6:
        assert group.error_message == "Group g is not a classic group."


def test_list_groups_with_type_and_state_filters():
    coord = new_coordinator()
    heartbeat(coord, member_id="a")
    classic_join(coord, "classic")

    def listed(**filters):
        response = coord.handle(ListGroupsRequest[5](states_filter=filters.get("states", []),
                                                     types_filter=filters.get("types", []))).response
        return [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in response.groups]

    assert listed(types=["Consumer"]) == [("g", "consumer", "Stable", "consumer")]
    assert listed(states=["stable"]) == [("g", "consumer", "Stable", "consumer")]
    assert [g[0] for g in listed()] == ["g", "classic"]


def test_delete_groups_deletes_only_an_empty_consumer_group():
    coord = new_coordinator()
    heartbeat(coord, member_id="a")
    [result] = coord.handle(DeleteGroupsRequest[2](groups_names=["g"])).response.results
    assert result.error_code == NON_EMPTY_GROUP
    heartbeat(coord, member_id="a", epoch=-1)
    [result] = coord.handle(DeleteGroupsRequest[2](groups_names=["g"])).response.results
    assert result.error_code == 0 and coord.group("g") is None
    types = [(int.from_bytes(k[:2], "big"), v) for k, v in coord.records[-3:]]
    assert types == [(6, None), (4, None), (3, None)]
    from kgroup.coordinator import GroupCoordinator
    assert GroupCoordinator.from_records(coord.records).group("g") is None


def test_leave_group_removes_consumer_members_by_instance_and_member_id():
    from kafka.protocol.consumer.group import LeaveGroupRequest
    from kgroup.kafka_errors import FENCED_INSTANCE_ID, UNKNOWN_MEMBER_ID
    identity = LeaveGroupRequest.MemberIdentity
    coord = new_coordinator()
    heartbeat(coord, member_id="a", instance_id="i-a")
    heartbeat(coord, member_id="b")
    c = heartbeat(coord, member_id="c")
    epoch = coord.group("g").group_epoch
    response = coord.handle(LeaveGroupRequest[5](group_id="g", members=[
        identity(member_id="", group_instance_id="i-a", reason="admin"),
        identity(member_id="b", group_instance_id=None, reason="admin"),
        identity(member_id="x", group_instance_id=None, reason="admin"),
        identity(member_id="wrong", group_instance_id="i-a", reason="admin"),
    ])).response
    assert response.error_code == 0
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in response.members] == [
        ("", "i-a", 0), ("b", None, 0), ("x", None, UNKNOWN_MEMBER_ID), ("wrong", "i-a", FENCED_INSTANCE_ID)]
    group = coord.group("g")
    assert [m.member_id for m in group.members] == ["c"] and group.group_epoch == epoch + 1
    c = heartbeat(coord, member_id="c", epoch=c.member_epoch, owned_partitions={})
    assert assignment_of(c) == {FOO: frozenset(range(6))}
    assert coord.timer_deadline("session-timeout-g-a") is None
