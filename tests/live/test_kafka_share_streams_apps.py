"""The real applications of the newer group types against the real Kafka 4.4 broker: three instances
of a Kafka Streams 4.4 application (group.protocol=streams; two static, one dynamic) on one streams
group, and three KafkaShareConsumer 4.4 members on one share group — checked with Kafka's own
kafka-streams-groups and kafka-share-groups, as the ground truth kgroup's share- and streams-group
verbs are later compared with.
"""

from __future__ import annotations

import time

import pytest

from helpers.kafka_apps import (ShareMember, StreamsInstance, close_all, share_from_earliest,
                                streams_group_members, streams_tasks, tool_table)
from helpers.kafka_groups import create_topic, java_classpath, kgroup, produce, wait_for

APP = "ss-app"
STREAMS_IN, STREAMS_OUT = "ss-in", "ss-out"
SHARE_GROUP, SHARE_TOPIC = "ss-share", "ss-share-t"
PARTITIONS = 3
RECORDS = 10        # per partition


@pytest.fixture(scope="module")
def apps(kafka, tmp_path_factory):
    root = tmp_path_factory.mktemp("share-streams")
    cp = java_classpath(tmp_path_factory.getbasetemp())
    create_topic(kafka.bootstrap, STREAMS_IN, PARTITIONS)
    create_topic(kafka.bootstrap, STREAMS_OUT, 1)
    create_topic(kafka.bootstrap, SHARE_TOPIC, PARTITIONS)
    share_from_earliest(kafka, SHARE_GROUP)
    streams = [StreamsInstance(cp, kafka.bootstrap, APP, STREAMS_IN, STREAMS_OUT, root / f"state-{name}",
                               instance_id=name if name != "dynamic" else None, log=root / f"{name}.log")
               for name in ("s-0", "s-1", "dynamic")]
    share = [ShareMember(cp, kafka.bootstrap, SHARE_GROUP, [SHARE_TOPIC], f"share-{i}", log=root / f"share-{i}.log")
             for i in range(3)]
    try:
        for app in streams + share:
            app.wait_ready(60)
        produce(kafka.bootstrap, STREAMS_IN, {p: RECORDS for p in range(PARTITIONS)})
        produce(kafka.bootstrap, SHARE_TOPIC, {p: RECORDS for p in range(PARTITIONS)})
        yield cp, streams, share
    finally:
        close_all(streams + share)


def streams_groups(kafka, *args):
    return kafka.tool("kafka-streams-groups", "--bootstrap-server", kafka.bootstrap, "--group", APP,
                      "--describe", *args).stdout


def share_groups(kafka, *args):
    return kafka.tool("kafka-share-groups", "--bootstrap-server", kafka.bootstrap, "--group", SHARE_GROUP,
                      "--describe", *args).stdout


def test_streams_group_is_stable_with_active_and_standby_tasks(kafka, apps):
    cp, streams, _ = apps
    # every input record counted once: one count update each (the store's cache is off)
    wait_for(lambda: sum(s.counted for s in streams) >= PARTITIONS * RECORDS, 60, "every record counted")

    def reconciled():
        members = tool_table(streams_groups(kafka, "--members", "--verbose"))
        if len(members) != 3:
            return None
        tasks = [streams_tasks(m["ASSIGNMENTS"]) for m in members]
        if any(t.get("ACTIVE") != t.get("TARGET-ACTIVE") or t.get("STANDBY") != t.get("TARGET-STANDBY")
               for t in tasks):
            return None
        return members, tasks
    members, tasks = wait_for(reconciled, 60, "three streams members at their target tasks", interval=0)

    assert {m["MEMBER-PROTOCOL"] for m in members} == {"streams"}
    assert {m["CLIENT-ID"].split("-StreamThread")[0] for m in members} == {s.client_id for s in streams}
    # two subtopologies (before and after the repartition) of three tasks each, each task active once
    active = sorted((sub, p) for t in tasks for sub, ps in t.get("ACTIVE", {}).items() for p in ps)
    assert active == sorted((sub, p) for sub in ("0", "1") for p in range(PARTITIONS))
    # standbys only for the stateful subtopology (the count), never beside the same task's active one
    standby = [(sub, p) for t in tasks for sub, ps in t.get("STANDBY", {}).items() for p in ps]
    assert sorted(standby) == [("1", p) for p in range(PARTITIONS)]
    for t in tasks:
        for sub, ps in t.get("STANDBY", {}).items():
            assert not set(ps) & set(t.get("ACTIVE", {}).get(sub, []))

    state = tool_table(streams_groups(kafka, "--state"))
    assert [(row["STATE"], row["#MEMBERS"]) for row in state] == [("Stable", "3")]

    # static membership (new for streams groups in 4.4): Kafka Streams suffixes the id per thread
    state, described = streams_group_members(cp, kafka.bootstrap, APP)
    assert state == "Stable"
    assert sorted(m["instance"] or "-" for m in described) == ["-", "s-0-1", "s-1-1"]
    assert sorted(m["instance"] or "-" for m in described) == sorted(s.member_instance_id or "-" for s in streams)


def test_share_group_is_stable_with_three_members_acknowledging(kafka, apps):
    _, _, share = apps
    wait_for(lambda: sum(m.acked for m in share) >= PARTITIONS * RECORDS, 60, "every record acknowledged")
    assert sum(m.acked for m in share) == PARTITIONS * RECORDS      # accepted once, never redelivered
    assert not [e for m in share for e in m.errors]

    members = tool_table(share_groups(kafka, "--members"))
    assert sorted(m["CLIENT-ID"] for m in members) == ["share-0", "share-1", "share-2"]
    state = tool_table(share_groups(kafka, "--state"))
    assert [(row["STATE"], row["#MEMBERS"]) for row in state] == [("Stable", "3")]


def kg(kafka, *args):
    return kgroup(*args, "--bootstrap-server", kafka.bootstrap)


def agreeing(differences, tries=6) -> list:
    """``differences()`` (kgroup's read beside Kafka's tool's) until it finds none: a heartbeat or a
    commit between the two reads can make them differ once."""
    problems = differences()
    for _ in range(tries):
        if not problems:
            break
        time.sleep(1)
        problems = differences()
    return problems


def coordinator_text(view) -> str:
    """As Kafka's tools print it, without spaces (their "COORDINATOR (ID)" header is two words)."""
    c = view["coordinator"]
    return f"{c['host']}:{c['port']}({c['id']})"


def test_describe_equals_kafka_streams_groups_state_members_and_offsets(kafka, apps):
    """Every field kafka-streams-groups --describe --state/--members/--offsets --verbose shows, as kgroup
    shows it: the group (coordinator, assignor, state, epochs, member count), each member (protocol,
    epoch, process, client id, active/standby/warm-up tasks and their targets) and each input
    partition (committed offset, leader epoch, log end, lag)."""
    def differences():
        view = kg(kafka, "describe", APP, "--offsets", "-o", "json").json[0]
        problems = []
        (state,) = tool_table(streams_groups(kafka, "--state", "--verbose"))
        theirs = [(state["COORDINATOR"] + state["(ID)"]).replace(" ", ""), state["ASSIGNOR"], state["STATE"],
                  state["GROUP-EPOCH"], state["TARGET-ASSIGNMENT-EPOCH"], state["#MEMBERS"]]
        ours = [coordinator_text(view), view["assignor"], view["state"], str(view["group_epoch"]),
                str(view["assignment_epoch"]), str(len(view["members"]))]
        if theirs != ours:
            problems.append(("state", theirs, ours))
        members = {m["member_id"]: m for m in view["members"]}
        member_rows = tool_table(streams_groups(kafka, "--members", "--verbose"))
        if sorted(r["MEMBER"] for r in member_rows) != sorted(members):
            problems.append(("members", sorted(r["MEMBER"] for r in member_rows), sorted(members)))
        for row in member_rows:
            m = members.get(row["MEMBER"])
            if m is None:
                problems.append(("member missing", row["MEMBER"]))
                continue
            tasks = streams_tasks(row["ASSIGNMENTS"])
            theirs = [row["TARGET-ASSIGNMENT-EPOCH"], row["TOPOLOGY-EPOCH"], row["MEMBER-PROTOCOL"], row["MEMBER-EPOCH"],
                      row["PROCESS"], row["CLIENT-ID"]] + [tasks.get(k, {}) for k in (
                          "ACTIVE", "STANDBY", "WARMUP", "TARGET-ACTIVE", "TARGET-STANDBY", "TARGET-WARMUP")]
            ours = [str(view["assignment_epoch"]), str(view["topology_epoch"]), "classic" if m["is_classic"] else "streams",
                    str(m["member_epoch"]), m["process_id"], m["client_id"]] + [m[f"{k}_tasks"] for k in (
                        "active", "standby", "warmup", "target_active", "target_standby", "target_warmup")]
            if theirs != ours:
                problems.append((row["MEMBER"], theirs, ours))
        rows = {(r["topic"], r["partition"]): r for r in view["offsets"]}
        offset_rows = tool_table(streams_groups(kafka, "--offsets", "--verbose"))
        if not offset_rows:
            problems.append("streams-groups: no offsets shown")
        for row in offset_rows:
            r = rows.get((row["TOPIC"], int(row["PARTITION"])))
            ours = r and ["-" if r["committed"] is None else str(r["committed"]),
                          "-" if r["leader_epoch"] is None else str(r["leader_epoch"]), str(r["log_end"]), str(r["lag"])]
            theirs = [row["CURRENT-OFFSET"], row["LEADER-EPOCH"], row["LOG-END-OFFSET"], row["OFFSET-LAG"]]
            if theirs != ours:
                problems.append((row["TOPIC"], row["PARTITION"], theirs, ours))
        return problems

    assert agreeing(differences) == []
    view = kg(kafka, "describe", APP, "-o", "json").json[0]
    assert sorted(m["group_instance_id"] or "-" for m in view["members"]) == ["-", "s-0-1", "s-1-1"]
    assert {m["static"] for m in view["members"]} == {True, False}


def test_describe_equals_kafka_share_groups_state_members_and_offsets(kafka, apps):
    """Every field kafka-share-groups --describe --state/--members/--offsets --verbose shows, as kgroup
    shows it: the group (coordinator, state, epochs, member count), each member (host, client id,
    partition count, epoch, assignment) and each share partition (leader epoch, start offset, lag)."""
    def differences():
        view = kg(kafka, "describe", SHARE_GROUP, "--offsets", "-o", "json").json[0]
        problems = []
        (state,) = tool_table(share_groups(kafka, "--state", "--verbose"))
        theirs = [(state["COORDINATOR"] + state["(ID)"]).replace(" ", ""), state["STATE"], state["GROUP-EPOCH"],
                  state["ASSIGNMENT-EPOCH"], state["#MEMBERS"]]
        ours = [coordinator_text(view), view["state"], str(view["group_epoch"]), str(view["assignment_epoch"]),
                str(len(view["members"]))]
        if theirs != ours:
            problems.append(("state", theirs, ours))
        members = {m["member_id"]: m for m in view["members"]}
        member_rows = tool_table(share_groups(kafka, "--members", "--verbose"))
        if sorted(r["CONSUMER-ID"] for r in member_rows) != sorted(members):
            problems.append(("members", sorted(r["CONSUMER-ID"] for r in member_rows), sorted(members)))
        for row in member_rows:
            m = members.get(row["CONSUMER-ID"])
            if m is None:
                problems.append(("member missing", row["CONSUMER-ID"]))
                continue
            theirs = [row["HOST"], row["CLIENT-ID"], row["#PARTITIONS"], row["MEMBER-EPOCH"], row["ASSIGNMENT"]]
            ours = [m["client_host"], m["client_id"], str(sum(len(a["partitions"]) for a in m["assignment"])),
                    str(m["member_epoch"]), ";".join(f"{a['topic']}:{','.join(map(str, a['partitions']))}"
                                                     for a in sorted(m["assignment"], key=lambda a: a["topic"]))]
            if theirs != ours:
                problems.append((row["CONSUMER-ID"], theirs, ours))
        rows = {(r["topic"], r["partition"]): r for r in view["offsets"]}
        offset_rows = tool_table(share_groups(kafka, "--offsets", "--verbose"))
        if not offset_rows:
            problems.append("share-groups: no offsets shown")
        for row in offset_rows:
            r = rows.get((row["TOPIC"], int(row["PARTITION"])))
            ours = r and ["-" if r["leader_epoch"] is None else str(r["leader_epoch"]), str(r["start_offset"]),
                          "-" if r["lag"] is None else str(r["lag"])]
            theirs = [row["LEADER-EPOCH"], row["START-OFFSET"], row["LAG"]]
            if theirs != ours:
                problems.append((row["TOPIC"], row["PARTITION"], theirs, ours))
        return problems

    assert agreeing(differences) == []


def test_sigterm_closes_the_applications_cleanly(kafka, apps):
    """Last (it stops members): SIGTERM closes from the shutdown hook with exit code 0; a static
    Streams member's default close keeps it in the group (until its session expires), a share
    member leaves at once."""
    cp, streams, share = apps
    static, member = streams[1], share[2]
    close_all([static, member], terminate=True)
    assert (static.process.returncode, static.lines[-1]) == (0, "closed")
    assert (member.process.returncode, member.lines[-1]) == (0, "closed")

    _, described = streams_group_members(cp, kafka.bootstrap, APP)
    assert static.member_instance_id in {m["instance"] for m in described}
    wait_for(lambda: len(tool_table(share_groups(kafka, "--members"))) == 2, 30, "the share member gone",
             interval=0)
