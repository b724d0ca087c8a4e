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

A survivor whose value does not decode (a damaged value under a valid CRC, an unknown value version)
changes nothing, as in the full replay, which then keeps the key's last earlier write that decodes; the
collapse dropped those. So, rarely, a flush whose survivors report a problem reads the run again from
the input (from the position of its first batch, the same reader and cut-offs, silently: the earlier
values' own problems stay unreported) and replays the latest earlier write of each such key bytes that
decodes, merged in file order with the survivors (`earlier_writes`, the rule the Spark engine's ranges
follow too). The common path only notes where each run starts.

An input that cannot be read twice (standard input; a cluster's topic, `live`) is still collapsed:
decoding every record instead costs about four times the CPU of the collapsed replay on every read, to
cover a damage that is rare, and a cluster's coordinator topic is compacted by the broker, whose log
cleaner keeps only the latest record per key too. A note names each key whose latest value does not
decode and the offset its run started at, saying its earlier write may be missing from the state; the
value's problem is reported as for a file (exit 3).
"""

from __future__ import annotations

from itertools import count, groupby, repeat
from operator import attrgetter, itemgetter

from kgroup.records import decode_key
from kgroup.records.lazy_records import LazyRecords

from .decoder import ProblemLog, RowDecoder
from .outcome import note

_key_of = attrgetter("key")
_facts_of = itemgetter(1)
_place = itemgetter(0)


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


def earlier_writes(batches, shadowing: dict, good: set):
    """(key bytes, records, index, BatchFacts) of each record, in file order, that comes before the
    survivor of its key bytes that does not decode: shadowing maps those key bytes to the survivor's
    place (its batch's byte position, its index there). batches: the (batch, records) pairs of the part
    of the input that was collapsed, read again; only the plain batches whose keys all decode (`good`)
    were collapsed, the others were decoded whole the first time and replayed as they are. Both
    engines' one rule for which records a survivor that does not decode wrongly hid."""
    for batch, records in batches:
        if batch.is_control or not batch.crc_valid or not plain_batch(batch):
            continue
        keys = record_keys(records)
        if shadowing.keys().isdisjoint(keys) or not good.issuperset(keys):
            continue
        facts = None
        position = batch.position
        for index, key in enumerate(keys):
            place = shadowing.get(key)
            if place is not None and (position, index) < place:
                if facts is None:
                    facts = BatchFacts(batch)
                yield key, records, index, facts


class CompactingReplay:
    """Replays one input's batches into a PartitionState, decoding only the surviving records.

    read_again: (start, stop) -> the (batch, records) pairs of the input's batches that start at byte
    positions start..stop-1, read as the first time (the same reader and cut-offs); None for an input
    that cannot be read twice (module docstring)."""

    def __init__(self, partition_state, decoder, problems, read_again=None):
        self.state = partition_state
        self.decoder = decoder
        self.problems = problems
        self.survivors: dict = {}  # key bytes -> (records, index, BatchFacts), the latest per key bytes
        self.run_start = self.run_first_offset = 0  # where the first batch whose records survivors holds is
        self.read_again = read_again
        self.keys = KeyCheck(decoder.segment, decoder.family)
        # __share_group_state is not compacted: a ShareUpdate applies over every earlier one since the
        # last snapshot, so each of its records is decoded and replayed
        self.no_collapse = decoder.family == "share-state"

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
        if not plain_batch(batch) or self.no_collapse or self.state.offsets.any_open_transactions() or (
                None in map(survivors.get, keys) and not self.keys.all_decode(keys, facts)):
            self.flush()
            self.state.apply_all(self.decoder.rows(batch, list(records)))
            return
        if not survivors:
            self.run_start, self.run_first_offset = facts.position, batch.base_offset
        # C-level iteration: the latest record per key bytes wins
        survivors.update(zip(keys, zip(repeat(records), count(), repeat(facts))))
        self.problems.records_ok += len(keys)

    def flush(self) -> None:
        """Decode the survivors and replay them in log order."""
        if not self.survivors:
            return
        survivors = self.survivors
        pairs = sorted(((_record_in(records, i), facts) for records, i, facts in survivors.values()),
                       key=_file_order)
        self.survivors = {}
        reported = len(self.problems.problems)
        rows = decode_survivors(pairs, self.decoder)
        if len(self.problems.problems) != reported:  # rare: a survivor's value does not decode
            rows = self._with_earlier_writes(survivors, pairs, rows)
        self.state.apply_all(rows)

    def _with_earlier_writes(self, survivors: dict, pairs: list, rows: list) -> list:
        """rows, with the latest earlier write of each survivor's key bytes whose value did not decode
        that does decode, in file order: the run is read again up to the last such survivor (silently:
        a value a later record of its key overwrote stays unreported, as ever)."""
        shadowing = {}
        for row in rows:
            if row.kind == "error":
                _records, index, facts = survivors[row.key_bytes]
                shadowing[row.key_bytes] = (facts.position, index)
        if not shadowing:
            return rows
        if self.read_again is None:
            self._note_unread(rows)
            return rows
        stop = max(position for position, _index in shadowing.values()) + 1
        silent = RowDecoder(self.decoder.segment, self.decoder.family, ProblemLog()).rows
        writes: dict = {}  # key bytes -> its earlier writes, (records, index, BatchFacts) in file order
        for key, *write in earlier_writes(self.read_again(self.run_start, stop), shadowing, self.keys.good):
            writes.setdefault(key, []).append(write)
        found = []  # (place, row) of each key's latest earlier write that decodes
        for same_key in writes.values():
            for records, index, facts in reversed(same_key):
                record = _record_in(records, index)
                row = silent(facts, [record])[0]
                if row.kind != "error":
                    found.append(((facts.position, record.offset), row))
                    break
        if not found:
            return rows
        placed = sorted([*zip(map(_file_order, pairs), rows), *found], key=_place)
        return [row for _place_of, row in placed]

    def _note_unread(self, rows: list) -> None:
        """One line per survivor whose value does not decode, when the input cannot be read again: its
        key's earlier writes in the run may be missing from the state."""
        family = self.decoder.family or "consumer"
        for row in rows:
            if row.kind == "error":
                key = ", ".join(f"{name} {value}" for name, value in decode_key(row.key_bytes, family).data.items())
                note(f"note: {self.decoder.segment.path}: offset {row.offset}: any earlier write of this key "
                     f"({key}) since offset {self.run_first_offset} is missing from the state: this input "
                     f"cannot be read twice to find the last one that decodes (decode the partition's files)")


def decode_survivors(survivors: list, decoder) -> list:
    """The rows of (record, BatchFacts) pairs in file order, one decoder call per batch (a data
    batch: one row per record). They were counted as read when collapsed; the decoder counts them again."""
    decoder.problems.records_ok -= len(survivors)
    rows_of = decoder.rows
    rows = []
    for facts, same_batch in groupby(survivors, key=_facts_of):
        rows += rows_of(facts, [rec for rec, _ in same_batch])
    return rows
