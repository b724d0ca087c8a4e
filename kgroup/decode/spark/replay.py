"""`--view state` in Spark: each range keeps only the records that can still change the state, then
each log partition's records are replayed in log order by the very `PartitionState` the local engine uses.

A range is read as the local engine's state sink reads a file (`kgroup.decode.state_replay`), and what
it keeps stays undecoded: the records of plain batches (no producer id, not control) are collapsed by
their raw key bytes, the latest per key bytes surviving; the records of transactional data batches are
all kept; control batches are decoded (their markers kept). A record of a plain batch followed later in
the range, in a plain batch, by a record with the same key bytes that is not a tombstone can go
whatever came before the range: for types 2-15 `PartitionState` keeps, per decoded identity, whatever
the *last* row said; a plain offset commit (see `pending_until_marker`) only sets the committed value
until that later plain write replaces it, and never touches the pending transactions (a COMMIT marker
in between may install or skip a pending entry, but the later write overwrites that too). Tombstones
are kept: one also clears pending offsets when a transaction is open, which a range cannot know.

Every key kept was decoded once (`KeyCheck`: a batch with a key that does not decode is decoded whole,
its problems reported, its error rows dropped). A kept offset commit's value that `fast_rows` reads
(laid out as Kafka writes it) decodes without a problem, so it is not decoded here; every other kept
value is, in file order, its problems reported and its error rows dropped, as the local engine decodes
its survivors. As there, a value that a later record with the same key bytes overwrites (in the same
range, here) is never decoded, so a problem only that value has is not reported.

The replay walks the partition's ranges backwards and drops what a later record supersedes in the whole
log: a type 2-15 record followed by one with the same key bytes, a plain offset commit followed by a
plain commit or a tombstone with the same key bytes; then it decodes the rest (only the partition's
last writes) and replays them. A `__share_group_state` partition is not compacted (a ShareUpdate
applies over every earlier one since the last ShareSnapshot): its ranges keep every record and the
replay keeps every one of them, so its share partitions' state is the local engine's. Ranges travel as plain tuples of ints and bytes (`pack_range`), the
replayed state as its rows' fields (`pack_state`), pickled at C speed: Spark's cloudpickle of row
objects costs twenty times more.
"""

from __future__ import annotations

import pickle
from bisect import bisect_right
from dataclasses import fields
from itertools import count, groupby, repeat
from operator import attrgetter, itemgetter

from kgroup.coordinator.offsets.store import pending_until_marker
from kgroup.decode.decoder import DecodedRow, ProblemLog, RowDecoder
from kgroup.decode.fast_rows import OffsetCommitValues
from kgroup.decode.state import OFFSET_COMMIT_TYPES, PartitionState, record_identity
from kgroup.decode.state_replay import (BatchFacts, KeyCheck, decode_survivors, earlier_writes, plain_batch,
                                       record_keys)
from kgroup.records.batch_model import Record
from kgroup.records.lazy_records import ZIGZAG, LazyRecords
from kgroup.records.schema_records import DecodedKey, DecodedValue
from kgroup.records.segment import SegmentFile

from .reader import RangeReader

#: family -> KeyCheck: the keys known to decode, kept for a Python worker's life (one task reads one
#: file's range; the next task on this worker meets the same keys)
_key_checks: dict = {}


def _key_check(decoder) -> KeyCheck:
    check = _key_checks.get(decoder.family)
    if check is None or len(check.good) > 1_000_000:
        check = _key_checks[decoder.family] = KeyCheck(decoder.segment, decoder.family)
    return check


#: Checks that a value is laid out as Kafka writes it (then it decodes without a problem).
_VALUES = OffsetCommitValues("{data}", str)


def _has_tombstones(records) -> bool:
    """Whether any record's value is null (a run of tombstones has a negative value size)."""
    if type(records) is LazyRecords:
        return any(part[2] < 0 if type(part) is tuple else any(r.value is None for r in part)
                   for part in records.parts)
    return any(r.value is None for r in records)


#: A kept record as it travels: where it is (its batch's byte position, its index there), the
#: batch's magic, producer id and transactional flag, the control marker and coordinator epoch (a
#: control record; else None), offset, timestamp, key and value bytes.
(_POSITION, _INDEX, _MAGIC, _PRODUCER, _TRANSACTIONAL, _CONTROL, _EPOCH, _OFFSET, _TIMESTAMP, _KEY,
 _VALUE) = range(11)


def _raw(facts, index: int, control, coordinator_epoch, offset: int, timestamp: int, key, value) -> tuple:
    return (facts.position, index, facts.magic, facts.producer_id, facts.is_transactional, control,
            coordinator_epoch, offset, timestamp, key, value)


def _raw_of(facts, index: int, record) -> tuple:
    return _raw(facts, index, record.control, record.coordinator_epoch, record.offset, record.timestamp,
                record.key, record.value)


def kept_records(reader: RangeReader) -> list:
    """The range's records that may still change the state, undecoded, in log order (`_raw` tuples).

    One forward pass holding only what may still be relevant (memory grows with the distinct keys of
    the range and the records of its transactional batches, not with all its records)."""
    survivors: dict = {}  # key bytes -> (records, index, BatchFacts): plain batches, latest per key bytes
    refs: list = []  # (records, index, BatchFacts): plain batches' tombstones, transactional batches' records
    raws: list = []  # records of batches decoded whole (control, a key that does not decode)
    check = None
    decoder = None
    for batch, records in reader.records():
        decoder = reader.decoder
        if not batch.crc_valid:  # reported already; decoded for its problems, never replayed
            decoder.rows(batch, list(records))
            continue
        facts = BatchFacts(batch)
        if batch.is_control:
            records = list(records)
            raws += [_raw_of(facts, index, record) for index, record in enumerate(records)
                     if decoder.rows(batch, [record])]  # an unknown control type: reported, dropped
            continue
        if check is None:
            check = _key_check(decoder)
        keys = record_keys(records)
        if not check.all_decode(keys, facts):
            records = list(records)
            raws += [_raw_of(facts, index, record) for index, (record, row)
                     in enumerate(zip(records, decoder.rows(batch, records))) if row.kind != "error"]
            continue
        if not plain_batch(batch) or decoder.family == "share-state":  # not compacted: every record counts
            refs += zip(repeat(records), range(len(keys)), repeat(facts))
        elif not _has_tombstones(records):  # C-level: the latest record per key bytes wins
            survivors.update(zip(keys, zip(repeat(records), count(), repeat(facts))))
        else:
            for index, (key, record) in enumerate(zip(keys, records)):
                if record.value is None:
                    refs.append((records, index, facts))
                else:
                    survivors[key] = (records, index, facts)
        decoder.problems.records_ok += len(keys)
    refs += survivors.values()
    refs.sort(key=_place_of_ref)
    if decoder is not None:
        kept, dropped = _checked([_raw(facts, index, *_fields_in(records, index)) for records, index, facts in refs],
                                 decoder)
        raws += kept
        shadowing = {raw[_KEY]: _place_of_raw(raw) for raw in dropped
                     if raw[_KEY] in survivors and _place_of_ref(survivors[raw[_KEY]]) == _place_of_raw(raw)}
        if shadowing:
            raws += _shadowed(reader, shadowing, check)
    reader.count_records()
    raws.sort(key=_place_of_raw)
    return raws


def _shadowed(reader: RangeReader, shadowing: dict, check) -> list:
    """The records a survivor that does not decode overwrote (rare: a damaged value): collapsing
    by key bytes assumed the later record replaces them, but a record that does not decode changes
    nothing, so the earlier writes of its key in the range's plain batches are read again (a second,
    silent pass over the range, `state_replay.earlier_writes`) and those that decode are kept."""
    again = RangeReader(reader.task, reader.until_offset, reader.until_time)
    found = [_raw(facts, index, *_fields_in(records, index))
             for _key, records, index, facts in earlier_writes(again.records(), shadowing, check.good)]
    if not found:
        return []
    rows = RowDecoder(again.decoder.segment, again.decoder.family, ProblemLog()).rows
    return [raw for raw in found if rows(_Facts(raw), [_record_of(raw)])[0].kind != "error"]


def _fields_in(records, index: int) -> tuple:
    """control, coordinator epoch, offset, timestamp, key and value of the record at index of a
    batch's records (a LazyRecords' run row read as `lazy_records.build_run` reads it, without a Record)."""
    if type(records) is LazyRecords:
        starts = records.starts
        i = bisect_right(starts, index) - 1
        part = records.parts[i]
        if type(part) is tuple:
            ts, od, key, value = part[0][index - starts[i]]
            return (None, None, records.base_offset + ZIGZAG[od], records.base_ts + ZIGZAG[ts], key,
                    None if part[2] < 0 else value)
        record = part[index - starts[i]]
    else:
        record = records[index]
    return record.control, record.coordinator_epoch, record.offset, record.timestamp, record.key, record.value


def _checked(raws: list, decoder) -> tuple[list, list]:
    """(the `_raw` tuples whose values decode, those whose values do not), from raws in file order:
    values `fast_rows` reads (plain offset commits) and tombstones as they are, the others decoded
    now, their problems reported."""
    fast = decoder.family in (None, "consumer")
    one = _VALUES.one
    out, doubtful = [], []
    for raw in raws:
        value, key = raw[_VALUE], raw[_KEY]
        if value is None or (fast and key[0] == 0 and key[1] in OFFSET_COMMIT_TYPES and one(value) is not None):
            out.append(raw)
        else:
            doubtful.append(raw)
    dropped = []
    if doubtful:
        rows = decode_survivors([(_record_of(raw), _Facts(raw)) for raw in doubtful], decoder)
        for raw, row in zip(doubtful, rows):
            (dropped if row.kind == "error" else out).append(raw)
    return out, dropped


def _place_of_ref(ref) -> tuple:
    _records, index, facts = ref
    return facts.position, index


def _place_of_raw(raw) -> tuple:
    return raw[_POSITION], raw[_INDEX]


def pack_range(task, raws: list) -> bytes:
    """A range's kept records with what decodes them again (its segment and family)."""
    segment = (task.path, task.topic, task.partition, task.base_offset)
    return pickle.dumps((segment, task.family, raws), protocol=pickle.HIGHEST_PROTOCOL)


def replay(parts) -> PartitionState:
    """Replay one log partition's (seq, `pack_range` bytes) pairs, one per range, in log order (by seq).

    Walked backwards, each range unpacked alone keeps only what no later record supersedes (module
    docstring), so memory holds the packed ranges and the partition's last writes, not every range's
    records; those are then decoded (their problems were reported by the ranges) and replayed."""
    later_plain: set = set()  # key bytes of a later plain offset commit or tombstone
    later: set = set()  # key bytes of a later record of types 2-15
    kept_ranges = []
    for _seq, packed in sorted(parts, key=lambda part: part[0], reverse=True):
        segment, family, raws = pickle.loads(packed)
        if family == "share-state":     # not compacted: each ShareUpdate applies over the earlier ones
            kept_ranges.append((segment, family, raws))
            continue
        kept = []
        for raw in reversed(raws):
            key = raw[_KEY]
            if raw[_CONTROL] is not None:
                kept.append(raw)
            elif key[0] == 0 and key[1] in OFFSET_COMMIT_TYPES:
                if raw[_VALUE] is None:
                    later_plain.add(key)
                    kept.append(raw)
                elif pending_until_marker(raw[_PRODUCER] if raw[_MAGIC] >= 2 else -1):
                    kept.append(raw)
                elif key not in later_plain:
                    later_plain.add(key)
                    kept.append(raw)
            elif key not in later:
                later.add(key)
                kept.append(raw)
        kept.reverse()
        kept_ranges.append((segment, family, kept))
    state = PartitionState()
    for segment, family, kept in reversed(kept_ranges):
        state.apply_all(_decoded(segment, family, kept))
    return state


def _record_of(raw) -> Record:
    """What RowDecoder reads of a record, from a `_raw` tuple."""
    return Record(raw[_OFFSET], raw[_TIMESTAMP], -1, raw[_KEY], raw[_VALUE], [], -1, -1,
                  control=raw[_CONTROL], coordinator_epoch=raw[_EPOCH])


class _Facts:
    """What RowDecoder reads of a batch (see `state_replay.BatchFacts`), from a `_raw` tuple."""

    __slots__ = ("position", "magic", "producer_id", "is_transactional", "is_control")

    def __init__(self, raw):
        self.position, _index, self.magic, self.producer_id, self.is_transactional = raw[:5]
        self.is_control = raw[_CONTROL] is not None


def _decoded(segment: tuple, family, raws: list) -> list:
    """The rows of one range's `_raw` tuples, one decoder call per batch (silent: the range reported
    every problem they have)."""
    decoder = RowDecoder(SegmentFile(*segment), family, ProblemLog())
    rows: list = []
    for _position, same_batch in groupby(raws, key=itemgetter(_POSITION)):
        same_batch = list(same_batch)
        records = [_record_of(raw) for raw in same_batch]
        rows += decoder.rows(_Facts(same_batch[0]), records)
    return rows


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

    __slots__ = ("committed", "pending", "latest", "share_state")

    def __init__(self, committed: list, pending: dict, latest: dict, share_state=None):
        self.committed, self.pending, self.latest = committed, pending, latest
        self.share_state = share_state   # a __share_group_state partition's ShareStateReplay

    def committed_rows(self) -> list:
        return self.committed

    def pending_rows(self) -> dict:
        return self.pending


def pack_state(state: PartitionState) -> bytes:
    """What the driver renders of a replayed partition: its committed, pending and latest rows."""
    pending = state.pending_rows()
    return pickle.dumps((pack(state.committed_rows()), [(pid, pack(rows)) for pid, rows in pending.items()],
                         pack(state.latest.values()), state.share_state), protocol=pickle.HIGHEST_PROTOCOL)


def unpack_state(packed: bytes) -> ReplayedPartition:
    committed, pending, latest, share_state = pickle.loads(packed)
    return ReplayedPartition(unpack(committed), {pid: unpack(rows) for pid, rows in pending},
                             {record_identity(row): row for row in unpack(latest)}, share_state)
