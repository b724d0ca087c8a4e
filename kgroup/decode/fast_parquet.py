"""Parquet columns (`render.COLUMNS`) of a batch's rows, offset commits straight from the undecoded records.

The Spark engine's Parquet output, on the local engine's fast path (`fast_rows`): a run of offset
commits that the reader unpacked whole (`lazy_records`), whose keys are known and kept by the row
filter and whose values share one plain layout (empty metadata), becomes columns with one struct
unpack of the joined values and list extends for what the batch or the key decides. The value's JSON
(`value_json`: a plain offset commit has one only for Kafka 4.4's topicId, a tagged field that is
not a column) is joined in Arrow, a block at a time, from the value's columns and the tagged field's
text, with the literal text of the layout's JSON format between them. Every other record goes the
generic way: `RowDecoder` and `render.ParquetRows.row`, in record order, so a record that does not
decode is reported exactly as before. tests/test_fast_parquet.py holds both ways to the same
columns, problems and counts.
"""

from __future__ import annotations

import re
import struct

from kgroup.records.batch_model import Record
from kgroup.records.lazy_records import ZIGZAG, part_fields, record_parts
from kgroup.writers import dumps_records

from .fast_rows import LAYOUTS, OffsetCommitValues, _key_of_row, _value_of_row, fast_batch, is_offset_commit
from .render import COLUMNS, ParquetRows

_WIDTH = len(COLUMNS)
_INDEX = {name: i for i, (name, _kind, _doc) in enumerate(COLUMNS)}
#: the value's fields as columns: JSON name -> column
_VALUE_COLUMNS = {"offset": "committed_offset", "leaderEpoch": "leader_epoch", "commitTimestamp": "commit_timestamp",
                  "expireTimestamp": "expire_timestamp"}
#: version -> where each field a plain value's struct reads goes: committed_offset, leader_epoch,
#: commit_timestamp, expire_timestamp (an index into the unpacked fields, or None: not in the version)
_FIELD_AT = tuple(layout and tuple(layout.names.index(name) if name in layout.names else None
                                   for name in _VALUE_COLUMNS)
                  for layout in LAYOUTS)
_VALUES = OffsetCommitValues("{data}", dumps_records)  # the value's JSON text: formats only


class _JsonJoin:
    """value_json of a layout with a tagged field, as Arrow joins it: the literal text around each %d
    (a column) and the %s (the tagged field's text) of the layout's plain JSON format."""

    def __init__(self, version: int):
        layout = LAYOUTS[version]
        plain = _VALUES.plain[version][-1]  # the variant with the tagged field
        self.version = version
        self.literals = re.split(r"%[ds]", plain.format.replace("%%", "\0"))
        self.literals = [text.replace("\0", "%") for text in self.literals]
        self.columns = [_INDEX[_VALUE_COLUMNS[name]] for name in layout.names]
        if len(self.literals) != len(self.columns) + 2 or plain.format.count("%s") != 1:
            raise AssertionError(f"OffsetCommitValue v{version}: unexpected JSON format {plain.format!r}")


_TAGGED = [v for v, layout in enumerate(LAYOUTS) if layout is not None and layout.tagged is not None]
#: the one version whose plain values may carry a tagged field (v4); a value of another version with
#: one would go the generic way
_JOIN = _JsonJoin(_TAGGED[-1]) if _TAGGED else None


class ParquetBlock:
    """Rows on their way to one Arrow record batch: a list per column, and per row the tagged field's
    text where value_json is to be joined from the columns (None elsewhere)."""

    __slots__ = ("columns", "tag_texts", "count")

    def __init__(self):
        self.columns = [[] for _ in range(_WIDTH)]
        self.tag_texts: list = []
        self.count = 0

    def record_batch(self, schema):
        """The block as a pyarrow RecordBatch of `schema` (render.arrow_schema())."""
        import pyarrow as pa

        arrays = [arrow_array(column, field.type) for column, field in zip(self.columns, schema)]
        if _JOIN is not None and self.tag_texts.count(None) != len(self.tag_texts):
            import pyarrow.compute as pc

            literals = _JOIN.literals
            parts = [literals[0]]
            for column, literal in zip(_JOIN.columns, literals[1:]):
                parts += [pc.cast(arrays[column], pa.string()), literal]
            parts += [pa.array(self.tag_texts, pa.string()), literals[-1]]  # %s, then the closing text
            joined = pc.binary_join_element_wise(*parts, "")  # null where a row has no tagged text
            at = _INDEX["value_json"]
            arrays[at] = pc.coalesce(arrays[at], joined)
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    def tuples(self):
        """The block's rows as `render.COLUMNS` tuples, value_json joined here (no pyarrow needed)."""
        columns = self.columns
        if _JOIN is not None and self.tag_texts.count(None) != len(self.tag_texts):
            literals, fields = _JOIN.literals, [columns[i] for i in _JOIN.columns]
            value_json = columns[_INDEX["value_json"]] = list(columns[_INDEX["value_json"]])
            for i, text in enumerate(self.tag_texts):
                if text is not None:
                    parts = [literals[0]]
                    for column, literal in zip(fields, literals[1:]):
                        parts += ["%d" % column[i], literal]
                    value_json[i] = "".join(parts) + text + literals[-1]
        return zip(*columns)


def arrow_array(values: list, arrow_type):
    """pa.array(values), a column of one value (most are: nulls, the record type, the file) made
    without converting each."""
    import pyarrow as pa

    first = values[0] if values else None
    if values.count(first) == len(values):
        return pa.nulls(len(values), arrow_type) if first is None else pa.repeat(pa.scalar(first, arrow_type),
                                                                                len(values))
    return pa.array(values, type=arrow_type)


class FastParquet:
    """Appends a batch's rows to a ParquetBlock; caches key columns by key bytes (keys repeat a lot)."""

    def __init__(self, keep=None):
        self.keep = keep  # RowFilter.keep, or None
        self.rows = ParquetRows()  # the generic way
        #: offset commit key bytes -> its key columns, or None when the row filter drops its rows
        self.commit_keys: dict = {}
        self._nones: dict = {}  # n -> [None] * n
        self._structs: dict = {}  # (plain struct, n) -> struct of n joined values

    def add_rows(self, block: ParquetBlock, rows) -> int:
        """DecodedRows the generic way (those the filter keeps); returns how many were added."""
        keep, convert = self.keep, self.rows.row
        commit_keys = self.commit_keys
        if len(commit_keys) >= ParquetRows.CACHE_LIMIT:
            commit_keys.clear()
        tuples = []
        for row in rows:
            kept = keep is None or keep(row)
            if kept:
                tuples.append(convert(row))
            if is_offset_commit(row) and row.key_bytes not in commit_keys:
                if kept:
                    last = tuples[-1]
                    commit_keys[row.key_bytes] = last[4:6] + last[10:14] + last[30:31]
                else:
                    commit_keys[row.key_bytes] = None
        for column, values in zip(block.columns, zip(*tuples)):
            column += values
        block.tag_texts += self._none(len(tuples))
        block.count += len(tuples)
        return len(tuples)

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
        """A run's columns when its keys are known offset commit keys the filter keeps and its values
        are plain (or all null); else 0."""
        rows, _key_size, value_size = part
        keys = list(map(self.commit_keys.get, map(_key_of_row, rows)))
        if None in keys:
            return 0
        n = len(rows)
        nones = self._none(n)
        if value_size < 0:
            version, tombstone, value, tag_texts = None, True, (nones,) * 5, nones
        else:
            values = list(map(_value_of_row, rows))
            found = _VALUES.plain_run(values)
            if found is None:
                return 0
            plain, joined = found
            version, tombstone = values[0][1], False
            tag_texts = nones
            if plain.tag_at is not None:
                if version != _JOIN.version:
                    return 0
                tag_texts = self._tag_texts(plain, joined, n)
            fields = self._fields(plain, joined, n)
            at_offset, at_epoch, at_commit, at_expire = _FIELD_AT[version]
            value = (fields[at_offset], [-1] * n if at_epoch is None else fields[at_epoch], [""] * n,
                     fields[at_commit],
                     nones if at_expire is None else [None if e == -1 else e for e in fields[at_expire]])
        zz, base_offset, base_ts = ZIGZAG, records.base_offset, records.base_ts
        segment = decoder.segment
        key_type, key_version, group, topic, topic_partition, member, key_json = zip(*keys)
        pieces = ((
            [segment.path] * n, [segment.partition] * n,
            [base_offset + zz[od] for _ts, od, _k, _v in rows], [base_ts + zz[ts] for ts, _od, _k, _v in rows],
            key_type, key_version, [version] * n, [tombstone] * n, [batch.producer_id] * n,
            [batch.is_transactional] * n, group, topic, topic_partition, member) + value
            + (nones,) * 11  # group metadata, control and error columns
            + (key_json, nones))  # value_json: joined from the tagged texts (`ParquetBlock.record_batch`)
        for column, piece in zip(block.columns, pieces):
            column += piece
        block.tag_texts += tag_texts
        block.count += n
        return n

    @staticmethod
    def _tag_texts(plain, joined: bytes, n: int) -> list:
        """Per value, the tagged field's text in the value's JSON (',"topicId":"..."'), None for the
        default (the value then has nothing that is not a column: no value_json)."""
        raws = plain.column(n).unpack(joined)
        texts = plain.texts
        if raws.count(raws[0]) == n:  # one topic id in the run (a commit's partitions of one topic)
            return [texts[raws[0]][0] or None] * n
        return [text or None for (text,) in map(texts.__getitem__, raws)]
