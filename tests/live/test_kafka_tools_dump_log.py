"""``kgroup decode-offsets -o dump-log`` against ``kafka-dump-log --offsets-decoder``, byte for byte,
on the __consumer_offsets segments the real Kafka 4.4 wrote: a classic group and a KIP-848 consumer
group with static members (ConsumerGroupMetadata with its metadata hash, member metadata, target
assignment, current assignment with assignment epochs — no partition-metadata record since 4.1),
offset commits (with topic ids), an offset deletion and a group deletion (tombstones), and a
transactional producer's sendOffsetsToTransaction committed and aborted (control batches).

``KGROUP_SAVE_KAFKA44_VECTORS=DIR`` copies the segments and Kafka's text into DIR (how
tests/vectors/kafka-4.4/ was made).
"""

from __future__ import annotations

import os
import pathlib
import shutil

from helpers.kafka_groups import JavaMember, PythonMember, RdkafkaMember, close_all, create_topic, java_classpath, \
    produce, wait_for
from helpers.kafka_tables import kgroup, kgroup_json

T = "dl-t"
CLASSIC, CONSUMER, DELETED, TXN = "dl-classic", "dl-consumer", "dl-deleted", "dl-txn"


def _partition_of(group: str) -> int:
    from kgroup.records.partitioning import partition_for

    return partition_for(group, 50)


def _txn_commit(bootstrap: str, group: str, offsets: dict[int, int], commit: bool) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{group}-{commit}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(T, b"in-txn", partition=0)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    producer.send_offsets_to_transaction([TopicPartition(T, p, o) for p, o in offsets.items()],
                                         consumer.consumer_group_metadata(), 30)
    (producer.commit_transaction if commit else producer.abort_transaction)(30)
    consumer.close()


def _state(segments):
    return kgroup_json("decode-offsets", "--view", "state", *map(str, segments))


def test_dump_log_text_equals_kafka_dump_log(kafka, tmp_path_factory, tmp_path):
    b = kafka.bootstrap
    create_topic(b, T, 3)
    produce(b, T, {0: 4, 1: 3, 2: 2})
    cp = java_classpath(tmp_path_factory.getbasetemp())
    members = [PythonMember(b, CLASSIC, [T], "dlc-0"), PythonMember(b, DELETED, [T], "dld-0"),
               RdkafkaMember(b, CONSUMER, [T], "dlk-0"), JavaMember(cp, b, CONSUMER, [T], "dlk-1")]
    try:
        for m in members:
            wait_for(lambda: m.assignment, 60, f"{m.instance_id} assigned")
        wait_for(lambda: all(len(v["offsets"]) == 3 and all(o["committed"] == o["log_end"] for o in v["offsets"])
                             for v in kgroup_json("describe", "--bootstrap-server", b, "--offsets",
                                                  CLASSIC, CONSUMER, DELETED)), 60, "every offset committed")
    finally:
        close_all(members)
    wait_for(lambda: all(v["state"] == "Empty" for v in kgroup_json("describe", "--bootstrap-server", b,
                                                                    CLASSIC, DELETED, CONSUMER)),
             60, "groups Empty")       # kafka-python's static members leave at once: stop() unsubscribes
    kgroup("delete-offsets", "--bootstrap-server", b, CLASSIC, "--topic", f"{T}:2", "-o", "json")
    kgroup("delete", "--bootstrap-server", b, DELETED, "-o", "json")
    _txn_commit(b, TXN, {0: 1, 1: 2}, commit=True)
    _txn_commit(b, TXN, {0: 3, 2: 1}, commit=False)

    data = kafka.nodes[0].data
    partitions = sorted({_partition_of(g) for g in (CLASSIC, CONSUMER, DELETED, TXN)})
    segments = [s for p in partitions for s in sorted((data / f"__consumer_offsets-{p}").glob("*.log"))]

    def settled():
        state = _state(segments)
        committed = _offset_groups(state)
        if len(committed.get(TXN, {})) != 2 or len(committed.get(CLASSIC, {})) != 2:
            return None
        # the transaction coordinator writes the ABORT marker after abort_transaction returned
        text = "".join(kgroup("decode-offsets", "-o", "dump-log", str(s)).stdout for s in segments)
        return state if "endTxnMarker: ABORT" in text else None

    state = wait_for(settled, 30, "the records on disk")
    # Both read one copy: other tests' groups may share these partitions and write meanwhile.
    live, segments = segments, []
    for s in live:
        (tmp_path / s.parent.name).mkdir(exist_ok=True)
        segments.append(pathlib.Path(shutil.copy(s, tmp_path / s.parent.name / s.name)))
    files = ",".join(map(str, segments))
    with_data = kafka.tool("kafka-dump-log", "--offsets-decoder", "--print-data-log", "--files", files).stdout
    without = kafka.tool("kafka-dump-log", "--offsets-decoder", "--files", files).stdout
    ours = "".join(kgroup("decode-offsets", "-o", "dump-log", str(s)).stdout for s in segments)
    assert ours == with_data
    assert ours == without           # --offsets-decoder implies --print-data-log

    # Every record type Kafka 4.4 writes for these groups is there, decoded.
    for needle in ('"type":"1"', '"type":"2"', '"type":"3"', '"type":"5"', '"type":"6"', '"type":"7"',
                   '"type":"8"', '"metadataHash":', '"assignmentTimestamp":', '"assignmentEpochs":',
                   '"topicId":', "payload: <DELETE>", "endTxnMarker: COMMIT", "endTxnMarker: ABORT",
                   '"groupInstanceId":"dlc-0"', '"instanceId":"dlk-0"'):
        assert needle in ours, needle
    # no partition metadata written since Kafka 4.1 — only tombstones of it, when a consumer group that
    # shares this partition (another test's) is deleted
    assert [line for line in ours.splitlines()
            if '"type":"4"' in line and not line.endswith("payload: <DELETE>")] == []

    committed = _offset_groups(state)
    assert committed[TXN] == {(T, 0): 1, (T, 1): 2}        # the aborted transaction left nothing
    assert committed[CLASSIC] == {(T, 0): 4, (T, 1): 3}    # partition 2's offset deleted
    assert DELETED not in committed

    save = os.environ.get("KGROUP_SAVE_KAFKA44_VECTORS")
    if save:            # a partition directory per segment, Kafka's text beside it (paths relative to DIR)
        out = pathlib.Path(save).resolve()
        for s in segments:
            (out / s.parent.name).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(s, out / s.parent.name / s.name)
            text = kafka.tool("kafka-dump-log", "--offsets-decoder", "--files",
                              str(out / s.parent.name / s.name)).stdout
            (out / f"{s.parent.name}.dump-log.txt").write_text(text.replace(f"{out}/", ""))
        (out / "state.json").write_text(kgroup("decode-offsets", "--view", "state", "-o", "json",
                                               *(str(out / s.parent.name) for s in segments)).stdout)


def _offset_groups(state) -> dict:
    """group -> {(topic, partition): offset} of decode-offsets --view state."""
    found: dict = {}
    for o in state["committed_offsets"]:
        found.setdefault(o["group"], {})[(o["topic"], o["partition"])] = o["offset"]
    return found
