"""Kafka 4.1+ offsets: OffsetCommitValue v4 persists the committed topic's id (KAFKA-19141), and
OffsetFetch v10 reads an offset committed for another topic id as no offset (isMismatchedTopicId)."""

from __future__ import annotations

import uuid

from helpers.offsets import commit_request, fetch_groups_request, fetched

from kgroup.coordinator import GroupCoordinator
from kgroup.records import decode_key, decode_value

ORDERS = uuid.UUID(int=7)


def _coord():
    coord = GroupCoordinator(config={}, now_ms=0)
    coord.set_topics({"orders": (ORDERS, 2)})
    coord.offsets.topic_ids["orders"] = ORDERS
    return coord


def _offset_values(coord):
    return [(decode_value(1, v).version, decode_value(1, v).data) for k, v in coord.records
            if decode_key(k).record_type == 1 and v is not None]


def test_a_commit_writes_offset_commit_value_v4_with_the_topic_id():
    coord = _coord()
    coord.handle(commit_request("g", {("orders", 0): 5, ("unknown", 0): 6}, version=9))
    values = _offset_values(coord)
    assert [version for version, _ in values] == [4, 4]
    assert {bytes(data["topicId"]) for _, data in values} == {ORDERS.bytes, bytes(16)}
    loaded = GroupCoordinator.from_records(coord.records)
    assert loaded.committed_offsets("g") == coord.committed_offsets("g")
    assert loaded.committed_offsets("g")[("orders", 0)].topic_id == ORDERS


def test_v10_fetch_of_a_recreated_topic_does_not_see_the_old_incarnations_offset():
    coord = _coord()
    coord.handle(commit_request("g", {("orders", 0): 5}, version=9))
    recreated = uuid.UUID(int=8)
    coord.set_topics({"orders": (recreated, 2)})
    coord.offsets.topic_ids["orders"] = recreated
    response = coord.handle(fetch_groups_request({"g": {"orders": [0]}}, version=10,
                                                 topic_ids={"orders": recreated})).response
    assert fetched(response) == {(recreated, 0): (-1, -1, "", 0)}
    # by name (v9) the offset is still there: only ids can tell incarnations apart
    response = coord.handle(fetch_groups_request({"g": {"orders": [0]}}, version=9)).response
    assert fetched(response) == {("orders", 0): (5, -1, "", 0)}
