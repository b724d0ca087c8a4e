"""`kgroup simulate --protocol consumer`: KIP-848 consumers on the embedded coordinator.

What the consumer protocol promises an operator — a static bounce within the session timeout costs
nothing, a dynamic one never takes partitions from the members that stay — checked on the
simulated Java/librdkafka clients, and the JSON, table and plot of `--compare protocol`.
"""

import json
from dataclasses import replace

import pytest
from click.testing import CliRunner
from kafka.protocol.consumer.group import LeaveGroupRequest

from kgroup.commands.cli import cli
from kgroup.sim.model import GROUP, SCENARIOS, SimParams, variants
from kgroup.sim.scenarios import Run, run_scenario


def run(scenario, **kw):
    return run_scenario(scenario, SimParams(protocol="consumer", **kw))


def events(result, kind, member=None):
    return [e for e in result.events if e["event"] == kind and (member is None or e.get("member") == member)]


def invoke(*args):
    return CliRunner().invoke(cli, ["simulate", *args], catch_exceptions=False)


# ---- the checks the issue asks for -----------------------------------------------------------
@pytest.mark.parametrize("order,concurrency", [("name", 1), ("random", 2)])
def test_static_rolling_bounce_within_the_session_timeout_moves_nothing_and_bumps_no_epoch(order, concurrency):
    r = run("rolling-bounce", membership="static", members=6, topics=(("t", 12), ("u", 5)),
            restart_ms=10_000, session_timeout_ms=45_000, order=order, concurrency=concurrency)
    assert r.protocol == "consumer" and r.settled and r.errors == []
    assert (r.rebalances, r.partitions_moved) == (0, 0)
    assert r.group_epoch_start == r.group_epoch_end
    assert r.rebalance_times == [] and events(r, "group-epoch") == []
    assert [e["epoch"] for e in events(r, "leave")] == [-2] * 6      # a static member's temporary leave
    # The only unowned time is each member's own partitions while it is down.
    assert r.unowned_partition_seconds == 17 * 10.0
    assert r.longest_stop_ms == 10_000


def test_dynamic_rolling_bounce_never_takes_partitions_from_the_members_that_stay():
    params = dict(membership="dynamic", members=10, topics=(("t", 30),))
    consumer = run("rolling-bounce", **params)
    eager = run_scenario("rolling-bounce", SimParams(protocol="classic", assignor="range", **params))
    assert consumer.settled and consumer.errors == []
    assert [e["epoch"] for e in events(consumer, "leave")] == [-1] * 10
    assert consumer.rebalances == 2 * 10       # a leave and a join: one group-epoch bump each
    # Nobody but the restarting process ever stops consuming, and no running member is ever left
    # without partitions while another one takes over (revocation first, then assignment).
    assert consumer.longest_stop_ms == 10_000
    assert all(e["partitions"] > 0 for e in events(consumer, "assigned"))
    assert all(e["added"] == 0 or e["revoked"] == 0 for e in events(consumer, "assigned"))
    # Eager classic stops the whole group twice per restart.
    assert eager.longest_stop_ms > 10_000
    # (162 partition-s against 792: a handover waits for heartbeats every 5 s, the broker's default)
    assert consumer.unowned_partition_seconds * 4 < eager.unowned_partition_seconds


# ---- the client's rules ----------------------------------------------------------------------
def test_coalesced_heartbeats_give_the_run_every_heartbeat_gives():
    for scenario in SCENARIOS:
        for params in (SimParams(protocol="consumer", membership="dynamic", members=4),
                       SimParams(protocol="consumer", membership="static", restart_ms=50_000,
                                 members=5, order="random", seed=3, concurrency=2)):
            coalesced = run_scenario(scenario, params)
            wire = run_scenario(scenario, replace(params, wire_heartbeats=True))
            assert coalesced.as_dict() == wire.as_dict(), scenario
            assert coalesced.intervals == wire.intervals, scenario


def test_static_bounce_longer_than_the_session_costs_epoch_bumps():
    r = run("rolling-bounce", membership="static", restart_ms=50_000, session_timeout_ms=45_000)
    # The parked member is fenced at 45 s (a bump) and rejoins as a new one (another bump).
    assert r.rebalances == 6 and r.settled


def test_a_crashed_static_member_restarting_within_its_session_is_refused():
    r = run("crash", membership="static", restart_ms=10_000, session_timeout_ms=45_000)
    # No epoch -2 was sent: the instance id is still held, and the Java client and librdkafka
    # treat UNRELEASED_INSTANCE_ID as fatal. The group goes on without it once the session expires.
    assert r.errors == ["c0: ConsumerGroupHeartbeat failed with UNRELEASED_INSTANCE_ID (111)"]
    assert r.rebalances == 1 and r.members == 2 and r.time_to_stable_ms == 45_000


def test_a_duplicate_instance_is_refused_and_the_first_process_keeps_its_partitions():
    r = run("duplicate-instance", membership="static")
    assert r.errors == ["c0-twin: ConsumerGroupHeartbeat failed with UNRELEASED_INSTANCE_ID (111)"]
    assert (r.rebalances, r.partitions_moved, r.members) == (0, 0, 3)


def test_leader_bounce_bounces_one_member_a_consumer_group_has_no_leader():
    static = run("leader-bounce", membership="static")
    dynamic = run("leader-bounce", membership="dynamic")
    assert (static.rebalances, static.partitions_moved) == (0, 0)
    assert dynamic.rebalances == 2
    assert [e["member"] for e in events(static, "stop")] == ["c0"]


def test_a_removed_member_loses_its_partitions_and_rejoins_with_epoch_0():
    run_ = Run(SimParams(protocol="consumer", membership="static"))
    run_.warm_up(static=True)
    run_.ledger.begin(run_.engine.now)
    c1 = run_.consumers[1]
    run_.engine.handle(LeaveGroupRequest(version=5, group_id=GROUP, members=[
        LeaveGroupRequest.MemberIdentity(member_id="", group_instance_id="c1", reason="admin")]), "admin")
    assert run_.engine.run_until(run_.engine.now + 60_000, run_.settled)
    assert [e.get("error") for e in events_of(run_, "lost", "c1")] == ["UNKNOWN_MEMBER_ID"]
    assert len(events_of(run_, "joined", "c1")) == 1 and c1.state == "stable" and c1.owned


def events_of(run_, kind, member):
    return [e for e in run_.ledger.events if e["event"] == kind and e.get("member") == member]


def test_compare_variants():
    params = SimParams(protocol="consumer")
    assert [p.protocol for p in variants("rolling-bounce", params, "protocol")] == ["classic", "consumer"]
    assert [p.server_assignor for p in variants("rolling-bounce", params, "assignor")] == ["uniform", "range"]


# ---- the command -----------------------------------------------------------------------------
def test_json_adds_protocol_and_group_epochs():
    doc = json.loads(invoke("rolling-bounce", "--protocol", "consumer", "-o", "json").output)
    assert {k: doc[k] for k in ("scenario", "protocol", "assignor", "rebalances", "generation_start",
                                "generation_end", "group_epoch_start", "group_epoch_end",
                                "partitions_moved", "settled")} == {
        "scenario": "rolling-bounce", "protocol": "consumer", "assignor": "uniform", "rebalances": 0,
        "generation_start": None, "generation_end": None, "group_epoch_start": 4,
        "group_epoch_end": 4, "partitions_moved": 0, "settled": True}
    classic = json.loads(invoke("rolling-bounce", "-o", "json").output)
    assert (classic["protocol"], classic["group_epoch_start"], classic["group_epoch_end"]) == ("classic", None, None)
    assert (classic["generation_start"], classic["generation_end"]) == (1, 1)


def test_compare_protocol_puts_classic_and_consumer_side_by_side():
    args = ("rolling-bounce", "--membership", "dynamic", "--members", "6", "--topic", "orders:18",
            "--assignor", "cooperative-sticky", "--compare", "protocol")
    docs = json.loads(invoke(*args, "-o", "json").output)
    assert [(d["protocol"], d["assignor"]) for d in docs] == [("classic", "cooperative-sticky"),
                                                              ("consumer", "uniform")]
    lines = [" ".join(line.split()) for line in invoke(*args, "-o", "table").output.splitlines()]
    assert lines[0] == "rolling-bounce classic consumer"
    epochs = next(line for line in lines if line.startswith("generation / group epoch"))
    assert epochs.endswith(f"{docs[1]['group_epoch_start']} -> {docs[1]['group_epoch_end']}")
    assert f"rebalances {docs[0]['rebalances']} {docs[1]['rebalances']}" in lines


def test_a_consumer_table_names_its_protocol_and_epochs():
    lines = [" ".join(line.split())
             for line in invoke("scale-up", "--protocol", "consumer", "-o", "table").output.splitlines()]
    assert lines[1] == "protocol consumer"
    assert "group epoch 4 -> 5" in lines and "assignor uniform" in lines


def test_compare_protocol_plot(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "protocols.png"
    result = invoke("rolling-bounce", "--membership", "dynamic", "--compare", "protocol", "-o", "json",
                    "--plot", str(path))
    assert result.exit_code == 0, result.output
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
