"""Which offsets expire (KIP-211, KIP-496 as trunk does it).

Pure functions over an OffsetStore and a group's ``offset_expiration_condition`` (the seam, whatever
its type); the OffsetManager writes the tombstones.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from .store import OffsetAndMetadata


class OffsetExpirationCondition(NamedTuple):
    """Kafka's OffsetExpirationCondition: the time an offset without explicit expiry ages from, and
    the topics whose offsets never expire while the group is subscribed to them."""

    base_timestamp: Callable[[OffsetAndMetadata], int]
    subscribed: frozenset | set = frozenset()


def expired_offsets(store, group_id: str, group, now: int, retention_ms: int):
    """(may the group be deleted, expired partitions) per KIP-211/KIP-496 as trunk does it.

    Base time of an offset without explicit expiry: for a group with a protocol type that is
    Empty, the time it became Empty (currentStateTimestamp; the commit time if unknown); for
    a simple group (no protocol type) the commit time; for a Stable "consumer" group with a
    known subscription, the commit time, but only offsets of topics nobody subscribes to.
    Any other group keeps its offsets. Offsets with an open transaction never expire."""
    committed = store.committed(group_id)
    if not committed:
        return True, []
    condition = COMMIT_TIME if group is None else group.offset_expiration_condition()
    if condition is None:
        return False, []
    base_of, subscribed = condition
    all_expired = True
    expired = []
    for tp, value in committed.items():
        if tp[0] in subscribed:
            all_expired = False
            continue
        if value.expire_timestamp is not None:
            is_expired = now >= value.expire_timestamp
        else:
            is_expired = now - base_of(value) >= retention_ms
        if is_expired and not store.has_pending(group_id, tp):
            expired.append(tp)
        else:
            all_expired = False
    return all_expired and not store.has_open_transactions(group_id), expired


def commit_time(value: OffsetAndMetadata) -> int:
    return value.commit_timestamp


# a group without protocol type (a "simple" group), or offsets of no group: they age from their commit
COMMIT_TIME = OffsetExpirationCondition(commit_time)
