"""`--view state` in Spark: each range keeps only the rows that can still change the state, then each
log partition's rows are replayed in log order by the very `PartitionState` the local engine uses.

Why dropping rows inside one range is safe (the replay's result is only the final state):
* types 2-15: `PartitionState` keeps, per decoded identity, whatever the *last* row said (upsert or
  delete), so every earlier row of that identity in the range is irrelevant;
* a plain offset commit (not transactional, or producer -1) followed later in the same partition by a
  plain commit or a tombstone for the same decoded (group, topic, partition): its only effect is the
  committed value until that later write, which then replaces or deletes it unconditionally; it never
  touches the pending transactions (a COMMIT marker in between may install or skip a pending entry,
  but the later write overwrites that too);
* transactional commits, tombstones and markers are all kept;
* error rows and rows of a batch with a bad CRC never reach the replay, as in the local engine.
"""

from __future__ import annotations

from kgroup.records.state import OFFSET_COMMIT_TYPES, PartitionState, record_identity

from .reader import RangeReader


def reduced_rows(reader: RangeReader) -> list:
    """The state-relevant rows of one range, in log order."""
    rows = []
    for batch, batch_rows in reader:
        if not batch.crc_valid:  # reported already; corrupt bytes must not change the state
            continue
        rows.extend(r for r in batch_rows if r.kind != "error")
    kept = []
    later_writes: set = set()
    later_identities: set = set()
    for row in reversed(rows):
        if row.kind == "data":
            if row.record_type in OFFSET_COMMIT_TYPES:
                k = row.key.data
                key = (k["group"], k["topic"], k["partition"])
                plain = row.value is not None and not (row.transactional and row.producer_id != -1)
                if plain and key in later_writes:
                    continue
                if plain or row.value is None:
                    later_writes.add(key)
            else:
                ident = record_identity(row)
                if ident in later_identities:
                    continue
                later_identities.add(ident)
            row.key_bytes = row.value_bytes = None  # the state's JSON never shows raw bytes of data rows
        kept.append(row)
    kept.reverse()
    return kept


def replay(ordered_rows) -> PartitionState:
    """Replay (seq, index, row) triples of one log partition, sorted here into log order."""
    state = PartitionState()
    apply = state.apply
    for _seq, _index, row in sorted(ordered_rows, key=lambda t: (t[0], t[1])):
        apply(row)
    return state
