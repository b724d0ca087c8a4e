"""JoinGroup: pre-checks (spec b.0), the decision matrix (b.5), static replacement (b.3),
join completion (b.4) and the version-specific response rules."""

import pytest

from helpers.coordinator import (java_order, COORDINATOR_NOT_AVAILABLE, FENCED_INSTANCE_ID,
                                 GROUP_MAX_SIZE_REACHED, INCONSISTENT_GROUP_PROTOCOL,
                                 INVALID_GROUP_ID, INVALID_SESSION_TIMEOUT,
                                 MEMBER_ID_REQUIRED, NONE, REBALANCE_IN_PROGRESS,
                                 UNKNOWN_MEMBER_ID, UNKNOWN_SERVER_ERROR, Harness, in_state)

STATES = ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable")


# ---- b.0 pre-checks ------------------------------------------------------------------------
def test_empty_group_id_is_invalid():
    h = Harness()
    r = h.join(group="")
    assert r.response.error_code == INVALID_GROUP_ID
    assert h.coord.groups() == []


@pytest.mark.parametrize("session", [9, 1_800_001])
def test_session_timeout_out_of_bounds_rejected_without_creating_the_group(session):
    h = Harness(group_max_session_timeout_ms=1_800_000)
    r = h.join(session=session, member_id="")
    assert r.response.error_code == INVALID_SESSION_TIMEOUT
    assert h.coord.groups() == [] and h.coord.records == []


@pytest.mark.parametrize("session", [10, 1_800_000])
def test_session_timeout_bounds_are_inclusive(session):
    h = Harness()
    assert h.join(session=session).response.error_code == MEMBER_ID_REQUIRED


def test_unknown_group_with_member_id_is_unknown_member_and_not_created():
    h = Harness()
    r = h.join(member_id="ghost")
    assert (r.response.error_code, r.response.member_id) == (UNKNOWN_MEMBER_ID, "ghost")
    assert h.coord.group("g") is None


def test_group_max_size_rejects_newcomer_and_static_replacement():
    h = Harness(group_max_size=2)
    ids = h.stable()
    r = h.join(instance="i2")
    assert (r.response.error_code, r.response.member_id) == (GROUP_MAX_SIZE_REACHED, "")
    # a static restart with an empty member id counts as a newcomer for the size check
    r = h.join(instance="i0")
    assert r.response.error_code == GROUP_MAX_SIZE_REACHED
    assert h.group().static_members == {"i0": ids["i0"], "i1": ids["i1"]}
    assert h.group().state == "Stable"


def test_group_max_size_in_preparing_rebalance_evicts_the_rejected_member():
    h = Harness(group_max_size=2)
    ids = h.stable(instances=("i0",), dynamic=1)
    h.join(member_id=ids["i0"], instance="i0")        # leader rejoins: PreparingRebalance, 1 awaiting
    h.join(instance="i2")                              # second awaiting member
    assert h.group().state == "PreparingRebalance"
    r = h.join(member_id=ids["d0"])                    # a known member, but 2 are already awaiting
    assert (r.response.error_code, r.response.member_id) == (GROUP_MAX_SIZE_REACHED, "")
    assert ids["d0"] not in [m.member_id for m in h.group().members]


def test_pending_member_rejoin_is_refused_when_full_and_dropped():
    h = Harness(group_max_size=2)
    ids = h.stable(instances=("i0",))
    first = h.join()
    assert first.response.error_code == MEMBER_ID_REQUIRED      # 1 member < 2
    h.join(instance="i2")                                         # Stable -> PreparingRebalance
    h.join(member_id=ids["i0"], instance="i0")                    # now 2 members await the join
    # the pending member blocks completion until it rejoins; its rejoin is refused and drops it
    second = h.join(member_id=first.response.member_id)
    assert second.response.error_code == GROUP_MAX_SIZE_REACHED
    assert h.group().pending_members == ()
    assert h.group().state == "PreparingRebalance"


def test_full_group_refuses_even_the_first_dynamic_step():
    h = Harness(group_max_size=1)
    h.stable(instances=("i0",))
    assert h.join().response.error_code == GROUP_MAX_SIZE_REACHED


# ---- b.1 / b.5 rows 1-3: empty member id ------------------------------------------------------
@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_row1_dynamic_join_below_v4_is_added_without_member_id_required(version):
    h = Harness()
    r = h.join(version=version, client_id="cli")
    assert not r.done
    g = h.group()
    assert g.state == "PreparingRebalance"
    assert [m.member_id for m in g.members] == ["cli-u0"]
    assert h.coord.next_deadline_ms() == 3000          # initial rebalance delay
    h.advance(3000)
    assert r.response.error_code == NONE
    assert (r.response.member_id, r.response.leader, r.response.generation_id) == ("cli-u0", "cli-u0", 1)
    assert r.response.protocol_name == "range"


@pytest.mark.parametrize("state", STATES)
def test_row2_dynamic_v4_gets_member_id_required_and_no_state_change(state):
    h, _, _ = in_state(state)
    before = h.group()
    r = h.join(version=4, client_id="cli")
    assert r.response.error_code == MEMBER_ID_REQUIRED
    assert r.response.member_id.startswith("cli-u")
    assert (r.response.generation_id, r.response.leader, r.response.members) == (-1, "", [])
    after = h.group()
    assert after.state == before.state and after.generation == before.generation
    assert after.members == before.members
    assert after.pending_members == (r.response.member_id,)


@pytest.mark.parametrize("state", ["Empty", "CompletingRebalance", "Stable"])
def test_rows_1_3_new_member_triggers_rebalance(state):
    h, ids, _ = in_state(state)
    sync = None
    if state == "CompletingRebalance":
        g = h.group()
        follower = next(m for m in ids.values() if m != g.leader)
        sync = h.sync(follower, g.generation, instance=next(n for n, m in ids.items() if m == follower))
        assert not sync.done
    r = h.join(instance="new")
    assert not r.done
    g = h.group()
    assert g.state == "PreparingRebalance"
    assert g.static_members["new"].startswith("new-u")
    if sync is not None:
        assert sync.response.error_code == REBALANCE_IN_PROGRESS
        assert sync.response.assignment == b""
        assert all(m.assignment == b"" for m in g.members)


def test_row3_new_static_member_joins_ongoing_round_without_completing_it():
    h, ids, parked = in_state("PreparingRebalance")
    r = h.join(instance="new")
    assert not r.done and not parked["i0"].done
    assert h.group().state == "PreparingRebalance"
    assert "new" in h.group().static_members


def test_static_member_never_gets_member_id_required():
    h = Harness()
    r = h.join(instance="s", version=5)
    assert not r.done
    assert h.group().static_members == {"s": "s-u0"}


@pytest.mark.parametrize("state", STATES)
def test_unsupported_protocol_with_empty_id_is_inconsistent(state):
    h, _, _ = in_state(state)
    if state == "Empty":
        r = h.join(protocol_type="")
    else:
        r = h.join(protocols=(("roundrobin", b"x"),))
    assert (r.response.error_code, r.response.member_id) == (INCONSISTENT_GROUP_PROTOCOL, "")


def test_protocol_check_precedes_fencing():
    h = Harness()
    h.stable()
    r = h.join(member_id="someone-else", instance="i0", protocols=(("roundrobin", b""),))
    assert r.response.error_code == INCONSISTENT_GROUP_PROTOCOL


def test_other_protocol_type_rejected():
    h = Harness()
    h.stable()
    assert h.join(protocol_type="connect").response.error_code == INCONSISTENT_GROUP_PROTOCOL


def test_common_protocol_is_selected_by_vote():
    h = Harness()
    a = h.join(instance="a", protocols=(("range", b"1"), ("sticky", b"2")))
    b = h.join(instance="b", protocols=(("sticky", b"3"), ("range", b"4")))
    c = h.join(instance="c", protocols=(("sticky", b"5"), ("range", b"6"), ("rr", b"")))
    h.advance(6000)
    assert a.response.protocol_name == "sticky"
    leader = next(r for r in (a, b, c) if r.response.members)
    assert [(m.member_id, m.metadata) for m in leader.response.members] == java_order([
        ("a-u0", b"2"), ("b-u1", b"3"), ("c-u2", b"5")], key=lambda m: m[0])


@pytest.mark.parametrize("first,second,chosen", [
    ("cooperative-sticky", "range", "range"),          # Java String hash buckets 15 and 9
    ("range", "sticky", "sticky"),                     # buckets 9 and 8
    ("range", "roundrobin", "range"),                  # buckets 9 and 10
])
def test_tied_vote_goes_to_the_protocol_javas_hash_map_yields_first(first, second, chosen):
    """ClassicGroup.selectProtocol counts votes in a java.util.HashMap and takes Stream.max, which
    keeps the first of equal counts in the map's iteration order (bucket order of String.hashCode),
    not the order in which the members listed the protocols."""
    h = Harness()
    a = h.join(instance="a", protocols=((first, b"1"), (second, b"2")))
    h.join(instance="b", protocols=((second, b"3"), (first, b"4")))
    h.advance(6000)
    assert a.response.protocol_name == chosen


# ---- b.3 / row 4: static replacement ------------------------------------------------------------
def test_row4_stable_restart_of_follower_no_rebalance_and_record_written():
    h, ids, _ = in_state("Stable")
    records_before = len(h.coord.records)
    r = h.join(instance="i1", client_id="other-client", client_host="/10.0.0.9",
               session=20_000, rebalance=40_000)
    assert r.done and r.response.error_code == NONE
    resp = r.response
    assert resp.member_id == "i1-u2" and resp.generation_id == 1
    assert (resp.leader, resp.skip_assignment, resp.members) == (ids["i0"], False, [])
    g = h.group()
    assert g.state == "Stable" and g.generation == 1
    assert g.static_members == {"i0": ids["i0"], "i1": "i1-u2"}
    new = next(m for m in g.members if m.member_id == "i1-u2")
    # client id/host of the first incarnation are kept; timeouts are updated (KAFKA-14009)
    assert (new.client_id, new.client_host) == ("client", "/127.0.0.1")
    assert (new.session_timeout_ms, new.rebalance_timeout_ms) == (20_000, 40_000)
    assert new.assignment == b"A-i1"
    assert len(h.coord.records) == records_before + 1
    # the old id is fenced, the new id works
    assert h.heartbeat(ids["i1"], 1, instance="i1").response.error_code == FENCED_INSTANCE_ID
    assert h.heartbeat(ids["i1"], 1).response.error_code == UNKNOWN_MEMBER_ID
    assert h.heartbeat("i1-u2", 1, instance="i1").response.error_code == NONE
    sync = h.sync("i1-u2", 1, instance="i1")
    assert (sync.response.error_code, sync.response.assignment) == (NONE, b"A-i1")


def test_row4_replacement_reschedules_new_id_with_the_old_session_timeout():
    """b.3 step 4: the new id's session timer uses the timeout from before the update (step 5)."""
    h, ids, _ = in_state("Stable")
    h.advance(250)
    old_deadline = h.coord.timer_deadline(f"heartbeat-g-{ids['i1']}")
    r = h.join(instance="i1", session=20_000)
    new_id = r.response.member_id
    assert h.coord.timer_deadline(f"heartbeat-g-{new_id}") == h.coord.now_ms + 10_000
    assert next(m for m in h.group().members if m.member_id == new_id).session_timeout_ms == 20_000
    # the old id's timer is left to fire harmlessly
    assert h.coord.timer_deadline(f"heartbeat-g-{ids['i1']}") == old_deadline
    assert h.heartbeat(ids["i0"], 1, instance="i0").response.error_code == NONE
    h.advance(old_deadline - h.coord.now_ms)
    assert h.group().state == "Stable" and h.group().static_members["i1"] == new_id


@pytest.mark.parametrize("version,leader_seen,members,skip", [
    (9, "i0-u2", ["i1-u1", "i0-u2"], True),
    (8, "i0-u0", [], False),
    (5, "i0-u0", [], False),
])
def test_row4_stable_restart_of_leader_skip_assignment_only_from_v9(version, leader_seen, members, skip):
    h, ids, _ = in_state("Stable")
    r = h.join(instance="i0", version=version)
    resp = r.response
    assert resp.error_code == NONE and resp.member_id == "i0-u2"
    assert resp.leader == leader_seen
    assert [m.member_id for m in resp.members] == java_order(members)
    assert resp.skip_assignment is skip
    assert h.group().leader == "i0-u2" and h.group().state == "Stable"


def test_row4_stable_restart_with_other_metadata_but_same_protocol_does_not_rebalance():
    h, ids, _ = in_state("Stable")
    r = h.join(instance="i1", protocols=(("range", b"different-bytes"),))
    assert r.done and h.group().state == "Stable"


def test_row4_stable_restart_changing_selected_protocol_rebalances():
    h = Harness()
    a = h.join(instance="a", protocols=(("range", b""), ("sticky", b"")))
    b = h.join(instance="b", protocols=(("range", b""), ("sticky", b"")))
    h.advance(6000)
    assert a.response.protocol_name == "range"
    h.sync(b.response.member_id, 1, instance="b")
    h.sync(a.response.member_id, 1, instance="a", assignments={})
    assert h.group().state == "Stable"
    r = h.join(instance="b", protocols=(("sticky", b""),))
    assert not r.done
    assert h.group().state == "PreparingRebalance"
    a2 = h.join(member_id=a.response.member_id, instance="a", protocols=(("sticky", b""), ("range", b"")))
    assert r.done and a2.done
    assert r.response.protocol_name == "sticky" and r.response.generation_id == 2


def test_row4_preparing_rebalance_replacement_fences_old_parked_join():
    h, ids, parked = in_state("PreparingRebalance")
    r = h.join(instance="i0")            # the leader restarts while its rejoin is parked
    old = parked["i0"].response
    assert old.error_code == FENCED_INSTANCE_ID
    assert (old.member_id, old.leader, old.generation_id, old.members) == (ids["i0"], "", -1, [])
    assert not r.done
    g = h.group()
    assert g.leader == "i0-u2" and g.static_members["i0"] == "i0-u2"
    # the other member rejoins: everybody has joined, the round completes with the new id
    r1 = h.join(member_id=ids["i1"], instance="i1")
    assert r.done and r1.done
    assert r.response.leader == "i0-u2" and r.response.generation_id == 2
    assert [m.member_id for m in r.response.members] == java_order([ids["i1"], "i0-u2"])


def test_row4_completing_rebalance_replacement_always_rebalances_and_fences_parked_sync():
    h, ids, _ = in_state("CompletingRebalance")
    sync = h.sync(ids["i1"], 1, instance="i1")
    assert not sync.done
    r = h.join(instance="i1")
    assert sync.response.error_code == FENCED_INSTANCE_ID
    assert not r.done
    assert h.group().state == "PreparingRebalance"


# ---- b.2 / rows 5-10: non-empty member id --------------------------------------------------------
def test_row5_preparing_rebalance_rejoin_updates_and_completes_round():
    h, ids, parked = in_state("PreparingRebalance")
    r = h.join(member_id=ids["i1"], instance="i1", session=12_345)
    assert r.done and parked["i0"].done
    assert r.response.generation_id == 2 and r.response.members == []
    assert next(m for m in h.group().members if m.member_id == ids["i1"]).session_timeout_ms == 12_345
    leader = parked["i0"].response
    assert [m.member_id for m in leader.members] == [ids["i0"], ids["i1"]]


def test_row5_completing_rebalance_same_protocols_returns_current_generation():
    h, ids, _ = in_state("CompletingRebalance")
    lead = h.join(member_id=ids["i0"], instance="i0", session=99_999)
    follow = h.join(member_id=ids["i1"], instance="i1")
    assert lead.done and follow.done
    assert [m.member_id for m in lead.response.members] == [ids["i0"], ids["i1"]]
    assert follow.response.members == [] and follow.response.generation_id == 1
    assert h.group().state == "CompletingRebalance"
    # timeouts are not updated on this path
    assert next(m for m in h.group().members if m.member_id == ids["i0"]).session_timeout_ms == 10_000


def test_row5_completing_rebalance_changed_protocols_rebalance():
    h, ids, _ = in_state("CompletingRebalance")
    r = h.join(member_id=ids["i1"], instance="i1", protocols=(("range", b"new"),))
    assert not r.done and h.group().state == "PreparingRebalance"


def test_row5_stable_leader_rejoin_always_rebalances():
    h, ids, _ = in_state("Stable")
    r = h.join(member_id=ids["i0"], instance="i0")
    assert not r.done and h.group().state == "PreparingRebalance"


def test_row5_stable_follower_unchanged_gets_immediate_reply():
    h, ids, _ = in_state("Stable")
    r = h.join(member_id=ids["i1"], instance="i1")
    assert r.done and r.response.error_code == NONE
    assert (r.response.generation_id, r.response.leader, r.response.members) == (1, ids["i0"], [])
    assert h.group().state == "Stable"


def test_row5_stable_follower_changed_protocols_rebalances():
    h, ids, _ = in_state("Stable")
    r = h.join(member_id=ids["i1"], protocols=(("range", b"changed"),))
    assert not r.done and h.group().state == "PreparingRebalance"


@pytest.mark.parametrize("state", STATES)
def test_row6_current_id_with_unmapped_instance_is_unknown(state):
    h, ids, _ = in_state(state)
    member_id = ids.get("i1", "i1-u1")
    r = h.join(member_id=member_id, instance="nobody")
    assert r.response.error_code == UNKNOWN_MEMBER_ID
    assert r.response.member_id == member_id
    assert (r.response.generation_id, r.response.leader, r.response.protocol_name) == (-1, "", None)


@pytest.mark.parametrize("state", ["PreparingRebalance", "CompletingRebalance", "Stable"])
def test_row7_instance_mapped_to_other_id_is_fenced(state):
    h, ids, _ = in_state(state)
    for member_id in (ids["i1"], "unknown-id"):
        r = h.join(member_id=member_id, instance="i0")
        assert (r.response.error_code, r.response.member_id) == (FENCED_INSTANCE_ID, member_id)


@pytest.mark.parametrize("state", STATES)
def test_row8_pending_member_second_join_is_added(state):
    h, _, _ = in_state(state)
    first = h.join(client_id="dyn")
    second = h.join(member_id=first.response.member_id, client_id="dyn")
    g = h.group()
    assert first.response.member_id in [m.member_id for m in g.members]
    assert g.pending_members == ()
    assert g.state == "PreparingRebalance"
    assert not second.done


@pytest.mark.parametrize("state", STATES)
def test_row9_pending_id_with_instance_is_internal_error(state):
    h, _, _ = in_state(state)
    first = h.join()
    r = h.join(member_id=first.response.member_id, instance="x")
    assert r.response.error_code == UNKNOWN_SERVER_ERROR


@pytest.mark.parametrize("state", STATES)
def test_row10_unknown_member_id_is_unknown(state):
    h, _, _ = in_state(state)
    r = h.join(member_id="stranger")
    assert (r.response.error_code, r.response.member_id) == (UNKNOWN_MEMBER_ID, "stranger")


# ---- versions ---------------------------------------------------------------------------------
@pytest.mark.parametrize("version", range(10))
def test_every_version_completes_a_round_and_encodes(version):
    h = Harness()
    first = h.join(version=version)
    if version >= 4:
        assert first.response.error_code == MEMBER_ID_REQUIRED
        first = h.join(member_id=first.response.member_id, version=version)
    h.advance(3000)
    resp = first.response
    assert resp.API_VERSION == version and resp.error_code == NONE
    assert resp.protocol_name == "range"
    assert resp.protocol_type == "consumer"
    resp.encode()


@pytest.mark.parametrize("version,expected", [(6, ""), (7, None), (9, None)])
def test_error_protocol_name_is_empty_string_below_v7(version, expected):
    h = Harness()
    r = h.join(member_id="ghost", version=version)
    assert r.response.protocol_name == expected
    r.response.encode()


def test_v0_rebalance_timeout_is_the_session_timeout():
    h = Harness()
    h.join(version=0, session=7000, rebalance=99_000)
    assert h.group().members[0].rebalance_timeout_ms == 7000


def test_instance_id_ignored_below_v5():
    h = Harness()
    r = h.join(version=4, instance="ignored")
    assert r.response.error_code == MEMBER_ID_REQUIRED
    assert h.group().static_members == {}


def test_dead_group_join_is_coordinator_not_available():
    h = Harness()
    h.stable()
    group = h.coord.get_classic_group("g")
    group.state = "Dead"          # only unloading makes a group Dead; simulate it
    assert h.join().response.error_code == COORDINATOR_NOT_AVAILABLE
    assert h.join(member_id="x").response.error_code == COORDINATOR_NOT_AVAILABLE


def test_members_are_listed_in_kafkas_member_map_order_not_join_order():
    """Kafka keeps a classic group's members in a java.util.HashMap keyed by member id, and lists
    them in its iteration order everywhere: the leader's JoinGroup members, the GroupMetadata
    record, DescribeGroups. Joined as a, b, c, the ids a-u0, b-u1, c-u2 fall in buckets 11, 10, 10
    of its 16: listed b, c, a. (Found by the differential runner: kafka-python's range assignor
    with static members assigns by that order, so the partitions each member got differed.)"""
    from kgroup.records import decode_value

    h = Harness()
    joins = [h.join(instance=i) for i in ("a", "b", "c")]
    h.advance(6000)
    leader = next(r for r in joins if r.response.members)
    assert [m.member_id for m in leader.response.members] == ["b-u1", "c-u2", "a-u0"]
    for r in joins:
        h.sync(r.response.member_id, 1, instance=r.response.member_id[0],
               assignments={j.response.member_id: b"x" for j in joins} if r is leader else None)
    value = decode_value(2, h.coord.records[-1][1]).data
    assert [m["memberId"] for m in value["members"]] == ["b-u1", "c-u2", "a-u0"]
    described = h.describe("g").response.groups[0].members
    assert [m.member_id for m in described] == ["b-u1", "c-u2", "a-u0"]
