"""DescribeGroups (spec c.5), ListGroups and DeleteGroups."""

import pytest

from kgroup.records import decode_key, decode_value

from helpers.coordinator import (java_order, GROUP_ID_NOT_FOUND, INVALID_GROUP_ID, NON_EMPTY_GROUP, NONE,
                                 Harness, in_state)


def test_describe_stable_group_with_instance_ids():
    h2, ids2, _ = in_state("Stable")
    r = h2.describe("g", "missing", version=5)
    stable, missing = r.response.groups
    assert (stable.error_code, stable.group_id, stable.group_state) == (NONE, "g", "Stable")
    assert (stable.protocol_type, stable.protocol_data) == ("consumer", "range")
    assert [(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.member_metadata,
             m.member_assignment) for m in stable.members] == [
        (ids2["i0"], "i0", "client", "/127.0.0.1", b"range-meta", b"A-i0"),
        (ids2["i1"], "i1", "client", "/127.0.0.1", b"range-meta", b"A-i1")]
    assert (missing.group_state, missing.error_code, missing.protocol_type, missing.members) == (
        "Dead", NONE, "", [])


def test_describe_non_stable_group_has_no_protocol_data_or_metadata_but_keeps_assignment():
    h, ids, _ = in_state("PreparingRebalance")
    g = h.describe("g").response.groups[0]
    assert (g.group_state, g.protocol_type, g.protocol_data) == ("PreparingRebalance", "consumer", "")
    assert [(m.member_metadata, m.member_assignment) for m in g.members] == [
        (b"", b"A-i0"), (b"", b"A-i1")]


def test_describe_after_static_restart_keeps_first_client_id():
    h, ids, _ = in_state("Stable")
    h.join(instance="i1", client_id="restarted", client_host="/10.9.9.9")
    members = h.describe("g").response.groups[0].members
    assert [(m.member_id, m.client_id, m.client_host) for m in members] == java_order([
        (ids["i0"], "client", "/127.0.0.1"), ("i1-u2", "client", "/127.0.0.1")], key=lambda m: m[0])


def test_describe_v6_reports_missing_group_as_not_found():
    h = Harness()
    g = h.describe("missing", version=6).response.groups[0]
    assert (g.error_code, g.group_state, g.error_message) == (
        GROUP_ID_NOT_FOUND, "Dead", "Group missing not found.")


def test_describe_empty_group_id_is_described_like_any_group():
    # Kafka (GroupCoordinatorService.describeGroups) refuses only a null id; "" is a group name
    h = Harness()
    g = h.describe("").response.groups[0]
    assert (g.group_id, g.error_code, g.group_state, g.members) == ("", NONE, "Dead", [])
    from kafka.protocol.admin.groups import DescribeGroupsRequest
    null = h.coord.handle(DescribeGroupsRequest(version=5, groups=[None])).response.groups[0]
    assert null.error_code == INVALID_GROUP_ID


def simple_commit(group_id, offset):
    """An OffsetCommit of partition t-0 outside any generation (a "simple" group's commit)."""
    from kafka.protocol.consumer.group import OffsetCommitRequest
    T = OffsetCommitRequest.OffsetCommitRequestTopic
    P = T.OffsetCommitRequestPartition
    return OffsetCommitRequest(version=8, group_id=group_id, generation_id_or_member_epoch=-1, member_id="",
                               group_instance_id=None, topics=[T(name="t", partitions=[P(
                                   partition_index=0, committed_offset=offset, committed_leader_epoch=-1,
                                   committed_metadata="")])])


def test_empty_group_id_can_be_described_and_deleted_once_it_exists():
    h = Harness()
    commit = simple_commit("", 1)
    assert h.handle(commit).response.topics[0].partitions[0].error_code == NONE
    assert h.describe("").response.groups[0].group_state == "Empty"
    assert [(x.group_id, x.error_code) for x in h.delete("").response.results] == [("", NONE)]
    assert h.coord.group("") is None and h.coord.committed_offsets("") == {}


@pytest.mark.parametrize("version", range(7))
def test_describe_every_version_encodes(version):
    h, ids, _ = in_state("Stable")
    r = h.describe("g", "nope", version=version)
    assert r.response.API_VERSION == version
    r.response.encode()


def test_list_groups_with_state_and_type_filters():
    h, ids, _ = in_state("Stable")
    h.join(group="other")                  # a pending id: group "other" exists, Empty
    h.join(group="third", instance="x")    # PreparingRebalance

    def listed(**kw):
        return sorted((g.group_id, g.protocol_type, g.group_state)
                      for g in h.list_groups(**kw).response.groups)

    assert listed() == [("g", "consumer", "Stable"), ("other", "", "Empty"),
                        ("third", "consumer", "PreparingRebalance")]
    assert listed(states=["stable", "Empty"]) == [("g", "consumer", "Stable"), ("other", "", "Empty")]
    assert listed(types=["consumer"]) == []
    assert listed(types=["Classic"]) == listed()
    # before v4 there is no filter field: everything is listed
    assert len(h.list_groups(version=3, states=["Stable"]).response.groups) == 3


@pytest.mark.parametrize("version", range(6))
def test_list_groups_every_version_encodes(version):
    h, _, _ = in_state("Stable")
    r = h.list_groups(version=version)
    assert [g.group_id for g in r.response.groups] == ["g"]
    r.response.encode()


def test_delete_groups():
    h, ids, _ = in_state("Stable")
    h.join(group="empty-one")      # created Empty with a pending id
    before = len(h.coord.records)
    r = h.delete("g", "empty-one", "missing", "", None)
    assert [(x.group_id, x.error_code) for x in r.response.results] == [
        ("g", NON_EMPTY_GROUP), ("empty-one", NONE), ("missing", GROUP_ID_NOT_FOUND),
        ("", GROUP_ID_NOT_FOUND), ("", INVALID_GROUP_ID)]
    assert h.coord.groups() == ["g"]
    key, value = h.coord.records[-1]
    assert len(h.coord.records) == before + 1
    assert (decode_key(key).record_type, decode_key(key).data, value) == (2, {"group": "empty-one"}, None)
    assert h.describe("empty-one").response.groups[0].group_state == "Dead"
    assert h.list_groups().response.groups[0].group_id == "g"


def test_delete_group_tombstones_offsets_first():
    h, ids, _ = in_state("Empty")
    commit = simple_commit("g", 42)
    assert h.handle(commit).response.topics[0].partitions[0].error_code == NONE
    assert h.coord.committed_offsets("g")[("t", 0)].offset == 42
    before = len(h.coord.records)
    assert h.delete("g").response.results[0].error_code == NONE
    new = h.coord.records[before:]
    assert [(decode_key(k).record_type, v) for k, v in new] == [(1, None), (2, None)]
    assert h.coord.committed_offsets("g") == {}


def test_deleted_group_can_be_recreated_from_scratch():
    h, _, _ = in_state("Empty")
    h.delete("g")
    r = h.join(instance="again")
    h.advance(3000)
    assert r.response.generation_id == 1
    value = decode_value(2, h.coord.records[-1][1])
    assert value.data["generation"] == 0   # the new group's "empty group" record


@pytest.mark.parametrize("version", range(3))
def test_delete_every_version_encodes(version):
    h, _, _ = in_state("Empty")
    r = h.delete("g", version=version)
    assert r.response.results[0].error_code == NONE
    r.response.encode()
