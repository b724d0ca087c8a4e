"""JSON rows and kafka-dump-log lines of offset commits written straight from the undecoded records.

Offset commits (key types 0 and 1, OffsetCommitValue v0-v4) are almost every record of a dump. Their
text is one format per value layout filled from one struct unpack, with the key's text cached by
its bytes; no DecodedRow, DecodedValue or JSON dict is built. A run the reader unpacked whole (see
`lazy_records`) whose keys are all known and whose values share one plain layout is read with one
struct over the joined values; the formats of a batch are joined and filled by one %.

The layouts, formats and structs are generated from OffsetCommitValue's schema (`schemas/offset_commit.json`,
the one the decoder is generated from) by `_layout`: per version, the fields in order, the metadata
string's length (int16, or a compact length in flexible versions), and in a flexible version the
tagged-field section either empty or holding exactly the version's one fixed-size tagged field
(v4's topicId, tag 0, which Kafka 4.4 writes into every commit whose topic it knows), written as
the JSON converters write a tagged field: only when it is not its default, uuids as unpadded base64url.

Everything else goes the generic way (`RowDecoder` and the renderers of `render` / `dump_log_text`),
record by record in log order: control batches, magic 0/1, other record types, the Connect family,
and every offset commit whose value is not laid out plainly (trailing bytes, unknown tagged fields,
a length varint longer than two bytes, a bad length). So a record that does not decode is reported
exactly as before. The first record of each key has its key decoded (`_KeyProbe`: the key alone when
the value reads the fast way, else the whole record the generic way), which checks the key and
caches its text. tests/decode/test_fast_rows.py holds both ways to the same text, problems and counts.
"""

from __future__ import annotations

import struct
from itertools import repeat
from operator import itemgetter

from kgroup.records import dump_log_key
from kgroup.records.batch_model import Record
from kgroup.records.lazy_records import ZIGZAG, part_fields, record_parts
from kgroup.records.schema_records import record_schema
from kgroup.records.schema_runtime import STRUCT_CODES, STRUCT_SIZES, json_string, json_uuid
from kgroup.writers import dumps_records

from .decoder import ProblemLog, RowDecoder
from .dump_log_text import KEY_TEXT_LIMIT, batch_line, batch_lines, record_line

_OFFSET_COMMIT_TYPES = (0, 1)
_key_of_row, _value_of_row = itemgetter(2), itemgetter(3)  # of a run's (timestamp delta, offset delta, key, value)
_EMPTY = '""'
_INTEGERS = ("int8", "int16", "uint16", "int32", "int64")


class _Tagged:
    """A flexible version's one tagged field (a uuid), as the fast path reads and writes it."""

    def __init__(self, field, version: int):
        self.name = field.json_name
        self.size = STRUCT_SIZES[field.type]
        self.default = field.default(version)
        self.code = STRUCT_CODES[field.type]
        self.prefix = bytes((1, field.tag, self.size))  # one tagged field: count, tag, size (one-byte varints)


class _Layout:
    """One OffsetCommitValue version's layout and text, generated from its schema.

    head: struct of the version and the fields before the metadata, ending in its length; tail:
    struct of the fields after it (a flexible version: then the tagged-field count); data: the
    value's JSON with %d/%s per field (the metadata's %s, and with a tagged field, a %s for its text
    right after the field before it); plain: [(struct of the whole value with empty metadata, reading
    only the fields the text shows; the (position, byte) pairs such a value has; None, or with the
    tagged field, where its bytes start)]; names: the JSON names of the fields a plain struct reads,
    in its order (every untagged field but the metadata).
    """

    def __init__(self, version: int, head: str, tail: str, data: str, tagged_data: str | None,
                 tagged: _Tagged | None, plain: list, names: tuple = ()):
        self.version = version
        self.names = names
        self.head, self.tail = struct.Struct(head), struct.Struct(tail)
        self.flexible = tail.endswith("B")
        self.data, self.tagged_data, self.tagged = data, tagged_data, tagged
        self.plain = [(struct.Struct(code), tuple(marks), tag_at) for code, marks, tag_at in plain]


def _layout(message, version: int) -> _Layout | None:
    """The fast path's layout of one version, or None when its fields are beyond what it reads (one
    non-null string among integers, at most one tagged field, a uuid, the last): every value of such
    a version then goes the generic way (tests/decode/test_fast_rows.py checks that no version does)."""
    flexible = version in message.flexible
    fields = message.struct.fields_in(version)
    untagged = [f for f in fields if version not in f.tagged]
    tagged = [f for f in fields if version in f.tagged]
    strings = [i for i, f in enumerate(untagged) if f.type == "string"]
    if (len(strings) != 1 or version in untagged[strings[0]].nullable or version > 255
            or any(f.type not in _INTEGERS for i, f in enumerate(untagged) if i != strings[0])):
        return None
    tag = None
    if tagged:
        if (not flexible or len(tagged) > 1 or fields[-1] is not tagged[0] or tagged[0].type != "uuid"
                or not (0 <= tagged[0].tag < 128)):
            return None  # (its text is json_uuid's: another type would need its own)
        tag = _Tagged(tagged[0], version)
    s = strings[0]
    length_code = "B" if flexible else "h"
    head = ">h" + "".join(STRUCT_CODES[f.type] for f in untagged[:s]) + length_code
    tail = ">" + "".join(STRUCT_CODES[f.type] for f in untagged[s + 1:]) + ("B" if flexible else "")
    texts = ['"%s":%s' % (f.json_name, "%s" if f.type == "string" else "%d") for f in untagged]
    data = "{" + ",".join(texts) + "}"
    tagged_data = "{" + ",".join(texts) + "%s}" if tag else None
    # the whole value with empty metadata: only the shown fields read, the rest checked byte by byte
    code, marks, position = ">2x", [(0, version >> 8), (1, version & 255)], 2
    for f in untagged:
        if f.type == "string":
            empty = (1,) if flexible else (0, 0)  # a compact length is the length + 1
            code += "%dx" % len(empty)
            marks += [(position + i, b) for i, b in enumerate(empty)]
            position += len(empty)
        else:
            code += STRUCT_CODES[f.type]
            position += STRUCT_SIZES[f.type]
    plain = [(code + ("x" if flexible else ""), marks + ([(position, 0)] if flexible else []), None)]
    if tag:
        plain.append((code + "3x%dx" % tag.size, marks + [(position + i, b) for i, b in enumerate(tag.prefix)],
                      position + 3))
    names = tuple(f.json_name for i, f in enumerate(untagged) if i != s)
    return _Layout(version, head, tail, data, tagged_data, tag, plain, names)


_MESSAGE = record_schema(_OFFSET_COMMIT_TYPES[0]).value  # OffsetCommitValue (one schema for types 0 and 1)
#: Value version -> its _Layout, or None (that version always goes the generic way).
LAYOUTS = tuple(_layout(_MESSAGE, v) for v in range(_MESSAGE.valid.high + 1))
_TOP = len(LAYOUTS) - 1


class _TaggedTexts(dict):
    """Raw bytes of the tagged field -> its text in the value's JSON, as a 1-tuple (to add to the
    fields read): ',"topicId":"..."', or "" for the default, which the JSON converters leave out."""

    LIMIT = 4096

    def __init__(self, tagged: _Tagged):
        super().__init__()
        self.tagged = tagged

    def __missing__(self, raw: bytes) -> tuple:
        if len(self) >= self.LIMIT:
            self.clear()
        tagged = self.tagged
        text = "" if raw == tagged.default else ',"%s":%s' % (tagged.name, json_uuid(raw))
        self[raw] = result = (text,)
        return result


class _Plain:
    """One layout of a value with empty metadata, for one output: its struct, marks and format."""

    __slots__ = ("struct", "marks", "expected", "size", "format", "tag_at", "tag_end", "texts", "columns",
                 "baked")

    def __init__(self, plain: struct.Struct, marks: tuple, fmt: str, tag_at, texts):
        self.struct, self.size, self.format = plain, plain.size, fmt
        self.marks = marks  # ((position, byte), ...)
        self.expected = (itemgetter(*(p for p, _ in marks)), tuple(b for _, b in marks))
        self.tag_at, self.texts = tag_at, texts  # the tagged field's position, or None; its texts
        self.tag_end = tag_at and tag_at + texts.tagged.size
        self.columns: dict = {}  # a run's length -> the struct of its values' tagged fields
        self.baked: dict = {}  # a tagged field's raw bytes -> the format with its text written in

    def column(self, n: int) -> struct.Struct:
        """The struct that reads the tagged field of each of n joined values, in one unpack."""
        column = self.columns.get(n)
        if column is None:
            if len(self.columns) >= 256:
                self.columns.clear()
            tagged, at, size = self.texts.tagged, self.tag_at, self.size
            column = self.columns[n] = struct.Struct(
                ">%dx%s" % (at, tagged.code) + ("%dx%s" % (size - tagged.size, tagged.code)) * (n - 1)
                + "%dx" % (size - self.tag_end))
        return column

    def with_text(self, raw: bytes) -> str:
        """The format with the text of the tagged field's raw bytes written in (its %s is the last)."""
        baked = self.baked.get(raw)
        if baked is None:
            if len(self.baked) >= _TaggedTexts.LIMIT:
                self.baked.clear()
            head, _, tail = self.format.rpartition("%s")
            baked = self.baked[raw] = head + self.texts[raw][0].replace("%", "%%") + tail
        return baked


class OffsetCommitValues:
    """One output's text of OffsetCommitValue v0-v4: a format per layout and the arguments that
    fill it, read with one struct unpack.

    `template` places the version and the JSON fields ({version}, {data}: str.format); `quote` is
    the output's JSON quoting of a metadata string. Empty metadata (the usual case) has formats of
    its own, with "" written in, so its values are read by one struct that skips what the text
    does not show. Callers join the formats of a batch and fill them with one % (a % per record
    costs a third more).
    """

    def __init__(self, template: str, quote):
        self.quote = quote
        fill = lambda layout, data: template.format(version=layout.version, data=data)  # noqa: E731
        self.formats = tuple(layout and fill(layout, layout.data) for layout in LAYOUTS)
        self.tagged_formats = tuple(layout and layout.tagged and fill(layout, layout.tagged_data)
                                    for layout in LAYOUTS)
        self.texts = tuple(layout and layout.tagged and _TaggedTexts(layout.tagged) for layout in LAYOUTS)
        #: version -> [_Plain] (without the tagged field, then with it)
        self.plain = tuple(layout and [
            _Plain(plain, marks, fill(layout, (layout.tagged_data if tag_at else layout.data).replace("%s", _EMPTY, 1)),
                   tag_at, self.texts[layout.version])
            for plain, marks, tag_at in layout.plain] for layout in LAYOUTS)

    def one(self, value) -> tuple | None:
        """(format, its arguments) for a value laid out exactly as Kafka writes it; None for anything
        else (the generic decoder reads it, and reports what is wrong)."""
        if type(value) is not bytes or len(value) < 2 or value[0] or value[1] > _TOP:
            return None
        version = value[1]
        layout = LAYOUTS[version]
        if layout is None:
            return None
        size = len(value)
        for plain in self.plain[version]:
            if size == plain.size:
                marks, expected = plain.expected
                if marks(value) == expected:
                    if plain.tag_at is None:
                        return plain.format, plain.struct.unpack(value)
                    return plain.format, plain.struct.unpack(value) + plain.texts[value[plain.tag_at:plain.tag_end]]
        head, tail = layout.head, layout.tail
        start = head.size
        if size < start + tail.size:
            return None
        fields = head.unpack_from(value)
        length = fields[-1]
        if layout.flexible:  # a compact length (the length + 1): one varint byte, or two
            if length > 127:
                if value[start] > 127 or not value[start]:
                    return None
                length = (length & 127) | value[start] << 7
                start += 1
            if length == 0:
                return None
            length -= 1
        elif length < 0:
            return None
        end = start + length
        rest = size - end - tail.size  # bytes after the tail: the tagged field's
        if rest < 0:
            return None
        after = tail.unpack_from(value, end)
        metadata = self.quote(value[start:end].decode("utf-8", "replace")) if length else _EMPTY
        if not layout.flexible:
            return None if rest else (self.formats[version], fields[1:-1] + (metadata,) + after)
        count = after[-1]
        if not count:
            return None if rest else (self.formats[version], fields[1:-1] + (metadata,) + after[:-1])
        tagged = layout.tagged
        if count != 1 or tagged is None or rest != 2 + tagged.size:
            return None
        at = end + tail.size
        if value[at - 1:at + 2] != tagged.prefix:
            return None
        return (self.tagged_formats[version],
                fields[1:-1] + (metadata,) + after[:-1] + self.texts[version][value[at + 2:]])

    def plain_run(self, values: list) -> tuple | None:
        """(the _Plain that reads them, the values joined) for values of one size (a run's) that are
        all one version with empty metadata; None otherwise."""
        first = values[0]
        if type(first) is not bytes or len(first) < 2 or first[0] or first[1] > _TOP:
            return None
        variants = self.plain[first[1]]
        if variants is None:
            return None
        size = len(first)
        for plain in variants:
            if plain.size == size:
                break
        else:
            return None
        joined = b"".join(values)
        n = len(values)
        for position, byte in plain.marks:
            if joined[position::size] != bytes((byte,)) * n:
                return None
        return plain, joined

    def run(self, values: list) -> tuple | None:
        """(format, an iterator of each value's arguments) for values of one size (a run's) that are
        all one version with empty metadata; None otherwise."""
        found = self.plain_run(values)
        if found is None:
            return None
        plain, joined = found
        if plain.tag_at is None:
            return plain.format, plain.struct.iter_unpack(joined)
        raws = plain.column(len(values)).unpack(joined)
        if raws.count(raws[0]) == len(raws):  # one topic id in the run (a commit's partitions of one topic)
            return plain.with_text(raws[0]), plain.struct.iter_unpack(joined)
        # the shown fields, then the tagged field's text: C-level
        return plain.format, map(tuple.__add__, plain.struct.iter_unpack(joined), map(plain.texts.__getitem__, raws))


def is_offset_commit(row) -> bool:
    """A data row whose key is __consumer_offsets's OffsetCommitKey (the rows the fast path writes)."""
    return row.kind == "data" and row.record_type in _OFFSET_COMMIT_TYPES and row.key.family == "consumer"


def fast_batch(batch, decoder) -> bool:
    """Whether a batch's records can go the fast way: magic-2 data of the __consumer_offsets family."""
    return not batch.is_control and batch.magic >= 2 and decoder.family in (None, "consumer")


_NULL_VALUE = (',"value_version":null,"value":null', ())  # a tombstone's value text, as `one` gives it
_DELETE = ("<DELETE>", ())  # kafka-dump-log's


class _KeyProbe:
    """The first record of a key whose value the fast way reads: only its key is decoded (the record
    as a tombstone, through a decoder of its own that reports nothing); the generic decoder reads the
    whole record, and reports its problems, when the key is not an offset commit key that decodes.
    (A value that `OffsetCommitValues.one` reads is one the generic decoder reads without a problem.)"""

    def __init__(self):
        self.decoder = self.silent = None

    @staticmethod
    def text(fields, null_text, value_text):
        """The value's text (see OffsetCommitValues.one) when the key's bytes name an offset commit."""
        key, value = fields[3], fields[4]
        if type(key) is not bytes or len(key) < 2 or key[0] or key[1] not in _OFFSET_COMMIT_TYPES:
            return None
        return null_text if value is None else value_text(value)

    def __call__(self, batch, fields, decoder):
        """The row of the record's key (its value None), or None: the generic way then."""
        key = fields[3]
        if decoder is not self.decoder:
            self.decoder, self.silent = decoder, RowDecoder(decoder.segment, decoder.family, ProblemLog())
        row = self.silent.rows(batch, (Record(fields[0], fields[1], fields[2], key, None, fields[5], fields[6], -1),))[0]
        return row if is_offset_commit(row) else None


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
        self.probe = _KeyProbe()

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
                value = fields[4]
                if head is None:  # a key seen first
                    text = self.probe.text(fields, _NULL_VALUE, value_text)
                    row = None if text is None else self.probe(batch, fields, decoder)
                    if row is None:  # the generic decoder reads the record
                        row = decoder.rows(batch, (Record(*fields),))[0]  # a data batch: one row per record
                        kept = keep is None or keep(row)
                        if is_offset_commit(row):
                            heads[fields[3]] = self.lines.key_head(row) if kept else ""
                        if kept:
                            formats.append("%s")
                            args.append(line(row))
                        continue
                    head = heads[fields[3]] = self.lines.key_head(row) if keep is None or keep(row) else ""
                else:
                    text = _NULL_VALUE if value is None else value_text(value)
                    if text is None:  # laid out otherwise: the generic way
                        row = decoder.rows(batch, (Record(*fields),))[0]
                        if keep is None or keep(row):
                            formats.append("%s")
                            args.append(line(row))
                        continue
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
        fmt = fmt[:-2] + end[0].replace("%", "%%")  # the row's end is the batch's: written in, not filled
        zz, base_offset, base_ts = ZIGZAG, records.base_offset, records.base_ts
        extend = args.extend
        for (ts, od, _, _), head, fields in zip(rows, heads, values):
            extend((base_offset + zz[od], base_ts + zz[ts], head) + fields)
        formats += repeat(fmt, len(rows))
        return True


_DUMP_LOG_LINE = "| offset: %d {}: %d keySize: %d valueSize: %d sequence: %d headerKeys: [%s] key: %s payload: "
_DUMP_LOG_RUN_LINE = "| offset: %d {}: %d keySize: {} valueSize: {} sequence: %d headerKeys: [] key: %s payload: "


class FastDumpLog:
    """kafka-dump-log's lines for one batch (`dump_log_text.batch_lines`), offset commits the fast way."""

    def __init__(self):
        self.keys: dict = {}  # offset commit key bytes -> kafka-dump-log key text
        self.values = OffsetCommitValues('{{"version":"{version}","data":{data}}}', json_string)
        self.probe = _KeyProbe()

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
                value = fields[4]
                if key_text is None:  # a key seen first
                    text = self.probe.text(fields, _DELETE, value_text)
                    row = None if text is None else self.probe(batch, fields, decoder)
                    if row is None:  # the generic decoder reads the record
                        record = Record(*fields)
                        row = decoder.rows(batch, (record,))[0]  # a data batch: one row per record
                        if is_offset_commit(row):
                            keys[fields[3]] = dump_log_key(row.key)
                        formats.append("%s")
                        args.append(record_line(batch, record, row))
                        continue
                    key_text = keys[fields[3]] = dump_log_key(row.key)
                else:
                    text = _DELETE if value is None else value_text(value)
                    if text is None:  # laid out otherwise: the generic way
                        record = Record(*fields)
                        formats.append("%s")
                        args.append(record_line(batch, record, decoder.rows(batch, (record,))[0]))
                        continue
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
