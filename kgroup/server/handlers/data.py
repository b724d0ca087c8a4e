"""Produce, Fetch, ListOffsets and OffsetForLeaderEpoch against the partition logs.

Single node, no replication: the high watermark and the last stable offset are the log end offset
(no transactions are accepted), and the leader epoch is always 0.
"""

from __future__ import annotations

import asyncio
import time

from kafka.protocol.consumer import FetchResponse, ListOffsetsResponse
from kafka.protocol.producer import ProduceResponse

from kgroup.kafka_errors import (FETCH_SESSION_ID_NOT_FOUND, INVALID_RECORD, INVALID_REQUEST,
                                 INVALID_REQUIRED_ACKS, INVALID_TOPIC_EXCEPTION, NONE, OFFSET_OUT_OF_RANGE,
                                 RECORD_LIST_TOO_LARGE, TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                 UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION)
from kgroup.server.storage.batches import BatchValidationError, rebase, split_batches
from kgroup.server.storage.log_dir import INTERNAL_TOPICS

LEADER_EPOCH = 0


def _check_epoch(current_leader_epoch):
    """Kafka's answer to a client that believes in another leader epoch than ours (0)."""
    if current_leader_epoch is None or current_leader_epoch < 0 or current_leader_epoch == 0:
        return NONE
    return UNKNOWN_LEADER_EPOCH  # newer than ours


# -- Produce -----------------------------------------------------------------------------

def handle_produce(broker, request, ctx):
    version = request.version
    PR = ProduceResponse.TopicProduceResponse
    PP = PR.PartitionProduceResponse
    if request.acks not in (-1, 0, 1):
        responses = [PR(version=version, name=t.name, partition_responses=[
            PP(version=version, index=p.index, error_code=INVALID_REQUIRED_ACKS, base_offset=-1,
               log_append_time_ms=-1, log_start_offset=-1, record_errors=[],
               error_message=f"acks must be -1, 0 or 1, got {request.acks}")
            for p in t.partition_data]) for t in request.topic_data]
        return ProduceResponse(version=version, responses=responses, throttle_time_ms=0)
    touched = []
    responses = []
    for topic in request.topic_data:
        parts = []
        for pdata in topic.partition_data:
            error, message, base = NONE, None, -1
            log = broker.logdir.partition(topic.name, pdata.index)
            where = f"produce to {topic.name}-{pdata.index}"
            if request.transactional_id is not None:
                error = TRANSACTIONAL_ID_AUTHORIZATION_FAILED
                message = "kgroup serve does not implement transactions"
            elif log is None:
                error = UNKNOWN_TOPIC_OR_PARTITION
                message = f"unknown topic or partition {topic.name}-{pdata.index}"
            elif topic.name in INTERNAL_TOPICS:
                error = INVALID_TOPIC_EXCEPTION
                message = f"cannot append to internal topic {topic.name}"
            elif pdata.records is None or len(pdata.records) == 0:
                error = INVALID_RECORD
                message = f"{where}: no records"
            elif len(pdata.records) > broker.config.message_max_bytes:
                error = RECORD_LIST_TOO_LARGE
                message = (f"{where}: {len(pdata.records)} bytes exceeds message.max.bytes "
                           f"{broker.config.message_max_bytes}")
            else:
                try:
                    headers = split_batches(bytes(pdata.records), where)
                    if any(h.is_transactional or h.is_control for h in headers):
                        raise BatchValidationError(
                            f"{where}: transactional and control batches are not accepted "
                            f"(kgroup serve does not implement transactions)", INVALID_RECORD)
                    producers = broker.partition_producers(topic.name, pdata.index)
                    error, duplicate = producers.check(headers[0])
                    if error != NONE:
                        message = (f"{where}: producer {headers[0].producer_id} epoch "
                                   f"{headers[0].producer_epoch} sequence "
                                   f"{headers[0].base_sequence} rejected")
                    elif duplicate is not None:
                        base = duplicate  # a retry of an acknowledged batch: not written again
                    else:
                        data, _ = rebase(bytes(pdata.records), headers, log.next_offset,
                                         LEADER_EPOCH)
                        base = headers[0].base_offset
                        log.append(data, headers)
                        touched.append(log)
                        for h in headers:
                            if h.producer_id >= 0 and h.base_sequence >= 0:
                                producers.record(h.producer_id, h.producer_epoch,
                                                 h.base_sequence, h.last_offset_delta,
                                                 h.base_offset)
                except BatchValidationError as exc:
                    error, message = exc.error_code, str(exc)
            parts.append(PP(version=version, index=pdata.index, error_code=error, base_offset=base,
                            log_append_time_ms=-1,
                            log_start_offset=log.log_start_offset if log else -1,
                            record_errors=[], error_message=message))
        responses.append(PR(version=version, name=topic.name, partition_responses=parts))
    # Durability: acknowledged data is on disk (fsynced) before the response is sent.
    for log in touched:
        log.flush()
    if touched:
        broker.notify_append()
    if request.acks == 0:
        failed = [f"{t.name}-{p.index}: error {p.error_code}" for t in responses
                  for p in t.partition_responses if p.error_code != NONE]
        if failed:
            # As Kafka: no response for acks=0, but an error closes the connection so the client
            # notices (it then refreshes its metadata).
            from kgroup.server.wire import FrameError

            raise FrameError(f"Produce with acks=0 failed ({'; '.join(failed[:3])}); "
                             f"closing the connection as Kafka does")
        return None
    return ProduceResponse(version=version, responses=responses, throttle_time_ms=0)


# -- InitProducerId (idempotent producers only) -------------------------------------------

def handle_init_producer_id(broker, request, ctx):
    from kafka.protocol.producer import InitProducerIdResponse

    if request.transactional_id is not None:
        # No transaction coordinator: a transactional producer is refused outright.
        return InitProducerIdResponse(version=request.version, throttle_time_ms=0,
                                      error_code=TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                      producer_id=-1, producer_epoch=-1)
    return InitProducerIdResponse(version=request.version, throttle_time_ms=0, error_code=NONE,
                                  producer_id=broker.producer_ids.allocate(), producer_epoch=0)


# -- Fetch -------------------------------------------------------------------------------

def _fetch_once(broker, request):
    version = request.version
    R = FetchResponse.FetchableTopicResponse
    P = R.PartitionData
    budget = request.max_bytes if version >= 3 else 2 ** 31 - 1
    total = 0
    responses = []
    for topic in request.topics:
        parts = []
        for fp in topic.partitions:
            log = broker.logdir.partition(topic.topic, fp.partition)
            error, records, hw, start = NONE, b"", -1, -1
            if log is None:
                error = UNKNOWN_TOPIC_OR_PARTITION
            else:
                hw, start = log.next_offset, log.log_start_offset
                error = _check_epoch(fp.current_leader_epoch if version >= 9 else -1)
                if error == NONE and not start <= fp.fetch_offset <= hw:
                    error = OFFSET_OUT_OF_RANGE
                if error == NONE and fp.fetch_offset < hw:
                    limit = min(fp.partition_max_bytes, max(budget - total, 0))
                    if limit > 0 or total == 0:
                        records = log.read(fp.fetch_offset, max(limit, 1))
                        total += len(records)
            parts.append(P(version=version, partition_index=fp.partition, error_code=error,
                           high_watermark=hw, last_stable_offset=hw, log_start_offset=start,
                           aborted_transactions=[] if version >= 4 else None,
                           preferred_read_replica=-1, records=records))
        responses.append(R(version=version, topic=topic.topic, partitions=parts))
    return responses, total


async def handle_fetch(broker, request, ctx):
    version = request.version
    if version >= 7 and request.session_id != 0:
        return FetchResponse(version=version, throttle_time_ms=0,
                             error_code=FETCH_SESSION_ID_NOT_FOUND, session_id=0, responses=[])
    deadline = time.monotonic() + max(request.max_wait_ms, 0) / 1000.0
    while True:
        waiter = broker.append_waiter()
        responses, total = _fetch_once(broker, request)
        remaining = deadline - time.monotonic()
        errors = any(p.error_code for t in responses for p in t.partitions)
        if total >= max(request.min_bytes, 1) or remaining <= 0 or errors or broker.stopping:
            break
        await asyncio.wait((waiter,), timeout=remaining)
    # A new fetch session is never created (session id 0): clients then send full fetches.
    return FetchResponse(version=version, throttle_time_ms=0, error_code=NONE, session_id=0,
                         responses=responses)


# -- ListOffsets -------------------------------------------------------------------------

LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3


def handle_list_offsets(broker, request, ctx):
    version = request.version
    T = ListOffsetsResponse.ListOffsetsTopicResponse
    P = T.ListOffsetsPartitionResponse
    topics = []
    for topic in request.topics:
        parts = []
        for part in topic.partitions:
            log = broker.logdir.partition(topic.name, part.partition_index)
            error, ts, offset = NONE, -1, -1
            if log is None:
                error = UNKNOWN_TOPIC_OR_PARTITION
            else:
                error = _check_epoch(part.current_leader_epoch if version >= 4 else -1)
            if error == NONE:
                if part.timestamp == LATEST:
                    offset = log.next_offset
                elif part.timestamp == EARLIEST:
                    offset = log.log_start_offset
                elif part.timestamp == MAX_TIMESTAMP:
                    found = log.max_timestamp()
                    if found is not None:
                        offset, ts = found
                elif part.timestamp >= 0:
                    found = log.offset_for_timestamp(part.timestamp)
                    if found is not None:
                        offset, ts = found
                else:
                    error = INVALID_REQUEST  # a special timestamp this version does not know
            parts.append(P(version=version, partition_index=part.partition_index,
                           error_code=error, timestamp=ts, offset=offset,
                           leader_epoch=LEADER_EPOCH if offset >= 0 else -1))
        topics.append(T(version=version, name=topic.name, partitions=parts))
    return ListOffsetsResponse(version=version, throttle_time_ms=0, topics=topics)


# -- OffsetForLeaderEpoch ----------------------------------------------------------------

def handle_offset_for_leader_epoch(broker, request, ctx):
    from kafka.protocol.consumer import OffsetForLeaderEpochResponse as Resp

    version = request.version
    T = Resp.OffsetForLeaderTopicResult
    P = T.EpochEndOffset
    topics = []
    for topic in request.topics:
        parts = []
        for part in topic.partitions:
            log = broker.logdir.partition(topic.topic, part.partition)
            error, epoch, end = NONE, -1, -1
            if log is None:
                error = UNKNOWN_TOPIC_OR_PARTITION
            else:
                error = _check_epoch(part.current_leader_epoch)
            if error == NONE:
                if part.leader_epoch > LEADER_EPOCH:
                    epoch, end = -1, -1  # an epoch we never had: UNDEFINED
                else:
                    epoch, end = LEADER_EPOCH, log.next_offset
            parts.append(P(version=version, error_code=error, partition=part.partition,
                           leader_epoch=epoch, end_offset=end))
        topics.append(T(version=version, topic=topic.topic, partitions=parts))
    return Resp(version=version, throttle_time_ms=0, topics=topics)
