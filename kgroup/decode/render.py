"""Every output format of a decoded row: JSON, JSON lines, CSV, table rows and Parquet columns.

The local engine and Spark's executors render with these same functions (Spark ships `PAYLOADS` by
reference, so its workers import this module, which imports nothing from the command layer), and
`RowWriter` writes what they render to one stream, so both engines print the same bytes.
Parquet: fields that every record of a kind has are columns (so queries need no JSON parsing);
whatever is not a column is kept whole as JSON text (`key_json`, `value_json`) with the jsonl
output's field names.
"""

from __future__ import annotations

import sys

from kgroup.records import key_to_json, value_to_json
from kgroup.writers import ChunkedTable, CsvWriter, JsonArrayWriter, dumps_records, iso_ms

from .decoder import key_group

RECORD_COLUMNS = ["file", "partition", "offset", "timestamp", "type", "key_version", "value_version",
                  "producer_id", "transactional", "group", "topic", "topic_partition", "member_id",
                  "key", "value", "marker", "coordinatorEpoch", "error", "key_hex", "value_hex"]
TABLE_HEADERS = ["PARTITION", "OFFSET", "TIME", "TYPE", "GROUP", "KEY", "VALUE"]


def row_json(row) -> dict:
    base = {"offset": row.offset, "timestamp": row.timestamp}
    if row.kind == "data":
        value = row.value
        base.update({
            "type": row.type_name,
            "key_version": row.record_type,
            "key": key_to_json(row.key),
            "value_version": None if value is None else value.version,
            "value": None if value is None else value_to_json(row.record_type, value, row.key.family),
            "producer_id": row.producer_id,
            "transactional": row.transactional,
        })
    elif row.kind == "control":
        base.update({"type": "control", "marker": row.marker, "coordinatorEpoch": row.coordinator_epoch,
                     "producer_id": row.producer_id})
    else:
        base.update({"type": "error", "error": row.error,
                     "key_hex": None if row.key_bytes is None else bytes(row.key_bytes).hex(),
                     "value_hex": None if row.value_bytes is None else bytes(row.value_bytes).hex()})
    base["partition"] = row.partition
    base["file"] = row.file
    return base


class JsonlLines:
    """Builds row_json(row) as text, caching the parts that repeat (key JSON by key bytes, file names)."""

    CACHE_LIMIT = 200_000

    def __init__(self):
        self.keys = {}
        self.files = {}

    def line(self, row) -> str:
        if row.kind != "data":
            return dumps_records(row_json(row))
        value = row.value
        if value is None:
            body = ',"value_version":null,"value":null'
        else:
            body = ',"value_version":%d,"value":%s' % (
                value.version, dumps_records(value_to_json(row.record_type, value, row.key.family)))
        return '{"offset":%d,"timestamp":%d%s%s,"producer_id":%d,"transactional":%s%s' % (
            row.offset, row.timestamp, self.key_head(row), body, row.producer_id,
            "true" if row.transactional else "false", self.file_tail(row.file, row.partition))

    def key_head(self, row) -> str:
        """The fields a data row's key decides: ',"type":...,"key_version":...,"key":{...}'."""
        kb = row.key_bytes
        head = self.keys.get(kb)
        if head is None:
            if len(self.keys) >= self.CACHE_LIMIT:
                self.keys.clear()
            head = self.keys[kb] = (',"type":%s,"key_version":%d,"key":%s' % (
                dumps_records(row.type_name), row.record_type, dumps_records(key_to_json(row.key))))
        return head

    def file_tail(self, file: str, partition) -> str:
        """The row's end: ',"partition":...,"file":...}'."""
        tail = self.files.get((file, partition))
        if tail is None:
            tail = self.files[(file, partition)] = ',"partition":%s,"file":%s}' % (
                dumps_records(partition), dumps_records(file))
        return tail


def csv_row(row) -> dict:
    """row_json with the key's group, topic, partition and member id as columns of their own."""
    obj = row_json(row)
    key = obj.get("key") or {}
    obj["group"] = key_group(key)
    obj["topic"] = key.get("topic")
    obj["topic_partition"] = key.get("partition")
    obj["member_id"] = key.get("memberId")
    return obj


def table_row(row) -> list:
    """PARTITION is the coordinator topic's partition the record is in ("-" where the path does not
    say, as for stdin): a log directory's partitions are printed one after the other."""
    partition = "-" if row.partition is None else row.partition
    time = iso_ms(row.timestamp)
    if row.kind == "control":
        return [partition, row.offset, time, "control", "", f"producer {row.producer_id}", row.marker]
    if row.kind == "error":
        return [partition, row.offset, time, "error", "", "", short(row.error)]
    key = key_to_json(row.key)
    group = key_group(key, "")
    detail = ""
    if "topic" in key:
        detail = f"{key['topic']}-{key['partition']}"
    elif "memberId" in key:
        detail = key["memberId"]
    elif "topicId" in key:  # __share_group_state: the share-partition's topic id and partition
        detail = f"{key['topicId']}-{key['partition']}"
    return [partition, row.offset, time, row.type_name, group, detail, value_summary(row)]


def value_summary(row) -> str:
    if row.value is None:
        return "<DELETE>"
    v = row.value.data
    if row.record_type in (0, 1) and row.key.family != "share-state":
        text = f"offset={v['offset']} metadata={v.get('metadata', '')!r} at {iso_ms(v.get('commitTimestamp'))}"
        if v.get("leaderEpoch", -1) >= 0:
            text += f" epoch={v['leaderEpoch']}"
        if v.get("expireTimestamp", -1) >= 0:
            text += f" expires {iso_ms(v['expireTimestamp'])}"
        return text
    if row.record_type == 2:
        members = v.get("members") or []
        static = sum(1 for m in members if m.get("groupInstanceId") is not None)
        return (f"{v.get('protocolType') or '-'}/{v.get('protocol') or '-'} gen={v.get('generation')} "
                f"leader={v.get('leader') or '-'} members={len(members)} static={static}")
    return short(dumps_records(value_to_json(row.record_type, row.value, row.key.family)))


def short(text: str, limit: int = 100) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


# Module-level renderers, so Spark ships them by reference (a worker renders with a fresh cache).
_lines = None


def jsonl_payload(row) -> str:
    global _lines
    if _lines is None:
        _lines = JsonlLines()
    return _lines.line(row)


#: What one row becomes for each text format (json arrays hold the jsonl text of each row).
PAYLOADS = {"jsonl": jsonl_payload, "json": jsonl_payload, "csv": csv_row, "table": table_row}


def renderer(output: str):
    """PAYLOADS[output], with a cache of its own for the JSON formats (one per run, not per process)."""
    return JsonlLines().line if output in ("jsonl", "json") else PAYLOADS[output]


class RowWriter:
    """Writes rendered rows (see `renderer`) to a stream: jsonl, a JSON array, CSV or a table."""

    def __init__(self, output: str, stream=None):
        self.output = output
        self.stream = stream or sys.stdout
        self.count = 0
        self.writer = None
        if output == "json":
            self.writer = JsonArrayWriter(self.stream).__enter__()
            self._add = self.writer.write_text
        elif output == "csv":
            self.writer = CsvWriter(RECORD_COLUMNS, self.stream)
            self._add = self.writer.write
        elif output == "table":
            self.writer = ChunkedTable(TABLE_HEADERS, stream=self.stream)
            self._add = self.writer.add

    def add_all(self, payloads: list) -> None:
        """One batch's payloads (jsonl: one write per batch, a write per line costs as much as encoding it)."""
        if not payloads:
            return
        self.count += len(payloads)
        if self.output == "jsonl":
            payloads.append("")
            self.stream.write("\n".join(payloads))
            return
        if self.output == "json":
            self.writer.write_texts(payloads)
            return
        add = self._add
        for payload in payloads:
            add(payload)

    @property
    def separator(self) -> str:
        """What stands between two rows' payloads in jsonl and json output."""
        return "\n" if self.output == "jsonl" else ",\n"

    def add_joined(self, text: str, count: int) -> None:
        """`count` jsonl/json payloads already joined by `separator` (one write)."""
        if not count:
            return
        self.count += count
        if self.output == "jsonl":
            self.stream.write(text + "\n")
        else:
            self.writer.write_joined(text, count)

    def close(self) -> None:
        if self.output == "json":
            self.writer.__exit__(None, None, None)
        elif self.output == "table":
            self.writer.flush()
            if not self.count:
                self.stream.write("(no records)\n")


# ---------------------------------------------------------------------------------------------- Parquet

#: Parquet: (column, Spark SQL type, meaning) in order; documented in the man page and README.
COLUMNS = [
    ("file", "string", "segment file path"),
    ("partition", "int", "__consumer_offsets partition of the file (null when the path does not say)"),
    ("offset", "bigint", "record offset"),
    ("timestamp", "bigint", "record timestamp, epoch ms"),
    ("type", "string", "record name (offset_commit, group_metadata, ...), control or error"),
    ("key_version", "int", "record type number (the key's version field)"),
    ("value_version", "int", "value schema version; null for a tombstone"),
    ("tombstone", "boolean", "true when the value is null (a delete)"),
    ("producer_id", "bigint", "producer id of the batch (-1 outside transactions)"),
    ("transactional", "boolean", "the batch is transactional"),
    ("group", "string", "group id from the key"),
    ("topic", "string", "offset commits: topic from the key"),
    ("topic_partition", "int", "offset commits: partition from the key"),
    ("member_id", "string", "per-member records: member id from the key"),
    ("committed_offset", "bigint", "offset commits: committed offset"),
    ("leader_epoch", "int", "offset commits: leader epoch (-1 unknown)"),
    ("metadata", "string", "offset commits: metadata string"),
    ("commit_timestamp", "bigint", "offset commits: commit time, epoch ms"),
    ("expire_timestamp", "bigint", "offset commits: expiry time (value v1 only), else null"),
    ("protocol_type", "string", "group metadata: protocol type"),
    ("generation", "int", "group metadata: generation"),
    ("protocol", "string", "group metadata: chosen protocol"),
    ("leader", "string", "group metadata: leader member id"),
    ("members", "int", "group metadata: number of members"),
    ("static_members", "int", "group metadata: members with a group.instance.id"),
    ("marker", "string", "control records: COMMIT or ABORT"),
    ("coordinator_epoch", "int", "control records: coordinator epoch"),
    ("error", "string", "undecodable records: why"),
    ("key_hex", "string", "undecodable records: key bytes in hex"),
    ("value_hex", "string", "undecodable records: value bytes in hex"),
    ("key_json", "string", "the decoded key as JSON (jsonl field names)"),
    ("value_json", "string", "the decoded value as JSON when it has fields that are not columns"),
]

SCHEMA_DDL = ", ".join(f"`{name}` {kind}" for name, kind, _ in COLUMNS)
ARROW_BLOCK_ROWS = 16384


def arrow_schema():
    """COLUMNS as a pyarrow schema (pyarrow imported only when asked for)."""
    import pyarrow as pa

    types = {"string": pa.string(), "int": pa.int32(), "bigint": pa.int64(), "boolean": pa.bool_()}
    return pa.schema([pa.field(name, types[kind]) for name, kind, _ in COLUMNS])


def arrow_batch(rows: list, schema):
    """Row tuples -> one Arrow RecordBatch (columns built in C from the transposed tuples)."""
    import pyarrow as pa

    columns = list(zip(*rows)) if rows else [()] * len(schema)
    return pa.RecordBatch.from_arrays([pa.array(col, type=field.type) for col, field in zip(columns, schema)],
                                      schema=schema)
_WIDTH = len(COLUMNS)
_OFFSET_FIELDS = frozenset(("offset", "leaderEpoch", "metadata", "commitTimestamp", "expireTimestamp"))
_NO_TOPIC_ID = bytes(16)
_GROUP_FIELDS = frozenset(("protocolType", "generation", "protocol", "leader", "members"))


class ParquetRows:
    """Turns DecodedRows into COLUMNS tuples, caching key columns by key bytes (keys repeat a lot)."""

    CACHE_LIMIT = 100_000

    def __init__(self):
        self.keys: dict = {}

    def _key_part(self, row) -> tuple:
        part = self.keys.get(row.key_bytes)
        if part is None:
            if len(self.keys) >= self.CACHE_LIMIT:
                self.keys.clear()
            data = row.key.data
            part = (key_group(data), data.get("topic"),
                    data.get("partition") if "topic" in data else None, data.get("memberId"),
                    dumps_records(key_to_json(row.key)))
            self.keys[row.key_bytes] = part
        return part

    def row(self, row) -> tuple:
        if row.kind == "control":
            return (row.file, row.partition, row.offset, row.timestamp, "control", None, None, False,
                    row.producer_id, row.transactional) + (None,) * 15 + (
                    row.marker, row.coordinator_epoch, None, None, None, None, None)
        if row.kind == "error":
            return (row.file, row.partition, row.offset, row.timestamp, "error", row.record_type, None, False,
                    row.producer_id, row.transactional) + (None,) * 17 + (
                    row.error, None if row.key_bytes is None else bytes(row.key_bytes).hex(),
                    None if row.value_bytes is None else bytes(row.value_bytes).hex(), None, None)
        group, topic, topic_partition, member_id, key_json = self._key_part(row)
        value = row.value
        offsets = (None,) * 5
        meta = (None,) * 6
        value_json = None
        if value is not None:
            data = value.data
            rtype = row.record_type
            if rtype in (0, 1) and row.key.family != "share-state":
                expire = data.get("expireTimestamp", -1)
                offsets = (data["offset"], data.get("leaderEpoch", -1), data.get("metadata", ""),
                           data.get("commitTimestamp", -1), None if expire == -1 else expire)
                # Kafka 4.4's topicId (a tagged field) is not a column: kept as JSON when written.
                extra = not _OFFSET_FIELDS.issuperset(data) and (
                    data.get("topicId", _NO_TOPIC_ID) != _NO_TOPIC_ID or
                    not _OFFSET_FIELDS.issuperset(k for k in data if k != "topicId"))
            elif rtype == 2:
                members = data.get("members") or []
                meta = (data.get("protocolType"), data.get("generation"), data.get("protocol"),
                        data.get("leader"), len(members),
                        sum(1 for m in members if m.get("groupInstanceId") is not None))
                extra = True  # members' details are JSON
            else:
                extra = True
            if extra:
                value_json = dumps_records(value_to_json(rtype, value, row.key.family))
        return (row.file, row.partition, row.offset, row.timestamp, row.type_name, row.record_type,
                None if value is None else value.version, value is None, row.producer_id, row.transactional,
                group, topic, topic_partition, member_id) + offsets + meta + (
                None, None, None, None, None, key_json, value_json)
