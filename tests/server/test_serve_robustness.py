"""kgroup serve against hostile input: mutated and truncated requests never hurt the server."""

from __future__ import annotations

import logging
import random
import socket
import struct

import pytest
from kafka.protocol.admin import CreateTopicsRequest, ListGroupsRequest
from kafka.protocol.consumer import (FetchRequest, HeartbeatRequest, JoinGroupRequest,
                                     ListOffsetsRequest, OffsetCommitRequest, OffsetFetchRequest)
from kafka.protocol.metadata import (ApiVersionsRequest, ApiVersionsResponse,
                                     FindCoordinatorRequest, MetadataRequest)
from kafka.protocol.producer import ProduceRequest

from kgroup.protocol import ConnectGroupInstallAssignmentRequest
from kgroup.server.harness import ThreadedBroker, raw_request, read_frame


def _requests():
    from kgroup.records.writer import encode_batch

    batch = encode_batch([(b"k", b"v", 1000), (None, b"w", 1001)], compression="gzip")
    P = ProduceRequest.TopicProduceData
    F = FetchRequest.FetchTopic
    L = ListOffsetsRequest.ListOffsetsTopic
    C = OffsetCommitRequest.OffsetCommitRequestTopic
    return [
        ApiVersionsRequest(version=3, client_software_name="fuzz", client_software_version="1"),
        MetadataRequest(version=12, topics=[MetadataRequest.MetadataRequestTopic(name="t")],
                        allow_auto_topic_creation=False, include_topic_authorized_operations=False),
        ProduceRequest(version=9, transactional_id=None, acks=1, timeout_ms=1000, topic_data=[
            P(name="t", partition_data=[P.PartitionProduceData(index=0, records=batch)])]),
        FetchRequest(version=12, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
                     isolation_level=0, session_id=0, session_epoch=-1, topics=[
                         F(topic="t", partitions=[F.FetchPartition(
                             partition=0, current_leader_epoch=-1, fetch_offset=0,
                             last_fetched_epoch=-1, log_start_offset=-1,
                             partition_max_bytes=1 << 20)])],
                     forgotten_topics_data=[], rack_id=""),
        ListOffsetsRequest(version=7, replica_id=-1, isolation_level=0, topics=[
            L(name="t", partitions=[L.ListOffsetsPartition(
                partition_index=0, current_leader_epoch=-1, timestamp=-1)])]),
        FindCoordinatorRequest(version=4, key_type=0, coordinator_keys=["g"]),
        JoinGroupRequest(version=9, group_id="g", session_timeout_ms=10000,
                         rebalance_timeout_ms=10000, member_id="", group_instance_id=None,
                         protocol_type="consumer", protocols=[
                             JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")],
                         reason=None),
        HeartbeatRequest(version=4, group_id="g", generation_id=1, member_id="m",
                         group_instance_id="i"),
        OffsetCommitRequest(version=8, group_id="g", generation_id_or_member_epoch=-1,
                            member_id="", group_instance_id=None, topics=[
                                C(name="t", partitions=[C.OffsetCommitRequestPartition(
                                    partition_index=0, committed_offset=5,
                                    committed_leader_epoch=-1, committed_metadata="")])]),
        OffsetFetchRequest(version=8, groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
            group_id="g", topics=None)], require_stable=False),
        CreateTopicsRequest(version=7, topics=[CreateTopicsRequest.CreatableTopic(
            name="fuzzed", num_partitions=1, replication_factor=1, assignments=[], configs=[])],
            timeout_ms=1000, validate_only=True),
    ]


def _mutations(payload: bytes, rng: random.Random, count: int):
    for _ in range(count):
        data = bytearray(payload)
        kind = rng.randrange(4)
        if kind == 0:  # flip a few bytes after the api key/version
            for _ in range(rng.randint(1, 4)):
                data[rng.randrange(4, len(data))] = rng.randrange(256)
        elif kind == 1:  # truncate
            del data[rng.randrange(8, len(data)):]
        elif kind == 2:  # trailing garbage
            data += bytes(rng.randrange(256) for _ in range(rng.randint(1, 32)))
        else:  # a length or count field turned huge/negative
            pos = rng.randrange(8, max(9, len(data) - 4))
            data[pos:pos + 4] = rng.choice([b"\x7f\xff\xff\xff", b"\xff\xff\xff\xfe",
                                            b"\x00\x00\xff\xff"])
        yield bytes(data)


def test_mutated_requests_get_kafka_answers_and_never_an_internal_error(tmp_path, caplog):
    b = ThreadedBroker(tmp_path / "logs", topics=[("t", 1)])
    rng = random.Random(20261122)
    answered = closed = 0
    try:
        with caplog.at_level(logging.WARNING, logger="kgroup"):
            for request in _requests():
                request.with_header(correlation_id=11, client_id="fuzz")
                payload = bytes(request.encode(header=True))
                for mutated in _mutations(payload, rng, 25):
                    with socket.create_connection(b.address, timeout=3) as sock:
                        sock.sendall(struct.pack(">i", len(mutated)) + mutated)
                        try:
                            reply = read_frame(sock)
                        except socket.timeout:  # e.g. a JoinGroup parked in a rebalance
                            reply = b""
                    if reply is None:
                        closed += 1
                    else:
                        answered += 1
        internal = [r for r in caplog.records if "internal error" in r.getMessage()
                    or r.levelno >= logging.ERROR]
        assert internal == [], "\n".join(
            logging.Formatter().format(r) for r in internal)
        assert answered > 0 and closed > 0
        raw = raw_request(b.address, ApiVersionsRequest(version=0))
        assert ApiVersionsResponse.decode(raw, version=0, header=True).error_code == 0
        # The log is still well-formed: only validated batches were appended.
        log = b.broker.logdir.partition("t", 0)
        entries = b.run(lambda: list(log.iter_batches()))
        assert all(raw[16] == 2 for _, raw in entries)
    finally:
        b.stop()


def test_a_stalled_client_does_not_block_others(tmp_path):
    b = ThreadedBroker(tmp_path / "logs")
    try:
        stalled = socket.create_connection(b.address, timeout=5)
        stalled.sendall(struct.pack(">i", 1000) + b"\x00\x12")  # half a request, then silence
        hog = socket.create_connection(b.address, timeout=5)
        request = ApiVersionsRequest(version=0)
        request.with_header(correlation_id=1, client_id="hog")
        frame = bytes(request.encode(header=True, framed=True))
        hog.sendall(frame * 2000)  # never reads its answers
        raw = raw_request(b.address, ApiVersionsRequest(version=0))
        assert ApiVersionsResponse.decode(raw, version=0, header=True).error_code == 0
        stalled.close()
        hog.close()
    finally:
        b.stop()


@pytest.mark.parametrize("request_", [
    # found by the frame fuzzer: a null string inside an array of strings reached the handler
    ListGroupsRequest(version=4, states_filter=[None]),
    # ... and a null non-nullable bytes field (the Connect draft's assignor metadata)
    ConnectGroupInstallAssignmentRequest(
        version=0, group_id="g", member_id="m", member_epoch=1, group_epoch=1, error=0,
        members=[ConnectGroupInstallAssignmentRequest.Member(
            member_id="m", connectors_and_tasks=None, metadata_version=0, metadata=None)]),
], ids=["null-string-in-array", "null-bytes"])
def test_a_null_where_kafkas_readers_refuse_one_closes_the_connection(tmp_path, caplog, request_):
    b = ThreadedBroker(tmp_path / "logs")
    try:
        with caplog.at_level(logging.WARNING, logger="kgroup"):
            assert raw_request(b.address, request_) is None
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
        assert any("null" in r.getMessage() for r in caplog.records)
        raw = raw_request(b.address, ApiVersionsRequest(version=0))
        assert ApiVersionsResponse.decode(raw, version=0, header=True).error_code == 0
    finally:
        b.stop()
