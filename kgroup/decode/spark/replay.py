"""`--view state` in Spark: each range keeps only the rows that can still change the state, then each
log partition's rows are replayed in log order by the very `PartitionState` the local engine uses.

A range is read as the local engine's state sink reads a file (`kgroup.decode.state_replay`): the
records of plain batches (no producer id, not control) are collapsed by their raw key bytes while
still undecoded, and only the survivors are decoded; every other batch is decoded whole. What a
range may drop without knowing what came before it (the replay's result is only the final state):
* a record of a plain batch followed later in the range, in a plain batch, by a record with the same
  key bytes that is not a tombstone: for types 2-15 `PartitionState` keeps, per decoded identity,
  whatever the *last* row said; a plain offset commit (see `pending_until_marker`) only sets the
  committed value until that later plain write replaces it, and never touches the pending
  transactions (a COMMIT marker in between may install or skip a pending entry, but the later write
  overwrites that too);
* among decoded rows, a type 2-15 row followed by another with its decoded identity, and a plain
  offset commit followed by a plain commit or a tombstone for the same decoded (group, topic, partition).
Tombstones, commits with a producer id and markers are all kept: a tombstone also clears pending
offsets when a transaction is open, which a range cannot know. Error rows and rows of a batch with a
bad CRC never reach the replay, as in the local engine.

As in the local engine, a value that a later record with the same key bytes overwrites (in the same
range, here) is never decoded, so a problem only that value has is not reported.
"""

from __future__ import annotations

from itertools import count, repeat

from kgroup.coordinator.offsets_store import pending_until_marker
from kgroup.decode.state import OFFSET_COMMIT_TYPES, PartitionState, record_identity
from kgroup.decode.state_replay import (BatchFacts, KeyCheck, _record_in, decode_survivors, plain_batch,
                                        record_keys)
from kgroup.records.lazy_records import LazyRecords

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

    One forward pass holding only what is still relevant (memory grows with the distinct keys of the
    range, not its records)."""
    survivors: dict = {}  # key bytes -> (records, index, BatchFacts): plain batches, latest per key bytes
    tombstones: list = []  # (records, index, BatchFacts): plain batches' tombstones, all kept
    latest_identity: dict = {}  # identity -> (place, row): decoded types 2-15
    latest_plain: dict = {}  # (group, topic, partition) -> (place, row): decoded plain commits
    always: list = []  # (place, row): markers, tombstones, commits with a producer id
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
        for index, row in enumerate(decoder.rows(batch, list(records))):
            _keep_decoded(row, (position, index), latest_identity, latest_plain, always)
    refs = sorted(list(survivors.values()) + tombstones, key=_place_of_ref)
    if refs:
        rows = decode_survivors([(_record_in(records, i), facts) for records, i, facts in refs], reader.decoder)
        for (_records, index, facts), row in zip(refs, rows):
            if row.kind != "error":
                if row.record_type in OFFSET_COMMIT_TYPES:
                    row.key_bytes = row.value_bytes = None  # the state never shows an offset commit's raw bytes
                always.append(((facts.position, index), row))
    reader.count_records()
    kept = always + list(latest_plain.values()) + list(latest_identity.values())
    kept.sort(key=_place)
    return [row for _place, row in kept]


def _place_of_ref(ref) -> tuple:
    _records, index, facts = ref
    return facts.position, index


def _place(pair) -> tuple:
    return pair[0]


def _keep_decoded(row, place, latest_identity: dict, latest_plain: dict, always: list) -> None:
    """A decoded row's part in the reduction (see the module's docstring)."""
    if row.kind == "error":
        return
    if row.kind != "data":
        always.append((place, row))
        return
    if row.record_type not in OFFSET_COMMIT_TYPES:  # few: their bytes go along (`state_groups` replays them)
        latest_identity[record_identity(row)] = (place, row)
        return
    row.key_bytes = row.value_bytes = None  # the state never shows an offset commit's raw bytes
    k = row.key.data
    key = (k["group"], k["topic"], k["partition"])
    if row.value is None:
        latest_plain.pop(key, None)
        always.append((place, row))
    elif pending_until_marker(row.producer_id):
        always.append((place, row))
    else:
        latest_plain[key] = (place, row)


def replay(ordered_rows) -> PartitionState:
    """Replay (seq, index, row) triples of one log partition, sorted here into log order."""
    state = PartitionState()
    state.apply_all(row for _seq, _index, row in sorted(ordered_rows, key=lambda t: (t[0], t[1])))
    return state
