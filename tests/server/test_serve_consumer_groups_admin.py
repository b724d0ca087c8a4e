"""Admin operations on KIP-848 consumer groups in kgroup serve with real clients: ``kgroup describe``
and ``kgroup remove-members`` (ConsumerGroupDescribe, LeaveGroup v5 removal as Kafka 4.0 allows it)
on librdkafka consumers; deleting an Empty group tombstones every record it had, so a server
restarted on its --log-dir and ``kgroup decode-offsets --view state`` no longer show it."""

from __future__ import annotations

import json
import subprocess

from helpers.rdkafka_groups import broker  # noqa: F401 - the fixture
from helpers.rdkafka_groups import (FAST_CONSUMER_GROUPS, PARTITIONS, TOPIC, consumer_config,
                                    each_partition_once, group_settled, new_consumer, owned, poll_until,
                                    produce)

from kgroup.server.harness import PYTHON, ROOT, ThreadedBroker


def _kgroup(*args):
    return subprocess.run([PYTHON, "-m", "kgroup.commands.cli", *args], capture_output=True, text=True,
                          timeout=60, cwd=str(ROOT))


def test_kgroup_describe_and_remove_members_on_a_consumer_group(broker):
    produce(broker, 60)                 # 10 messages per partition
    consumers = [new_consumer(broker, f"s{n}") for n in range(2)]
    try:
        poll_until(consumers, lambda: each_partition_once(consumers) and group_settled(broker, "cg", 2))
        consumers[0].commit(offsets=[_tp(p, 4) for p in sorted(owned(consumers[0]))], asynchronous=False)
        result = _kgroup("describe", "cg", "--offsets", "--bootstrap-server", broker.bootstrap, "-o", "json")
        assert result.returncode == 0, result.stderr
        [view] = json.loads(result.stdout)
        assert (view["state"], view["protocol_type"], view["protocol"]) == ("Stable", "consumer", "uniform")
        assert [m["group_instance_id"] for m in view["members"]] == ["s0", "s1"]
        assert sorted(p for m in view["members"] for a in m["assignment"] for p in a["partitions"]) == \
            list(range(PARTITIONS))
        lag = {row["partition"]: (row["group_instance_id"], row["lag"]) for row in view["offsets"]}
        # lag per owned partition: 10 - 4 where s0 committed, unknown where nothing was committed
        assert lag == {p: ("s0", 6) if p in owned(consumers[0]) else ("s1", None) for p in range(PARTITIONS)}
        epoch = broker.group("cg").group_epoch
        owned_before_close = owned(consumers[0])
        consumers.pop(0).close()        # stopped first: a static member's leave keeps its partitions
        assert len(broker.group("cg").members) == 2
        result = _kgroup("remove-members", "cg", "--instance-id", "s0,nope", "--wait", "--bootstrap-server",
                         broker.bootstrap, "-o", "json")
        assert result.returncode == 3, result.stderr    # one removed, one unknown
        report = json.loads(result.stdout)
        assert [(r["group_instance_id"], r["error"]) for r in report["results"]] == [
            ("s0", None), ("nope", "UNKNOWN_MEMBER_ID")]
        # --wait: until the group is Stable without s0 and held; s0's partitions went to s1
        after = report["wait"]["after"]
        assert (after["state"], after["members"]) == ("Stable", ["s1"]) and after["group_epoch"] > epoch
        assert {(m["partition"], m["from"], m["to"]) for m in report["wait"]["partitions_moved"]} == \
            {(p, "s0", "s1") for p in owned_before_close}
        poll_until(consumers, lambda: owned(consumers[0]) == set(range(PARTITIONS))
                   and group_settled(broker, "cg", 1))
        assert broker.group("cg").group_epoch > epoch
    finally:
        for consumer in consumers:
            consumer.close()


def _state_rows(log_dir, group_id) -> list:
    """decode-offsets --view state of the group's __consumer_offsets partition: its rows."""
    from kgroup.records import partition_for

    partition = log_dir / f"__consumer_offsets-{partition_for(group_id, 50)}"
    result = _kgroup("decode-offsets", "--view", "state", "-o", "jsonl", str(partition))
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    return [r for r in rows if group_id in (r.get("group"), r.get("key", {}).get("groupId"))]


def test_a_deleted_consumer_group_is_gone_after_a_restart_and_in_the_compacted_state(tmp_path):
    from confluent_kafka import Consumer
    from confluent_kafka.admin import AdminClient

    log_dir = tmp_path / "logs"
    b = ThreadedBroker(log_dir, topics=[(TOPIC, PARTITIONS)], config=FAST_CONSUMER_GROUPS)
    try:
        consumer = Consumer(consumer_config(b, None, group_id="doomed"))
        consumer.subscribe(["^ev.*"])          # a regex too: its type-16 record must go as well
        try:
            poll_until([consumer], lambda: len(consumer.assignment()) == PARTITIONS)
            consumer.commit(offsets=[_tp(p, 3) for p in range(PARTITIONS)], asynchronous=False)
        finally:
            consumer.close()                   # a dynamic member leaves: the group is Empty
        rows = _state_rows(log_dir, "doomed")
        assert {r["kind"] for r in rows} == {"committed_offset", "record"}
        # the Empty group: its epoch (with the metadata hash: no type-4 record since Kafka 4.1) and target epoch
        assert {r["key_version"] for r in rows if r["kind"] == "record"} == {3, 6}
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.delete_consumer_groups(["doomed"])["doomed"].result(10)
        assert b.group("doomed") is None and b.committed_offsets("doomed") == {}
    finally:
        b.stop()
    assert _state_rows(log_dir, "doomed") == []
    b = ThreadedBroker(log_dir, config=FAST_CONSUMER_GROUPS)
    try:
        assert b.group("doomed") is None and b.committed_offsets("doomed") == {}
        listed = AdminClient({"bootstrap.servers": b.bootstrap}).list_consumer_groups().result(10)
        assert "doomed" not in {g.group_id for g in listed.valid}
    finally:
        b.stop()


def _tp(partition, offset):
    from confluent_kafka import TopicPartition

    return TopicPartition(TOPIC, partition, offset)
