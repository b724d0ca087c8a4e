"""The state a `__consumer_offsets` partition describes once compacted: Kafka's replay rules.

Committed offsets are keyed by the decoded (group, topic, partition), never by raw key bytes, so key
types 0 and 1 for one partition collapse (the later log offset wins). Transactional commits stay
pending per producer until a COMMIT marker installs them — unless a later plain commit already
holds the key — or an ABORT drops them; offsets with no marker by the end are reported apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field

OFFSET_COMMIT_TYPES = (0, 1)


@dataclass(slots=True)
class CommittedOffset:
    group: str
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int
    value_version: int
    record_offset: int

    def to_json(self) -> dict:
        return {
            "group": self.group,
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "leaderEpoch": self.leader_epoch,
            "metadata": self.metadata,
            "commitTimestamp": self.commit_timestamp,
            "expireTimestamp": None if self.expire_timestamp == -1 else self.expire_timestamp,
            "value_version": self.value_version,
            "record_offset": self.record_offset,
        }


def committed_offset(row) -> CommittedOffset:
    """The committed offset a DecodedRow of type 0/1 carries, as reported."""
    k, v = row.key.data, row.value.data
    return CommittedOffset(k["group"], k["topic"], k["partition"], v["offset"], v.get("leaderEpoch", -1),
                           v.get("metadata", ""), v.get("commitTimestamp", -1), v.get("expireTimestamp", -1),
                           row.value.version, row.offset)


def record_identity(row) -> tuple:
    """The decoded key that compaction and replay keep one record for (types 2-15)."""
    data = row.key.data
    return (row.record_type,) + tuple(data.values())


@dataclass
class PartitionState:
    """Replays one partition's rows in log order."""

    # The rows themselves are kept (CommittedOffset is built only for output: most rows are replaced).
    committed: dict = field(default_factory=dict)  # (group, topic, partition) -> DecodedRow
    pending: dict = field(default_factory=dict)  # producer_id -> {(g, t, p): DecodedRow}
    latest: dict = field(default_factory=dict)  # record identity -> row (types 2-15)

    def apply(self, row) -> None:
        kind = row.kind
        if kind != "data":
            if kind == "control":
                self._end_transaction(row.producer_id, row.marker == "COMMIT")
            return
        if row.record_type in OFFSET_COMMIT_TYPES:
            self._offset_commit(row)
        else:
            ident = record_identity(row)
            if row.value is None:
                self.latest.pop(ident, None)
            else:
                self.latest[ident] = row

    def _offset_commit(self, row) -> None:
        k = row.key.data
        key = (k["group"], k["topic"], k["partition"])
        if row.value is None:  # trunk: a tombstone, transactional or not, clears the key everywhere
            self.committed.pop(key, None)
            for offsets in self.pending.values():
                offsets.pop(key, None)
        elif row.transactional and row.producer_id != -1:
            self.pending.setdefault(row.producer_id, {})[key] = row
        else:  # the plain commit: most rows of a busy partition
            self.committed[key] = row

    def _end_transaction(self, producer_id: int, commit: bool) -> None:
        offsets = self.pending.pop(producer_id, None)
        if not offsets or not commit:
            return
        for key, entry in offsets.items():
            current = self.committed.get(key)
            if current is None or current.offset < entry.offset:
                self.committed[key] = entry


@dataclass
class OffsetsState:
    """The merged state of every partition read, in the decode-offsets `--view state` shape."""

    partitions: dict = field(default_factory=dict)  # (file topic, partition) -> PartitionState

    def for_partition(self, topic, partition) -> PartitionState:
        key = (topic, partition)
        state = self.partitions.get(key)
        if state is None:
            state = self.partitions[key] = PartitionState()
        return state

    def committed_offsets(self) -> list[CommittedOffset]:
        out = [committed_offset(r) for p in self.partitions.values() for r in p.committed.values()]
        return sorted(out, key=lambda c: (c.group, c.topic, c.partition))

    def open_transactions(self) -> list[tuple[int, list[CommittedOffset]]]:
        merged: dict[int, list] = {}
        for p in self.partitions.values():
            for pid, offsets in p.pending.items():
                merged.setdefault(pid, []).extend(committed_offset(r) for r in offsets.values())
        return [(pid, sorted(v, key=lambda c: (c.group, c.topic, c.partition)))
                for pid, v in sorted(merged.items())]

    def latest_records(self) -> list:
        rows = [r for p in self.partitions.values() for r in p.latest.values()]
        return sorted(rows, key=lambda r: (r.file, r.offset))
