"""The text sinks' fast way (offset commits written from the undecoded records, `fast_rows`) prints
exactly what the generic way (DecodedRows through the renderers) prints, reports the same problems
and counts the same records: on every segment vector, and on random dumps of offset commits with
every value version, odd metadata, Kafka 4.4's topicId tagged field, tombstones, transactions and
values that do not decode; and that the fast way does take the commits Kafka writes, the ones the real
Kafka 4.4 segments hold (v4 with topicId) included."""

import io
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgroup.decode.decoder import ProblemLog
from kgroup.decode import decoder as decoder_module
from kgroup.decode.fast_rows import LAYOUTS, OffsetCommitValues
from kgroup.decode.inputs import RowFilter, iter_input, resolve_inputs
from kgroup.decode.run import make_sink
from kgroup.records import decode_key, decode_value, dump_log_payload, encode_key, encode_value, value_to_json
from kgroup.records.segment import iter_segment
from kgroup.records.schema_runtime import json_string
from kgroup.records.writer import encode_batch, encode_control_batch
from kgroup.writers import dumps_records

from helpers import VECTORS
from helpers.fuzz import kafka_vector_seeds, mutated

OUTPUTS = ("jsonl", "json", "dump-log")
SEGMENT_VECTORS = sorted((VECTORS / "segments").glob("*.log")) + sorted((VECTORS / "kafka-4.4").glob("*/*.log"))
KAFKA44_VECTORS = sorted((VECTORS / "kafka-4.4").glob("*/*.log"))
TEMPLATES = (('"value_version":{version},"value":{data}', dumps_records),
             ('{{"version":"{version}","data":{data}}}', json_string))


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
    assert SEGMENT_VECTORS and KAFKA44_VECTORS, "no segment vectors found"
    for path in SEGMENT_VECTORS:
        for output in OUTPUTS:
            sink = _same_both_ways(path, output)
            assert (sink.fast.heads if output != "dump-log" else sink.fast.keys), "the fast way was never taken"
            for family in ("consumer", "connect"):
                _same_both_ways(path, output, family=family)
        _same_both_ways(path, "jsonl", row_filter=RowFilter(groups=["*1*"], types={"offset_commit"}))
        _same_both_ways(path, "jsonl", row_filter=RowFilter(groups=["dl-c*"]))


def _commit_keys(path) -> list:
    """Every offset commit's key bytes in a segment, in log order."""
    return [r.key for b in iter_segment(str(path), on_error=None) if not b.is_control
            for r in b.records if decode_key(r.key).record_type in (0, 1)]


def test_kafka44_commits_go_the_fast_way(monkeypatch):
    """In the real Kafka 4.4 segments (every commit v4 with topicId) the decoder reads only the first
    commit of each key (its key alone, since its value reads the fast way), which caches the key's
    text; every later one goes the fast way."""
    generic = []
    rows = decoder_module.RowDecoder.rows

    def spy(self, batch, records=None):
        if not batch.is_control:
            generic.extend(r.key for r in (batch.records if records is None else records))
        return rows(self, batch, records) if records is not None else rows(self, batch)

    monkeypatch.setattr(decoder_module.RowDecoder, "rows", spy)
    commits = sum(len(_commit_keys(path)) for path in KAFKA44_VECTORS)
    assert commits >= 20
    for output in OUTPUTS:
        for path in KAFKA44_VECTORS:
            keys = _commit_keys(path)
            generic.clear()
            _decode(path, output, fast=True)
            assert sorted(k for k in generic if k in set(keys)) == sorted(set(keys)), (path, output)


# ------------------------------------------------------------------------------- one value

_CHARS = st.characters(blacklist_categories=("Cs",))
_METADATA = st.one_of(st.text(alphabet=_CHARS, max_size=12),  # long: v4's compact length takes two bytes
                      st.text(alphabet=_CHARS, min_size=130, max_size=140))
_INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
_INT32 = st.integers(-(1 << 31), (1 << 31) - 1)
_TOPIC_ID = st.one_of(st.binary(min_size=16, max_size=16), st.just(bytes(16)),  # zero: the default, not written
                      st.just(bytes.fromhex("15a374d3279e48c185b9bae196c86766")))  # the 4.4 vectors' topic


def _commit_data(draw, metadata=_METADATA) -> dict:
    return {"offset": draw(_INT64), "leaderEpoch": draw(_INT32), "metadata": draw(metadata),
            "commitTimestamp": draw(_INT64), "expireTimestamp": draw(_INT64)}


@st.composite
def kafka_commit_values(draw, metadata=_METADATA):
    """OffsetCommitValue bytes of any version exactly as Kafka's writer lays them out: v4 with or
    without topicId (Kafka 4.4 writes it in every commit whose topic it knows)."""
    version = draw(st.integers(0, 4))
    data = _commit_data(draw, metadata)
    if version == 4 and draw(st.integers(0, 3)):
        data["topicId"] = draw(_TOPIC_ID)
    return encode_value(1, version, data)


@st.composite
def offset_commit_values(draw):
    """OffsetCommitValue bytes of any version as Kafka writes them, or with unknown tagged fields
    (beside topicId or alone)."""
    version = draw(st.integers(0, 4))
    data = _commit_data(draw)
    if version == 4:
        if draw(st.booleans()):
            data["topicId"] = draw(_TOPIC_ID)
        if draw(st.booleans()):
            data["_unknownTaggedFields"] = {draw(st.integers(1, 200)): draw(st.binary(max_size=4))}
    return encode_value(1, version, data)


_SEEDS = [v for v in kafka_vector_seeds()[1] if len(v) >= 2 and v[0] == 0 and v[1] <= 4] + [
    encode_value(1, v, {"offset": 7, "leaderEpoch": 2, "metadata": "", "commitTimestamp": 9}) for v in range(5)] + [
    encode_value(1, 4, {"offset": 7, "leaderEpoch": 2, "metadata": m, "commitTimestamp": 9, "topicId": b"\x15" * 16})
    for m in ("", "m")]
ANY_VALUE = st.one_of(offset_commit_values(), mutated(_SEEDS), st.binary(max_size=30))


def _generic_text(template: str, value: bytes) -> str:
    decoded = decode_value(1, value)
    if template.startswith("{{"):
        return dump_log_payload(1, decoded)
    return '"value_version":%d,"value":%s' % (decoded.version, dumps_records(value_to_json(1, decoded)))


@settings(max_examples=400, deadline=None)
@given(value=ANY_VALUE)
def test_one_value_reads_as_the_generic_decoder_reads_it(value):
    for template, quote in TEMPLATES:
        text = OffsetCommitValues(template, quote).one(value)
        try:
            decoded = decode_value(1, value)
        except ValueError:
            decoded = None
        if text is None:  # the generic way then: only values Kafka's writer would not produce
            assert (decoded is None or decoded.unread_bytes or "_unknownTaggedFields" in decoded.data
                    or decoded.version > 4 or encode_value(1, decoded.version, decoded.data) != value)
            continue
        assert decoded is not None and decoded.unread_bytes == 0
        assert text[0] % text[1] == _generic_text(template, value)


@settings(max_examples=300, deadline=None)
@given(value=kafka_commit_values())
def test_every_value_kafka_writes_goes_the_fast_way(value):
    for template, quote in TEMPLATES:
        text = OffsetCommitValues(template, quote).one(value)
        assert text is not None, value.hex()
        assert text[0] % text[1] == _generic_text(template, value)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), version=st.integers(0, 4), topic_id=st.booleans(), n=st.integers(1, 30))
def test_a_run_of_one_layout_reads_as_each_value_alone(data, version, topic_id, n):
    """A run's values with empty metadata (v4 all with topicId, or all without) are read with one
    struct; each one's text is the generic decoder's; one value of another layout sends the run back."""
    values = []
    for _ in range(n):
        fields = _commit_data(data.draw, st.just(""))
        if version == 4 and topic_id:
            fields["topicId"] = data.draw(st.one_of(st.binary(min_size=16, max_size=16),
                                                    st.sampled_from([b"\x15" * 16, b"\x16" * 16])))
            if fields["topicId"] == bytes(16):
                fields["topicId"] = b"\x01" * 16  # the default is not written: another size
        values.append(encode_value(1, version, fields))
    for template, quote in TEMPLATES:
        fast = OffsetCommitValues(template, quote)
        run = fast.run(values)
        assert run is not None
        fmt, args = run
        assert [fmt % a for a in args] == [_generic_text(template, v) for v in values]
        assert [fmt % a for a in fast.run(values)[1]] == [fast.one(v)[0] % fast.one(v)[1] for v in values]
        odd = bytearray(values[-1])
        odd[-1] ^= 0x80 if version < 4 or topic_id else 0x01  # a timestamp's sign / a tagged-field count
        if version == 4 and not topic_id:
            assert fast.run(values[:-1] + [bytes(odd)]) is None


def test_a_topic_id_written_out_as_zero_reads_as_the_generic_decoder_reads_it():
    """Kafka leaves a default tagged field out, but a zero topicId written out reads as absent (the
    JSON converters leave the default out) both ways, alone and in runs, mixed with others or not."""
    zero = struct.pack(">hqiBqBBB16s", 4, 7, 2, 1, 9, 1, 0, 16, bytes(16))
    other = struct.pack(">hqiBqBBB16s", 4, 8, 2, 1, 9, 1, 0, 16, b"\x15" * 16)
    assert decode_value(1, zero).unread_bytes == 0
    for template, quote in TEMPLATES:
        fast = OffsetCommitValues(template, quote)
        assert "topicId" not in _generic_text(template, zero)
        for values in ([zero], [zero, zero], [zero, other, zero], [other, zero]):
            fmt, args = fast.run(values)
            assert [fmt % a for a in args] == [_generic_text(template, v) for v in values]
            assert [fast.one(v)[0] % fast.one(v)[1] for v in values] == [_generic_text(template, v) for v in values]


def test_every_version_has_a_fast_layout():
    """The layouts are generated from the schema the decoder is generated from; a version the
    generator cannot lay out would send all its commits the slow way."""
    assert all(layout is not None for layout in LAYOUTS)
    assert LAYOUTS[4].tagged is not None and LAYOUTS[4].tagged.name == "topicId"


# ------------------------------------------------------------------------------- random dumps

_KEYS = [encode_key(rtype, {"group": group, "topic": topic, "partition": partition})
         for rtype in (0, 1) for group in ("g1", "g%2") for topic in ("t", "ü") for partition in (0, 1, 300)]
_GROUP_KEY = encode_key(2, {"group": "g1"})
_RECORD = st.one_of(
    st.tuples(st.sampled_from(_KEYS), st.one_of(st.none(), ANY_VALUE, offset_commit_values(), kafka_commit_values())),
    st.tuples(st.sampled_from(_KEYS + [_GROUP_KEY, b"\x00", b"\x00\x09\x00"]), st.one_of(st.none(), ANY_VALUE)),
    # an offset commit key that does not decode (truncated, trailing bytes) first seen with a value the
    # fast way reads: the key probe sends it to the generic decoder, which reports it
    st.tuples(st.sampled_from([_KEYS[0][:-1], _KEYS[1] + b"\x00", b"\x00\x01"]),
              st.one_of(st.none(), kafka_commit_values(st.just("")))),
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
            value = draw(st.one_of(st.none(), offset_commit_values(), kafka_commit_values(st.just(""))))
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
