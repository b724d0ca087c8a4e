"""JSON rows and kafka-dump-log lines of offset commits written straight from the undecoded records.

Offset commits (key types 0 and 1, OffsetCommitValue v0-v4) are almost every record of a dump. Their
text is one format per value version filled from one struct unpack, with the key's text cached by
its bytes; no DecodedRow, DecodedValue or JSON dict is built. Everything else goes through the
generic path (`RowDecoder` and the renderers of `render` / `dump_log_text`), record by record in log
order: control batches, magic 0/1, other record types, the Connect family, and every offset commit
whose value is not laid out plainly (trailing bytes, tagged fields, a long varint, a bad length).
So a record that does not decode is reported exactly as before, and the first record of each key
goes the generic way too, which is what caches its key text. tests/test_fast_rows.py holds both
paths to the same text.
"""

from __future__ import annotations

import struct

from kgroup.records import dump_log_key
from kgroup.records.batch_model import TIMESTAMP_TYPES, Record
from kgroup.records.lazy_records import record_fields
from kgroup.records.schema_runtime import json_string
from kgroup.writers import dumps_records

from .dump_log_text import KEY_TEXT_LIMIT, batch_line, batch_lines, record_line

_OFFSET_COMMIT_TYPES = (0, 1)
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
#: The same with empty metadata, as one struct: (struct, index of the metadata length, its value).
_EMPTY_METADATA = tuple((struct.Struct(head.format + tail.format[1:]), len(head.format) - 2, int(flexible))
                        for head, tail, flexible in _LAYOUTS)

#: Value version -> the value's JSON fields as kafka-dump-log selects them for that version.
VALUE_JSON = (
    '{"offset":%d,"metadata":%s,"commitTimestamp":%d}',
    '{"offset":%d,"metadata":%s,"commitTimestamp":%d,"expireTimestamp":%d}',
    '{"offset":%d,"metadata":%s,"commitTimestamp":%d}',
    '{"offset":%d,"leaderEpoch":%d,"metadata":%s,"commitTimestamp":%d}',
    '{"offset":%d,"leaderEpoch":%d,"metadata":%s,"commitTimestamp":%d}',
)


class OffsetCommitText:
    """One output's text of offset commit records: `before` + the value version and fields +
    `after`, one format per value version, filled from one struct unpack of the value.

    The formats of a batch's records are joined and filled by one % (a % per record costs a third
    more). `before` ends where the value version goes (a %d); `quote` is the output's JSON quoting
    of the metadata string. The formats for empty metadata (the usual case) take the unpacked value
    as it is: "%.0s" swallows the metadata length and v4's tagged-field count.
    """

    def __init__(self, before: str, after: str, quote):
        self.quote = quote
        self.formats = tuple(before + value + after for value in VALUE_JSON)
        empty = [value.replace("%s", '""%.0s') for value in VALUE_JSON]
        empty[4] = empty[4][:-1] + "%.0s}"
        self.empty_metadata = tuple(before + value + after for value in empty)

    def add(self, formats: list, args: list, args_before: tuple, value, args_after: tuple) -> bool:
        """Append the record's format and arguments if its value is an OffsetCommitValue v0-v4 laid
        out exactly; else append nothing and return False (the generic decoder reads it, and reports
        what is wrong)."""
        if type(value) is not bytes or len(value) < 2 or value[0] or value[1] > 4:
            return False
        version = value[1]
        whole, length_at, empty_length = _EMPTY_METADATA[version]
        if len(value) == whole.size:
            fields = whole.unpack(value)
            if fields[length_at] == empty_length and (version < 4 or not fields[-1]):
                formats.append(self.empty_metadata[version])
                args += args_before + fields + args_after
                return True
        head, tail, flexible = _LAYOUTS[version]
        start = head.size
        fields = head.unpack_from(value)
        length = fields[-1]
        if flexible:
            if length == 0 or length > 127:
                return False
            length -= 1
        end = start + length
        if length < 0 or end + tail.size != len(value):
            return False
        after = tail.unpack_from(value, end)
        if flexible:
            if after[1]:  # tagged fields
                return False
            after = after[:1]
        metadata = self.quote(value[start:end].decode("utf-8", "replace")) if length else _EMPTY
        formats.append(self.formats[version])
        args += args_before + fields[:-1] + (metadata,) + after + args_after
        return True


def is_offset_commit(row) -> bool:
    """A data row whose key is __consumer_offsets's OffsetCommitKey (the rows the fast path writes)."""
    return row.kind == "data" and row.record_type in _OFFSET_COMMIT_TYPES and row.key.family == "consumer"


def fast_batch(batch, decoder) -> bool:
    """Whether a batch's records can go the fast way: magic-2 data of the __consumer_offsets family."""
    return not batch.is_control and batch.magic >= 2 and decoder.family in (None, "consumer")


class FastJsonl:
    """The jsonl text of one batch's rows (`render.JsonlLines` text), offset commits the fast way."""

    def __init__(self, lines, keep, separator: str):
        self.lines = lines  # JsonlLines: the generic text, and the key heads and file tails it caches
        self.keep = keep  # RowFilter.keep, or None
        self.separator = separator  # between rows: "\n" for jsonl, ",\n" in a JSON array
        self.heads: dict = {}  # offset commit key bytes -> key head text, "" when the filter drops it
        self.commit = OffsetCommitText('{"offset":%d,"timestamp":%d%s,"value_version":%d,"value":', "%s",
                                       dumps_records)

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
        add_commit = self.commit.add
        formats: list = []
        args: list = []
        ok = 0
        for fields in record_fields(records):
            head = heads.get(fields[3])
            if head is not None:
                value = fields[4]
                if value is None:
                    ok += 1
                    if head:
                        formats.append(_JSONL_TOMBSTONE)
                        args += (fields[0], fields[1], head) + end
                    continue
                if head:
                    taken = add_commit(formats, args, (fields[0], fields[1], head), value, end)
                else:  # the filter drops the row: only whether the value reads matters
                    taken = add_commit([], [], (), value, ())
                if taken:
                    ok += 1
                    continue
            for row in decoder.rows(batch, (Record(*fields),)):
                kept = keep is None or keep(row)
                if is_offset_commit(row):
                    heads[fields[3]] = self.lines.key_head(row) if kept else ""
                if kept:
                    formats.append("%s")
                    args.append(line(row))
        decoder.problems.records_ok += ok
        return self.separator.join(formats) % tuple(args), len(formats)


_JSONL_TOMBSTONE = '{"offset":%d,"timestamp":%d%s,"value_version":null,"value":null%s'
_DUMP_LOG_LINE = "| offset: %d {}: %d keySize: %d valueSize: %d sequence: %d headerKeys: [%s] key: %s payload: "


class FastDumpLog:
    """kafka-dump-log's lines for one batch (`dump_log_text.batch_lines`), offset commits the fast way."""

    def __init__(self):
        self.keys: dict = {}  # offset commit key bytes -> kafka-dump-log key text
        self.commits = {time_type: OffsetCommitText(_DUMP_LOG_LINE.format(time_type) + '{"version":"%d","data":',
                                                    "}", json_string) for time_type in TIMESTAMP_TYPES}

    def text(self, batch, records, decoder, key_texts: dict) -> str:
        """The batch's lines, each ending in a newline. records: the whole batch's records,
        undecoded; key_texts: batch_lines's cache, for the records that go the generic way."""
        if not fast_batch(batch, decoder):
            batch.records = list(batch.records)
            return "\n".join(batch_lines(batch, decoder.rows(batch), key_texts)) + "\n"
        keys = self.keys
        if len(keys) > KEY_TEXT_LIMIT:
            keys.clear()
        add_commit = self.commits[batch.timestamp_type].add
        tombstone = _DUMP_LOG_LINE.format(batch.timestamp_type) + "<DELETE>"
        formats = ["%s"]
        args = [batch_line(batch)]
        ok = 0
        for fields in record_fields(records):
            key_text = keys.get(fields[3])
            if key_text is not None:
                headers = fields[5]
                before = (fields[0], fields[1], fields[6], fields[7], fields[2],
                          ",".join(k for k, _ in headers) if headers else "", key_text)
                value = fields[4]
                if value is None:
                    formats.append(tombstone)
                    args += before
                    ok += 1
                    continue
                if add_commit(formats, args, before, value, ()):
                    ok += 1
                    continue
            record = Record(*fields)
            row = decoder.rows(batch, (record,))[0]  # a data batch: one row per record
            if is_offset_commit(row):
                keys[fields[3]] = dump_log_key(row.key)
            formats.append("%s")
            args.append(record_line(batch, record, row))
        decoder.problems.records_ok += ok
        formats.append("")
        return "\n".join(formats) % tuple(args)
