"""The whole-record readers (one call -> DecodedKey/DecodedValue, empty-blob guesses) against
the plain generated layout: same data, same unread bytes, same error text, for every record
type and version, on truncated, mutated and random buffers."""

import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kgroup.records as rec
from kgroup.records import codegen
from kgroup.records.schema_runtime import ReadFailure
from helpers.fuzz import kafka_vector_seeds, mutated

_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
_TYPES = {"consumer": range(17), "connect": range(3, 9)}


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
        _same_as_plain(lambda: rec.decode_value(record_type, raw, family), raw, expected, "value",
                       version, lambda v: (type(v), v.version, v.data, v.unread_bytes),
                       (rec.DecodedValue, version))


def _check_key(raw, family):
    if len(raw) < 2:
        return
    record_type = int.from_bytes(raw[:2], "big", signed=True)
    try:
        schema = rec.record_schema(record_type, family)
    except rec.UnknownRecordType:
        return
    expected = _plain(schema.key, record_type, raw)
    _same_as_plain(lambda: rec.decode_key(raw, family), raw, expected, "key", record_type,
                   lambda k: (type(k), k.record_type, k.name, k.data, k.unread_bytes, k.family),
                   (rec.DecodedKey, record_type, schema.name), (family,))


def _same_as_plain(decode, raw, expected, part, version, fields, before, after=()):
    """decode() gives what the plain layout read (fields(result) == before + data, unread + after),
    or fails with Kafka's message around the plain layout's error text."""
    try:
        got = decode()
    except rec.RecordDecodeError as exc:
        assert isinstance(expected, str), (raw.hex(), exc.message)
        assert exc.message == (f"Could not read record with version {version} from {part}'s "
                               f"buffer due to: {expected}.")
    else:
        assert not isinstance(expected, str), (raw.hex(), expected)
        assert fields(got) == (*before, *expected, *after)


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


@_SETTINGS
@given(mutated(_VALUES))
def test_mutated_values(raw):
    for family, types in _TYPES.items():
        for record_type in types:
            _check_value(record_type, raw, family)


@_SETTINGS
@given(mutated(_KEYS))
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


def test_value_element_encoder_writes_an_element_as_the_value_holds_it():
    """GroupMetadata's members array ends every version's value: a one-member value is the empty
    value's head, a count of one and the element's bytes (what the coordinator joins)."""
    head = {"protocolType": "consumer", "generation": 7, "protocol": "range", "leader": "m",
            "currentStateTimestamp": 5, "members": []}
    member = {"memberId": "m", "groupInstanceId": "i", "clientId": "c", "clientHost": "/h",
              "rebalanceTimeout": 30_000, "sessionTimeout": 10_000, "subscription": b"s",
              "assignment": b"a"}
    for version in range(4):
        empty = rec.encode_value(2, version, head)
        one = rec.encode_value(2, version, {**head, "members": [member]})
        element = rec.value_element_encoder(2, version, "members")(member)
        assert one == empty[:-4] + (1).to_bytes(4, "big") + element
    try:
        rec.value_element_encoder(2, 3, "members")({**member, "memberId": None})
    except rec.RecordEncodeError as exc:
        assert "members element" in str(exc) and "memberId" in str(exc)
    else:
        raise AssertionError("a null memberId was written")
