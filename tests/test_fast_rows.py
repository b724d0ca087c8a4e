"""The text sinks' fast way (offset commits written from the undecoded records, `fast_rows`) prints
exactly what the generic way (DecodedRows through the renderers) prints, reports the same problems
and counts the same records: on every segment vector, and on random dumps of offset commits with
every value version, odd metadata, tombstones, transactions and values that do not decode."""

import io
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgroup.decode.decoder import ProblemLog
from kgroup.decode.fast_rows import OffsetCommitValues
from kgroup.decode.inputs import RowFilter, iter_input, resolve_inputs
from kgroup.decode.run import make_sink
from kgroup.records import decode_value, dump_log_payload, encode_key, encode_value, value_to_json
from kgroup.records.schema_runtime import json_string
from kgroup.records.writer import encode_batch, encode_control_batch
from kgroup.writers import dumps_records

from helpers import VECTORS
from helpers.fuzz import kafka_vector_seeds, mutated

OUTPUTS = ("jsonl", "json", "dump-log")
SEGMENT_VECTORS = sorted((VECTORS / "segments").glob("*.log"))


def _decode(path, output, *, fast, family=None, row_filter=None):
    """(text, problems, records decoded) of the local engine's records view of one file."""
    stream = io.StringIO()
    problems = ProblemLog()
    sink = make_sink("records", output, row_filter or RowFilter(), stream, problems, whole_batches=fast)
    assert sink.decode is not fast
    for inp in resolve_inputs([str(path)], family, problems):
        sink.begin(inp)
        for batch, rows in iter_input(inp, problems, decode=sink.decode):
            sink.batch(batch, rows)
        sink.end(inp, problems)
    sink.close()
    return stream.getvalue(), [str(p) for p in problems.problems], problems.records_ok, sink


def _same_both_ways(path, output, **options):
    generic = _decode(path, output, fast=False, **options)
    fast = _decode(path, output, fast=True, **options)
    assert fast[:3] == generic[:3]
    return fast[3]


def test_every_segment_vector_prints_the_same_both_ways():
    assert SEGMENT_VECTORS, "no segment vectors found"
    for path in SEGMENT_VECTORS:
        for output in OUTPUTS:
            sink = _same_both_ways(path, output)
            assert (sink.fast.heads if output != "dump-log" else sink.fast.keys), "the fast way was never taken"
            for family in ("consumer", "connect"):
                _same_both_ways(path, output, family=family)
        _same_both_ways(path, "jsonl", row_filter=RowFilter(groups=["*1*"], types={"offset_commit"}))


# ------------------------------------------------------------------------------- one value

_CHARS = st.characters(blacklist_categories=("Cs",))
_METADATA = st.one_of(st.text(alphabet=_CHARS, max_size=12),  # long: v4's compact length takes two bytes
                      st.text(alphabet=_CHARS, min_size=130, max_size=140))
_INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
_INT32 = st.integers(-(1 << 31), (1 << 31) - 1)


@st.composite
def offset_commit_values(draw):
    """OffsetCommitValue bytes of any version as Kafka writes them, or with tagged fields."""
    version = draw(st.integers(0, 4))
    data = {"offset": draw(_INT64), "leaderEpoch": draw(_INT32), "metadata": draw(_METADATA),
            "commitTimestamp": draw(_INT64), "expireTimestamp": draw(_INT64)}
    if version == 4 and draw(st.booleans()):
        data["_unknownTaggedFields"] = {draw(st.integers(0, 200)): draw(st.binary(max_size=4))}
    return encode_value(1, version, data)


_SEEDS = [v for v in kafka_vector_seeds()[1] if len(v) >= 2 and v[0] == 0 and v[1] <= 4] + [
    encode_value(1, v, {"offset": 7, "leaderEpoch": 2, "metadata": "", "commitTimestamp": 9}) for v in range(5)]
ANY_VALUE = st.one_of(offset_commit_values(), mutated(_SEEDS), st.binary(max_size=30))


@settings(max_examples=400, deadline=None)
@given(value=ANY_VALUE)
def test_one_value_reads_as_the_generic_decoder_reads_it(value):
    for template, quote, generic in (
            ('"value_version":{version},"value":{data}', dumps_records,
             lambda v: '"value_version":%d,"value":%s' % (v.version, dumps_records(value_to_json(1, v)))),
            ('{{"version":"{version}","data":{data}}}', json_string, lambda v: dump_log_payload(1, v))):
        text = OffsetCommitValues(template, quote).one(value)
        try:
            decoded = decode_value(1, value)
        except ValueError:
            decoded = None
        if text is None:  # the generic way then: only values Kafka's writer would not produce
            assert decoded is None or decoded.unread_bytes or decoded.version == 4
            continue
        assert decoded is not None and decoded.unread_bytes == 0
        assert text[0] % text[1] == generic(decoded)


# ------------------------------------------------------------------------------- random dumps

_KEYS = [encode_key(rtype, {"group": group, "topic": topic, "partition": partition})
         for rtype in (0, 1) for group in ("g1", "g%2") for topic in ("t", "ü") for partition in (0, 1, 300)]
_GROUP_KEY = encode_key(2, {"group": "g1"})
_RECORD = st.one_of(
    st.tuples(st.sampled_from(_KEYS), st.one_of(st.none(), ANY_VALUE, offset_commit_values())),
    st.tuples(st.sampled_from(_KEYS + [_GROUP_KEY, b"\x00", b"\x00\x09\x00"]), st.one_of(st.none(), ANY_VALUE)),
)


@st.composite
def dumps(draw):
    """A segment: batches of offset commits (runs of one layout, mixed layouts, transactions,
    markers, log-append time, sequences, compression)."""
    out, offset = [], 0
    for _ in range(draw(st.integers(1, 6))):
        if draw(st.integers(0, 5)) == 0:
            out.append(encode_control_batch(draw(st.sampled_from(["COMMIT", "ABORT"])), producer_id=5,
                                            producer_epoch=0, coordinator_epoch=3, base_offset=offset))
            offset += 1
            continue
        records = draw(st.lists(_RECORD, min_size=1, max_size=12))
        if draw(st.booleans()):  # a run: one value layout for many keys
            value = draw(st.one_of(st.none(), offset_commit_values()))
            records += [(key, value) for key in draw(st.lists(st.sampled_from(_KEYS), min_size=2, max_size=20))]
        transactional = draw(st.integers(0, 3)) == 0
        out.append(encode_batch(
            [(k, v, 1_700_000_000_000 + i % 3) for i, (k, v) in enumerate(records)], base_offset=offset,
            compression=draw(st.sampled_from(["none", "none", "gzip"])),
            log_append_time=1_700_000_000_999 if draw(st.integers(0, 5)) == 0 else None,
            producer_id=5 if transactional else draw(st.sampled_from([-1, 9])), producer_epoch=0,
            transactional=transactional, base_sequence=draw(st.sampled_from([-1, 0, 0x7FFFFFF0]))))
        offset += len(records)
    if draw(st.booleans()):
        out.append(struct.pack(">q", offset)[:5])  # trailing bytes
    return b"".join(out)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(data=dumps())
def test_random_dumps_print_the_same_both_ways(tmp_path, data):
    path = tmp_path / "__consumer_offsets-3" / "00000000000000000000.log"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(data)
    for output in OUTPUTS:
        _same_both_ways(path, output)
    _same_both_ways(path, "jsonl", row_filter=RowFilter(groups=["g1"]))
