"""The offsets side of the group coordinator (Kafka's OffsetMetadataManager).

`OffsetManager` answers OffsetCommit, OffsetFetch, TxnOffsetCommit and OffsetDelete, expires
offsets on a virtual-time timer and rebuilds its state from the log on failover.

Every change is made the way Kafka's coordinator makes it: records are appended first, then
applied through the same code path replay uses (`OffsetStore`), with the log offset each record
got. That is what makes `GroupCoordinator.from_records(coord.log)` land on identical state.

Choices where the spec is silent (Kafka trunk's OffsetMetadataManager unless stated):
* The coordinator holds no topic metadata, so topic names are never checked (Kafka answers
  UNKNOWN_TOPIC_OR_PARTITION for unknown topics before reaching the coordinator). OffsetCommit
  v10 and OffsetFetch v10 name topics by id: ids resolve through the coordinator's topic image
  (`set_topics`) and `OffsetManager.topic_ids` (name -> uuid.UUID); an unknown id gets
  UNKNOWN_TOPIC_ID (100), and a fetch-all at v10 lists only topics whose id is known.
* Metadata length is compared in UTF-16 code units, like Java's String.length().
* A group that has offsets in the log but no GroupMetadata record (a "simple" group, e.g.
  loaded from a real broker's log) is recreated by replay as an Empty group without protocol
  type, as trunk does (without appending a record).
* A TxnOffsetCommit whose producer epoch is below the last epoch seen for that producer id is
  refused with INVALID_PRODUCER_EPOCH (47), as the log's producer-state check does.
* DeleteGroups and OffsetDelete also write tombstones for partitions that only open
  transactions of the group hold (trunk's deleteAllOffsets/deleteOffsets), so a later COMMIT
  cannot resurrect them. OffsetDelete answers every requested partition, like trunk.
* Expiry follows trunk's cleanupExpiredOffsets/offsetExpirationCondition (see
  `retention.expired_offsets`). A group with no committed offsets counts as fully
  expired even with open transactions (the 2024 trunk rule), so an Empty group holding only
  pending offsets is deleted.
* OffsetCommit/OffsetFetch v0 and v1 (dropped by Kafka 4.0, still built by kafka-python) are
  served like Kafka 3.x did: v0 as generation -1 with no member id, v1's per-partition commit
  timestamp used as the commit time when it is not -1.
"""

from __future__ import annotations

import uuid

from . import wire
from ..runtime.log import LogEntry
from .retention import expired_offsets
from .store import NO_PRODUCER_ID, OffsetAndMetadata, OffsetStore

__all__ = ["OffsetManager", "OffsetAndMetadata"]

RETENTION_TIMER_KEY = "expire-group-metadata"      # Kafka's GROUP_EXPIRATION_KEY
OFFSET_COMMIT_KEY_TYPE = 1
_KEY_CACHE_LIMIT = 200_000      # encoded keys kept; consumers commit the same partitions over and over


def _java_length(text: str) -> int:
    """Length of a string as Java counts it (UTF-16 code units)."""
    return len(text.encode("utf-16-le")) // 2


def _java_long(value: int) -> int:
    """`value` wrapped to a signed 64-bit integer, as Java's long arithmetic does (Kafka's
    OffsetMetadataManager adds the commit's retention time to the current time unchecked)."""
    return (value + (1 << 63)) % (1 << 64) - (1 << 63)


class OffsetManager:
    """Offsets of every group on this coordinator; see the module docstring for the rules."""

    def __init__(self, coord) -> None:
        self._coord = coord
        self._store = OffsetStore()
        self._producer_epochs: dict[int, int] = {}
        self.topic_ids: dict[str, object] = {}
        self._key_cache: dict[tuple[str, str, int], bytes] = {}
        # The facade calls start() only after a failover load; a fresh coordinator needs the
        # expiry timer too. Rescheduling the same key is harmless, so arm it here as well.
        self.start()

    # ------------------------------------------------------------------ state queries
    def committed(self, group_id: str) -> dict:
        return self._store.committed(group_id)

    def pending(self, group_id: str) -> dict:
        """Offsets of the group's open transactions: {producer id: {(topic, partition): OffsetAndMetadata}}."""
        return self._store.pending(group_id)

    def has_offsets(self, group_id: str) -> bool:
        """True if the group has committed offsets or offsets in an open transaction."""
        return self._store.has_committed(group_id) or self._store.has_open_transactions(group_id)

    def groups(self) -> list[str]:
        return self._store.groups()

    # ------------------------------------------------------------------ log plumbing
    def _next_log_offset(self) -> int:
        return self._coord.log_end_offset

    def _append(self, records: list, producer_id: int = NO_PRODUCER_ID, producer_epoch: int = -1,
                control: str | None = None, coordinator_epoch: int = 0) -> int:
        """Append one LogEntry through the facade; returns the log offset of its first record."""
        base = self._next_log_offset()
        self._coord.append(LogEntry(
            records=records, producer_id=producer_id, producer_epoch=producer_epoch,
            transactional=producer_id != NO_PRODUCER_ID, control=control,
            coordinator_epoch=coordinator_epoch, timestamp_ms=self._coord.now_ms))
        return base

    def _write_offsets(self, group_id: str, items: list, producer_id: int = NO_PRODUCER_ID,
                       producer_epoch: int = -1) -> None:
        """Persist then apply [((topic, partition), OffsetAndMetadata | None)] as one batch."""
        if not items:
            return
        from kgroup.records import encode_key, encode_value
        cache = self._key_cache
        records = []
        for (topic, partition), value in items:
            key = cache.get((group_id, topic, partition))
            if key is None:
                if len(cache) >= _KEY_CACHE_LIMIT:
                    cache.clear()
                key = cache[(group_id, topic, partition)] = encode_key(
                    OFFSET_COMMIT_KEY_TYPE, {"group": group_id, "topic": topic, "partition": partition})
            records.append((key, None if value is None else _encode_offset_value(encode_value, value)))
        base = self._append(records, producer_id, producer_epoch)
        self._save_group(group_id)
        for i, (tp, value) in enumerate(items):
            self._apply(group_id, tp, value, base + i, producer_id)

    def _apply(self, group_id: str, tp, value: OffsetAndMetadata | None, log_offset: int,
               producer_id: int) -> None:
        if value is None:
            self._store.tombstone(group_id, tp)
        else:
            self._store.put(group_id, tp, value, log_offset, producer_id)

    # ------------------------------------------------------------------ replay (failover)
    def replay(self, key, value, log_offset: int, entry) -> None:
        """Apply one decoded OffsetCommit record (key type 0 or 1) found at `log_offset`."""
        data = key.data
        tp = (data["topic"], data["partition"])
        offset_value = None if value is None else offset_from_record(value.data)
        self._apply(data["group"], tp, offset_value, log_offset, entry.producer_id)
        if entry.producer_id != NO_PRODUCER_ID:
            self._note_epoch(entry.producer_id, entry.producer_epoch)

    def replay_end_transaction(self, producer_id: int, commit: bool, log_offset: int) -> None:
        self._store.end_transaction(producer_id, commit)

    def _note_epoch(self, producer_id: int, epoch: int) -> None:
        if epoch > self._producer_epochs.get(producer_id, -1):
            self._coord.undo.dict_put(self._producer_epochs, producer_id, epoch)

    def _save_group(self, group_id: str) -> None:
        """Before the operation's first change of the group's offsets: save them for a revert."""
        undo = self._coord.undo
        if undo.first_change(("offsets", group_id)):
            undo.push(self._store.restore_group, group_id, self._store.save_group(group_id))

    # ------------------------------------------------------------------ group checks
    def _group_for_commit(self, group_id: str, generation: int, not_found_error: int):
        """(group or None, error): the group the commit goes to, created for generation < 0."""
        group = self._coord.get_group(group_id)
        if group is not None:
            return group, wire.NONE
        if generation < 0:
            return self._coord.get_or_create_classic_group(group_id, persist=False), wire.NONE
        # Spec c.3: a missing group is "not found" even if offsets of it remain (an open
        # transaction of a deleted group); replay recreates the group of any replayed offset.
        return None, not_found_error

    def _metadata_too_large(self, metadata: str | None) -> bool:
        return (metadata is not None
                and _java_length(metadata) > self._coord.config.offset_metadata_max_bytes)

    def _topic_id(self, name: str):
        """The topic's id (uuid.UUID) or None: Kafka 4.4's KafkaApis resolves every committed
        topic's id, which the coordinator checks against assignment epochs and persists."""
        known = self._coord.topic_image.get(name)
        return known[0] if known is not None else self.topic_ids.get(name)

    def _committed_ids(self, partitions):
        """(topic id or None, partition) of each committed partition, resolved as the group's
        validation reads them (a consumer group's, for an older member epoch; a classic one never)."""
        return ((self._topic_id(p.topic), p.partition) for p in partitions)

    def _names_by_id(self) -> dict:
        names = {ident: name for name, ident in self.topic_ids.items()}
        names.update((ident, name) for name, (ident, _) in self._coord.topic_image.items())
        return names

    # ------------------------------------------------------------------ OffsetCommit
    def handle_offset_commit(self, request, client_id: str = "", client_host: str = ""):
        generation, member_id, instance_id, retention = wire.commit_request_fields(request)
        topics = wire.commit_partitions(
            request, self._names_by_id() if request.API_VERSION >= 10 else {})
        group_id = request.group_id
        known = [p for _, parts in topics for p in parts if p.topic is not None]
        error = wire.NONE
        group = None
        if known:
            not_found = wire.GROUP_ID_NOT_FOUND if request.API_VERSION >= 9 else wire.ILLEGAL_GENERATION
            group, error = self._group_for_commit(group_id, generation, not_found)
            if group is not None:
                error = group.validate_offset_commit(member_id, instance_id, generation, False,
                                                     request.API_VERSION, self._committed_ids(known))
        now = self._coord.now_ms
        expire = None if retention == wire.DEFAULT_RETENTION else _java_long(now + retention)
        results, items = [], []
        for ident, parts in topics:
            out = []
            for p in parts:
                if p.topic is None:
                    out.append((p.partition, wire.UNKNOWN_TOPIC_ID))
                elif error:
                    out.append((p.partition, error))
                elif self._metadata_too_large(p.metadata):
                    out.append((p.partition, wire.OFFSET_METADATA_TOO_LARGE))
                else:
                    ts = now if p.commit_timestamp == wire.DEFAULT_TIMESTAMP else p.commit_timestamp
                    items.append(((p.topic, p.partition), OffsetAndMetadata(
                        p.offset, p.leader_epoch, p.metadata or "", ts, expire, self._topic_id(p.topic))))
                    out.append((p.partition, wire.NONE))
            results.append((ident, out))
        if known and not error:
            self._write_offsets(group_id, items)
            if group is not None:
                committed = self._coord.group_type_of(group).offset_committed
                if committed is not None:
                    committed(self._coord, group, member_id)   # a classic member's session (spec c.3)
        return wire.commit_response(request, results)

    # ------------------------------------------------------------------ TxnOffsetCommit
    def handle_txn_offset_commit(self, request, client_id: str = "", client_host: str = ""):
        v = request.API_VERSION
        generation = request.generation_id if v >= 3 else -1
        member_id = request.member_id if v >= 3 else ""
        instance_id = request.group_instance_id if v >= 3 else None
        group_id = request.group_id
        producer_id, producer_epoch = request.producer_id, request.producer_epoch
        topics = wire.commit_partitions(request, {})
        if group_id == "":
            error = wire.INVALID_GROUP_ID
        elif producer_id < 0:
            # Kafka cannot even build a transactional batch without a producer id.
            error = wire.UNKNOWN_SERVER_ERROR
        else:
            group, error = self._group_for_commit(group_id, generation, wire.ILLEGAL_GENERATION)
            if group is not None:
                error = group.validate_offset_commit(member_id, instance_id, generation, True, v,
                                                     self._committed_ids(p for _, ps in topics for p in ps))
        if not error and producer_epoch < self._producer_epochs.get(producer_id, -1):
            error = wire.INVALID_PRODUCER_EPOCH
        now = self._coord.now_ms
        results, items = [], []
        for ident, parts in topics:
            out = []
            for p in parts:
                if error:
                    out.append((p.partition, error))
                elif self._metadata_too_large(p.metadata):
                    out.append((p.partition, wire.OFFSET_METADATA_TOO_LARGE))
                else:
                    items.append(((p.topic, p.partition), OffsetAndMetadata(
                        p.offset, p.leader_epoch, p.metadata or "", now, None, self._topic_id(p.topic))))
                    out.append((p.partition, wire.NONE))
            results.append((ident, out))
        if not error and items:
            self._note_epoch(producer_id, producer_epoch)
            self._write_offsets(group_id, items, producer_id, producer_epoch)
        return wire.commit_response(request, results)

    def end_transaction(self, producer_id: int, producer_epoch: int, commit: bool,
                        coordinator_epoch: int = 0) -> None:
        """The transaction coordinator's COMMIT/ABORT marker for this partition."""
        if producer_id < 0:
            raise ValueError(f"end_transaction: producer id {producer_id} is not a valid producer id")
        known = self._producer_epochs.get(producer_id, -1)
        if producer_epoch < known:
            raise ValueError(
                f"end_transaction: producer id {producer_id} epoch {producer_epoch} is older than "
                f"the last epoch {known} seen for it; the marker is rejected")
        self._note_epoch(producer_id, producer_epoch)
        self._append([], producer_id, producer_epoch, "COMMIT" if commit else "ABORT",
                     coordinator_epoch)
        for group_id in self._store.transaction_groups(producer_id):
            self._save_group(group_id)
        self._store.end_transaction(producer_id, commit)

    # ------------------------------------------------------------------ OffsetFetch
    def handle_offset_fetch(self, request, client_id: str = "", client_host: str = ""):
        groups, require_stable = wire.fetch_groups(
            request, self._names_by_id() if request.API_VERSION >= 10 else {})
        return wire.fetch_response(request, [self._fetch_group(g, require_stable, request.API_VERSION)
                                             for g in groups])

    def _fetch_group(self, fetch: wire.FetchGroup, require_stable: bool, version: int):
        group_id = fetch.group_id
        group = self._coord.get_group(group_id)
        if group is not None:
            error = group.validate_offset_fetch(fetch.member_id, fetch.member_epoch, version)
            if error:
                return group_id, error, []
        if group is not None and group.state == "Dead":
            error = wire.GROUP_ID_NOT_FOUND
            if version >= 2 or fetch.topics is None:
                return group_id, error, []
            return group_id, error, [
                (ident, [(p, wire.NO_OFFSET, wire.NO_LEADER_EPOCH, "", error) for p in parts])
                for ident, _, parts in fetch.topics]
        topics = []
        if fetch.topics is None:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in self._store.committed(group_id):
                by_topic.setdefault(topic, []).append(partition)
            requested = []
            for topic, parts in by_topic.items():
                if version >= 10:
                    ident = self._topic_id(topic)
                    if ident is None:
                        continue
                else:
                    ident = topic
                requested.append((ident, topic, parts))
        else:
            requested = fetch.topics
        for ident, name, parts in requested:
            out = []
            for partition in parts:
                tp = (name, partition)
                if name is None:
                    out.append((partition, wire.NO_OFFSET, wire.NO_LEADER_EPOCH, "", wire.UNKNOWN_TOPIC_ID))
                elif require_stable and self._store.has_pending(group_id, tp):
                    out.append((partition, wire.NO_OFFSET, wire.NO_LEADER_EPOCH, "",
                                wire.UNSTABLE_OFFSET_COMMIT))
                else:
                    value = self._store.get(group_id, tp)
                    if value is None or _mismatched(value.topic_id, ident if version >= 10 else None):
                        out.append((partition, wire.NO_OFFSET, wire.NO_LEADER_EPOCH, "", wire.NONE))
                    else:
                        out.append((partition, value.offset, value.leader_epoch, value.metadata, wire.NONE))
            topics.append((ident, out))
        return group_id, wire.NONE, topics

    # ------------------------------------------------------------------ OffsetDelete
    def handle_offset_delete(self, request, client_id: str = "", client_host: str = ""):
        group_id = request.group_id
        if group_id == "":
            return wire.delete_response(request, wire.INVALID_GROUP_ID, [])
        group = self._coord.get_group(group_id)
        # trunk validateOffsetDelete: the group itself must exist, and its type may refuse
        error = wire.GROUP_ID_NOT_FOUND if group is None else group.validate_offset_delete()
        if error:
            return wire.delete_response(request, error, [])
        topics, items = [], []
        for topic in request.topics:
            out = []
            if group.is_subscribed_to_topic(topic.name):
                out = [(p.partition_index, wire.GROUP_SUBSCRIBED_TO_TOPIC) for p in topic.partitions]
            else:
                # Every partition is answered; a tombstone is written only where a committed
                # or a pending transactional offset exists (trunk deleteOffsets).
                for p in topic.partitions:
                    tp = (topic.name, p.partition_index)
                    out.append((p.partition_index, wire.NONE))
                    if self._store.get(group_id, tp) is not None or self._store.has_pending(group_id, tp):
                        items.append((tp, None))
            topics.append((topic.name, out))
        self._write_offsets(group_id, items)
        return wire.delete_response(request, wire.NONE, topics)

    # ------------------------------------------------------------------ DeleteGroups
    def delete_group_offsets(self, group_id: str) -> None:
        """Tombstones for every committed offset of the group and for partitions only its open
        transactions hold (trunk deleteAllOffsets)."""
        tps = dict.fromkeys(self._store.committed(group_id))
        tps.update(dict.fromkeys(self._store.pending_partitions(group_id)))
        self._write_offsets(group_id, [(tp, None) for tp in tps])

    # ------------------------------------------------------------------ retention
    def start(self) -> None:
        """Arm the periodic expiry check (offsets.retention.check.interval.ms of virtual time)."""
        self._coord.schedule(RETENTION_TIMER_KEY,
                             self._coord.config.offsets_retention_check_interval_ms,
                             self._on_retention_timer)

    def _on_retention_timer(self, *_args) -> None:
        self.expire_offsets()
        self.start()

    def expire_offsets(self) -> list[tuple[str, str, int]]:
        """One cleanup cycle (trunk cleanupGroupMetadata): tombstone expired offsets, then delete
        Empty groups left without offsets or open transactions. Returns the expired
        (group, topic, partition) in the order their tombstones were written."""
        coord = self._coord
        retention_ms = coord.config.offsets_retention_minutes * 60_000
        now = coord.now_ms
        group_ids = dict.fromkeys(coord.groups())
        group_ids.update(dict.fromkeys(self._store.groups()))
        expired_all = []
        for group_id in group_ids:
            group = coord.get_group(group_id)
            all_expired, expired = expired_offsets(self._store, group_id, group, now, retention_ms)
            self._write_offsets(group_id, [(tp, None) for tp in expired])
            expired_all += [(group_id, t, p) for t, p in expired]
            if all_expired and group is not None and group.is_empty():
                coord.delete_group(group, offsets=coord.group_type_of(group).expiry_deletes_offsets)
        return expired_all


def _encode_offset_value(encode_value, value: OffsetAndMetadata) -> bytes:
    """OffsetCommitValue v4 (Kafka 4.1+: flexible, with the topic id as tag 0 when known), or v1
    when the commit set an expire timestamp (Kafka's GroupCoordinatorRecordHelpers.newOffsetCommitRecord)."""
    if value.expire_timestamp is not None:
        return encode_value(OFFSET_COMMIT_KEY_TYPE, 1, {
            "offset": value.offset, "metadata": value.metadata,
            "commitTimestamp": value.commit_timestamp, "expireTimestamp": value.expire_timestamp})
    data = {"offset": value.offset, "leaderEpoch": value.leader_epoch, "metadata": value.metadata,
            "commitTimestamp": value.commit_timestamp}
    if value.topic_id is not None:
        data["topicId"] = value.topic_id
    return encode_value(OFFSET_COMMIT_KEY_TYPE, 4, data)


_ZERO_UUID = bytes(16)


def _mismatched(stored, requested) -> bool:
    """Kafka 4.4's isMismatchedTopicId: an offset committed for another incarnation of the topic
    (both ids known and different) reads as no offset."""
    return stored is not None and requested is not None and stored != requested


def offset_from_record(data: dict) -> OffsetAndMetadata:
    """The committed offset an OffsetCommitValue's decoded fields hold (replay, and the tables of
    `decode-offsets --view state`, which name topic ids by it)."""
    expire = data.get("expireTimestamp", -1)
    raw_id = data.get("topicId")
    if raw_id is not None and not isinstance(raw_id, uuid.UUID):
        raw_id = None if bytes(raw_id) == _ZERO_UUID else uuid.UUID(bytes=bytes(raw_id))
    return OffsetAndMetadata(
        offset=data["offset"], leader_epoch=data.get("leaderEpoch", -1),
        metadata=data.get("metadata") or "", commit_timestamp=data["commitTimestamp"],
        expire_timestamp=None if expire == -1 else expire, topic_id=raw_id)
