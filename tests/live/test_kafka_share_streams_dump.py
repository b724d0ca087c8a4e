"""Share and streams groups offline, from the segments the real Kafka 4.4 broker wrote: a Kafka
Streams 4.4 application (group.protocol=streams, one static and one dynamic instance) and two
KafkaShareConsumer 4.4 members run on the `kafka` broker; then a copy of its ``__consumer_offsets``
partition (both groups hash to it) and of its ``__share_group_state`` partitions is

* decoded by ``kgroup decode-offsets -o dump-log`` exactly as ``kafka-dump-log --offsets-decoder`` /
  ``--share-group-state-decoder`` prints it, and
* described by ``kgroup describe --from-dump`` / listed by ``list --from-dump`` as the live ``describe``
  / ``list`` show them, for every field a dump can know (no assignor, no lag, no log end offsets).

``KGROUP_SAVE_KAFKA44_BROKER_VECTORS=DIR`` copies the segments and Kafka's text into DIR (how
tests/vectors/kafka-4.4/broker/ was made; tests/decode/test_kafka44_broker_segments.py reads them).
"""

from __future__ import annotations

import os
import pathlib
import shutil

import pytest

from helpers.kafka_apps import ShareMember, StreamsInstance, close_all, share_from_earliest
from helpers.kafka_groups import create_topic, java_classpath, produce, wait_for
from helpers.kafka_tables import kgroup, kgroup_json

APP, STREAMS_IN, STREAMS_OUT = "sd-app", "sd-in", "sd-out"
SHARE_GROUP, SHARE_TOPIC = "sd-share-50", "sd-share-t"   # both groups' coordinator: __consumer_offsets-35
OFFSETS_PARTITION = 35
PARTITIONS, RECORDS = 2, 5


def _partition_of(group: str) -> int:
    from kgroup.records.partitioning import partition_for

    return partition_for(group, 50)


@pytest.fixture(scope="module")
def apps(kafka, tmp_path_factory):
    assert _partition_of(APP) == _partition_of(SHARE_GROUP) == OFFSETS_PARTITION
    root = tmp_path_factory.mktemp("share-streams-dump")
    cp = java_classpath(tmp_path_factory.getbasetemp())
    for topic, partitions in ((STREAMS_IN, PARTITIONS), (STREAMS_OUT, 1), (SHARE_TOPIC, PARTITIONS)):
        create_topic(kafka.bootstrap, topic, partitions)
    share_from_earliest(kafka, SHARE_GROUP)
    streams = [StreamsInstance(cp, kafka.bootstrap, APP, STREAMS_IN, STREAMS_OUT, root / f"state-{name}",
                               instance_id=name if name != "dynamic" else None, log=root / f"{name}.log",
                               **{"commit.interval.ms": "500"})
               for name in ("s-0", "dynamic")]
    share = [ShareMember(cp, kafka.bootstrap, SHARE_GROUP, [SHARE_TOPIC], f"sd-share-{i}", log=root / f"share-{i}.log")
             for i in range(2)]
    try:
        for app in streams + share:
            app.wait_ready(60)
        produce(kafka.bootstrap, STREAMS_IN, {p: RECORDS for p in range(PARTITIONS)})
        produce(kafka.bootstrap, SHARE_TOPIC, {p: RECORDS for p in range(PARTITIONS)})
        wait_for(lambda: sum(m.acked for m in share) >= PARTITIONS * RECORDS, 60, "every share record acknowledged")
        wait_for(lambda: sum(s.counted for s in streams) >= PARTITIONS * RECORDS, 60, "every record counted")
        yield streams, share
    finally:
        close_all(streams + share)


def _copy_log_dir(kafka, into: pathlib.Path) -> pathlib.Path:
    """The broker's __consumer_offsets-35 and non-empty __share_group_state partitions, and the
    partition.metadata of the groups' topics (which name topic ids), copied into a log dir."""
    data = kafka.nodes[0].data
    if into.exists():
        shutil.rmtree(into)
    wanted = [data / f"__consumer_offsets-{OFFSETS_PARTITION}"]
    wanted += [d for d in sorted(data.glob("__share_group_state-*")) if any(f.stat().st_size for f in d.glob("*.log"))]
    for d in wanted:
        (into / d.name).mkdir(parents=True)
        for f in d.glob("*.log"):
            shutil.copyfile(f, into / d.name / f.name)
    for topic in (STREAMS_IN, SHARE_TOPIC):
        for d in data.glob(f"{topic}-*"):
            (into / d.name).mkdir(parents=True)
            shutil.copyfile(d / "partition.metadata", into / d.name / "partition.metadata")
    return into


def _segments(log_dir: pathlib.Path, prefix: str) -> list[pathlib.Path]:
    return [f for d in sorted(log_dir.glob(f"{prefix}-*")) for f in sorted(d.glob("*.log"))]


def test_dump_log_text_equals_kafka_dump_log(kafka, apps, tmp_path):
    log_dir = _copy_log_dir(kafka, tmp_path / "logs")
    for prefix, decoder in (("__consumer_offsets", "--offsets-decoder"),
                            ("__share_group_state", "--share-group-state-decoder")):
        segments = _segments(log_dir, prefix)
        assert segments, prefix
        theirs = kafka.tool("kafka-dump-log", decoder, "--files", ",".join(map(str, segments))).stdout
        ours = "".join(kgroup("decode-offsets", "-o", "dump-log", str(s)).stdout for s in segments)
        assert ours == theirs
    text = "".join(kgroup("decode-offsets", "-o", "dump-log", str(s)).stdout
                   for s in _segments(log_dir, "__consumer_offsets"))
    for record_type in (10, 11, 12, 13, 14, 15, 17, 19, 20, 21, 22, 23):   # every share and streams type
        assert f'"type":"{record_type}"' in text, record_type

    save = os.environ.get("KGROUP_SAVE_KAFKA44_BROKER_VECTORS")
    if save:        # a partition directory per segment, Kafka's text beside it (paths relative to DIR)
        out = pathlib.Path(save).resolve()
        for prefix, decoder in (("__consumer_offsets", "--offsets-decoder"),
                                ("__share_group_state", "--share-group-state-decoder")):
            for s in _segments(log_dir, prefix)[:1]:
                (out / s.parent.name).mkdir(parents=True, exist_ok=True)
                shutil.copyfile(s, out / s.parent.name / s.name)
                text = kafka.tool("kafka-dump-log", decoder, "--files", str(out / s.parent.name / s.name)).stdout
                (out / f"{s.parent.name}.dump-log.txt").write_text(text.replace(f"{out}/", ""))


def _share_fields(view: dict) -> dict:
    """What a dump knows of a share group as describe shows it (no assignor, no lag)."""
    return {"state": view["state"], "type": view["type"], "protocol_type": view["protocol_type"],
            "group_epoch": view["group_epoch"], "assignment_epoch": view["assignment_epoch"],
            "members": sorted((m["member_id"], m["client_id"], m["client_host"], m["member_epoch"], m["rack_id"],
                               tuple(m["subscribed_topics"]), str(m["assignment"])) for m in view["members"]),
            "offsets": sorted((o["topic"], o["partition"], o.get("start_offset"), o["leader_epoch"])
                              for o in view["offsets"])}


def _streams_fields(view: dict) -> dict:
    """What a dump knows of a streams group as describe shows it (no assignor, no log end, no lag)."""
    member_keys = ("member_id", "group_instance_id", "client_id", "client_host", "member_epoch", "process_id",
                   "rack_id", "endpoint", "client_tags", "active_tasks", "standby_tasks", "warmup_tasks",
                   "target_active_tasks", "target_standby_tasks", "target_warmup_tasks")
    return {"state": view["state"], "type": view["type"], "group_epoch": view["group_epoch"],
            "assignment_epoch": view["assignment_epoch"], "topology_epoch": view["topology_epoch"],
            "subtopologies": view["subtopologies"],
            "members": sorted(str([m[k] for k in member_keys]) for m in view["members"]),
            "offsets": sorted((o["topic"], o["partition"], o["committed"], o["member_id"]) for o in view["offsets"])}


def test_describe_and_list_from_dump_agree_with_live(kafka, apps, tmp_path):
    b = kafka.bootstrap

    def agreed():
        live = {v["group"]: v for v in kgroup_json("describe", "--bootstrap-server", b, APP, SHARE_GROUP)}
        log_dir = _copy_log_dir(kafka, tmp_path / "logs")
        offline = {v["group"]: v for v in kgroup_json("describe", "--from-dump", str(log_dir), APP, SHARE_GROUP)}
        pairs = [(_share_fields(live[SHARE_GROUP]), _share_fields(offline[SHARE_GROUP])),
                 (_streams_fields(live[APP]), _streams_fields(offline[APP]))]
        last[:] = pairs
        return (live, offline, log_dir) if all(a == b for a, b in pairs) else None

    last: list = []
    try:
        live, offline, log_dir = wait_for(agreed, 60, "describe --from-dump as live describe", interval=1)
    except BaseException:
        print("last live/offline pairs:", last)
        raise
    assert live[SHARE_GROUP]["state"] == "Stable" and len(offline[SHARE_GROUP]["members"]) == 2
    assert offline[APP]["state"] == "Stable" and len(offline[APP]["members"]) == 2
    assert offline[APP]["subtopologies"] and offline[APP]["topology_epoch"] is not None

    listed = {g["group"]: g for g in kgroup_json("list", "--from-dump", str(log_dir))}
    live_listed = {g["group"]: g for g in kgroup_json("list", "--bootstrap-server", b)}
    for group in (APP, SHARE_GROUP):
        assert {k: listed[group][k] for k in ("state", "type", "protocol_type")} == \
            {k: live_listed[group][k] for k in ("state", "type", "protocol_type")}

    state = kgroup_json("decode-offsets", "--view", "state", *map(str, sorted(log_dir.glob("__*"))))
    share_view = next(g for g in state["share_groups"] if g["group"] == SHARE_GROUP)
    assert _share_fields(share_view) == _share_fields(offline[SHARE_GROUP])
    streams_view = next(g for g in state["streams_groups"] if g["group"] == APP)
    assert _streams_fields(streams_view) == _streams_fields(offline[APP])
    partitions = [p for p in state["share_partitions"] if p["group"] == SHARE_GROUP]
    assert sorted((p["topic"], p["partition"]) for p in partitions) == [(SHARE_TOPIC, p) for p in range(PARTITIONS)]
    for p in partitions:    # every record acknowledged (delivery state 2) once, as the members did
        assert p["delivery_complete_count"] == RECORDS
        assert [(b["first_offset"], b["last_offset"], b["delivery_state"], b["delivery_count"])
                for b in p["batches"] if b["first_offset"] >= p["start_offset"]] == [(0, RECORDS - 1, 2, 1)] \
            or p["start_offset"] >= RECORDS, p
