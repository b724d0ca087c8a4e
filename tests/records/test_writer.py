"""The writer: byte-exact against Kafka's batches, and write->read round trips for every codec."""

import io
import struct

import pytest
from kafka.record import MemoryRecords

from kgroup.records.batch import read_batches
from kgroup.records.codecs import CODEC_NAMES, CodecError, compress, decompress
from kgroup.records.writer import (LogWriter, OutRecord, encode_batch, encode_control_batch,
                                   encode_legacy, zigzag_varint)

RECORDS = [OutRecord(b"key-%d" % i, (b"value-%d" % i) * (i + 1), 1700000000000 + i)
           for i in range(40)] + [OutRecord(b"tomb", None, 1700000000100)]


def _same_options(batch):
    return dict(base_offset=batch.base_offset, partition_leader_epoch=batch.partition_leader_epoch,
                producer_id=batch.producer_id, producer_epoch=batch.producer_epoch,
                base_sequence=batch.base_sequence, transactional=batch.is_transactional,
                control=batch.is_control, delete_horizon_ms=batch.delete_horizon_ms,
                last_offset_delta=batch.last_offset - batch.base_offset)


def test_uncompressed_v2_vectors_are_reproduced_byte_for_byte(kafka_vectors):
    checked = 0
    for vec in kafka_vectors:
        if vec["category"] != "batch":
            continue
        raw = bytes.fromhex(vec["hex"])
        [batch] = read_batches(raw)
        if batch.magic != 2 or batch.compression != "none" or batch.timestamp_type != "CreateTime":
            continue
        assert encode_batch(batch.records, **_same_options(batch)) == raw, vec["name"]
        checked += 1
    assert checked == 11


def test_uncompressed_legacy_vectors_are_reproduced(kafka_vectors):
    by_name = {v["name"].split()[0]: bytes.fromhex(v["hex"]) for v in kafka_vectors
               if v["category"] == "batch"}
    for name, magic in (("B0", 0), ("B3", 1)):
        [batch] = read_batches(by_name[name])
        assert encode_legacy(batch.records, magic=magic, base_offset=batch.base_offset) == by_name[name]


def test_control_batch_matches_kafka(kafka_vectors):
    vec = next(v for v in kafka_vectors if v["name"].startswith("A8 "))
    assert encode_control_batch("COMMIT", producer_id=4000, producer_epoch=0, coordinator_epoch=5,
                                base_offset=18, timestamp=1700000000022) == bytes.fromhex(vec["hex"])
    with pytest.raises(ValueError, match="unknown control marker 'MAYBE'"):
        encode_control_batch("MAYBE", producer_id=1, producer_epoch=0, coordinator_epoch=0)


@pytest.mark.parametrize("codec", CODEC_NAMES)
def test_v2_round_trip_every_codec(codec):
    blob = encode_batch(RECORDS, base_offset=500, compression=codec, producer_id=9,
                        producer_epoch=2, base_sequence=7, partition_leader_epoch=4)
    [batch] = read_batches(blob)
    assert (batch.compression, batch.crc_valid, batch.size) == (codec, True, len(blob))
    assert (batch.base_offset, batch.last_offset, batch.records_count) == (500, 540, 41)
    assert (batch.base_timestamp, batch.max_timestamp) == (1700000000000, 1700000000100)
    assert (batch.producer_id, batch.producer_epoch, batch.partition_leader_epoch) == (9, 2, 4)
    assert [(r.offset, r.timestamp, r.sequence, r.key, r.value) for r in batch.records] == [
        (500 + i, r.timestamp, 7 + i, r.key, r.value) for i, r in enumerate(RECORDS)]
    assert batch.records[-1].value_size == -1
    if codec == "snappy":  # kafka-python needs python-snappy, which is not installed
        return
    # kafka-python agrees about every record
    theirs = MemoryRecords(blob).next_batch()
    assert [(r.offset, r.key, r.value) for r in theirs] == [
        (500 + i, r.key, r.value) for i, r in enumerate(RECORDS)]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_legacy_round_trip_every_codec(magic, codec):
    recs = RECORDS[:5]
    blob = encode_legacy(recs, magic=magic, compression=codec, base_offset=100)
    batches = list(read_batches(blob))
    records = [r for b in batches for r in b.records]
    assert [(r.offset, r.key, r.value, r.is_valid) for r in records] == [
        (100 + i, r.key, r.value, True) for i, r in enumerate(recs)]
    want_ts = [r.timestamp for r in recs] if magic == 1 else [-1] * 5
    assert [r.timestamp for r in records] == want_ts
    assert all(b.crc_valid and b.magic == magic for b in batches)
    if codec == "none":
        assert len(batches) == 5
    else:
        [b] = batches
        assert (b.base_offset, b.last_offset, b.compression) == (100, 104, codec)
        assert b.timestamp_type == ("NoTimestampType" if magic == 0 else "CreateTime")
        assert b.max_timestamp == (-1 if magic == 0 else recs[-1].timestamp)
        if codec == "snappy":
            return
        theirs = [(r.offset, r.key, r.value) for r in MemoryRecords(blob).next_batch()]
        assert theirs == [(100 + i, r.key, r.value) for i, r in enumerate(recs)]


def test_magic0_lz4_has_kafkas_wrong_header_checksum():
    blob = compress(3, b"payload" * 100, magic=0)
    import lz4.frame
    with pytest.raises(RuntimeError):
        lz4.frame.decompress(blob)
    assert decompress(3, blob, magic=0) == b"payload" * 100


def test_legacy_log_append_time_and_wrapper_offset_zero():
    recs = [OutRecord(b"a", b"1", 10), OutRecord(b"b", b"2", 11)]
    [b] = read_batches(encode_legacy(recs, magic=1, compression="gzip", base_offset=50,
                                     log_append_time=999))
    assert (b.timestamp_type, b.max_timestamp) == ("LogAppendTime", 999)
    assert [(r.offset, r.timestamp) for r in b.records] == [(50, 999), (51, 999)]
    [b] = read_batches(encode_legacy(recs, magic=1, compression="snappy", wrapper_offset=0))
    assert [r.offset for r in b.records] == [0, 1] and b.last_offset == 0


def test_zstd_not_allowed_for_legacy():
    with pytest.raises(ValueError, match="not available for magic 1"):
        encode_legacy(RECORDS[:1], magic=1, compression="zstd")
    with pytest.raises(CodecError, match="zstd is not allowed with magic 0"):
        compress(4, b"x", magic=0)


def test_zstd_frame_has_no_content_size():
    import zstandard
    blob = compress(4, b"abc" * 1000)
    assert zstandard.get_frame_parameters(blob).content_size == zstandard.CONTENTSIZE_UNKNOWN
    assert decompress(4, blob) == b"abc" * 1000


def test_snappy_is_xerial_framed_and_raw_is_read_too():
    import cramjam
    data = bytes(range(256)) * 500  # > one 32 KiB xerial block
    blob = compress(2, data)
    assert blob[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    assert decompress(2, blob) == data
    assert decompress(2, bytes(cramjam.snappy.compress_raw(data))) == data


def test_gzip_is_a_gzip_member():
    import gzip
    assert gzip.decompress(compress(1, b"hello")) == b"hello"


def test_log_append_time_v2_and_delete_horizon():
    blob = encode_batch(RECORDS[:3], log_append_time=1700000009999, delete_horizon_ms=1700086400000)
    [b] = read_batches(blob)
    assert b.attributes == 8 | 64
    assert b.delete_horizon_ms == 1700086400000 == b.base_timestamp
    assert [r.timestamp for r in b.records] == [1700000009999] * 3


def test_headers_round_trip():
    rec = OutRecord(b"k", b"v", 5, headers=[("trace", b"\x00\x01"), ("ümlaut", None)])
    [b] = read_batches(encode_batch([rec]))
    assert b.records[0].headers == [("trace", b"\x00\x01"), ("ümlaut", None)]


def test_zigzag_varint():
    assert zigzag_varint(0) == b"\x00"
    assert zigzag_varint(-1) == b"\x01"
    assert zigzag_varint(63) == b"\x7e"
    assert zigzag_varint(64) == b"\x80\x01"
    assert zigzag_varint(-65) == b"\x81\x01"
    assert zigzag_varint(300) == b"\xd8\x04"
    assert zigzag_varint(-(2 ** 63)) == b"\xff" * 9 + b"\x01"


def test_log_writer_assigns_offsets_and_positions():
    f = io.BytesIO()
    w = LogWriter(f, next_offset=10)
    assert w.append(RECORDS[:3], timestamp=1) == (10, 12)
    assert w.append_control("ABORT", producer_id=5, producer_epoch=1, coordinator_epoch=3) == (13, 13)
    assert w.append([], last_offset_delta=2) == (14, 16)
    assert w.append([(b"k", b"v")], compression="zstd") == (17, 17)
    batches = list(read_batches(f.getvalue()))
    assert [(b.base_offset, b.last_offset) for b in batches] == [(10, 12), (13, 13), (14, 16), (17, 17)]
    assert batches[1].records[0].control == "ABORT"
    assert w.bytes_written == len(f.getvalue()) == sum(b.size for b in batches)


def test_bad_writer_input():
    with pytest.raises(ValueError, match="unknown compression 'brotli'"):
        encode_batch([], compression="brotli")
    with pytest.raises(ValueError, match="below the batch base offset 10"):
        encode_batch([OutRecord(b"k", b"v", 1, offset=3)], base_offset=10)
    with pytest.raises(ValueError, match="legacy magic must be 0 or 1"):
        encode_legacy([], magic=2)


def test_gzip_concatenated_members_are_all_read():
    assert decompress(1, compress(1, b"one,") + compress(1, b"two")) == b"one,two"


def test_truncated_blobs_are_codec_errors():
    for codec in (1, 2, 3, 4):
        blob = compress(codec, bytes(range(256)) * 64)
        with pytest.raises(CodecError, match=f"corrupt {CODEC_NAMES[codec]} data"):
            decompress(codec, blob[: len(blob) // 2])
    with pytest.raises(CodecError, match="unknown compression codec 6"):
        decompress(6, b"")


@pytest.mark.parametrize("codec", [1, 3, 4])
def test_decompression_bombs_are_codec_errors(codec, monkeypatch):
    import kgroup.records.codecs as codecs
    monkeypatch.setattr(codecs, "MAX_DECOMPRESSED", 100_000)
    blob = compress(codec, b"\x00" * 1_000_000)
    with pytest.raises(CodecError, match="decompresses to more than 100000 bytes"):
        decompress(codec, blob)
    assert decompress(codec, compress(codec, b"\x00" * 100_000)) == b"\x00" * 100_000


def test_zstd_large_blob_fed_in_pieces():
    import random
    data = random.Random(1).randbytes(20_000) * 3 + b"tail"
    blob = compress(4, data)
    assert len(blob) > 4096 and decompress(4, blob) == data
    with pytest.raises(CodecError, match="frame ends early"):
        decompress(4, blob[:-10])


def test_legacy_rejects_headers():
    with pytest.raises(ValueError, match="magic 1 messages cannot carry record headers"):
        encode_legacy([OutRecord(b"k", b"v", 1, headers=[("h", b"x")])], magic=1)
