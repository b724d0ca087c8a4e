"""reset-offsets / delete-offsets / delete against `kgroup serve` with real consumers: kafka-python
classic members and librdkafka KIP-848 (group.protocol=consumer) members."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kgroup.client.fleet import FleetConsumer, stop_all, wait_settled, wait_until
from kgroup.commands.cli import cli
from kgroup.server.harness import ThreadedBroker

from helpers.rdkafka_groups import FAST_CONSUMER_GROUPS, consumer_config, poll_until

TOPIC = "events"          # the topic helpers.rdkafka_groups' consumers read
PARTITIONS = 3
BASE_MS = 1_700_000_000_000


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = ThreadedBroker(tmp_path_factory.mktemp("offsets") / "logs", topics=[(TOPIC, PARTITIONS), ("other", 1)],
                       config=FAST_CONSUMER_GROUPS)
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=b.bootstrap, enable_idempotence=False)
    for partition in range(PARTITIONS):
        for i in range(10):  # record i of every partition has timestamp BASE_MS + i s
            producer.send(TOPIC, value=b"%d" % i, partition=partition, timestamp_ms=BASE_MS + i * 1000)
    producer.flush(10)
    producer.close()
    yield b
    b.stop()


def run(b, *args):
    result = CliRunner().invoke(cli, [args[0], "--bootstrap-server", b.bootstrap, "--timeout", "10", *args[1:]])
    return result.exit_code, result.stdout, result.stderr


def commit(b, group, offsets):
    """Offsets committed as an admin, so the group exists and is Empty."""
    code, _, err = run(b, "reset-offsets", group, "--from-file", _csv(b, offsets), "--execute")
    assert code == 0, err


def _csv(b, offsets):
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        f.write("".join(f"{t},{p},{o}\n" for (t, p), o in offsets.items()))
    return f.name


def committed(b, group):
    """(topic, partition) -> committed offset, as serve's coordinator holds it."""
    return {tp: value.offset for tp, value in b.committed_offsets(group).items()}


def test_plan_by_default_then_execute_every_target(broker):
    commit(broker, "empty", {(TOPIC, p): 5 for p in range(PARTITIONS)})
    assert committed(broker, "empty") == {(TOPIC, p): 5 for p in range(PARTITIONS)}
    code, out, err = run(broker, "reset-offsets", "empty", "--topic", f"{TOPIC}:0,1", "--to-earliest", "-o", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["group"] == "empty" and doc["executed"] is False
    assert doc["offsets"][0] == {"topic": TOPIC, "partition": 0, "current": 5, "new": 0, "log_start": 0,
                                 "log_end": 10, "lag_before": 5, "lag_after": 10, "clamped": False, "error": None}
    assert committed(broker, "empty")[(TOPIC, 0)] == 5          # a plan changes nothing
    cases = [(["--to-latest"], 10), (["--shift-by", "-3"], 7), (["--shift-by", "50"], 10),
             (["--to-offset", "4"], 4), (["--to-datetime", "2023-11-14T22:13:23Z"], 3),  # BASE_MS + 3 s
             (["--by-duration", "PT1M"], 10), (["--to-current"], 10), (["--to-earliest"], 0)]
    for target, new in cases:
        code, out, err = run(broker, "reset-offsets", "empty", "--all-topics", *target, "--execute", "-o", "json")
        assert code == 0, (target, err)
        assert json.loads(out)["executed"] is True
        assert committed(broker, "empty") == {(TOPIC, p): new for p in range(PARTITIONS)}, target
    code, out, _ = run(broker, "reset-offsets", "empty", "--topic", TOPIC, "--to-offset", "6", "--export")
    assert out == "".join(f"{TOPIC},{p},6\n" for p in range(PARTITIONS))
    code, _, err = run(broker, "reset-offsets", "empty", "--from-file", _csv(broker, {(TOPIC, 1): 99}), "--execute")
    assert code == 0, err
    assert committed(broker, "empty")[(TOPIC, 1)] == 10          # clamped to the log end


def test_some_partitions_fail_exit_3_and_usage_errors_exit_2(broker):
    commit(broker, "partial", {(TOPIC, 0): 1})
    code, out, err = run(broker, "reset-offsets", "partial", "--topic", f"{TOPIC}:0,7", "--to-latest", "-o", "json")
    assert code == 3
    rows = {r["partition"]: r for r in json.loads(out)["offsets"]}
    assert rows[7]["error"] == "UNKNOWN_TOPIC_OR_PARTITION" and rows[0]["new"] == 10
    assert f"kgroup reset-offsets: {TOPIC}:7: UNKNOWN_TOPIC_OR_PARTITION" in err
    for args in (["--topic", TOPIC], ["--topic", TOPIC, "--to-latest", "--to-earliest"], ["--to-latest"],
                 ["--topic", "x:", "--to-latest"], ["--topic", TOPIC, "--by-duration", "1h"]):
        code, _, err = run(broker, "reset-offsets", "partial", *args)
        assert code == 2, (args, err)


def test_execute_says_how_many_partitions_it_committed(broker):
    """The table's closing line on stderr used to say 'committed' also when every partition failed."""
    commit(broker, "exec-count", {(TOPIC, 0): 1})
    code, _, err = run(broker, "reset-offsets", "exec-count", "--topic", f"{TOPIC}:0,7", "--to-offset", "2",
                       "--execute", "-o", "table")
    assert code == 3 and "group exec-count (Empty): committed 1 partition(s), 1 failed\n" in err, err
    code, _, err = run(broker, "reset-offsets", "exec-count", "--topic", "no-such-topic", "--to-offset", "2",
                       "--execute", "-o", "table")
    assert code == 1 and "group exec-count (Empty): nothing committed: every partition failed\n" in err, err
    code, _, err = run(broker, "reset-offsets", "exec-count", "--topic", f"{TOPIC}:0", "--to-offset", "3",
                       "--execute", "-o", "table")
    assert code == 0 and err.endswith("group exec-count (Empty): committed 1 partition(s)\n"), err
    assert committed(broker, "exec-count") == {(TOPIC, 0): 3}


def test_dry_run_is_the_plan_as_in_kafka_and_with_execute_a_usage_error(broker):
    """Kafka's flag for the default: a runbook copied from kafka-consumer-groups.sh runs as written."""
    commit(broker, "dry", {(TOPIC, 0): 1})
    code, out, err = run(broker, "reset-offsets", "dry", "--topic", f"{TOPIC}:0", "--to-latest", "--dry-run",
                         "-o", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["executed"] is False and doc["offsets"][0]["new"] == 10
    assert committed(broker, "dry") == {(TOPIC, 0): 1}
    code, _, err = run(broker, "reset-offsets", "dry", "--topic", f"{TOPIC}:0", "--to-latest", "--dry-run")
    assert code == 0 and err.endswith("group dry (Empty): plan only, nothing committed (add --execute)\n"), err
    code, out, err = run(broker, "reset-offsets", "dry", "--topic", f"{TOPIC}:0", "--to-latest", "--dry-run",
                         "--execute")
    assert (code, out) == (2, "")
    assert err == ("kgroup reset-offsets: --dry-run and --execute exclude each other: --dry-run plans only (the "
                   "default), --execute commits\n")
    assert committed(broker, "dry") == {(TOPIC, 0): 1}


def test_delete_offsets_of_a_partition_the_topic_does_not_have_is_unknown_as_in_kafka(broker):
    """KafkaApis answers a partition missing from its metadata UNKNOWN_TOPIC_OR_PARTITION before the
    coordinator is asked (KAFKA-8954); a group error still comes alone."""
    commit(broker, "del-unknown", {(TOPIC, 0): 1, (TOPIC, 1): 1})
    dry = run(broker, "delete-offsets", "del-unknown", "--topic", f"{TOPIC}:0,7", "-o", "json", "--dry-run")
    assert committed(broker, "del-unknown") == {(TOPIC, 0): 1, (TOPIC, 1): 1}     # nothing deleted
    code, out, err = run(broker, "delete-offsets", "del-unknown", "--topic", f"{TOPIC}:0,7", "-o", "json")
    assert dry == (code, out, err)                        # the dry run predicted every answer
    assert code == 3, err
    assert json.loads(out) == [{"topic": TOPIC, "partition": 0, "error": None},
                               {"topic": TOPIC, "partition": 7, "error": "UNKNOWN_TOPIC_OR_PARTITION"}]
    assert err == f"kgroup delete-offsets: {TOPIC}:7: UNKNOWN_TOPIC_OR_PARTITION\n"
    assert committed(broker, "del-unknown") == {(TOPIC, 1): 1}
    code, out, err = run(broker, "delete-offsets", "del-unknown", "--topic", f"{TOPIC}:9", "-o", "json")
    assert code == 1 and json.loads(out) == [{"topic": TOPIC, "partition": 9, "error": "UNKNOWN_TOPIC_OR_PARTITION"}]
    code, _, err = run(broker, "delete-offsets", "no-such-group", "--topic", f"{TOPIC}:9")
    assert code == 1 and err == (f"kgroup delete-offsets: group 'no-such-group' does not exist "
                                 f"(coordinator {broker.bootstrap} (id: 0))\n"), err
    assert run(broker, "delete-offsets", "no-such-group", "--topic", f"{TOPIC}:9", "--dry-run") == (code, "", err)


def test_classic_group_active_refuses_execute_naming_members_then_resets_when_empty(broker):
    consumers = [FleetConsumer(broker.bootstrap, "classic", [TOPIC], i, session_timeout_ms=2000) for i in ("c-0", "c-1")]
    try:
        assert wait_settled(lambda: broker.group("classic"), consumers, PARTITIONS, 30)
        assert wait_until(lambda: len(committed(broker, "classic")) == PARTITIONS, 30)
        code, out, err = run(broker, "reset-offsets", "classic", "--instance-id", "c-0", "--to-earliest", "-o", "json")
        assert code == 0, err
        owned = sorted(p for _, p in consumers[0].assignment)
        assert sorted(r["partition"] for r in json.loads(out)["offsets"]) == owned
        assert json.loads(out)["assignment_source"] == [{"instance_id": "c-0", "source": "current"}]
        # the plan says now that --execute will be refused, and what makes the group Empty
        code, _, err = run(broker, "reset-offsets", "classic", "--all-topics", "--to-earliest")
        assert code == 0, err
        (closing,) = [line for line in err.splitlines() if line.startswith("group classic")]
        assert closing.startswith("group classic (Stable): plan only, nothing committed; --execute is refused until "
                                  "the group is Empty: stop its members first ("), closing
        assert "add --execute" not in closing and "c-0" in closing and "c-1" in closing
        assert "then wait (kgroup wait classic --state Empty) or remove them, as the group keeps static members " \
               "until their session times out (kgroup remove-members classic --instance-id c-" in closing
        code, _, err = run(broker, "reset-offsets", "classic", "--all-topics", "--to-earliest", "--execute")
        assert code == 1 and "not Empty or Dead" in err and "c-0" in err and "c-1" in err
        dry = run(broker, "delete-offsets", "classic", "--topic", TOPIC, "-o", "json", "--dry-run")
        code, out, err = run(broker, "delete-offsets", "classic", "--topic", TOPIC, "-o", "json")
        assert code == 1 and {r["error"] for r in json.loads(out)} == {"GROUP_SUBSCRIBED_TO_TOPIC"}
        assert dry == (code, out, err)
        code, out, _ = run(broker, "delete", "classic", "--dry-run", "-o", "json")
        assert code == 1 and json.loads(out)[0]["error"] == "NON_EMPTY_GROUP"
        code, out, err = run(broker, "delete", "classic", "-o", "json")
        assert code == 1 and json.loads(out)[0]["error"] == "NON_EMPTY_GROUP"
        assert err == "kgroup delete: group 'classic': NON_EMPTY_GROUP\n"     # an empty name reads '' too
    finally:
        stop_all(consumers)
    assert wait_until(lambda: broker.group("classic").state == "Empty", 30)
    # the members are gone: --instance-id reads their last assignment from __consumer_offsets
    code, out, err = run(broker, "reset-offsets", "classic", "--instance-id", "c-0", "--to-offset", "1",
                         "--execute", "-o", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert sorted(r["partition"] for r in doc["offsets"]) == owned and doc["executed"] is True
    (source,) = doc["assignment_source"]
    assert source["source"] == "last" and source["log"].startswith("__consumer_offsets-"), source
    assert {p: o for (_, p), o in committed(broker, "classic").items() if o == 1} == dict.fromkeys(owned, 1)
    code, _, err = run(broker, "reset-offsets", "classic", "--instance-id", "c-1", "--to-offset", "1",
                       "-o", "table")
    assert code == 0 and "instance c-1: partitions from the group's last assignment (__consumer_offsets-" in err
    code, _, err = run(broker, "reset-offsets", "classic", "--instance-id", "c-7", "--to-offset", "1")
    assert code == 2 and "unknown --instance-id c-7" in err and len(err.strip().splitlines()) == 1, err
    code, _, err = run(broker, "reset-offsets", "classic", "--all-topics", "--to-earliest", "--execute")
    assert code == 0, err
    assert set(committed(broker, "classic").values()) == {0}
    code, out, err = run(broker, "delete-offsets", "classic", "--topic", f"{TOPIC}:0", "-o", "json")
    assert code == 0 and json.loads(out) == [{"topic": TOPIC, "partition": 0, "error": None}], err
    assert (TOPIC, 0) not in committed(broker, "classic")
    # a dry run says what would happen: classic would be deleted, and was not
    code, out, err = run(broker, "delete", "classic", "no-such-group", "--dry-run", "-o", "json")
    assert code == 3, err
    assert [(r["group"], r["deleted"], r["would_delete"], r["error"]) for r in json.loads(out)] == [
        ("classic", False, True, None), ("no-such-group", False, False, "GROUP_ID_NOT_FOUND")]
    code, out, _ = run(broker, "delete", "classic", "no-such-group", "--dry-run", "-o", "table")
    assert [line.split() for line in out.splitlines()] == [
        ["GROUP", "STATE", "WOULD-DELETE", "ERROR"], ["classic", "Empty", "yes", "-"],
        ["no-such-group", "Dead", "no", "GROUP_ID_NOT_FOUND"]]
    code, out, _ = run(broker, "delete", "classic", "--dry-run", "-o", "csv")
    assert (code, out.splitlines()) == (0, ["group,state,deleted,error,would_delete", "classic,Empty,false,,true"])
    code, out, err = run(broker, "delete", "classic", "no-such-group", "-o", "json")
    assert code == 3, err
    assert [(r["group"], r["deleted"], r["error"]) for r in json.loads(out)] == [
        ("classic", True, None), ("no-such-group", False, "GROUP_ID_NOT_FOUND")]


def test_consumer_protocol_group_active_then_empty(broker):
    from confluent_kafka import Consumer

    consumer = Consumer(consumer_config(broker, "k-0", group_id="kip848"))
    consumer.subscribe([TOPIC])
    try:
        poll_until([consumer], lambda: len(consumer.assignment()) == PARTITIONS)
        code, out, err = run(broker, "reset-offsets", "kip848", "--topic", TOPIC, "--to-offset", "2", "-o", "json")
        assert code == 0, err
        assert [r["new"] for r in json.loads(out)["offsets"]] == [2] * PARTITIONS
        code, out, err = run(broker, "reset-offsets", "kip848", "--instance-id", "k-0", "--to-latest", "-o", "json")
        assert code == 0 and len(json.loads(out)["offsets"]) == PARTITIONS, err
        code, _, err = run(broker, "reset-offsets", "kip848", "--topic", TOPIC, "--to-offset", "2", "--execute")
        assert code == 1 and "not Empty or Dead" in err and "k-0" in err
        refusal_steps = err.split("no consumer is in the group; ", 1)[1].strip()
        code, _, err = run(broker, "reset-offsets", "kip848", "--topic", TOPIC, "--to-offset", "2")
        assert code == 0 and err.endswith(f"plan only, nothing committed; --execute is refused until the group is "
                                          f"Empty: {refusal_steps}\n"), err    # the refusal's own words
        assert "kgroup wait kip848 --state Empty" in refusal_steps
        code, out, _ = run(broker, "delete", "kip848", "--dry-run", "-o", "json")
        assert code == 1 and json.loads(out)[0]["error"] == "NON_EMPTY_GROUP"
        dry = run(broker, "delete-offsets", "kip848", "--topic", f"{TOPIC}:0", "--topic", "other", "-o", "json",
                  "--dry-run")
        code, out, err = run(broker, "delete-offsets", "kip848", "--topic", f"{TOPIC}:0", "--topic", "other",
                             "-o", "json")
        assert dry == (code, out, err)
        assert code == 3 and json.loads(out) == [
            {"topic": TOPIC, "partition": 0, "error": "GROUP_SUBSCRIBED_TO_TOPIC"},
            {"topic": "other", "partition": 0, "error": None}]
    finally:
        consumer.close()
    assert wait_until(lambda: broker.group("kip848").state == "Empty", 30)
    code, out, err = run(broker, "reset-offsets", "kip848", "--instance-id", "k-0", "--to-offset", "3", "-o", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert [(r["topic"], r["partition"], r["new"]) for r in doc["offsets"]] == [
        (TOPIC, p, 3) for p in range(PARTITIONS)]
    assert doc["assignment_source"][0]["source"] == "last", doc
    code, _, err = run(broker, "reset-offsets", "kip848", "--topic", TOPIC, "--to-offset", "2", "--execute")
    assert code == 0, err
    assert committed(broker, "kip848") == {(TOPIC, p): 2 for p in range(PARTITIONS)}
    code, out, err = run(broker, "delete", "kip848", "--dry-run", "-o", "json")
    assert code == 0 and json.loads(out)[0]["error"] is None, err
    code, _, err = run(broker, "delete", "kip848")
    assert code == 0, err
    assert broker.group("kip848") is None
