"""Mutated and truncated keys/values: only RecordDecodeError may escape, and whatever does
decode must print and re-encode to the same data."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kgroup.records as rec
from helpers import VECTORS
from helpers.fuzz import kafka_vector_seeds, mutated

_BURROW = json.loads((VECTORS / "burrow_vectors.json").read_text())


def _seeds():
    kafka_keys, values = kafka_vector_seeds()
    keys = set(kafka_keys)
    for v in _BURROW:
        trunk = v.get("kafka_trunk")
        if trunk:
            keys.add(bytes.fromhex(trunk["input"]["key"]))
            if trunk["input"]["value"]:
                values.append(bytes.fromhex(trunk["input"]["value"]))
    return sorted(keys), values


_KEYS, _VALUES = _seeds()
_SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))


def _check_value(record_type, raw, family):
    for strict in (True, False):
        try:
            value = rec.decode_value(record_type, raw, family, strict_versions=strict)
        except rec.RecordDecodeError:
            continue
        text = rec.dump_log_payload(record_type, value, family)
        generic = rec.jackson_dumps(rec.value_to_json(record_type, value, family))
        assert text == '{"version":"%d","data":%s}' % (value.version, generic)
        schema = rec.record_schema(record_type, family)
        if value.version in schema.value.valid:
            again = rec.encode_value(record_type, value.version, value.data, family)
            assert rec.decode_value(record_type, again, family).data == value.data


@_SETTINGS
@given(mutated(_KEYS))
def test_mutated_keys(raw):
    for family in rec.FAMILIES:
        try:
            key = rec.decode_key(raw, family)
        except rec.RecordDecodeError:
            continue
        assert rec.dump_log_key(key) == '{"type":"%d","data":%s}' % (
            key.record_type, rec.jackson_dumps(rec.key_to_json(key)))
        again = rec.encode_key(key.record_type, key.data, family)
        assert rec.decode_key(again, family).data == key.data


@_SETTINGS
@given(mutated(_VALUES), st.sampled_from(range(16)))
def test_mutated_values_under_every_consumer_type(raw, record_type):
    _check_value(record_type, raw, "consumer")


@_SETTINGS
@given(mutated(_VALUES), st.sampled_from(range(3, 9)))
def test_mutated_values_under_connect_types(raw, record_type):
    _check_value(record_type, raw, "connect")


@_SETTINGS
@given(st.binary(max_size=40))
def test_random_bytes(raw):
    for record_type in (0, 2, 5, 8, 15):
        _check_value(record_type, raw, "consumer")
    for decode in (rec.decode_subscription, rec.decode_assignment):
        try:
            decode(raw)
        except rec.RecordDecodeError:
            pass
    try:
        rec.dump_log_record(raw, raw)
    except rec.RecordDecodeError:
        pass


@_SETTINGS
@given(mutated(_VALUES))
def test_mutated_group_metadata_embedded_protocol(raw):
    """Member subscription/assignment bytes that do not parse stay base64, never raise."""
    try:
        value = rec.decode_value(2, raw, strict_versions=False)
    except rec.RecordDecodeError:
        return
    rec.value_to_json(2, value)
