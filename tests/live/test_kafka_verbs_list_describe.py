"""`kgroup list` and `kgroup describe` against the real Kafka 4.4 broker, with real members:
kafka-python (classic), confluent-kafka (classic and consumer protocol) and the Java client 4.4
(classic and consumer), static and dynamic, and groups held in every state a broker lists
(Stable, Empty, PreparingRebalance, CompletingRebalance, Assigning, Reconciling). What the broker
says is read with Kafka's own kafka-consumer-groups.

The module's groups are shared by its tests, which run in file order: the last one stops the
members of vd-classic and vd-consumer to make lag.
"""

from __future__ import annotations

import time

import pytest

from helpers.kafka_groups import (JavaMember, PythonMember, RawJoin, RdkafkaMember, close_all, committed,
                                  create_topic, group_config, java_classpath, kgroup, produce, tool_rows,
                                  wait_for)

TOPIC = "vd-t"
ENDS = {0: 5, 1: 6, 2: 7, 3: 8}
ALL = {(TOPIC, p) for p in ENDS}


def kg(kafka, *args):
    return kgroup(*args, "--bootstrap-server", kafka.bootstrap)


def consumer_groups(kafka, *args):
    return kafka.tool("kafka-consumer-groups", "--bootstrap-server", kafka.bootstrap, *args).stdout


def owned_by_all(members):
    return set().union(*(m.assignment for m in members))


@pytest.fixture(scope="module")
def groups(kafka, tmp_path_factory):
    cp = java_classpath(tmp_path_factory.getbasetemp())
    create_topic(kafka.bootstrap, TOPIC, len(ENDS))
    produce(kafka.bootstrap, TOPIC, ENDS)
    # a static member that stopped stays 60 s (Kafka's maximum): the module's tests read the states
    # this fixture leaves for as long as a loaded machine takes to reach them
    for g in ("vd-consumer", "vd-reconciling"):
        group_config(kafka, g, consumer_session_timeout_ms=60000)
    kafka.tool("kafka-consumer-groups", "--bootstrap-server", kafka.bootstrap, "--reset-offsets", "--group",
               "vd-empty-classic", "--topic", TOPIC, "--to-offset", "2", "--execute")
    m = {
        "vd-classic": [JavaMember(cp, kafka.bootstrap, "vd-classic", [TOPIC], "jc-0", protocol="classic",
                                  session_timeout_ms=30000),
                       JavaMember(cp, kafka.bootstrap, "vd-classic", [TOPIC], "jc-1", protocol="classic",
                                  session_timeout_ms=30000),
                       JavaMember(cp, kafka.bootstrap, "vd-classic", [TOPIC], None, protocol="classic",
                                  session_timeout_ms=30000)],
        "vd-consumer": [JavaMember(cp, kafka.bootstrap, "vd-consumer", [TOPIC], "jk-0"),
                        RdkafkaMember(kafka.bootstrap, "vd-consumer", [TOPIC], "rk-0"),
                        JavaMember(cp, kafka.bootstrap, "vd-consumer", [TOPIC], None)],
        # kafka-python heartbeats from this process's threads: a long session rides out a busy GIL
        "vd-py": [PythonMember(kafka.bootstrap, "vd-py", [TOPIC], "p-0", session_timeout_ms=30000),
                  PythonMember(kafka.bootstrap, "vd-py", [TOPIC], None, session_timeout_ms=30000)],
        "vd-rdk-classic": [RdkafkaMember(kafka.bootstrap, "vd-rdk-classic", [TOPIC], "rc-0", protocol="classic")],
        "vd-reconciling": [RdkafkaMember(kafka.bootstrap, "vd-reconciling", [TOPIC], "q-0"),
                           RdkafkaMember(kafka.bootstrap, "vd-reconciling", [TOPIC], "q-1")],
        "vd-empty-consumer": [RdkafkaMember(kafka.bootstrap, "vd-empty-consumer", [TOPIC], None)],
    }
    everyone = [x for ms in m.values() for x in ms]
    try:
        for name, ms in m.items():
            wait_for(lambda: owned_by_all(ms) == ALL and all(x.assignment for x in ms), 90, f"{name} assigned")
        # every partition consumed and committed, so that lag starts at 0
        for name in ("vd-classic", "vd-consumer", "vd-empty-consumer"):
            wait_for(lambda: committed(kafka.bootstrap, name) == {(TOPIC, p): e for p, e in ENDS.items()},
                     60, f"{name} committed")
        m["vd-empty-consumer"][0].close()           # a dynamic consumer leaves: Empty consumer group
        m["vd-reconciling"][0].close()              # a static one leaves with epoch -2: Reconciling
        # two classic groups mid-rebalance, for 120 s
        raws = [RawJoin(kafka.bootstrap, "vd-completing", "x-0", session_ms=120000),
                RawJoin(kafka.bootstrap, "vd-preparing", "y-0", session_ms=120000)]
        raws.append(RawJoin(kafka.bootstrap, "vd-preparing", "y-1", session_ms=120000, wait=False))
        yield m
    finally:
        close_all(everyone)
        for raw in locals().get("raws", ()):
            raw.close()


EXPECTED = {"vd-classic": ("Stable", "classic"), "vd-py": ("Stable", "classic"),
            "vd-rdk-classic": ("Stable", "classic"), "vd-consumer": ("Stable", "consumer"),
            "vd-empty-classic": ("Empty", "classic"), "vd-empty-consumer": ("Empty", "consumer"),
            "vd-reconciling": ("Reconciling", "consumer"), "vd-preparing": ("PreparingRebalance", "classic"),
            "vd-completing": ("CompletingRebalance", "classic"), "vd-assigning": ("Assigning", "consumer")}


def mine(rows):
    return {r["group"]: (r["state"], r["type"]) for r in rows if r["group"].startswith("vd-")}


def test_list_every_state_and_type_filter(kafka, groups):
    # a consumer group whose new target waits for the next assignment run (Kafka 4.4 batches them:
    # consumer.assignment.interval.ms): Assigning meanwhile
    group_config(kafka, "vd-assigning", consumer_assignment_interval_ms=15000)
    first = RdkafkaMember(kafka.bootstrap, "vd-assigning", [TOPIC], "a-0")
    second = None
    try:
        wait_for(lambda: first.assignment == ALL, 60, "a-0 assigned")
        second = RdkafkaMember(kafka.bootstrap, "vd-assigning", [TOPIC], "a-1")
        wait_for(lambda: mine(kg(kafka, "list", "-o", "json").json).get("vd-assigning", ("",))[0] == "Assigning",
                 10, "vd-assigning Assigning")
        listed = kg(kafka, "list", "-o", "json")
        assert listed.exit_code == 0 and listed.stderr == ""
        assert mine(listed.json) == EXPECTED
        assert {r["coordinator"]["id"] for r in listed.json} == {1}

        # the broker's own view: kafka-consumer-groups --list --state, kafka-groups --list (types)
        states = {r["GROUP"]: r["STATE"] for r in tool_rows(consumer_groups(kafka, "--list", "--state"))}
        assert {g: states[g] for g in EXPECTED} == {g: s for g, (s, _) in EXPECTED.items()}
        types = {line.split()[0]: line.split()[1:] for line in kafka.tool(
            "kafka-groups", "--bootstrap-server", kafka.bootstrap, "--list").stdout.splitlines()[1:]}
        assert {g: types[g][0].lower() for g in EXPECTED} == {g: t for g, (_, t) in EXPECTED.items()}
        # the protocol type: "consumer", or none for a group that only has offsets committed by an admin
        assert {r["group"]: r["protocol_type"] for r in listed.json if r["group"] in EXPECTED} == \
            {g: "".join(types[g][1:]) for g in EXPECTED}

        for state in ("Stable", "Empty", "PreparingRebalance", "CompletingRebalance", "Assigning",
                      "Reconciling", "Dead"):
            got = kg(kafka, "list", "--state", state.lower(), "-o", "json")      # case-insensitive
            assert got.exit_code == 0, got.stderr
            assert set(mine(got.json)) == {g for g, (s, _) in EXPECTED.items() if s == state}, state
            assert all(r["state"] == state for r in got.json)
        for group_type in ("classic", "consumer", "share", "streams"):
            got = kg(kafka, "list", "--type", group_type, "-o", "json")
            assert got.exit_code == 0, got.stderr
            assert set(mine(got.json)) == {g for g, (_, t) in EXPECTED.items() if t == group_type}, group_type
        both = kg(kafka, "list", "--state", "Stable", "--state", "Empty", "--type", "consumer", "-o", "json")
        assert set(mine(both.json)) == {"vd-consumer", "vd-empty-consumer"}
    finally:
        close_all([m for m in (first, second) if m])

    bad = kg(kafka, "list", "--state", "Rebalancing")
    assert bad.exit_code == 2 and len(bad.stderr.splitlines()) == 1 and "--state" in bad.stderr
    connect = kg(kafka, "list", "--type", "connect", "-o", "json")    # kgroup serve's type: none on Kafka
    assert connect.exit_code == 0 and mine(connect.json) == {}
    bad = kg(kafka, "list", "--type", "queue")
    assert bad.exit_code == 2 and len(bad.stderr.splitlines()) == 1 and "--type" in bad.stderr


def by_instance(view):
    return {m["group_instance_id"]: m for m in view["members"]}


def tool_members(kafka, group):
    rows = tool_rows(consumer_groups(kafka, "--describe", "--members", "--verbose", "--group", group))
    return {r["CONSUMER-ID"]: r for r in rows}


def _beside_the_tool(kafka, name, view) -> list:
    """How kgroup's view of a classic group's members differs from kafka-consumer-groups --members
    --verbose (which leaves out GROUP-INSTANCE-ID when no member has one)."""
    truth = tool_members(kafka, name)
    if set(truth) != {m["member_id"] for m in view["members"]}:
        return [("member ids", sorted(truth), sorted(m["member_id"] for m in view["members"]))]
    problems = []
    for m in view["members"]:
        row = truth[m["member_id"]]
        theirs = (row.get("GROUP-INSTANCE-ID") or "-", row["CLIENT-ID"], int(row["#PARTITIONS"]))
        ours = (m["group_instance_id"] or "-", m["client_id"], sum(len(a["partitions"]) for a in m["assignment"]))
        if theirs != ours:
            problems.append((m["member_id"], theirs, ours))
    return problems


def test_describe_classic_groups_of_three_clients(kafka, groups):
    got = kg(kafka, "describe", "vd-classic", "vd-py", "vd-rdk-classic", "-o", "json")
    assert got.exit_code == 0, got.stderr
    views = {v["group"]: v for v in got.json}
    for name, view in views.items():
        assert (view["state"], view["type"], view["protocol_type"], view["error"]) == \
            ("Stable", "classic", "consumer", None), name
        assert view["group_epoch"] is view["assignment_epoch"] is view["assignor"] is None
        assert view["coordinator"]["id"] == 1
        owned = [(row["topic"], p) for m in view["members"] for row in m["assignment"] for p in row["partitions"]]
        assert sorted(owned) == sorted(ALL), name             # every partition, once
        for m in view["members"]:
            assert m["static"] == (m["group_instance_id"] is not None)
            assert m["member_epoch"] is None and m["target_assignment"] is None and m["member_type"] == "classic"
            assert m["subscribed_topics"] == [TOPIC] and m["client_host"] == "/127.0.0.1"
        # the broker's view of the same members, read a moment later: asked again (both) while a
        # member rejoining in between makes the two reads differ
        problems = _beside_the_tool(kafka, name, view)
        for _ in range(5):
            if not problems:
                break
            time.sleep(1)
            problems = _beside_the_tool(kafka, name, kg(kafka, "describe", name, "-o", "json").json[0])
        assert problems == [], name
    assert views["vd-classic"]["protocol"] == "range"          # the Java client's first assignor
    assert set(by_instance(views["vd-classic"])) == {"jc-0", "jc-1", None}
    assert set(by_instance(views["vd-py"])) == {"p-0", None}
    assert set(by_instance(views["vd-rdk-classic"])) == {"rc-0"}

    static = kg(kafka, "describe", "vd-classic", "--static-only", "-o", "json").json[0]
    assert {m["group_instance_id"] for m in static["members"]} == {"jc-0", "jc-1"}
    dynamic = kg(kafka, "describe", "vd-classic", "--dynamic-only", "-o", "json").json[0]
    assert [m["group_instance_id"] for m in dynamic["members"]] == [None]
    table = kg(kafka, "describe", "vd-classic", "-o", "table")
    assert table.exit_code == 0 and "3 (static 2, dynamic 1)" in table.stdout


def test_describe_consumer_group_of_java_and_librdkafka(kafka, groups):
    got = kg(kafka, "describe", "vd-consumer", "-o", "json")
    assert got.exit_code == 0, got.stderr
    view = got.json[0]
    assert (view["state"], view["type"], view["assignor"], view["protocol"]) == \
        ("Stable", "consumer", "uniform", "uniform")
    assert view["group_epoch"] == view["assignment_epoch"] >= 3
    members = by_instance(view)
    assert set(members) == {"jk-0", "rk-0", None}
    assert members["jk-0"]["client_id"] == "java-jk-0" and members["rk-0"]["client_id"] == "rdkafka-rk-0"
    for m in view["members"]:
        assert m["member_type"] == "consumer" and m["member_epoch"] == view["group_epoch"]
        assert m["assignment"] == m["target_assignment"] and m["subscribed_topics"] == [TOPIC]
        assert m["subscribed_topic_regex"] is None
    truth = tool_members(kafka, "vd-consumer")
    assert set(truth) == {m["member_id"] for m in view["members"]}
    for m in view["members"]:
        row = truth[m["member_id"]]
        assert int(row["CURRENT-EPOCH"]) == m["member_epoch"] and int(row["TARGET-EPOCH"]) == view["group_epoch"]
        assert int(row["#PARTITIONS"]) == sum(len(a["partitions"]) for a in m["assignment"])

    reconciling = kg(kafka, "describe", "vd-reconciling", "-o", "json").json[0]
    left = by_instance(reconciling)["q-0"]
    assert reconciling["state"] == "Reconciling" and left["member_epoch"] == -2 and left["assignment"]
    table = kg(kafka, "describe", "vd-reconciling", "-o", "table").stdout
    assert "LEFT" in table and "q-0" in table.split("left (static, member epoch -2):")[1]

    empty = kg(kafka, "describe", "vd-empty-consumer", "vd-empty-classic", "-o", "json")
    assert empty.exit_code == 0, empty.stderr
    assert [(v["state"], v["type"], v["members"]) for v in empty.json] == \
        [("Empty", "consumer", []), ("Empty", "classic", [])]


def test_describe_groups_mid_rebalance(kafka, groups):
    got = kg(kafka, "describe", "vd-preparing", "vd-completing", "-o", "json")
    assert got.exit_code == 0, got.stderr
    preparing, completing = got.json
    assert preparing["state"] == "PreparingRebalance" and completing["state"] == "CompletingRebalance"
    assert set(by_instance(preparing)) == {"y-0", "y-1"} and set(by_instance(completing)) == {"x-0"}
    for view in (preparing, completing):
        assert view["protocol"] == "" and all(m["assignment"] == [] for m in view["members"])
    states = {r["GROUP"]: r["STATE"] for r in tool_rows(consumer_groups(
        kafka, "--describe", "--state", "--group", "vd-preparing", "--group", "vd-completing"))}
    assert states == {"vd-preparing": "PreparingRebalance", "vd-completing": "CompletingRebalance"}
    table = kg(kafka, "describe", "vd-preparing", "-o", "table")
    assert table.exit_code == 0 and "PreparingRebalance" in table.stdout


def test_describe_a_group_that_does_not_exist(kafka, groups):
    gone = kg(kafka, "describe", "vd-nope", "-o", "json")
    assert gone.exit_code == 1
    assert gone.stderr.splitlines() == [f"kgroup describe: group 'vd-nope' does not exist "
                                        f"(coordinator 127.0.0.1:{kafka.node(1).port} (id: 1))"]
    assert gone.json[0]["error"].startswith("group 'vd-nope' does not exist")
    # the broker answers GROUP_ID_NOT_FOUND (Kafka 4.4's tool prints it as an error but exits 0:
    # docs/conformance.md)
    theirs = kafka.tool("kafka-consumer-groups", "--bootstrap-server", kafka.bootstrap, "--describe", "--group",
                        "vd-nope", check=False)
    assert "GroupIdNotFoundException: Group vd-nope not found." in theirs.stdout
    some = kg(kafka, "describe", "vd-classic", "vd-nope", "-o", "table")
    assert some.exit_code == 3 and len(some.stderr.splitlines()) == 1 and "vd-nope" in some.stderr
    assert "Traceback" not in some.stderr + some.stdout


def test_describe_offsets_lag_per_partition_and_instance(kafka, groups):
    """Every member of vd-classic and vd-consumer stops consuming (the JVMs killed: no leave, the
    30 s sessions keep them members; librdkafka stops polling), then 3 records more per partition."""
    for name in ("vd-classic", "vd-consumer"):
        for member in groups[name]:
            member.kill()
    produce(kafka.bootstrap, TOPIC, {p: 3 for p in ENDS})
    ends = {p: e + 3 for p, e in ENDS.items()}

    got = kg(kafka, "describe", "vd-classic", "vd-consumer", "--offsets", "-o", "json")
    assert got.exit_code == 0, got.stderr
    for view in got.json:
        owner = {(row["topic"], p): m for m in view["members"] for row in m["assignment"] for p in row["partitions"]}
        assert [(o["topic"], o["partition"], o["committed"], o["log_end"], o["lag"]) for o in view["offsets"]] == \
            [(TOPIC, p, ENDS[p], ends[p], 3) for p in sorted(ENDS)], view["group"]
        for o in view["offsets"]:
            m = owner[(o["topic"], o["partition"])]
            assert (o["member_id"], o["group_instance_id"]) == (m["member_id"], m["group_instance_id"])
        # the broker's numbers: kafka-consumer-groups --describe --offsets
        truth = tool_rows(consumer_groups(kafka, "--describe", "--offsets", "--group", view["group"]))
        assert sorted((int(r["PARTITION"]), int(r["CURRENT-OFFSET"]), int(r["LOG-END-OFFSET"]), int(r["LAG"]),
                       r["CONSUMER-ID"]) for r in truth) == \
            [(o["partition"], o["committed"], o["log_end"], o["lag"], o["member_id"]) for o in view["offsets"]]

        # the lag summed per instance id (a dynamic member by its member id)
        table = kg(kafka, "describe", view["group"], "--offsets", "-o", "table").stdout
        totals = dict(line.split() for line in table.split("TOTAL-LAG")[1].strip().splitlines())
        expected = {}
        for o in view["offsets"]:
            key = o["group_instance_id"] or o["member_id"]
            expected[key] = expected.get(key, 0) + o["lag"]
        assert {k: int(v) for k, v in totals.items()} == expected

    static = kg(kafka, "describe", "vd-classic", "--offsets", "--static-only", "-o", "json").json[0]
    assert {o["group_instance_id"] for o in static["offsets"]} <= {"jc-0", "jc-1"}
    assert static["offsets"] and len(static["offsets"]) < len(ENDS)

    empty = kg(kafka, "describe", "vd-empty-classic", "--offsets", "-o", "json").json[0]
    assert [(o["partition"], o["committed"], o["lag"], o["member_id"]) for o in empty["offsets"]] == \
        [(p, 2, ends[p] - 2, None) for p in sorted(ENDS)]
