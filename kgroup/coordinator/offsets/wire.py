"""Request reading and response building for the offset APIs, version by version.

Kept apart from the state logic so the handlers read as the spec's decision lists. Every
response is built with the request's version; fields a version lacks are simply not encoded.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgroup.kafka_errors import (  # noqa: F401  (re-exported: the offset handlers read wire.X)
    COORDINATOR_NOT_AVAILABLE,
    FENCED_INSTANCE_ID,
    GROUP_ID_NOT_FOUND,
    GROUP_SUBSCRIBED_TO_TOPIC,
    ILLEGAL_GENERATION,
    INVALID_GROUP_ID,
    INVALID_PRODUCER_EPOCH,
    NON_EMPTY_GROUP,
    NONE,
    OFFSET_METADATA_TOO_LARGE,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
    UNKNOWN_SERVER_ERROR,
    UNKNOWN_TOPIC_ID,
    UNSTABLE_OFFSET_COMMIT,
)

NO_OFFSET = -1
NO_LEADER_EPOCH = -1
DEFAULT_RETENTION = -1
DEFAULT_TIMESTAMP = -1


@dataclass(slots=True)
class CommitPartition:
    """One partition of an OffsetCommit/TxnOffsetCommit request, normalised across versions."""

    topic: str | None          # None when a v10 topic id did not resolve
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None
    commit_timestamp: int      # -1 = "now" (only OffsetCommit v1 carries one)


def commit_request_fields(request) -> tuple[int, str, str | None, int]:
    """(generation, member id, instance id, retention ms) of an OffsetCommit at any version."""
    v = request.API_VERSION
    generation = request.generation_id_or_member_epoch if v >= 1 else -1
    member_id = request.member_id if v >= 1 else ""
    instance_id = request.group_instance_id if v >= 7 else None
    retention = request.retention_time_ms if 2 <= v <= 4 else DEFAULT_RETENTION
    return generation, member_id, instance_id, retention


def commit_partitions(request, names_by_id: dict) -> list[tuple[object, list[CommitPartition]]]:
    """Per request topic (kept in request order, duplicates included): its partitions."""
    v = request.API_VERSION
    txn = request.API_KEY == 28
    out = []
    for topic in request.topics:
        if not txn and v >= 10:
            ident = topic.topic_id
            name = names_by_id.get(ident)
        else:
            ident = name = topic.name
        parts = []
        for p in topic.partitions:
            if txn:
                epoch = p.committed_leader_epoch if v >= 2 else NO_LEADER_EPOCH
                ts = DEFAULT_TIMESTAMP
            else:
                epoch = p.committed_leader_epoch if v >= 6 else NO_LEADER_EPOCH
                ts = p.commit_timestamp if v == 1 else DEFAULT_TIMESTAMP
            parts.append(CommitPartition(name, p.partition_index, p.committed_offset, epoch,
                                         p.committed_metadata, ts))
        out.append((ident, parts))
    return out


def commit_response(request, results: list[tuple[object, list[tuple[int, int]]]]):
    """OffsetCommitResponse or TxnOffsetCommitResponse; results = [(topic name|id, [(partition, error)])]."""
    v = request.API_VERSION
    if request.API_KEY == 28:
        from kafka.protocol.producer.transaction import TxnOffsetCommitResponse as Resp
        topic_cls = Resp.TxnOffsetCommitResponseTopic
        part_cls = topic_cls.TxnOffsetCommitResponsePartition
    else:
        from kafka.protocol.consumer.group import OffsetCommitResponse as Resp
        topic_cls = Resp.OffsetCommitResponseTopic
        part_cls = topic_cls.OffsetCommitResponsePartition
    by_id = request.API_KEY == 8 and v >= 10
    topics = []
    for ident, parts in results:
        partitions = [part_cls(partition_index=p, error_code=e) for p, e in parts]
        if by_id:
            topics.append(topic_cls(topic_id=ident, partitions=partitions))
        else:
            topics.append(topic_cls(name=ident, partitions=partitions))
    return Resp(version=v, throttle_time_ms=0, topics=topics)


@dataclass(slots=True)
class FetchGroup:
    """One group of an OffsetFetch request; topics None = every committed partition."""

    group_id: str
    topics: list[tuple[object, str | None, list[int]]] | None   # (name or id, resolved name, partitions)
    member_id: str | None = None     # v9+: the fetching member of a consumer group, and its epoch
    member_epoch: int = -1


def fetch_groups(request, names_by_id: dict) -> tuple[list[FetchGroup], bool]:
    """The groups asked for and the require_stable flag, for any OffsetFetch version."""
    v = request.API_VERSION
    require_stable = bool(request.require_stable) if v >= 7 else False
    if v <= 7:
        topics = None if request.topics is None else [
            (t.name, t.name, list(t.partition_indexes)) for t in request.topics]
        return [FetchGroup(request.group_id, topics)], require_stable
    groups = []
    for g in request.groups:
        if g.topics is None:
            topics = None
        elif v >= 10:
            topics = [(t.topic_id, names_by_id.get(t.topic_id), list(t.partition_indexes))
                      for t in g.topics]
        else:
            topics = [(t.name, t.name, list(t.partition_indexes)) for t in g.topics]
        groups.append(FetchGroup(g.group_id, topics, *((g.member_id, g.member_epoch) if v >= 9 else ())))
    return groups, require_stable


# A fetched partition: (partition, offset, leader epoch, metadata, error)
FetchedPartition = tuple[int, int, int, str, int]


def fetch_response(request, groups: list[tuple[str, int, list[tuple[object, list[FetchedPartition]]]]]):
    """OffsetFetchResponse at the request's version; groups = [(group id, group error, topics)].

    Below v8 there is exactly one group; its error is the top-level ErrorCode (v2-v7) or, as
    Kafka's OffsetFetchRequest.getErrorResponse does for v0-v1, copied onto every partition.
    """
    from kafka.protocol.consumer.group import OffsetFetchResponse as Resp
    v = request.API_VERSION
    if v <= 7:
        group_id, error, topics = groups[0]
        topic_cls = Resp.OffsetFetchResponseTopic
        part_cls = topic_cls.OffsetFetchResponsePartition
        if error and v >= 2:
            topics = []
        out_topics = []
        for name, parts in topics:
            out_topics.append(topic_cls(name=name, partitions=[
                part_cls(partition_index=p, committed_offset=o, committed_leader_epoch=le,
                         metadata=md, error_code=e or error)
                for p, o, le, md, e in parts]))
        return Resp(version=v, throttle_time_ms=0, topics=out_topics, error_code=error)
    group_cls = Resp.OffsetFetchResponseGroup
    topic_cls = group_cls.OffsetFetchResponseTopics
    part_cls = topic_cls.OffsetFetchResponsePartitions
    out_groups = []
    for group_id, error, topics in groups:
        out_topics = []
        for ident, parts in ([] if error else topics):
            partitions = [part_cls(partition_index=p, committed_offset=o, committed_leader_epoch=le,
                                   metadata=md, error_code=e) for p, o, le, md, e in parts]
            if v >= 10:
                out_topics.append(topic_cls(topic_id=ident, partitions=partitions))
            else:
                out_topics.append(topic_cls(name=ident, partitions=partitions))
        out_groups.append(group_cls(group_id=group_id, topics=out_topics, error_code=error))
    return Resp(version=v, throttle_time_ms=0, groups=out_groups)


def delete_response(request, error: int, topics: list[tuple[str, list[tuple[int, int]]]]):
    from kafka.protocol.consumer.group import OffsetDeleteResponse as Resp
    topic_cls = Resp.OffsetDeleteResponseTopic
    part_cls = topic_cls.OffsetDeleteResponsePartition
    return Resp(version=request.API_VERSION, error_code=error, throttle_time_ms=0, topics=[
        topic_cls(name=name, partitions=[part_cls(partition_index=p, error_code=e) for p, e in parts])
        for name, parts in topics])
