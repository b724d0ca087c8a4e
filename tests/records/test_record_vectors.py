"""kafka_vectors.json (canonical, kafka-test, edge, partitioning) against kgroup.records."""

import json
import re

import pytest

from helpers import VECTORS
import kgroup.records as rec

_ALL = json.loads((VECTORS / "kafka_vectors.json").read_text())


# Vectors an older trunk made whose layout Kafka 4.4 changed; they no longer decode, as on a Kafka 4.4
# broker. OffsetCommitValue's tag 0 is now topicId (a 16-byte uuid, KIP-848's commits by topic id)
# where these carry 5 unknown bytes; ShareGroupMetadataValue gained a required metadataHash (int64)
# and ShareGroupStatePartitionMetadataValue a leading initializingTopics array (KIP-932 as released).
SUPERSEDED_BY_KAFKA_4_4 = {"OffsetCommit value v4 with unknown tagged fields 0 and 1": 1,
                           "testDeserializeFutureOffsetCommitValue": 1,
                           "ShareGroupMetadata (type 11)": 11,
                           "ShareGroupStatePartitionMetadata (type 15)": 15}


def _vectors(category, predicate=lambda v: True):
    return [pytest.param(v, id=v["name"]) for v in _ALL
            if v["category"] == category and predicate(v) and v["name"] not in SUPERSEDED_BY_KAFKA_4_4]


@pytest.mark.parametrize("name", sorted(SUPERSEDED_BY_KAFKA_4_4))
def test_vectors_of_a_layout_kafka_4_4_changed_do_not_decode(name):
    v = next(v for v in _ALL if v["name"] == name)
    value = _hex(v["hex"]["value"] if isinstance(v["hex"], dict) else v["hex"])
    with pytest.raises(rec.RecordDecodeError):
        rec.decode_value(SUPERSEDED_BY_KAFKA_4_4[name], value)


def _hex(text):
    return None if text is None else bytes.fromhex(text)


def _is_formatter(v):
    return isinstance(v.get("expected"), dict) and "console_formatter" in v["expected"]


def _check_decoded_message(v):
    """Decode, compare data / JSON / dump-log text, then re-encode byte for byte."""
    e = v["expected"]
    key_bytes, value_bytes = _hex(v["hex"]["key"]), _hex(v["hex"]["value"])
    key = rec.decode_key(key_bytes)
    assert key.record_type == e["record_type"]
    assert rec.key_to_json(key) == e["key"]
    assert key.unread_bytes == e.get("key_unread_bytes", 0)
    value = rec.decode_value(key.record_type, value_bytes, strict_versions=False)
    if e.get("value") is None:
        assert value is None
    else:
        assert value.version == e["value_version"]
        assert value.unread_bytes == e.get("value_unread_bytes", 0)
        assert rec.value_to_json(key.record_type, value, parse_consumer_protocol=False) == e["value"]
    dump_key = e.get("dump_log_segments_key", e.get("dump_key"))
    dump_payload = e.get("dump_log_segments_payload", e.get("dump_payload"))
    assert rec.dump_log_key(key) == dump_key
    assert rec.dump_log_payload(key.record_type, value) == dump_payload
    assert rec.dump_log_record(key_bytes, value_bytes) == (dump_key, dump_payload)
    if not key.unread_bytes:
        assert rec.encode_key(key.record_type, key.data) == key_bytes
    if value is not None and not value.unread_bytes and 0 <= value.version <= _max_version(key):
        assert rec.encode_value(key.record_type, value.version, value.data) == value_bytes


def _max_version(key):
    return rec.record_schema(key.record_type).value.valid.high


@pytest.mark.parametrize("v", _vectors("canonical"))
def test_canonical(v):
    _check_decoded_message(v)


@pytest.mark.parametrize("v", _vectors("canonical", lambda v: v["hex"]["value"] is not None))
def test_canonical_value_in_strict_mode(v):
    """Every canonical version is in range, so strict decoding gives the same data."""
    key = rec.decode_key(_hex(v["hex"]["key"]))
    strict = rec.decode_value(key.record_type, _hex(v["hex"]["value"]))
    assert rec.value_to_json(key.record_type, strict, parse_consumer_protocol=False) == v["expected"]["value"]


@pytest.mark.parametrize("v", _vectors("kafka-test", _is_formatter))
def test_console_formatters(v):
    e = v["expected"]
    line = rec.console_formatter_line(e["console_formatter"], _hex(v["hex"]["key"]), _hex(v["hex"]["value"]))
    assert line == e["output"]


@pytest.mark.parametrize("v", _vectors("kafka-test", lambda v: v["kind"] == "value"))
def test_kafka_test_values(v):
    trunk = v["kafka_trunk"]
    value = rec.decode_value(v["record_type"], _hex(v["hex"]))
    assert value.version == trunk["value_version"]
    assert value.unread_bytes == trunk["value_unread_bytes"]
    assert rec.value_to_json(v["record_type"], value, parse_consumer_protocol=False) == trunk["value"]
    assert rec.dump_log_payload(v["record_type"], value) == trunk["dump_payload"]
    e = v["expected"]
    if "unknown_tagged_fields_hex" in e:
        unknown = value.data["_unknownTaggedFields"]
        assert {str(t): b.hex() for t, b in unknown.items()} == e["unknown_tagged_fields_hex"]
    if "group_unknown_tagged_field_tags" in e:
        assert sorted(value.data["_unknownTaggedFields"]) == e["group_unknown_tagged_field_tags"]
        for member in value.data["members"]:
            assert sorted(member["_unknownTaggedFields"]) == e["member_unknown_tagged_field_tags"]
        assert [m["memberId"] for m in value.data["members"]] == e["member_ids"]
    # Unknown tagged fields are kept and written back: the bytes round-trip exactly.
    assert rec.encode_value(v["record_type"], value.version, value.data) == _hex(v["hex"])


@pytest.mark.parametrize("v", _vectors("kafka-test", lambda v: v["kind"] == "message" and "kafka_trunk" in v))
def test_kafka_test_serde_cases(v):
    trunk = v["kafka_trunk"]
    key_bytes, value_bytes = _hex(v["hex"]["key"]), _hex(v["hex"]["value"])
    assert rec.dump_log_record(key_bytes, value_bytes) == (trunk["dump_key"], trunk["dump_payload"])
    if trunk["ok"]:
        key = rec.decode_key(key_bytes)
        assert (key.record_type, rec.key_to_json(key)) == (trunk["record_type"], trunk["key"])
        assert rec.decode_value(key.record_type, value_bytes) is None
        return
    with pytest.raises(rec.RecordDecodeError) as info:
        key = rec.decode_key(key_bytes)
        rec.decode_value(key.record_type, value_bytes)
    error = trunk["error"]
    if error.startswith("UnknownRecordTypeException"):
        assert isinstance(info.value, rec.UnknownRecordType)
        assert info.value.record_type == 255
        assert info.value.message == "unknown record type 255"
    else:
        assert info.value.message == error.removeprefix("RuntimeException: ")


@pytest.mark.parametrize("v", _vectors(
    "kafka-test", lambda v: v["kind"] == "message" and "kafka_trunk" not in v and not _is_formatter(v)))
def test_kafka_test_dump_log_segments(v):
    e = v["expected"]
    key_bytes, value_bytes = _hex(v["hex"]["key"]), _hex(v["hex"]["value"])
    text = rec.dump_log_record(key_bytes, value_bytes)
    assert text == (e["dump_log_segments_key"], e["dump_log_segments_payload"])
    if text[1] is not None:
        _check_decoded_message(v)


@pytest.mark.parametrize("v", _vectors("edge"))
def test_edge(v):
    if "expected_error" in v:
        with pytest.raises(rec.RecordDecodeError) as info:
            key = rec.decode_key(_hex(v["hex"]["key"]))
            rec.decode_value(key.record_type, _hex(v["hex"]["value"]))
        assert "Error at offset 0, skipping. " + info.value.message == v["kafka_trunk"]["dump_key"]
        assert v["expected_error"].endswith(info.value.message)
        return
    _check_decoded_message(v)


@pytest.mark.parametrize("v", _vectors("edge", lambda v: v["name"] in ("offset_value_v5", "offset_value_v_neg1", "cg_value_v1")))
def test_out_of_range_versions_are_rejected_by_default(v):
    key = rec.decode_key(_hex(v["hex"]["key"]))
    with pytest.raises(rec.RecordDecodeError) as info:
        rec.decode_value(key.record_type, _hex(v["hex"]["value"]))
    version = v["expected"]["value_version"]
    assert info.value.version == version and info.value.record_type == key.record_type
    assert f"version: {version} (record type {key.record_type} " in info.value.message


@pytest.mark.parametrize("v", _vectors("partitioning"))
def test_partitioning(v):
    e = v["expected"]
    assert rec.java_string_hash(v["group_id"]) == e["java_hashCode"]
    assert rec.partition_for(v["group_id"]) == e["partition_of_50"]
    assert rec.partition_for(v["group_id"], 7) == e["partition_of_7"]


_RECORD_LINE = re.compile(r"^\| offset: (\d+) .*? key: (.*?)(?: payload: (.*))?$")


@pytest.mark.parametrize("segment,dump", [
    ("A__consumer_offsets-7__00000000000000000000.log", "A.dump_offsets_decoder.txt"),
    ("B__consumer_offsets-12__00000000000000000000.log", "B.dump_offsets_decoder.txt"),
])
def test_segment_records_print_exactly_like_kafka_dump_log(segment, dump):
    """The real records of both segment files (batches read by kgroup.records.batch), printed
    with dump_log_record, equal the key/payload text of kafka-dump-log's expected output."""
    batch = pytest.importorskip("kgroup.records.batch")
    expected = {}
    for line in (VECTORS / "segments" / dump).read_text().splitlines():
        match = _RECORD_LINE.match(line)
        if match:
            expected[int(match.group(1))] = (match.group(2), match.group(3))
    seen = {}
    for b in batch.read_batches(str(VECTORS / "segments" / segment)):
        if b.is_control:
            continue
        for r in b.records:
            seen[r.offset] = rec.dump_log_record(r.key, r.value, r.offset)
    assert seen == expected
    assert len(seen) == {"A.dump_offsets_decoder.txt": 25, "B.dump_offsets_decoder.txt": 13}[dump]
