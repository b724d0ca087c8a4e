"""KIP-1101 (Kafka 4.1+): a consumer group's metadata hash replaces its partition-metadata record.

The hash values below were computed by hash4j 0.22.0 (the jar Kafka 4.4 ships) with the exact
calls of Kafka's Utils.computeTopicHash / computeGroupHash.
"""

from __future__ import annotations

import uuid

from helpers.consumer import BAR, FOO, TOPICS, assignment_of, heartbeat, new_coordinator

from kgroup.coordinator import GroupCoordinator
from kgroup.coordinator.consumer import records as rec
from kgroup.coordinator.runtime.metadata_hash import group_hash, topic_hash
from kgroup.records import decode_key, decode_value, encode_key, encode_value

JAVA_ID = uuid.UUID(int=(0x0123456789ABCDEF << 64) | 0xFEDCBA9876543210)


def test_topic_and_group_hashes_are_kafkas_byte_for_byte():
    with_racks = topic_hash(JAVA_ID, "orders", 3, racks=[(), ("r2", "r1"), ()])
    without = topic_hash(JAVA_ID, "orders", 3)
    assert with_racks == 974574817632788505         # racks sorted: r1 then r2, on partition 1
    assert without == 9017009200229395283
    # the group hash takes the topic hashes in topic-name order
    assert group_hash({"b": without, "a": with_racks}) == 1716255035458226351
    assert group_hash({}) == 0
    # past XXH3's 240-byte short path: a long name and 100 partitions
    assert topic_hash(JAVA_ID, "t" * 200, 100) == -6918538149154948454


def _records(coord, start=0):
    out = []
    for key, value in coord.records[start:]:
        record_type = int.from_bytes(key[:2], "big")
        out.append((record_type, None if value is None else decode_value(record_type, value).data))
    return out


def test_the_group_epoch_record_carries_the_hash_of_the_existing_subscribed_topics():
    coord = new_coordinator()
    heartbeat(coord, member_id="a", topics=["foo", "bar", "missing"])
    epochs = [value for record_type, value in _records(coord) if record_type == rec.METADATA]
    expected = group_hash({"foo": topic_hash(FOO, "foo", 6), "bar": topic_hash(BAR, "bar", 3)})
    assert epochs == [{"epoch": 2, "metadataHash": expected}]      # "missing" is not hashed
    assert rec.PARTITION_METADATA not in [t for t, _ in _records(coord)]
    assert coord.group("g").metadata_hash == expected


def test_added_partitions_bump_the_group_epoch_and_reassign():
    coord = new_coordinator()
    a = heartbeat(coord, member_id="a")
    coord.set_topics({**TOPICS, "foo": (FOO, 8)})
    again = heartbeat(coord, member_id="a", epoch=2, owned_partitions=assignment_of(a))
    assert again.member_epoch == 3 and assignment_of(again) == {FOO: frozenset(range(8))}
    assert coord.group("g").metadata_hash == group_hash({"foo": topic_hash(FOO, "foo", 8)})


def test_a_rack_change_bumps_the_group_epoch():
    coord = new_coordinator()
    a = heartbeat(coord, member_id="a")
    before = coord.group("g").metadata_hash
    coord.set_topics({**TOPICS, "foo": (FOO, 6, [("r1",)] * 6)})
    again = heartbeat(coord, member_id="a", epoch=2, owned_partitions=assignment_of(a))
    assert again.member_epoch == 3 and coord.group("g").metadata_hash != before


def test_a_change_to_a_topic_nobody_subscribes_to_writes_nothing():
    coord = new_coordinator()
    a = heartbeat(coord, member_id="a")
    coord.set_topics({**TOPICS, "bar": (BAR, 5), "new": (uuid.uuid4(), 1)})
    before = len(coord.records)
    again = heartbeat(coord, member_id="a", epoch=2, owned_partitions=assignment_of(a))
    assert again.member_epoch == 2 and len(coord.records) == before


def test_a_deleted_topic_bumps_the_epoch_and_its_hash_leaves_the_group_hash():
    coord = new_coordinator()
    a = heartbeat(coord, member_id="a", topics=["foo", "bar"])
    coord.set_topics({"foo": (FOO, 6)})
    again = heartbeat(coord, member_id="a", epoch=2, owned_partitions=assignment_of(a))
    assert again.error_code == 0 and coord.group("g").group_epoch == 3    # a revokes bar at epoch 2
    assert coord.group("g").metadata_hash == group_hash({"foo": topic_hash(FOO, "foo", 6)})


def _kafka40_log(coord_records):
    """The same log as Kafka 4.0 would have written it: a ConsumerGroupPartitionMetadata record
    before the first group epoch record, and no hash in the epoch record. (Its epochs stay the
    live log's: Kafka 4.0 started a group at 0, not 1 — nothing here depends on them.)"""
    out = []
    for key, value in coord_records:
        record_type = int.from_bytes(key[:2], "big")
        if record_type == rec.METADATA and value is not None and not out_has_partition_metadata(out):
            out.append((encode_key(rec.PARTITION_METADATA, {"groupId": "g"}), encode_value(
                rec.PARTITION_METADATA, 0, {"topics": [
                    {"topicId": FOO, "topicName": "foo", "numPartitions": 6, "partitionMetadata": []}]})))
            data = decode_value(record_type, value).data
            value = encode_value(record_type, 0, {"epoch": data["epoch"]})
        out.append((key, value))
    return out


def out_has_partition_metadata(out) -> bool:
    return any(int.from_bytes(k[:2], "big") == rec.PARTITION_METADATA for k, _ in out)


def test_a_kafka_40_log_loads_and_its_partition_metadata_record_is_tombstoned_on_the_next_update():
    live = new_coordinator()
    a = heartbeat(live, member_id="a")
    log = _kafka40_log(live.records)
    loaded = GroupCoordinator.from_records(log, config=dict(live.config.as_dict()))
    loaded.set_topics(TOPICS)
    group = loaded.get_group("g")
    assert group.has_partition_metadata_record and group.metadata_hash == 0
    assert set(group.subscribed_topics) == {"foo"}
    start = len(loaded.records)
    again = heartbeat(loaded, member_id="a", epoch=2, owned_partitions=assignment_of(a))
    assert again.error_code == 0
    written = [(t, v) for t, v in _records(loaded, start)]
    # a 4.0 log has no hash: the first update computes one, bumps the epoch and drops type 4
    assert written[0] == (rec.METADATA, {"epoch": 3, "metadataHash": live.group("g").metadata_hash})
    assert written[1] == (rec.PARTITION_METADATA, None)
    assert not loaded.get_group("g").has_partition_metadata_record
    assert [decode_key(k).record_type for k, _ in loaded.records[start:]][:2] == [3, 4]
