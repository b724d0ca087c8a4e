"""The orders the server-side assignors walk members and topics in, and the topic-count check.

Kafka's assignors iterate Java ``HashMap``s where they do not sort, so their results in tie
situations depend on hash order. kgroup walks members by member id as Java's ``String.compareTo``
orders them (UTF-16 code units) and topics as Kafka's ``Uuid.compareTo`` orders them (the most
significant 64 bits as a signed long, then the least significant): the same input always gives the
same assignment, whatever order the coordinator's dicts were filled in.
"""

from __future__ import annotations

from typing import Mapping

from .server_api import PartitionAssignorError, TopicMetadata
from .topic_ids import uuid_bytes


def java_string_key(text: str) -> bytes:
    """Sort key equal to Java's ``String.compareTo``: UTF-16 code units, not code points."""
    return text.encode("utf-16-be", "surrogatepass")


def sorted_member_ids(member_ids) -> list:
    """Member ids in ``String.compareTo`` order (plain ``sorted`` when they are all ASCII, where
    UTF-16 code units and code points order alike)."""
    if all(map(str.isascii, member_ids)):
        return sorted(member_ids)
    return sorted(member_ids, key=java_string_key)


def topic_order_key(topic_id: object) -> tuple:
    """Sort key equal to Kafka's ``Uuid.compareTo`` for ids given as 16 bytes, base64 text or
    ``uuid.UUID``; any other id sorts after those, by its text."""
    raw = uuid_bytes(topic_id)
    if raw is None:
        return (1, 0, 0, str(topic_id))
    return (0, int.from_bytes(raw[:8], "big", signed=True), int.from_bytes(raw[8:], "big", signed=True), "")


def partition_count(topics: Mapping[object, TopicMetadata], topic_id: object) -> int:
    """The topic's partition count; a topic missing from the metadata (Kafka's count -1) is an
    error, as in Kafka's ``SubscribedTopicDescriber.numPartitions`` callers."""
    topic = topics.get(topic_id)
    if topic is None or topic.num_partitions < 0:
        raise PartitionAssignorError(
            f"Members are subscribed to topic {topic_id} which doesn't exist in the topic metadata.")
    return topic.num_partitions


def frozen_rows(rows: Mapping[str, Mapping[object, object]]) -> dict:
    """member id -> {topic id -> frozenset}, without empty topics: the ``assign`` result shape."""
    return {member: frozen_row(row) for member, row in rows.items()}


def frozen_row(row: Mapping[object, object]) -> dict:
    """{topic id -> frozenset} without empty topics: ``row`` itself when it is that already (most
    rows of a re-assignment are kept whole: not copied, their topic ids not hashed again)."""
    if type(row) is dict:
        for parts in row.values():
            if type(parts) is not frozenset or not parts:
                break
        else:
            return row
    return {topic: frozenset(parts) for topic, parts in row.items() if parts}
