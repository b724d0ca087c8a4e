"""The reference broker itself: Kafka 4.4 from Maven, started by the tests, answering Metadata and
running Kafka's own tools from the same jars."""

from helpers.kafka_jars import KAFKA_VERSION


def test_the_broker_is_kafka_4_4_and_its_tools_run(kafka):
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap)
    try:
        assert [b["broker_id"] for b in admin.describe_cluster()["brokers"]] == [1]
    finally:
        admin.close()
    assert (kafka.lib / f"kafka_2.13-{KAFKA_VERSION}.jar").is_file()
    listed = kafka.tool("kafka-groups", "--bootstrap-server", kafka.bootstrap, "--list")
    assert listed.stdout.split() == ["GROUP", "TYPE", "PROTOCOL"]
