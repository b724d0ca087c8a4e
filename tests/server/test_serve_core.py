"""kgroup serve: framing, ApiVersions, Metadata, Produce/Fetch/ListOffsets, storage and restart."""

from __future__ import annotations

import os
import socket
import struct

import pytest
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, \
    MetadataResponse
from kafka.protocol.producer import ProduceRequest, ProduceResponse

from kgroup.server.handlers.apis import build_api_table
from kgroup.server.harness import ThreadedBroker, raw_request, read_frame

EXPECTED_VERSIONS = {
    0: (3, 11), 1: (4, 12), 2: (1, 7), 3: (0, 12), 8: (2, 10), 9: (1, 10), 10: (0, 6), 11: (0, 9),
    12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 18: (0, 4), 19: (2, 7),
    22: (0, 4), 23: (2, 4), 37: (0, 3), 42: (0, 3), 47: (0, 0), 68: (0, 1), 69: (0, 1),
    1000: (0, 0), 1001: (0, 0), 1002: (0, 0),      # the Connect draft's APIs, experimental
    1003: (0, 0), 1004: (0, 0),                    # kgroup's SetConnectors and Describe, experimental
}


@pytest.fixture
def broker(tmp_path):
    b = ThreadedBroker(tmp_path / "logs", topics=[("t", 2)])
    yield b
    b.stop()


def _api_versions_bytes(version, correlation_id=9):
    # header v1/v2 client id is a plain int16 string; body bytes after it do not matter for v>4
    return (struct.pack(">hhih", 18, version, correlation_id, 4) + b"test" + b"\x00"
            + b"\x00\x00\x00")


def _send_raw(address, payload):
    with socket.create_connection(address, timeout=5) as sock:
        sock.sendall(struct.pack(">i", len(payload)) + payload)
        return read_frame(sock)


def test_api_versions_v3_lists_exactly_the_implemented_versions(broker):
    raw = raw_request(broker.address, ApiVersionsRequest(
        version=3, client_software_name="t", client_software_version="1"), correlation_id=77)
    # The ApiVersions response header is never flexible: correlation id, then the body.
    assert raw[:4] == struct.pack(">i", 77)
    assert raw[4:6] == b"\x00\x00"  # error_code straight after, no tagged-field byte
    resp = ApiVersionsResponse.decode(raw, version=3, header=True)
    assert resp.error_code == 0
    assert {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys} == EXPECTED_VERSIONS
    assert set(build_api_table()) == set(EXPECTED_VERSIONS)
    # Transactions are not implemented, so not advertised (InitProducerId is, for idempotence).
    assert not {24, 25, 26, 28} & set(EXPECTED_VERSIONS)


def test_unsupported_api_versions_version_gets_v0_error_listing_versions(broker):
    raw = _send_raw(broker.address, _api_versions_bytes(9, correlation_id=5))
    assert raw[:4] == struct.pack(">i", 5)
    resp = ApiVersionsResponse.decode(raw[4:], version=0)
    assert resp.error_code == 35
    # Kafka lists only ApiVersions' own range so the client can retry with a known version.
    assert [(k.api_key, k.min_version, k.max_version) for k in resp.api_keys] == [(18, 0, 4)]


@pytest.mark.parametrize("payload", [
    struct.pack(">hhih", 999, 0, 1, -1),                     # unknown API key
    struct.pack(">hhih", 3, 99, 1, -1),                      # Metadata v99
    struct.pack(">hhih", 3, 12, 1, 2) + b"ab" + b"\x00\xff",  # Metadata v12, truncated body
    b"\x00\x03",                                             # shorter than a header
])
def test_bad_requests_close_only_that_connection(broker, payload):
    with socket.create_connection(broker.address, timeout=5) as good:
        assert _send_raw(broker.address, payload) is None  # closed without an answer
        good_req = MetadataRequest(version=12, topics=None, allow_auto_topic_creation=False,
                                   include_topic_authorized_operations=False)
        good_req.with_header(correlation_id=3, client_id="good")
        good.sendall(bytes(good_req.encode(header=True, framed=True)))
        resp = MetadataResponse.decode(read_frame(good), version=12, header=True)
        assert sorted(t.name for t in resp.topics) == ["__consumer_offsets", "t"]


def test_oversized_frame_closes_connection(tmp_path):
    b = ThreadedBroker(tmp_path / "logs", config={"socket.request.max.bytes": "1000"})
    try:
        with socket.create_connection(b.address, timeout=5) as sock:
            sock.sendall(struct.pack(">i", 1001) + b"\x00" * 16)
            assert read_frame(sock) is None
        with socket.create_connection(b.address, timeout=5) as sock:
            sock.sendall(struct.pack(">i", -5))
            assert read_frame(sock) is None
        raw = raw_request(b.address, ApiVersionsRequest(version=0))
        assert ApiVersionsResponse.decode(raw, version=0, header=True).error_code == 0
    finally:
        b.stop()


def test_metadata_lists_topics_and_offsets_partitions(broker):
    raw = raw_request(broker.address, MetadataRequest(
        version=12, topics=None, allow_auto_topic_creation=False,
        include_topic_authorized_operations=False))
    resp = MetadataResponse.decode(raw, version=12, header=True)
    assert [(b.node_id, b.host, b.port) for b in resp.brokers] == [(0, *broker.address)]
    topics = {t.name: t for t in resp.topics}
    assert len(topics["__consumer_offsets"].partitions) == 50
    assert topics["__consumer_offsets"].is_internal is True
    assert [p.partition_index for p in topics["t"].partitions] == [0, 1]
    assert all(p.leader_id == 0 and p.replica_nodes == [0] for p in topics["t"].partitions)


def test_metadata_auto_creates_with_num_partitions(tmp_path):
    b = ThreadedBroker(tmp_path / "logs", config={"num.partitions": "3"})
    try:
        raw = raw_request(b.address, MetadataRequest(
            version=9, topics=[MetadataRequest.MetadataRequestTopic(name="auto")],
            allow_auto_topic_creation=True, include_topic_authorized_operations=False))
        resp = MetadataResponse.decode(raw, version=9, header=True)
        assert [(t.name, t.error_code, len(t.partitions)) for t in resp.topics] == [("auto", 0, 3)]
        assert sorted(os.listdir(tmp_path / "logs" / "auto-2")) == [
            "00000000000000000000.log", "partition.metadata"]
    finally:
        b.stop()


def _produce_raw(address, records, version=9):
    P = ProduceRequest.TopicProduceData
    req = ProduceRequest(version=version, transactional_id=None, acks=-1, timeout_ms=1000,
                         topic_data=[P(name="t", partition_data=[
                             P.PartitionProduceData(index=0, records=records)])])
    return ProduceResponse.decode(raw_request(address, req), version=version, header=True)


def test_produce_rejects_a_corrupt_batch_and_keeps_the_log_clean(broker):
    from kgroup.records.writer import encode_batch

    good = encode_batch([(b"k", b"v", 1000)], base_offset=0)
    bad = bytearray(good)
    bad[-1] ^= 0xFF  # flips a value byte: CRC no longer matches
    resp = _produce_raw(broker.address, bytes(bad))
    part = resp.responses[0].partition_responses[0]
    assert part.error_code == 2  # CORRUPT_MESSAGE
    assert "CRC-32C" in part.error_message
    resp = _produce_raw(broker.address, good + good)  # two batches in one request
    part = resp.responses[0].partition_responses[0]
    assert (part.error_code, part.base_offset) == (0, 0)
    assert broker.run(lambda: broker.broker.logdir.partition("t", 0).next_offset) == 2


def test_kafka_python_produce_fetch_list_offsets_and_restart(tmp_path):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    logs = tmp_path / "logs"
    b = ThreadedBroker(logs, topics=[("t", 2)])
    try:
        producer = KafkaProducer(bootstrap_servers=b.bootstrap, enable_idempotence=False,
                                 compression_type="gzip")
        sent = [producer.send("t", key=b"k%d" % i, value=b"v%d" % i, partition=i % 2,
                              timestamp_ms=1_000_000 + i * 10) for i in range(10)]
        producer.flush()
        assert [(f.get().partition, f.get().offset) for f in sent] == [
            (i % 2, i // 2) for i in range(10)]
        producer.close()
        tps = [TopicPartition("t", 0), TopicPartition("t", 1)]
        consumer = KafkaConsumer(bootstrap_servers=b.bootstrap, enable_auto_commit=False,
                                 consumer_timeout_ms=1500)
        consumer.assign(tps)
        consumer.seek(tps[1], 2)
        consumer.seek(tps[0], 0)
        got = sorted((m.partition, m.offset, m.key, m.value, m.timestamp) for m in consumer)
        assert got == sorted(
            [(0, i // 2, b"k%d" % i, b"v%d" % i, 1_000_000 + i * 10) for i in range(0, 10, 2)]
            + [(1, i // 2, b"k%d" % i, b"v%d" % i, 1_000_000 + i * 10) for i in range(5, 10, 2)])
        assert consumer.end_offsets(tps) == {tps[0]: 5, tps[1]: 5}
        assert consumer.beginning_offsets(tps) == {tps[0]: 0, tps[1]: 0}
        found = consumer.offsets_for_times({tps[0]: 1_000_040, tps[1]: 9_000_000})
        assert found[tps[1]] is None
        assert (found[tps[0]].offset, found[tps[0]].timestamp) == (2, 1_000_040)
        consumer.close()
        topic_id = b.run(lambda: b.broker.logdir.topics["t"].topic_id)
    finally:
        b.stop()
    # Torn write at the end of a segment (a crash mid-append): recovery truncates it.
    segment = logs / "t-0" / "00000000000000000000.log"
    intact = segment.stat().st_size
    with open(segment, "ab") as fh:
        fh.write(b"\x00" * 30)
    b = ThreadedBroker(logs)
    try:
        assert segment.stat().st_size == intact
        assert b.run(lambda: b.broker.logdir.topics["t"].topic_id) == topic_id
        producer = KafkaProducer(bootstrap_servers=b.bootstrap, enable_idempotence=False)
        meta = producer.send("t", value=b"after", partition=0).get(timeout=10)
        assert meta.offset == 5
        producer.close()
    finally:
        b.stop()


def test_500_concurrent_connections(broker):
    import resource

    # Client and server share this process: 1,000 sockets plus the segments.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < 4096:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(4096, hard), hard))
    request = ApiVersionsRequest(version=0)
    request.with_header(correlation_id=1, client_id="many")
    frame = bytes(request.encode(header=True, framed=True))
    socks = [socket.create_connection(broker.address, timeout=10) for _ in range(500)]
    try:
        for sock in socks:
            sock.sendall(frame)
        answers = [ApiVersionsResponse.decode(read_frame(s), version=0, header=True)
                   for s in socks]
        assert all(a.error_code == 0 and len(a.api_keys) == len(EXPECTED_VERSIONS)
                   for a in answers)
    finally:
        for sock in socks:
            sock.close()


def test_segments_roll_at_log_segment_bytes_and_reads_cross_them(tmp_path):
    from kafka import KafkaConsumer, TopicPartition
    from kgroup.records.writer import encode_batch

    logs = tmp_path / "logs"
    b = ThreadedBroker(logs, topics=[("t", 1)], config={"log.segment.bytes": "300"})
    try:
        for i in range(6):  # 3 records per batch, each batch ~100 bytes
            batch = encode_batch([(b"k", b"value-%02d-%d" % (i, j), 5000 + i) for j in range(3)])
            part = _produce_raw(b.address, batch).responses[0].partition_responses[0]
            assert (part.error_code, part.base_offset) == (0, 3 * i)
    finally:
        b.stop()
    names = sorted(p.name for p in (logs / "t-0").glob("*.log"))
    assert len(names) >= 2 and names[0] == "00000000000000000000.log"
    bases = [int(n[:-4]) for n in names]
    assert all(base % 3 == 0 for base in bases)  # every segment starts on a batch boundary
    assert all((logs / "t-0" / n).stat().st_size <= 300 for n in names)
    b = ThreadedBroker(logs, config={"log.segment.bytes": "300"})
    try:
        consumer = KafkaConsumer(bootstrap_servers=b.bootstrap, enable_auto_commit=False,
                                 consumer_timeout_ms=1500, max_partition_fetch_bytes=150)
        consumer.assign([TopicPartition("t", 0)])
        consumer.seek(TopicPartition("t", 0), 4)  # inside the second batch
        got = [(m.offset, m.value) for m in consumer]
        consumer.close()
        assert got == [(3 * i + j, b"value-%02d-%d" % (i, j))
                       for i in range(6) for j in range(3) if 3 * i + j >= 4]
        found = b.run(lambda: b.broker.logdir.partition("t", 0).offset_for_timestamp(5003))
        assert found == (9, 5003)
    finally:
        b.stop()


def test_legacy_or_damaged_segments_stop_start_up_untouched(tmp_path, segments_dir):
    from kgroup.server.broker import Broker
    from kgroup.server.storage.partition_log import LogCorruptError
    import asyncio
    import shutil

    legacy = tmp_path / "logs" / "old-0" / "00000000000000000000.log"
    legacy.parent.mkdir(parents=True)
    shutil.copy(segments_dir / "B__consumer_offsets-12__00000000000000000000.log", legacy)
    before = legacy.read_bytes()
    with pytest.raises(LogCorruptError, match=r"old-0/00000000000000000000.log: byte 0: magic [01]"):
        asyncio.run(Broker(str(tmp_path / "logs")).start())
    assert legacy.read_bytes() == before


def _response_class(request_class):
    import kafka.protocol.admin as admin
    import kafka.protocol.consumer as consumer
    import kafka.protocol.metadata as metadata
    import kafka.protocol.producer as producer

    import kgroup.protocol as kip848

    name = request_class.__name__.replace("Request", "Response")
    if request_class.__module__ == kip848.__name__:     # kgroup's own declaration (e.g. DeleteGroups v3)
        return getattr(kip848, name)
    return next(getattr(m, name) for m in (admin, consumer, metadata, producer, kip848)
                if hasattr(m, name))


def test_every_advertised_version_is_answered_and_the_next_one_refused(broker):
    overrides = {0: {"acks": -1}, 18: {"client_software_name": "sweep",
                                       "client_software_version": "1.0"}}
    answered = 0
    for key, (request_class, lo, hi, _fn) in sorted(build_api_table().items()):
        for version in range(lo, hi + 1):
            fields = {k: v for k, v in overrides.get(key, {}).items()
                      if version >= 3 or key != 18}
            request = request_class(version=version, **fields)
            raw = raw_request(broker.address, request, correlation_id=1000 + version)
            assert raw is not None, f"{request_class.__name__} v{version} closed the connection"
            response = _response_class(request_class).decode(raw, version=version, header=True)
            assert response.header.correlation_id == 1000 + version
            answered += 1
        if key != 18:  # just outside the advertised range: Kafka closes the connection
            for outside in {hi + 1, lo - 1} - {-1}:
                header = struct.pack(">hhih", key, outside, 2, -1)
                assert _send_raw(broker.address, header + b"\x00" * 16) is None, (key, outside)
    assert answered == sum(hi - lo + 1 for _c, lo, hi, _f in build_api_table().values())


def test_api_versions_v3_with_an_invalid_software_name_is_invalid_request(broker):
    with socket.create_connection(broker.address, timeout=5) as sock:
        bad = ApiVersionsRequest(version=3, client_software_name="-bad name",
                                 client_software_version="1")
        bad.with_header(correlation_id=4, client_id="t")
        sock.sendall(bytes(bad.encode(header=True, framed=True)))
        raw = read_frame(sock)
        # Kafka answers at the request's version: error 42, no API list; the connection stays up.
        assert raw == struct.pack(">ihBiB", 4, 42, 1, 0, 0)
        good = ApiVersionsRequest(version=3, client_software_name="ok-name",
                                  client_software_version="1.2.3")
        good.with_header(correlation_id=5, client_id="t")
        sock.sendall(bytes(good.encode(header=True, framed=True)))
        resp = ApiVersionsResponse.decode(read_frame(sock), version=3, header=True)
        assert resp.error_code == 0 and len(resp.api_keys) == len(EXPECTED_VERSIONS)


def test_a_topic_that_cannot_be_created_whole_leaves_nothing_behind(broker, tmp_path, monkeypatch):
    import errno

    from kafka.protocol.admin import CreateTopicsRequest, CreateTopicsResponse
    from kgroup.server.storage import log_dir as storage

    real = storage.PartitionLog
    opened = []

    def flaky(path, *args):
        if len(opened) == 3:
            raise OSError(errno.EMFILE, "Too many open files")
        opened.append(path)
        return real(path, *args)

    monkeypatch.setattr(storage, "PartitionLog", flaky)
    req = CreateTopicsRequest(version=7, topics=[CreateTopicsRequest.CreatableTopic(
        name="big", num_partitions=8, replication_factor=-1, assignments=[], configs=[])],
        timeout_ms=1000, validate_only=False)
    resp = CreateTopicsResponse.decode(raw_request(broker.address, req), version=7, header=True)
    (result,) = resp.topics
    assert (result.name, result.error_code) == ("big", 56)  # KAFKA_STORAGE_ERROR
    assert "Too many open files" in result.error_message
    assert not list((tmp_path / "logs").glob("big-*"))
    assert broker.run(lambda: "big" in broker.broker.logdir.topics) is False
    monkeypatch.setattr(storage, "PartitionLog", real)
    resp = CreateTopicsResponse.decode(raw_request(broker.address, req), version=7, header=True)
    assert resp.topics[0].error_code == 0
    assert len(list((tmp_path / "logs").glob("big-*"))) == 8


def test_produce_acks_0_is_silent_but_an_error_closes_the_connection(broker):
    from kgroup.records.writer import encode_batch

    P = ProduceRequest.TopicProduceData

    def produce(sock, topic, correlation_id):
        req = ProduceRequest(version=9, transactional_id=None, acks=0, timeout_ms=1000,
                             topic_data=[P(name=topic, partition_data=[P.PartitionProduceData(
                                 index=0, records=encode_batch([(None, b"v", 1000)]))])])
        req.with_header(correlation_id=correlation_id, client_id="acks0")
        sock.sendall(bytes(req.encode(header=True, framed=True)))

    with socket.create_connection(broker.address, timeout=5) as sock:
        produce(sock, "t", 1)  # no response ...
        ping = ApiVersionsRequest(version=0)
        ping.with_header(correlation_id=2, client_id="acks0")
        sock.sendall(bytes(ping.encode(header=True, framed=True)))
        raw = read_frame(sock)  # ... so the next answer is the ApiVersions one
        assert ApiVersionsResponse.decode(raw, version=0, header=True).header.correlation_id == 2
        produce(sock, "no-such-topic", 3)  # Kafka closes the connection on an acks=0 error
        assert read_frame(sock) is None
    assert broker.run(lambda: broker.broker.logdir.partition("t", 0).next_offset) == 1


def _segment_of_three_batches(tmp_path):
    from kgroup.records.writer import encode_batch

    directory = tmp_path / "t-0"
    directory.mkdir()
    batches = [encode_batch([(b"k", b"v%d" % i, 1000 + i)], base_offset=i) for i in range(3)]
    segment = directory / "00000000000000000000.log"
    segment.write_bytes(b"".join(batches))
    return directory, segment, batches


def test_damage_before_valid_batches_in_the_last_segment_stops_start_up(tmp_path):
    """Not a torn write: truncating at the damage would silently drop every later batch."""
    from kgroup.server.storage.partition_log import LogCorruptError, PartitionLog

    directory, segment, batches = _segment_of_three_batches(tmp_path)
    data = bytearray(segment.read_bytes())
    data[len(batches[0]) + 40] ^= 0xFF  # a record byte of the second batch: its CRC fails
    segment.write_bytes(bytes(data))
    with pytest.raises(LogCorruptError, match=rf"byte {len(batches[0])}: CRC-32C mismatch, and a valid "
                                              rf"batch follows at byte {len(batches[0]) + len(batches[1])}"):
        PartitionLog(str(directory))
    assert segment.read_bytes() == bytes(data)  # untouched


def test_torn_tail_is_truncated_with_a_warning(tmp_path, caplog):
    from kgroup.server.storage.partition_log import PartitionLog

    directory, segment, batches = _segment_of_three_batches(tmp_path)
    whole = b"".join(batches)
    segment.write_bytes(whole[:-7])  # the last append cut short
    with caplog.at_level("WARNING", logger="kgroup.server"):
        plog = PartitionLog(str(directory))
    assert plog.next_offset == 2 and plog.truncated_bytes == len(batches[2]) - 7
    assert segment.read_bytes() == batches[0] + batches[1]
    assert f"byte {len(batches[0]) + len(batches[1])}" in caplog.text and "truncated" in caplog.text


def test_list_offsets_with_a_newer_leader_epoch_is_unknown_leader_epoch(broker):
    """As Kafka's Partition.checkCurrentLeaderEpoch: an epoch newer than the leader's (0) is
    UNKNOWN_LEADER_EPOCH (75); FENCED_LEADER_EPOCH (74) is for an older one, which 0 has none of."""
    from kafka.protocol.consumer import ListOffsetsRequest, ListOffsetsResponse

    L = ListOffsetsRequest.ListOffsetsTopic
    codes = []
    for epoch in (-1, 0, 3):
        request = ListOffsetsRequest(version=7, replica_id=-1, isolation_level=0, topics=[
            L(name="t", partitions=[L.ListOffsetsPartition(
                partition_index=0, current_leader_epoch=epoch, timestamp=-1)])])
        response = ListOffsetsResponse.decode(raw_request(broker.address, request), version=7, header=True)
        codes.append(response.topics[0].partitions[0].error_code)
    assert codes == [0, 0, 75]
