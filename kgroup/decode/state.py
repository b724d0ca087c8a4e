"""The state a `__consumer_offsets` partition describes once compacted: `--view state`, local and Spark.

Offset commits replay through the coordinator's own `OffsetStore` (Kafka's
OffsetMetadataManager.replay, the same code serve's recovery and `describe --from-dump` run), so
there is one rule for which commits are pending: a commit written with a producer id waits for its
producer's COMMIT marker (installed unless a later plain commit already holds the key) or ABORT
(dropped); offsets with no marker by the end are reported apart. The store holds the decoded rows
themselves; CommittedOffset is built only for output. Committed offsets are keyed by the decoded
(group, topic, partition), never by raw key bytes, so key types 0 and 1 for one partition collapse
(the later log offset wins). Other record types (2-23) keep the latest row per decoded key.
`__share_group_state` is not compacted (cleanup.policy=delete): its records also replay in full into
the share partitions' state (``views.share_state``, ShareUpdate over the last ShareSnapshot).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kgroup.coordinator.offsets.store import OffsetStore

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


class PartitionState:
    """Replays one partition's rows in log order."""

    __slots__ = ("offsets", "latest", "share_state")

    def __init__(self):
        self.offsets = OffsetStore()  # values: the offset commits' DecodedRows
        self.latest: dict = {}  # record identity -> row (types 2-23; a __share_group_state's latest per key)
        self.share_state = None  # a __share_group_state partition's ShareStateReplay (every record counts)

    def apply(self, row) -> None:
        self.apply_all((row,))

    def apply_all(self, rows) -> None:
        """Replay rows in log order (one call per batch: the store's operations bound once)."""
        offsets, latest = self.offsets, self.latest
        put, tombstone = offsets.put, offsets.tombstone
        for row in rows:
            kind = row.kind
            if kind != "data":
                if kind == "control":
                    offsets.end_transaction(row.producer_id, row.marker == "COMMIT")
                continue
            if row.key.family == "share-state":
                if self.share_state is None:
                    from kgroup.views.share_state import ShareStateReplay
                    self.share_state = ShareStateReplay()
                self.share_state.apply(row)
                if row.value is None:
                    latest.pop(record_identity(row), None)
                else:
                    latest[record_identity(row)] = row
            elif row.record_type in OFFSET_COMMIT_TYPES:
                k = row.key.data
                if row.value is None:  # a tombstone, transactional or not, clears the key everywhere
                    tombstone(k["group"], (k["topic"], k["partition"]))
                else:
                    put(k["group"], (k["topic"], k["partition"]), row, row.offset, row.producer_id)
            elif row.value is None:
                latest.pop(record_identity(row), None)
            else:
                latest[record_identity(row)] = row

    def committed_rows(self) -> list:
        store = self.offsets
        return [r for group in store.groups() for r in store.committed(group).values()]

    def pending_rows(self) -> dict:
        """producer id -> the rows of its open transaction."""
        out: dict = {}
        store = self.offsets
        for group in store.groups():
            for pid, offsets in store.pending(group).items():
                out.setdefault(pid, []).extend(offsets.values())
        return out


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
        out = [committed_offset(r) for p in self.partitions.values() for r in p.committed_rows()]
        return sorted(out, key=lambda c: (c.group, c.topic, c.partition))

    def open_transactions(self) -> list[tuple[int, list[CommittedOffset]]]:
        merged: dict[int, list] = {}
        for p in self.partitions.values():
            for pid, rows in p.pending_rows().items():
                merged.setdefault(pid, []).extend(committed_offset(r) for r in rows)
        return [(pid, sorted(v, key=lambda c: (c.group, c.topic, c.partition)))
                for pid, v in sorted(merged.items())]

    def share_partitions(self):
        """The share-partition states of every `__share_group_state` partition read (a
        ShareStateReplay), or None when none was read."""
        found = [p.share_state for p in self.partitions.values() if getattr(p, "share_state", None) is not None]
        if not found:
            return None
        from kgroup.views.share_state import ShareStateReplay

        merged = ShareStateReplay()
        for replay in found:
            merged.merge(replay)
        return merged

    def latest_records(self) -> list:
        rows = [r for p in self.partitions.values() for r in p.latest.values()]
        return sorted(rows, key=lambda r: (r.file, r.offset))
