"""The whole-record readers (one call -> DecodedKey/DecodedValue, empty-blob guesses) against
the plain generated layout: same data, same unread bytes, same error text, for every record
type and version, on truncated, mutated and random buffers."""

import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kgroup.records as rec
from kgroup.records import codegen
from kgroup.records.schema_runtime import ReadFailure
from test_record_fuzz import kafka_vector_seeds

_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
_TYPES = {"consumer": range(16), "connect": range(3, 9)}


def _plain(message, version, raw):
    """What the plain (non-guessing) layout reads: (data, unread) or Kafka's inner error text."""
    try:
        data, pos = codegen.reader(message, version, speculate=False)(raw, 2)
    except ReadFailure as exc:
        return "null" if exc.detail is None else exc.detail
    except (IndexError, struct.error):
        return "null"
    return data, len(raw) - pos


def _check_value(record_type, raw, family):
    try:
        schema = rec.record_schema(record_type, family)
    except rec.UnknownRecordType:
        return
    if len(raw) < 2:
        return
    version = int.from_bytes(raw[:2], "big", signed=True)
    if version not in schema.value.valid:
        return
    expected = _plain(schema.value, version, raw)
    for _ in range(2):  # the first call may take the slow path, the second the fast one
        try:
            value = rec.decode_value(record_type, raw, family)
        except rec.RecordDecodeError as exc:
            assert isinstance(expected, str), (raw.hex(), exc.message)
            assert exc.message == (f"Could not read record with version {version} from value's "
                                   f"buffer due to: {expected}.")
        else:
            assert not isinstance(expected, str), (raw.hex(), expected)
            assert type(value) is rec.DecodedValue
            assert (value.version, value.data, value.unread_bytes) == (version, *expected)


def _check_key(raw, family):
    if len(raw) < 2:
        return
    record_type = int.from_bytes(raw[:2], "big", signed=True)
    try:
        schema = rec.record_schema(record_type, family)
    except rec.UnknownRecordType:
        return
    expected = _plain(schema.key, record_type, raw)
    try:
        key = rec.decode_key(raw, family)
    except rec.RecordDecodeError as exc:
        assert isinstance(expected, str), (raw.hex(), exc.message)
        assert exc.message == (f"Could not read record with version {record_type} from key's "
                               f"buffer due to: {expected}.")
    else:
        assert not isinstance(expected, str), (raw.hex(), expected)
        assert type(key) is rec.DecodedKey
        assert (key.record_type, key.name, key.data, key.unread_bytes, key.family) == (
            record_type, schema.name, *expected, family)


def _seeds():
    keys, values = kafka_vector_seeds()
    for version in range(5):  # the guesses' own cases: empty, null and set strings
        for metadata in ("", "m", "metadata" * 40):
            data = {"offset": 42, "leaderEpoch": 7, "metadata": metadata, "commitTimestamp": 1000,
                    "expireTimestamp": 2000}
            values.append(rec.encode_value(1, version, data))
    member = {"memberId": "m-1", "groupInstanceId": None, "clientId": "", "clientHost": "",
              "rebalanceTimeout": 300000, "sessionTimeout": 45000, "subscription": b"",
              "assignment": b"\x00\x01"}
    for version in range(5):
        for protocol in (None, "", "range"):
            data = {"protocolType": "", "generation": 3, "protocol": protocol,
                    "leader": protocol, "currentStateTimestamp": 5,
                    "members": [member, dict(member, groupInstanceId="")]}
            values.append(rec.encode_value(2, version, data))
    return values, keys


_VALUES, _KEYS = _seeds()


def test_every_truncation_of_the_seeds():
    for raw in _VALUES:
        for cut in range(len(raw) + 1):
            for family, types in _TYPES.items():
                for record_type in types:
                    _check_value(record_type, raw[:cut], family)
    for raw in _KEYS:
        for cut in range(len(raw) + 1):
            for family in _TYPES:
                _check_key(raw[:cut], family)


@st.composite
def _mutated(draw, seeds):
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(0, 4))):
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        op = draw(st.sampled_from(["set", "zero2", "minus1", "insert", "delete", "truncate"]))
        if op == "set" and data:
            data[pos] = draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF]))
        elif op == "zero2":  # a length made 0: the guess holds where it did not
            data[pos:pos + 2] = b"\x00\x00"
        elif op == "minus1":  # a length made -1 (null)
            data[pos:pos + 2] = b"\xff\xff"
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=6))
        elif op == "delete" and data:
            del data[pos:pos + draw(st.integers(1, 4))]
        elif op == "truncate":
            del data[pos:]
    return bytes(data)


@_SETTINGS
@given(_mutated(_VALUES))
def test_mutated_values(raw):
    for family, types in _TYPES.items():
        for record_type in types:
            _check_value(record_type, raw, family)


@_SETTINGS
@given(_mutated(_KEYS))
def test_mutated_keys(raw):
    for family in _TYPES:
        _check_key(raw, family)


@_SETTINGS
@given(st.binary(max_size=60))
def test_random_bytes(raw):
    for family, types in _TYPES.items():
        for record_type in types:
            _check_value(record_type, raw, family)
        _check_key(raw, family)


def test_other_buffer_types_and_tombstones():
    raw = rec.encode_value(1, 3, {"offset": 1, "leaderEpoch": 2, "metadata": "",
                                  "commitTimestamp": 3})
    want = rec.decode_value(1, raw)
    for other in (bytearray(raw), memoryview(raw)):
        got = rec.decode_value(1, other)
        assert (got.version, got.data, got.unread_bytes) == (
            want.version, want.data, want.unread_bytes)
    assert rec.decode_value(1, None) is None
    assert rec.decode_value(1, raw + b"xyz").unread_bytes == 3
