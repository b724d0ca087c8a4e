"""Reading on past damage: after a batch that cannot be read, decoding resumes at the next whole batch
(`kgroup.records.framing`), the bytes passed over are one line naming the file and the byte range, and
every batch the damage did not touch is decoded — by the local engine, on a stream, and by the Spark
engine's planned byte ranges alike. --strict and kafka-dump-log's text keep Kafka's reading."""

import io
import json
import struct

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import VECTORS
from kgroup.commands.cli import cli
from kgroup.decode.decoder import ProblemLog
from kgroup.decode.inputs import iter_input, resolve_inputs
from kgroup.decode.spark.plan import plan_tasks
from kgroup.decode.spark.reader import RangeReader
from kgroup.records import framing
from kgroup.records.batch import scan
from kgroup.records.batch_model import Batch, BatchError, SkippedBytes, TrailingBytes

PREFIX = "kgroup decode-offsets: "
# real segments: Kafka-written (every codec, transactions; legacy magic 0/1 then 2; Kafka 4.4's)
SEGMENTS = {"A": VECTORS / "segments" / "A__consumer_offsets-7__00000000000000000000.log",
            "B": VECTORS / "segments" / "B__consumer_offsets-12__00000000000000000000.log",
            **{f"k44-{p}": VECTORS / "kafka-4.4" / f"__consumer_offsets-{p}" / "00000000000000000000.log"
               for p in (2, 25, 27, 39)}}
FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                        HealthCheck.function_scoped_fixture])


def run(*args, input=None):
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def _records(batch) -> list:
    return [(r.offset, r.timestamp, r.key, r.value, r.control) for r in batch.records]


def _batches(data: bytes) -> list:
    """(position, size, records) of each batch of an intact file."""
    return [(e.position, e.size, _records(e)) for e in scan(data) if isinstance(e, Batch)]


def _write(tmp_path, name: str, data: bytes):
    """data as a broker lays a segment out: __consumer_offsets-N/<base offset>.log."""
    original = SEGMENTS[name]
    partition = original.parent.name if name.startswith("k44") else "__" + original.name.split("__")[1]
    directory = tmp_path / partition
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "00000000000000000000.log"
    path.write_bytes(data)
    return path


def _local(path):
    """(batches as (position, records), problems as text, raw events) as the local engine reads a file."""
    problems = ProblemLog()
    [inp] = resolve_inputs([str(path)], None, problems)
    batches = [(b.position, _records(b)) for b, _rows in iter_input(inp, problems)]
    return batches, [str(p) for p in problems.problems]


def _ranges(path, split):
    """The same file read as the Spark engine's tasks read it (plan + one RangeReader per range)."""
    inputs = resolve_inputs([str(path)], None, ProblemLog())
    batches, problems = [], []
    for task in plan_tasks(inputs, split):
        reader = RangeReader(task)
        batches += [(b.position, _records(b)) for b, _rows in reader]
        problems += [str(p) for p in reader.summary.problem_objects()]
        if reader.summary.stops_file:
            break
    return batches, problems


class _Pipe(io.RawIOBase):
    """stdin: not seekable, short reads."""

    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def readable(self):
        return True

    def seekable(self):
        return False

    def read(self, n=-1):
        n = 4093 if n is None or n < 0 else min(n, 4093)
        chunk = self.data[self.pos:self.pos + n]
        self.pos += len(chunk)
        return chunk


def _event_shape(events) -> list:
    """What a file and a stream must agree on (a stream words an impossible length its own way)."""
    return [("batch", e.position, _records(e)) if isinstance(e, Batch)
            else (type(e).__name__, e.position, getattr(e, "end", None), getattr(e, "count", None))
            for e in events]


# --------------------------------------------------------------------------------------------- examples

def test_a_damaged_first_length_loses_only_the_first_batch(tmp_path):
    """Issue 26's case: bytes 8-12 (the first batch's length) overwritten. Kafka's reader stops there
    ('Found 2158 invalid bytes at the end', 0 records, exit 1); kgroup reads on at the next batch."""
    original = SEGMENTS["A"].read_bytes()
    data = bytearray(original)
    data[8:12] = b"test"
    path = _write(tmp_path, "A", bytes(data))
    result = run("decode-offsets", "-o", "jsonl", str(path))
    length = struct.unpack(">i", b"test")[0]
    assert result.exit_code == 3
    assert result.stderr.splitlines()[0] == (f"{PREFIX}{path}: bytes 0–171 skipped: batch length {length} "
                                             f"exceeds the file; resumed at byte 171")
    assert len(result.stderr.splitlines()) == 2 and "1 problem;" in result.stderr
    offsets = [json.loads(line)["offset"] for line in result.stdout.splitlines()]
    expected = [r[0] for _pos, _size, records in _batches(original)[1:] for r in records]
    assert offsets == expected and offsets
    state = run("decode-offsets", "--view", "state", "-o", "json", str(path))
    assert state.exit_code == 3 and json.loads(state.stdout)["committed_offsets"]


def test_strict_and_dump_log_keep_kafkas_reading(tmp_path):
    data = bytearray(SEGMENTS["A"].read_bytes())
    data[8:12] = b"test"
    path = _write(tmp_path, "A", bytes(data))
    strict = run("decode-offsets", "-o", "jsonl", "--strict", str(path))
    assert strict.exit_code == 1 and strict.stdout == ""
    assert strict.stderr.splitlines() == [
        f"{PREFIX}{path}: byte 0: Found 2158 invalid bytes at the end of 00000000000000000000.log (batch length "
        f"{struct.unpack('>i', b'test')[0]} exceeds the file)", f"{PREFIX}stopped at the first problem (--strict)"]
    kafka_text = f"Dumping {path}\nLog starting offset: 0\nFound 2158 invalid bytes at the end of 00000000000000000000.log\n"
    dump = run("decode-offsets", "-o", "dump-log", str(path))
    assert dump.stdout == kafka_text and dump.exit_code == 1
    dump = run("decode-offsets", "-o", "dump-log", "--strict", str(path))  # Kafka's text, up to the stop
    assert kafka_text.startswith(dump.stdout) and dump.exit_code == 1


def test_a_shortened_length_is_not_trusted(tmp_path):
    """A length made smaller but still plausible: the batch does not parse and its CRC does not vouch
    for the length, so the next batch is searched for rather than taken at the wrong length."""
    original = SEGMENTS["A"].read_bytes()
    data = bytearray(original)
    (length,) = struct.unpack_from(">i", data, 378 + 8)
    struct.pack_into(">i", data, 378 + 8, length - 40)
    path = _write(tmp_path, "A", bytes(data))
    batches, problems = _local(path)
    assert [pos for pos, _ in batches] == [pos for pos, _size, _ in _batches(original) if pos != 378]
    assert len(problems) == 1 and problems[0].startswith(f"{path}: bytes 378–540 skipped: batch (magic 2, ")
    assert problems[0].endswith("; resumed at byte 540")


def test_damage_across_batches_and_a_zero_filled_tail(tmp_path, monkeypatch):
    original = SEGMENTS["A"].read_bytes()
    data = bytearray(original)
    data[400:1200] = bytes(800)
    checked = []
    whole = framing.whole_entry_at
    monkeypatch.setattr(framing, "whole_entry_at", lambda *a: checked.append(a[1]) or whole(*a))
    path = _write(tmp_path, "A", bytes(data) + bytes(8 << 20))  # and 8 MB of zeros (a preallocated tail)
    batches, problems = _local(path)
    intact = [(pos, recs) for pos, size, recs in _batches(original) if pos + size <= 400 or pos >= 1200]
    assert batches == intact
    first_after = min(pos for pos, _ in intact if pos >= 1200)
    assert problems[0].startswith(f"{path}: bytes 378–{first_after} skipped: ")
    assert problems[1] == (f"{path}: byte 2158: Found {8 << 20} invalid bytes at the end of 00000000000000000000.log"
                           " (batch length 0 is below the minimum 14 for magic 0)")
    assert len(problems) == 2
    assert checked and max(checked) < 2200, "a run of zeros is passed over without looking at each position"


def test_stdin_reads_on_past_damage_as_a_file_does(tmp_path):
    original = SEGMENTS["A"].read_bytes()
    data = bytearray(original)
    data[8:12] = b"test"
    data[900:1000] = b"\xa5" * 100
    from_file = list(scan(bytes(data), "x.log", resync=True))
    from_pipe = list(scan(_Pipe(bytes(data)), "x.log", resync=True))
    assert _event_shape(from_pipe) == _event_shape(from_file)
    assert [type(e) for e in from_file if not isinstance(e, Batch)] == [SkippedBytes, SkippedBytes]
    result = run("decode-offsets", "-o", "jsonl", "-", input=bytes(data))
    assert result.exit_code == 3 and result.stderr.startswith(f"{PREFIX}-: bytes 0–171 skipped: ")


def test_legacy_entries_are_found_after_damage(tmp_path):
    original = SEGMENTS["B"].read_bytes()
    data = bytearray(original)
    data[8:12] = b"\x7f\x00\x00\x00"
    path = _write(tmp_path, "B", bytes(data))
    batches, problems = _local(path)
    assert batches == [(pos, recs) for pos, _size, recs in _batches(original)[1:]]  # magic 0, 1 and 2 after it
    assert problems == [f"{path}: bytes 0–82 skipped: batch length 2130706432 exceeds the file; resumed at byte 82"]


def test_a_batch_whose_crc_matches_is_skipped_by_its_length():
    """An unknown codec under a valid CRC: the length is vouched for, the batch alone is reported."""
    from kgroup.records.crc import crc32c
    from kgroup.records.writer import encode_batch

    good = encode_batch([(b"k", b"v", 10)], base_offset=0)
    bad = bytearray(encode_batch([(b"k", b"v", 10)], base_offset=1))
    struct.pack_into(">h", bad, 21, 6)
    struct.pack_into(">I", bad, 17, crc32c(bytes(bad[21:])))
    events = list(scan(good + bytes(bad) + good, "x.log", resync=True))
    assert [type(e).__name__ for e in events] == ["Batch", "BatchError", "Batch"]


def test_spark_ranges_agree_with_the_local_engine_on_damage(tmp_path):
    original = SEGMENTS["A"].read_bytes()
    data = bytearray(original)
    data[8:12] = b"test"
    data[600:700] = b"\x02" * 100  # every position a magic-2 candidate
    struct.pack_into(">i", data, 1085 + 8, 60)
    path = _write(tmp_path, "A", bytes(data))
    local = _local(path)
    assert len(local[1]) == 3
    for split in (1, 150, 400, 1000, 1 << 20):
        assert _ranges(path, split) == local, split
    assert len(plan_tasks(resolve_inputs([str(path)], None, ProblemLog()), 1)) > 5


# --------------------------------------------------------------------------------------------- fuzz

_DAMAGE = st.one_of(
    st.tuples(st.just("overwrite"), st.binary(min_size=1, max_size=700)),
    st.tuples(st.just("fill"), st.tuples(st.sampled_from([0, 1, 2, 0xFF]), st.integers(1, 900))),
    st.tuples(st.just("flip"), st.integers(1, 255)),
    st.tuples(st.just("delete"), st.integers(1, 400)),
    st.tuples(st.just("insert"), st.binary(min_size=1, max_size=300)),
)


def _damage(original: bytes, at: int, damage) -> tuple[bytes, int, int, int]:
    """The damaged bytes, the damaged span [lo, hi) of the original, and how far bytes after it moved."""
    kind, arg = damage
    at %= len(original)
    if kind == "overwrite":
        data = original[:at] + arg + original[at + len(arg):]
        return data[:len(original)], at, at + len(arg), 0
    if kind == "fill":
        value, count = arg
        data = original[:at] + bytes([value]) * count + original[at + count:]
        return data[:len(original)], at, at + count, 0
    if kind == "flip":
        return original[:at] + bytes([original[at] ^ arg]) + original[at + 1:], at, at + 1, 0
    if kind == "delete":
        return original[:at] + original[at + arg:], at, at + arg, -min(arg, len(original) - at)
    return original[:at] + arg + original[at:], at, at + 1, len(arg)  # insert: touches the batch around `at`


@FUZZ
@given(name=st.sampled_from(sorted(SEGMENTS)), at=st.integers(0, 10**6), damage=_DAMAGE,
       split=st.sampled_from([1, 300, 1 << 20]))
def test_random_damage_loses_only_the_batches_it_touches(tmp_path_factory, name, at, damage, split):
    original = SEGMENTS[name].read_bytes()
    data, lo, hi, shift = _damage(original, at, damage)
    events = list(scan(data, "fuzz.log", resync=True))
    assert all(isinstance(e, (Batch, BatchError)) for e in events)
    # a stream and the lean walk read the same
    assert _event_shape(scan(_Pipe(data), "fuzz.log", resync=True)) == _event_shape(events)
    # every batch the damage did not touch is read, whole, where it now is
    read = {e.position: _records(e) for e in events if isinstance(e, Batch)}
    for pos, size, records in _batches(original):
        if pos + size <= lo:
            assert read.get(pos) == records, pos
        elif pos >= hi:
            assert read.get(pos + shift) == records, pos
    # each problem names the file and where; a skip ends where a batch (or the next problem) starts
    starts = [e.position for e in events]
    for i, e in enumerate(events):
        if isinstance(e, BatchError):
            assert str(e).startswith("fuzz.log: ") and 0 <= e.position <= len(data)
        if isinstance(e, SkippedBytes):
            assert e.position < e.end and i + 1 < len(events) and starts[i + 1] == e.end
            assert str(e).startswith(f"fuzz.log: bytes {e.position}–{e.end} skipped: ")
        if isinstance(e, TrailingBytes):
            assert e is events[-1] and e.position + e.count == len(data)
    # the Spark engine's ranges read the same as the local engine
    path = _write(tmp_path_factory.mktemp("fuzz"), name, data)
    local = _local(path)
    assert all(p.startswith(f"{path}: byte") for p in local[1])
    assert _ranges(path, split) == local


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(sorted(SEGMENTS)), at=st.integers(0, 10**6), damage=_DAMAGE)
def test_random_damage_never_tracebacks(tmp_path_factory, name, at, damage):
    data, _lo, _hi, _shift = _damage(SEGMENTS[name].read_bytes(), at, damage)
    path = _write(tmp_path_factory.mktemp("cli"), name, data)
    for args in (["-o", "jsonl"], ["--view", "state", "-o", "json"], ["-o", "dump-log"], ["--strict", "-o", "csv"]):
        result = run("decode-offsets", *args, str(path))
        assert result.exit_code in (0, 1, 3), (args, result.stderr)
        lines = result.stderr.splitlines()
        assert all(line.startswith(PREFIX) for line in lines), result.stderr
        assert all(str(path) in line for line in lines if "problem" not in line and "--strict" not in line)


@FUZZ
@given(name=st.sampled_from(sorted(SEGMENTS)),
       hits=st.lists(st.tuples(st.integers(0, 10**6), st.binary(min_size=1, max_size=120)), min_size=2, max_size=4))
def test_several_damaged_places_lose_only_the_batches_they_touch(name, hits):
    original = SEGMENTS[name].read_bytes()
    data, spans = bytearray(original), []
    for at, garbage in hits:
        at %= len(original)
        data[at:at + len(garbage)] = garbage
        del data[len(original):]
        spans.append((at, at + len(garbage)))
    events = list(scan(bytes(data), "fuzz.log", resync=True))
    read = {e.position: _records(e) for e in events if isinstance(e, Batch)}
    for pos, size, records in _batches(original):
        if not any(pos < hi and lo < pos + size for lo, hi in spans):
            assert read.get(pos) == records, pos
    assert _event_shape(scan(_Pipe(bytes(data)), "fuzz.log", resync=True)) == _event_shape(events)
