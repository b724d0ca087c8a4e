"""Parquet columns (`render.COLUMNS`) of a batch's rows, offset commits straight from the undecoded records.

The Spark engine's Parquet output, on the local engine's fast path (`fast_rows`): a run of offset
commits that the reader unpacked whole (`lazy_records`), whose keys are known and kept by the row
filter and whose values share one plain layout (empty metadata), costs a few list operations, not a
few per record:

* the columns a key decides (type, key_version, group, topic, topic_partition, member_id, key_json)
  are one index per record into a table of the keys seen, taken in Arrow;
* the columns the batch or the run decides (file, partition, value_version, tombstone, producer_id,
  transactional, metadata, and the other kinds' columns, null here) are one entry per run, repeated in
  Arrow;
* offsets are a range when the run's offset deltas are consecutive (Kafka writes them so), timestamps
  one value when the run's are equal; the value's fields come from one struct unpack of the joined values;
* the value's JSON (`value_json`: a plain offset commit has one only for Kafka 4.4's topicId, a tagged
  field that is not a column) is joined in Arrow from the value's columns and the tagged field's text,
  with the literal text of the layout's JSON format between them.

Every other record goes the generic way: `RowDecoder` and `render.ParquetRows.row`, in record order, so
a record that does not decode is reported exactly as before; its row is a run of one. The same
`ParquetBlock` gives pyarrow's record batch or, for Spark's own writer, plain tuples.
tests/decode/test_fast_parquet.py holds both ways to the same rows, problems and counts.
"""

from __future__ import annotations

import re
import struct
from itertools import chain, repeat
from operator import itemgetter

from kgroup.records.batch_model import Record
from kgroup.records.lazy_records import ZIGZAG, part_fields, record_parts
from kgroup.writers import dumps_records

from .fast_rows import LAYOUTS, OffsetCommitValues, _key_of_row, _value_of_row, fast_batch, is_offset_commit
from .render import COLUMNS, ParquetRows

_WIDTH = len(COLUMNS)
_INDEX = {name: i for i, (name, _kind, _doc) in enumerate(COLUMNS)}
#: columns a record's key decides (an error or control row: its kind)
KEY_COLUMNS = tuple(_INDEX[n] for n in ("type", "key_version", "group", "topic", "topic_partition", "member_id",
                                        "key_json"))
#: columns each record has its own value of
ROW_COLUMNS = tuple(_INDEX[n] for n in ("offset", "committed_offset"))
#: the rest: per run of offset commits one value (or, where its records differ, a list of theirs)
RUN_COLUMNS = tuple(i for i in range(_WIDTH) if i not in KEY_COLUMNS and i not in ROW_COLUMNS)
_key_of_tuple, _row_of_tuple, _run_of_tuple = itemgetter(*KEY_COLUMNS), itemgetter(*ROW_COLUMNS), \
    itemgetter(*RUN_COLUMNS)
_RUN_AT = {column: i for i, column in enumerate(RUN_COLUMNS)}
(_AT_FILE, _AT_PARTITION, _AT_TIMESTAMP, _AT_VERSION, _AT_TOMBSTONE, _AT_PRODUCER, _AT_TRANSACTIONAL,
 _AT_EPOCH, _AT_METADATA, _AT_COMMIT_TS, _AT_EXPIRE) = (
    _RUN_AT[_INDEX[name]] for name in ("file", "partition", "timestamp", "value_version", "tombstone",
                                       "producer_id", "transactional", "leader_epoch", "metadata",
                                       "commit_timestamp", "expire_timestamp"))
_PER_ROW = (list, tuple, range)  # a run's entry that holds each record's value

#: the value's fields as columns: JSON name -> column
_VALUE_COLUMNS = {"offset": "committed_offset", "leaderEpoch": "leader_epoch", "commitTimestamp": "commit_timestamp",
                  "expireTimestamp": "expire_timestamp"}
#: version -> where each field a plain value's struct reads goes: committed_offset, leader_epoch,
#: commit_timestamp, expire_timestamp (an index into the unpacked fields, or None: not in the version)
_FIELD_AT = tuple(layout and tuple(layout.names.index(name) if name in layout.names else None
                                   for name in _VALUE_COLUMNS)
                  for layout in LAYOUTS)
_VALUES = OffsetCommitValues("{data}", dumps_records)  # the value's JSON text: formats only
#: the one-byte zig-zag varints of 0..63, in order: a run's offset deltas when they are consecutive
_CONSECUTIVE = bytes((i << 1) for i in range(64))
_ts_of_row, _od_of_row = itemgetter(0), itemgetter(1)


class _JsonJoin:
    """value_json of a layout with a tagged field, as Arrow joins it: the literal text around each %d
    (a column) and the %s (the tagged field's text) of the layout's plain JSON format."""

    def __init__(self, version: int):
        layout = LAYOUTS[version]
        plain = _VALUES.plain[version][-1]  # the variant with the tagged field
        self.version = version
        self.literals = [text.replace("\0", "%") for text in re.split(r"%[ds]", plain.format.replace("%%", "\0"))]
        self.columns = [_INDEX[_VALUE_COLUMNS[name]] for name in layout.names]
        if len(self.literals) != len(self.columns) + 2 or plain.format.count("%s") != 1:
            raise AssertionError(f"OffsetCommitValue v{version}: unexpected JSON format {plain.format!r}")

    def text(self, values: list, tag: str) -> str:
        """The same text joined in Python (values: this row's value of each column)."""
        literals = self.literals
        return "".join(chain.from_iterable(zip(literals, map(str, values)))) + literals[-2] + tag + literals[-1]


_TAGGED = [v for v, layout in enumerate(LAYOUTS) if layout is not None and layout.tagged is not None]
#: the one version whose plain values may carry a tagged field (v4); a value of another version with
#: one goes the generic way
_JOIN = _JsonJoin(_TAGGED[-1]) if _TAGGED else None


class KeyTable:
    """The key columns of every key seen, by index; kept across blocks (a worker's life)."""

    LIMIT = 200_000

    def __init__(self):
        self.index: dict = {}  # key bytes (or ("error", type) / "control") -> index
        self.rows: list = []  # index -> the KEY_COLUMNS values
        self.arrays = None  # the rows as Arrow arrays, rebuilt when rows grew
        self.built = 0

    def add(self, token, key_values: tuple) -> int:
        found = self.index.get(token)
        if found is None:
            found = self.index[token] = len(self.rows)
            self.rows.append(key_values)
        return found

    def full(self) -> bool:
        return len(self.rows) >= self.LIMIT

    def columns(self, schema):
        import pyarrow as pa

        if self.arrays is None or self.built != len(self.rows):
            columns = list(zip(*self.rows))
            self.arrays = [pa.array(column, type=schema.field(at).type) for column, at in zip(columns, KEY_COLUMNS)]
            self.built = len(self.rows)
        return self.arrays


class ParquetBlock:
    """Rows on their way to one Arrow record batch (see the module's docstring): per row its key's
    index and ROW_COLUMNS values; per run its length, its RUN_COLUMNS entries and the tagged field's
    text where value_json is to be joined from the columns (None: no such text), each entry one value
    for the run or a list of its records' values."""

    __slots__ = ("keys", "runs", "run_values", "key_index", "row_columns", "count")

    def __init__(self, keys: KeyTable):
        self.keys = keys
        self.runs: list = []  # each run's row count
        self.run_values: list = []  # each run's RUN_COLUMNS entries, then its tagged text entry
        self.key_index: list = []
        self.row_columns = [[] for _ in ROW_COLUMNS]
        self.count = 0

    def _run_entries(self):
        """Per run column (the tagged text last): its runs' entries."""
        return zip(*self.run_values)

    def record_batch(self, schema):
        """The block as a pyarrow RecordBatch of `schema` (render.arrow_schema())."""
        import pyarrow as pa
        import pyarrow.compute as pc

        arrays: list = [None] * _WIDTH
        indices = pa.array(self.key_index, pa.int32())
        for at, table in zip(KEY_COLUMNS, self.keys.columns(schema)):
            arrays[at] = table.take(indices)
        for at, values in zip(ROW_COLUMNS, self.row_columns):
            arrays[at] = arrow_array(values, schema.field(at).type)
        run_of_row = []  # built once, when a column needs it

        def per_run(entries, arrow_type):
            if any(type(entry) in _PER_ROW for entry in entries):
                return pa.array(self._expanded(entries), arrow_type)
            first = entries[0]
            if entries.count(first) == len(entries):
                return pa.nulls(self.count, arrow_type) if first is None else \
                    pa.repeat(pa.scalar(first, arrow_type), self.count)
            if not run_of_row:
                run_of_row.append(pa.array(list(chain.from_iterable(map(repeat, range(len(self.runs)), self.runs))),
                                           pa.int32()))
            return pa.array(entries, arrow_type).take(run_of_row[0])

        *columns, tags = self._run_entries()
        for at, entries in zip(RUN_COLUMNS, columns):
            arrays[at] = per_run(entries, schema.field(at).type)
        if _JOIN is not None and tags.count(None) != len(tags):
            literals = _JOIN.literals
            parts = [literals[0]]
            for column, literal in zip(_JOIN.columns, literals[1:]):
                parts += [pc.cast(arrays[column], pa.string()), literal]
            parts += [per_run(tags, pa.string()), literals[-1]]  # %s, then the closing text
            joined = pc.binary_join_element_wise(*parts, "")  # null where a row has no tagged text
            at = _INDEX["value_json"]
            arrays[at] = pc.coalesce(arrays[at], joined)
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    def _expanded(self, entries) -> list:
        """One value per record from per-run entries."""
        out: list = []
        for entry, n in zip(entries, self.runs):
            if type(entry) in _PER_ROW:
                out += entry
            else:
                out += [entry] * n
        return out

    def tuples(self):
        """The block's rows as `render.COLUMNS` tuples (no pyarrow needed)."""
        keys = self.keys.rows
        *columns, tags = [self._expanded(entries) for entries in self._run_entries()]
        row_at = {column: i for i, column in enumerate(ROW_COLUMNS)}
        run_at = {column: i for i, column in enumerate(RUN_COLUMNS)}
        for i, (index, row_values, tag) in enumerate(zip(self.key_index, zip(*self.row_columns), tags)):
            out = [None] * _WIDTH
            for at, value in zip(KEY_COLUMNS, keys[index]):
                out[at] = value
            for at, value in zip(ROW_COLUMNS, row_values):
                out[at] = value
            for at, column in zip(RUN_COLUMNS, columns):
                out[at] = column[i]
            if tag is not None:
                out[_INDEX["value_json"]] = _JOIN.text(
                    [row_values[row_at[c]] if c in row_at else columns[run_at[c]][i] for c in _JOIN.columns], tag)
            yield tuple(out)


def arrow_array(values: list, arrow_type):
    """pa.array(values), a column of one value (a null column, say) made without converting each."""
    import pyarrow as pa

    first = values[0] if values else None
    if values.count(first) == len(values):
        return pa.nulls(len(values), arrow_type) if first is None else pa.repeat(pa.scalar(first, arrow_type),
                                                                                len(values))
    return pa.array(values, type=arrow_type)


def _one_or_all(values):
    """A run's entry for these values: the one value they all are, else all of them."""
    first = values[0]
    return first if values.count(first) == len(values) else values


class FastParquet:
    """Appends a batch's rows to a ParquetBlock; keeps the key table and the generic converter's cache."""

    def __init__(self, keep=None):
        self.keep = keep  # RowFilter.keep, or None
        self.rows = ParquetRows()  # the generic way
        self.keys = KeyTable()
        #: offset commit key bytes -> its index in `keys`, or None when the row filter drops its rows
        self.commit_keys: dict = {}
        self._nones: dict = {}  # n -> [None] * n
        self._structs: dict = {}  # (plain struct, n) -> struct of n joined values

    def block(self) -> ParquetBlock:
        if self.keys.full():  # a new table: the blocks that hold the old one keep it
            self.keys, self.commit_keys = KeyTable(), {}
        return ParquetBlock(self.keys)

    def add_rows(self, block: ParquetBlock, rows) -> int:
        """DecodedRows the generic way (those the filter keeps), each a run of one; returns how many."""
        keep, convert = self.keep, self.rows.row
        commit_keys, table = self.commit_keys, block.keys
        added = 0
        for row in rows:
            kept = keep is None or keep(row)
            if kept:
                values = convert(row)
                token = row.key_bytes if row.kind == "data" else (row.kind, row.record_type)
                index = table.add(token, _key_of_tuple(values))
                block.key_index.append(index)
                for column, value in zip(block.row_columns, _row_of_tuple(values)):
                    column.append(value)
                block.runs.append(1)
                block.run_values.append(_run_of_tuple(values) + (None,))  # no tagged text: value_json is whole
                added += 1
            if is_offset_commit(row) and row.key_bytes not in commit_keys:
                commit_keys[row.key_bytes] = index if kept else None
        block.count += added
        return added

    def add_batch(self, block: ParquetBlock, batch, records, decoder) -> int:
        """One whole batch's undecoded records (a list or LazyRecords); returns the rows added."""
        if not fast_batch(batch, decoder):
            return self.add_rows(block, decoder.rows(batch, list(records)))
        added = ok = 0
        for part in record_parts(records):
            if type(part) is tuple:
                n = self._run(block, batch, records, part, decoder)
                if n:
                    added += n
                    ok += n
                    continue
                part = [Record(*fields) for fields in part_fields(records, part)]
            added += self.add_rows(block, decoder.rows(batch, part))
        decoder.problems.records_ok += ok  # (the decoder counted the others)
        return added

    def _none(self, n: int) -> list:
        nones = self._nones.get(n)
        if nones is None:
            if len(self._nones) >= 256:
                self._nones.clear()
            nones = self._nones[n] = [None] * n
        return nones

    def _fields(self, plain, joined: bytes, n: int) -> list:
        """Each field the plain struct reads, as the column of its n values (one unpack)."""
        key = (plain.struct, n)
        joined_struct = self._structs.get(key)
        if joined_struct is None:
            if len(self._structs) >= 1024:
                self._structs.clear()
            joined_struct = self._structs[key] = struct.Struct(">" + plain.struct.format.lstrip("<>!=@") * n)
        flat = joined_struct.unpack(joined)
        width = len(flat) // n
        return [flat[i::width] for i in range(width)]

    def _run(self, block: ParquetBlock, batch, records, part, decoder) -> int:
        """A run's columns when its keys are known offset commit keys the filter keeps (in this
        block's key table) and its values are plain (or all null); else 0."""
        rows, _key_size, value_size = part
        if block.keys is not self.keys:
            return 0
        indices = list(map(self.commit_keys.get, map(_key_of_row, rows)))
        if None in indices:
            return 0
        n = len(rows)
        values = [None] * len(RUN_COLUMNS)
        if value_size < 0:
            values[_AT_TOMBSTONE], tag, committed = True, None, self._none(n)
        else:
            raw_values = list(map(_value_of_row, rows))
            found = _VALUES.plain_run(raw_values)
            if found is None:
                return 0
            plain, joined = found
            version = raw_values[0][1]
            values[_AT_VERSION], values[_AT_TOMBSTONE], values[_AT_METADATA] = version, False, ""
            tag = None
            if plain.tag_at is not None:
                if version != _JOIN.version:
                    return 0
                tag = self._tag_texts(plain, joined, n)
            fields = self._fields(plain, joined, n)
            at_offset, at_epoch, at_commit, at_expire = _FIELD_AT[version]
            committed = fields[at_offset]
            values[_AT_EPOCH] = -1 if at_epoch is None else _one_or_all(fields[at_epoch])
            values[_AT_COMMIT_TS] = _one_or_all(fields[at_commit])
            if at_expire is not None:
                values[_AT_EXPIRE] = _one_or_all([None if e == -1 else e for e in fields[at_expire]])
        base_offset, base_ts, zz = records.base_offset, records.base_ts, ZIGZAG
        deltas = bytes(map(_od_of_row, rows))
        first = zz[deltas[0]]
        if 0 <= first and first + n <= 64 and deltas == _CONSECUTIVE[first:first + n]:
            offsets = range(base_offset + first, base_offset + first + n)
        else:
            offsets = [base_offset + zz[od] for od in deltas]
        stamps = bytes(map(_ts_of_row, rows))
        if stamps.count(stamps[0]) == n:
            values[_AT_TIMESTAMP] = base_ts + zz[stamps[0]]
        else:
            values[_AT_TIMESTAMP] = [base_ts + zz[ts] for ts in stamps]
        segment = decoder.segment
        values[_AT_FILE], values[_AT_PARTITION], values[_AT_PRODUCER], values[_AT_TRANSACTIONAL] = (
            segment.path, segment.partition, batch.producer_id, batch.is_transactional)
        block.key_index += indices
        offset_column, committed_column = block.row_columns
        offset_column += offsets
        committed_column += committed
        block.runs.append(n)
        values.append(tag)
        block.run_values.append(values)
        block.count += n
        return n

    @staticmethod
    def _tag_texts(plain, joined: bytes, n: int):
        """The tagged field's text in the value's JSON (',"topicId":"..."'; None for the default: the
        value then has nothing that is not a column, no value_json): one for the run when its values
        share it, else a list of each value's."""
        raws = plain.column(n).unpack(joined)
        texts = plain.texts
        if raws.count(raws[0]) == n:  # one topic id in the run (a commit's partitions of one topic)
            return texts[raws[0]][0] or None
        return [text or None for (text,) in map(texts.__getitem__, raws)]
