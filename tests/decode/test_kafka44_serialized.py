"""Every record type of Kafka 4.4's ``__consumer_offsets`` (the share- and streams-group ones among them,
a member's null ``assignmentEpochs`` too) and the share
coordinator's ``__share_group_state`` records, serialized by Kafka's own code
(tests/vectors/kafka-4.4/serialized, made by tests/live/test_kafka_serialized_vectors.py): kgroup's
dump-log text equals kafka-dump-log's (``--offsets-decoder`` / ``--share-group-state-decoder``) byte
for byte, and the JSON rows carry the fields Kafka printed. No Java."""

import json
import re

import pytest
from click.testing import CliRunner

from helpers import VECTORS
from kgroup.commands.cli import cli

DIR = VECTORS / "kafka-4.4" / "serialized"
PARTITIONS = ["__consumer_offsets-0", "__share_group_state-0"]
SEGMENT = "00000000000000000000.log"
_RECORD = re.compile(r"^\| offset: (\d+) .* key: (\{.*\}) payload: (.*)$")


def _run(monkeypatch, *args):
    monkeypatch.chdir(DIR)           # Kafka's text names the segments relative to DIR
    result = CliRunner().invoke(cli, ["decode-offsets", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def _kafka_records(partition):
    """offset -> (key JSON, payload JSON or None for <DELETE>) as kafka-dump-log printed them."""
    out = {}
    for line in (DIR / f"{partition}.dump-log.txt").read_text().splitlines():
        match = _RECORD.match(line)
        if match:
            payload = match.group(3)
            out[int(match.group(1))] = (json.loads(match.group(2)),
                                        None if payload == "<DELETE>" else json.loads(payload))
    return out


@pytest.mark.parametrize("partition", PARTITIONS)
def test_dump_log_text_is_kafkas(partition, monkeypatch):
    expected = (DIR / f"{partition}.dump-log.txt").read_text()
    assert _run(monkeypatch, "-o", "dump-log", f"{partition}/{SEGMENT}") == expected


def test_every_record_type_of_kafka_4_4_is_there():
    types = {key["type"] for key, _ in _kafka_records("__consumer_offsets-0").values()}
    assert types == {str(t) for t in range(24) if t not in (9, 18)}   # 9 and 18 are gone in Kafka 4.4
    assert {key["type"] for key, _ in _kafka_records("__share_group_state-0").values()} == {"0", "1"}


@pytest.mark.parametrize("partition,family,names", [
    ("__consumer_offsets-0", "consumer", {"17": "streams_group_metadata", "19": "streams_group_member_metadata",
                                          "20": "streams_group_target_assignment_metadata",
                                          "21": "streams_group_target_assignment_member",
                                          "22": "streams_group_current_member_assignment",
                                          "23": "streams_group_topology"}),
    ("__share_group_state-0", "share-state", {"0": "share_snapshot", "1": "share_update"})])
def test_json_rows_carry_kafkas_fields(partition, family, names, monkeypatch):
    rows = {r["offset"]: r for r in map(json.loads, _run(monkeypatch, "-o", "jsonl", partition).splitlines())}
    kafka = _kafka_records(partition)
    assert sorted(rows) == sorted(kafka)
    for offset, (key, payload) in kafka.items():
        row = rows[offset]
        assert row["key_version"] == int(key["type"]) and row["key"] == key["data"], offset
        if key["type"] in names:
            assert row["type"] == names[key["type"]]
        if payload is None:
            assert row["value"] is None
        else:
            assert (row["value_version"], row["value"]) == (int(payload["version"]), payload["data"]), offset


def test_share_state_family_is_detected_or_given(monkeypatch, tmp_path):
    table = _run(monkeypatch, "-o", "table", "__share_group_state-0")
    assert "share_snapshot" in table and "share_update" in table
    assert "AAAAAAAACj1wo9cKPWcAmQ-1009" in table            # KEY: the share-partition's topic id and partition
    loose = tmp_path / "segment.log"                         # nothing in the path names the topic
    loose.write_bytes((DIR / "__share_group_state-0" / SEGMENT).read_bytes())
    given = CliRunner().invoke(cli, ["decode-offsets", "--family", "share-state", "-o", "jsonl", "--type",
                                     "share_update", str(loose)], catch_exceptions=False)
    assert given.exit_code == 0, given.stderr
    assert [json.loads(line)["type"] for line in given.stdout.splitlines()] == ["share_update", "share_update"]


def test_share_state_records_are_no_offset_commits(monkeypatch):
    """Key types 0 and 1 of __share_group_state are ShareSnapshot / ShareUpdate, not offset commits."""
    state = json.loads(_run(monkeypatch, "--view", "state", "-o", "json", "--until-offset", "0",
                            "__share_group_state-0"))
    assert state["committed_offsets"] == []
    assert [r["type"] for r in state["records"]] == ["share_snapshot"]


def test_from_dump_builds_no_group_from_share_state(tmp_path):
    """list --from-dump over a log directory holding __share_group_state-N: its ShareSnapshot /
    ShareUpdate keys (types 0-1) are not offset commits and make no group."""
    import shutil

    shutil.copytree(DIR / "__share_group_state-0", tmp_path / "__share_group_state-0")
    shutil.copytree(VECTORS / "kafka-4.4" / "__consumer_offsets-25", tmp_path / "__consumer_offsets-25")
    result = CliRunner().invoke(cli, ["list", "--from-dump", str(tmp_path), "-o", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    groups = {g["group"] for g in json.loads(result.stdout)}
    assert "dl-classic" in groups and not groups & {"groupId-0-grüße", "groupId-7"}
