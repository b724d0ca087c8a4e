"""The Parquet schema of `decode-offsets --engine spark -o parquet`, and one decoded row as its tuple.

Fields that every record of a kind has are columns (so queries need no JSON parsing); whatever is
not a column is kept whole as JSON text (`key_json`, `value_json`) with the jsonl output's field names.
"""

from __future__ import annotations

from kgroup.records import key_to_json, value_to_json

#: (column, Spark SQL type, meaning) in order; documented in the man page and README.
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
_GROUP_FIELDS = frozenset(("protocolType", "generation", "protocol", "leader", "members"))


def _dumps():
    from json import JSONEncoder

    return JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode


class ParquetRows:
    """Turns DecodedRows into COLUMNS tuples, caching key columns by key bytes (keys repeat a lot)."""

    CACHE_LIMIT = 100_000

    def __init__(self):
        self.dumps = _dumps()
        self.keys: dict = {}

    def _key_part(self, row) -> tuple:
        part = self.keys.get(row.key_bytes)
        if part is None:
            if len(self.keys) >= self.CACHE_LIMIT:
                self.keys.clear()
            data = row.key.data
            part = (data.get("group", data.get("groupId")), data.get("topic"),
                    data.get("partition") if "topic" in data else None, data.get("memberId"),
                    self.dumps(key_to_json(row.key)))
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
            if rtype in (0, 1):
                expire = data.get("expireTimestamp", -1)
                offsets = (data["offset"], data.get("leaderEpoch", -1), data.get("metadata", ""),
                           data.get("commitTimestamp", -1), None if expire == -1 else expire)
                extra = not _OFFSET_FIELDS.issuperset(data)
            elif rtype == 2:
                members = data.get("members") or []
                meta = (data.get("protocolType"), data.get("generation"), data.get("protocol"),
                        data.get("leader"), len(members),
                        sum(1 for m in members if m.get("groupInstanceId") is not None))
                extra = True  # members' details are JSON
            else:
                extra = True
            if extra:
                value_json = self.dumps(value_to_json(rtype, value, row.key.family))
        return (row.file, row.partition, row.offset, row.timestamp, row.type_name, row.record_type,
                None if value is None else value.version, value is None, row.producer_id, row.transactional,
                group, topic, topic_partition, member_id) + offsets + meta + (
                None, None, None, None, None, key_json, value_json)
