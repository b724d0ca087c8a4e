"""kgroup beside Kafka's own tools, on the real Kafka 4.4, for the same groups at the same moment:
``describe --offsets`` against ``kafka-consumer-groups --describe --offsets|--members|--state
--verbose``, ``list`` against ``kafka-groups --list`` and ``kafka-consumer-groups --list --state``,
and ``reset-offsets`` plans against ``--reset-offsets --dry-run`` for every target both have.

The groups: classic ones of kafka-python and of the Java client (static and dynamic members each),
consumer-protocol ones of librdkafka and of the Java client (static and dynamic), and two Empty groups
with committed offsets (one classic, one consumer). Every field both show must be equal.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

import pytest

from helpers.kafka_groups import (JavaMember, PythonMember, RdkafkaMember, close_all, create_topic,
                                  java_classpath, produce, wait_for)
from helpers.kafka_tables import assignment_json, assignment_text, dash, kgroup, kgroup_json, rows

T, U, TS = "tk-t", "tk-u", "tk-ts"
LIVE = ["tk-py", "tk-jc", "tk-rdk", "tk-jk"]
EMPTY = ["tk-empty-c", "tk-empty-k"]
GROUPS = LIVE + EMPTY
MINUTE = 60_000


def _describe(bootstrap, *groups):
    """kgroup describe --offsets, or None while a coordinator is still loading (NOT_COORDINATOR)."""
    done = kgroup("describe", "--bootstrap-server", bootstrap, "--offsets", *groups, "-o", "json", check=False)
    return json.loads(done.stdout) if done.returncode == 0 else None


def _groups_ready(bootstrap, not_ready: dict, last_offsets: dict):
    """The views once every group is as the tests need it, else None; ``not_ready`` then says why
    (for the message of a wait that runs out). Quiet means the committed offsets, leader epochs
    included, are those of the poll before (``last_offsets``, updated here): a kafka-python member
    re-seeked after a rebalance commits its position with leader epoch -1 until it fetches, and the
    tests read the offsets twice, by kgroup and by Kafka's tool."""
    not_ready.clear()
    described = _describe(bootstrap, *GROUPS)
    if described is None:
        not_ready["describe"] = "failed"
        return None
    views = {v["group"]: v for v in described}
    for name, view in views.items():
        members = [(m.get("group_instance_id"), m.get("member_epoch"), assignment_json(m["assignment"]))
                   for m in view["members"]]
        if name in LIVE:
            if view["state"] != "Stable" or len(view["members"]) != 2:
                not_ready[name] = (view["state"], members)
            elif any(not m["assignment"] for m in view["members"]):
                not_ready[name] = ("a member without partitions", members)
            elif view["type"] == "consumer" and any(
                    m["member_epoch"] != view["group_epoch"] or
                    assignment_json(m["assignment"]) != assignment_json(m["target_assignment"])
                    for m in view["members"]):
                not_ready[name] = (f"reconciling to epoch {view['group_epoch']}", members)
        elif view["state"] != "Empty":
            not_ready[name] = (view["state"], members)
        behind = [(o["topic"], o["partition"], o["committed"], o["log_end"]) for o in view["offsets"] or []
                  if o["topic"] != TS and o["committed"] != o["log_end"]]
        if not view["offsets"] or behind:
            not_ready.setdefault(name, ("offsets behind", behind))
        offsets = sorted((o["topic"], o["partition"], o["committed"], o["leader_epoch"])
                         for o in view["offsets"] or [])
        if last_offsets.get(name) != offsets:
            not_ready.setdefault(name, ("offsets moved since the last look", offsets))
        last_offsets[name] = offsets
    return None if not_ready else views


def _quiet_views(bootstrap, not_ready: dict, timeout: float = 90):
    last_offsets: dict = {}
    return wait_for(lambda: _groups_ready(bootstrap, not_ready, last_offsets), timeout,
                    "every group Stable and caught up", interval=0.5)


def _moment(views) -> dict:
    """What must not move while kgroup and Kafka's tool read: states, epochs and member ids (a
    classic group's describe has no generation; a rejoin shows as a new member id)."""
    return {g: (v["state"], v.get("group_epoch"), sorted(m["member_id"] for m in v["members"]))
            for g, v in views.items()}


@pytest.fixture(scope="module")
def groups(kafka, tmp_path_factory):
    """Every group built, the live ones Stable and caught up, the Empty ones with their offsets."""
    from confluent_kafka import Producer

    b = kafka.bootstrap
    for topic, partitions in ((T, 3), (U, 2), (TS, 2)):
        create_topic(b, topic, partitions)
    produce(b, T, {0: 5, 1: 3, 2: 2})
    produce(b, U, {0: 2, 1: 4})
    now = int(time.time() * 1000)
    producer = Producer({"bootstrap.servers": b, "linger.ms": 0})
    for partition in (0, 1):                 # records 3 h, 2 h, 1 h and 30 min old
        for age in (180, 120, 60, 30):
            producer.produce(TS, value=b"x", partition=partition, timestamp=now - age * MINUTE)
    assert producer.flush(30) == 0
    cp = java_classpath(tmp_path_factory.getbasetemp())
    # The Empty groups first: a member that commits everything, then leaves.
    empties = [RdkafkaMember(b, "tk-empty-c", [T, U, TS], protocol="classic"),
               RdkafkaMember(b, "tk-empty-k", [T, U, TS])]
    live = {"tk-py": lambda: [PythonMember(b, "tk-py", [T], "tkp-0"), PythonMember(b, "tk-py", [T])],
            "tk-jc": lambda: [JavaMember(cp, b, "tk-jc", [T, U], "tkjc-0", protocol="classic"),
                              JavaMember(cp, b, "tk-jc", [T, U], protocol="classic")],
            "tk-rdk": lambda: [RdkafkaMember(b, "tk-rdk", [T, U], "tkr-0"), RdkafkaMember(b, "tk-rdk", [T, U])],
            "tk-jk": lambda: [JavaMember(cp, b, "tk-jk", [T, U], "tkjk-0"), JavaMember(cp, b, "tk-jk", [T, U])]}
    members = {group: start() for group, start in live.items()}
    try:
        def committed_all(group):
            views = _describe(b, group)
            return views and sum(o["committed"] is not None for o in views[0]["offsets"]) == 7
        for group in EMPTY:
            wait_for(lambda: committed_all(group), 60, f"{group} committing")
        close_all(empties)
        not_ready: dict = {}
        try:
            views = _quiet_views(b, not_ready)
        except AssertionError:
            # In a loaded full run a kafka-python member has been seen to stop heartbeating for good
            # right after its first assignment (its session expired; it never rejoined): a group that
            # did not settle gets fresh members, once — this module compares describe outputs, not
            # how a client survives a starved process.
            first = dict(not_ready)
            for group in [g for g in first if g in live]:
                close_all(members[group])
                members[group] = live[group]()
            try:
                views = _quiet_views(b, not_ready)
            except AssertionError as exc:
                raise AssertionError(f"{exc}; last seen: {not_ready}; before fresh members: {first}") from None
        yield views, [m for group in members.values() for m in group]
    finally:
        close_all([m for group in members.values() for m in group])
        close_all(empties)


def _kafka_tools(kafka, *commands):
    """Kafka's tools, side by side (each ~1 s of JVM start), their stdouts in order."""
    with ThreadPoolExecutor(2) as pool:
        return [f.result().stdout for f in [pool.submit(kafka.tool, *c) for c in commands]]


def _group_args():
    return [a for g in GROUPS for a in ("--group", g)]


def test_describe_and_list_equal_kafkas_tools(kafka, groups):
    b = kafka.bootstrap
    before = _quiet_views(b, {}, timeout=60)      # still quiet since the fixture, or quiet again
    cg = ("kafka-consumer-groups", "--bootstrap-server", b, "--describe", *_group_args())
    with ThreadPoolExecutor(2) as pool:
        ours = pool.submit(lambda: (kgroup_json("describe", "--bootstrap-server", b, "--offsets", *GROUPS),
                                    kgroup_json("list", "--bootstrap-server", b)))
        offsets, members, states, listed, listed_states = _kafka_tools(
            kafka, (*cg, "--offsets", "--verbose"), (*cg, "--members", "--verbose"), (*cg, "--state", "--verbose"),
            ("kafka-groups", "--bootstrap-server", b, "--list"),
            ("kafka-consumer-groups", "--bootstrap-server", b, "--list", "--state"))
        described, ours_listed = ours.result()
    views = {v["group"]: v for v in described}
    assert set(views) == set(GROUPS)
    # The same moment: nothing moved between the two describes (the groups were quiet just before).
    assert _moment(views) == _moment(before)

    # --offsets --verbose: committed offset, leader epoch, log end, lag and owner per partition.
    theirs = {(r["GROUP"], r["TOPIC"], int(r["PARTITION"])): r for r in rows(offsets)}
    mine = {}
    for group, view in views.items():
        by_id = {m["member_id"]: m for m in view["members"]}
        for o in view["offsets"]:
            owner = by_id.get(o["member_id"], {})
            mine[(group, o["topic"], o["partition"])] = {
                "GROUP": group, "TOPIC": o["topic"], "PARTITION": str(o["partition"]),
                "LEADER-EPOCH": dash(o["leader_epoch"]), "CURRENT-OFFSET": dash(o["committed"]),
                "LOG-END-OFFSET": dash(o["log_end"]), "LAG": dash(o["lag"]),
                "CONSUMER-ID": dash(o["member_id"]), "HOST": dash(owner.get("client_host")),
                "CLIENT-ID": dash(owner.get("client_id"))}
    assert mine == theirs

    # --members --verbose: ids, instance ids, hosts, assignments and epochs of every member.
    theirs = {(r["GROUP"], r["CONSUMER-ID"]): r for r in rows(members)}
    assert {g for g, _ in theirs} == set(LIVE)
    mine = {}
    for group, view in views.items():
        for m in view["members"]:
            consumer = view["type"] == "consumer"
            mine[(group, m["member_id"])] = {
                "GROUP": group, "CONSUMER-ID": m["member_id"], "GROUP-INSTANCE-ID": m["group_instance_id"] or "",
                "HOST": m["client_host"], "CLIENT-ID": m["client_id"],
                "#PARTITIONS": str(sum(len(a["partitions"]) for a in m["assignment"])),
                "CURRENT-EPOCH": dash(m["member_epoch"]), "CURRENT-ASSIGNMENT": assignment_json(m["assignment"]),
                "TARGET-EPOCH": dash(view["assignment_epoch"] if consumer else None),
                "TARGET-ASSIGNMENT": assignment_json(m["target_assignment"])}
    for r in theirs.values():
        r["CURRENT-ASSIGNMENT"] = assignment_text(r["CURRENT-ASSIGNMENT"])
        r["TARGET-ASSIGNMENT"] = assignment_text(r["TARGET-ASSIGNMENT"])
    assert mine == theirs
    assert any(k[0] == "tk-py" and v["GROUP-INSTANCE-ID"] == "" for k, v in theirs.items())   # dynamic
    assert any(k[0] == "tk-jk" and v["GROUP-INSTANCE-ID"] == "tkjk-0" for k, v in theirs.items())  # static

    # --state --verbose: coordinator, assignor, state, epochs and member count.
    theirs = {r["GROUP"]: r for r in rows(states)}
    mine = {}
    for group, view in views.items():
        c = view["coordinator"]
        strategy = view["assignor"] if view["type"] == "consumer" else view["protocol"]
        mine[group] = {"GROUP": group, "COORDINATOR (ID)": f"{c['host']}:{c['port']}  ({c['id']})",
                       "ASSIGNMENT-STRATEGY": strategy or "-", "STATE": view["state"],
                       "GROUP-EPOCH": dash(view["group_epoch"]),
                       "TARGET-ASSIGNMENT-EPOCH": dash(view["assignment_epoch"]),
                       "#MEMBERS": str(len(view["members"]))}
    assert mine == theirs

    # kafka-groups --list (type and protocol type) and kafka-consumer-groups --list --state.
    ours_listed = {g["group"]: g for g in ours_listed}
    theirs = {r["GROUP"]: r for r in rows(listed) if r["GROUP"] in GROUPS}
    assert {g: {"GROUP": g, "TYPE": ours_listed[g]["type"].capitalize(), "PROTOCOL": ours_listed[g]["protocol_type"]}
            for g in GROUPS} == theirs
    theirs = {r["GROUP"]: r["STATE"] for r in rows(listed_states) if r["GROUP"] in GROUPS}
    assert {g: ours_listed[g]["state"] for g in GROUPS} == theirs
    # Every group the broker knows is listed by both, whatever other tests made meanwhile.
    assert set(GROUPS) <= set(ours_listed)


# ------------------------------------------------------------------ reset-offsets plans


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]


def test_reset_offsets_plans_equal_kafkas_dry_run(kafka, groups, tmp_path):
    b = kafka.bootstrap
    views = groups[0]
    ts_offsets = [o for o in views["tk-empty-c"]["offsets"] if o["topic"] == TS]
    assert ts_offsets
    plan = tmp_path / "plan.csv"
    plan.write_text("".join(f"{g},{T},0,2\n{g},{T},2,1\n{g},{U},1,3\n" for g in EMPTY))   # Kafka's export of 2 groups
    # A moment between the records 2 h and 1 h old; by-duration: 90 minutes back (the same records).
    middle = _when(int(time.time() * 1000) - 90 * MINUTE)
    targets = [("--to-earliest",), ("--to-latest",), ("--to-offset", "1"), ("--shift-by", "-2"),
               ("--shift-by", "100"), ("--to-datetime", middle), ("--by-duration", "PT1H30M"),
               ("--to-current",)]
    cases = [(("--all-topics",), t) for t in targets]
    cases += [(("--topic", f"{T}:0,2"), targets[0]), (("--topic", f"{T}:0,2"), targets[3]),
              (("--topic", TS), targets[5]), (("--topic", f"{U}:1"), targets[7])]
    cases += [((), ("--from-file", str(plan)))]
    group_args = [a for g in EMPTY for a in ("--group", g)]
    commands = [("kafka-consumer-groups", "--bootstrap-server", b, "--reset-offsets", "--dry-run", *group_args,
                 *selection, *target) for selection, target in cases]
    with ThreadPoolExecutor(2) as pool:
        ours = pool.submit(lambda: [[kgroup_json("reset-offsets", "--bootstrap-server", b, group, *selection, *target)
                                     for group in EMPTY] for selection, target in cases])
        theirs_all = _kafka_tools(kafka, *commands)
        ours_all = ours.result()
    for (selection, target), theirs, mine in zip(cases, theirs_all, ours_all):
        theirs = {(r["GROUP"], r["TOPIC"], int(r["PARTITION"])): int(r["NEW-OFFSET"]) for r in rows(theirs)}
        mine = {(p["group"], o["topic"], o["partition"]): o["new"] for p in mine for o in p["offsets"]}
        assert mine == theirs, (selection, target)
        assert theirs, (selection, target)
    # The plans did change something, and nothing was executed.
    after = kgroup_json("describe", "--bootstrap-server", b, "--offsets", *EMPTY)
    assert {v["group"]: v["offsets"] for v in after} == {g: views[g]["offsets"] for g in EMPTY}
    assert kgroup("reset-offsets", "--bootstrap-server", b, "tk-empty-c", "--all-topics", "--to-earliest",
                  "-o", "json").returncode == 0


def test_every_option_of_kafka_consumer_groups_is_mapped(kafka):
    """docs/from-kafka-consumer-groups.md names every option Kafka 4.4's tool offers (its own
    --help), each beside what kgroup does instead, and the kgroup man page points to it."""
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parents[2]
    done = kafka.tool("kafka-consumer-groups", "--help", check=False)
    text = done.stdout + done.stderr
    options = sorted(set(re.findall(r"^(--[a-z][a-z-]*)", text, re.M)))
    assert len(options) > 25, text
    table = (root / "docs" / "from-kafka-consumer-groups.md").read_text()
    mapped = set(re.findall(r"^\| `[^|]*", table, re.M))
    missing = [o for o in options if not any(re.search(rf"[`\[ ,/]{o}(?![\w-])", row) for row in mapped)]
    assert missing == [], f"kafka-consumer-groups options not in the table: {missing}"
    assert "docs/from-kafka-consumer-groups.md" in (root / "man" / "kgroup.1").read_text()
