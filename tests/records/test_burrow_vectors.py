"""burrow_vectors.json: whatever Kafka trunk accepts decodes as its kafka_trunk block says;
whatever Kafka rejects raises RecordDecodeError with Kafka's text."""

import json

import pytest

from helpers import VECTORS
import kgroup.records as rec

_ALL = json.loads((VECTORS / "burrow_vectors.json").read_text())


def _params(predicate):
    return [pytest.param(v, id=v["name"]) for v in _ALL if predicate(v)]


def _hex(text):
    return None if text is None else bytes.fromhex(text)


@pytest.mark.parametrize("v", _params(lambda v: "kafka_trunk" in v and v["kafka_trunk"]["ok"]))
def test_kafka_accepts(v):
    trunk = v["kafka_trunk"]
    key_bytes, value_bytes = _hex(trunk["input"]["key"]), _hex(trunk["input"]["value"])
    key = rec.decode_key(key_bytes)
    assert key.record_type == trunk["record_type"]
    assert rec.key_to_json(key) == trunk["key"]
    assert key.unread_bytes == trunk["key_unread_bytes"]
    value = rec.decode_value(key.record_type, value_bytes)
    if trunk["value"] is None:
        assert value is None
    else:
        assert value.version == trunk["value_version"]
        assert value.unread_bytes == trunk["value_unread_bytes"]
        assert rec.value_to_json(key.record_type, value, parse_consumer_protocol=False) == trunk["value"]
    assert rec.dump_log_record(key_bytes, value_bytes) == (
        trunk["dump_log_segments_key"], trunk["dump_log_segments_payload"])


@pytest.mark.parametrize("v", _params(lambda v: "kafka_trunk" in v and not v["kafka_trunk"]["ok"]))
def test_kafka_rejects(v):
    trunk = v["kafka_trunk"]
    key_bytes, value_bytes = _hex(trunk["input"]["key"]), _hex(trunk["input"]["value"])
    with pytest.raises(rec.RecordDecodeError) as info:
        key = rec.decode_key(key_bytes)
        rec.decode_value(key.record_type, value_bytes)
    assert info.value.message == trunk["error"].removeprefix("RuntimeException: ")
    assert rec.dump_log_record(key_bytes, value_bytes) == (trunk["dump_log_segments_key"], None)


def test_burrow_v4_offset_value_without_tag_byte_is_rejected():
    """Burrow's own v4 vectors lack the final tagged-field count; Kafka (and we) fail on them."""
    v = next(v for v in _ALL if v["name"] == "decodeOffsetValueV4")
    with pytest.raises(rec.RecordDecodeError) as info:
        rec.decode_value(1, bytes.fromhex("0004" + v["hex"]))
    assert info.value.message == "Could not read record with version 4 from value's buffer due to: null."
    # With the missing byte appended the same body is a valid v4 value.
    fixed = rec.decode_value(1, bytes.fromhex("0004" + v["hex"] + "00"))
    assert fixed.data["metadata"] == "testdata" and fixed.data["offset"] == 8372


@pytest.mark.parametrize("v", _params(lambda v: v["name"].startswith("decodeMemberAssignmentV0")))
def test_assignment_fragments(v):
    blob = bytes.fromhex("0000" + v["hex"])
    if v.get("expected"):
        data = rec.decode_assignment(blob)
        parsed = {tp["topic"]: tp["partitions"] for tp in data["assignedPartitions"]}
        assert parsed == v["expected"]["assignment"]
        assert len(data["userData"]) == v["expected"]["user_data_length"]
    else:
        with pytest.raises(rec.RecordDecodeError):
            rec.decode_assignment(blob)


def test_negative_assignment_version_is_rejected():
    with pytest.raises(rec.RecordDecodeError) as info:
        rec.decode_assignment(bytes.fromhex("ffff00000000ffffffff"))
    assert info.value.message == "Unsupported assignment version: -1"


def test_burrow_mislabelled_group_vector_decodes_as_group_metadata():
    """processConsumerOffsetsMessage_Offset actually carries a group-metadata record (spec 8)."""
    v = next(v for v in _ALL if v["name"] == "processConsumerOffsetsMessage_Offset")
    key = rec.decode_key(bytes.fromhex(v["hex"]["key"]))
    assert key.name == "group_metadata"
    swapped = next(v for v in _ALL if v["name"] == "processConsumerOffsetsMessage_Metadata")
    assert rec.decode_key(bytes.fromhex(swapped["hex"]["key"])).name == "offset_commit"
