"""kgroup serve hosting KIP-848 consumer groups for the Kafka Java client 3.9
(``group.protocol=consumer``, ConsumerGroupHeartbeat v0: the server makes the member id).

A small consumer (tests/java/StaticConsumer.java) and Kafka's Admin removing members
(tests/java/RemoveMembers.java) are compiled with javac against kafka-clients 3.9.1, fetched from
Maven Central (tests/helpers/kafka_jars.py); without Java or Maven the tests are skipped, and fail
under KGROUP_REQUIRE_KAFKA (.ci/run).
"""

from __future__ import annotations

import subprocess
import threading

import pytest
from helpers.kafka_jars import OLD_CLIENT_VERSION, compile_java, fetch
from helpers.rdkafka_groups import broker  # noqa: F401 - the fixture
from helpers.rdkafka_groups import (PARTITIONS, TOPIC, group_settled, new_consumer, owned,
                                    poll_until, produce)

from kgroup.server.harness import ROOT


JAVA_SOURCES = sorted((ROOT / "tests" / "java").glob("*.java"))   # StaticConsumer, RemoveMembers


@pytest.fixture(scope="module")
def java_classpath(tmp_path_factory):
    lib = fetch("clients", OLD_CLIENT_VERSION)
    return compile_java(JAVA_SOURCES, tmp_path_factory.mktemp("java-classes"), lib)


def run_java_consumer(classpath, b, instance, records, timeout_s):
    return subprocess.Popen(["java", "-cp", classpath, "StaticConsumer", b.bootstrap, "cg",
                             instance, TOPIC, str(records), str(timeout_s)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def test_java_client_consumes_and_commits(broker, java_classpath):
    produce(broker, 60)
    java = run_java_consumer(java_classpath, broker, "java", 60, 90)
    out, _ = java.communicate(timeout=120)
    assert java.returncode == 0, out
    assert "consumed 60\ncommitted\n" in out
    offsets = broker.committed_offsets("cg")
    assert {tp: om.offset for tp, om in offsets.items()} == \
        {(TOPIC, p): 10 for p in range(PARTITIONS)}
    snapshot = broker.group("cg")
    # A static member that closes leaves temporarily (epoch -2) and keeps its partitions.
    (member,) = snapshot.members
    assert (member.instance_id, member.member_epoch) == ("java", -2)
    assert sorted(member.assigned[next(iter(member.assigned))]) == list(range(PARTITIONS))


def test_java_and_librdkafka_consumers_share_a_group(broker, java_classpath):
    rdk = new_consumer(broker, "rdk")
    try:
        poll_until([rdk], lambda: owned(rdk) == set(range(PARTITIONS)))
        java = run_java_consumer(java_classpath, broker, "java", 1_000_000, 120)
        lines = []
        reader = threading.Thread(target=lambda: lines.extend(java.stdout), daemon=True)
        reader.start()
        try:
            def java_owned():
                assigned = [line.split()[1:] for line in list(lines) if line.startswith("assigned")]
                return {int(p) for p in assigned[-1][0].split(",")} if assigned and assigned[-1] \
                    else set()

            # Each partition is owned once, and each consumer owns some.
            poll_until([rdk], lambda: java_owned() and owned(rdk)
                       and not owned(rdk) & java_owned()
                       and owned(rdk) | java_owned() == set(range(PARTITIONS))
                       and group_settled(broker, "cg", 2), timeout=90)
            assert set(broker.group("cg").static_members) == {"rdk", "java"}
        finally:
            java.kill()
            java.wait(10)
            reader.join(10)
    finally:
        rdk.close()


def test_java_admin_removes_members_from_a_consumer_group(broker, java_classpath):
    """Kafka's Admin.removeMembersFromConsumerGroup (LeaveGroup v3+ by instance id, as Kafka 4.0
    allows it on consumer groups): the stopped static member is fenced, its partitions move; without
    ids the Admin describes the group and removes everyone."""
    consumers = [new_consumer(broker, f"r{n}") for n in range(2)]
    try:
        poll_until(consumers, lambda: group_settled(broker, "cg", 2) and all(owned(c) for c in consumers))
        consumers.pop(0).close()        # a static member's leave (epoch -2) keeps its partitions
        admin = subprocess.run(["java", "-cp", java_classpath, "RemoveMembers", broker.bootstrap, "cg",
                                "r0", "nope"], capture_output=True, text=True, timeout=120)
        assert admin.returncode == 0, admin.stderr
        assert admin.stdout.splitlines() == ["removed r0", "failed nope UnknownMemberIdException"]
        poll_until(consumers, lambda: owned(consumers[0]) == set(range(PARTITIONS))
                   and group_settled(broker, "cg", 1))
        assert set(broker.group("cg").static_members) == {"r1"}
        consumers.pop(0).close()
        admin = subprocess.run(["java", "-cp", java_classpath, "RemoveMembers", broker.bootstrap, "cg"],
                               capture_output=True, text=True, timeout=120)   # no ids: every member
        assert admin.stdout.splitlines() == ["removed all"], admin.stderr
        assert broker.group("cg").state == "Empty"
    finally:
        for consumer in consumers:
            consumer.close()


def test_java_client_consumes_over_sasl_ssl_scram_sha_512(java_classpath, tmp_path_factory):
    """The Java client as a static KIP-848 member over SASL_SSL with SCRAM-SHA-512, trusting the
    serve certificate from a PEM truststore and checking its host name."""
    from helpers.certificates import certificates_fixture
    from helpers.secure_clients import PASSWORD, client_settings
    from kgroup.server.harness import ThreadedBroker
    from kgroup.server.security.listeners import parse_listener

    certs = certificates_fixture(tmp_path_factory)
    b = ThreadedBroker(tmp_path_factory.mktemp("logs"), topics=[(TOPIC, PARTITIONS)],
                       listeners=[parse_listener("PLAINTEXT://127.0.0.1:0"),
                                  parse_listener("SASL_SSL://127.0.0.1:0")],
                       users={"ops": PASSWORD}, config={"ssl.keystore.location": certs.server})
    try:
        produce(b, 12)  # over the PLAINTEXT listener (b.bootstrap)
        text, _ = client_settings("SASL_SSL", "SCRAM-SHA-512", certs.ca)
        settings = tmp_path_factory.mktemp("java") / "client.properties"
        settings.write_text(text)
        java = subprocess.run(["java", "-cp", java_classpath, "StaticConsumer", b.bootstraps[1],
                               "secure-java", "java-1", TOPIC, "12", "90", str(settings)],
                              capture_output=True, text=True, timeout=150)
        assert java.returncode == 0, java.stdout + java.stderr[-2000:]
        assert "consumed 12\ncommitted\n" in java.stdout
        assert {om.offset for om in b.committed_offsets("secure-java").values()} == {2}
    finally:
        b.stop()
