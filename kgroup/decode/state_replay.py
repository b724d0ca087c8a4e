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

Every distinct key bytes is decoded once when first seen: a batch holding a key that does not decode
goes through the full decoder, so key problems are reported record by record as before. What changes:
a value that a later record with the same key bytes overwrites is never decoded, so a problem only
that value has is not reported.
"""

from __future__ import annotations

from itertools import count, groupby, repeat
from operator import attrgetter, itemgetter

from kgroup.records.lazy_records import LazyRecords

from .decoder import ProblemLog, RowDecoder

_key_of = attrgetter("key")
_facts_of = itemgetter(1)


class BatchFacts:
    """What the row decoder needs of a batch once its other records are gone."""

    __slots__ = ("position", "magic", "producer_id", "is_transactional", "is_control")

    def __init__(self, batch):
        self.position = batch.position
        self.magic = batch.magic
        self.producer_id = batch.producer_id
        self.is_transactional = batch.is_transactional
        self.is_control = False


class _KeyProbe:
    """A tombstone with the given key: what the row decoder makes of it tells whether the key decodes."""

    __slots__ = ("key", "value", "offset", "timestamp")

    def __init__(self, key):
        self.key, self.value, self.offset, self.timestamp = key, None, -1, -1


def _file_order(pair) -> tuple:
    """Where a (record, BatchFacts) stands in the file: its batch's byte position, then its offset."""
    record, facts = pair
    return facts.position, record.offset


def _record_in(records, index: int):
    """The record at index of a batch's LazyRecords or list, built alone."""
    return records.at(index) if type(records) is LazyRecords else records[index]


class KeyCheck:
    """Which key bytes decode, for one family: a batch holding a key that does not goes through the
    full decoder, which reports each of its records as it always has."""

    def __init__(self, segment, family):
        self.family = family
        self.good: set = set()  # key bytes the decoder reads without a problem
        self.probe = RowDecoder(segment, family, ProblemLog())  # silent: tries keys

    def all_decode(self, keys: list, facts) -> bool:
        """Whether every key decodes (facts: the batch's BatchFacts)."""
        good = self.good
        if good.issuperset(keys):
            return True
        new = list(set(keys) - good)
        ok = True
        for key, row in zip(new, self.probe.rows(facts, list(map(_KeyProbe, new)))):  # a row per probe
            if row.kind == "error":
                ok = False
            else:
                good.add(key)
        return ok


def plain_batch(batch) -> bool:
    """A batch whose records compaction may collapse: data outside any transaction."""
    return not batch.is_control and (batch.magic < 2 or batch.producer_id == -1)


def record_keys(records) -> list:
    """Every record's key bytes, in order (a LazyRecords or a list)."""
    return records.keys() if type(records) is LazyRecords else list(map(_key_of, records))


class CompactingReplay:
    """Replays one input's batches into a PartitionState, decoding only the surviving records."""

    def __init__(self, partition_state, decoder, problems):
        self.state = partition_state
        self.decoder = decoder
        self.problems = problems
        self.survivors: dict = {}  # key bytes -> (records, index, BatchFacts), the latest per key bytes
        self.keys = KeyCheck(decoder.segment, decoder.family)

    def batch(self, batch, records) -> None:
        """records: the batch's undecoded records within the --until cut-offs, a list or LazyRecords
        (whose records are built only for the survivors)."""
        if not batch.crc_valid:  # reported already; decoded for its problems, never replayed
            self.decoder.rows(batch, list(records))
            return
        facts = BatchFacts(batch)
        keys = record_keys(records)
        survivors = self.survivors
        # keys that survivors holds decode (they were checked to get there); looking them up there
        # first leaves the update below the same table entries to touch
        if not plain_batch(batch) or self.state.offsets.any_open_transactions() or (
                None in map(survivors.get, keys) and not self.keys.all_decode(keys, facts)):
            self.flush()
            self.state.apply_all(self.decoder.rows(batch, list(records)))
            return
        # C-level iteration: the latest record per key bytes wins
        survivors.update(zip(keys, zip(repeat(records), count(), repeat(facts))))
        self.problems.records_ok += len(keys)

    def flush(self) -> None:
        """Decode the survivors and replay them in log order."""
        if not self.survivors:
            return
        survivors = sorted(((_record_in(records, i), facts) for records, i, facts in self.survivors.values()),
                           key=_file_order)
        self.survivors = {}
        self.state.apply_all(decode_survivors(survivors, self.decoder))


def decode_survivors(survivors: list, decoder) -> list:
    """The rows of (record, BatchFacts) pairs in file order, one decoder call per batch (a data
    batch: one row per record). They were counted as read when collapsed; the decoder counts them again."""
    decoder.problems.records_ok -= len(survivors)
    rows_of = decoder.rows
    rows = []
    for facts, same_batch in groupby(survivors, key=_facts_of):
        rows += rows_of(facts, [rec for rec, _ in same_batch])
    return rows
