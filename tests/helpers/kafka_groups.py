"""Real clients as group members, for any bootstrap (the real Kafka, kgroup serve): topics, records,
and members of kafka-python (classic), confluent-kafka / librdkafka (classic or
``group.protocol=consumer``) and the Kafka Java client 4.4 (classic or consumer).

Every member runs on its own (thread or process) and exposes ``assignment`` — a set of
``(topic, partition)`` — and ``close()`` (graceful) / ``kill()`` (no leave: the session must expire).
Waits poll a condition, never sleep a fixed time (the machine may be loaded).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time

from helpers import TESTS
from helpers.kafka_jars import compile_java, fetch


# CI's machines are small (2 cores) and the suite runs brokers, JVMs and Spark side by side there: a
# wait that returns as soon as its condition holds costs nothing when given longer, so under CI it is
WAIT_SLACK = 2 if os.environ.get("CI") else 1


def wait_for(condition, timeout: float = 60, what: str = "condition", interval: float = 0.1):
    """Poll ``condition`` until it is truthy (returned) or ``timeout`` seconds (times WAIT_SLACK) pass."""
    timeout *= WAIT_SLACK
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"{what} not reached in {timeout}s")


def create_topic(bootstrap: str, topic: str, partitions: int, replicas: int = 1) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, replicas)])
    finally:
        admin.close()


def produce(bootstrap: str, topic: str, per_partition: dict[int, int]) -> None:
    """``per_partition[p]`` records into partition p (log end offsets as given on a new topic)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for partition, count in per_partition.items():
        for i in range(count):
            producer.produce(topic, value=b"v%d" % i, partition=partition)
    assert producer.flush(30) == 0


class PythonMember:
    """A kafka-python classic member (kgroup.client.fleet's consumer thread)."""

    def __init__(self, bootstrap, group, topics, instance_id=None, session_timeout_ms=6000, **settings):
        from kgroup.client.fleet import FleetConsumer

        self.instance_id = instance_id
        self._consumer = FleetConsumer(bootstrap, group, topics, instance_id,
                                       session_timeout_ms=session_timeout_ms, poll_timeout_ms=200,
                                       **settings)

    @property
    def assignment(self) -> set:
        return set(self._consumer.assignment)

    def close(self):
        self._consumer.stop()

    kill = close      # kafka-python's static members never send LeaveGroup on close


class RdkafkaMember:
    """A confluent-kafka consumer on its own thread: ``protocol`` "classic" or "consumer"."""

    def __init__(self, bootstrap, group, topics, instance_id=None, protocol="consumer",
                 session_timeout_ms=6000, commit=True, **settings):
        from confluent_kafka import Consumer

        self.instance_id = instance_id
        config = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
                  "auto.offset.reset": "earliest", "enable.auto.commit": commit,
                  "auto.commit.interval.ms": 200, "client.id": f"rdkafka-{instance_id or 'dynamic'}",
                  **settings}
        if protocol == "classic":
            config.update({"session.timeout.ms": session_timeout_ms,
                           "heartbeat.interval.ms": max(100, session_timeout_ms // 10)})
        if instance_id:
            config["group.instance.id"] = instance_id
        self.errors: list = []
        self.assignment: set = set()
        self._consumer = Consumer(config)
        self._consumer.subscribe(list(topics))
        self._stop = threading.Event()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        try:
            while not self._stop.is_set():
                msg = self._consumer.poll(0.1)
                if msg is not None and msg.error() is not None:
                    self.errors.append(msg.error())
                self.assignment = {(tp.topic, tp.partition) for tp in self._consumer.assignment()}
        except Exception as exc:  # noqa: BLE001 - kept for the test to see
            self.errors.append(exc)
        finally:
            if self._closed.is_set():
                self._consumer.close()

    def close(self):
        self._closed.set()
        self._stop.set()
        self._thread.join(30)

    def kill(self):
        """Stop polling without leaving: no heartbeat, no LeaveGroup; the session expires. The
        consumer stays open until the test ends (``discard_killed``)."""
        self._stop.set()
        self._thread.join(30)
        KILLED.append(self)


# librdkafka consumers stopped without a close: left open, their threads spin (rdk:main at 100% of a
# core for as long as the process lives), so the live tests' conftest closes them after each test.
KILLED: list[RdkafkaMember] = []


def discard_killed() -> None:
    while KILLED:
        member = KILLED.pop()
        try:
            member._consumer.close()
        except Exception:  # noqa: BLE001 - a consumer whose group is gone may complain; it is closed
            pass


_java_classpath: str | None = None
_java_lock = threading.Lock()


def java_classpath(tmp_root) -> str:
    """tests/live/java/*.java compiled once against the Kafka 4.4 client."""
    global _java_classpath
    with _java_lock:
        if _java_classpath is None:
            out = tmp_root / "java-classes"
            out.mkdir(parents=True, exist_ok=True)
            _java_classpath = compile_java(sorted((TESTS / "live" / "java").glob("*.java")), out, fetch())
        return _java_classpath


class JavaMember:
    """The Kafka Java client 4.4 (tests/live/java/GroupMember.java) in its own JVM."""

    def __init__(self, classpath, bootstrap, group, topics, instance_id=None, protocol="consumer",
                 session_timeout_ms=6000, **settings):
        if protocol == "classic":
            settings.setdefault("session.timeout.ms", session_timeout_ms)
            settings.setdefault("heartbeat.interval.ms", max(100, session_timeout_ms // 10))
        self.instance_id = instance_id
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", classpath,
             "GroupMember", bootstrap, group, instance_id or "-", protocol, ",".join(topics),
             *(f"{k}={v}" for k, v in settings.items())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self._reader = threading.Thread(target=lambda: self.lines.extend(self.process.stdout), daemon=True)
        self._reader.start()

    @property
    def assignment(self) -> set:
        assigned = [line for line in list(self.lines) if line.startswith("assigned")]
        if not assigned:
            return set()
        names = assigned[-1].split(" ", 1)[1].strip() if " " in assigned[-1].strip() else ""
        return {(n.rsplit("-", 1)[0], int(n.rsplit("-", 1)[1])) for n in names.split(",") if n}

    @property
    def errors(self) -> list[str]:
        return [line.strip() for line in list(self.lines) if line.startswith("error")]

    def close(self, timeout: float = 60):
        if self.process.poll() is None:
            try:
                self.process.stdin.write("close\n")
                self.process.stdin.flush()
            except BrokenPipeError:
                pass
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._reader.join(5)

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self._reader.join(5)


def close_all(members):
    for member in members:
        member.close()


class RawJoin:
    """A classic static member that only sends JoinGroup (v5) and never SyncGroup nor a heartbeat:
    alone it leaves its group CompletingRebalance; a second one makes the group PreparingRebalance,
    waiting for the first to rejoin. Both until ``session_ms`` runs out. A group mid-rebalance on
    purpose, for as long as a test needs it."""

    def __init__(self, bootstrap, group, instance_id, session_ms=30000, wait=True):
        from kafka.protocol.consumer.group import JoinGroupRequest

        from kgroup.client.wire import ClusterClient

        self.client = ClusterClient(bootstrap, timeout_s=session_ms / 1000 + 10)
        request = JoinGroupRequest(
            version=5, group_id=group, session_timeout_ms=session_ms, rebalance_timeout_ms=session_ms,
            member_id="", group_instance_id=instance_id, protocol_type="consumer",
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"\0" * 10)])
        node = self.client.find_coordinator(group).node_id
        self.response = None

        def join():
            try:
                self.response = self.client.send(request, node_id=node)
            except Exception as exc:  # noqa: BLE001 - the member expired: nothing to report
                self.response = exc
        if wait:
            join()
        else:
            threading.Thread(target=join, daemon=True).start()

    def close(self):
        self.client.close()


def kgroup(*args, input=None):
    """``kgroup ARGS`` through click's runner: ``.exit_code``, ``.stdout``, ``.stderr`` and ``.json``
    (stdout parsed, None when it is not JSON)."""
    import json

    from click.testing import CliRunner

    from kgroup.commands.cli import cli

    result = CliRunner().invoke(cli, [str(a) for a in args], input=input, catch_exceptions=False)
    try:
        result.json = json.loads(result.stdout)
    except ValueError:
        result.json = None
    return result


def committed(bootstrap, group) -> dict:
    """The group's committed offsets as the broker answers confluent-kafka's AdminClient:
    {(topic, partition): offset}."""
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    future = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group]
    return {(tp.topic, tp.partition): tp.offset for tp in future.result(30).topic_partitions if tp.offset >= 0}


def group_config(kafka, group, **settings):
    """A group-level dynamic config (kafka-configs --entity-type groups), e.g.
    ``consumer_session_timeout_ms=30000`` for consumer.session.timeout.ms."""
    kafka.tool("kafka-configs", "--bootstrap-server", kafka.bootstrap, "--entity-type", "groups",
               "--entity-name", group, "--alter", "--add-config",
               ",".join(f"{k.replace('_', '.')}={v}" for k, v in settings.items()))


def tool_rows(text: str) -> list[dict]:
    """The rows of a table kafka-consumer-groups prints (its columns are padded to the widest
    value, so each header's start column slices every row), as dicts by header; several groups'
    tables in one text are concatenated; empty cells are ''."""
    rows, starts, names = [], None, None
    for line in text.splitlines():
        if line.startswith("GROUP "):
            names = line.split()
            starts = [line.index(n) for n in names]
            continue
        if starts is None or not line.strip() or line.startswith(("Consumer group", "Error", "Warning")):
            continue
        cells = [line[a:b].strip() for a, b in zip(starts, starts[1:] + [None])]
        rows.append(dict(zip(names, cells)))
    return rows
