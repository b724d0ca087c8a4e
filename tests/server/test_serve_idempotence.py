"""kgroup serve: idempotent producers (InitProducerId, sequence checks, dedup across restart)."""

from __future__ import annotations

from kafka.protocol.producer import (InitProducerIdRequest, InitProducerIdResponse, ProduceRequest,
                                     ProduceResponse)

from kgroup.server.harness import ThreadedBroker, raw_request


def init_producer_id(address, transactional_id=None):
    req = InitProducerIdRequest(version=4, transactional_id=transactional_id,
                                transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1)
    resp = InitProducerIdResponse.decode(raw_request(address, req), version=4, header=True)
    return resp.error_code, resp.producer_id, resp.producer_epoch


def produce(address, pid, epoch, seq, count=3):
    from kgroup.records.writer import encode_batch

    batch = encode_batch([(None, b"r%d" % (seq + i), 1000) for i in range(count)],
                         producer_id=pid, producer_epoch=epoch, base_sequence=seq)
    P = ProduceRequest.TopicProduceData
    req = ProduceRequest(version=9, transactional_id=None, acks=-1, timeout_ms=1000,
                         topic_data=[P(name="t", partition_data=[
                             P.PartitionProduceData(index=0, records=batch)])])
    part = ProduceResponse.decode(raw_request(address, req), version=9,
                                  header=True).responses[0].partition_responses[0]
    return part.error_code, part.base_offset


def test_sequences_dedup_and_survive_restart(tmp_path):
    logs = tmp_path / "logs"
    b = ThreadedBroker(logs, topics=[("t", 1)])
    try:
        assert init_producer_id(b.address, "txn") == (53, -1, -1)
        error, pid, epoch = init_producer_id(b.address)
        assert (error, pid, epoch) == (0, 0, 0)
        assert init_producer_id(b.address)[1] == 1
        assert produce(b.address, pid, 0, 0) == (0, 0)
        assert produce(b.address, pid, 0, 0) == (0, 0)      # retry: acknowledged, not rewritten
        assert produce(b.address, pid, 0, 3) == (0, 3)
        assert produce(b.address, pid, 0, 10) == (45, -1)   # gap: OUT_OF_ORDER_SEQUENCE_NUMBER
        assert produce(b.address, 7, 0, 5) == (45, -1)      # unknown producer must start at 0
        assert produce(b.address, pid, 1, 0) == (0, 6)      # new epoch restarts at 0
        assert produce(b.address, pid, 0, 6) == (47, -1)    # older epoch: INVALID_PRODUCER_EPOCH
        assert b.run(lambda: b.broker.logdir.partition("t", 0).next_offset) == 9
    finally:
        b.stop()
    b = ThreadedBroker(logs)
    try:
        assert produce(b.address, pid, 1, 0) == (0, 6)      # state rebuilt from the log
        assert produce(b.address, pid, 1, 3) == (0, 9)
        assert init_producer_id(b.address)[1] == 1000       # ids of the old block are never reused
    finally:
        b.stop()


def test_default_idempotent_clients_write_exactly_once(tmp_path):
    from confluent_kafka import Producer
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    b = ThreadedBroker(tmp_path / "logs", topics=[("t", 1)])
    try:
        kp = KafkaProducer(bootstrap_servers=b.bootstrap)  # idempotent by default
        for i in range(5):
            kp.send("t", value=b"kp%d" % i)
        kp.flush()
        kp.close()
        rp = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True})
        for i in range(5):
            rp.produce("t", value=b"rk%d" % i)
        assert rp.flush(10) == 0
        consumer = KafkaConsumer(bootstrap_servers=b.bootstrap, enable_auto_commit=False,
                                 consumer_timeout_ms=1500)
        consumer.assign([TopicPartition("t", 0)])
        consumer.seek_to_beginning()
        values = [m.value for m in consumer]
        consumer.close()
        assert values == [b"kp%d" % i for i in range(5)] + [b"rk%d" % i for i in range(5)]
    finally:
        b.stop()
