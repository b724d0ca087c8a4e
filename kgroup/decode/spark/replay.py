"""`--view state` in Spark: each range keeps only the rows that can still change the state, then each
log partition's rows are replayed in log order by the very `PartitionState` the local engine uses.

Why dropping rows inside one range is safe (the replay's result is only the final state):
* types 2-15: `PartitionState` keeps, per decoded identity, whatever the *last* row said (upsert or
  delete), so every earlier row of that identity in the range is irrelevant;
* a plain offset commit (producer id -1, see `pending_until_marker`) followed later in the same
  partition by a plain commit or a tombstone for the same decoded (group, topic, partition): its only effect is the
  committed value until that later write, which then replaces or deletes it unconditionally; it never
  touches the pending transactions (a COMMIT marker in between may install or skip a pending entry,
  but the later write overwrites that too);
* commits with a producer id (pending until a marker), tombstones and markers are all kept;
* error rows and rows of a batch with a bad CRC never reach the replay, as in the local engine.
"""

from __future__ import annotations

from kgroup.coordinator.offsets_store import pending_until_marker
from kgroup.decode.state import OFFSET_COMMIT_TYPES, PartitionState, record_identity

from .reader import RangeReader


def reduced_rows(reader: RangeReader) -> list:
    """The state-relevant rows of one range, in log order.

    One forward pass holding only what is still relevant (memory grows with the distinct keys of the
    range, not its rows): the latest row per identity for types 2-15, the latest plain commit per
    decoded key until a later plain commit or tombstone supersedes it, and every other row.
    """
    latest_identity: dict = {}  # identity -> (position, row)
    latest_plain: dict = {}  # (group, topic, partition) -> (position, row)
    always: list = []  # (position, row): markers, tombstones, commits with a producer id
    position = 0
    for batch, batch_rows in reader:
        if not batch.crc_valid:  # reported already; corrupt bytes must not change the state
            continue
        for row in batch_rows:
            if row.kind == "error":
                continue
            position += 1
            if row.kind != "data":
                always.append((position, row))
                continue
            if row.record_type not in OFFSET_COMMIT_TYPES:  # few: their bytes go along (`state_groups` replays them)
                latest_identity[record_identity(row)] = (position, row)
                continue
            row.key_bytes = row.value_bytes = None  # the state never shows an offset commit's raw bytes
            k = row.key.data
            key = (k["group"], k["topic"], k["partition"])
            if row.value is None:
                latest_plain.pop(key, None)
                always.append((position, row))
            elif pending_until_marker(row.producer_id):
                always.append((position, row))
            else:
                latest_plain[key] = (position, row)
    kept = always + list(latest_plain.values()) + list(latest_identity.values())
    kept.sort(key=lambda pair: pair[0])
    return [row for _position, row in kept]


def replay(ordered_rows) -> PartitionState:
    """Replay (seq, index, row) triples of one log partition, sorted here into log order."""
    state = PartitionState()
    state.apply_all(row for _seq, _index, row in sorted(ordered_rows, key=lambda t: (t[0], t[1])))
    return state
