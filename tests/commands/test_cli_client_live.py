"""list / describe / remove-members / wait against `kgroup serve` with real kafka-python consumers."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from kgroup.client.fleet import FleetConsumer, stop_all, wait_settled, wait_until
from kgroup.commands.cli import cli
from kgroup.server.harness import ThreadedBroker

TOPIC = "orders"
PARTITIONS = 6


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = ThreadedBroker(tmp_path_factory.mktemp("live") / "logs", topics=[(TOPIC, PARTITIONS)])
    _produce(b.bootstrap, {p: 5 + p for p in range(PARTITIONS)})
    yield b
    b.stop()


def _produce(bootstrap, per_partition):
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=False)
    for partition, count in per_partition.items():
        for i in range(count):
            producer.send(TOPIC, value=b"%d" % i, partition=partition)
    producer.flush(10)
    producer.close()


def snapshot(b, group):
    return b.group(group)


class Fleet:
    """Static (and optionally dynamic) consumers of one group, settled before the test runs."""

    def __init__(self, b, group, instances, dynamic=0, commit=True, session_timeout_ms=4000):
        self.b, self.group = b, group
        self.consumers = {i: FleetConsumer(b.bootstrap, group, [TOPIC], i, session_timeout_ms=session_timeout_ms,
                                           enable_auto_commit=commit) for i in instances}
        self.settle()
        # Dynamic members join once the static ones are settled: started all together, kafka-python
        # 3.0.12 + kgroup serve sometimes settle with two static members assigned nothing (reported).
        for n in range(dynamic):
            self.consumers[f"dyn-{n}"] = FleetConsumer(b.bootstrap, group, [TOPIC], None, session_timeout_ms=4000,
                                                       enable_auto_commit=commit)
        if dynamic:
            self.settle()

    def settle(self, timeout=20):
        assert wait_settled(lambda: snapshot(self.b, self.group), self.consumers.values(), PARTITIONS, timeout), \
            f"group did not settle: {snapshot(self.b, self.group)}"

    def stop(self, *names):
        stop_all([self.consumers.pop(n) for n in names])

    def close(self):
        stop_all(self.consumers.values())
        self.consumers = {}


@pytest.fixture(scope="module")
def shared(broker):
    """Group "desc": static d-0, d-1 and one dynamic member, all offsets committed; tests must not change it."""
    fleet = Fleet(broker, "desc", ["d-0", "d-1"], dynamic=1)
    assert wait_until(lambda: len(broker.committed_offsets("desc"))
                      == PARTITIONS, 15)
    yield fleet
    fleet.close()


@pytest.fixture
def fleets():
    made = []
    def make(*args, **kwargs):
        f = Fleet(*args, **kwargs)
        made.append(f)
        return f
    yield make
    for f in made:
        f.close()


def run(*args, env=None):
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def kg(b, *args):
    return run(*args, "--bootstrap-server", b.bootstrap, "--timeout", "10")


MEMBER_KEYS = {"member_id", "group_instance_id", "static", "client_id", "client_host", "assignment",
               "member_epoch", "member_type", "target_assignment", "subscribed_topics", "subscribed_topic_regex",
               "rack_id"}
GROUP_KEYS = {"group", "state", "protocol_type", "protocol", "coordinator", "members", "offsets", "error",
              "type", "group_epoch", "assignment_epoch", "assignor"}
OFFSET_KEYS = {"topic", "partition", "committed", "log_end", "lag", "member_id", "group_instance_id", "leader_epoch"}


def test_list_filters_and_formats(broker, shared):
    result = kg(broker, "list", "-o", "json")
    assert result.exit_code == 0, result.output
    rows = {r["group"]: r for r in json.loads(result.stdout)}
    assert rows["desc"]["state"] == "Stable"
    assert rows["desc"]["protocol_type"] == "consumer"
    assert rows["desc"]["type"] == "classic"
    assert rows["desc"]["coordinator"]["id"] == 0
    empty = json.loads(kg(broker, "list", "--state", "Empty", "-o", "json").stdout)
    assert "desc" not in {r["group"] for r in empty}
    stable = json.loads(kg(broker, "list", "--state", "stable", "--type", "classic", "-o", "json").stdout)
    assert "desc" in {r["group"] for r in stable}
    assert json.loads(kg(broker, "list", "--type", "consumer", "-o", "json").stdout) == []
    csv_out = kg(broker, "list", "-o", "csv").stdout.splitlines()
    assert csv_out[0] == "group,state,protocol_type,type,coordinator"
    assert f"desc,Stable,consumer,classic,{broker.bootstrap} (id: 0)" in csv_out     # as describe's CSV says it
    bad = kg(broker, "list", "--state", "Sleeping")
    assert bad.exit_code == 2


def test_list_sends_kafkas_state_spelling_to_case_sensitive_brokers(broker, shared):
    # Kafka before 3.8 keeps a group only if its state is *exactly* in ListGroups' StatesFilter
    # (GroupCoordinator.handleListGroups: states.contains(g.summary.state)). This broker does the same.
    cls, lo, hi, handler = broker.broker.api_table[16]
    seen = []

    def exact_case(b, request, ctx):
        seen.append(list(request.states_filter or ()))
        response = handler(b, request, ctx)
        response.groups = [g for g in response.groups
                           if not request.states_filter or g.group_state in request.states_filter]
        return response

    broker.broker.api_table[16] = (cls, lo, hi, exact_case)
    try:
        result = kg(broker, "list", "--state", "stable", "--state", "EMPTY", "-o", "json")
    finally:
        broker.broker.api_table[16] = (cls, lo, hi, handler)
    assert result.exit_code == 0, result.stderr
    assert seen == [["Empty", "Stable"]]
    assert "desc" in {r["group"] for r in json.loads(result.stdout)}


def test_describe_json_schema_members_offsets_and_lag(broker, shared):
    result = kg(broker, "describe", "desc", "--offsets", "-o", "json")
    assert result.exit_code == 0, result.stderr
    [group] = json.loads(result.stdout)
    assert set(group) == GROUP_KEYS
    assert group["state"] == "Stable" and group["error"] is None
    assert group["protocol_type"] == "consumer" and group["protocol"] == "range"
    assert (group["type"], group["group_epoch"], group["assignment_epoch"], group["assignor"]) == \
        ("classic", None, None, None)
    assert group["coordinator"] == {"id": 0, "host": broker.address[0], "port": broker.address[1]}
    members = group["members"]
    assert all(set(m) == MEMBER_KEYS for m in members)
    assert {(m["member_type"], m["member_epoch"], m["target_assignment"], m["subscribed_topic_regex"])
            for m in members} == {("classic", None, None, None)}
    assert all(m["subscribed_topics"] == [TOPIC] for m in members)
    assert [(m["group_instance_id"], m["static"]) for m in members] == [("d-0", True), ("d-1", True), (None, False)]
    snap = snapshot(broker, "desc")
    assert {m["member_id"] for m in members} == {m.member_id for m in snap.members}
    assert members[0]["client_id"] == "kgroup-demo-d-0" and members[0]["client_host"] == "/127.0.0.1"
    owned = sorted(p for m in members for tp in m["assignment"] for p in tp["partitions"])
    assert owned == list(range(PARTITIONS))
    # Every message was consumed and auto-committed: committed == log end == 5 + partition, lag 0.
    offsets = sorted(group["offsets"], key=lambda r: r["partition"])
    assert all(set(r) == OFFSET_KEYS for r in offsets)
    assert [(r["partition"], r["log_end"]) for r in offsets] == [(p, 5 + p) for p in range(PARTITIONS)]
    assert wait_until(lambda: all(r["lag"] == 0 for r in json.loads(
        kg(broker, "describe", "desc", "--offsets", "-o", "json").stdout)[0]["offsets"]), 10)
    by_member = {m["member_id"]: m for m in members}
    for r in offsets:
        owner = by_member[r["member_id"]]
        assert r["group_instance_id"] == owner["group_instance_id"]
        assert any(r["partition"] in tp["partitions"] for tp in owner["assignment"])
    static = json.loads(kg(broker, "describe", "desc", "--static-only", "-o", "json").stdout)[0]
    assert [m["group_instance_id"] for m in static["members"]] == ["d-0", "d-1"]
    dynamic = json.loads(kg(broker, "describe", "desc", "--dynamic-only", "--offsets", "-o", "json").stdout)[0]
    assert [m["static"] for m in dynamic["members"]] == [False]
    assert {r["group_instance_id"] for r in dynamic["offsets"]} == {None}
    table = kg(broker, "describe", "desc", "--offsets", "-o", "table").stdout
    assert "3 (static 2, dynamic 1)" in table
    assert re.search(r"^OWNER\s+TOTAL-LAG$", table, re.M)
    assert re.search(r"^d-0\s+0$", table, re.M) and re.search(r"^d-1\s+0$", table, re.M)


def test_describe_unknown_group_is_one_line_exit_1_and_partial_is_3(broker, shared):
    result = kg(broker, "describe", "no-such-group", "-o", "table")
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        f"kgroup describe: group 'no-such-group' does not exist (coordinator {broker.bootstrap} (id: 0))"]
    mixed = kg(broker, "describe", "desc", "no-such-group", "-o", "json")
    assert mixed.exit_code == 3
    rows = json.loads(mixed.stdout)
    assert [r["group"] for r in rows] == ["desc", "no-such-group"]
    assert rows[0]["error"] is None and rows[1]["error"].startswith("group 'no-such-group' does not exist")


def test_unreachable_broker_and_bad_command_config(tmp_path):
    started = time.monotonic()
    result = run("describe", "g", "--bootstrap-server", "127.0.0.1:1", "--timeout", "30")
    assert result.exit_code == 1
    assert result.stderr == "kgroup describe: connection refused by 127.0.0.1:1: no Kafka broker listens there\n"
    assert time.monotonic() - started < 10   # at once, not after --timeout
    # wait rides out a restarting broker: a refusal is retried until its timeout
    result = run("wait", "g", "--bootstrap-server", "127.0.0.1:1", "--timeout", "1")
    assert result.exit_code == 1
    assert result.stderr == "kgroup wait: cannot reach a Kafka broker at 127.0.0.1:1 within 1s\n"
    props = tmp_path / "client.properties"
    props.write_text("security.protocol=SASL_SSL\nssl.truststore.location=/etc/kafka/truststore.jks\n")
    result = run("list", "--bootstrap-server", "127.0.0.1:1", "--command-config", str(props))
    assert result.exit_code == 2        # the file is the operator's input: a usage error
    assert result.stderr.startswith(f"kgroup list: {props}:2: ssl.truststore.location=/etc/kafka/truststore.jks: "
                                    f"looks like a Java keystore")



@pytest.mark.parametrize("args, message", [
    ([], "kgroup list: no bootstrap server"),
    (["--bootstrap-server", "nohost"], "kgroup list: bad bootstrap server 'nohost'"),
    (["--bootstrap-server", "127.0.0.1:1", "--command-config", "/nonexistent.properties"],
     "kgroup list: /nonexistent.properties: no such file"),
])
def test_usage_errors_past_parsing_exit_2(args, message):
    result = run("list", *args, env={"KGROUP_BOOTSTRAP_SERVER": ""})
    assert result.exit_code == 2 and result.stderr.startswith(message), result.stderr


def test_env_var_bootstrap(broker, shared):
    result = run("list", "-o", "json", env={"KGROUP_BOOTSTRAP_SERVER": broker.bootstrap})
    assert result.exit_code == 0
    assert "desc" in {r["group"] for r in json.loads(result.stdout)}


def test_remove_partial_failure_exit_3_others_removed(broker, fleets):
    fleet = fleets(broker, "rm-part", ["p-0", "p-1", "p-2"])
    fleet.stop("p-1", "p-2")  # static consumers stop without LeaveGroup: still members
    assert set(snapshot(broker, "rm-part").static_members) == {"p-0", "p-1", "p-2"}
    result = kg(broker, "remove-members", "rm-part", "--instance-id", "p-1,ghost", "--instance-id", "p-2",
                "-o", "json")
    assert result.exit_code == 3
    out = json.loads(result.stdout)
    assert out == {"group": "rm-part", "dry_run": False, "removed": 2, "failed": 1, "results": [
        {"group_instance_id": "p-1", "member_id": None, "error": None},
        {"group_instance_id": "ghost", "member_id": None, "error": "UNKNOWN_MEMBER_ID"},
        {"group_instance_id": "p-2", "member_id": None, "error": None}]}
    # without --wait nobody looks whether a removed member comes back: a warning says it may
    assert result.stderr == ("kgroup remove-members: warning: p-1, p-2 are members of group 'rm-part': a consumer "
                             "whose process still runs rejoins at once (stop it first; --wait reports a rejoin)\n"
                             "kgroup remove-members: ghost: UNKNOWN_MEMBER_ID\n")
    assert set(snapshot(broker, "rm-part").static_members) == {"p-0"}


def test_remove_all_unknown_exit_1_and_unknown_group(broker, fleets):
    fleets(broker, "rm-none", ["n-0"])
    result = kg(broker, "remove-members", "rm-none", "--instance-id", "x,y", "-o", "json")
    assert result.exit_code == 1
    assert [r["error"] for r in json.loads(result.stdout)["results"]] == ["UNKNOWN_MEMBER_ID"] * 2
    assert set(snapshot(broker, "rm-none").static_members) == {"n-0"}
    result = kg(broker, "remove-members", "nope-group", "--instance-id", "x")
    assert result.exit_code == 1
    assert result.stderr.startswith("kgroup remove-members: group 'nope-group' does not exist")


def test_empty_selection_is_a_usage_error_never_everyone(broker, fleets, tmp_path):
    fleets(broker, "rm-empty", ["m-0"])
    result = kg(broker, "remove-members", "rm-empty")
    assert result.exit_code == 2
    assert "an empty selection never means everyone" in result.stderr
    blank = tmp_path / "ids.txt"
    blank.write_text("# nobody\n\n")
    result = kg(broker, "remove-members", "rm-empty", "--from-file", str(blank))
    assert result.exit_code == 2
    assert result.stderr == f"kgroup remove-members: {blank}: no instance id in it (only blank lines and # comments)\n"
    result = kg(broker, "remove-members", "rm-empty", "--all", "--instance-id", "m-0")
    assert result.exit_code == 2
    assert set(snapshot(broker, "rm-empty").static_members) == {"m-0"}


def test_remove_from_file_member_id_and_reason(broker, fleets, tmp_path):
    fleet = fleets(broker, "rm-file", ["f-0", "f-1"], dynamic=1)
    dyn_id = next(m.member_id for m in snapshot(broker, "rm-file").members if m.group_instance_id is None)
    fleet.stop("f-1")  # the dynamic consumer keeps running: stopping it would send its own LeaveGroup
    ids = tmp_path / "ids.txt"
    ids.write_text("# leaving hosts\nf-1   # rack 3\n")
    result = kg(broker, "remove-members", "rm-file", "--from-file", str(ids), "--member-id", dyn_id,
                "--reason", "scale down", "-o", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["results"] == [
        {"group_instance_id": "f-1", "member_id": None, "error": None},
        {"group_instance_id": None, "member_id": dyn_id, "error": None}]
    snap = snapshot(broker, "rm-file")
    assert set(snap.static_members) == {"f-0"}
    assert dyn_id not in {m.member_id for m in snap.members}


def test_dry_run_reports_status_partitions_and_prediction(broker, fleets):
    fleets(broker, "rm-dry", ["r-0", "r-1", "r-2"], dynamic=1)
    snap = snapshot(broker, "rm-dry")
    dyn_id = next(m.member_id for m in snap.members if m.group_instance_id is None)
    result = kg(broker, "remove-members", "rm-dry", "--instance-id", "r-2,ghost", "--member-id", dyn_id,
                "--dry-run", "-o", "json")
    assert result.exit_code == 3
    out = json.loads(result.stdout)
    assert out["dry_run"] is True and out["removed"] == 0 and out["failed"] == 1
    r2, ghost, dyn = out["results"]
    assert (r2["status"], ghost["status"], dyn["status"]) == ("static", "unknown", "dynamic")
    assert ghost["error"] == "UNKNOWN_MEMBER_ID" and ghost["partitions"] == []
    # range over 6 partitions, members ordered r-0, r-1, r-2, then the dynamic one: 2,2,1,1
    assert [p["partition"] for p in r2["partitions"]] == [4]
    assert [p["partition"] for p in dyn["partitions"]] == [5]
    # After removing r-2 and the dynamic member, range gives r-0 0,1,2 / r-1 3,4,5: 4 and 5 go to
    # r-1, and partition 2 of r-1, which stays, moves to r-0 as well.
    assert {(m["partition"], m["to"]) for m in r2["moves"] + dyn["moves"]} == {(4, "r-1"), (5, "r-1")}
    assert out["other_moves"] == [{"topic": TOPIC, "partition": 2, "from": "r-1", "to": "r-0"}]
    assert snapshot(broker, "rm-dry").generation == snap.generation  # nothing changed
    assert len(snapshot(broker, "rm-dry").members) == 4


def test_remove_wait_prints_before_after(broker, fleets):
    fleet = fleets(broker, "rm-wait", ["w-0", "w-1", "w-2"])
    before = snapshot(broker, "rm-wait")
    fleet.stop("w-2")
    result = kg(broker, "remove-members", "rm-wait", "--instance-id", "w-2", "--wait", "--wait-timeout", "30",
                "-o", "json")
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    after = snapshot(broker, "rm-wait")
    assert after.state == "Stable" and after.generation > before.generation
    wait = out["wait"]
    assert wait["before"] == {"state": "Stable", "members": ["w-0", "w-1", "w-2"]}
    assert wait["after"] == {"state": "Stable", "members": ["w-0", "w-1"]}
    assert wait["generation_advanced"] is True and wait["error"] is None
    # range: w-0 0,1 / w-1 2,3 / w-2 4,5  ->  w-0 0,1,2 / w-1 3,4,5
    assert wait["partitions_moved"] == [
        {"topic": TOPIC, "partition": 2, "from": "w-1", "to": "w-0"},
        {"topic": TOPIC, "partition": 4, "from": "w-2", "to": "w-1"},
        {"topic": TOPIC, "partition": 5, "from": "w-2", "to": "w-1"}]


def test_remove_wait_reports_a_member_whose_process_still_runs_as_rejoined(broker, fleets):
    # rj-0 keeps running: removed, it rejoins at its next heartbeat under a new member id. The
    # removal did not stick, and --wait says so per id, exit 3, instead of "removed".
    fleets(broker, "rm-rejoin", ["rj-0", "rj-1"])
    result = kg(broker, "remove-members", "rm-rejoin", "--instance-id", "rj-0", "--wait", "--wait-timeout", "30",
                "-o", "json")
    assert result.exit_code == 3, result.stderr
    out = json.loads(result.stdout)
    assert out["results"] == [{"group_instance_id": "rj-0", "member_id": None, "error": None, "rejoined": True}]
    assert (out["removed"], out["failed"], out["rejoined"]) == (1, 0, 1)
    assert out["wait"]["error"] is None and out["wait"]["after"]["members"] == ["rj-0", "rj-1"]
    assert result.stderr == ("kgroup remove-members: rj-0: rejoined: the process is still running; stop it, then "
                             "remove it again\n")
    table = kg(broker, "remove-members", "rm-rejoin", "--instance-id", "rj-1", "--wait", "--wait-timeout", "30",
               "-o", "table")
    assert table.exit_code == 3, table.stderr
    assert re.search(r"^Removed, and back in the group at once:\nID\s+RESULT\nrj-1\s+rejoined: the process is "
                     r"still running$", table.stdout, re.M), table.stdout
    # the dry run and a removal without --wait warn that a running consumer rejoins
    dry = kg(broker, "remove-members", "rm-rejoin", "--instance-id", "rj-0", "--dry-run", "-o", "json")
    assert dry.exit_code == 0
    assert dry.stderr == ("kgroup remove-members: warning: rj-0 is a member of group 'rm-rejoin': a consumer whose "
                          "process still runs rejoins at once (stop it first; --wait reports a rejoin)\n")


class _Lines:
    """A subprocess's stdout read line by line on a thread (a pipe's readline cannot time out)."""

    def __init__(self, stream):
        import queue
        import threading

        self.lines = queue.Queue()
        threading.Thread(target=lambda: [self.lines.put(line) for line in iter(stream.readline, "")]
                         + [self.lines.put(None)], daemon=True).start()

    def until(self, predicate, timeout):
        """The lines up to the first that satisfies predicate; None: up to the end of the output."""
        seen = []
        deadline = time.monotonic() + timeout
        while True:
            line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            if line is None:
                assert predicate is None, f"stdout ended before the line: {seen}"
                return seen
            seen.append(line)
            if predicate is not None and predicate(line):
                return seen


def test_ctrl_c_during_the_wait_still_reports_the_removal(broker, fleets):
    import signal

    # int-0..2 stop without a leave and keep their membership for 60 s: a removal's rebalance waits
    # for int-0, which never rejoins, so the wait is still waiting when SIGINT comes
    fleet = fleets(broker, "rm-int", ["int-0", "int-1", "int-2"], session_timeout_ms=60000)
    fleet.close()

    def remove(instance, output):
        # SIGINT handled as a terminal's Ctrl-C is, whatever this suite inherited: started as a
        # background job of a shell without job control, the suite ignores SIGINT and so would the
        # command (Python keeps an ignored SIGINT ignored), as `kgroup ... &` from a script does.
        # faulthandler: a process still running 20 s after the SIGINT is made to print where it is.
        argv = ["remove-members", "rm-int", "--instance-id", instance, "--wait", "--wait-timeout", "60",
                "-o", output, "--bootstrap-server", broker.bootstrap]
        as_a_terminal = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
                         "sys.argv[0] = 'kgroup'; runpy.run_module('kgroup.commands.cli', run_name='__main__')")
        return subprocess.Popen([sys.executable, "-c", as_a_terminal, *argv], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONFAULTHANDLER": "1"})

    def exit_status(proc):
        try:
            return proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            proc.wait(10)
            pytest.fail("still running 20 s after SIGINT; its threads:\n" + proc.stderr.read())

    proc = remove("int-2", "table")
    try:  # the table is printed (and flushed) before the wait starts
        lines = _Lines(proc.stdout)
        shown = lines.until(lambda line: line.startswith("int-2"), 30)
        assert shown[0] == "Group rm-int: 1 removed, 0 failed.\n"
        assert re.match(r"int-2\s+instance id\s+removed$", shown[-1])
        proc.send_signal(signal.SIGINT)
        assert exit_status(proc) == 130
        assert lines.until(None, 5) == []
        assert proc.stderr.read() == "kgroup remove-members: interrupted\n"
    finally:
        proc.kill()

    proc = remove("int-1", "json")
    try:
        assert wait_until(lambda: "int-1" not in snapshot(broker, "rm-int").static_members, 30)
        time.sleep(0.5)  # waiting now
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 130 and err == "kgroup remove-members: interrupted\n", err
    doc = json.loads(out)
    assert doc["results"] == [{"group_instance_id": "int-1", "member_id": None, "error": None, "rejoined": None}]
    assert (doc["removed"], doc["failed"], doc["rejoined"]) == (1, 0, 0)
    assert doc["wait"] == {"before": {"state": "PreparingRebalance", "members": ["int-0", "int-1"]}, "after": None,
                           "generation_advanced": None, "partitions_moved": None, "error": "interrupted"}


def test_remove_all_explicit(broker, fleets):
    fleet = fleets(broker, "rm-all", ["all-0", "all-1"])
    fleet.close()
    result = kg(broker, "remove-members", "rm-all", "--all", "-o", "json")
    assert result.exit_code == 0, result.stderr
    assert [r["group_instance_id"] for r in json.loads(result.stdout)["results"]] == ["all-0", "all-1"]
    assert wait_until(lambda: snapshot(broker, "rm-all").state == "Empty", 10)
    waited = kg(broker, "wait", "rm-all", "--state", "Empty", "-o", "json")
    assert waited.exit_code == 0
    assert json.loads(waited.stdout) == {"group": "rm-all", "state": "Empty", "members": 0, "static": 0,
                                         "dynamic": 0}
    # Nobody left: the same answer with and without --dry-run (not a usage error asking for --all).
    for extra in ((), ("--dry-run",)):
        again = kg(broker, "remove-members", "rm-all", "--all", *extra)
        assert again.exit_code == 1, extra
        assert again.stderr == "kgroup remove-members: group 'rm-all' has no members to remove (state Empty)\n"


def test_wait_reaches_stable_and_times_out(broker, shared):
    ok = kg(broker, "wait", "desc", "--state", "Stable", "-o", "table")
    assert ok.exit_code == 0
    assert ok.stdout == "group desc is Stable with 3 member(s) (2 static, 1 dynamic)\n"
    late = run("wait", "desc", "--state", "Empty", "--bootstrap-server", broker.bootstrap, "--timeout", "1",
               "--interval", "0.2")
    assert late.exit_code == 1
    assert late.stderr.startswith("kgroup wait: group 'desc': timed out after 1s waiting for state Empty "
                                  "(last state: Stable, 3 member(s))")
    gone = run("wait", "never-there", "--state", "Dead", "--bootstrap-server", broker.bootstrap, "-o", "json")
    assert gone.exit_code == 0 and json.loads(gone.stdout)["state"] == "Dead"


def test_wait_rides_out_a_coordinator_restart(tmp_path):
    # A runbook gate must not fail on the first refused connection while the coordinator restarts:
    # --timeout bounds the wait, and requests that get no answer are retried until then.
    logs = tmp_path / "restart"
    b = ThreadedBroker(logs, topics=[(TOPIC, 1)])
    port, bootstrap = b.address[1], b.bootstrap
    proc = subprocess.Popen([sys.executable, "-m", "kgroup.commands.cli", "wait", "late", "--state", "Empty",
                             "--bootstrap-server", bootstrap, "--timeout", "15", "--interval", "0.1", "-o", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(2)  # polling: the group does not exist yet
        b.stop()
        time.sleep(1)  # every request now fails (connection refused)
        assert proc.poll() is None, proc.communicate()
        b = ThreadedBroker(logs, topics=[(TOPIC, 1)], port=port)
        from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition

        consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id="late", enable_auto_commit=False)
        consumer.commit({TopicPartition(TOPIC, 0): OffsetAndMetadata(0, "", -1)})  # the group is now Empty
        consumer.close()
        out, err = proc.communicate(timeout=20)
    finally:
        b.stop()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert json.loads(out) == {"group": "late", "state": "Empty", "members": 0, "static": 0, "dynamic": 0}


def test_from_dump_with_a_shell_glob_is_a_usage_error_not_dozens_of_missing_groups(broker, shared):
    # `describe --from-dump LOGDIR/__consumer_offsets-*`: the shell hands --from-dump the first path
    # and makes every other partition a GROUP name.
    import glob

    paths = sorted(glob.glob(f"{broker.broker.log_dir}/__consumer_offsets-*"))
    assert len(paths) == 50
    result = run("describe", "--from-dump", *paths)
    assert result.exit_code == 2
    assert f"GROUP {paths[1]!r} is a dump path: give each path its own --from-dump" in result.stderr
    assert result.stdout == ""
    ok = run("describe", "--from-dump", broker.broker.log_dir, "desc", "-o", "json")
    assert ok.exit_code == 0, ok.stderr
    assert json.loads(ok.stdout)[0]["group"] == "desc"


@pytest.fixture
def old_broker(tmp_path):
    """A broker advertising only pre-KIP-345 versions: LeaveGroup v0-2, DescribeGroups v0-3, ListGroups v0-2."""
    b = ThreadedBroker(tmp_path / "old", topics=[(TOPIC, PARTITIONS)])
    for key, top in ((13, 2), (15, 3), (16, 2)):
        cls, lo, _hi, fn = b.broker.api_table[key]
        b.broker.api_table[key] = (cls, lo, top, fn)
    yield b
    b.stop()


def test_old_broker_instance_ids_clear_error_member_ids_work(old_broker, fleets):
    fleet = fleets(old_broker, "old", ["o-0"], dynamic=1)
    snap = snapshot(old_broker, "old")
    # DescribeGroups v3 has no group.instance.id: every member looks dynamic, nothing breaks.
    described = json.loads(kg(old_broker, "describe", "old", "-o", "json").stdout)[0]
    assert [m["group_instance_id"] for m in described["members"]] == [None, None]
    assert sorted(p for m in described["members"] for tp in m["assignment"] for p in tp["partitions"]) == \
        list(range(PARTITIONS))
    listed = json.loads(kg(old_broker, "list", "--state", "Stable", "-o", "json").stdout)
    assert [(r["group"], r["state"]) for r in listed] == [("old", "Stable")]
    result = kg(old_broker, "remove-members", "old", "--instance-id", "o-0")
    assert result.exit_code == 1
    assert result.stderr == ("kgroup remove-members: the broker supports LeaveGroup up to v2; removing members "
                             "by group.instance.id needs v3+ (Kafka 2.3+). Use --member-id for members of this "
                             "group\n")
    assert set(snapshot(old_broker, "old").static_members) == {"o-0"}
    dyn_id = next(m.member_id for m in snap.members if m.group_instance_id is None)
    result = kg(old_broker, "remove-members", "old", "--member-id", f"{dyn_id},nobody", "-o", "json")
    assert result.exit_code == 3
    assert json.loads(result.stdout)["results"] == [
        {"group_instance_id": None, "member_id": dyn_id, "error": None},
        {"group_instance_id": None, "member_id": "nobody", "error": "UNKNOWN_MEMBER_ID"}]
    assert dyn_id not in {m.member_id for m in snapshot(old_broker, "old").members}


def test_wait_timeout_after_removal_still_reports_results(broker, fleets):
    fleet = fleets(broker, "rm-slow", ["s-0", "s-1"])
    # Both stop without LeaveGroup (static). The removal of s-1 starts a rebalance that waits for s-0 to
    # rejoin, which it never does: the group stays in PreparingRebalance until s-0's session timeout (4 s),
    # far past the 0.5 s wait. (With s-0 running, its next heartbeat could settle the group in time.)
    fleet.stop("s-0", "s-1")
    result = kg(broker, "remove-members", "rm-slow", "--instance-id", "s-1", "--wait", "--wait-timeout", "0.5",
                "-o", "json")
    assert result.exit_code == 3
    out = json.loads(result.stdout)
    assert out["results"] == [{"group_instance_id": "s-1", "member_id": None, "error": None, "rejoined": False}]
    assert out["wait"]["error"].startswith("group 'rm-slow': timed out after 0.5s waiting for a Stable group at a "
                                           "new generation (last state: PreparingRebalance")
    # the same keys as a wait that succeeded: what it did not see is null
    assert {k: v for k, v in out["wait"].items() if k != "error"} == {
        "before": {"state": "Stable", "members": ["s-0", "s-1"]}, "after": None, "generation_advanced": None,
        "partitions_moved": None}
    assert result.stderr.startswith("kgroup remove-members: the removal was done, but group 'rm-slow': timed out")


def test_csv_and_root_output_option(broker, shared):
    dyn_id = next(m.member_id for m in snapshot(broker, "desc").members if m.group_instance_id is None)
    members = kg(broker, "describe", "desc", "--no-offsets", "-o", "csv").stdout.splitlines()
    assert members[0] == ("group,state,protocol_type,protocol,coordinator,member_id,group_instance_id,static,"
                          "client_id,client_host,assignment")
    assert [line.split(",")[5:8] for line in members[1:]] == [
        [members[1].split(",")[5], "d-0", "true"], [members[2].split(",")[5], "d-1", "true"], [dyn_id, "", "false"]]
    assert members[1].endswith(',true,kgroup-demo-d-0,/127.0.0.1,"orders:0,1"')
    offsets = kg(broker, "describe", "desc", "-o", "csv").stdout.splitlines()       # per partition by default
    assert offsets[0] == "group,topic,partition,committed,log_end,lag,member_id,group_instance_id"
    assert len(offsets) == 1 + PARTITIONS
    assert kg(broker, "describe", "desc", "--offsets", "-o", "csv").stdout.splitlines() == offsets
    dry = kg(broker, "remove-members", "desc", "--instance-id", "d-1", "--dry-run", "-o", "csv").stdout.splitlines()
    # range over d-0, d-1, dynamic: 0,1 / 2,3 / 4,5; without d-1: d-0 0,1,2 and the dynamic member 3,4,5
    assert dry == ["group,group_instance_id,member_id,error,status,partitions,moves",
                   f"desc,d-1,,,static,orders:2 orders:3,orders:2->d-0 orders:3->{dyn_id}"]
    rooted = run("-o", "json", "wait", "desc", "--bootstrap-server", broker.bootstrap)
    assert json.loads(rooted.stdout)["state"] == "Stable"
