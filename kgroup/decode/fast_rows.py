"""JSON rows and kafka-dump-log lines of offset commits written straight from the undecoded records.

Offset commits (key types 0 and 1, OffsetCommitValue v0-v4) are almost every record of a dump. Their
text is one format per value version filled from one struct unpack, with the key's text cached by
its bytes; no DecodedRow, DecodedValue or JSON dict is built. A run the reader unpacked whole (see
`lazy_records`) whose keys are all known and whose values share one plain layout is read with one
struct over the joined values; the formats of a batch are joined and filled by one %.

Everything else goes the generic way (`RowDecoder` and the renderers of `render` / `dump_log_text`),
record by record in log order: control batches, magic 0/1, other record types, the Connect family,
and every offset commit whose value is not laid out plainly (trailing bytes, tagged fields, a long
varint, a bad length). So a record that does not decode is reported exactly as before. The first
record of each key is decoded the generic way too, which checks the key and caches its text.
tests/test_fast_rows.py holds both ways to the same text, problems and counts.
"""

from __future__ import annotations

import struct
from itertools import repeat
from operator import itemgetter

from kgroup.records import dump_log_key
from kgroup.records.batch_model import Record
from kgroup.records.lazy_records import ZIGZAG, part_fields, record_parts
from kgroup.records.schema_runtime import json_string
from kgroup.writers import dumps_records

from .dump_log_text import KEY_TEXT_LIMIT, batch_line, batch_lines, record_line

_OFFSET_COMMIT_TYPES = (0, 1)
_key_of_row, _value_of_row = itemgetter(2), itemgetter(3)  # of a run's (timestamp delta, offset delta, key, value)
_EMPTY = '""'

#: Value version -> (struct of the fields before the metadata, ending in its length; struct of the
#: fields after it; flexible). v4's length is a one-byte compact length and its tagged-field count
#: must be 0 (anything longer goes the generic way).
_LAYOUTS = (
    (struct.Struct(">hqh"), struct.Struct(">q"), False),
    (struct.Struct(">hqh"), struct.Struct(">qq"), False),
    (struct.Struct(">hqh"), struct.Struct(">q"), False),
    (struct.Struct(">hqih"), struct.Struct(">q"), False),
    (struct.Struct(">hqiB"), struct.Struct(">qB"), True),
)


#: Value version -> (struct of the whole value when its metadata is empty, reading only the fields
#: the text shows; (byte position, byte) pairs that such a value has: the version, the metadata
#: length (v4: compact, 1) and v4's tagged-field count, 0).
_PLAIN = (
    (struct.Struct(">2xq2xq"), ((0, 0), (1, 0), (10, 0), (11, 0))),
    (struct.Struct(">2xq2xqq"), ((0, 0), (1, 1), (10, 0), (11, 0))),
    (struct.Struct(">2xq2xq"), ((0, 0), (1, 2), (10, 0), (11, 0))),
    (struct.Struct(">2xqi2xq"), ((0, 0), (1, 3), (14, 0), (15, 0))),
    (struct.Struct(">2xqixqx"), ((0, 0), (1, 4), (14, 1), (23, 0))),
)
_PLAIN_BYTES = tuple((itemgetter(*(p for p, _ in pairs)), tuple(b for _, b in pairs)) for _, pairs in _PLAIN)

#: Value version -> the value's JSON fields as kafka-dump-log selects them for that version.
VALUE_JSON = (
    '{"offset":%d,"metadata":%s,"commitTimestamp":%d}',
    '{"offset":%d,"metadata":%s,"commitTimestamp":%d,"expireTimestamp":%d}',
    '{"offset":%d,"metadata":%s,"commitTimestamp":%d}',
    '{"offset":%d,"leaderEpoch":%d,"metadata":%s,"commitTimestamp":%d}',
    '{"offset":%d,"leaderEpoch":%d,"metadata":%s,"commitTimestamp":%d}',
)


class OffsetCommitValues:
    """One output's text of OffsetCommitValue v0-v4: a format per version and the arguments that
    fill it, read with one struct unpack.

    `template` places the version and the JSON fields ({version}, {data}: str.format); `quote` is
    the output's JSON quoting of a metadata string. Empty metadata (the usual case) has formats of
    its own, with "" written in, so its values are read by one struct that skips what the text
    does not show. Callers join the formats of a batch and fill them with one % (a % per record
    costs a third more).
    """

    def __init__(self, template: str, quote):
        self.quote = quote
        self.formats = tuple(template.format(version=v, data=data) for v, data in enumerate(VALUE_JSON))
        self.plain_formats = tuple(template.format(version=v, data=data.replace("%s", _EMPTY))
                                   for v, data in enumerate(VALUE_JSON))

    def one(self, value) -> tuple | None:
        """(format, its arguments) for a value laid out exactly as Kafka writes it; None for anything
        else (the generic decoder reads it, and reports what is wrong)."""
        if type(value) is not bytes or len(value) < 2 or value[0] or value[1] > 4:
            return None
        version = value[1]
        plain = _PLAIN[version][0]
        if len(value) == plain.size:
            marks, expected = _PLAIN_BYTES[version]
            if marks(value) == expected:
                return self.plain_formats[version], plain.unpack(value)
        head, tail, flexible = _LAYOUTS[version]
        start = head.size
        if len(value) < start + tail.size:
            return None
        fields = head.unpack_from(value)
        length = fields[-1]
        if flexible:
            if length == 0 or length > 127:
                return None
            length -= 1
        end = start + length
        if length < 0 or end + tail.size != len(value):
            return None
        after = tail.unpack_from(value, end)
        if flexible:
            if after[1]:  # tagged fields
                return None
            after = after[:1]
        metadata = self.quote(value[start:end].decode("utf-8", "replace")) if length else _EMPTY
        return self.formats[version], fields[1:-1] + (metadata,) + after

    def run(self, values: list) -> tuple | None:
        """(format, an iterator of each value's arguments) for values of one size (a run's) that are
        all one version with empty metadata; None otherwise."""
        first = values[0]
        if type(first) is not bytes or len(first) < 2 or first[0] or first[1] > 4:
            return None
        version = first[1]
        plain, marks = _PLAIN[version]
        size = plain.size
        if len(first) != size:
            return None
        joined = b"".join(values)
        n = len(values)
        for position, byte in marks:
            if joined[position::size] != bytes((byte,)) * n:
                return None
        return self.plain_formats[version], plain.iter_unpack(joined)


def is_offset_commit(row) -> bool:
    """A data row whose key is __consumer_offsets's OffsetCommitKey (the rows the fast path writes)."""
    return row.kind == "data" and row.record_type in _OFFSET_COMMIT_TYPES and row.key.family == "consumer"


def fast_batch(batch, decoder) -> bool:
    """Whether a batch's records can go the fast way: magic-2 data of the __consumer_offsets family."""
    return not batch.is_control and batch.magic >= 2 and decoder.family in (None, "consumer")


_NULL_VALUE = (',"value_version":null,"value":null', ())  # a tombstone's value text, as `one` gives it
_DELETE = ("<DELETE>", ())  # kafka-dump-log's


class FastJsonl:
    """The jsonl text of one batch's rows (`render.JsonlLines` text), offset commits the fast way."""

    BEFORE = '{"offset":%d,"timestamp":%d%s'  # then the value, then the row's end (%s)
    TOMBSTONE = BEFORE + _NULL_VALUE[0] + "%s"

    def __init__(self, lines, keep, separator: str):
        self.lines = lines  # JsonlLines: the generic text, and the key heads and file tails it caches
        self.keep = keep  # RowFilter.keep, or None
        self.separator = separator  # between rows: "\n" for jsonl, ",\n" in a JSON array
        self.heads: dict = {}  # offset commit key bytes -> key head text, "" when the filter drops it
        self.values = OffsetCommitValues(',"value_version":{version},"value":{data}', dumps_records)

    def text(self, batch, records, decoder) -> tuple[str, int]:
        """(the batch's rows joined by the separator, how many rows)."""
        keep, line = self.keep, self.lines.line
        if not fast_batch(batch, decoder):
            rows = [line(row) for row in decoder.rows(batch, list(records)) if keep is None or keep(row)]
            return self.separator.join(rows), len(rows)
        heads = self.heads
        if len(heads) >= self.lines.CACHE_LIMIT:
            heads.clear()
        end = (',"producer_id":%d,"transactional":%s' % (batch.producer_id, "true" if batch.is_transactional
                                                        else "false")
               + self.lines.file_tail(decoder.segment.path, decoder.segment.partition),)
        value_text = self.values.one
        formats: list = []
        args: list = []
        ok = 0
        for part in record_parts(records):
            if type(part) is tuple and self._run(formats, args, records, part, end):
                ok += len(part[0])
                continue
            for fields in part_fields(records, part):
                head = heads.get(fields[3])
                row = None
                if head is None:  # a key seen first: the generic decoder reads the record
                    row = decoder.rows(batch, (Record(*fields),))[0]  # a data batch: one row per record
                    kept = keep is None or keep(row)
                    if not is_offset_commit(row):
                        if kept:
                            formats.append("%s")
                            args.append(line(row))
                        continue
                    head = heads[fields[3]] = self.lines.key_head(row) if kept else ""
                value = fields[4]
                text = _NULL_VALUE if value is None else value_text(value)
                if text is None:  # laid out otherwise: the generic way
                    if row is None:
                        row = decoder.rows(batch, (Record(*fields),))[0]
                    if keep is None or keep(row):
                        formats.append("%s")
                        args.append(line(row))
                    continue
                if row is None:
                    ok += 1  # (the decoder counted the others)
                if head:  # else the filter drops the row: only whether the value reads mattered
                    formats.append(self.BEFORE + text[0] + "%s")
                    args += (fields[0], fields[1], head) + text[1] + end
        decoder.problems.records_ok += ok
        return self.separator.join(formats) % tuple(args), len(formats)

    def _run(self, formats, args, records, part, end: tuple) -> bool:
        """A whole run at once when every key is a known offset commit key the filter keeps and the
        values are plain."""
        rows, _, value_size = part
        heads = list(map(self.heads.get, map(_key_of_row, rows)))
        if None in heads or "" in heads:
            return False
        if value_size < 0:
            fmt, values = self.TOMBSTONE, repeat(())
        else:
            plain = self.values.run(list(map(_value_of_row, rows)))
            if plain is None:
                return False
            fmt, values = self.BEFORE + plain[0] + "%s", plain[1]
        zz, base_offset, base_ts = ZIGZAG, records.base_offset, records.base_ts
        extend = args.extend
        for (ts, od, _, _), head, fields in zip(rows, heads, values):
            extend((base_offset + zz[od], base_ts + zz[ts], head) + fields + end)
        formats += repeat(fmt, len(rows))
        return True


_DUMP_LOG_LINE = "| offset: %d {}: %d keySize: %d valueSize: %d sequence: %d headerKeys: [%s] key: %s payload: "
_DUMP_LOG_RUN_LINE = "| offset: %d {}: %d keySize: {} valueSize: {} sequence: %d headerKeys: [] key: %s payload: "


class FastDumpLog:
    """kafka-dump-log's lines for one batch (`dump_log_text.batch_lines`), offset commits the fast way."""

    def __init__(self):
        self.keys: dict = {}  # offset commit key bytes -> kafka-dump-log key text
        self.values = OffsetCommitValues('{{"version":"{version}","data":{data}}}', json_string)

    def text(self, batch, records, decoder, key_texts: dict) -> str:
        """The batch's lines, each ending in a newline. records: the whole batch's records,
        undecoded; key_texts: batch_lines's cache, for the records that go the generic way."""
        if not fast_batch(batch, decoder):
            batch.records = list(batch.records)
            return "\n".join(batch_lines(batch, decoder.rows(batch), key_texts)) + "\n"
        keys = self.keys
        if len(keys) > KEY_TEXT_LIMIT:
            keys.clear()
        before = _DUMP_LOG_LINE.format(batch.timestamp_type)
        value_text = self.values.one
        formats = ["%s"]
        args = [batch_line(batch)]
        ok = 0
        for part in record_parts(records):
            if type(part) is tuple and self._run(formats, args, records, part, batch.timestamp_type):
                ok += len(part[0])
                continue
            for fields in part_fields(records, part):
                key_text = keys.get(fields[3])
                record = row = None
                if key_text is None:  # a key seen first: the generic decoder reads the record
                    record = Record(*fields)
                    row = decoder.rows(batch, (record,))[0]  # a data batch: one row per record
                    if not is_offset_commit(row):
                        formats.append("%s")
                        args.append(record_line(batch, record, row))
                        continue
                    key_text = keys[fields[3]] = dump_log_key(row.key)
                value = fields[4]
                text = _DELETE if value is None else value_text(value)
                if text is None:  # laid out otherwise: the generic way
                    if record is None:
                        record = Record(*fields)
                        row = decoder.rows(batch, (record,))[0]
                    formats.append("%s")
                    args.append(record_line(batch, record, row))
                    continue
                if row is None:
                    ok += 1  # (the decoder counted the others)
                headers = fields[5]
                formats.append(before + text[0])
                args += (fields[0], fields[1], fields[6], fields[7], fields[2],
                         ",".join(k for k, _ in headers) if headers else "", key_text) + text[1]
        decoder.problems.records_ok += ok
        formats.append("")
        return "\n".join(formats) % tuple(args)

    def _run(self, formats, args, records, part, time_type: str) -> bool:
        """A whole run at once when every key is a known offset commit key and the values are plain."""
        rows, key_size, value_size = part
        key_texts = list(map(self.keys.get, map(_key_of_row, rows)))
        if None in key_texts:
            return False
        before = _DUMP_LOG_RUN_LINE.format(time_type, key_size, value_size)
        if value_size < 0:
            fmt, values = before + _DELETE[0], repeat(())
        else:
            plain = self.values.run(list(map(_value_of_row, rows)))
            if plain is None:
                return False
            fmt, values = before + plain[0], plain[1]
        zz, base_offset, base_ts, base_seq = ZIGZAG, records.base_offset, records.base_ts, records.base_seq
        extend = args.extend
        if base_seq < 0:
            for (ts, od, _, _), key_text, fields in zip(rows, key_texts, values):
                extend((base_offset + zz[od], base_ts + zz[ts], -1, key_text) + fields)
        else:
            for (ts, od, _, _), key_text, fields in zip(rows, key_texts, values):
                delta = zz[od]
                extend((base_offset + delta, base_ts + zz[ts], base_seq + delta, key_text) + fields)
        formats += repeat(fmt, len(rows))
        return True
