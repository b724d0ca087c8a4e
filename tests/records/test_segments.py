"""Segment discovery (files, partition dirs, log dirs), streaming with on_error, stdin, ranges."""

import os
import struct
import subprocess
import sys

import pytest

from kgroup.errors import KgroupError
from kgroup.records.batch import read_batches
from kgroup.records.batch_model import BatchError, TrailingBytes
from kgroup.records.segment import (SegmentFile, SegmentPathError, family_for_topic,
                                    find_segments, iter_segment, scan_batch_boundaries)
from kgroup.records.writer import LogWriter, encode_batch

COMPANIONS = [".index", ".timeindex", ".txnindex", ".snapshot", ".log.deleted", ".log.cleaned",
              ".log.swap", ".index.deleted", ".timeindex.cleaned"]


def _segment(directory, base, records=1, first_offset=None):
    """Write a segment named for `base` holding `records` one-record batches from offset base."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{base:020d}.log"
    with open(path, "wb") as f:
        w = LogWriter(f, base if first_offset is None else first_offset)
        for i in range(records):
            w.append([(b"k%d" % i, b"v", 1000 + i)])
    return path


def _companions(directory, base):
    for suffix in COMPANIONS:
        (directory / f"{base:020d}{suffix}").write_bytes(b"\x00" * 24)
    (directory / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    (directory / "partition.metadata").write_text("version: 0\ntopic_id: abc\n")


def test_single_file_with_topic_from_parent(tmp_path):
    path = _segment(tmp_path / "__consumer_offsets-12", 300)
    [seg] = find_segments(path)
    assert seg == SegmentFile(str(path), "__consumer_offsets", 12, 300)
    assert family_for_topic(seg.topic) == "consumer"


def test_single_file_unparseable_name(tmp_path):
    path = tmp_path / "dump.log"
    path.write_bytes(encode_batch([(b"k", b"v", 1)]))
    assert find_segments(str(path)) == [SegmentFile(str(path), None, None, 0)]


def test_shared_vector_file_names(segments_dir):
    [seg] = find_segments(segments_dir / "B__consumer_offsets-12__00000000000000000000.log")
    assert (seg.topic, seg.partition, seg.base_offset) == ("__consumer_offsets", 12, 0)


def test_partition_dir_orders_segments_and_skips_companions(tmp_path):
    part = tmp_path / "__consumer_offsets-3"
    for base in (1000, 20, 0):
        _segment(part, base)
        _companions(part, base)
    (part / "00000000000000000500.log.deleted").write_bytes(encode_batch([(b"x", b"y", 1)]))
    segs = find_segments(part)
    assert [(s.base_offset, s.topic, s.partition) for s in segs] == [
        (0, "__consumer_offsets", 3), (20, "__consumer_offsets", 3), (1000, "__consumer_offsets", 3)]
    assert all(s.path.endswith(".log") for s in segs)


def test_log_dir_sorted_by_topic_then_partition(tmp_path):
    for name in ["__consumer_offsets-10", "__consumer_offsets-2", "__worker_offsets-0",
                 "orders-1", "__consumer_offsets-2.abc123-delete", "__consumer_offsets-4-future",
                 "__consumer_offsets-5.xyz-stray"]:
        _segment(tmp_path / name, 0)
        _companions(tmp_path / name, 0)
    (tmp_path / "recovery-point-offset-checkpoint").write_text("0\n0\n")
    (tmp_path / "meta.properties").write_text("version=1\n")
    (tmp_path / "empty-7").mkdir()
    segs = find_segments(tmp_path)
    # a broker's other topics (orders-1) are not coordinator logs: only the internal topics are read
    assert [(s.topic, s.partition) for s in segs] == [
        ("__consumer_offsets", 2), ("__consumer_offsets", 10), ("__worker_offsets", 0)]
    assert [family_for_topic(s.topic) for s in segs] == ["consumer", "consumer", "connect"]


def test_dir_of_other_partition_dirs_is_read_whole(tmp_path):
    """Without any __consumer_offsets-N / __worker_offsets-N inside, every <topic>-<N> is a copy to read."""
    for name in ["copy-3", "copy-1", "orders.abc-delete"]:
        _segment(tmp_path / name, 0)
    segs = find_segments(tmp_path)
    assert [(s.topic, s.partition) for s in segs] == [("copy", 1), ("copy", 3)]


def test_a_log_dir_shared_with_log4j_files_is_still_a_log_dir(tmp_path):
    """log.dirs=/var/log/kafka beside log4j's server.log, controller.log, ...: those are not segments."""
    logs = tmp_path / "kafka"
    for name in ["__consumer_offsets-4", "orders-0"]:
        _segment(logs / name, 0)
    for name in ["server.log", "controller.log", "state-change.log"]:
        (logs / name).write_text("[2026-11-27 10:00:00,000] INFO started (kafka.server.KafkaServer)\n")
    assert [(s.topic, s.partition) for s in find_segments(logs)] == [("__consumer_offsets", 4)]
    # a directory named as a partition is one, whatever else it holds
    part = logs / "__consumer_offsets-4"
    (part / "stray-9").mkdir()
    _segment(part / "stray-9", 0)
    assert [s.path for s in find_segments(part)] == [str(part / "00000000000000000000.log")]


def test_a_companion_file_named_to_decode_is_said_to_be_one(tmp_path):
    """Tab completion hands over 00000000000000000000.index as easily as the .log (a live broker's
    index is 10 MB of zeros): say what it is rather than report a batch length of 0."""
    part = tmp_path / "__consumer_offsets-3"
    _segment(part, 0)
    _companions(part, 0)
    for name, kind in [("00000000000000000000.index", "an offset index"),
                       ("00000000000000000000.timeindex", "a time index"),
                       ("00000000000000000000.snapshot", "a producer state snapshot"),
                       ("partition.metadata", "the partition's metadata file"),
                       ("leader-epoch-checkpoint", "the leader epoch checkpoint")]:
        with pytest.raises(SegmentPathError) as info:
            find_segments(part / name)
        assert str(info.value) == (f"{part / name}: {kind}, not a log segment (give a .log file or the "
                                   "partition directory)")
    assert [s.base_offset for s in find_segments(part / "00000000000000000000.log.deleted")] == [0]  # data


def test_a_segment_being_deleted_named_as_a_file_keeps_its_base_offset(tmp_path):
    """kafka-dump-log takes the base offset from the name up to the first dot: 500.log.deleted is 500."""
    part = tmp_path / "__consumer_offsets-3"
    path = _segment(part, 500)
    for suffix in (".deleted", ".cleaned", ".swap"):
        renamed = path.with_name(path.name + suffix)
        path.rename(renamed)
        [seg] = find_segments(renamed)
        assert (seg.topic, seg.partition, seg.base_offset) == ("__consumer_offsets", 3, 500)
        renamed.rename(path)
    assert find_segments(part) == [SegmentFile(str(path), "__consumer_offsets", 3, 500)]  # a directory: .log only


def test_missing_path_and_empty_dir_are_clear_errors(tmp_path):
    with pytest.raises(SegmentPathError) as info:
        find_segments(tmp_path / "nope")
    assert str(tmp_path / "nope") in str(info.value) and "no such file" in str(info.value)
    part = tmp_path / "__consumer_offsets-1"
    part.mkdir()
    _companions(part, 0)
    with pytest.raises(SegmentPathError) as info:
        find_segments(part)
    assert str(part) in str(info.value) and "no .log segment files" in str(info.value)
    assert isinstance(info.value, KgroupError)


def test_family_for_topic():
    assert family_for_topic("__consumer_offsets") == "consumer"
    assert family_for_topic("__worker_offsets") == "connect"
    assert family_for_topic("orders") is None
    assert family_for_topic(None) is None


def test_iter_segment_reports_every_problem_and_continues(tmp_path, segments_dir):
    data = bytearray((segments_dir / "A__consumer_offsets-7__00000000000000000000.log").read_bytes())
    data[171 + 70] ^= 0xFF                      # batch 2: CRC mismatch, still decodes
    struct.pack_into(">h", data, 378 + 21, 7)   # batch 3: unknown codec 7 -> skipped
    path = tmp_path / "a.log"
    path.write_bytes(bytes(data) + b"\x00" * 9)  # and a partial tail
    seen = []
    batches = list(iter_segment(str(path), on_error=seen.append))
    assert [type(e).__name__ for e in seen] == ["CrcMismatch", "BatchError", "TrailingBytes"]
    assert [e.position for e in seen] == [171, 378, 2158]
    assert seen[2].count == 9 and seen[2].dump_line == "Found 9 invalid bytes at the end of a.log"
    assert len(batches) == 14
    assert [b.position for b in batches][:3] == [0, 171, 540]
    assert batches[1].crc_valid is False


def test_iter_segment_stops_when_on_error_raises(tmp_path, segments_dir):
    data = bytearray((segments_dir / "A__consumer_offsets-7__00000000000000000000.log").read_bytes())
    data[540 + 70] ^= 0xFF
    path = tmp_path / "a.log"
    path.write_bytes(bytes(data))

    def fail(err):
        raise RuntimeError(f"stop at {err.position}")

    got = []
    with pytest.raises(RuntimeError, match="stop at 540"):
        for batch in iter_segment(path, on_error=fail):
            got.append(batch.position)
    assert got == [0, 171, 378]


def test_iter_segment_missing_file_goes_to_on_error(tmp_path):
    seen = []
    assert list(iter_segment(tmp_path / "gone.log", on_error=seen.append)) == []
    assert len(seen) == 1 and not seen[0].recoverable and "cannot open" in str(seen[0])


def test_iter_segment_accepts_segment_file(segments_dir):
    [seg] = find_segments(segments_dir / "B__consumer_offsets-12__00000000000000000000.log")
    assert [b.magic for b in iter_segment(seg, on_error=None)] == [0, 0, 0, 1, 1, 1, 1, 2]


_STDIN_SCRIPT = """
import sys
from kgroup.records.segment import iter_segment
errors = []
for b in iter_segment("-", on_error=errors.append):
    print(b.position, b.base_offset, b.last_offset, b.magic, b.compression, len(b.records))
for e in errors:
    print("ERR", type(e).__name__, e.position, getattr(e, "count", ""))
"""


def test_stdin_stream(segments_dir):
    data = (segments_dir / "B__consumer_offsets-12__00000000000000000000.log").read_bytes()
    out = subprocess.run([sys.executable, "-c", _STDIN_SCRIPT], input=data + data[:30],
                         capture_output=True, check=True, timeout=60).stdout.decode().splitlines()
    assert out == ["0 0 0 0 none 1", "82 1 2 0 gzip 2", "199 3 4 0 lz4 2", "349 5 5 1 none 1",
                   "435 6 7 1 snappy 2", "603 8 9 1 lz4 2", "766 10 11 1 gzip 2",
                   "901 12 12 2 none 1", "ERR TrailingBytes 1021 30"]


class _Pipe:
    """A non-seekable stream that hands out a few bytes per read, like a slow pipe."""

    def __init__(self, data, step=7):
        self.data, self.pos, self.step = data, 0, step

    def read(self, n=-1):
        n = self.step if n < 0 else min(n, self.step)
        chunk = self.data[self.pos:self.pos + n]
        self.pos += len(chunk)
        return chunk

    def seekable(self):
        return False


def test_non_seekable_short_reads(segments_dir):
    data = (segments_dir / "A__consumer_offsets-7__00000000000000000000.log").read_bytes()
    positions = [b.position for b in read_batches(_Pipe(data), path="-")]
    assert positions == [b.position for b in read_batches(data)]
    assert len(positions) == 15
    # start/end on a stream: bytes before start are discarded
    assert [b.position for b in read_batches(_Pipe(data), start=378, end=923)] == [378, 540, 741]


def test_scan_batch_boundaries(tmp_path):
    path = _segment(tmp_path / "t-0", 0, records=200)
    size = os.path.getsize(path)
    one = size // 200
    ranges = scan_batch_boundaries(path, target_bytes=one * 50)
    assert len(ranges) == 4
    assert ranges[0][0] == 0 and ranges[-1][1] == size
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    total = []
    for start, end in ranges:
        with open(path, "rb") as f:
            total += [r.offset for b in read_batches(f, str(path), start, end) for r in b.records]
    assert total == list(range(200))
    assert scan_batch_boundaries(path) == [(0, size)]


def test_scan_batch_boundaries_bad_tail(tmp_path, segments_dir):
    data = (segments_dir / "A__consumer_offsets-7__00000000000000000000.log").read_bytes()
    path = tmp_path / "x.log"
    path.write_bytes(data + data[:20])  # a partial copy of the first batch
    ranges = scan_batch_boundaries(path, target_bytes=1000)
    assert ranges == [(0, 1085), (1085, 2158 + 20)]
    events = []
    with open(path, "rb") as f:
        list(read_batches(f, str(path), 0, 1085))
        with pytest.raises(TrailingBytes) as info:
            list(read_batches(f, str(path), 1085, 2178))
    assert info.value.count == 20
    path.write_bytes(data + b"\xff" * 20)  # length -1: corrupt, not a partial write
    with open(path, "rb") as f:
        with pytest.raises(BatchError) as info:
            list(read_batches(f, str(path), 1085, 2178))
    assert info.value.position == 2158 and not info.value.recoverable
    assert not isinstance(info.value, TrailingBytes)
    assert scan_batch_boundaries(tmp_path / "x.log", target_bytes=10**9) == [(0, 2178)]
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    assert scan_batch_boundaries(empty) == []
    assert list(iter_segment(empty, on_error=events.append)) == [] and events == []


def test_stream_with_implausible_length_is_not_read(segments_dir):
    data = bytearray((segments_dir / "A__consumer_offsets-7__00000000000000000000.log").read_bytes())
    struct.pack_into(">i", data, 171 + 8, 1 << 30)
    pipe = _Pipe(bytes(data), step=1 << 20)
    with pytest.raises(BatchError) as info:
        list(read_batches(pipe, path="-"))
    assert info.value.position == 171 and not info.value.recoverable
    assert "implausibly large for a stream" in str(info.value)
    # a file with the same damage: the length runs past the end -> a partial tail, not read either
    with pytest.raises(TrailingBytes) as info:
        list(read_batches(bytes(data), path="a.log"))
    assert (info.value.position, info.value.count) == (171, len(data) - 171)


def test_bytes_with_start_and_end(segments_dir):
    data = (segments_dir / "B__consumer_offsets-12__00000000000000000000.log").read_bytes()
    assert [(b.position, b.magic) for b in read_batches(data, start=349, end=901)] == [
        (349, 1), (435, 1), (603, 1), (766, 1)]
    with pytest.raises(TrailingBytes) as info:
        list(read_batches(data, start=766, end=950))
    assert (info.value.position, info.value.count) == (901, 49)
