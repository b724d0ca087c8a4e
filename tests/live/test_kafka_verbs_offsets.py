"""`kgroup reset-offsets`, `delete-offsets` and `delete` against the real Kafka 4.4 broker; what was
committed or deleted is read back with Kafka's own kafka-consumer-groups.

The topic's records carry known timestamps (partition p: offsets 0..9 at T0 + offset minutes), so
every reset target has one right answer.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import time

import pytest

from helpers.kafka_groups import RdkafkaMember, close_all, create_topic, kgroup, tool_rows, wait_for

TOPIC, OTHER = "vo-t", "vo-u"
RECORDS = 10
T0 = int(time.time() * 1000) - 3 * 3600 * 1000          # three hours ago, a record a minute


def kg(kafka, *args):
    return kgroup(*args, "--bootstrap-server", kafka.bootstrap)


def broker_offsets(kafka, group) -> dict:
    """{(topic, partition): committed offset} as kafka-consumer-groups --describe --offsets shows it."""
    text = kafka.tool("kafka-consumer-groups", "--bootstrap-server", kafka.bootstrap, "--describe", "--offsets",
                      "--group", group, check=False).stdout
    return {(r["TOPIC"], int(r["PARTITION"])): int(r["CURRENT-OFFSET"]) for r in tool_rows(text)
            if r.get("CURRENT-OFFSET", "-") not in ("-", "")}


@pytest.fixture(scope="module")
def topics(kafka):
    from confluent_kafka import Producer

    create_topic(kafka.bootstrap, TOPIC, 2)
    create_topic(kafka.bootstrap, OTHER, 1)
    producer = Producer({"bootstrap.servers": kafka.bootstrap, "linger.ms": 0})
    for topic, partitions in ((TOPIC, 2), (OTHER, 1)):
        for p in range(partitions):
            for i in range(RECORDS):
                producer.produce(topic, value=b"v", partition=p, timestamp=T0 + i * 60_000)
    assert producer.flush(30) == 0
    # vo-g: an Empty group with offsets 4 on every partition of both topics
    for topic in (TOPIC, OTHER):
        kafka.tool("kafka-consumer-groups", "--bootstrap-server", kafka.bootstrap, "--reset-offsets", "--group",
                   "vo-g", "--topic", topic, "--to-offset", "4", "--execute")


def plan(kafka, group, *args):
    got = kg(kafka, "reset-offsets", group, *args, "-o", "json")
    assert got.exit_code == 0, got.stderr
    return {(o["topic"], o["partition"]): o for o in got.json["offsets"]}


def iso(ms):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}"


def test_reset_offsets_every_target_plan_then_execute(kafka, topics, tmp_path):
    current = broker_offsets(kafka, "vo-g")
    assert current == {(TOPIC, 0): 4, (TOPIC, 1): 4, (OTHER, 0): 4}
    # now minus this lands half way between records 6 and 7 (less the seconds the plans below take)
    seconds_ago = (int(time.time() * 1000) - (T0 + 6 * 60_000 + 30_000)) // 1000
    cases = [
        (["--to-earliest"], 0, False), (["--to-latest"], RECORDS, False), (["--to-current"], 4, False),
        (["--to-offset", "6"], 6, False), (["--to-offset", "99"], RECORDS, True),
        (["--shift-by", "3"], 7, False), (["--shift-by", "-9"], 0, True),
        (["--to-datetime", iso(T0 + 5 * 60_000)], 5, False),           # exactly record 5's timestamp
        (["--to-datetime", iso(T0 + 5 * 60_000 + 1)], 6, False),       # the first record after it
        (["--to-datetime", "2999-01-01T00:00:00"], RECORDS, False),    # no record that late: the log end
        (["--by-duration", f"PT{seconds_ago}S"], 7, False),
    ]
    for args, new, clamped in cases:
        rows = plan(kafka, "vo-g", "--topic", TOPIC, *args)
        assert set(rows) == {(TOPIC, 0), (TOPIC, 1)}, args
        for row in rows.values():
            assert (row["current"], row["new"], row["log_start"], row["log_end"], row["clamped"], row["error"]) == \
                (4, new, 0, RECORDS, clamped, None), args
            assert (row["lag_before"], row["lag_after"]) == (RECORDS - 4, RECORDS - new), args
    assert broker_offsets(kafka, "vo-g") == current                   # plans commit nothing

    one = plan(kafka, "vo-g", "--topic", f"{TOPIC}:1", "--to-offset", "2")
    assert list(one) == [(TOPIC, 1)]
    everything = plan(kafka, "vo-g", "--all-topics", "--to-earliest")
    assert set(everything) == {(TOPIC, 0), (TOPIC, 1), (OTHER, 0)}

    done = kg(kafka, "reset-offsets", "vo-g", "--topic", TOPIC, "--shift-by", "-1", "--execute", "-o", "json")
    assert done.exit_code == 0 and done.json["executed"] is True, done.stderr
    assert broker_offsets(kafka, "vo-g") == {(TOPIC, 0): 3, (TOPIC, 1): 3, (OTHER, 0): 4}

    # --export, edited, then --from-file (Kafka's TOPIC,PARTITION,OFFSET lines)
    exported = kg(kafka, "reset-offsets", "vo-g", "--all-topics", "--to-offset", "8", "--export")
    assert exported.exit_code == 0 and exported.stdout.splitlines() == \
        [f"{TOPIC},0,8", f"{TOPIC},1,8", f"{OTHER},0,8"]
    path = tmp_path / "plan.csv"
    path.write_text(exported.stdout.replace(f"{TOPIC},1,8", f"{TOPIC},1,9"))
    done = kg(kafka, "reset-offsets", "vo-g", "--from-file", str(path), "--execute", "-o", "json")
    assert done.exit_code == 0, done.stderr
    assert broker_offsets(kafka, "vo-g") == {(TOPIC, 0): 8, (TOPIC, 1): 9, (OTHER, 0): 8}

    missing = kg(kafka, "reset-offsets", "vo-g", "--topic", "vo-missing", "--to-earliest", "--execute")
    assert missing.exit_code == 1 and missing.stderr.splitlines() == \
        ["group vo-g (Empty): nothing committed: every partition failed",       # the table's closing line
         "kgroup reset-offsets: vo-missing: UNKNOWN_TOPIC_OR_PARTITION"]
    partial = kg(kafka, "reset-offsets", "vo-g", "--topic", f"{TOPIC}:0,5", "--to-earliest", "--execute",
                 "-o", "json")
    assert partial.exit_code == 3 and partial.stderr.splitlines() == \
        [f"kgroup reset-offsets: {TOPIC}:5: UNKNOWN_TOPIC_OR_PARTITION"]
    assert broker_offsets(kafka, "vo-g")[(TOPIC, 0)] == 0

    # a group that does not exist yet: the reset creates its offsets, as Kafka's tool does
    fresh = kg(kafka, "reset-offsets", "vo-new", "--topic", OTHER, "--to-latest", "--execute", "-o", "json")
    assert fresh.exit_code == 0 and fresh.json["state"] in ("Dead", "Empty"), fresh.stderr
    assert broker_offsets(kafka, "vo-new") == {(OTHER, 0): RECORDS}


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_reset_offsets_is_refused_while_members_are_active(kafka, topics, protocol):
    group = f"vo-active-{protocol}"
    member = RdkafkaMember(kafka.bootstrap, group, [OTHER], "m-0", protocol=protocol)
    try:
        wait_for(lambda: member.assignment == {(OTHER, 0)}, 60, "m-0 assigned")
        wait_for(lambda: broker_offsets(kafka, group) == {(OTHER, 0): RECORDS}, 60, "m-0 committed")
        refused = kg(kafka, "reset-offsets", group, "--topic", OTHER, "--to-earliest", "--execute", "-o", "json")
        assert refused.exit_code == 1 and refused.stdout == ""
        assert refused.stderr.splitlines() == [
            f"kgroup reset-offsets: group '{group}' is Stable, not Empty or Dead: offsets can only be reset while "
            f"no consumer is in the group; stop its members first (m-0), then wait (kgroup wait {group} --state "
            f"Empty) or remove them, as the group keeps static members until their session times out (kgroup "
            f"remove-members {group} --instance-id m-0)"]
        assert broker_offsets(kafka, group) == {(OTHER, 0): RECORDS}
        # the plan alone is fine
        assert plan(kafka, group, "--topic", OTHER, "--to-earliest")[(OTHER, 0)]["new"] == 0

        # delete-offsets of a topic the group is subscribed to: refused per partition by the broker
        subscribed = kg(kafka, "delete-offsets", group, "--topic", OTHER, "-o", "json")
        assert subscribed.exit_code == 1
        assert subscribed.json == [{"topic": OTHER, "partition": 0, "error": "GROUP_SUBSCRIBED_TO_TOPIC"}]
        assert len(subscribed.stderr.splitlines()) == 1 and "GROUP_SUBSCRIBED_TO_TOPIC" in subscribed.stderr
        # delete of a group with members: NON_EMPTY_GROUP, predicted by --dry-run
        for extra in (["--dry-run"], []):
            busy = kg(kafka, "delete", group, *extra, "-o", "json")
            assert busy.exit_code == 1, extra
            assert (busy.json[0]["deleted"], busy.json[0]["error"]) == (False, "NON_EMPTY_GROUP"), extra
            assert busy.stderr.splitlines() == [f"kgroup delete: group '{group}': NON_EMPTY_GROUP"]
    finally:
        member.close()


def test_delete_offsets_and_delete(kafka, topics):
    for group in ("vo-d", "vo-d2"):
        for topic in (TOPIC, OTHER):
            kafka.tool("kafka-consumer-groups", "--bootstrap-server", kafka.bootstrap, "--reset-offsets", "--group",
                       group, "--topic", topic, "--to-offset", "1", "--execute")
    got = kg(kafka, "delete-offsets", "vo-d", "--topic", f"{TOPIC}:1", "-o", "json")
    assert got.exit_code == 0 and got.json == [{"topic": TOPIC, "partition": 1, "error": None}], got.stderr
    assert broker_offsets(kafka, "vo-d") == {(TOPIC, 0): 1, (OTHER, 0): 1}
    mixed = kg(kafka, "delete-offsets", "vo-d", "--topic", OTHER, "--topic", "vo-missing", "-o", "json")
    assert mixed.exit_code == 3
    assert {(r["topic"], r["error"]) for r in mixed.json} == {(OTHER, None), ("vo-missing", "UNKNOWN_TOPIC_OR_PARTITION")}
    assert mixed.stderr.splitlines() == ["kgroup delete-offsets: vo-missing: UNKNOWN_TOPIC_OR_PARTITION"]
    assert broker_offsets(kafka, "vo-d") == {(TOPIC, 0): 1}
    gone = kg(kafka, "delete-offsets", "vo-nope", "--topic", TOPIC)
    assert gone.exit_code == 1 and gone.stderr.splitlines() == [
        f"kgroup delete-offsets: group 'vo-nope' does not exist (coordinator 127.0.0.1:{kafka.node(1).port} (id: 1))"]

    dry = kg(kafka, "delete", "vo-d", "vo-nope", "--dry-run", "-o", "json")
    assert dry.exit_code == 3
    assert [(r["group"], r["state"], r["deleted"], r["would_delete"], r["error"]) for r in dry.json] == \
        [("vo-d", "Empty", False, True, None), ("vo-nope", "Dead", False, False, "GROUP_ID_NOT_FOUND")]
    assert "vo-d" in kafka.tool("kafka-consumer-groups", "--bootstrap-server", kafka.bootstrap, "--list").stdout.split()

    # a subprocess bounded from outside: once, in a full run of these files, this DeleteGroups call
    # hung for minutes although --timeout bounds every request (not understood yet)
    done = subprocess.run([str(pathlib.Path(sys.executable).parent / "kgroup"), "delete", "vo-d", "vo-d2", "vo-nope",
                           "--bootstrap-server", kafka.bootstrap, "--timeout", "20", "-o", "json"],
                          capture_output=True, text=True, timeout=60)
    done.json = json.loads(done.stdout)
    assert done.returncode == 3, done.stderr
    assert [(r["group"], r["deleted"], r["error"]) for r in done.json] == \
        [("vo-d", True, None), ("vo-d2", True, None), ("vo-nope", False, "GROUP_ID_NOT_FOUND")]
    assert done.stderr.splitlines() == ["kgroup delete: group 'vo-nope': GROUP_ID_NOT_FOUND"]
    listed = kafka.tool("kafka-consumer-groups", "--bootstrap-server", kafka.bootstrap, "--list").stdout.split()
    assert "vo-d" not in listed and "vo-d2" not in listed
    assert kg(kafka, "delete", "vo-d").exit_code == 1


def test_delete_a_consumer_group(kafka, topics):
    member = RdkafkaMember(kafka.bootstrap, "vo-k", [OTHER], None)
    try:
        wait_for(lambda: member.assignment, 60, "assigned")
    finally:
        member.close()                       # a dynamic member leaves: an Empty consumer group
    wait_for(lambda: kg(kafka, "list", "--type", "consumer", "--state", "Empty", "-o", "json").json
             and "vo-k" in {r["group"] for r in kg(kafka, "list", "--state", "Empty", "-o", "json").json}, 30,
             "vo-k Empty")
    done = kg(kafka, "delete", "vo-k", "-o", "json")
    assert done.exit_code == 0 and done.json[0]["deleted"] is True, done.stderr
    assert "vo-k" not in kafka.tool("kafka-consumer-groups", "--bootstrap-server", kafka.bootstrap,
                                    "--list").stdout.split()
