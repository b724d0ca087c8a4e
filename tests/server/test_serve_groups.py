"""kgroup serve with real kafka-python consumers: static and dynamic membership (KIP-345)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition
from kafka.admin import KafkaAdminClient, MemberToRemove
import kafka.errors as Errors

from kgroup.server.harness import ThreadedBroker

TOPIC = "orders"
PARTITIONS = 6


@pytest.fixture
def broker(tmp_path):
    b = ThreadedBroker(tmp_path / "logs", topics=[(TOPIC, PARTITIONS)])
    yield b
    b.stop()


def consumer(b, group, instance=None, **extra):
    settings = dict(bootstrap_servers=b.bootstrap, group_id=group, group_instance_id=instance,
                    session_timeout_ms=3000, heartbeat_interval_ms=300,
                    auto_offset_reset="earliest", enable_auto_commit=False,
                    client_id=f"test-{instance or 'dyn'}")
    settings.update(extra)
    c = KafkaConsumer(**settings)
    # Topic metadata before the first join: kafka-python 3.0.12 can drop the result of the
    # metadata-triggered second join when it completes after a poll() timeout.
    assert c.partitions_for_topic(TOPIC) == set(range(PARTITIONS))
    c.subscribe([TOPIC])
    return c


def group(b, group_id):
    return b.group(group_id)


def settle(b, group_id, consumers, timeout=20):
    """Poll every consumer until the group is Stable and their assignments split all partitions."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(timeout_ms=50)
        g = group(b, group_id)
        parts = [frozenset(tp.partition for tp in c.assignment()) for c in consumers]
        if (g is not None and g.state == "Stable" and len(g.members) == len(consumers)
                and all(parts) and sorted(p for s in parts for p in s) == list(range(PARTITIONS))):
            return g, parts
    raise AssertionError(f"group {group_id} did not settle: {group(b, group_id)}")


def close_all(consumers):
    for c in consumers:
        try:
            c.close(autocommit=False)
        except Exception:
            pass


def test_static_rolling_bounce_keeps_generation_and_partitions(broker):
    members = [consumer(broker, "static", f"node-{i}") for i in range(3)]
    try:
        before, parts = settle(broker, "static", members)
        by_instance = {f"node-{i}": parts[i] for i in range(3)}
        for i in range(3):  # bounce each member in turn, well within the session timeout
            members[i].close(autocommit=False)  # a static member sends no LeaveGroup
            members[i] = consumer(broker, "static", f"node-{i}")
            g, parts = settle(broker, "static", members)
            assert g.generation == before.generation
            assert {f"node-{j}": parts[j] for j in range(3)} == by_instance
        assert set(g.static_members) == {"node-0", "node-1", "node-2"}
        assert g.static_members != before.static_members  # new member ids, same instances
    finally:
        close_all(members)


def test_dynamic_bounce_rebalances(broker):
    members = [consumer(broker, "dyn") for _ in range(2)]
    try:
        before, _ = settle(broker, "dyn", members)
        members[0].close(autocommit=False)  # dynamic: LeaveGroup, then a rebalance
        members[0] = consumer(broker, "dyn")
        after, _ = settle(broker, "dyn", members)
        assert after.generation > before.generation
        before_ids = {m.member_id for m in before.members}
        after_ids = {m.member_id for m in after.members}
        assert len(before_ids & after_ids) == 1  # the bounced member came back with a new id
        assert after.static_members == {}
    finally:
        close_all(members)


def test_second_consumer_with_live_instance_id_fences_the_first(broker):
    first = consumer(broker, "fence", "solo")
    second = None
    try:
        g1, _ = settle(broker, "fence", [first])
        old_member = g1.static_members["solo"]
        second = consumer(broker, "fence", "solo")
        g2, _ = settle(broker, "fence", [second])
        assert g2.static_members["solo"] != old_member
        assert g2.generation == g1.generation  # replacement in Stable: no rebalance
        with pytest.raises(Errors.FencedInstanceIdError):
            first.commit({TopicPartition(TOPIC, 0): OffsetAndMetadata(1, "", -1)})
    finally:
        close_all([c for c in (first, second) if c is not None])


def test_admin_removes_static_members_by_instance_id(broker):
    members = [consumer(broker, "adm", f"a-{i}") for i in range(2)]
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        before, _ = settle(broker, "adm", members)
        result = admin.remove_group_members(
            "adm", [MemberToRemove(group_instance_id="a-1"), MemberToRemove(group_instance_id="zz")])
        errors = dict(result)  # keyed by instance id (member id when given)
        assert errors["a-1"] is Errors.NoError
        assert errors["zz"] is Errors.UnknownMemberIdError
        g = group(broker, "adm")
        assert set(g.static_members) == {"a-0"}
        assert g.state == "PreparingRebalance"
    finally:
        admin.close()
        close_all(members)


def test_offsets_and_static_map_survive_restart(tmp_path):
    logs = tmp_path / "logs"
    b = ThreadedBroker(logs, topics=[(TOPIC, PARTITIONS)])
    try:
        c = consumer(b, "keep", "k-0")
        settle(b, "keep", [c])
        producer = KafkaProducer(bootstrap_servers=b.bootstrap, enable_idempotence=False)
        for i in range(12):
            producer.send(TOPIC, value=b"%d" % i, partition=i % PARTITIONS)
        producer.flush()
        producer.close()
        seen = 0
        deadline = time.monotonic() + 10
        while seen < 12 and time.monotonic() < deadline:
            seen += sum(len(v) for v in c.poll(timeout_ms=100).values())
        assert seen == 12
        c.commit()
        before = group(b, "keep")
        committed = b.committed_offsets("keep")
        assert {tp: om.offset for tp, om in committed.items()} == {
            (TOPIC, p): 2 for p in range(PARTITIONS)}
        c.close(autocommit=False)
    finally:
        b.stop()
    b = ThreadedBroker(logs)
    try:
        after = group(b, "keep")
        assert after.static_members == before.static_members
        assert after.generation == before.generation
        assert after.state == "Stable"
        restored = b.committed_offsets("keep")
        assert {tp: om.offset for tp, om in restored.items()} == {
            (TOPIC, p): 2 for p in range(PARTITIONS)}
        c = consumer(b, "keep", "k-0")
        settle(b, "keep", [c])
        assert c.committed(TopicPartition(TOPIC, 3)) == 2
        assert group(b, "keep").generation == before.generation  # rejoined without rebalance
        c.close(autocommit=False)
    finally:
        b.stop()


CHILD = textwrap.dedent("""
    import sys, time
    from kafka import KafkaConsumer
    c = KafkaConsumer(bootstrap_servers=sys.argv[1], group_id="kill", group_instance_id="victim",
                      session_timeout_ms=2000, heartbeat_interval_ms=200,
                      enable_auto_commit=False)
    c.partitions_for_topic("orders")
    c.subscribe(["orders"])
    while not c.assignment():
        c.poll(timeout_ms=100)
    print("assigned", sorted(tp.partition for tp in c.assignment()), flush=True)
    while True:
        c.poll(timeout_ms=100)
""")


def test_sigkilled_static_member_is_removed_at_session_timeout(broker):
    # The victim starts first (forking while kafka-python's threads run has stalled its client).
    child = subprocess.Popen([sys.executable, "-c", CHILD, broker.bootstrap],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    survivor = None
    try:
        assert child.stdout.readline().strip() == "assigned [0, 1, 2, 3, 4, 5]"
        survivor = consumer(broker, "kill", "survivor")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            survivor.poll(timeout_ms=50)
            g = group(broker, "kill")
            if (g is not None and g.state == "Stable" and len(g.members) == 2
                    and len(survivor.assignment()) == PARTITIONS // 2):
                break
        else:
            raise AssertionError(f"two-member group never settled: {group(broker, 'kill')}")
        child.kill()
        child.wait(10)
        killed_at = time.monotonic()
        generation = group(broker, "kill").generation
        time.sleep(1.0)  # half the session timeout: still a member
        assert "victim" in group(broker, "kill").static_members
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            survivor.poll(timeout_ms=50)
            g = group(broker, "kill")
            if len(survivor.assignment()) == PARTITIONS and g.state == "Stable":
                break
        assert len(survivor.assignment()) == PARTITIONS
        removed_after = time.monotonic() - killed_at
        g = group(broker, "kill")
        assert set(g.static_members) == {"survivor"}
        assert g.generation > generation
        assert removed_after >= 1.9  # not before the 2000 ms session timeout
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if survivor is not None:
            close_all([survivor])
