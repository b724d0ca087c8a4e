"""Schema-driven round trips, the tagged-field rules of spec 1.5, errors and JSON text."""

import json
import re
import uuid

import pytest

from helpers import VECTORS
import kgroup.records as rec
from kgroup.records.schema import record_schemas

# ------------------------------------------------------------------ sample data from schemas


def _sample(struct_, version, seed, nulls):
    """A data dict with non-default values for every field of ``version`` (defaults elsewhere)."""
    data = {}
    for i, f in enumerate(struct_.fields):
        if version not in f.versions:
            data[f.json_name] = f.default(version)
            continue
        n = seed * 10 + i
        if nulls and version in f.nullable:
            data[f.json_name] = None
            continue
        data[f.json_name] = _one(f, f.type if f.type != "array" else "array", version, n, nulls)
    return data


def _one(f, kind, version, n, nulls):
    if kind == "array":
        return [_one(f, f.element, version, n + k, nulls) for k in range(2)]
    return {
        "bool": lambda: bool(n % 2), "int8": lambda: -n % 128, "int16": lambda: 300 + n,
        "uint16": lambda: 60000 + n, "int32": lambda: -(70000 + n), "int64": lambda: 1 << 40 | n,
        "string": lambda: f"{f.json_name}-{n}-grüße-☃", "bytes": lambda: bytes(range(n % 7 + 1)),
        "uuid": lambda: uuid.UUID(int=(n + 1) * 0x0123456789ABCDEF).bytes,
        "struct": lambda: _sample(f.struct, version, n, nulls),
    }[kind]()


def _cases():
    for family in rec.FAMILIES:
        for record_type, schema in record_schemas(family).items():
            if family == "connect" and record_type <= 2:
                continue
            for version in range(schema.value.valid.low, schema.value.valid.high + 1):
                for nulls in (False, True):
                    yield pytest.param(family, record_type, version, nulls,
                                       id=f"{family}-{record_type}-v{version}-{'nulls' if nulls else 'full'}")


@pytest.mark.parametrize("family,record_type,version,nulls", list(_cases()))
def test_round_trip_every_type_and_version(family, record_type, version, nulls):
    schema = rec.record_schema(record_type, family)
    key_data = _sample(schema.key.struct, record_type, record_type, False)
    key_bytes = rec.encode_key(record_type, key_data, family)
    key = rec.decode_key(key_bytes, family)
    assert (key.record_type, key.name, key.data, key.unread_bytes) == (record_type, schema.name, key_data, 0)
    value_data = _sample(schema.value.struct, version, 1, nulls)
    value_bytes = rec.encode_value(record_type, version, value_data, family)
    value = rec.decode_value(record_type, value_bytes, family)
    assert (value.version, value.unread_bytes) == (version, 0)
    assert value.data == value_data
    assert rec.encode_value(record_type, version, value.data, family) == value_bytes
    text = rec.dump_log_payload(record_type, value, family)
    generic = rec.jackson_dumps(rec.value_to_json(record_type, value, family))
    assert text == '{"version":"%d","data":%s}' % (version, generic)
    assert rec.dump_log_key(key) == '{"type":"%d","data":%s}' % (record_type, rec.jackson_dumps(rec.key_to_json(key)))
    back = rec.value_from_json(record_type, version, json.loads(text)["data"], family)
    assert rec.encode_value(record_type, version, back, family) == value_bytes


@pytest.mark.parametrize("family", rec.FAMILIES)
def test_group_id_of_key_reads_every_key_type(family):
    """group_id_of_key reads only the key's first field: every key schema must start with the group id."""
    for record_type, schema in record_schemas(family).items():
        key_data = _sample(schema.key.struct, record_type, record_type, False)
        group_field = schema.key.struct.fields[0].json_name
        key_data[group_field] = "gr\u00fcppe-%d" % record_type
        key_bytes = rec.encode_key(record_type, key_data, family)
        assert rec.group_id_of_key(key_bytes) == key_data[group_field], (family, record_type)
        assert rec.group_id_of_key(memoryview(key_bytes)) == key_data[group_field]


def test_round_trip_connect_keys_differ_from_consumer_for_type_8():
    connect_key = rec.encode_key(8, {"groupId": "g"}, "connect")
    assert rec.decode_key(connect_key, "connect").name == "connect_worker_group_configuration"
    with pytest.raises(rec.RecordDecodeError, match="from key's buffer due to: null"):
        rec.decode_key(connect_key, "consumer")
    # Types 3-7 have the same key bytes in both families: only the family argument tells them apart.
    same = rec.encode_key(5, {"groupId": "g", "memberId": "m"}, "connect")
    assert same == rec.encode_key(5, {"groupId": "g", "memberId": "m"})
    assert rec.decode_key(same, "connect").name == "connect_worker_group_member_metadata"
    assert rec.decode_key(same).name == "consumer_group_member_metadata"


def test_record_type_names():
    assert [rec.record_type_name(t) for t in range(17)] == [
        "offset_commit", "offset_commit", "group_metadata", "consumer_group_metadata",
        "consumer_group_partition_metadata", "consumer_group_member_metadata",
        "consumer_group_target_assignment_metadata", "consumer_group_target_assignment_member",
        "consumer_group_current_member_assignment", "share_group_partition_metadata",
        "share_group_member_metadata", "share_group_metadata", "share_group_target_assignment_metadata",
        "share_group_target_assignment_member", "share_group_current_member_assignment",
        "share_group_state_partition_metadata", "consumer_group_regular_expression"]
    assert [rec.record_type_name(t, "connect") for t in range(3, 9)] == [
        "connect_worker_group_metadata", "connect_worker_group_connectors_tasks_metadata",
        "connect_worker_group_member_metadata", "connect_worker_group_target_assignment",
        "connect_worker_group_current_member_assignment", "connect_worker_group_configuration"]
    assert [rec.record_type_name(t) for t in (17, 19, 20, 21, 22, 23)] == [
        "streams_group_metadata", "streams_group_member_metadata", "streams_group_target_assignment_metadata",
        "streams_group_target_assignment_member", "streams_group_current_member_assignment",
        "streams_group_topology"]
    with pytest.raises(rec.UnknownRecordType):
        rec.record_type_name(18)  # StreamsGroupPartitionMetadata: gone before Kafka 4.4
    with pytest.raises(rec.UnknownRecordType):
        rec.record_type_name(24)
    with pytest.raises(rec.UnknownRecordType):
        rec.record_type_name(9, "connect")


def test_consumer_group_regular_expression_record_bytes():
    """Type 16 as Kafka 4.0 writes it: a non-flexible key, a flexible v0 value."""
    key = rec.encode_key(16, {"groupId": "g", "regularExpression": "foo.*"})
    assert key.hex() == "00100001670005666f6f2e2a"
    value = rec.encode_value(16, 0, {"topics": ["foo", "food"], "version": 42, "timestamp": 1000})
    assert value.hex() == "00000304666f6f05666f6f64000000000000002a00000000000003e800"
    assert rec.decode_key(key).data == {"groupId": "g", "regularExpression": "foo.*"}
    assert rec.decode_value(16, value).data == {"topics": ["foo", "food"], "version": 42, "timestamp": 1000}


# ------------------------------------------------------------------ what the coordinator writes


def test_offset_commit_v3_exact_bytes_and_defaults():
    key = rec.encode_key(1, {"group": "my-group", "topic": "orders", "partition": 3})
    assert key.hex() == "000100086d792d67726f757000066f726465727300000003"
    value = rec.encode_value(1, 3, {"offset": 12345, "leaderEpoch": 7, "metadata": "meta",
                                          "commitTimestamp": 1700000000000})
    assert value.hex() == "000300000000000030390000000700046d6574610000018bcfe56800"
    # leaderEpoch and metadata are optional (defaults -1 and ""); expireTimestamp is ignored in v3.
    minimal = rec.encode_value(1, 3, {"offset": 5, "commitTimestamp": 9, "expireTimestamp": 77})
    assert rec.decode_value(1, minimal).data == {
        "offset": 5, "leaderEpoch": -1, "metadata": "", "commitTimestamp": 9, "expireTimestamp": -1,
        "topicId": bytes(16)}
    v1 = rec.encode_value(1, 1, {"offset": 5, "commitTimestamp": 9, "expireTimestamp": 77, "leaderEpoch": 4})
    assert rec.decode_value(1, v1).data == {
        "offset": 5, "leaderEpoch": -1, "metadata": "", "commitTimestamp": 9, "expireTimestamp": 77,
        "topicId": bytes(16)}


def test_group_metadata_v3_empty_group_exact_bytes():
    value = rec.encode_value(2, 3, {"protocolType": "", "generation": 0, "protocol": None, "leader": None,
                                    "currentStateTimestamp": 1700000000000, "members": []})
    assert value.hex() == "0003000000000000ffffffff0000018bcfe5680000000000"


def test_group_metadata_v0_reads_defaults_for_later_fields():
    value = rec.decode_value(2, bytes.fromhex(
        "00000008636f6e73756d657200000001000572616e676500066c65616465720000000100086d656d6265722d31"
        "0008636c69656e742d310006686f73742d31000005dc000000020001000000020102"))
    member = value.data["members"][0]
    assert value.data["currentStateTimestamp"] == -1
    assert member["rebalanceTimeout"] == -1 and member["groupInstanceId"] is None
    assert "rebalanceTimeout" not in rec.value_to_json(2, value)["members"][0]


def test_encode_errors_name_the_field():
    with pytest.raises(rec.RecordEncodeError, match=r"OffsetCommitValue v3 \(record type 1\): field offset: missing"):
        rec.encode_value(1, 3, {"commitTimestamp": 1})
    with pytest.raises(rec.RecordEncodeError, match="field members.memberId: TypeError"):
        rec.encode_value(2, 3, {"protocolType": "consumer", "generation": 1, "members": [
            {"memberId": 7, "clientId": "c", "clientHost": "h", "sessionTimeout": 1,
             "subscription": b"", "assignment": b""}]})
    with pytest.raises(rec.RecordEncodeError, match="field partition: error"):
        rec.encode_key(1, {"group": "g", "topic": "t", "partition": 1 << 40})
    with pytest.raises(rec.RecordEncodeError, match="has no version 5"):
        rec.encode_value(1, 5, {"offset": 1, "commitTimestamp": 1})
    with pytest.raises(rec.RecordEncodeError, match="unknown record type 99"):
        rec.encode_key(99, {})
    with pytest.raises(rec.RecordEncodeError, match="too long"):
        rec.encode_value(1, 3, {"offset": 1, "commitTimestamp": 1, "metadata": "x" * 40000})


# ------------------------------------------------------------------ spec 1.5: tag 0 of type 5

_MEMBER = {"instanceId": None, "rackId": "rack-a", "clientId": "client-1", "clientHost": "/10.0.0.1",
           "subscribedTopicNames": ["orders", "payments"], "subscribedTopicRegex": None,
           "rebalanceTimeoutMs": 300000, "serverAssignor": "uniform"}
_PLAIN = "000000077261636b2d6109636c69656e742d310a2f31302e302e302e3103076f7264657273097061796d656e747300000493e008756e69666f726d"


def test_classic_member_metadata_null_is_written_as_marker():
    value = rec.encode_value(5, 0, dict(_MEMBER, classicMemberMetadata=None))
    assert value.hex() == _PLAIN + "01000100"
    decoded = rec.decode_value(5, value)
    assert decoded.data["classicMemberMetadata"] is None
    assert rec.value_to_json(5, decoded)["classicMemberMetadata"] is None


def test_classic_member_metadata_absent_reads_as_empty_struct():
    decoded = rec.decode_value(5, bytes.fromhex(_PLAIN + "00"))
    assert decoded.data["classicMemberMetadata"] == {"sessionTimeoutMs": 0, "supportedProtocols": []}
    assert "classicMemberMetadata" not in rec.value_to_json(5, decoded)
    # The default (empty struct, or the key left out) writes no tag at all.
    assert rec.encode_value(5, 0, decoded.data).hex() == _PLAIN + "00"
    assert rec.encode_value(5, 0, _MEMBER).hex() == _PLAIN + "00"


def test_classic_member_metadata_present():
    classic = {"sessionTimeoutMs": 45000, "supportedProtocols": [{"name": "range", "metadata": b"\x00\x03"}]}
    value = rec.encode_value(5, 0, dict(_MEMBER, classicMemberMetadata=classic))
    body = "0000afc8" "02" "0672616e6765" "03" "0003" "00" "00"
    assert value.hex() == _PLAIN + "01" + "00" + f"{len(body) // 2 + 1:02x}" + "01" + body
    assert rec.decode_value(5, value).data["classicMemberMetadata"] == classic


def test_unknown_tags_are_skipped_kept_and_rewritten_in_order():
    raw = bytes.fromhex("00000000000a" + "02" + "05" + "02" + "abcd" + "01" + "01" + "ee")
    value = rec.decode_value(3, raw)
    assert value.data == {"epoch": 10, "metadataHash": 0, "_unknownTaggedFields": {5: b"\xab\xcd", 1: b"\xee"}}
    assert rec.dump_log_payload(3, value) == '{"version":"0","data":{"epoch":10}}'
    assert rec.encode_value(3, 0, value.data) == bytes.fromhex("00000000000a" + "02" + "0101ee" + "0502abcd")


# ------------------------------------------------------------------ decode errors (Kafka's texts)


@pytest.mark.parametrize("record_type,hexvalue,message", [
    (1, "0003", "Could not read record with version 3 from value's buffer due to: null."),
    (1, "000400000000000000010000000000", "Could not read record with version 4 from value's buffer due to: "
                                          "non-nullable field metadata was serialized as null."),
    (1, "0000000000000000000100", "Could not read record with version 0 from value's buffer due to: null."),
    (1, "0000000000000000000100ff", "Could not read record with version 0 from value's buffer due to: Error "
                                    "reading byte array of 255 byte(s): only 0 byte(s) available."),
    (1, "0000000000000000000180ff", "Could not read record with version 0 from value's buffer due to: "
                                    "non-nullable field metadata was serialized as null."),
    (1, "00040000000000000001ffffffff" + "828002", "Could not read record with version 4 from value's buffer "
                                                   "due to: string field metadata had invalid length 32769."),
    (2, "0003000000000000ffffffff0000018bcfe568007fffffff",
     "Could not read record with version 3 from value's buffer due to: Tried to allocate a collection of size "
     "2147483647, but there are only 0 bytes remaining.."),
    (2, "0003000000000000ffffffff0000018bcfe56800ffffffff",
     "Could not read record with version 3 from value's buffer due to: non-nullable field members was "
     "serialized as null."),
    (3, "000000000001ffffffffff", "Could not read record with version 0 from value's buffer due to: Varint is "
                                  "too long, the most significant bit in the 5th byte is set, converted value: "
                                  "ffffffff."),
    (3, "000000000001010509", "Could not read record with version 0 from value's buffer due to: Error reading "
                              "byte array of 9 byte(s): only 0 byte(s) available."),
])
def test_decode_error_messages(record_type, hexvalue, message):
    with pytest.raises(rec.RecordDecodeError) as info:
        rec.decode_value(record_type, bytes.fromhex(hexvalue))
    assert info.value.message == message
    assert info.value.part == "value" and info.value.record_type == record_type


def test_empty_and_tombstone_values():
    assert rec.decode_value(1, None) is None
    with pytest.raises(rec.RecordDecodeError, match="Could not read version from value's buffer."):
        rec.decode_value(1, b"")
    with pytest.raises(rec.UnknownRecordType):
        rec.decode_value(77, b"\x00\x00")
    with pytest.raises(ValueError, match="unknown record family"):
        rec.decode_key(b"\x00\x02\x00\x00", family="nope")


def test_out_of_range_version_message_and_lenient_mode():
    raw = bytes.fromhex("000500000000000003e800000064096d6574616461746100000000000007d000")
    with pytest.raises(rec.RecordDecodeError) as info:
        rec.decode_value(1, raw)
    assert info.value.message == ("Unknown offset message version: 5 "
                                  "(record type 1 offset_commit has value versions 0-4)")
    lenient = rec.decode_value(1, raw, strict_versions=False)
    assert (lenient.version, lenient.data["metadata"]) == (5, "metadata")
    with pytest.raises(rec.RecordDecodeError, match=r"Unknown group metadata message version: -2 \(record type 2"):
        rec.decode_value(2, b"\xff\xfe")
    with pytest.raises(rec.RecordDecodeError, match=r"Unknown ShareGroupMetadataValue version: 1 \(record type 11"):
        rec.decode_value(11, b"\x00\x01\x00\x00\x00\x00\x00")


def test_key_cache_and_inputs_of_other_buffer_types():
    raw = bytes.fromhex("000100086d792d67726f757000066f726465727300000003")
    first = rec.decode_key(raw)
    assert rec.decode_key(bytes(raw)) is first
    assert rec.decode_key(bytearray(raw)) is first
    assert rec.decode_key(memoryview(raw)).data == {"group": "my-group", "topic": "orders", "partition": 3}
    assert rec.decode_value(1, memoryview(bytes.fromhex("0000" + "00" * 8 + "0000" + "00" * 8))).version == 0


def test_invalid_utf8_is_replaced_like_java():
    key = rec.decode_key(bytes.fromhex("00020003" + "61ff62"))
    assert key.data["group"] == "a\ufffdb"


# ------------------------------------------------------------------ consumer protocol helpers


def test_consumer_protocol_round_trips():
    sub = {"topics": ["a", "b"], "userData": b"\x01", "ownedPartitions": [{"topic": "a", "partitions": [0, 2]}],
           "generationId": 4, "rackId": "r1"}
    for version in range(4):
        blob = rec.encode_subscription(sub, version)
        version_read, data = rec.decode_subscription(blob, with_version=True)
        assert version_read == version
        assert data["topics"] == ["a", "b"] and data["userData"] == b"\x01"
        assert data["generationId"] == (4 if version >= 2 else -1)
        assert data["rackId"] == ("r1" if version >= 3 else None)
    assert rec.encode_subscription({"topics": ["foo"]}, 0).hex() == "0000000000010003666f6fffffffff"
    assignment = {"assignedPartitions": [{"topic": "orders", "partitions": [0, 1]}], "userData": None}
    blobs = [rec.encode_assignment(assignment, v) for v in range(4)]
    assert {b[2:] for b in blobs} == {blobs[0][2:]}  # v1-v3 have the v0 bytes
    assert rec.decode_assignment(blobs[3]) == assignment
    # A version above 3 is parsed with the v3 layout, as Kafka's ConsumerProtocol does.
    assert rec.decode_subscription(b"\x00\x07" + rec.encode_subscription(sub, 3)[2:])["rackId"] == "r1"
    assert rec.subscription_to_json(rec.encode_subscription(sub, 1)) == {
        "topics": ["a", "b"], "userData": "AQ==", "ownedPartitions": [{"topic": "a", "partitions": [0, 2]}]}


# ------------------------------------------------------------------ JSON text (Jackson rules)


def test_jackson_escapes():
    text = rec.jackson_dumps({"s": "a\"b\\c\x00\x01\x1f\x7f\b\t\n\f\r/é☃😀", "n": None, "l": [1, -2]})
    assert text == '{"s":"a\\"b\\\\c\\u0000\\u0001\\u001F\x7f\\b\\t\\n\\f\\r/é☃😀","n":null,"l":[1,-2]}'
    assert rec.jackson_dumps("\\u001f") == '"\\\\u001f"'  # a literal backslash-u is not an escape


def test_dump_log_key_with_control_characters():
    key = rec.decode_key(rec.encode_key(2, {"group": "g\x01\n"}))
    assert rec.dump_log_key(key) == '{"type":"2","data":{"group":"g\\u0001\\n"}}'


_DUMP_LINE = re.compile(r"keySize: (\d+) valueSize: (-?\d+) .*?key: (\{.*\}) payload: (\{.*\}|<DELETE>)$")


@pytest.mark.parametrize("dump", ["A.dump_offsets_decoder.txt", "B.dump_offsets_decoder.txt"])
def test_segment_dump_lines_round_trip(dump):
    """Every key/payload in the expected segment dumps: JSON -> data -> bytes (same size as the
    record in the segment) -> decode -> exactly the same text."""
    checked = 0
    for line in (VECTORS / "segments" / dump).read_text().splitlines():
        match = _DUMP_LINE.search(line)
        if not match:
            continue
        key_size, value_size, key_text, payload_text = match.groups()
        key_json = json.loads(key_text)
        record_type = int(key_json["type"])
        key_bytes = rec.encode_key(record_type, rec.key_from_json(record_type, key_json["data"]))
        assert len(key_bytes) == int(key_size)
        assert rec.dump_log_key(rec.decode_key(key_bytes)) == key_text
        if payload_text == "<DELETE>":
            assert int(value_size) == -1
            continue
        payload = json.loads(payload_text)
        version = int(payload["version"])
        value_bytes = rec.encode_value(record_type, version,
                                       rec.value_from_json(record_type, version, payload["data"]))
        assert len(value_bytes) == int(value_size)
        assert rec.dump_log_payload(record_type, rec.decode_value(record_type, value_bytes)) == payload_text
        checked += 1
    assert checked == {"A.dump_offsets_decoder.txt": 22, "B.dump_offsets_decoder.txt": 12}[dump]


def test_streams_member_metadata_nullable_struct_presence_byte():
    """A non-tagged nullable struct (UserEndpoint, type 19) is preceded by Kafka's presence byte:
    -1 for null, 1 before the struct, as MessageDataGenerator writes and reads it."""
    data = {"instanceId": None, "rackId": None, "clientId": "c", "clientHost": "/h", "rebalanceTimeoutMs": 5,
            "topologyEpoch": 1, "processId": "p", "userEndpoint": None, "clientTags": []}
    head = bytes.fromhex("0000" "00" "00" "02" "63" "03" "2f68" "00000005" "00000001" "02" "70")
    null_bytes = rec.encode_value(19, 0, data)
    assert null_bytes == head + bytes.fromhex("ff" "01" "00")
    with_endpoint = dict(data, userEndpoint={"host": "a", "port": 65000})
    assert rec.encode_value(19, 0, with_endpoint) == head + bytes.fromhex("01" "0261" "fde8" "00" "01" "00")
    for raw, expected in ((null_bytes, data), (rec.encode_value(19, 0, with_endpoint), with_endpoint)):
        assert rec.decode_value(19, raw).data == expected
