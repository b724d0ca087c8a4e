"""``__consumer_offsets`` / ``__worker_offsets`` records: schemas as data, generated codecs.

Public contract (other modules code against these names):

* ``decode_key(buf, family)`` / ``decode_value(record_type, buf, family, *, strict_versions=True)``
  -> ``DecodedKey`` / ``DecodedValue`` (None for a tombstone). Errors are ``RecordDecodeError``
  carrying Kafka's text; unknown key types raise ``UnknownRecordType`` (Kafka's loaders skip
  those records). Out-of-range value versions raise unless ``strict_versions=False``, which
  reads them the way trunk's serde does. Bytes left after the schema are accepted, as Kafka
  does, and counted in ``unread_bytes``. Decoded keys are cached by their bytes and shared:
  treat them as read-only.
* ``group_id_of_key(buf)`` reads only the group id every key starts with (the one place that
  does; e.g. to choose a record's partition with ``partition_for``).
* ``encode_key`` / ``encode_value`` write the same layouts (``RecordEncodeError`` on bad data,
  naming the field); fields the version lacks are ignored, absent optional ones defaulted.
  ``value_element_encoder(record_type, version, field)`` encodes one element of a value's array
  of structs as the value holds it (for a writer that keeps and joins element encodings).
* ``key_to_json`` / ``value_to_json`` / ``dump_log_key`` / ``dump_log_payload`` give
  kafka-dump-log's JSON, byte-identical; ``dump_log_record`` the whole key/payload text of one
  record including Kafka's skip messages; ``console_formatter_line`` the console formatters'
  line; ``key_from_json`` / ``value_from_json`` go back from JSON to data.
* Data dicts use kafka-dump-log field names; bytes are ``bytes``; uuids are 16-byte ``bytes``
  (``uuid.UUID`` accepted on encode); unknown tagged fields are kept under
  ``"_unknownTaggedFields"`` ({tag: bytes}) and written back.
"""

from .consumer_protocol import (
    assignment_to_json,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    subscription_to_json,
)
from .partitioning import java_string_hash, partition_for
from .tool_text import console_formatter_line, dump_log_record
from .schema_json import (
    dump_log_key,
    dump_log_payload,
    jackson_dumps,
    key_from_json,
    key_to_json,
    value_from_json,
    value_to_json,
)
from .schema_records import (
    FAMILIES,
    DecodedKey,
    DecodedValue,
    RecordDecodeError,
    RecordEncodeError,
    UnknownRecordType,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    group_id_of_key,
    record_schema,
    record_type_name,
    record_types,
    value_element_encoder,
)

__all__ = [
    "FAMILIES", "DecodedKey", "DecodedValue", "RecordDecodeError", "RecordEncodeError",
    "UnknownRecordType", "decode_key", "decode_value", "encode_key", "encode_value", "group_id_of_key",
    "record_type_name", "record_types", "record_schema", "key_to_json", "value_to_json", "dump_log_key",
    "dump_log_payload", "jackson_dumps", "partition_for", "java_string_hash",
    "decode_subscription", "decode_assignment", "encode_subscription", "encode_assignment",
    "subscription_to_json", "assignment_to_json", "dump_log_record", "console_formatter_line",
    "key_from_json", "value_from_json", "value_element_encoder",
]
