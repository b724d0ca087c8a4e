"""A librdkafka static member producing and consuming through a secured serve listener."""

from __future__ import annotations

import time


def rdkafka_static_member_consumes(broker, secure: dict, topic: str, group_id: str, count: int):
    """Produce `count` values over 2 partitions, then consume them all as a static member of
    `group_id`; asserts every value arrived and the group is Stable."""
    from confluent_kafka import Consumer, Producer

    tag = group_id.encode()
    wanted = {tag + b"-%d" % i for i in range(count)}
    producer = Producer({**secure, "linger.ms": 0})
    for i, value in enumerate(sorted(wanted)):
        producer.produce(topic, value=value, partition=i % 2)
    assert producer.flush(10) == 0
    consumer = Consumer({**secure, "group.id": group_id, "group.instance.id": f"{group_id}-1",
                         "session.timeout.ms": 3000, "heartbeat.interval.ms": 300,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        values = set()
        deadline = time.monotonic() + 30
        while not wanted <= values and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                values.add(msg.value())
        assert wanted <= values
        assert broker.group(group_id).state == "Stable"
    finally:
        consumer.close()


PASSWORD = "s3cret"


def client_settings(protocol: str, mechanism: str | None, ca: str, user: str = "ops",
                    password: str = PASSWORD) -> tuple[str, dict]:
    """(`--command-config` text, kafka-python keyword arguments) for one protocol and mechanism."""
    lines = [f"security.protocol={protocol}"]
    settings = {"security_protocol": protocol}
    if protocol.endswith("SSL"):
        lines.append(f"ssl.truststore.type=PEM\nssl.truststore.location={ca}")
        settings["ssl_cafile"] = ca
    if protocol.startswith("SASL_"):
        module = ("plain.PlainLoginModule" if mechanism == "PLAIN"
                  else "scram.ScramLoginModule")
        lines.append(f"sasl.mechanism={mechanism}\nsasl.jaas.config=org.apache.kafka.common."
                     f"security.{module} required username=\"{user}\" password=\"{password}\";")
        settings.update(sasl_mechanism=mechanism, sasl_plain_username=user,
                        sasl_plain_password=password)
    return "\n".join(lines) + "\n", settings


def kafka_python_static_member_consumes(broker, settings: dict, topic: str, group_id: str,
                                        count: int = 6):
    """kafka-python produces `count` values, then consumes them as a static member of `group_id`
    with the same security `settings`; asserts they arrived and the group is Stable."""
    from kafka import KafkaConsumer, KafkaProducer

    tag = group_id.encode()
    wanted = {tag + b"-%d" % i for i in range(count)}
    producer = KafkaProducer(**settings)
    for value in wanted:
        producer.send(topic, value=value)
    producer.flush(10)
    producer.close()
    consumer = KafkaConsumer(topic, group_id=group_id, group_instance_id=f"{group_id}-1",
                             auto_offset_reset="earliest", session_timeout_ms=6000,
                             heartbeat_interval_ms=500, **settings)
    try:
        values = set()
        deadline = time.monotonic() + 30
        while not wanted <= values and time.monotonic() < deadline:
            for batch in consumer.poll(500).values():
                values.update(record.value for record in batch)
        assert wanted <= values
        assert broker.group(group_id).state == "Stable"
    finally:
        consumer.close()
