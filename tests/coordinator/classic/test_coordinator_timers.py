"""Timers on virtual time : sessions, new-member and pending expiry, the join and
sync deadlines, the initial rebalance delay; every expectation is an exact virtual time."""

import pytest

from helpers.coordinator import (java_order, MEMBER_ID_REQUIRED, NONE, REBALANCE_IN_PROGRESS,
                                 UNKNOWN_MEMBER_ID, Harness)


def advance_to(h, t):
    h.advance(t - h.coord.now_ms)


def test_advance_fires_each_timer_at_its_own_deadline_in_order():
    h = Harness()
    seen = []
    h.coord.schedule("b", 20, lambda: seen.append(("b", h.coord.now_ms)))
    h.coord.schedule("a", 10, lambda: (seen.append(("a", h.coord.now_ms)),
                                       h.coord.schedule("c", 5, lambda: seen.append(("c", h.coord.now_ms)))))
    h.coord.schedule("gone", 1, lambda: seen.append("gone"))
    h.coord.cancel("gone")
    assert h.coord.next_deadline_ms() == 10
    h.advance(100)
    assert seen == [("a", 10), ("c", 15), ("b", 20)]
    assert h.coord.now_ms == 100
    # only the offsets manager's retention check (every offsets.retention.check.interval.ms) is left
    assert h.coord.next_deadline_ms() == 600_000


def test_rescheduling_a_key_replaces_it():
    h = Harness()
    seen = []
    h.coord.schedule("k", 10, lambda: seen.append(1))
    h.coord.schedule("k", 30, lambda: seen.append(2))
    h.advance(20)
    assert seen == []
    h.advance(10)
    assert seen == [2]


def test_advance_rejects_negative():
    with pytest.raises(ValueError, match="backwards"):
        Harness().advance(-1)


# ---- initial rebalance delay -------------------------------------------------------------------
def test_initial_delay_extends_while_members_arrive_then_completes():
    h = Harness()
    a = h.join(instance="a", rebalance=10_000)           # t=0: completion at 3000, remaining 7000
    advance_to(h, 1000)
    b = h.join(instance="b", rebalance=10_000)
    advance_to(h, 2999)
    assert h.coord.next_deadline_ms() == 3000
    advance_to(h, 3000)                                   # member added: extend to 6000 (remaining 4000)
    assert not a.done and h.coord.next_deadline_ms() == 6000
    advance_to(h, 5000)
    c = h.join(instance="c", rebalance=10_000)
    advance_to(h, 6000)                                   # extend to 9000 (remaining 1000)
    assert not a.done and h.coord.next_deadline_ms() == 9000
    advance_to(h, 8000)
    d = h.join(instance="d", rebalance=10_000)
    advance_to(h, 9000)                                   # extend by min(3000, 1000): 10000, remaining 0
    assert not a.done and h.coord.next_deadline_ms() == 10_000
    advance_to(h, 9500)
    h.join(instance="e", rebalance=10_000)                # remaining is 0: no further extension
    advance_to(h, 10_000)
    assert all(r.done for r in (a, b, c, d))
    assert a.response.generation_id == 1 and len(a.response.members) == 5
    assert h.group().current_state_timestamp == 10_000


def test_initial_delay_completes_when_nobody_new_arrived():
    h = Harness()
    a = h.join(instance="a")
    h.join(instance="b")
    advance_to(h, 3000)
    assert not a.done                     # b arrived during the first delay
    advance_to(h, 5999)
    assert not a.done
    advance_to(h, 6000)
    assert a.done and h.group().state == "CompletingRebalance"


def test_initial_round_is_not_completed_early_by_rejoins():
    h = Harness()
    a = h.join(version=3)                 # the only member, already awaiting the join
    advance_to(h, 2999)
    assert not a.done
    advance_to(h, 3000)
    assert a.done


def test_initial_delay_zero_and_rebalance_timeout_below_delay():
    h = Harness(group_initial_rebalance_delay_ms=0)
    a = h.join(instance="a")
    h.advance(0)
    assert a.done
    h2 = Harness()
    a = h2.join(instance="a", rebalance=1000)   # remaining = max(1000 - 3000, 0) = 0
    h2.join(instance="b", rebalance=1000)
    advance_to(h2, 3000)
    assert a.done


def test_pending_expiry_in_initial_round_completes_join_ignoring_the_delay():
    h = Harness()
    a = h.join(instance="a")
    pending = h.join(session=500)
    assert pending.response.error_code == MEMBER_ID_REQUIRED
    advance_to(h, 499)
    assert not a.done
    advance_to(h, 500)
    assert h.group().pending_members == ()
    # the expiry path completes the join directly once everybody left has joined,
    # although the initial delay (due at 3000) has not run out
    assert a.done and a.response.generation_id == 1


# ---- session expiry ----------------------------------------------------------------------------
def test_session_expiry_removes_member_and_rebalances_then_empties():
    h = Harness()
    ids = h.stable()                                       # Stable at t=6000; sessions 10 s
    assert h.coord.now_ms == 6000
    advance_to(h, 15_000)
    assert h.heartbeat(ids["i0"], 1, instance="i0").response.error_code == NONE   # i0 due at 25000
    advance_to(h, 15_999)
    assert len(h.group().members) == 2
    advance_to(h, 16_000)                                  # i1 expires
    g = h.group()
    assert [m.member_id for m in g.members] == [ids["i0"]]
    assert g.static_members == {"i0": ids["i0"]} and g.state == "PreparingRebalance"
    assert h.heartbeat(ids["i0"], 1, instance="i0").response.error_code == REBALANCE_IN_PROGRESS
    advance_to(h, 25_999)                                  # refreshed at 16000 -> due 26000
    assert len(h.group().members) == 1
    advance_to(h, 26_000)                                  # i0 expires: nobody left, join completes
    g = h.group()
    assert (g.state, g.generation, g.members) == ("Empty", 2, ())


def test_new_member_join_timeout_is_300_seconds():
    h = Harness()
    ids = h.stable(instances=("i0",))
    start = h.coord.now_ms
    r = h.join(version=3, rebalance=400_000, client_id="n")   # new member: parked, is_new
    for t in range(start + 9_000, start + 300_000, 9_000):
        advance_to(h, t)
        h.heartbeat(ids["i0"], 1, instance="i0")
    advance_to(h, start + 299_999)
    assert not r.done
    advance_to(h, start + 300_000)
    assert (r.response.error_code, r.response.member_id) == (UNKNOWN_MEMBER_ID, "")
    assert [m.member_id for m in h.group().members] == [ids["i0"]]


def test_member_parked_in_join_is_not_expired():
    h = Harness()
    ids = h.stable()
    rejoin = h.join(member_id=ids["i0"], instance="i0")     # parked; not new
    for t in (10_000, 14_000):
        advance_to(h, t)
        h.heartbeat(ids["i1"], 1, instance="i1")
    advance_to(h, 20_000)                                   # i0's session (due 16000) is satisfied
    assert ids["i0"] in [m.member_id for m in h.group().members]
    assert not rejoin.done


def test_pending_member_expires_after_its_request_session_timeout():
    h = Harness()
    ids = h.stable()
    first = h.join(session=700)
    pending = first.response.member_id
    advance_to(h, h.coord.now_ms + 699)
    assert h.group().pending_members == (pending,)
    h.advance(1)
    assert h.group().pending_members == ()
    r = h.join(member_id=pending)
    assert r.response.error_code == UNKNOWN_MEMBER_ID
    assert h.group().state == "Stable"


def test_pending_member_blocks_early_completion_until_it_expires():
    h = Harness()
    ids = h.stable()
    pending = h.join(session=2000).response.member_id
    t = h.coord.now_ms
    a = h.join(member_id=ids["i0"], instance="i0")
    b = h.join(member_id=ids["i1"], instance="i1")
    assert not a.done                                       # everybody joined, but a pending id
    advance_to(h, t + 2000)
    assert a.done and b.done and a.response.generation_id == 2
    assert pending not in [m.member_id for m in h.group().members]


# ---- rebalance (join) timeout ------------------------------------------------------------------
def test_join_timeout_removes_dynamic_non_rejoiners_and_keeps_static_ones():
    h = Harness()
    a = h.join(instance="i0", session=60_000)
    b = h.join(instance="i1", session=60_000)
    d = h.dynamic_join(session=60_000)
    advance_to(h, 6000)
    ids = {"i0": a.response.member_id, "i1": b.response.member_id, "d0": d.response.member_id}
    h.sync(ids["i1"], 1, instance="i1")
    h.sync(ids["d0"], 1)
    h.sync(ids["i0"], 1, instance="i0", assignments={ids["i1"]: b"old-i1"})
    rejoin = h.join(member_id=ids["i0"], instance="i0", session=60_000)   # t=6000; deadline 36000
    advance_to(h, 35_999)
    assert not rejoin.done
    advance_to(h, 36_000)
    resp = rejoin.response
    assert resp.generation_id == 2
    assert [(m.member_id, m.group_instance_id) for m in resp.members] == [
        (ids["i0"], "i0"), (ids["i1"], "i1")]
    g = h.group()
    assert g.state == "CompletingRebalance"
    assert [m.member_id for m in g.members] == [ids["i0"], ids["i1"]]
    # Stable -> PreparingRebalance keeps assignments (only CompletingRebalance clears them)
    assert next(m for m in g.members if m.member_id == ids["i1"]).assignment == b"old-i1"


def test_round_with_no_rejoiner_is_extended_until_sessions_expire():
    h = Harness()
    a = h.join(instance="i0", session=50_000)
    b = h.join(instance="i1", session=50_000)
    c = h.join(instance="i2", session=20_000)
    advance_to(h, 6000)
    ids = [r.response.member_id for r in (a, b, c)]
    for mid, inst in zip(ids[1:], ("i1", "i2")):
        h.sync(mid, 1, instance=inst)
    h.sync(ids[0], 1, instance="i0", assignments={})
    # nobody heartbeats: i2 expires at 26000 -> PreparingRebalance, join deadline 56000
    advance_to(h, 26_000)
    assert h.group().state == "PreparingRebalance" and len(h.group().members) == 2
    assert h.coord.timer_deadline("join-g") == 56_000
    advance_to(h, 55_999)
    assert h.coord.timer_deadline("join-g") == 56_000
    # i0 and i1 are due at 56000 too; they were scheduled earlier, so they expire first
    advance_to(h, 56_000)
    g = h.group()
    assert (g.state, g.generation, g.members) == ("Empty", 2, ())


def test_stuck_round_is_rearmed_for_another_rebalance_timeout():
    h = Harness()
    a = h.join(instance="i0", session=90_000)
    b = h.join(instance="i1", session=20_000)
    advance_to(h, 6000)
    h.sync(b.response.member_id, 1, instance="i1")
    h.sync(a.response.member_id, 1, instance="i0", assignments={})
    advance_to(h, 26_000)                                  # i1 expires, nobody is awaiting the join
    assert h.coord.timer_deadline("join-g") == 56_000
    advance_to(h, 56_000)                                  # no rejoiner: re-armed, still preparing
    assert h.group().state == "PreparingRebalance" and h.group().generation == 1
    assert h.coord.timer_deadline("join-g") == 86_000
    advance_to(h, 96_000)                                  # i0's session (6000 + 90000) ends it
    assert h.group().state == "Empty" and h.group().generation == 2


# ---- sync deadline -----------------------------------------------------------------------------
def test_members_that_never_sync_are_removed_at_the_sync_deadline_static_too():
    h = Harness()
    a = h.join(instance="i0", session=60_000)
    b = h.join(instance="i1", session=60_000)
    advance_to(h, 6000)                                    # sync deadline 36000
    lead = h.sync(a.response.member_id, 1, instance="i0", assignments={})
    assert lead.done and h.group().state == "Stable"
    advance_to(h, 35_999)
    assert len(h.group().members) == 2
    advance_to(h, 36_000)
    g = h.group()
    assert [m.group_instance_id for m in g.members] == ["i0"]
    assert g.static_members == {"i0": a.response.member_id}
    assert g.state == "PreparingRebalance"


def test_sync_deadline_cancelled_once_everybody_synced():
    h = Harness()
    h.stable()
    assert h.coord.timer_deadline("sync-g") is None


def test_rejoin_with_known_id_in_stable_then_sync_saves_a_late_static_member():
    h = Harness()
    a = h.join(instance="i0", session=60_000)
    b = h.join(instance="i1", session=60_000)
    advance_to(h, 6000)
    h.sync(a.response.member_id, 1, instance="i0", assignments={b.response.member_id: b"x"})
    advance_to(h, 20_000)
    again = h.join(member_id=b.response.member_id, instance="i1", session=60_000)
    assert again.done and again.response.generation_id == 1
    assert h.sync(b.response.member_id, 1, instance="i1").response.assignment == b"x"
    advance_to(h, 40_000)
    assert len(h.group().members) == 2 and h.group().state == "Stable"


def test_static_restart_before_syncing_still_rebalances_at_the_sync_deadline():
    """Kafka's ClassicGroup.replaceStaticMember leaves the pending-sync set alone: the old id
    never syncs, so expirePendingSync rebalances even though the new incarnation synced."""
    h = Harness()
    a = h.join(instance="i0", session=60_000)
    b = h.join(instance="i1", session=60_000)
    advance_to(h, 6000)                                    # sync deadline 36000
    h.sync(a.response.member_id, 1, instance="i0", assignments={b.response.member_id: b"x"})
    restart = h.join(instance="i1", session=60_000)
    assert restart.done and restart.response.error_code == NONE and h.group().state == "Stable"
    assert h.sync(restart.response.member_id, 1, instance="i1").response.assignment == b"x"
    advance_to(h, 35_999)
    assert h.group().state == "Stable"
    advance_to(h, 36_000)
    g = h.group()
    assert g.state == "PreparingRebalance"
    assert [m.member_id for m in g.members] == java_order([a.response.member_id, restart.response.member_id])


def test_leader_that_does_not_rejoin_is_replaced_by_a_rejoined_member():
    h = Harness()
    a = h.join(instance="i0", session=60_000)
    b = h.join(instance="i1", session=60_000)
    advance_to(h, 6000)
    ids = {"i0": a.response.member_id, "i1": b.response.member_id}
    h.sync(ids["i1"], 1, instance="i1")
    h.sync(ids["i0"], 1, instance="i0", assignments={})
    r = h.join(member_id=ids["i1"], instance="i1", protocols=(("range", b"changed"),))
    assert h.group().state == "PreparingRebalance"
    advance_to(h, 36_000)                       # i0 (the leader) never rejoined; it is static: kept
    assert r.response.leader == ids["i1"] and r.response.generation_id == 2
    assert [(m.member_id, m.metadata) for m in r.response.members] == [
        (ids["i0"], b"range-meta"), (ids["i1"], b"changed")]
    assert h.group().leader == ids["i1"]


def test_dynamic_member_below_v4_joins_an_ongoing_round():
    h = Harness()
    ids = h.stable()
    lead = h.join(member_id=ids["i0"], instance="i0")
    newcomer = h.join(version=3, client_id="old-client")
    follower = h.join(member_id=ids["i1"], instance="i1")
    # everybody, the newcomer included, has joined: the round completes at once
    assert lead.done and newcomer.done and follower.done
    assert newcomer.response.member_id == "old-client-u2"
    assert [m.member_id for m in lead.response.members] == java_order([ids["i0"], ids["i1"], "old-client-u2"])


def test_new_member_flag_left_by_a_short_initial_round_extends_the_next_one():
    """Kafka clears the flag only in the initial-delay timer: a round that ended because no
    time remained leaves it set, and the next initial round is extended once more."""
    h = Harness()
    a = h.join(instance="a", rebalance=1000)     # remaining = 0
    b = h.join(instance="b", rebalance=1000)     # flag set
    advance_to(h, 3000)
    assert a.done and b.done
    h.leave([(a.response.member_id, "a"), (b.response.member_id, "b")])
    assert h.group().state == "Empty"
    c = h.join(instance="c", rebalance=10_000)   # t=3000: first firing at 6000
    advance_to(h, 6000)
    assert not c.done and h.coord.next_deadline_ms() == 9000
    advance_to(h, 9000)
    assert c.done


def test_timer_queue_fires_as_a_sorted_list_would_with_reverts():
    """The lazy heap (a pushed-back timer keeps its earlier heap entry as a bound) fires, reports
    deadlines and reverts exactly as a plain list of (deadline, schedule order) would, compactions
    included."""
    from hypothesis import given, settings, strategies as st

    from kgroup.coordinator.runtime.timers import TimerQueue
    from kgroup.coordinator.runtime.undo import UndoJournal

    op = st.one_of(st.tuples(st.just("schedule"), st.integers(0, 5), st.integers(0, 60)),
                   st.tuples(st.just("cancel"), st.integers(0, 5)),
                   st.tuples(st.just("pop"), st.integers(0, 60)),
                   st.tuples(st.just("begin")), st.tuples(st.just("revert")), st.tuples(st.just("commit")),
                   st.tuples(st.just("compact")))

    @settings(max_examples=300, deadline=None)
    @given(st.lists(op, max_size=80))
    def check(ops):
        undo = UndoJournal()
        timers = TimerQueue(undo)
        model, saved, seq = {}, None, 0          # key -> (deadline, seq, fn name)
        for kind, *args in ops:
            if kind == "schedule":
                key, deadline = args
                seq += 1
                timers.schedule(key, deadline, f"fn{seq}")
                model[key] = (deadline, seq, f"fn{seq}")
            elif kind == "cancel":
                timers.cancel(args[0])
                model.pop(args[0], None)
            elif kind == "pop":
                due = sorted((d, s, k) for k, (d, s, _) in model.items() if d <= args[0])
                want = None
                if due:
                    deadline, _, key = due[0]
                    want = (deadline, model.pop(key)[2])
                assert timers.pop_due(args[0]) == want
            elif kind == "begin" and not undo.open:
                undo.begin()
                saved = dict(model)
            elif kind == "revert" and undo.open:
                undo.revert()
                model = saved
            elif kind == "commit" and undo.open:
                undo.commit()
            elif kind == "compact":
                timers._compact()        # what a heap grown past its bound does (rare at this size)
            assert timers.next_deadline() == min((d for d, _, _ in model.values()), default=None)
            assert len(timers) == len(model)
            assert all(timers.deadline(k) == d for k, (d, _, _) in model.items())

    check()
