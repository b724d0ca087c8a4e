"""Whatever the bytes, the reader only ever raises BatchError (and iter_segment only calls on_error)."""

import io

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgroup.records.batch import read_batches, scan
from kgroup.records.batch_model import Batch, BatchError, TrailingBytes
from kgroup.records.lazy_records import LazyRecords
from kgroup.records.segment import iter_segment

from helpers import VECTORS

SEGMENTS = [p.read_bytes() for p in sorted((VECTORS / "segments").glob("*.log"))]
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _drain(data: bytes) -> list:
    """Every event from bytes, from a stream, and from the lean walk; all must agree."""
    events = list(scan(data, "fuzz.log"))
    again = list(scan(io.BytesIO(data), "fuzz.log"))
    assert [type(e) for e in events] == [type(e) for e in again]
    for e in events:
        assert isinstance(e, (Batch, BatchError))
    _same_as_lean(events, list(scan(data, "fuzz.log", lean=True)))
    return events


def _same_as_lean(events: list, lean: list) -> None:
    """The lean walk reports the same events, and its records, built, are the same records."""
    assert [type(e) for e in lean] == [type(e) for e in events]
    for e, l in zip(events, lean):
        if isinstance(e, Batch):
            records = l.records
            assert list(records) == e.records
            if isinstance(records, LazyRecords):
                assert records.keys() == [r.key for r in e.records]
                assert [records.at(i) for i in range(len(records))] == e.records
            l.records = e.records
        assert l == e if isinstance(e, Batch) else str(l) == str(e)


def _check_read_batches(data: bytes) -> None:
    try:
        for batch in read_batches(data, "fuzz.log"):
            assert isinstance(batch, Batch)
    except BatchError as exc:
        assert exc.path == "fuzz.log" and 0 <= exc.position <= len(data)
        assert str(exc).startswith(f"fuzz.log: position {exc.position}: ")


def _positions_are_consistent(events, size):
    last = -1
    for e in events:
        pos = e.position
        assert 0 <= pos <= size and pos >= last
        last = pos
        if isinstance(e, TrailingBytes):
            assert e.count == size - pos and e is events[-1]
        if isinstance(e, BatchError) and not e.recoverable:
            assert e is events[-1]


@FUZZ
@given(which=st.sampled_from(range(len(SEGMENTS))),
       edits=st.lists(st.tuples(st.integers(0, 4000), st.integers(0, 255)), min_size=1, max_size=8))
def test_mutated_segments(which, edits):
    data = bytearray(SEGMENTS[which])
    for pos, value in edits:
        data[pos % len(data)] = value
    data = bytes(data)
    events = _drain(data)
    _positions_are_consistent(events, len(data))
    _check_read_batches(data)


@FUZZ
@given(which=st.sampled_from(range(len(SEGMENTS))), cut=st.integers(0, 4000),
       drop=st.integers(0, 40))
def test_truncated_and_spliced_segments(which, cut, drop):
    original = SEGMENTS[which]
    cut %= len(original) + 1
    truncated = original[:cut]
    events = _drain(truncated)
    _positions_are_consistent(events, len(truncated))
    # a batch boundary inside a truncated file never moves: every decoded batch is a real one
    real = {b.position for b in scan(original) if isinstance(b, Batch)}
    assert {e.position for e in events if isinstance(e, Batch)} <= real
    spliced = original[:cut] + original[cut + drop:]
    _positions_are_consistent(_drain(spliced), len(spliced))
    _check_read_batches(spliced)


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes(data):
    _positions_are_consistent(_drain(data), len(data))
    _check_read_batches(data)


def test_lean_walk_matches_the_full_reader_on_every_vector():
    assert SEGMENTS, "no segment vectors found"
    lazy = 0
    for data in SEGMENTS:
        _drain(data)
        lazy += sum(isinstance(getattr(e, "records", None), LazyRecords)
                    for e in scan(data, "fuzz.log", lean=True))
    assert lazy, "the lean walk never kept a run unpacked: the comparison checked nothing lean"


@settings(max_examples=40, deadline=None)
@given(edits=st.lists(st.tuples(st.integers(0, 2157), st.integers(0, 255)), min_size=1, max_size=4))
def test_iter_segment_only_calls_on_error(tmp_path_factory, edits):
    data = bytearray(SEGMENTS[0])
    for pos, value in edits:
        data[pos] = value
    path = tmp_path_factory.mktemp("fuzz") / "00000000000000000000.log"
    path.write_bytes(bytes(data))
    seen = []
    batches = list(iter_segment(path, on_error=seen.append))
    assert all(isinstance(e, BatchError) for e in seen)
    assert all(isinstance(b, Batch) for b in batches)


# ---------------------------------------------------------------------------------------------
# the same-layout fast path must agree with the general record parser, byte for byte

import kgroup.records.batch as batch_module  # noqa: E402
from kgroup.records.batch import _fast_records, _records_v2  # noqa: E402
from kgroup.records.writer import OutRecord, encode_batch  # noqa: E402

_HEADER_ARGS = st.tuples(st.integers(0, 10**12), st.integers(-1, 2**31 - 1),
                         st.sampled_from([None, 1700000000999]))


def _both(blob: bytes):
    """Records (or the exception type) from the general parser and from the run-based fast
    path, and how many records the fast path handed to the general parser."""
    base_offset = int.from_bytes(blob[0:8], "big", signed=True)
    base_ts = int.from_bytes(blob[27:35], "big", signed=True)
    max_ts = int.from_bytes(blob[35:43], "big", signed=True)
    base_seq = int.from_bytes(blob[53:57], "big", signed=True)
    count = int.from_bytes(blob[57:61], "big", signed=True)
    append_time = max_ts if blob[22] & 8 else None
    args = (blob, 61, len(blob), count, base_offset, base_ts, base_seq, append_time)
    try:
        general = _records_v2(*args)
    except Exception as exc:  # noqa: BLE001 - compared below
        general = type(exc)
    handed = []

    def counting(*a):
        handed.append(a[3])
        return _records_v2(*a)

    batch_module._records_v2 = counting
    try:
        fast = _fast_records(*args)
    except Exception as exc:  # noqa: BLE001
        fast = type(exc)
    finally:
        batch_module._records_v2 = _records_v2
    try:
        lean = _fast_records(*args, lean=True)
    except Exception as exc:  # noqa: BLE001
        lean = type(exc)
    if isinstance(lean, LazyRecords):
        assert lean.keys() == [r.key for r in fast]
        assert [lean.at(i) for i in range(len(lean))] == fast
        lean = list(lean)
    assert lean == fast  # the lean walk builds the same records, or fails the same way
    return general, fast, sum(handed)


@FUZZ
@given(count=st.integers(2, 80), key_len=st.integers(0, 70), value_len=st.integers(0, 200),
       gaps=st.lists(st.integers(0, 3), min_size=80, max_size=80),
       ts_steps=st.lists(st.integers(0, 40), min_size=80, max_size=80), header=_HEADER_ARGS)
def test_uniform_fast_path_matches_general_parser(count, key_len, value_len, gaps, ts_steps, header):
    base_offset, base_seq, log_append = header
    offset, ts, recs = base_offset, 1700000000000, []
    for i in range(count):
        recs.append(OutRecord(bytes([i % 251]) * key_len, bytes([i % 13]) * value_len, ts,
                              offset=offset))
        offset += 1 + gaps[i]
        ts += ts_steps[i]
    blob = encode_batch(recs, base_offset=base_offset, base_sequence=base_seq,
                        log_append_time=log_append)
    general, fast, handed = _both(blob)
    assert isinstance(general, list) and len(general) == count
    assert fast == general
    # one layout and small deltas: no record needs the general parser
    if offset - base_offset <= 64 and ts - 1700000000000 <= 63:
        assert handed == 0


@FUZZ
@given(edits=st.lists(st.tuples(st.integers(61, 2000), st.integers(0, 255)), min_size=1, max_size=3))
def test_fast_path_agrees_on_damaged_batches(edits):
    recs = [OutRecord(b"group-key-%02d" % i, b"value-%03d" % i, 1700000000000 + i) for i in range(40)]
    blob = bytearray(encode_batch(recs, base_offset=100, base_sequence=0))
    for pos, value in edits:
        blob[pos % len(blob)] = value
    general, fast, _ = _both(bytes(blob))
    assert fast == general


def test_mixed_topic_batch_is_parsed_in_runs():
    recs = ([OutRecord(b"k-topic-a-%02d" % i, b"v" * 24, 5) for i in range(20)]
            + [OutRecord(b"k-longer-topic-b-%02d" % i, b"v" * 24, 5) for i in range(20)]
            + [OutRecord(b"tomb", None, 5)]
            + [OutRecord(b"k-topic-a-%02d" % i, b"w" * 26, 5) for i in range(5)])
    general, fast, handed = _both(encode_batch(recs, base_sequence=0))
    assert fast == general and len(fast) == 46
    assert handed == 0  # runs of 20 and 20, the tombstone alone, then a run of 5
    assert [r.value_size for r in fast[39:42]] == [24, -1, 26]


def test_tombstone_runs_take_the_fast_path():
    recs = [OutRecord(b"expired-key-%02d" % i, None, 7) for i in range(30)]
    recs += [OutRecord(b"", b"", 7), OutRecord(b"", None, 7)]  # empty key and value; null value
    general, fast, handed = _both(encode_batch(recs, base_sequence=5))
    assert fast == general and handed == 0
    assert [(r.value, r.value_size) for r in fast[28:]] == [(None, -1), (None, -1), (b"", 0),
                                                            (None, -1)]


# ---------------------------------------------------------------------------------------------
# the lean walk (`--view state`) against the full reader on random logs

from kgroup.records.codecs import CODEC_NAMES  # noqa: E402
from kgroup.records.writer import encode_control_batch, encode_legacy  # noqa: E402

_BATCH = st.tuples(
    st.sampled_from(["v2", "v2", "v2", "control", "v0", "v1"]),
    st.sampled_from(CODEC_NAMES),
    st.lists(st.tuples(st.sampled_from([b"k1", b"k2", b"key-%03d", b""]), st.integers(0, 60),
                       st.one_of(st.none(), st.just(b"same-value"), st.binary(max_size=30))),
             min_size=1, max_size=30),
    st.integers(-1, 2**31 - 1),  # base sequence
    st.booleans(),  # log append time
)


def _entry(kind, codec, recs, base_seq, log_append, base_offset):
    if kind == "control":
        return encode_control_batch("COMMIT" if base_seq % 2 else "ABORT", producer_id=7, producer_epoch=0,
                                    coordinator_epoch=3, base_offset=base_offset), 1
    rows = [OutRecord(key % n if b"%" in key else key, value, 1700000000000 + n) for key, n, value in recs]
    if kind == "v2":
        return encode_batch(rows, base_offset=base_offset, compression=codec, base_sequence=base_seq,
                            producer_id=-1 if base_seq < 0 else 9,
                            log_append_time=1700000009999 if log_append else None), len(rows)
    codec = "none" if codec == "zstd" else codec  # magic 0/1 predate zstd
    return encode_legacy(rows, magic=int(kind[1]), compression=codec, base_offset=base_offset), len(rows)


@FUZZ
@given(batches=st.lists(_BATCH, min_size=1, max_size=5), crc_hit=st.integers(0, 10**6),
       cut=st.integers(0, 10**6))
def test_lean_walk_matches_the_full_reader_on_random_logs(batches, crc_hit, cut):
    parts, offset = [], 0
    for spec in batches:
        data, n = _entry(*spec, base_offset=offset)
        parts.append(data)
        offset += n
    log = b"".join(parts)
    _drain(log)
    damaged = bytearray(log)
    damaged[61 + crc_hit % max(1, len(log) - 61) if len(log) > 61 else 0] ^= 0xFF  # a bad CRC, or worse
    _drain(bytes(damaged))
    _drain(log[:cut % (len(log) + 1)])  # truncation
