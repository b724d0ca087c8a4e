"""Materialised offsets of one `__consumer_offsets` partition: committed, pending (open transactions).

Both the live coordinator and failover replay go through the same three operations
(`put`, `tombstone`, `end_transaction`), each tagged with the log offset of the record that
caused it, so a coordinator rebuilt from the log holds exactly the state the live one had.
The rules are those of Kafka's (OffsetMetadataManager.replay):

* a data record with producer id -1 replaces the committed offset;
* a record with a producer id is pending for that producer until its COMMIT/ABORT marker. The
  producer id is the batch's (CoordinatorLoaderImpl passes `batch.producerId()` for every record
  it replays), whatever the batch's transactional attribute says: `pending_until_marker` is the test;
* COMMIT installs each pending offset unless the committed one came from a later log offset;
* ABORT drops the producer's pending offsets;
* a tombstone deletes the committed offset and the key from every open transaction of the group.
"""

from __future__ import annotations

from dataclasses import dataclass

NO_PRODUCER_ID = -1


def pending_until_marker(producer_id: int) -> bool:
    """Whether an offset commit written with this producer id waits for its transaction's marker."""
    return producer_id != NO_PRODUCER_ID


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """A committed offset as clients see it (OffsetFetch) and as `coord.committed_offsets` returns it.

    ``leader_epoch`` is -1 when unknown (the wire sentinel); ``expire_timestamp`` is None unless the
    commit carried an explicit retention time (OffsetCommit v2-v4), in which case it was persisted
    as an OffsetCommitValue v1.
    """

    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None = None
    topic_id: object = None     # uuid.UUID the commit resolved (OffsetCommitValue v4's topicId), or None


TopicPartition = tuple[str, int]


#: (value, record offset of the record that wrote it): a plain tuple, the replay's hot path builds one per record.
_Stored = tuple
_VALUE, _RECORD_OFFSET = 0, 1


class OffsetStore:
    """Committed and pending offsets keyed by group, then (topic, partition).

    The replay never looks inside the stored values, so a reader of a dump may store the decoded
    records themselves (`kgroup.decode.state` does) and build OffsetAndMetadata only for output.
    """

    __slots__ = ("_committed", "_pending", "_open_by_group")

    def __init__(self) -> None:
        self._committed: dict[str, dict[TopicPartition, _Stored]] = {}
        # producer id -> group -> (topic, partition) -> pending offset
        self._pending: dict[int, dict[str, dict[TopicPartition, _Stored]]] = {}
        # group -> producer ids with an open transaction that wrote offsets for it
        self._open_by_group: dict[str, set[int]] = {}

    # -- the replay operations -------------------------------------------------------------
    def put(self, group_id: str, tp: TopicPartition, value: OffsetAndMetadata,
            record_offset: int, producer_id: int = NO_PRODUCER_ID) -> None:
        stored = (value, record_offset)
        if producer_id == NO_PRODUCER_ID:  # not pending_until_marker(producer_id), inlined: the hot path
            committed = self._committed.get(group_id)
            if committed is None:
                committed = self._committed[group_id] = {}
            committed[tp] = stored
            return
        self._pending.setdefault(producer_id, {}).setdefault(group_id, {})[tp] = stored
        self._open_by_group.setdefault(group_id, set()).add(producer_id)

    def tombstone(self, group_id: str, tp: TopicPartition) -> None:
        group = self._committed.get(group_id)
        if group is not None:
            group.pop(tp, None)
            if not group:
                del self._committed[group_id]
        # Trunk keeps the producer in the group's open set even if this empties its pending map:
        # the transaction is still open until its marker.
        for producer_id in self._open_by_group.get(group_id, ()):
            pending = self._pending.get(producer_id, {}).get(group_id)
            if pending is not None:
                pending.pop(tp, None)

    def end_transaction(self, producer_id: int, commit: bool) -> None:
        pending = self._pending.pop(producer_id, None)
        if pending is None:
            return
        for group_id in pending:
            open_set = self._open_by_group.get(group_id)
            if open_set is not None:
                open_set.discard(producer_id)
                if not open_set:
                    del self._open_by_group[group_id]
        if not commit:
            return
        for group_id, offsets in pending.items():
            committed = self._committed.setdefault(group_id, {})
            for tp, stored in offsets.items():
                current = committed.get(tp)
                if current is None or stored[_RECORD_OFFSET] > current[_RECORD_OFFSET]:
                    committed[tp] = stored
            if not committed:
                del self._committed[group_id]

    # -- undo (a failed append reverts the operation's changes) ---------------------------
    def save_group(self, group_id: str):
        """Everything the store holds for the group, to give back to ``restore_group``.

        Copies the group's maps (the stored values are never changed in place)."""
        committed = self._committed.get(group_id)
        pending = {producer_id: dict(by_group[group_id])
                   for producer_id, by_group in self._pending.items() if group_id in by_group}
        open_set = self._open_by_group.get(group_id)
        return (None if committed is None else dict(committed), pending,
                None if open_set is None else set(open_set))

    def restore_group(self, group_id: str, saved) -> None:
        committed, pending, open_set = saved
        for producer_id, by_group in list(self._pending.items()):
            by_group.pop(group_id, None)
            if not by_group and producer_id not in pending:
                del self._pending[producer_id]
        for producer_id, offsets in pending.items():
            self._pending.setdefault(producer_id, {})[group_id] = offsets
        for target, value in ((self._committed, committed), (self._open_by_group, open_set)):
            if value is None:
                target.pop(group_id, None)
            else:
                target[group_id] = value

    def transaction_groups(self, producer_id: int) -> list[str]:
        """Groups the producer's open transaction wrote offsets for."""
        return list(self._pending.get(producer_id, ()))

    # -- queries -------------------------------------------------------------------------
    def committed(self, group_id: str) -> dict[TopicPartition, OffsetAndMetadata]:
        return {tp: s[_VALUE] for tp, s in self._committed.get(group_id, {}).items()}

    def get(self, group_id: str, tp: TopicPartition) -> OffsetAndMetadata | None:
        stored = self._committed.get(group_id, {}).get(tp)
        return None if stored is None else stored[_VALUE]

    def pending(self, group_id: str) -> dict[int, dict[TopicPartition, OffsetAndMetadata]]:
        """Open transactions' offsets for the group, by producer id (not visible to consumers)."""
        out = {}
        for producer_id in sorted(self._open_by_group.get(group_id, ())):
            offsets = self._pending.get(producer_id, {}).get(group_id, {})
            out[producer_id] = {tp: s[_VALUE] for tp, s in offsets.items()}
        return out

    def has_pending(self, group_id: str, tp: TopicPartition) -> bool:
        for producer_id in self._open_by_group.get(group_id, ()):
            if tp in self._pending.get(producer_id, {}).get(group_id, {}):
                return True
        return False

    def pending_partitions(self, group_id: str) -> list[TopicPartition]:
        """Keys of the group that only open transactions hold, in first-seen order."""
        seen: dict[TopicPartition, None] = {}
        for producer_id in sorted(self._open_by_group.get(group_id, ())):
            for tp in self._pending.get(producer_id, {}).get(group_id, {}):
                seen.setdefault(tp, None)
        return list(seen)

    def has_open_transactions(self, group_id: str) -> bool:
        return group_id in self._open_by_group

    def any_open_transactions(self) -> bool:
        """Whether some producer's transaction is still open (until then a tombstone also edits
        its pending offsets, so plain records do not simply overwrite one another)."""
        return bool(self._pending)

    def has_committed(self, group_id: str) -> bool:
        return bool(self._committed.get(group_id))

    def groups(self) -> list[str]:
        """Groups with committed offsets or open transactions, in first-seen order."""
        out = dict.fromkeys(self._committed)
        out.update(dict.fromkeys(self._open_by_group))
        return list(out)
