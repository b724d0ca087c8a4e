"""Request builders and response readers shared by the offsets tests (no tests here)."""

from __future__ import annotations

from kafka.protocol.consumer.group import (
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
)
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription
from kafka.protocol.producer.transaction import TxnOffsetCommitRequest

_CT = OffsetCommitRequest.OffsetCommitRequestTopic
_CP = _CT.OffsetCommitRequestPartition
_TT = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
_TP = _TT.TxnOffsetCommitRequestPartition
_FT = OffsetFetchRequest.OffsetFetchRequestTopic
_FG = OffsetFetchRequest.OffsetFetchRequestGroup
_FGT = _FG.OffsetFetchRequestTopics
_DT = OffsetDeleteRequest.OffsetDeleteRequestTopic
_DP = _DT.OffsetDeleteRequestPartition


def _by_topic(offsets: dict) -> dict:
    """{(topic, partition): offset | (offset, metadata) | (offset, metadata, epoch)} grouped by topic."""
    out: dict[str, list] = {}
    for (topic, partition), spec in offsets.items():
        spec = spec if isinstance(spec, tuple) else (spec,)
        offset, metadata, epoch = (spec + ("", -1)[len(spec) - 1:])[:3]
        out.setdefault(topic, []).append((partition, offset, metadata, epoch))
    return out


def commit_request(group, offsets, version=9, generation=-1, member_id="", instance_id=None,
                   retention=-1, commit_timestamp=-1, topic_ids=None):
    topics = []
    for topic, parts in _by_topic(offsets).items():
        partitions = [_CP(partition_index=p, committed_offset=o, committed_leader_epoch=e,
                          commit_timestamp=commit_timestamp, committed_metadata=m)
                      for p, o, m, e in parts]
        if version >= 10:
            topics.append(_CT(topic_id=(topic_ids or {})[topic], partitions=partitions))
        else:
            topics.append(_CT(name=topic, partitions=partitions))
    return OffsetCommitRequest(version=version, group_id=group, generation_id_or_member_epoch=generation,
                               member_id=member_id, group_instance_id=instance_id,
                               retention_time_ms=retention, topics=topics)


def txn_commit_request(group, offsets, producer_id, producer_epoch=0, version=3, generation=-1,
                       member_id="", instance_id=None, transactional_id="txn"):
    topics = [_TT(name=topic, partitions=[
        _TP(partition_index=p, committed_offset=o, committed_leader_epoch=e, committed_metadata=m)
        for p, o, m, e in parts]) for topic, parts in _by_topic(offsets).items()]
    return TxnOffsetCommitRequest(version=version, transactional_id=transactional_id, group_id=group,
                                  producer_id=producer_id, producer_epoch=producer_epoch,
                                  generation_id=generation, member_id=member_id,
                                  group_instance_id=instance_id, topics=topics)


def fetch_request(group, partitions=None, version=7, require_stable=False):
    """partitions: {topic: [partition, ...]} or None for every committed partition."""
    topics = None if partitions is None else [
        _FT(name=t, partition_indexes=list(ps)) for t, ps in partitions.items()]
    return OffsetFetchRequest(version=version, group_id=group, topics=topics, require_stable=require_stable)


def fetch_groups_request(groups: dict, version=8, require_stable=False, topic_ids=None):
    """groups: {group id: {topic: [partitions]} | None}."""
    out = []
    for group_id, partitions in groups.items():
        if partitions is None:
            topics = None
        elif version >= 10:
            topics = [_FGT(topic_id=(topic_ids or {})[t], partition_indexes=list(ps))
                      for t, ps in partitions.items()]
        else:
            topics = [_FGT(name=t, partition_indexes=list(ps)) for t, ps in partitions.items()]
        out.append(_FG(group_id=group_id, member_id=None, member_epoch=-1, topics=topics))
    return OffsetFetchRequest(version=version, groups=out, require_stable=require_stable)


def delete_request(group, partitions: dict):
    return OffsetDeleteRequest(version=0, group_id=group, topics=[
        _DT(name=t, partitions=[_DP(partition_index=p) for p in ps]) for t, ps in partitions.items()])


def subscription(*topics) -> bytes:
    return bytes(ConsumerProtocolSubscription(version=0, topics=list(topics), user_data=None).encode())


def errors(response) -> dict:
    """{(topic name or id, partition): error} of a commit/txn-commit/delete response."""
    out = {}
    for topic in response.topics:
        ident = topic.name if topic.name is not None else topic.topic_id
        if response.API_KEY == 8 and response.API_VERSION >= 10:
            ident = topic.topic_id
        for p in topic.partitions:
            out[(ident, p.partition_index)] = p.error_code
    return out


def fetched(response, group=None) -> dict:
    """{(topic, partition): (offset, leader epoch, metadata, error)} of an OffsetFetch response."""
    if response.API_VERSION <= 7:
        topics = response.topics
    else:
        (grp,) = [g for g in response.groups if group is None or g.group_id == group]
        topics = grp.topics
    out = {}
    for topic in topics:
        ident = topic.topic_id if response.API_VERSION >= 10 else topic.name
        for p in topic.partitions:
            out[(ident, p.partition_index)] = (p.committed_offset, p.committed_leader_epoch,
                                               p.metadata, p.error_code)
    return out


def roundtrip(response):
    """Encode at the response's version and decode again: proves it is valid on the wire."""
    cls = type(response)
    data = bytes(response.encode())
    return cls.decode(data, version=response.API_VERSION)
