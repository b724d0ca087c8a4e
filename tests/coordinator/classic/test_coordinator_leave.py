"""LeaveGroup (spec c.4): per-member table, batches, v0-2 collapse, rebalance decisions."""

import pytest

from kgroup.records import decode_value

from helpers.coordinator import (COORDINATOR_NOT_AVAILABLE, FENCED_INSTANCE_ID,
                                 INVALID_GROUP_ID, MEMBER_ID_REQUIRED, NONE,
                                 REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID, Harness, in_state)


def members(reply):
    return [(m.member_id, m.group_instance_id, m.error_code) for m in reply.response.members]


def test_unknown_group_every_member_unknown_top_level_none():
    h = Harness()
    r = h.leave([("a", None), ("", "i")], group="nope")
    assert r.response.error_code == NONE
    assert members(r) == [("a", None, UNKNOWN_MEMBER_ID), ("", "i", UNKNOWN_MEMBER_ID)]


@pytest.mark.parametrize("version", [0, 1, 2])
def test_unknown_group_collapses_below_v3(version):
    h = Harness()
    r = h.leave("a", group="nope", version=version)
    assert r.response.error_code == UNKNOWN_MEMBER_ID


def test_empty_group_id_is_invalid():
    assert Harness().leave([("a", None)], group="").response.error_code == INVALID_GROUP_ID


def test_admin_removal_by_instance_id():
    h, ids, _ = in_state("Stable")
    r = h.leave([("", "i1")])
    assert members(r) == [("", "i1", NONE)]
    g = h.group()
    assert g.static_members == {"i0": ids["i0"]}
    assert g.state == "PreparingRebalance"
    assert h.coord.timer_deadline(f"heartbeat-g-{ids['i1']}") is None


def test_table_rows():
    h, ids, _ = in_state("Stable")
    pending = h.join().response.member_id
    r = h.leave([
        ("", "nobody"),            # unmapped instance
        ("", None),                # empty identity
        (pending, "whatever"),     # pending member, instance ignored
        ("x", "i0"),               # i0 mapped to another id: fenced, kept
        (ids["i1"], "ghost"),      # unmapped instance
        ("stranger", None),        # unknown member id
        (ids["i1"], "i1"),         # correct pair: removed
        (ids["i1"], "i1"),         # duplicate: already removed
    ])
    assert r.response.error_code == NONE
    assert members(r) == [
        ("", "nobody", UNKNOWN_MEMBER_ID), ("", None, UNKNOWN_MEMBER_ID), (pending, "whatever", NONE),
        ("x", "i0", FENCED_INSTANCE_ID), (ids["i1"], "ghost", UNKNOWN_MEMBER_ID),
        ("stranger", None, UNKNOWN_MEMBER_ID), (ids["i1"], "i1", NONE),
        (ids["i1"], "i1", UNKNOWN_MEMBER_ID)]
    g = h.group()
    assert [m.member_id for m in g.members] == [ids["i0"]]
    assert g.pending_members == ()
    assert g.state == "PreparingRebalance"


def test_static_member_removed_by_member_id_alone():
    h, ids, _ = in_state("Stable")
    r = h.leave([(ids["i1"], None)])
    assert members(r) == [(ids["i1"], None, NONE)]
    assert h.group().static_members == {"i0": ids["i0"]}


@pytest.mark.parametrize("version", [0, 1, 2])
def test_v0_2_single_member_and_collapsed_code(version):
    h = Harness()
    ids = h.stable(instances=(), dynamic=2)
    assert h.leave(ids["d1"], version=version).response.error_code == NONE
    assert h.leave("stranger", version=version).response.error_code == UNKNOWN_MEMBER_ID
    assert h.group().state == "PreparingRebalance"


def test_all_members_leave_goes_empty_with_a_record():
    h, ids, _ = in_state("Stable")
    before = len(h.coord.records)
    h.leave([(ids["i0"], "i0"), (ids["i1"], "i1")])
    g = h.group()
    assert (g.state, g.generation, g.leader, g.protocol) == ("Empty", 2, None, None)
    assert len(h.coord.records) == before + 1
    value = decode_value(2, h.coord.records[-1][1]).data
    assert (value["generation"], value["protocol"], value["leader"], value["members"]) == (2, None, None, [])
    assert value["protocolType"] == "consumer"


def test_leave_of_pending_member_in_stable_triggers_rebalance():
    h, ids, _ = in_state("Stable")
    pending = h.join().response.member_id
    h.leave([(pending, None)])
    assert h.group().state == "PreparingRebalance"


def test_leave_during_completing_rebalance_answers_parked_syncs():
    h, ids, _ = in_state("CompletingRebalance")
    sync = h.sync(ids["i1"], 1, instance="i1")
    assert not sync.done
    h.leave([(ids["i0"], "i0")])
    assert (sync.response.error_code, sync.response.assignment) == (REBALANCE_IN_PROGRESS, b"")
    assert sync.response.protocol_name is None
    assert h.group().state == "PreparingRebalance"


def test_leave_during_preparing_rebalance_completes_round_when_rest_joined():
    h, ids, parked = in_state("PreparingRebalance")
    h.leave([(ids["i1"], "i1")])
    assert parked["i0"].done and parked["i0"].response.generation_id == 2
    assert [m.member_id for m in parked["i0"].response.members] == [ids["i0"]]
    assert h.group().state == "CompletingRebalance"


def test_leave_of_parked_member_answers_its_join_with_unknown_member():
    h, ids, parked = in_state("PreparingRebalance")
    h.leave([(ids["i0"], "i0")])
    resp = parked["i0"].response
    assert (resp.error_code, resp.member_id) == (UNKNOWN_MEMBER_ID, "")


def test_leave_on_empty_group_with_pending_member_stays_empty():
    h = Harness()
    pending = h.join().response.member_id
    r = h.leave([(pending, None)])
    assert members(r) == [(pending, None, NONE)]
    assert h.group().state == "Empty" and h.group().pending_members == ()


def test_dead_group_is_coordinator_not_available():
    h, _, _ = in_state("Stable")
    h.coord.get_classic_group("g").state = "Dead"
    r = h.leave([("a", None)])
    assert (r.response.error_code, r.response.members) == (COORDINATOR_NOT_AVAILABLE, [])


def test_reason_is_only_logged_and_defaults_to_not_provided(caplog):
    from kafka.protocol.consumer.group import LeaveGroupRequest
    h, ids, _ = in_state("Stable")
    caplog.set_level("INFO", logger="kgroup.coordinator")
    h.handle(LeaveGroupRequest(version=5, group_id="g", members=[
        LeaveGroupRequest.MemberIdentity(member_id=ids["i0"], group_instance_id="i0", reason="bye"),
        LeaveGroupRequest.MemberIdentity(member_id=ids["i1"], group_instance_id="i1", reason=None)]))
    reasons = [r.getMessage().rsplit("reason: ", 1)[1] for r in caplog.records if "leaves" in r.getMessage()]
    assert reasons == ["bye", "not provided"]
    # below v5 there is no reason field on the wire
    h2, ids2, _ = in_state("Stable")
    caplog.clear()
    h2.leave([(ids2["i0"], "i0")], version=4)
    assert [r.getMessage().rsplit("reason: ", 1)[1] for r in caplog.records if "leaves" in r.getMessage()] \
        == ["not provided"]


@pytest.mark.parametrize("version", range(6))
def test_every_version_encodes(version):
    h, ids, _ = in_state("Stable")
    if version < 3:
        r = h.leave(ids["i1"], version=version)
    else:
        r = h.leave([(ids["i1"], "i1")], version=version)
    assert (r.response.API_VERSION, r.response.error_code) == (version, NONE)
    r.response.encode()


def test_leader_leaving_hands_leadership_to_the_member_javas_hash_map_yields_first():
    """ClassicGroup.remove makes the first key of its members HashMap the new leader: bucket order
    of String.hashCode (i2-u2 before i0-u0 before i1-u1 here), not join order."""
    h = Harness()
    ids = h.stable(instances=("i0", "i1", "i2"))
    assert h.group().leader == ids["i0"]
    h.leave([(ids["i0"], "i0")])
    assert h.group().leader == ids["i2"]
    replies = [h.join(member_id=ids[i], instance=i) for i in ("i1", "i2")]
    assert all(r.done for r in replies)
    assert {r.response.leader for r in replies} == {ids["i2"]}


def test_leader_that_misses_the_join_is_replaced_by_the_first_joined_member_in_hash_map_order():
    """ClassicGroup.maybeElectNewJoinedLeader takes the first member awaiting a join in its members
    HashMap's iteration order."""
    h = Harness()
    ids = h.stable(instances=("i0", "i1", "i2"))
    replies = [h.join(member_id=ids[i], instance=i, protocols=(("range", b"new"),)) for i in ("i1", "i2")]
    for _ in range(6):                                      # i0 (the leader) stays alive, never rejoins
        h.advance(5_000)
        h.heartbeat(ids["i0"], 1, instance="i0")
    assert all(r.done for r in replies)
    assert {r.response.leader for r in replies} == {ids["i2"]}
