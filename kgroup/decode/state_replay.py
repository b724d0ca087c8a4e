"""`--view state` on the local engine: replay a partition without decoding what compaction discards.

The state keeps the latest record per key, so most records of a dump are overwritten before anyone
looks at them. A run of plain records (no producer id, not a control batch) is collapsed by its raw
key bytes: the latest record for each key bytes is kept undecoded, and only those survivors are
decoded and replayed, in log order, through `PartitionState.apply_all` (the coordinator's
`OffsetStore`, the one rule for commits and transactions) when the run ends: before any transactional
or control batch, and at the end of the input.

Collapsing is exact because, while no transaction is open, the store's operations on plain records
are last-writer-wins per decoded key: `put` overwrites the committed offset, `tombstone` deletes it,
the `latest` map of types 2-15 does the same. Raw keys that decode to one key (OffsetCommitKey v0
and v1 for one partition) meet in the store, replayed in log order, so the later one wins as before.
While a transaction is open a tombstone also edits the pending offsets, so every batch then goes
through the full decoder at once. CRC is still checked on every batch (by the reader).

What changes: a record that a later record with the same key bytes overwrites is never decoded, so
a value only it holds that would not decode is not reported (its key bytes are the survivor's).
"""

from __future__ import annotations

from itertools import repeat
from operator import attrgetter

_key_of = attrgetter("key")


class BatchFacts:
    """What the row decoder needs of a batch once its other records are gone."""

    __slots__ = ("position", "magic", "producer_id", "is_transactional", "is_control")

    def __init__(self, batch):
        self.position = batch.position
        self.magic = batch.magic
        self.producer_id = batch.producer_id
        self.is_transactional = batch.is_transactional
        self.is_control = False


class CompactingReplay:
    """Replays one input's batches into a PartitionState, decoding only the surviving records."""

    def __init__(self, partition_state, decoder, problems):
        self.state = partition_state
        self.decoder = decoder
        self.problems = problems
        self.survivors: dict = {}  # key bytes -> (record, BatchFacts), the latest per key bytes

    def batch(self, batch, records) -> None:
        """records: the batch's undecoded records within the --until cut-offs."""
        if not batch.crc_valid:  # reported already; decoded for its problems, never replayed
            self.decoder.rows(batch, records)
            return
        plain = not batch.is_control and (batch.magic < 2 or batch.producer_id == -1)
        if not plain or self.state.offsets.any_open_transactions():
            self.flush()
            self.state.apply_all(self.decoder.rows(batch, records))
            return
        survivors = self.survivors
        # C-level iteration: the latest record per key bytes wins, a keyless record lands under None
        survivors.update(zip(map(_key_of, records), zip(records, repeat(BatchFacts(batch)))))
        self.problems.records_ok += len(records)
        if None in survivors:  # an error row each, reported now as the full decoder does
            del survivors[None]
            keyless = [rec for rec in records if rec.key is None]
            self.problems.records_ok -= len(keyless)
            self.decoder.rows(batch, keyless)

    def flush(self) -> None:
        """Decode the survivors and replay them in log order."""
        if not self.survivors:
            return
        survivors = sorted(self.survivors.values(), key=lambda pair: pair[0].offset)
        self.survivors = {}
        self.problems.records_ok -= len(survivors)  # counted as read; the decoder counts them again
        rows_of = self.decoder.rows
        rows = []
        for rec, facts in survivors:
            rows += rows_of(facts, (rec,))
        self.state.apply_all(rows)
