"""Segments the real Kafka 4.4 broker wrote for a share group and a streams group
(tests/vectors/kafka-4.4/broker, made by tests/live/test_kafka_share_streams_dump.py: a Kafka Streams
4.4 application with a static and a dynamic instance, two KafkaShareConsumer 4.4 members that
acknowledged every record): kgroup's dump-log text equals what kafka-dump-log printed for them, byte
for byte, and `describe --from-dump`, `list --from-dump` and `--view state` show the groups as the
broker held them. No Java."""

import json

import pytest
from click.testing import CliRunner

from helpers import VECTORS
from kgroup.commands.cli import cli

DIR = VECTORS / "kafka-4.4" / "broker"
PARTITIONS = sorted(p.name for p in DIR.iterdir() if p.is_dir())
APP, SHARE_GROUP = "sd-app", "sd-share-50"


def _run(monkeypatch, *args):
    monkeypatch.chdir(DIR)           # Kafka's text names the segments relative to DIR
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def test_the_vectors_are_there():
    assert [p.rsplit("-", 1)[0] for p in PARTITIONS] == ["__consumer_offsets", "__share_group_state"]


@pytest.mark.parametrize("partition", PARTITIONS)
def test_dump_log_text_is_kafkas(partition, monkeypatch):
    expected = (DIR / f"{partition}.dump-log.txt").read_text()
    assert _run(monkeypatch, "decode-offsets", "-o", "dump-log", f"{partition}/00000000000000000000.log") == expected


def test_every_share_and_streams_type_the_broker_wrote_is_there():
    text = "".join((DIR / f"{p}.dump-log.txt").read_text() for p in PARTITIONS)
    for record_type in (10, 11, 12, 13, 14, 15, 17, 19, 20, 21, 22, 23):
        assert f'"type":"{record_type}"' in text, record_type


def test_describe_from_dump_shows_the_groups_as_the_broker_held_them(monkeypatch):
    views = {v["group"]: v for v in json.loads(_run(monkeypatch, "describe", "--all-groups", "--from-dump", ".",
                                                    "-o", "json"))}
    assert sorted(views) == [APP, SHARE_GROUP]
    share = views[SHARE_GROUP]
    assert (share["type"], share["state"], share["group_epoch"], share["assignment_epoch"]) == ("share", "Stable", 4, 4)
    assert sorted((m["client_id"], m["member_epoch"], m["subscribed_topics"][0], str(m["assignment"]))
                  for m in share["members"]) == [
        ("sd-share-0", 4, "sd-share-t", "[{'topic': 'sd-share-t', 'partitions': [1]}]"),
        ("sd-share-1", 4, "sd-share-t", "[{'topic': 'sd-share-t', 'partitions': [0]}]")]
    # the one __share_group_state partition kept here holds partition 0's state
    assert [(o["topic"], o["partition"], o["start_offset"], o["leader_epoch"]) for o in share["offsets"]] == [
        ("sd-share-t", 0, 0, 0)]

    streams = views[APP]
    assert (streams["state"], streams["group_epoch"], streams["assignment_epoch"], streams["topology_epoch"]) == (
        "Stable", 4, 4, 0)
    assert [s["subtopology"] for s in streams["subtopologies"]] == ["0", "1"]
    assert streams["subtopologies"][1]["state_changelog_topics"] == ["sd-app-counts-changelog"]
    members = sorted(streams["members"], key=lambda m: m["client_id"])
    assert [m["group_instance_id"] for m in members] == [None, "s-0-1"]
    for m in members:       # caught up: each runs its target, an active task of both subtopologies
        assert m["active_tasks"] == m["target_active_tasks"] and sorted(m["active_tasks"]) == ["0", "1"]
        assert m["standby_tasks"] == m["target_standby_tasks"] and list(m["standby_tasks"]) == ["1"]
    owners = {(o["topic"], o["partition"]): o["member_id"] for o in streams["offsets"]}
    for m in members:
        for p in m["active_tasks"]["0"]:
            assert owners[("sd-in", p)] == m["member_id"]


def test_list_from_dump(monkeypatch):
    listed = json.loads(_run(monkeypatch, "list", "--from-dump", ".", "-o", "json"))
    assert [(g["group"], g["state"], g["type"], g["protocol_type"]) for g in listed] == [
        (APP, "Stable", "streams", "streams"), (SHARE_GROUP, "Stable", "share", "share")]


def test_state_view_replays_the_share_state(monkeypatch):
    doc = json.loads(_run(monkeypatch, "decode-offsets", "--view", "state", "-o", "json", *PARTITIONS))
    [p] = doc["share_partitions"]
    # the ShareSnapshot written at initialization (start offset -1), then the ShareUpdate that
    # acknowledged the partition's five records (delivery state 2, delivered once)
    assert (p["group"], p["topic"], p["partition"], p["start_offset"], p["state_epoch"], p["leader_epoch"],
            p["delivery_complete_count"], p["updates_since_snapshot"]) == (SHARE_GROUP, "sd-share-t", 0, 0, 2, 0, 5, 1)
    assert p["batches"] == [{"first_offset": 0, "last_offset": 4, "delivery_state": 2, "delivery_count": 1}]
    described = {v["group"]: v for v in json.loads(_run(monkeypatch, "describe", "--all-groups", "--from-dump", ".",
                                                         "-o", "json"))}
    assert {g["group"]: g for g in doc["share_groups"] + doc["streams_groups"]} == described
