"""The share-partition state a `__share_group_state` dump holds, replayed as Kafka 4.4's share
coordinator replays it (ShareCoordinatorShard.replay): per (group, topic id, partition), a
ShareSnapshot is the whole state (a tombstone deletes it), and a ShareUpdate is applied over what is
there — its start offset and leader epoch unless -1, its delivery-complete count, and its state
batches combined with the earlier ones (PersisterStateBatchCombiner: batches below the start offset
dropped or clipped, overlaps won by the higher delivery count, then the higher delivery state). The
state epoch, snapshot epoch and timestamps stay the snapshot's.

`__share_group_state` is not compacted (Kafka creates it with cleanup.policy=delete and deletes the
records before each partition's last snapshot itself), so every record counts, in log order: the
latest record per key is not the state. Kafka writes no ShareUpdate tombstone (its replay would fail
on one); one is skipped here.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

SHARE_SNAPSHOT = 0
SHARE_UPDATE = 1


@dataclass(frozen=True, slots=True)
class StateBatch:
    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int

    def to_json(self) -> dict:
        return {"first_offset": self.first_offset, "last_offset": self.last_offset,
                "delivery_state": self.delivery_state, "delivery_count": self.delivery_count}


@dataclass(slots=True)
class SharePartitionState:
    """One share partition's state (Kafka's ShareGroupOffset), and where the log last wrote it."""

    group: str
    topic_id: uuid.UUID
    partition: int
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    batches: list = field(default_factory=list)
    create_timestamp: int = 0
    write_timestamp: int = 0
    updates_since_snapshot: int = 0
    record_offset: int = -1

    def to_json(self, names: dict | None = None) -> dict:
        return {"group": self.group, "topic": (names or {}).get(self.topic_id),
                "topic_id": topic_id_text(self.topic_id), "partition": self.partition,
                "start_offset": self.start_offset, "state_epoch": self.state_epoch,
                "leader_epoch": self.leader_epoch, "snapshot_epoch": self.snapshot_epoch,
                "delivery_complete_count": self.delivery_complete_count,
                "create_timestamp": self.create_timestamp, "write_timestamp": self.write_timestamp,
                "updates_since_snapshot": self.updates_since_snapshot, "record_offset": self.record_offset,
                "batches": [b.to_json() for b in self.batches]}


def topic_id_text(topic_id: uuid.UUID) -> str:
    """Kafka's Uuid.toString(): unpadded base64url (as kafka-dump-log and kgroup's JSON show ids)."""
    import base64

    return base64.urlsafe_b64encode(topic_id.bytes).decode("ascii").rstrip("=")


def as_uuid(raw) -> uuid.UUID:
    return raw if isinstance(raw, uuid.UUID) else uuid.UUID(bytes=bytes(raw))


def _batches(value: dict) -> list:
    return [StateBatch(b["firstOffset"], b["lastOffset"], b["deliveryState"], b["deliveryCount"])
            for b in value.get("stateBatches") or ()]


def combine_state_batches(so_far: list, new: list, start_offset: int) -> list:
    """Kafka's PersisterStateBatchCombiner.combineStateBatches: the merged, pruned, non-overlapping
    batches. Where batches overlap the one with the higher delivery count wins, then the higher
    delivery state; adjacent pieces with the same state and count are joined."""
    pruned = []
    for b in (*so_far, *new):
        if start_offset != -1 and b.last_offset < start_offset:
            continue
        if start_offset == -1 or b.first_offset >= start_offset:
            pruned.append(b)
        else:
            pruned.append(StateBatch(start_offset, b.last_offset, b.delivery_state, b.delivery_count))
    if len(pruned) < 2:
        return pruned
    events = []  # (offset, is_begin, priority); an end sorts before a begin at the same offset
    for b in pruned:
        priority = (b.delivery_count, b.delivery_state)
        events.append((b.first_offset, True, priority))
        events.append((b.last_offset + 1, False, priority))
    events.sort(key=lambda e: (e[0], e[1]))
    active: dict = {}
    out: list = []
    open_from, winner = -1, None
    i = 0
    while i < len(events):
        offset = events[i][0]
        if winner is not None and offset > open_from:
            _append_coalesced(out, open_from, offset - 1, winner)
        while i < len(events) and events[i][0] == offset:
            _, begin, priority = events[i]
            i += 1
            if begin:
                active[priority] = active.get(priority, 0) + 1
            elif active[priority] == 1:
                del active[priority]
            else:
                active[priority] -= 1
        winner = max(active) if active else None
        open_from = offset
    return out


def _append_coalesced(out: list, first: int, last: int, winner: tuple) -> None:
    count, state = winner
    if out:
        tail = out[-1]
        if tail.last_offset + 1 == first and tail.delivery_state == state and tail.delivery_count == count:
            out[-1] = StateBatch(tail.first_offset, last, state, count)
            return
    out.append(StateBatch(first, last, state, count))


class ShareStateReplay:
    """Fed a `__share_group_state` partition's decoded rows in log order."""

    def __init__(self):
        self.partitions: dict = {}  # (group, topic id, partition) -> SharePartitionState

    def apply_all(self, rows) -> None:
        for row in rows:
            if row.kind == "data" and row.key is not None:
                self.apply(row)

    def apply(self, row) -> None:
        key, value = row.key.data, row.value.data if row.value is not None else None
        place = (key["groupId"], as_uuid(key["topicId"]), key["partition"])
        if row.record_type == SHARE_SNAPSHOT:
            if value is None:
                self.partitions.pop(place, None)
                return
            self.partitions[place] = SharePartitionState(
                *place, value["snapshotEpoch"], value["stateEpoch"], value["leaderEpoch"], value["startOffset"],
                value.get("deliveryCompleteCount", -1), _batches(value), value["createTimestamp"],
                value["writeTimestamp"], 0, row.offset)
        elif row.record_type == SHARE_UPDATE and value is not None:
            current = self.partitions.get(place)
            if current is None:  # an update with no snapshot before it: Kafka keeps it as it is
                self.partitions[place] = SharePartitionState(
                    *place, value["snapshotEpoch"], 0, value["leaderEpoch"], value["startOffset"],
                    value.get("deliveryCompleteCount", -1), _batches(value), 0, 0, 1, row.offset)
                return
            start = current.start_offset if value["startOffset"] == -1 else value["startOffset"]
            current.leader_epoch = current.leader_epoch if value["leaderEpoch"] == -1 else value["leaderEpoch"]
            current.start_offset = start
            current.delivery_complete_count = value.get("deliveryCompleteCount", -1)
            current.batches = combine_state_batches(current.batches, _batches(value), start)
            current.updates_since_snapshot += 1
            current.record_offset = row.offset

    def merge(self, other: "ShareStateReplay") -> None:
        """Another `__share_group_state` partition's (each share partition lives in one)."""
        self.partitions.update(other.partitions)

    def states(self, group: str | None = None) -> list:
        return [s for _key, s in sorted(self.partitions.items(), key=lambda kv: (kv[0][0], str(kv[0][1]), kv[0][2]))
                if group is None or s.group == group]
