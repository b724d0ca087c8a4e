"""Kafka 4.4's own __consumer_offsets, decoded by kgroup, against what kgroup's coordinator writes:
the KIP-1101 metadata hash of a consumer group is the value kgroup computes for the same topics, and
the record types and versions a consumer-protocol group and its commits leave are the ones
`kgroup serve` writes for the same group."""

from __future__ import annotations

import base64
import json
import uuid

from helpers.kafka_groups import RdkafkaMember, create_topic, kgroup, produce, wait_for

from kgroup.coordinator.runtime.metadata_hash import group_hash, topic_hash
from kgroup.server.harness import ThreadedBroker

TOPICS = {"mh-a": 3, "mh-b": 2}


def _topic_id(kafka, topic: str) -> uuid.UUID:
    described = kafka.tool("kafka-topics", "--bootstrap-server", kafka.bootstrap, "--describe", "--topic", topic)
    text = described.stdout.split("TopicId:")[1].split()[0]
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


def _records(bootstrap: str, group: str) -> list[dict]:
    rows = kgroup("decode-offsets", "--bootstrap-server", bootstrap, "--group", group, "-o", "jsonl")
    assert rows.exit_code == 0, rows.stderr
    return [json.loads(line) for line in rows.stdout.splitlines()]


def _run_group(bootstrap: str, group: str) -> list[dict]:
    """A consumer-protocol member subscribed to both topics, assigned and committing."""
    for topic, partitions in TOPICS.items():
        produce(bootstrap, topic, {p: 2 for p in range(partitions)})
    member = RdkafkaMember(bootstrap, group, list(TOPICS), "mh-0")
    try:
        wait_for(lambda: len(member.assignment) == sum(TOPICS.values()), 60, "mh-0 assigned")
        wait_for(lambda: any(r["type"] == "offset_commit" for r in _records(bootstrap, group)), 60,
                 "a commit")
    finally:
        member.close()
    return _records(bootstrap, group)


def _shapes(records: list[dict]) -> set:
    """(type, value version or None, value fields) of each record: what must match between brokers."""
    return {(r["type"], r.get("value_version"), tuple(sorted(r["value"] or ()))) for r in records}


def test_kafkas_metadata_hash_is_kgroups_and_serve_writes_the_same_record_versions(kafka, tmp_path):
    for topic, partitions in TOPICS.items():
        create_topic(kafka.bootstrap, topic, partitions)
    ids = {topic: _topic_id(kafka, topic) for topic in TOPICS}
    records = _run_group(kafka.bootstrap, "mh-g")

    hashes = [r["value"]["metadataHash"] for r in records
              if r["type"] == "consumer_group_metadata" and r["value"] is not None]
    expected = group_hash({t: topic_hash(ids[t], t, n) for t, n in TOPICS.items()})
    assert hashes and hashes[-1] == expected != 0
    assert "consumer_group_partition_metadata" not in {r["type"] for r in records}
    assignments = [r["value"] for r in records
                   if r["type"] == "consumer_group_current_member_assignment" and r["value"]]
    assert all(t["assignmentEpochs"] is not None and len(t["assignmentEpochs"]) == len(t["partitions"])
               for a in assignments for t in a["assignedPartitions"])
    commits = [r for r in records if r["type"] == "offset_commit" and r["value"] is not None]
    assert {r["value_version"] for r in commits} == {4}

    serve = ThreadedBroker(tmp_path / "serve", topics=list(TOPICS.items()))
    try:
        served = _run_group(serve.bootstrap, "mh-g")
    finally:
        serve.stop()
    assert _shapes(served) == _shapes(records)
