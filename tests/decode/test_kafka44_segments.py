"""Segments the real Kafka 4.4 wrote (tests/vectors/kafka-4.4, made by
tests/live/test_kafka_tools_dump_log.py): kgroup's dump-log text equals what kafka-dump-log printed
for them, byte for byte, and ``--view state`` gives the groups as the broker left them. No Java."""

import json

import pytest
from click.testing import CliRunner

from helpers import VECTORS
from kgroup.commands.cli import cli

DIR = VECTORS / "kafka-4.4"
PARTITIONS = sorted(p.name for p in DIR.iterdir() if p.is_dir() and p.name.startswith("__"))  # not serialized/


def _run(monkeypatch, *args):
    monkeypatch.chdir(DIR)           # Kafka's text names the segments relative to DIR
    result = CliRunner().invoke(cli, ["decode-offsets", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def test_the_vectors_are_there():
    assert PARTITIONS == ["__consumer_offsets-2", "__consumer_offsets-25", "__consumer_offsets-27",
                          "__consumer_offsets-39"]


@pytest.mark.parametrize("partition", PARTITIONS)
def test_dump_log_text_is_kafkas(partition, monkeypatch):
    expected = (DIR / f"{partition}.dump-log.txt").read_text()
    assert _run(monkeypatch, "-o", "dump-log", f"{partition}/00000000000000000000.log") == expected


def test_every_record_type_kafka_4_4_wrote_is_decoded(monkeypatch):
    text = "".join((DIR / f"{p}.dump-log.txt").read_text() for p in PARTITIONS)
    for needle in ('"type":"1"', '"type":"2"', '"type":"3"', '"type":"5"', '"type":"6"', '"type":"7"',
                   '"type":"8"', '"metadataHash":', '"assignmentTimestamp":', '"assignmentEpochs":',
                   '"topicId":', "payload: <DELETE>", "endTxnMarker: COMMIT", "endTxnMarker: ABORT"):
        assert needle in text, needle
    rows = [json.loads(line) for line in _run(monkeypatch, "-o", "jsonl", *PARTITIONS).splitlines()]
    assert not [r for r in rows if r["type"] == "error"]
    assert {r["type"] for r in rows} >= {"offset_commit", "group_metadata", "consumer_group_metadata",
                                         "consumer_group_member_metadata", "consumer_group_target_assignment_member",
                                         "consumer_group_target_assignment_metadata",
                                         "consumer_group_current_member_assignment"}


def test_state_is_the_groups_as_kafka_left_them(monkeypatch):
    state = json.loads(_run(monkeypatch, "--view", "state", "-o", "json", *PARTITIONS))
    committed = {(o["group"], o["topic"], o["partition"]): o["offset"] for o in state["committed_offsets"]}
    assert committed == {
        ("dl-classic", "dl-t", 0): 4, ("dl-classic", "dl-t", 1): 3,        # partition 2's offset deleted
        ("dl-consumer", "dl-t", 0): 4, ("dl-consumer", "dl-t", 1): 3, ("dl-consumer", "dl-t", 2): 2,
        ("dl-txn", "dl-t", 0): 1, ("dl-txn", "dl-t", 1): 2}               # the aborted transaction: nothing
    assert state["open_transactions"] == []
    groups = {(r["type"], json.dumps(r["key"])): r["value"] for r in state["records"]}
    assert groups[("group_metadata", '{"group": "dl-classic"}')]["members"] == []       # Empty, kept
    assert groups[("consumer_group_metadata", '{"groupId": "dl-consumer"}')]["epoch"] > 0
    assert not any("dl-deleted" in k for _, k in groups)                                 # deleted: gone
