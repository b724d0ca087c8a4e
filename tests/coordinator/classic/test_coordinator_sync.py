"""SyncGroup (spec c.1) and Heartbeat (spec c.2): order of checks and state handling."""

import pytest

from helpers.coordinator import (FENCED_INSTANCE_ID, ILLEGAL_GENERATION,
                                 INCONSISTENT_GROUP_PROTOCOL, INVALID_GROUP_ID, NONE,
                                 REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID, Harness, in_state)


# ---- SyncGroup -------------------------------------------------------------------------------
@pytest.mark.parametrize("missing", ["protocol_type", "protocol_name"])
def test_v5_requires_protocol_type_and_name(missing):
    h, ids, _ = in_state("Stable")
    kwargs = {missing: None}
    r = h.sync(ids["i1"], 1, instance="i1", **kwargs)
    assert r.response.error_code == INCONSISTENT_GROUP_PROTOCOL
    assert r.response.assignment == b""
    # below v5 the fields do not exist and are not checked
    assert h.sync(ids["i1"], 1, instance="i1", version=4, **kwargs).response.error_code == NONE


def test_sync_checks_in_order():
    h, ids, _ = in_state("Stable")
    assert h.sync("x", 1, group="").response.error_code == INVALID_GROUP_ID
    assert h.sync("x", 1, group="nope").response.error_code == UNKNOWN_MEMBER_ID
    # member/instance check comes before the generation check
    assert h.sync("x", 99).response.error_code == UNKNOWN_MEMBER_ID
    assert h.sync("x", 99, instance="i1").response.error_code == FENCED_INSTANCE_ID
    assert h.sync(ids["i1"], 99, instance="ghost").response.error_code == UNKNOWN_MEMBER_ID
    assert h.sync(ids["i1"], 99, instance="i1").response.error_code == ILLEGAL_GENERATION
    assert h.sync(ids["i1"], 1, protocol_type="connect").response.error_code == INCONSISTENT_GROUP_PROTOCOL
    assert h.sync(ids["i1"], 1, protocol_name="sticky").response.error_code == INCONSISTENT_GROUP_PROTOCOL


def test_sync_on_empty_group_is_unknown_member():
    h, _, _ = in_state("Empty")
    assert h.sync("anyone", 2).response.error_code == UNKNOWN_MEMBER_ID


def test_sync_in_preparing_rebalance_is_rebalance_in_progress():
    h, ids, _ = in_state("PreparingRebalance")
    r = h.sync(ids["i1"], 1, instance="i1")
    assert r.response.error_code == REBALANCE_IN_PROGRESS


def test_completing_rebalance_parks_followers_until_leader_assigns():
    h, ids, _ = in_state("CompletingRebalance")
    records_before = len(h.coord.records)
    follower = h.sync(ids["i1"], 1, instance="i1")
    assert not follower.done
    leader = h.sync(ids["i0"], 1, instance="i0",
                    assignments={ids["i1"]: b"F", "not-a-member": b"zzz"})
    assert follower.done and leader.done
    assert (follower.response.error_code, follower.response.assignment) == (NONE, b"F")
    # members the leader left out get an empty assignment
    assert (leader.response.assignment, leader.response.protocol_name) == (b"", "range")
    assert follower.response.protocol_type == "consumer"
    g = h.group()
    assert g.state == "Stable"
    assert [m.assignment for m in g.members] == [b"", b"F"]
    assert len(h.coord.records) == records_before + 1


def test_follower_syncing_after_leader_gets_its_assignment_from_stable():
    h, ids, _ = in_state("CompletingRebalance")
    h.sync(ids["i0"], 1, instance="i0", assignments={ids["i0"]: b"L", ids["i1"]: b"F"})
    assert h.group().state == "Stable"
    r = h.sync(ids["i1"], 1, instance="i1", assignments={ids["i1"]: b"ignored"})
    assert (r.response.error_code, r.response.assignment) == (NONE, b"F")


def test_stable_sync_ignores_leader_assignments():
    h, ids, _ = in_state("Stable")
    r = h.sync(ids["i0"], 1, instance="i0", assignments={ids["i0"]: b"new"})
    assert r.response.assignment == b"A-i0"
    assert h.group().members[0].assignment == b"A-i0"


def test_stable_sync_does_not_refresh_the_session_but_a_propagated_assignment_does():
    h, ids, _ = in_state("CompletingRebalance")
    key = f"heartbeat-g-{ids['i1']}"
    h.advance(1000)
    follower = h.sync(ids["i1"], 1, instance="i1")
    h.advance(500)
    h.sync(ids["i0"], 1, instance="i0", assignments={ids["i1"]: b"F"})
    assert follower.done
    # propagation reschedules the parked member's session from the completion time
    assert h.coord.timer_deadline(key) == h.coord.now_ms + 10_000
    deadline = h.coord.timer_deadline(key)
    h.advance(700)
    assert h.sync(ids["i1"], 1, instance="i1").response.error_code == NONE
    assert h.coord.timer_deadline(key) == deadline     # c.1 step 9: Stable sync, no refresh


@pytest.mark.parametrize("version", range(6))
def test_sync_every_version_encodes(version):
    h, ids, _ = in_state("CompletingRebalance")
    kwargs = {} if version >= 5 else {"protocol_type": None, "protocol_name": None}
    instance = {"instance": "i0"} if version >= 3 else {}
    r = h.sync(ids["i0"], 1, version=version, assignments={ids["i0"]: b"x"}, **instance, **kwargs)
    assert r.response.API_VERSION == version
    assert (r.response.error_code, r.response.assignment) == (NONE, b"x")
    r.response.encode()


# ---- Heartbeat -------------------------------------------------------------------------------
def test_heartbeat_checks_in_order():
    h, ids, _ = in_state("Stable")
    assert h.heartbeat("x", 1, group="").response.error_code == INVALID_GROUP_ID
    assert h.heartbeat("x", 1, group="nope").response.error_code == UNKNOWN_MEMBER_ID
    assert h.heartbeat("x", 1).response.error_code == UNKNOWN_MEMBER_ID
    assert h.heartbeat("x", 1, instance="i0").response.error_code == FENCED_INSTANCE_ID
    assert h.heartbeat(ids["i0"], 7, instance="i0").response.error_code == ILLEGAL_GENERATION
    assert h.heartbeat(ids["i0"], 1, instance="i0").response.error_code == NONE
    # instance id only exists from v3
    assert h.heartbeat(ids["i0"], 1, instance="other", version=2).response.error_code == NONE


def test_heartbeat_refreshes_session_in_stable_and_completing():
    h, ids, _ = in_state("Stable")
    key = f"heartbeat-g-{ids['i1']}"
    h.advance(4000)
    assert h.heartbeat(ids["i1"], 1).response.error_code == NONE
    assert h.coord.timer_deadline(key) == h.coord.now_ms + 10_000


def test_heartbeat_in_preparing_rebalance_refreshes_and_says_rebalance():
    h, ids, _ = in_state("PreparingRebalance")
    key = f"heartbeat-g-{ids['i1']}"
    h.advance(100)
    assert h.heartbeat(ids["i1"], 1).response.error_code == REBALANCE_IN_PROGRESS
    assert h.coord.timer_deadline(key) == h.coord.now_ms + 10_000


def test_illegal_generation_does_not_refresh_session():
    h, ids, _ = in_state("Stable")
    key = f"heartbeat-g-{ids['i1']}"
    deadline = h.coord.timer_deadline(key)
    h.advance(100)
    assert h.heartbeat(ids["i1"], 0).response.error_code == ILLEGAL_GENERATION
    assert h.coord.timer_deadline(key) == deadline


def test_heartbeat_on_empty_group_is_unknown_member():
    h, _, _ = in_state("Empty")
    assert h.heartbeat("gone", 2).response.error_code == UNKNOWN_MEMBER_ID


@pytest.mark.parametrize("version", range(5))
def test_heartbeat_every_version_encodes(version):
    h, ids, _ = in_state("Stable")
    r = h.heartbeat(ids["i0"], 1, version=version)
    assert (r.response.API_VERSION, r.response.error_code) == (version, NONE)
    r.response.encode()
