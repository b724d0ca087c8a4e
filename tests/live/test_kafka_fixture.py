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
    assert listed.stdout.split()[:3] == ["GROUP", "TYPE", "PROTOCOL"]   # the session's broker: other tests' groups too


def test_every_kind_of_member_joins_the_real_broker(kafka, tmp_path_factory):
    """kafka-python (classic), librdkafka and the Java client 4.4 (classic and consumer protocol):
    each a static member of its own group, owning all partitions of the topic."""
    from helpers.kafka_groups import (JavaMember, PythonMember, RdkafkaMember, close_all, create_topic,
                                      java_classpath, wait_for)

    create_topic(kafka.bootstrap, "fixture-t", 3)
    cp = java_classpath(tmp_path_factory.getbasetemp())
    everything = {("fixture-t", p) for p in range(3)}
    members = [PythonMember(kafka.bootstrap, "fx-python", ["fixture-t"], "p-0"),
               RdkafkaMember(kafka.bootstrap, "fx-rdk-classic", ["fixture-t"], "r-0", protocol="classic"),
               RdkafkaMember(kafka.bootstrap, "fx-rdk-consumer", ["fixture-t"], "r-1"),
               JavaMember(cp, kafka.bootstrap, "fx-java-classic", ["fixture-t"], "j-0", protocol="classic"),
               JavaMember(cp, kafka.bootstrap, "fx-java-consumer", ["fixture-t"], "j-1")]
    try:
        for member in members:
            wait_for(lambda: member.assignment == everything, 60, f"{member.instance_id} owning all")
    finally:
        close_all(members)
    listed = kafka.tool("kafka-groups", "--bootstrap-server", kafka.bootstrap, "--list").stdout
    types = dict(line.split()[:2] for line in listed.splitlines()[1:] if line.startswith("fx-"))
    assert types == {"fx-python": "Classic", "fx-rdk-classic": "Classic", "fx-rdk-consumer": "Consumer",
                     "fx-java-classic": "Classic", "fx-java-consumer": "Consumer"}
