"""Scenarios on the embedded coordinator: the rebalance counts KIP-345 predicts, exactly."""

import pytest

from kgroup.sim.model import ParameterError, SimParams, variants
from kgroup.sim.scenarios import run_scenario


def run(scenario, **kw):
    return run_scenario(scenario, SimParams(**kw))


def kinds(result, member=None):
    return [e["event"] for e in result.events if member is None or e.get("member") == member]


# ---- the checks the issue asks for -----------------------------------------------------------
def test_static_rolling_bounce_within_session_timeout_causes_no_rebalance():
    r = run("rolling-bounce", membership="static", members=5, topics=(("t", 10),),
            restart_ms=10_000, session_timeout_ms=45_000)
    assert (r.rebalances, r.generation_start, r.generation_end, r.partitions_moved) == (0, 1, 1, 0)
    # Each member is down 10 s holding 2 partitions: 5 x 10 s x 2 partitions.
    assert r.unowned_partition_seconds == 100.0
    assert r.longest_stop_ms == 10_000
    assert r.time_to_stable_ms == 50_000
    assert r.settled and r.errors == []
    assert "group-state" not in kinds(r)        # the group never left Stable


def test_dynamic_eager_rolling_bounce_rebalances_twice_per_restart():
    r = run("rolling-bounce", membership="dynamic", assignor="range", members=5,
            topics=(("t", 10),))
    # LeaveGroup on close, then the new member's join: two rebalances per restart.
    assert r.rebalances == 2 * 5
    assert (r.generation_start, r.generation_end) == (1, 11)
    assert r.partitions_moved == 10
    assert kinds(r, "c0")[:2] == ["leave", "stop"]
    entries = [e for e in r.events if e["event"] == "group-state" and e["state"] == "PreparingRebalance"]
    assert len(entries) == 10 and len(r.rebalance_times) == 10


def test_static_restart_longer_than_session_timeout_rebalances_twice_per_member():
    # KIP-345: only the session timeout removes a static member; coming back is a new join.
    r = run("rolling-bounce", membership="static", members=5, topics=(("t", 10),),
            restart_ms=50_000, session_timeout_ms=45_000)
    assert r.rebalances == 2 * 5
    assert (r.generation_start, r.generation_end) == (1, 11)
    assert r.partitions_moved == 10
    assert r.longest_stop_ms > 50_000


@pytest.mark.parametrize("assignor", ["range", "roundrobin", "sticky", "cooperative-sticky"])
def test_static_rolling_bounce_is_free_with_every_assignor(assignor):
    r = run("rolling-bounce", membership="static", assignor=assignor, members=4,
            topics=(("a", 7), ("b", 5)))
    assert (r.rebalances, r.partitions_moved) == (0, 0)


def test_cooperative_dynamic_bounce_adds_a_second_round_for_the_newcomer():
    r = run("rolling-bounce", membership="dynamic", assignor="cooperative-sticky", members=3)
    assert r.rebalances == 3 * 3     # leave, join, and the round after the revocation
    assert r.generation_end == 10


# ---- the other scenarios --------------------------------------------------------------------
def test_upgrade_dynamic_to_static_costs_two_rebalances_per_member_once():
    r = run("upgrade", members=3)
    assert r.membership == "dynamic->static"
    assert (r.rebalances, r.generation_end) == (6, 7)
    starts = [e for e in r.events if e["event"] == "start"]
    assert [e["static"] for e in starts] == [True, True, True]
    # After the upgrade a rolling bounce is free.
    assert run("rolling-bounce", membership="static", members=3).rebalances == 0


def test_downgrade_leaves_old_static_members_until_their_session_times_out():
    r = run("downgrade", members=3, session_timeout_ms=45_000, restart_ms=10_000)
    assert r.membership == "static->dynamic"
    # One round per member, held open until the old static incarnation expires (45 s).
    assert (r.rebalances, r.generation_end) == (3, 4)
    assert r.longest_stop_ms == 45_000
    assert r.time_to_stable_ms == 3 * 45_000


def test_scale_down_waits_for_the_session_timeout_unless_members_are_removed():
    waiting = run("scale-down", membership="static", session_timeout_ms=45_000)
    removed = run("scale-down", membership="static", session_timeout_ms=45_000,
                  remove_members=True)
    assert (waiting.rebalances, removed.rebalances) == (1, 1)
    assert waiting.members == removed.members == 2
    assert 42_000 <= waiting.time_to_stable_ms <= 48_000
    assert removed.time_to_stable_ms < 3_000
    assert waiting.unowned_partition_seconds > 10 * removed.unowned_partition_seconds
    assert "remove-members" in kinds(removed) and "remove-members" not in kinds(waiting)
    dynamic = run("scale-down", membership="dynamic")
    assert dynamic.time_to_stable_ms == removed.time_to_stable_ms   # LeaveGroup on close


def test_scale_up_one_rebalance_and_partitions_spread():
    r = run("scale-up", membership="static", count=2, members=3)
    assert (r.rebalances, r.members, r.generation_end) == (1, 5, 2)


def test_leader_bounce_static_is_free_dynamic_is_not():
    static = run("leader-bounce", membership="static")
    dynamic = run("leader-bounce", membership="dynamic")
    assert (static.rebalances, static.partitions_moved) == (0, 0)
    assert [e["skip_assignment"] for e in static.events if e["event"] == "joined"] == [True]
    assert dynamic.rebalances == 2


def test_crash_static_within_session_is_free_dynamic_waits_for_expiry():
    static = run("crash", membership="static", restart_ms=10_000)
    dynamic = run("crash", membership="dynamic", restart_ms=10_000, session_timeout_ms=45_000)
    assert static.rebalances == 0
    assert "leave" not in kinds(dynamic)
    # The new member's round waits for the crashed member's session to expire: one round.
    assert dynamic.rebalances == 1
    assert dynamic.time_to_stable_ms == 45_000


def test_duplicate_instance_fences_the_first_process():
    r = run("duplicate-instance", membership="static")
    assert r.rebalances == 0
    assert r.members == 3
    assert r.errors == ["c0: Heartbeat failed with FENCED_INSTANCE_ID (82)"]
    assert "fenced" in kinds(r, "c0")
    # Until its next heartbeat is fenced, the first process still consumes what the twin took.
    overlap = [e for e in r.events if e["event"] == "double-owned"]
    assert overlap == [{"t_ms": 0, "event": "double-owned", "member": "c0-twin", "partitions": 3,
                        "still_held_by": "c0"}]
    fenced_at = next(e["t_ms"] for e in r.events if e["event"] == "fenced")
    assert 0 < fenced_at <= 3_000
    dynamic = run("duplicate-instance", membership="dynamic")
    assert (dynamic.rebalances, dynamic.members, dynamic.errors) == (1, 4, [])


def test_concurrency_merges_restarts_into_fewer_rebalances():
    sequential = run("rolling-bounce", membership="dynamic", members=4)
    paired = run("rolling-bounce", membership="dynamic", members=4, concurrency=2)
    assert (sequential.rebalances, paired.rebalances) == (8, 4)


# ---- determinism, heartbeats, parameters ----------------------------------------------------
@pytest.mark.parametrize("scenario,membership", [("rolling-bounce", "dynamic"),
                                                 ("downgrade", "static"),
                                                 ("duplicate-instance", "static"),
                                                 ("crash", "dynamic")])
def test_short_circuited_heartbeats_give_the_same_run_as_heartbeat_requests(scenario, membership):
    fast = run(scenario, membership=membership, members=3, assignor="cooperative-sticky")
    wire = run(scenario, membership=membership, members=3, assignor="cooperative-sticky",
               wire_heartbeats=True)
    assert fast.as_dict() == wire.as_dict()


# Heartbeats of a quiet member are coalesced (the member sleeps until the session would
# expire, or until the engine wakes it); these runs hit the edge cases: a change at the very
# millisecond of a sleeper's heartbeat slot (from a timer, a restart scheduled long before, a
# response), restarts around the session timeout, a twin fencing a sleeper, admin removal.
@pytest.mark.parametrize("scenario,kw", [
    ("crash", dict(members=12, restart_ms=60_000, concurrency=3, seed=98, order="leader-first",
                   topics=(("t", 40),))),
    ("downgrade", dict(members=12, restart_ms=44_000, heartbeat_interval_ms=1_000, seed=72)),
    ("rolling-bounce", dict(members=12, membership="static", assignor="cooperative-sticky",
                            restart_ms=46_000, session_timeout_ms=10_000,
                            heartbeat_interval_ms=1_000, concurrency=2, seed=63)),
    ("upgrade", dict(members=30, assignor="roundrobin", restart_ms=10_000,
                     heartbeat_interval_ms=1_000, concurrency=3, seed=57, topics=(("t", 3),))),
    ("duplicate-instance", dict(members=12, seed=5)),
    ("scale-down", dict(members=12, count=3, remove_members=True, seed=9)),
    ("rolling-bounce", dict(members=30, membership="dynamic", restart_ms=3_000, seed=4)),
])
def test_coalesced_heartbeats_give_the_same_run_as_heartbeat_requests(scenario, kw):
    fast = run(scenario, **kw)
    wire = run(scenario, wire_heartbeats=True, **kw)
    assert fast.as_dict() == wire.as_dict()


def test_quiet_members_sleep_through_heartbeats(monkeypatch):
    from kgroup.coordinator import GroupCoordinator

    refreshes = []
    original = GroupCoordinator.refresh_session
    monkeypatch.setattr(GroupCoordinator, "refresh_session",
                        lambda self, group, member_id: (refreshes.append(member_id),
                                                        original(self, group, member_id))[1])
    r = run("rolling-bounce", membership="static", members=10, restart_ms=10_000,
            session_timeout_ms=45_000, heartbeat_interval_ms=3_000)
    assert (r.rebalances, r.partitions_moved) == (0, 0)
    # 10 members x 100 s of virtual time at one heartbeat per 3 s would be over 300 refreshes;
    # a sleeper refreshes once per 42 s (the last slot before its 45 s session expires).
    assert 0 < len(refreshes) < 60


def test_same_seed_same_run_other_seed_other_phases():
    a = run("rolling-bounce", membership="dynamic", seed=7)
    b = run("rolling-bounce", membership="dynamic", seed=7)
    c = run("rolling-bounce", membership="dynamic", seed=8)
    assert a.as_dict() == b.as_dict()
    assert a.rebalances == c.rebalances and a.events != c.events


def test_random_order_is_seeded():
    a = run("rolling-bounce", membership="static", members=6, order="random", seed=3)
    stops = [e["member"] for e in a.events if e["event"] == "stop"]
    assert sorted(stops) == [f"c{i}" for i in range(6)] and stops != sorted(stops)
    assert stops == [e["member"] for e in run("rolling-bounce", membership="static", members=6,
                                              order="random", seed=3).events
                     if e["event"] == "stop"]


def test_leader_last_order_bounces_the_leader_last():
    r = run("rolling-bounce", membership="static", members=3, order="leader-last")
    stops = [e["member"] for e in r.events if e["event"] == "stop"]
    joined = [e for e in r.events if e["event"] == "joined" and e["leader"]]
    assert len(stops) == 3 and joined[-1]["member"] == stops[-1]


def test_a_session_timeout_the_broker_refuses_is_a_parameter_error_naming_its_bound():
    """Below group.min.session.timeout.ms every JoinGroup would fail with INVALID_SESSION_TIMEOUT:
    refused before the run, saying how to lower the bound."""
    with pytest.raises(ParameterError, match=r"--session-timeout-ms 1000 is below the broker's "
                                             r"group.min.session.timeout.ms \(6000\).*INVALID_SESSION_TIMEOUT; "
                                             r"lower that with --config group.min.session.timeout.ms=1000"):
        run("rolling-bounce", session_timeout_ms=1_000, heartbeat_interval_ms=300)
    lowered = run("rolling-bounce", session_timeout_ms=1_000, heartbeat_interval_ms=300,
                  broker_config=(("group.min.session.timeout.ms", 1_000),))
    assert lowered.settled and lowered.errors == []


@pytest.mark.parametrize("kw,message", [
    ({"members": 0}, "--members must be at least 1"),
    ({"heartbeat_interval_ms": 50_000}, "must be lower than --session-timeout-ms"),
    ({"concurrency": 0}, "--concurrency must be at least 1"),
    # Kafka's timeouts are 32-bit ints: beyond, a record or a coordinator config failed with a traceback
    ({"rebalance_timeout_ms": 2**31}, r"--rebalance-timeout-ms must be at most 2147483647 \(got 2147483648\)"),
    ({"session_timeout_ms": 10**11, "protocol": "consumer"}, "--session-timeout-ms must be at most 2147483647"),
    ({"initial_rebalance_delay_ms": 10**11}, "--initial-rebalance-delay-ms must be at most 2147483647"),
    ({"heartbeat_interval_ms": 2**31, "session_timeout_ms": 2**32}, "--session-timeout-ms must be at most"),
    ({"restart_ms": 10**14}, "--restart-ms must be at most 2147483647"),
])
def test_bad_parameters_are_parameter_errors(kw, message):
    with pytest.raises(ParameterError, match=message):
        run("rolling-bounce", **kw)


def test_count_must_leave_someone_and_compare_must_fit():
    with pytest.raises(ParameterError, match=r"--count \(3\) must be lower than --members \(3\)"):
        run("scale-down", members=3, count=3)
    with pytest.raises(ParameterError, match="does not apply to upgrade"):
        variants("upgrade", SimParams(), "membership")
    with pytest.raises(ParameterError, match=r"--compare removal does not apply to crash \(it takes "):
        variants("crash", SimParams(), "removal")
    with pytest.raises(ParameterError, match="--compare protocol does not apply to upgrade-protocol"):
        variants("upgrade-protocol", SimParams(), "protocol")
    assert [p.assignor for p in variants("crash", SimParams(), "assignor")] == \
        ["range", "roundrobin", "sticky", "cooperative-sticky"]


def test_result_document_has_the_issue_fields():
    doc = run("rolling-bounce", membership="static").as_dict()
    for key in ("scenario", "membership", "members", "partitions", "rebalances",
                "generation_start", "generation_end", "partitions_moved",
                "unowned_partition_seconds", "time_to_stable_ms", "events"):
        assert key in doc
    assert doc["events"][0] == {"t_ms": 0, "event": "stop", "member": "c0"}


# ---- every rebalance is seen, every member's stop measured alike -----------------------------
def _entries(result):
    return [e["t_ms"] for e in result.events
            if e["event"] == "group-state" and e["state"] == "PreparingRebalance"]


def test_a_rebalance_that_completes_within_one_step_is_still_logged_and_marked():
    # Scale-up of one static member: the newcomer's JoinGroup (outside any step) starts the
    # round, and the leader's rejoin, the join completion and the syncs all happen at one
    # millisecond. Watching the group between steps missed the round entirely.
    r = run("scale-up", membership="static", members=1, assignor="cooperative-sticky")
    assert r.rebalances == 2
    assert r.rebalance_times == _entries(r) and len(_entries(r)) == 2
    assert r.rebalance_times[0] == 0
    # The last member leaving: Stable -> PreparingRebalance -> Empty inside one LeaveGroup.
    r = run("rolling-bounce", membership="dynamic", members=1)
    assert r.rebalances == 2 and r.rebalance_times == _entries(r) == [0, 10_000]
    states = [(e["t_ms"], e["state"]) for e in r.events if e["event"] == "group-state"]
    assert states[:2] == [(0, "PreparingRebalance"), (0, "Empty")]


def test_rebalance_markers_match_the_count_across_scenarios():
    for scenario, kw in [("rolling-bounce", dict(membership="dynamic", concurrency=5)),
                         ("upgrade", dict(members=1)), ("leader-bounce", dict(members=1,
                                                                                membership="dynamic")),
                         ("scale-up", dict(members=1)), ("downgrade", {}),
                         ("duplicate-instance", dict(membership="dynamic",
                                                     assignor="cooperative-sticky"))]:
        r = run(scenario, **kw)
        assert len(r.rebalance_times) == len(_entries(r)) == r.rebalances, (scenario, kw)


@pytest.mark.parametrize("assignor", ["range", "cooperative-sticky"])
def test_a_new_process_is_not_consuming_until_its_first_sync_whatever_the_protocol(assignor):
    # The longest stop of a scale-up was the eager newcomer's wait for its first SyncGroup,
    # but 0 for a cooperative newcomer: a cooperative process was never marked as stopped.
    r = run("scale-up", membership="dynamic", members=3, assignor=assignor)
    first_sync = next(e["t_ms"] for e in r.events if e["event"] == "synced" and e["member"] == "c3")
    assert first_sync > 0
    assert r.longest_stop_ms == first_sync
