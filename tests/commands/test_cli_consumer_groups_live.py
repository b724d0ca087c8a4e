"""describe / list / wait on KIP-848 consumer groups: `kgroup serve` with real librdkafka consumers
(confluent-kafka, ``group.protocol=consumer``) next to a classic group of the same client."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from helpers.rdkafka_groups import (PARTITIONS, TOPIC, close_all, each_partition_once, group_settled,
                                    new_consumer, owned, poll_until, produce, start_broker)

from kgroup.commands.cli import cli


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = start_broker(tmp_path_factory.mktemp("cg"))
    produce(b, 60)
    yield b
    b.stop()


@pytest.fixture(scope="module")
def groups(broker):
    """Consumer group "cg" (static i0..i2, every offset committed) and classic group "cl"."""
    from confluent_kafka import Consumer

    consumers = [new_consumer(broker, f"i{n}") for n in range(3)]
    classic = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "cl", "group.protocol": "classic",
                        "auto.offset.reset": "earliest", "enable.auto.commit": False})
    classic.subscribe([TOPIC])
    seen = set()
    poll_until(consumers + [classic], lambda: each_partition_once(consumers) and len(seen) == 60
               and group_settled(broker, "cg", 3) and owned(classic) == set(range(PARTITIONS)),
               on_message=lambda c, m: seen.add((m.partition(), m.offset())) if c is not classic else None)
    for consumer in consumers:
        consumer.commit(asynchronous=False)
    yield consumers
    close_all(consumers + [classic])


def kg(b, *args):
    return CliRunner().invoke(cli, [*args, "--bootstrap-server", b.bootstrap, "--timeout", "10"],
                              catch_exceptions=False)


def kg_while_polling(b, consumers, *args):
    """kgroup on a thread while the consumers (librdkafka, polled from this thread) keep polling:
    a command that waits for the group needs them heartbeating meanwhile."""
    import threading

    outcome = {}
    command = threading.Thread(target=lambda: outcome.update(r=kg(b, *args)))
    command.start()
    poll_until(consumers, lambda: not command.is_alive())
    return outcome["r"]


def test_describe_consumer_group_json_table_and_lag(broker, groups):
    result = kg(broker, "describe", "cg", "cl", "--offsets", "-o", "json")
    assert result.exit_code == 0, result.stderr
    cg, cl = json.loads(result.stdout)
    snap = broker.group("cg")
    assert (cg["type"], cg["state"], cg["protocol_type"], cg["protocol"], cg["assignor"]) == \
        ("consumer", "Stable", "consumer", "uniform", "uniform")
    assert cg["group_epoch"] == cg["assignment_epoch"] == snap.group_epoch
    assert [m["group_instance_id"] for m in cg["members"]] == ["i0", "i1", "i2"]
    for m in cg["members"]:
        assert (m["member_type"], m["member_epoch"], m["subscribed_topics"], m["subscribed_topic_regex"]) == \
            ("consumer", snap.group_epoch, [TOPIC], None)
        assert m["target_assignment"] == m["assignment"] and m["assignment"][0]["topic"] == TOPIC
    assert sorted(p for m in cg["members"] for p in m["assignment"][0]["partitions"]) == list(range(PARTITIONS))
    assert {(r["partition"], r["committed"], r["lag"]) for r in cg["offsets"]} == \
        {(p, 10, 0) for p in range(PARTITIONS)}
    assert {r["group_instance_id"] for r in cg["offsets"]} == {"i0", "i1", "i2"}
    # The classic group next to it falls back to DescribeGroups, in the same answer.
    assert (cl["type"], cl["state"], cl["group_epoch"], cl["assignor"]) == ("classic", "Stable", None, None)
    assert [m["member_type"] for m in cl["members"]] == ["classic"]
    table = kg(broker, "describe", "cg", "--offsets", "-o", "table").stdout
    assert re.search(r"^GROUP\s+COORDINATOR\s+STATE\s+GROUP-EPOCH\s+ASSIGNMENT-EPOCH\s+TYPE\s+PROTOCOL", table, re.M)
    assert re.search(rf"^cg\s.*Stable\s+{snap.group_epoch}\s+{snap.group_epoch}\s+consumer\s+consumer/uniform",
                     table, re.M)
    assert re.search(r"^i0\s+STATIC\s+\S+\s+\S+\s+\S+\s+consumer\s+\d+\s+events:\S+\s+events:\S+\s+caught-up$",
                     table, re.M)
    assert "all 3 member(s) caught up at group epoch" in table
    assert re.search(r"^i1\s+0$", table, re.M)  # lag per instance id


def test_describe_unknown_and_partial_exit_codes(broker, groups):
    result = kg(broker, "describe", "cg", "nope", "-o", "json")
    assert result.exit_code == 3
    assert [g["error"] for g in json.loads(result.stdout)][0] is None
    assert result.stderr.strip() == \
        f"kgroup describe: group 'nope' does not exist (coordinator {broker.bootstrap} (id: 0))"


def test_a_member_that_has_not_released_its_partitions_shows_reconciling(broker, groups):
    """A fourth consumer joins while the others do not poll: their revocations wait, so the group
    is not caught up and the table says who is behind."""
    late = new_consumer(broker, "i3")
    try:
        poll_until([late], lambda: broker.group("cg") is not None and len(broker.group("cg").members) == 4)
        [cg] = json.loads(kg(broker, "describe", "cg", "-o", "json").stdout)
        table = kg(broker, "describe", "cg", "-o", "table").stdout
        assert cg["state"] in ("Reconciling", "Assigning")
        assert re.search(r"^\d of 4 member\(s\) still reconciling to group epoch \d+$", table, re.M)
        assert "RECONCILING" in table
        poll_until(groups + [late], lambda: group_settled(broker, "cg", 4) and each_partition_once(groups + [late]))
        [cg] = json.loads(kg(broker, "describe", "cg", "-o", "json").stdout)
        assert all(m["member_epoch"] == cg["group_epoch"] and m["assignment"] == m["target_assignment"]
                   for m in cg["members"])
    finally:
        late.close()
        poll_until(groups, lambda: group_settled(broker, "cg", 3) and each_partition_once(groups))


def test_topic_ids_resolve_through_metadata(broker, groups):
    from kgroup.client.consumer_describe import resolve_topic_ids
    from kgroup.client.wire import ClusterClient

    topic_id = broker.run(lambda: broker.broker.logdir.topics[TOPIC].topic_id)
    with ClusterClient(broker.bootstrap, timeout_s=10) as client:
        assert resolve_topic_ids(client, [topic_id]) == {topic_id: TOPIC}
        assert resolve_topic_ids(client, []) == {}


def listed(b, *args):
    result = kg(b, "list", *args, "-o", "json")
    assert result.exit_code == 0, result.stderr
    return {r["group"]: (r["type"], r["state"]) for r in json.loads(result.stdout)}


def test_list_shows_and_filters_types(broker, groups):
    everything = listed(broker)
    assert everything["cg"] == ("consumer", "Stable") and everything["cl"] == ("classic", "Stable")
    assert set(listed(broker, "--type", "consumer")) == {"cg"}
    assert set(listed(broker, "--type", "CLASSIC")) == {"cl"}
    assert set(listed(broker, "--type", "consumer", "--state", "stable")) == {"cg"}
    assert listed(broker, "--type", "share") == {}
    table = kg(broker, "list", "-o", "table").stdout
    assert re.search(r"^cg\s+Stable\s+consumer\s+consumer\s", table, re.M)
    assert kg(broker, "list", "--type", "kip848").exit_code == 2


def test_list_before_listgroups_v5_learns_types_by_describing(broker, groups):
    table = broker.broker.api_table
    cls, lo, hi, handler = table[16]
    table[16] = (cls, lo, 4, handler)  # ApiVersions now advertises ListGroups v0-4
    try:
        assert set(listed(broker, "--type", "consumer")) == {"cg"}
        assert listed(broker)["cl"] == ("classic", "Stable")
    finally:
        table[16] = (cls, lo, hi, handler)


def test_wait_consumer_states_and_caught_up(broker, groups):

    done = kg(broker, "wait", "cg", "--caught-up", "-o", "json")
    assert done.exit_code == 0, done.stderr
    epoch = broker.group("cg").group_epoch
    assert json.loads(done.stdout) == {"group": "cg", "state": "Stable", "members": 3, "static": 3, "dynamic": 0,
                                       "type": "consumer", "group_epoch": epoch, "caught_up": True}
    assert kg(broker, "wait", "cg", "-o", "table").stdout == \
        f"group cg is Stable at group epoch {epoch}, all caught up with 3 member(s) (3 static, 0 dynamic)\n"
    assert kg(broker, "wait", "cl", "--caught-up", "-o", "table").stdout == \
        "group cl is Stable with 1 member(s) (0 static, 1 dynamic)\n"
    bad = kg(broker, "wait", "cg", "--caught-up", "--state", "Empty")
    assert bad.exit_code == 2 and "--caught-up waits for Stable" in bad.stderr
    late = new_consumer(broker, "i3")
    try:
        # The others do not poll, so they cannot release partitions: the group stays Reconciling.
        reconciling = kg(broker, "wait", "cg", "--state", "reconciling", "-o", "json")
        assert reconciling.exit_code == 0, reconciling.stderr
        assert json.loads(reconciling.stdout)["caught_up"] is False
        stuck = CliRunner().invoke(cli, ["wait", "cg", "--caught-up", "--bootstrap-server", broker.bootstrap,
                                         "--timeout", "1", "--interval", "0.2"])
        assert stuck.exit_code == 1
        assert stuck.stderr.startswith("kgroup wait: group 'cg': timed out after 1s waiting for every member "
                                       "caught up")
        result = kg_while_polling(broker, groups + [late], "wait", "cg", "--caught-up", "-o", "json")
        assert result.exit_code == 0, result.stderr
        reached = json.loads(result.stdout)
        assert (reached["members"], reached["caught_up"]) == (4, True)
        assert reached["group_epoch"] > epoch
    finally:
        late.close()
        poll_until(groups, lambda: group_settled(broker, "cg", 3) and each_partition_once(groups))


@pytest.fixture
def slow_expiry(tmp_path):
    """A broker whose consumer-group sessions last a minute: a closed static member stays a member
    (epoch -2) until it is removed, as a stopped pod does during a rolling restart."""
    from helpers.rdkafka_groups import FAST_CONSUMER_GROUPS

    from kgroup.server.harness import ThreadedBroker

    b = ThreadedBroker(tmp_path / "logs", topics=[(TOPIC, PARTITIONS)],
                       config={**FAST_CONSUMER_GROUPS, "group.consumer.session.timeout.ms": "60000",
                               "group.consumer.max.session.timeout.ms": "60000"})
    b.log_dir = tmp_path / "logs"
    yield b
    b.stop()


def test_remove_members_dry_run_predicts_the_server_assignor_and_wait_sees_the_new_epoch(slow_expiry):

    b = slow_expiry
    consumers = [new_consumer(b, f"r{n}") for n in range(3)]
    try:
        poll_until(consumers, lambda: each_partition_once(consumers) and group_settled(b, "cg", 3))
        consumers[1].close()  # r1 stops; its member stays in the group
        stayers = [consumers[0], consumers[2]]
        dry = kg(b, "remove-members", "cg", "--instance-id", "r1,ghost", "--dry-run", "-o", "json")
        assert dry.exit_code == 3, dry.stderr
        # r1 left (member epoch -2): no warning that it may rejoin
        assert dry.stderr == "kgroup remove-members: ghost: UNKNOWN_MEMBER_ID\n"
        plan = json.loads(dry.stdout)
        assert "prediction_note" not in plan, plan["prediction_note"]
        r1, ghost = plan["results"]
        assert (r1["status"], ghost["status"], ghost["error"]) == ("static", "unknown", "UNKNOWN_MEMBER_ID")
        assert r1["moves"] and {m["to"] for m in r1["moves"]} <= {"r0", "r2"}
        predicted = {(m["topic"], m["partition"]): m["to"] for m in r1["moves"] + plan["other_moves"]}
        table = kg(b, "remove-members", "cg", "--instance-id", "r1", "--dry-run", "-o", "table").stdout
        assert "protocol uniform" in table and re.search(r"^r1\s+instance id\s+static\s+events:", table, re.M)
        epoch = b.group("cg").group_epoch

        result = kg_while_polling(b, stayers, "remove-members", "cg", "--instance-id", "r1", "--wait",
                                  "--wait-timeout", "30", "-o", "json")
        assert result.exit_code == 0, result.stderr
        report = json.loads(result.stdout)
        assert report["results"] == [{"group_instance_id": "r1", "member_id": None, "error": None, "rejoined": False}]
        wait = report["wait"]
        assert (wait["before"]["group_epoch"], wait["after"]["state"], wait["after"]["members"]) == \
            (epoch, "Stable", ["r0", "r2"])
        assert wait["after"]["group_epoch"] > epoch
        moved = {(m["topic"], m["partition"]): m["to"] for m in wait["partitions_moved"]}
        assert moved == predicted  # the dry run named the server-side assignor's real answer
        assert set(b.group("cg").static_members) == {"r0", "r2"}
        assert kgroup_views(b, ["cg"]) == admin_views(b, ["cg"])  # confluent-kafka sees the same group
    finally:
        close_all([c for n, c in enumerate(consumers) if n != 1])


def test_remove_members_wait_reports_a_consumer_that_rejoins_under_its_member_id(slow_expiry):
    """A running KIP-848 consumer removed by its instance id is fenced and rejoins under its own
    member id: --wait sees the group settle with it back, reports it rejoined and exits 3 (before:
    it waited out --wait-timeout for that member id to go)."""
    import time

    b = slow_expiry
    consumers = [new_consumer(b, f"q{n}") for n in range(2)]
    try:
        poll_until(consumers, lambda: each_partition_once(consumers) and group_settled(b, "cg", 2))
        dry = kg(b, "remove-members", "cg", "--instance-id", "q0", "--dry-run", "-o", "json")
        assert dry.exit_code == 0 and dry.stderr == (
            "kgroup remove-members: warning: q0 is a member of group 'cg': a consumer whose process still runs "
            "rejoins at once (stop it first; --wait reports a rejoin)\n")
        started = time.monotonic()
        result = kg_while_polling(b, consumers, "remove-members", "cg", "--instance-id", "q0", "--wait",
                                  "--wait-timeout", "30", "-o", "json")
        assert result.exit_code == 3, result.stderr
        assert time.monotonic() - started < 25      # it settled; it did not wait out the timeout
        report = json.loads(result.stdout)
        assert report["results"] == [{"group_instance_id": "q0", "member_id": None, "error": None, "rejoined": True}]
        assert report["rejoined"] == 1 and report["wait"]["error"] is None
        assert report["wait"]["after"]["members"] == ["q0", "q1"]
        assert report["wait"]["after"]["group_epoch"] > report["wait"]["before"]["group_epoch"]
        assert result.stderr == ("kgroup remove-members: q0: rejoined: the process is still running; stop it, "
                                 "then remove it again\n")
    finally:
        close_all(consumers)


def test_describe_from_dump_replays_the_consumer_group_and_until_time(slow_expiry):
    import time

    b = slow_expiry
    consumers = [new_consumer(b, f"r{n}") for n in range(2)]
    try:
        poll_until(consumers, lambda: each_partition_once(consumers) and group_settled(b, "cg", 2))
        first_ids = {m.instance_id: m.member_id for m in b.group("cg").members}
        time.sleep(0.05)
        settled_at = int(time.time() * 1000)
        time.sleep(0.05)
        consumers[0].close()  # r0 restarts: a new member id for the same instance id
        consumers[0] = new_consumer(b, "r0")
        poll_until(consumers, lambda: each_partition_once(consumers) and group_settled(b, "cg", 2)
                   and {m.instance_id for m in b.group("cg").members if m.member_epoch > 0} == {"r0", "r1"})
        late = new_consumer(b, "r2")  # the others do not poll: the group is caught reconciling
        consumers.append(late)
        poll_until([late], lambda: b.group("cg").state in ("Reconciling", "Assigning")
                   and len(b.group("cg").members) == 3)
        # A moment the live group held still around (librdkafka may revoke in the background):
        # the same view 50 ms before and after it, with someone still reconciling.
        for _ in range(50):
            [live] = json.loads(kg(b, "describe", "cg", "-o", "json").stdout)
            time.sleep(0.05)
            reconciling_at = int(time.time() * 1000)
            time.sleep(0.05)
            [again] = json.loads(kg(b, "describe", "cg", "-o", "json").stdout)
            if live == again:
                break
        assert live == again and live["state"] != "Stable"
        poll_until(consumers, lambda: each_partition_once(consumers) and group_settled(b, "cg", 3))
        [now_live] = json.loads(kg(b, "describe", "cg", "-o", "json").stdout)

        def offline(*extra):
            result = CliRunner().invoke(cli, ["describe", "--from-dump", str(b.log_dir), "cg", "-o", "json",
                                              *extra], catch_exceptions=False)
            assert result.exit_code == 0, result.stderr
            return json.loads(result.stdout)[0]

        def comparable(view):
            keep = ("member_id", "group_instance_id", "member_epoch", "member_type", "assignment",
                    "target_assignment", "subscribed_topics", "subscribed_topic_regex", "rack_id")
            return ({k: view[k] for k in ("type", "state", "group_epoch", "assignment_epoch", "assignor")},
                    [{k: m[k] for k in keep} for m in view["members"]])

        now = offline()
        assert comparable(now) == comparable(now_live)
        moves = {mv["group_instance_id"]: mv for mv in now["instance_moves"]}
        assert moves["r0"]["member_id_changes"] == 1 and moves["r0"]["member_ids"][0] == first_ids["r0"]
        assert "r1" not in moves
        assert comparable(offline("--until-time", str(reconciling_at))) == comparable(live)
        earlier = offline("--until-time", str(settled_at))
        assert {m["group_instance_id"]: m["member_id"] for m in earlier["members"]} == first_ids
        assert earlier["state"] == "Stable" and earlier["group_epoch"] < now["group_epoch"]
        table = CliRunner().invoke(cli, ["describe", "--from-dump", str(b.log_dir), "cg", "-o", "table",
                                         "--until-time", str(reconciling_at)]).stdout
        assert "RECONCILING" in table and "still reconciling to group epoch" in table
        assert "SESSION-TIMEOUT-MS" not in table
        usage = kg(b, "describe", "cg", "--until-time", "2026-01-01T00:00:00")
        assert usage.exit_code == 2 and "--until-time needs --from-dump" in usage.stderr
    finally:
        close_all(consumers)


# -- a second opinion: confluent-kafka's own AdminClient on the same groups -------------------------

def admin_views(b, group_ids):
    """confluent-kafka's describe_consumer_groups, in kgroup's JSON terms."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    views = {}
    for gid, future in admin.describe_consumer_groups(list(group_ids), request_timeout=10).items():
        d = future.result(10)

        def rows(assignment):
            by_topic = {}
            for tp in assignment.topic_partitions if assignment is not None else ():
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            return [{"topic": t, "partitions": sorted(ps)} for t, ps in sorted(by_topic.items())]

        views[gid] = {"type": d.type.name.lower(), "state": d.state.name.lower(), "protocol": d.partition_assignor,
                      "coordinator": d.coordinator.id, "members": sorted(
                          (m.group_instance_id, m.member_id, m.client_id, m.host, rows(m.assignment),
                           rows(m.target_assignment) if d.type.name == "CONSUMER" else None)
                          for m in d.members)}
    return views


def kgroup_views(b, group_ids):
    result = kg(b, "describe", *group_ids, "-o", "json")
    assert result.exit_code == 0, result.stderr
    return {g["group"]: {"type": g["type"], "state": g["state"].lower(), "protocol": g["protocol"],
                         "coordinator": g["coordinator"]["id"], "members": sorted(
                             (m["group_instance_id"], m["member_id"], m["client_id"], m["client_host"],
                              m["assignment"], m["target_assignment"]) for m in g["members"])}
            for g in json.loads(result.stdout)}


def test_describe_and_list_agree_with_confluent_kafkas_admin_client(broker, groups):
    from confluent_kafka import ConsumerGroupType
    from confluent_kafka.admin import AdminClient

    poll_until(groups, lambda: group_settled(broker, "cg", 3))
    assert kgroup_views(broker, ["cg", "cl"]) == admin_views(broker, ["cg", "cl"])
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for kind in ("consumer", "classic"):
        theirs = admin.list_consumer_groups(types={ConsumerGroupType[kind.upper()]}, request_timeout=10).result(10)
        assert set(listed(broker, "--type", kind)) == {g.group_id for g in theirs.valid}
    everything = admin.list_consumer_groups(request_timeout=10).result(10)
    assert listed(broker) == {g.group_id: (g.type.name.lower(), g.state.name.title()) for g in everything.valid}
