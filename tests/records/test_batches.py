"""The batch reader against Kafka's own bytes: every batch vector and both real segment files."""

import io
import re
import struct

import crc32c
import pytest

from kgroup.records.batch import read_batches, scan
from kgroup.records.batch_model import Batch, BatchError, CrcMismatch, TrailingBytes
from kgroup.records.writer import OutRecord, encode_batch, encode_legacy

HEADER_FIELDS = ["magic", "base_offset", "last_offset", "crc", "crc_valid", "compression",
                 "timestamp_type", "max_timestamp", "partition_leader_epoch", "attributes",
                 "base_timestamp", "producer_id", "producer_epoch", "base_sequence",
                 "records_count", "is_transactional", "is_control", "delete_horizon_ms"]


def _batch_vectors(kafka_vectors):
    return [v for v in kafka_vectors if v["category"] == "batch"]


def _hex(blob):
    return None if blob is None else bytes(blob).hex()


def test_there_are_23_batch_vectors(kafka_vectors):
    assert len(_batch_vectors(kafka_vectors)) == 23


def test_every_batch_vector_header_and_records(kafka_vectors):
    for vec in _batch_vectors(kafka_vectors):
        raw = bytes.fromhex(vec["hex"])
        batches = list(read_batches(raw, path=vec["name"]))
        assert len(batches) == len(vec["expected_batches"]), vec["name"]
        for got, want in zip(batches, vec["expected_batches"]):
            assert got.size == want["size_in_bytes"] == len(raw), vec["name"]
            assert got.position == 0
            for name in HEADER_FIELDS:
                if name in want:
                    assert getattr(got, name) == want[name], (vec["name"], name)
            if "last_offset_delta" in want:
                assert got.last_offset - got.base_offset == want["last_offset_delta"]
            assert len(got.records) == len(want["records"]), vec["name"]
            for rec, exp in zip(got.records, want["records"]):
                assert rec.offset == exp["offset"], vec["name"]
                assert rec.timestamp == exp["timestamp"], vec["name"]
                if "sequence" in exp:
                    assert rec.sequence == exp["sequence"], vec["name"]
                else:
                    assert rec.sequence == -1
                assert _hex(rec.key) == exp["key"], vec["name"]
                assert _hex(rec.value) == exp["value"], vec["name"]
                assert [[k, _hex(v)] for k, v in rec.headers] == [
                    [h[0], h[1]] if isinstance(h, list) else [h["key"], h["value"]]
                    for h in exp["headers"]], vec["name"]
                assert rec.key_size == (-1 if rec.key is None else len(rec.key))
                assert rec.value_size == (-1 if rec.value is None else len(rec.value))


def test_headers_vector_exact(kafka_vectors):
    vec = next(v for v in _batch_vectors(kafka_vectors) if v["name"].startswith("A12 "))
    [batch] = read_batches(bytes.fromhex(vec["hex"]))
    assert batch.records[0].headers == [("h1", b"v1"), ("h2", None)]


def test_control_markers(kafka_vectors):
    by_name = {v["name"].split()[0]: v for v in _batch_vectors(kafka_vectors)}
    [commit] = read_batches(bytes.fromhex(by_name["A8"]["hex"]))
    [abort] = read_batches(bytes.fromhex(by_name["A10"]["hex"]))
    assert commit.is_control and commit.is_transactional and commit.producer_id == 4000
    assert [(r.offset, r.control, r.coordinator_epoch, r.key_size, r.value_size)
            for r in commit.records] == [(18, "COMMIT", 5, 4, 6)]
    assert abort.producer_id == 4001
    assert [(r.control, r.coordinator_epoch) for r in abort.records] == [("ABORT", 5)]
    [data] = read_batches(bytes.fromhex(by_name["A6"]["hex"]))
    assert all(r.control is None and r.coordinator_epoch is None for r in data.records)


def test_unknown_control_type_is_named():
    blob = encode_batch([(struct.pack(">hh", 0, 77), b"", 5)], control=True, transactional=True)
    [batch] = read_batches(blob)
    assert batch.records[0].control == "UNKNOWN(77)"
    assert batch.records[0].coordinator_epoch is None


def test_short_control_key_is_a_recoverable_error():
    blob = encode_batch([(b"\x00", b"", 5)], control=True, transactional=True)
    with pytest.raises(BatchError) as info:
        list(read_batches(blob, path="x.log"))
    assert info.value.recoverable and info.value.position == 0
    assert "control record at offset 0 has a 1-byte key" in str(info.value)


def test_log_append_time_records_take_max_timestamp(kafka_vectors):
    vec = next(v for v in _batch_vectors(kafka_vectors) if v["name"].startswith("A13 "))
    [batch] = read_batches(bytes.fromhex(vec["hex"]))
    assert batch.timestamp_type == "LogAppendTime"
    assert batch.base_timestamp == 1700000000060
    assert [r.timestamp for r in batch.records] == [1700000000099, 1700000000099]


def test_legacy_records_carry_inner_crc_and_validity(kafka_vectors):
    vec = next(v for v in _batch_vectors(kafka_vectors) if v["name"].startswith("B1 "))
    [batch] = read_batches(bytes.fromhex(vec["hex"]))
    assert (batch.last_offset, batch.crc, batch.compression) == (2, 36437032, "gzip")
    assert [(r.offset, r.crc, r.is_valid, r.timestamp) for r in batch.records] == [
        (1, 3616632411, True, -1), (2, 2357649230, True, -1)]
    assert (batch.producer_id, batch.base_sequence, batch.partition_leader_epoch) == (-1, -1, -1)


# ---------------------------------------------------------------------------------------------
# both real segment files against the batch lines of the expected kafka-dump-log text

_LINE = re.compile(r"(?:baseOffset: (?P<base>\d+) lastOffset: (?P<last>\d+) count: (?P<count>\d+) "
                   r"baseSequence: (?P<bseq>-?\d+) .*?producerId: (?P<pid>-?\d+) "
                   r"producerEpoch: (?P<pep>-?\d+) partitionLeaderEpoch: (?P<ple>-?\d+) "
                   r"isTransactional: (?P<txn>\w+) isControl: (?P<ctl>\w+) "
                   r"deleteHorizonMs: (?P<dh>\S+) |offset: (?P<legacy>\d+) )"
                   r"position: (?P<pos>\d+) (?P<tstype>\w+): (?P<ts>-?\d+) size: (?P<size>\d+) "
                   r"magic: (?P<magic>\d) compresscodec: (?P<codec>\w+) crc: (?P<crc>\d+) "
                   r"isvalid: (?P<valid>\w+)$")
_RECORD = re.compile(r"^\| offset: (?P<off>\d+) (?P<tstype>\w+): (?P<ts>-?\d+) "
                     r"keySize: (?P<ks>-?\d+) valueSize: (?P<vs>-?\d+) "
                     r"(?:sequence: (?P<seq>-?\d+) headerKeys: \[(?P<hk>[^\]]*)\]"
                     r"|isValid: (?P<valid>\w+) crc: (?P<crc>\d+)\})")


def _expected_dump(path):
    batches = []
    for line in path.read_text().splitlines():
        m = _LINE.match(line)
        if m:
            batches.append((m.groupdict(), []))
            continue
        r = _RECORD.match(line)
        if r:
            batches[-1][1].append(r.groupdict())
    return batches


def _segment_vectors(kafka_vectors):
    return [v for v in kafka_vectors if v["category"] == "segment"]


def test_batch_vectors_concatenate_to_the_segment_files(kafka_vectors):
    from helpers import VECTORS
    parts = {}
    for vec in _batch_vectors(kafka_vectors):
        parts.setdefault(vec["segment_file"], []).append(bytes.fromhex(vec["hex"]))
    assert sorted(parts) == sorted(v["file"] for v in _segment_vectors(kafka_vectors))
    for name, blobs in parts.items():
        assert b"".join(blobs) == (VECTORS / name).read_bytes()


@pytest.mark.parametrize("index,count", [(0, 15), (1, 8)])
def test_segment_files_match_dump(kafka_vectors, segments_dir, index, count):
    vec = _segment_vectors(kafka_vectors)[index]
    log = segments_dir.parent / vec["file"]
    expected = _expected_dump(segments_dir.parent / vec["expected"]["dump_log_segments_offsets_decoder"])
    with open(log, "rb") as f:
        batches = list(read_batches(f, path=str(log)))
    assert len(batches) == len(expected) == count
    assert sum(b.size for b in batches) == log.stat().st_size
    for got, (want, records) in zip(batches, expected):
        assert got.position == int(want["pos"])
        assert got.size == int(want["size"])
        assert got.magic == int(want["magic"])
        assert got.crc == int(want["crc"])
        assert got.crc_valid is (want["valid"] == "true")
        assert got.compression == want["codec"]
        assert got.timestamp_type == want["tstype"]
        assert got.max_timestamp == int(want["ts"])
        if got.magic < 2:
            assert got.last_offset == int(want["legacy"])
        else:
            assert (got.base_offset, got.last_offset, got.records_count) == (
                int(want["base"]), int(want["last"]), int(want["count"]))
            assert (got.base_sequence, got.producer_id, got.producer_epoch,
                    got.partition_leader_epoch) == (int(want["bseq"]), int(want["pid"]),
                                                    int(want["pep"]), int(want["ple"]))
            assert got.is_transactional is (want["txn"] == "true")
            assert got.is_control is (want["ctl"] == "true")
            horizon = ("OptionalLong.empty" if got.delete_horizon_ms is None
                       else f"OptionalLong[{got.delete_horizon_ms}]")
            assert horizon == want["dh"]
        assert len(got.records) == len(records)
        for rec, exp in zip(got.records, records):
            assert rec.offset == int(exp["off"])
            assert rec.timestamp == int(exp["ts"])
            assert (rec.key_size, rec.value_size) == (int(exp["ks"]), int(exp["vs"]))
            if got.magic < 2:
                assert (rec.crc, rec.is_valid) == (int(exp["crc"]), exp["valid"] == "true")
            else:
                assert rec.sequence == int(exp["seq"])
                assert ",".join(k for k, _ in rec.headers) == exp["hk"]


# ---------------------------------------------------------------------------------------------
# damage


def _segment_bytes(segments_dir, label):
    return next(segments_dir.glob(f"{label}__*.log")).read_bytes()


def test_bad_crc_is_reported_and_batch_still_decoded(segments_dir):
    data = bytearray(_segment_bytes(segments_dir, "A"))
    data[171 + 61 + 20] ^= 0x01  # a byte inside the second batch's record key
    events = list(scan(bytes(data), path="A.log"))
    crc_events = [e for e in events if isinstance(e, CrcMismatch)]
    assert len(crc_events) == 1
    err = crc_events[0]
    assert (err.position, err.stored, err.recoverable) == (171, 868927818, True)
    assert err.computed == crc32c.crc32c(bytes(data[171 + 21:171 + 207]))
    assert str(err) == (f"A.log: position 171: CRC-32C mismatch (magic 2): stored 868927818, "
                        f"computed {err.computed}")
    batches = [e for e in events if isinstance(e, Batch)]
    assert len(batches) == 15
    assert [b.crc_valid for b in batches].count(False) == 1 and not batches[1].crc_valid
    # read_batches yields it too, marked invalid, without raising
    assert [b.crc_valid for b in read_batches(bytes(data))][1] is False


def test_bad_crc_legacy_inner_message(segments_dir):
    data = bytearray(_segment_bytes(segments_dir, "B"))
    data[40] ^= 0x20  # inside the first magic-0 message's key: 'legacy' -> 'lEgacy'
    [first, *_] = read_batches(bytes(data))
    assert first.crc_valid is False and first.records[0].is_valid is False
    assert first.records[0].crc == 3781426856
    events = list(scan(bytes(data), path="b.log"))
    assert isinstance(events[0], CrcMismatch) and events[0].position == 0
    assert "CRC-32 mismatch (magic 0): stored 3781426856" in str(events[0])


def test_partial_trailing_batch(segments_dir):
    data = _segment_bytes(segments_dir, "A")
    cut = data[:2062 + 50]  # last batch (96 bytes at 2062) cut short
    events = list(scan(cut, path="/logs/__consumer_offsets-7/00000000000000000000.log"))
    assert sum(isinstance(e, Batch) for e in events) == 14
    tail = events[-1]
    assert isinstance(tail, TrailingBytes)
    assert (tail.count, tail.position, tail.recoverable) == (50, 2062, False)
    assert tail.dump_line == "Found 50 invalid bytes at the end of 00000000000000000000.log"
    with pytest.raises(TrailingBytes):
        list(read_batches(cut))


def test_trailing_bytes_shorter_than_a_header(segments_dir):
    data = _segment_bytes(segments_dir, "B") + b"\x00" * 5
    events = list(scan(io.BytesIO(data), path="b.log"))
    assert isinstance(events[-1], TrailingBytes) and events[-1].count == 5
    assert events[-1].position == 1021


def test_impossible_length_is_not_recoverable(segments_dir):
    data = bytearray(_segment_bytes(segments_dir, "A"))
    struct.pack_into(">i", data, 171 + 8, 30)  # below the v2 minimum of 49
    events = list(scan(bytes(data), path="A.log"))
    assert len(events) == 2 and isinstance(events[0], Batch)
    err = events[1]
    assert type(err) is BatchError and not err.recoverable and err.position == 171
    assert "batch length 30 is below the minimum 49 for magic 2" in str(err)
    struct.pack_into(">i", data, 171 + 8, -5)
    err = list(scan(bytes(data), path="A.log"))[-1]
    assert not err.recoverable and "batch length -5 is below the minimum 49" in err.message


def test_unknown_codec_is_recoverable_and_skipped():
    good = encode_batch([(b"k", b"v", 10)], base_offset=0)
    bad = bytearray(encode_batch([(b"k", b"v", 10)], base_offset=1))
    struct.pack_into(">h", bad, 21, 6)  # codec 6
    struct.pack_into(">I", bad, 17, crc32c.crc32c(bytes(bad[21:])))
    events = list(scan(good + bytes(bad) + good, path="x.log"))
    assert [type(e).__name__ for e in events] == ["Batch", "BatchError", "Batch"]
    assert events[1].recoverable and events[1].position == len(good)
    assert "unknown compression codec 6" in events[1].message


def test_zstd_with_legacy_magic_is_recoverable_error():
    blob = bytearray(encode_legacy([(b"k", b"v", 5)], magic=1, compression="gzip"))
    blob[17] = (blob[17] & ~7) | 4
    events = list(scan(bytes(blob) + encode_legacy([(b"a", b"b", 6)], magic=1, base_offset=1)))
    assert isinstance(events[0], BatchError) and events[0].recoverable
    assert "compression codec zstd is not allowed with magic 1" in events[0].message
    assert isinstance(events[1], Batch) and events[1].records[0].key == b"a"


def test_corrupt_compressed_data_names_batch_position():
    first = encode_batch([(b"k", b"v", 1)])
    blob = bytearray(encode_batch([(b"k" * 50, b"v" * 50, 1)] * 4, base_offset=1,
                                  compression="gzip"))
    blob[70:80] = b"\xff" * 10
    events = list(scan(first + bytes(blob), path="g.log"))
    err = next(e for e in events if isinstance(e, BatchError) and not isinstance(e, CrcMismatch))
    assert err.position == len(first) and err.recoverable
    assert "corrupt gzip data" in err.message and str(err).startswith(f"g.log: position {len(first)}:")


def test_record_length_mismatch():
    blob = bytearray(encode_batch([(b"key", b"value", 1)]))
    blob[61] += 2  # record length varint 2 larger (zig-zag: +1)
    with pytest.raises(BatchError) as info:
        list(read_batches(bytes(blob), path="m.log"))
    assert info.value.recoverable and info.value.position == 0
    assert "runs past the records end" in info.value.message or "declares" in info.value.message


def test_empty_batch_and_offset_gaps():
    empty = encode_batch([], base_offset=10, last_offset_delta=4, producer_id=7)
    gappy = encode_batch([OutRecord(b"a", b"1", 100, offset=20),
                          OutRecord(b"b", b"2", 101, offset=27)], base_offset=15)
    batches = list(read_batches(empty + gappy))
    assert (batches[0].base_offset, batches[0].last_offset, batches[0].records_count,
            batches[0].records, batches[0].base_timestamp, batches[0].max_timestamp) == (
        10, 14, 0, [], -1, -1)
    assert (batches[1].base_offset, batches[1].last_offset) == (15, 27)
    assert [r.offset for r in batches[1].records] == [20, 27]
    assert batches[1].position == len(empty)


def test_unknown_magic_is_skipped():
    good = encode_batch([(b"k", b"v", 1)])
    odd = bytearray(good)
    odd[16] = 7
    events = list(scan(bytes(odd) + good))
    assert isinstance(events[0], BatchError) and "unknown magic 7" in events[0].message
    assert isinstance(events[1], Batch)


def test_start_end_range(segments_dir):
    data = _segment_bytes(segments_dir, "A")
    got = list(read_batches(io.BytesIO(data), start=378, end=1085))
    assert [b.position for b in got] == [378, 540, 741, 923]




def test_errors_and_batches_pickle(segments_dir):
    import pickle
    errors = [BatchError("a.log", 5, "bad", recoverable=False), CrcMismatch("a.log", 7, 1, 2),
              TrailingBytes("/x/b.log", 9, 3)]
    for err in errors:
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err) and str(back) == str(err)
        assert (back.path, back.position, back.recoverable) == (err.path, err.position, err.recoverable)
    assert pickle.loads(pickle.dumps(errors[2])).count == 3
    assert pickle.loads(pickle.dumps(errors[1])).computed == 2
    batches = list(read_batches(_segment_bytes(segments_dir, "B")))
    assert pickle.loads(pickle.dumps(batches)) == batches


def test_read_batches_opens_a_path(segments_dir):
    log = next(segments_dir.glob("A__*.log"))
    assert len(list(read_batches(log))) == 15
    assert [b.position for b in read_batches(str(log), start=1889)] == [1889, 2062]
