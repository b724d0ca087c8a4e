"""Offsets of KIP-848 consumer groups: the member epoch is the generation (Kafka's
``ConsumerGroup.validateOffsetCommit`` / ``validateOffsetFetch``).

A commit or fetch without a member (epoch < 0) is an admin's and is accepted while the group has
no members; otherwise the member must exist. A fetch names its current epoch exactly. A commit
(Kafka 4.3+, KIP-1251) may name an older epoch as long as every partition it commits is one the
member holds (assigned or pending revocation) and got at or before that epoch:
assignment epoch <= commit epoch <= member epoch; a newer epoch is always refused. A classic member
inside a consumer group commits with its generation (= its member epoch) at any OffsetCommit version,
and a wrong one is ILLEGAL_GENERATION, as the classic protocol says.
"""

from __future__ import annotations

from kgroup.kafka_errors import (ILLEGAL_GENERATION, NONE, STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID,
                                 UNSUPPORTED_VERSION)

# OffsetCommit v9 is the first a consumer-protocol member may use (Kafka's
# ConsumerGroup.validateOffsetCommit: "OffsetCommit version 9 or above must be used ...")
FIRST_MODERN_COMMIT_VERSION = 9


def validate_commit(group, member_id: str, member_epoch: int, version: int, transactional: bool,
                    partitions=()) -> int:
    """0 or the error every partition of the commit gets. ``partitions``: the committed
    (topic id or None, partition) pairs, for KIP-1251's check of an older epoch."""
    if member_epoch < 0 and not group.members:
        return NONE
    member = group.members.get(member_id)
    if member is None:
        return UNKNOWN_MEMBER_ID
    classic = member.classic is not None     # a classic member commits with its generation = member epoch
    if not classic and not transactional and version < FIRST_MODERN_COMMIT_VERSION:
        return UNSUPPORTED_VERSION
    if member_epoch == member.member_epoch:
        return NONE
    # a transactional commit reports a stale epoch as ILLEGAL_GENERATION (TxnOffsetCommit < v6)
    stale = ILLEGAL_GENERATION if transactional or classic else STALE_MEMBER_EPOCH
    if member_epoch > member.member_epoch:
        return stale
    # KIP-1251 (Kafka 4.3+, ConsumerGroup.createAssignmentEpochValidator): an older epoch may still
    # commit a partition the member holds (assigned or pending revocation) since that epoch or before
    for topic_id, partition in partitions:
        assigned_at = member.assignment_epoch(topic_id, partition)
        if assigned_at is None or member_epoch < assigned_at:
            return stale
    return NONE


def validate_fetch(group, member_id: str | None, member_epoch: int) -> int:
    """0 or the group-level error of an OffsetFetch (v9+ carries the member id and epoch)."""
    if member_id is None and member_epoch < 0:
        return NONE
    member = group.members.get(member_id)
    if member is None:
        return UNKNOWN_MEMBER_ID
    if member_epoch != member.member_epoch:
        return ILLEGAL_GENERATION if member.classic is not None else STALE_MEMBER_EPOCH
    return NONE
