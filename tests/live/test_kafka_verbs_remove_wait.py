"""`kgroup remove-members` and `kgroup wait` against the real Kafka 4.4 broker.

remove-members: static members by instance id in a classic and a consumer group (the Java client
4.4 and librdkafka), the dynamic ones with --all, each --dry-run's prediction checked against the
assignment the broker then gave (read with kafka-consumer-groups), --wait.
wait: every state it supports, --caught-up, a timeout.
"""

from __future__ import annotations

import re

import pytest

from helpers.kafka_groups import (JavaMember, RawJoin, RdkafkaMember, close_all, create_topic, group_config,
                                  java_classpath, kgroup, tool_rows, wait_for)

TOPIC = "vr-t"
PARTITIONS = 6
ALL = {(TOPIC, p) for p in range(PARTITIONS)}


def kg(kafka, *args):
    return kgroup(*args, "--bootstrap-server", kafka.bootstrap)


def broker_owners(kafka, group) -> dict:
    """(topic, partition) -> instance id (member id for a dynamic member), as kafka-consumer-groups
    --describe --members --verbose shows the group."""
    text = kafka.tool("kafka-consumer-groups", "--bootstrap-server", kafka.bootstrap, "--describe", "--members",
                      "--verbose", "--group", group).stdout
    owners = {}
    for row in tool_rows(text):
        owner = row.get("GROUP-INSTANCE-ID") or row["CONSUMER-ID"]
        column = row.get("CURRENT-ASSIGNMENT", row.get("ASSIGNMENT", ""))
        for topic, parts in re.findall(r"([\w.-]+):([\d,]+)", column):     # "vr-t:0,1"
            for p in parts.split(","):
                if p:
                    owners[(topic, int(p))] = owner
    return owners


@pytest.fixture(scope="module")
def fleets(kafka, tmp_path_factory):
    """vr-classic and vr-consumer: static a (Java, to be killed), b and c (librdkafka), and a dynamic
    Java member; 30 s sessions so that a stopped member stays until kgroup removes it."""
    cp = java_classpath(tmp_path_factory.getbasetemp())
    create_topic(kafka.bootstrap, TOPIC, PARTITIONS)
    group_config(kafka, "vr-consumer", consumer_session_timeout_ms=30000)
    fleets = {}
    for group, protocol in (("vr-classic", "classic"), ("vr-consumer", "consumer")):
        fleets[group] = {
            "a": JavaMember(cp, kafka.bootstrap, group, [TOPIC], "a", protocol=protocol, session_timeout_ms=30000),
            "b": RdkafkaMember(kafka.bootstrap, group, [TOPIC], "b", protocol=protocol, session_timeout_ms=30000),
            "c": RdkafkaMember(kafka.bootstrap, group, [TOPIC], "c", protocol=protocol, session_timeout_ms=30000),
            "d": JavaMember(cp, kafka.bootstrap, group, [TOPIC], None, protocol=protocol, session_timeout_ms=30000),
        }
    try:
        for group, members in fleets.items():
            wait_for(lambda: all(len(m.assignment) in (1, 2) for m in members.values())
                     and set().union(*(m.assignment for m in members.values())) == ALL, 90, f"{group} assigned")
            wait_for(lambda: kg(kafka, "wait", group, "--caught-up", "--timeout", "5", "-o", "json").exit_code == 0,
                     60, f"{group} settled")
        yield fleets
    finally:
        close_all([m for members in fleets.values() for m in members.values()])


@pytest.mark.parametrize("group", ["vr-classic", "vr-consumer"])
def test_remove_a_static_member_dry_run_then_wait(kafka, fleets, group):
    members = fleets[group]
    before = broker_owners(kafka, group)
    plan = kg(kafka, "remove-members", group, "--instance-id", "a,ghost", "--dry-run", "-o", "json")
    assert plan.exit_code == 3, plan.stderr                      # ghost is unknown
    assert plan.stderr.splitlines() == [                         # a still runs, and ghost is unknown
        f"kgroup remove-members: warning: a is a member of group '{group}': a consumer whose process still runs "
        "rejoins at once (stop it first; --wait reports a rejoin)", "kgroup remove-members: ghost: UNKNOWN_MEMBER_ID"]
    a, ghost = plan.json["results"]
    assert (a["group_instance_id"], a["status"], a["error"]) == ("a", "static", None)
    assert {(p["topic"], p["partition"]) for p in a["partitions"]} == members["a"].assignment == \
        {tp for tp, owner in before.items() if owner == "a"}
    assert (ghost["status"], ghost["error"], ghost["partitions"]) == ("unknown", "UNKNOWN_MEMBER_ID", [])
    predicted = dict(before)
    for move in a["moves"]:
        predicted[(move["topic"], move["partition"])] = move["to"]
    for move in plan.json["other_moves"]:
        predicted[(move["topic"], move["partition"])] = move["to"]
    assert broker_owners(kafka, group) == before                   # a dry run changes nothing

    members["a"].kill()                                            # no leave: the member stays for 30 s
    removed = kg(kafka, "remove-members", group, "--instance-id", "a", "--reason", "decommissioned",
                 "--wait", "-o", "json")
    assert removed.exit_code == 0, removed.stderr
    assert (removed.json["removed"], removed.json["failed"]) == (1, 0)
    assert removed.json["results"] == [{"group_instance_id": "a", "member_id": None, "error": None,
                                        "rejoined": False}]
    wait = removed.json["wait"]
    assert wait["error"] is None and wait["generation_advanced"] is True
    assert wait["after"]["state"] == "Stable" and "a" not in wait["after"]["members"]
    if group == "vr-consumer":
        assert wait["after"]["group_epoch"] > wait["before"]["group_epoch"]
    # what the broker then did is what the dry run predicted, partition by partition
    after = broker_owners(kafka, group)
    dynamic_id = next(owner for owner in after.values() if owner not in ("b", "c"))
    expected = {tp: (dynamic_id if owner not in ("b", "c") else owner) for tp, owner in predicted.items()}
    assert after == expected
    assert {(m["topic"], m["partition"], m["from"], m["to"]) for m in wait["partitions_moved"]} == \
        {(t, p, before[(t, p)], after[(t, p)]) for (t, p) in ALL if before[(t, p)] != after[(t, p)]}
    wait_for(lambda: members["b"].assignment | members["c"].assignment | members["d"].assignment == ALL, 30,
             "the clients own what the broker assigned")

    again = kg(kafka, "remove-members", group, "--instance-id", "a", "-o", "json")
    assert again.exit_code == 1 and again.json["results"][0]["error"] == "UNKNOWN_MEMBER_ID"
    assert again.stderr.splitlines() == ["kgroup remove-members: a: UNKNOWN_MEMBER_ID"]


@pytest.mark.parametrize("group", ["vr-classic", "vr-consumer"])
def test_remove_everyone_with_all_dynamic_by_member_id(kafka, fleets, group):
    members = fleets[group]
    members["d"].kill()                                            # the dynamic member, gone without a leave
    for name in ("b", "c"):
        members[name].close()      # classic static: no leave; consumer static: epoch -2, still a member
    current = kg(kafka, "describe", group, "-o", "json").json[0]["members"]
    assert {m["group_instance_id"] for m in current} == {"b", "c", None}
    dynamic = next(m["member_id"] for m in current if m["group_instance_id"] is None)

    plan = kg(kafka, "remove-members", group, "--all", "--dry-run", "-o", "json")
    assert plan.exit_code == 0, plan.stderr
    assert {(r["group_instance_id"], r["member_id"], r["status"]) for r in plan.json["results"]} == \
        {("b", None, "static"), ("c", None, "static"), (None, dynamic, "dynamic")} or \
        {(r["group_instance_id"] or r["member_id"], r["status"]) for r in plan.json["results"]} == \
        {("b", "static"), ("c", "static"), (dynamic, "dynamic")}
    assert all(m["to"] is None for r in plan.json["results"] for m in r["moves"])   # nobody is left

    removed = kg(kafka, "remove-members", group, "--all", "--wait", "-o", "json")
    assert removed.exit_code == 0, removed.stderr
    assert removed.json["removed"] == 3 and removed.json["wait"]["after"] == {
        "state": "Empty", "members": [], **({"group_epoch": removed.json["wait"]["after"]["group_epoch"]}
                                           if group == "vr-consumer" else {})}
    assert {(m["topic"], m["partition"]) for m in removed.json["wait"]["partitions_moved"]} == ALL
    # the broker: no member left
    text = kafka.tool("kafka-consumer-groups", "--bootstrap-server", kafka.bootstrap, "--describe", "--state",
                      "--group", group).stdout
    assert tool_rows(text)[0]["STATE"] == "Empty" and tool_rows(text)[0]["#MEMBERS"] == "0"

    nobody = kg(kafka, "remove-members", group, "--all", "-o", "json")
    assert nobody.exit_code == 1 and len(nobody.stderr.splitlines()) == 1, nobody.stderr


def waited(kafka, group, *args):
    return kg(kafka, "wait", group, "--interval", "0.1", "-o", "json", *args)


def test_wait_for_every_classic_state(kafka):
    completing = RawJoin(kafka.bootstrap, "vw-completing", "x-0", session_ms=4000)
    first = RawJoin(kafka.bootstrap, "vw-preparing", "y-0", session_ms=30000)
    second = RawJoin(kafka.bootstrap, "vw-preparing", "y-1", session_ms=30000, wait=False)
    try:
        got = waited(kafka, "vw-completing", "--state", "CompletingRebalance", "--timeout", "3")
        assert got.exit_code == 0, got.stderr
        assert got.json == {"group": "vw-completing", "state": "CompletingRebalance", "members": 1, "static": 1,
                            "dynamic": 0}
        got = waited(kafka, "vw-preparing", "--state", "preparingrebalance", "--timeout", "10")
        assert got.exit_code == 0, got.stderr
        assert (got.json["state"], got.json["members"]) == ("PreparingRebalance", 2)
        # x-0 never sends SyncGroup nor a heartbeat: its session expires and the group is Empty
        got = waited(kafka, "vw-completing", "--state", "Empty", "--timeout", "30")
        assert got.exit_code == 0, got.stderr
        assert (got.json["state"], got.json["members"]) == ("Empty", 0)
        late = waited(kafka, "vw-preparing", "--state", "Stable", "--timeout", "1")
        assert late.exit_code == 1 and len(late.stderr.splitlines()) == 1
        assert "timed out after 1s waiting for state Stable (last state: PreparingRebalance, 2 member(s))" \
            in late.stderr
    finally:
        for raw in (completing, first, second):
            raw.close()
    dead = waited(kafka, "vw-nope", "--state", "Dead", "--timeout", "5")
    assert dead.exit_code == 0 and dead.json["state"] == "Dead", dead.stderr
    never = waited(kafka, "vw-nope", "--timeout", "1")
    assert never.exit_code == 1 and "last state: does not exist" in never.stderr
    assert len(never.stderr.splitlines()) == 1


def test_wait_for_consumer_group_states_and_caught_up(kafka):
    # assignments batched every 5 s (Assigning in between), and a 30 s session for a static member
    # that left (Reconciling meanwhile)
    group = "vw-consumer"
    group_config(kafka, group, consumer_assignment_interval_ms=5000, consumer_session_timeout_ms=30000)
    first = RdkafkaMember(kafka.bootstrap, group, [TOPIC], "w-0")
    second = None
    try:
        caught = waited(kafka, group, "--caught-up", "--timeout", "30")
        assert caught.exit_code == 0, caught.stderr
        assert (caught.json["state"], caught.json["type"], caught.json["caught_up"], caught.json["members"]) == \
            ("Stable", "consumer", True, 1)
        epoch = caught.json["group_epoch"]
        second = RdkafkaMember(kafka.bootstrap, group, [TOPIC], "w-1")
        assigning = waited(kafka, group, "--state", "Assigning", "--timeout", "5")
        assert assigning.exit_code == 0, assigning.stderr
        assert assigning.json["group_epoch"] == epoch + 1 and assigning.json["caught_up"] is False
        caught = waited(kafka, group, "--caught-up", "--timeout", "30")
        assert caught.exit_code == 0 and caught.json["members"] == 2, caught.stderr
        stable = waited(kafka, group, "--state", "Stable", "--timeout", "5")
        assert stable.exit_code == 0 and stable.json["static"] == 2, stable.stderr
        truth = tool_rows(kafka.tool("kafka-consumer-groups", "--bootstrap-server", kafka.bootstrap, "--describe",
                                     "--state", "--group", group).stdout)[0]
        assert (truth["STATE"], truth["#MEMBERS"]) == ("Stable", "2")

        second.close()                                 # static: leaves with epoch -2, stays a member
        reconciling = waited(kafka, group, "--state", "Reconciling", "--timeout", "10")
        assert reconciling.exit_code == 0 and reconciling.json["members"] == 2, reconciling.stderr
        stuck = waited(kafka, group, "--caught-up", "--timeout", "1")
        assert stuck.exit_code == 1 and len(stuck.stderr.splitlines()) == 1
        assert "w-1 left (static, member epoch -2)" in stuck.stderr
        usage = waited(kafka, group, "--caught-up", "--state", "Empty")
        assert usage.exit_code == 2 and len(usage.stderr.splitlines()) == 1
    finally:
        close_all([m for m in (first, second) if m])
