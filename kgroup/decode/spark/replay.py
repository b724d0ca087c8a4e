"""`--view state` in Spark: each range keeps only the rows that can still change the state, then each
log partition's rows are replayed in log order by the very `PartitionState` the local engine uses.

A range is read as the local engine's state sink reads a file (`kgroup.decode.state_replay`): the
records of plain batches (no producer id, not control) are collapsed by their raw key bytes while
still undecoded, and only the survivors are decoded; every other batch is decoded whole, and all its
rows but errors are kept. A record of a plain batch followed later in the range, in a plain batch, by
a record with the same key bytes that is not a tombstone can go whatever came before the range: for
types 2-15 `PartitionState` keeps, per decoded identity, whatever the *last* row said; a plain offset
commit (see `pending_until_marker`) only sets the committed value until that later plain write
replaces it, and never touches the pending transactions (a COMMIT marker in between may install or
skip a pending entry, but the later write overwrites that too). Tombstones are kept: one also clears
pending offsets when a transaction is open, which a range cannot know.

The replay then drops, across the partition's ranges, what `_still_relevant` proves superseded in the
whole log order: a type 2-15 row followed by another with its decoded identity, and a plain offset
commit followed by a plain commit or a tombstone for the same decoded (group, topic, partition);
tombstones, commits with a producer id and markers all stay. Error rows and rows of a batch with a bad
CRC never reach the replay, as in the local engine.

As in the local engine, a value that a later record with the same key bytes overwrites (in the same
range, here) is never decoded, so a problem only that value has is not reported.

What travels between the stages (a range's kept rows to its log partition's replay, the replayed state
to the driver) is `pack`ed: the rows' fields as plain tuples pickled at C speed, a twentieth of the
cost of pickling the row objects (whose slots a Python method copies one by one) as Spark would.
"""

from __future__ import annotations

import pickle
from dataclasses import fields
from itertools import count, repeat
from operator import attrgetter

from kgroup.coordinator.offsets_store import pending_until_marker
from kgroup.decode.decoder import DecodedRow
from kgroup.decode.state import OFFSET_COMMIT_TYPES, PartitionState, identity, record_identity
from kgroup.decode.state_replay import (BatchFacts, KeyCheck, _record_in, decode_survivors, plain_batch,
                                        record_keys)
from kgroup.records.lazy_records import LazyRecords
from kgroup.records.schema_records import DecodedKey, DecodedValue

from .reader import RangeReader

#: family -> KeyCheck: the keys known to decode, kept for a Python worker's life (one task reads one
#: file's range; the next task on this worker meets the same keys)
_key_checks: dict = {}


def _key_check(decoder) -> KeyCheck:
    check = _key_checks.get(decoder.family)
    if check is None or len(check.good) > 1_000_000:
        check = _key_checks[decoder.family] = KeyCheck(decoder.segment, decoder.family)
    return check


def _has_tombstones(records) -> bool:
    """Whether any record's value is null (a run of tombstones has a negative value size)."""
    if type(records) is LazyRecords:
        return any(part[2] < 0 if type(part) is tuple else any(r.value is None for r in part)
                   for part in records.parts)
    return any(r.value is None for r in records)


def reduced_rows(reader: RangeReader) -> list:
    """The state-relevant rows of one range, in log order.

    One forward pass holding only what may still be relevant (memory grows with the distinct keys of
    the range and the records of its transactional batches, not with all its records)."""
    survivors: dict = {}  # key bytes -> (records, index, BatchFacts): plain batches, latest per key bytes
    tombstones: list = []  # (records, index, BatchFacts): plain batches' tombstones, all kept
    decoded: list = []  # (place, row): the rows of batches decoded whole
    check = None
    for batch, records in reader.records():
        decoder = reader.decoder
        if not batch.crc_valid:  # reported already; decoded for its problems, never replayed
            decoder.rows(batch, list(records))
            continue
        if plain_batch(batch):
            if check is None:
                check = _key_check(decoder)
            facts = BatchFacts(batch)
            keys = record_keys(records)
            if check.all_decode(keys, facts):
                if not _has_tombstones(records):  # C-level: the latest record per key bytes wins
                    survivors.update(zip(keys, zip(repeat(records), count(), repeat(facts))))
                else:
                    for index, (key, record) in enumerate(zip(keys, records)):
                        if record.value is None:
                            tombstones.append((records, index, facts))
                        else:
                            survivors[key] = (records, index, facts)
                decoder.problems.records_ok += len(keys)
                continue
        position = batch.position
        decoded += [((position, index), row) for index, row in enumerate(decoder.rows(batch, list(records)))]
    refs = sorted(list(survivors.values()) + tombstones, key=_place_of_ref)
    if refs:
        rows = decode_survivors([(_record_in(records, i), facts) for records, i, facts in refs], reader.decoder)
        decoded += [((facts.position, index), row) for (_records, index, facts), row in zip(refs, rows)]
    reader.count_records()
    decoded.sort(key=_place)
    kept = []
    for _place_, row in decoded:
        if row.kind != "error":
            if row.kind == "data" and row.record_type in OFFSET_COMMIT_TYPES:
                row.key_bytes = row.value_bytes = None  # the state never shows an offset commit's raw bytes
            kept.append(row)
    return kept


def _place_of_ref(ref) -> tuple:
    _records, index, facts = ref
    return facts.position, index


def _place(pair) -> tuple:
    return pair[0]


def replay(parts) -> PartitionState:
    """Replay one log partition's (seq, packed rows) pairs, one per range, in log order (by seq).

    The ranges' rows are reduced across ranges (`_still_relevant`) while still packed (each range
    kept the latest write of its keys; the next range's overwrite most of them), so only the
    partition's last writes become row objects."""
    flats: list = []
    for _seq, packed in sorted(parts, key=lambda part: part[0]):
        flats += pickle.loads(packed)
    state = PartitionState()
    state.apply_all(_rows(flats[i] for i in _still_relevant(flats)))
    return state


def _still_relevant(flats: list) -> list:
    """Indexes of the packed rows (in log order) that may still change the state (module docstring)."""
    latest_identity: dict = {}
    latest_plain: dict = {}
    always: list = []
    kind_at, type_at, producer_at = _ROW_FIELDS.index("kind"), _ROW_FIELDS.index("record_type"), \
        _ROW_FIELDS.index("producer_id")
    data_at = _KEY_FIELDS.index("data")
    for index, flat in enumerate(flats):
        kind = flat[kind_at]
        if kind != "data":
            if kind != "error":
                always.append(index)
            continue
        data = flat[_KEY_AT][data_at]
        record_type = flat[type_at]
        if record_type not in OFFSET_COMMIT_TYPES:
            latest_identity[identity(record_type, data)] = index
            continue
        key = (data["group"], data["topic"], data["partition"])
        if flat[_VALUE_AT] is None:
            latest_plain.pop(key, None)
            always.append(index)
        elif pending_until_marker(flat[producer_at]):
            always.append(index)
        else:
            latest_plain[key] = index
    kept = always + list(latest_plain.values()) + list(latest_identity.values())
    kept.sort()
    return kept


# ---------------------------------------------------------------------------------------- transport

_ROW_FIELDS = tuple(f.name for f in fields(DecodedRow))
_KEY_FIELDS = tuple(f.name for f in fields(DecodedKey))
_VALUE_FIELDS = tuple(f.name for f in fields(DecodedValue))
_row_fields, _key_fields, _value_fields = attrgetter(*_ROW_FIELDS), attrgetter(*_KEY_FIELDS), attrgetter(*_VALUE_FIELDS)
_KEY_AT, _VALUE_AT = _ROW_FIELDS.index("key"), _ROW_FIELDS.index("value")


def pack(rows) -> bytes:
    """DecodedRows as bytes: each row's fields (its key's and value's as tuples of their own)."""
    out = []
    append = out.append
    for row in rows:
        flat = list(_row_fields(row))
        key, value = flat[_KEY_AT], flat[_VALUE_AT]
        if key is not None:
            flat[_KEY_AT] = _key_fields(key)
        if value is not None:
            flat[_VALUE_AT] = _value_fields(value)
        append(flat)
    return pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL)


def unpack(packed: bytes) -> list:
    """The DecodedRows `pack` was given, in order."""
    return _rows(pickle.loads(packed))


def _rows(flats) -> list:
    rows = []
    append = rows.append
    for flat in flats:
        key, value = flat[_KEY_AT], flat[_VALUE_AT]
        if key is not None:
            flat[_KEY_AT] = DecodedKey(*key)
        if value is not None:
            flat[_VALUE_AT] = DecodedValue(*value)
        append(DecodedRow(*flat))
    return rows


class ReplayedPartition:
    """A log partition's replayed state as the driver renders it (`state.OffsetsState` reads
    `committed_rows()`, `pending_rows()` and `latest` of each partition), unpacked from `pack_state`."""

    __slots__ = ("committed", "pending", "latest")

    def __init__(self, committed: list, pending: dict, latest: dict):
        self.committed, self.pending, self.latest = committed, pending, latest

    def committed_rows(self) -> list:
        return self.committed

    def pending_rows(self) -> dict:
        return self.pending


def pack_state(state: PartitionState) -> bytes:
    """What the driver renders of a replayed partition: its committed, pending and latest rows."""
    pending = state.pending_rows()
    return pickle.dumps((pack(state.committed_rows()), [(pid, pack(rows)) for pid, rows in pending.items()],
                         pack(state.latest.values())), protocol=pickle.HIGHEST_PROTOCOL)


def unpack_state(packed: bytes) -> ReplayedPartition:
    committed, pending, latest = pickle.loads(packed)
    return ReplayedPartition(unpack(committed), {pid: unpack(rows) for pid, rows in pending},
                             {record_identity(row): row for row in unpack(latest)})
