"""The real clients as scripted members: each records, in order, the rebalance callbacks its client
made (``assigned``/``revoked``/``lost`` with the partitions), its errors, and the results of the
commits it was told to make; ``assignment`` is what it owns now.

kafka-python and confluent-kafka members run in this process, each on its own thread; the Java
client 4.4 runs in its own JVM (tests/live/java/GroupMember.java), driven over its stdin. Partitions
are written ``short-topic-partition`` (the scenario's short topic names).
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time

RDKAFKA_ASSIGNORS = {"range": "range", "roundrobin": "roundrobin", "cooperative-sticky": "cooperative-sticky"}
JAVA_ASSIGNORS = {"range": "org.apache.kafka.clients.consumer.RangeAssignor",
                  "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
                  "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"}


class Driver:
    """What every member kind records; subclasses run the client."""

    def __init__(self, member, scenario, bootstrap):
        self.member, self.scenario, self.bootstrap = member, scenario, bootstrap
        self.events: list[tuple] = []        # (kind, detail), in the order the client made them
        self.assignment: set = set()          # {(full topic, partition)}
        self.running = True                   # started, not closed / killed / paused / stopped
        self._lock = threading.Lock()

    def topics(self, short=None) -> list[str]:
        names = short if short is not None else (self.member.topics or tuple(self.scenario.topics))
        return [self.scenario.topic(t) for t in names]

    def name_of(self, topic: str, partition: int) -> str:
        return f"{self.scenario.short(topic)}-{partition}"

    def record(self, kind: str, detail=None) -> None:
        with self._lock:
            if kind == "error" and self.events and self.events[-1] == (kind, detail):
                return                        # a client repeating one error on every poll
            self.events.append((kind, detail))

    def callback(self, kind: str, partitions) -> None:
        self.record(kind, sorted(self.name_of(t, p) for t, p in partitions))

    @property
    def errors(self) -> list:
        return [detail for kind, detail in self.events if kind == "error"]


class PolledDriver(Driver):
    """A client driven by one thread's poll loop (not thread-safe): other threads hand it commands,
    which the loop runs between polls (``run_commands``), and wait for the answer (``_call``)."""

    def __init__(self, member, scenario, bootstrap):
        super().__init__(member, scenario, bootstrap)
        self.commands: queue.Queue = queue.Queue()
        self.paused = threading.Event()
        self.stopped = threading.Event()

    def pause(self):
        """The poll loop stops (``_run`` idles while paused)."""
        self.paused.set()
        self.running = False

    def resume(self):
        self.paused.clear()
        self.running = True

    def run_commands(self, error_name=lambda exc: type(exc).__name__) -> None:
        while True:
            try:
                command, arg, done = self.commands.get_nowait()
            except queue.Empty:
                return
            try:
                done.put(command(arg))
            except Exception as exc:  # noqa: BLE001 - the answer names what the client raised
                done.put(error_name(exc))

    def _call(self, command, arg=None, timeout=30):
        done: queue.Queue = queue.Queue()
        self.commands.put((command, arg, done))
        try:
            return done.get(timeout=timeout)
        except queue.Empty:
            return "timed out"


class PythonDriver(PolledDriver):
    """kafka-python (classic protocol). ``pause`` disables its heartbeat thread and stops polling
    (a hung process); ``kill`` does the same for good (no LeaveGroup, the session expires)."""

    POLL_MS = 3000     # longer than a join: kafka-python 3.0.12 loses a join completing after a poll timed out (kgroup.client.fleet)

    def __init__(self, member, scenario, bootstrap):
        super().__init__(member, scenario, bootstrap)
        from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
        from kafka.coordinator.assignors.range import RangePartitionAssignor
        from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

        assignors = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
                     "cooperative-sticky": CooperativeStickyAssignor}
        m = member
        self.config = dict(bootstrap_servers=bootstrap, group_id=scenario.group,
                           group_instance_id=m.instance_id, client_id=m.name,
                           session_timeout_ms=m.session_ms,
                           heartbeat_interval_ms=m.heartbeat_ms or max(100, m.session_ms // 5),
                           max_poll_interval_ms=m.rebalance_ms, enable_auto_commit=False,
                           auto_offset_reset="earliest",
                           partition_assignment_strategy=[assignors[m.assignor]], **m.settings)
        self.consumer = None
        self.thread = threading.Thread(target=self._run, name=f"kafka-python-{m.name}", daemon=True)
        self.thread.start()

    def _listener(self):
        from kafka import ConsumerRebalanceListener

        driver = self

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                driver.callback("revoked", [(tp.topic, tp.partition) for tp in revoked])

            def on_partitions_assigned(self, assigned):
                driver.callback("assigned", [(tp.topic, tp.partition) for tp in assigned])

            def on_partitions_lost(self, lost):
                driver.callback("lost", [(tp.topic, tp.partition) for tp in lost])
        return Listener()

    def _run(self):
        from kafka import KafkaConsumer
        import kafka.errors as Errors

        try:
            self.consumer = KafkaConsumer(**self.config)
            for topic in self.topics():       # a leader without the metadata would assign nothing
                self.consumer.partitions_for_topic(topic)
            if self.member.pattern:
                self.consumer.subscribe(pattern=self.scenario.pattern, listener=self._listener())
            else:
                self.consumer.subscribe(self.topics(), listener=self._listener())
            self._await_metadata()
            while not self.stopped.is_set():
                self.run_commands()
                if self.paused.is_set():
                    time.sleep(0.05)
                    continue
                try:
                    self.consumer.poll(timeout_ms=self.POLL_MS)
                except Errors.FencedInstanceIdError as exc:
                    self.record("error", type(exc).__name__)
                    self.running = False
                    break
                except GeneratorExit:
                    # kafka-python 3.0: its heartbeat coroutine was closed; poll() re-raises that
                    # once and the next poll respawns the loop (BaseCoordinator.poll_heartbeat)
                    continue
                except Exception as exc:  # noqa: BLE001 - a client error is an observation
                    self.record("error", type(exc).__name__)
                    time.sleep(0.1)
                self.assignment = {(tp.topic, tp.partition) for tp in self.consumer.assignment()}
        except Exception as exc:  # noqa: BLE001
            self.record("error", f"driver: {type(exc).__name__}: {exc}")
            self.running = False

    def _await_metadata(self, timeout: float = 10) -> None:
        """Until the coordinator's metadata snapshot has every subscribed topic. kafka-python builds
        it only when a metadata update arrives after subscribe(); a join completing before that
        (a fast coordinator) leaves a leader with an empty snapshot, which then differs from the
        next one and makes it rejoin at once — one extra generation that depends on whether the
        Metadata answer or the JoinGroup answer comes first (a client race, not the broker's)."""
        coordinator, cluster = self.consumer._coordinator, self.consumer._client.cluster
        wanted = set(self.consumer.subscription() or ())
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            snapshot = coordinator._metadata_snapshot
            if wanted <= set(snapshot) and all(snapshot[t] for t in wanted):
                return
            future = cluster.request_update()
            end = min(deadline, time.monotonic() + 1)
            while not future.is_done and time.monotonic() < end:
                time.sleep(0.02)


    def commit(self, offset: int):
        from kafka.structs import OffsetAndMetadata

        def do(_):
            owned = sorted(self.consumer.assignment(), key=lambda tp: (tp.topic, tp.partition))
            self.consumer.commit({tp: OffsetAndMetadata(offset, "", -1) for tp in owned})
            return "ok " + ",".join(self.name_of(tp.topic, tp.partition) for tp in owned)
        return self._call(do)

    def subscribe(self, short_topics):
        def do(topics):
            for topic in topics:
                self.consumer.partitions_for_topic(topic)
            self.consumer.subscribe(topics, listener=self._listener())
            return "ok"
        return self._call(do, self.topics(short_topics))

    def pause(self):
        super().pause()
        coordinator = getattr(self.consumer, "_coordinator", None)
        if coordinator is not None:
            coordinator._disable_heartbeat()

    def close(self):
        self.stopped.set()
        self.thread.join(30)
        self.running = False
        if self.consumer is not None:
            try:
                self.consumer.close(autocommit=False)
            except Exception as exc:  # noqa: BLE001
                self.record("error", f"close: {type(exc).__name__}")

    def kill(self):
        self.pause()
        coordinator = getattr(self.consumer, "_coordinator", None)
        if coordinator is not None:
            coordinator._close_heartbeat()
        self.stopped.set()
        self.thread.join(30)

    def discard(self):
        """After the scenario: a killed client's sockets are closed (nothing more is observed)."""
        if self.consumer is not None:
            try:
                self.consumer._client.close()
            except Exception:  # noqa: BLE001
                pass


class RdkafkaDriver(PolledDriver):
    """confluent-kafka / librdkafka, ``group.protocol`` classic or consumer. ``pause`` stops polling
    only: librdkafka heartbeats on its own thread until max.poll.interval.ms runs out, then leaves
    the group. A librdkafka client cannot be killed without a leave in this process: ``kill`` is
    refused (use kafka-python or Java members for kill -9)."""

    def __init__(self, member, scenario, bootstrap, protocol):
        super().__init__(member, scenario, bootstrap)
        from confluent_kafka import Consumer

        m = member
        config = {"bootstrap.servers": bootstrap, "group.id": scenario.group, "group.protocol": protocol,
                  "client.id": m.name, "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "topic.metadata.refresh.interval.ms": 1000, **m.settings}
        if protocol == "classic":
            config.update({"session.timeout.ms": m.session_ms,
                           "heartbeat.interval.ms": m.heartbeat_ms or max(100, m.session_ms // 5),
                           "max.poll.interval.ms": max(m.rebalance_ms, m.session_ms),
                           "partition.assignment.strategy": RDKAFKA_ASSIGNORS[m.assignor]})
        else:                                 # the rebalance timeout a consumer member sends
            config["max.poll.interval.ms"] = m.rebalance_ms
            if m.assignor:
                config["group.remote.assignor"] = m.assignor
        if m.instance_id:
            config["group.instance.id"] = m.instance_id
        self.consumer = Consumer(config)
        self._subscribe([scenario.pattern] if m.pattern else self.topics())
        self.thread = threading.Thread(target=self._run, name=f"rdkafka-{m.name}", daemon=True)
        self.thread.start()

    def _subscribe(self, topics):
        def tps(partitions):
            return [(tp.topic, tp.partition) for tp in partitions]
        self.consumer.subscribe(topics,
                                on_assign=lambda c, ps: self.callback("assigned", tps(ps)),
                                on_revoke=lambda c, ps: self.callback("revoked", tps(ps)),
                                on_lost=lambda c, ps: self.callback("lost", tps(ps)))

    def _run(self):
        while not self.stopped.is_set():
            self.run_commands(_kafka_error_name)
            if self.paused.is_set():
                time.sleep(0.05)
                continue
            try:
                msg = self.consumer.poll(0.1)
                if msg is not None and msg.error() is not None:
                    self.record("error", msg.error().name())
                self.assignment = {(tp.topic, tp.partition) for tp in self.consumer.assignment()}
            except Exception as exc:  # noqa: BLE001
                self.record("error", _kafka_error_name(exc))
                time.sleep(0.1)


    def commit(self, offset: int):
        from confluent_kafka import TopicPartition

        def do(_):
            owned = sorted((tp.topic, tp.partition) for tp in self.consumer.assignment())
            if owned:
                self.consumer.commit(offsets=[TopicPartition(t, p, offset) for t, p in owned],
                                     asynchronous=False)
            return "ok " + ",".join(self.name_of(t, p) for t, p in owned)
        return self._call(do)

    def subscribe(self, short_topics):
        return self._call(lambda topics: self._subscribe(topics) or "ok", self.topics(short_topics))

    def close(self):
        self.stopped.set()
        self.thread.join(30)
        self.running = False
        try:
            self.consumer.close()
        except Exception as exc:  # noqa: BLE001
            self.record("error", f"close: {_kafka_error_name(exc)}")

    def kill(self):
        raise ValueError("a librdkafka member cannot be killed without a leave in-process; "
                         "use a kafka-python or Java member")

    def discard(self):
        if not self.stopped.is_set():
            self.close()


def _kafka_error_name(exc) -> str:
    error = exc.args[0] if getattr(exc, "args", None) else None
    name = getattr(error, "name", None)
    return name() if callable(name) else type(exc).__name__


class JavaDriver(Driver):
    """The Java client 4.4 in its own JVM. ``pause`` is SIGSTOP (no heartbeat at all), ``resume``
    SIGCONT, ``kill`` SIGKILL."""

    def __init__(self, member, scenario, bootstrap, protocol, classpath):
        super().__init__(member, scenario, bootstrap)
        m = member
        settings = {"client.id": m.name, **m.settings}
        if protocol == "classic":
            settings.update({"session.timeout.ms": m.session_ms,
                             "heartbeat.interval.ms": m.heartbeat_ms or max(100, m.session_ms // 5),
                             "max.poll.interval.ms": m.rebalance_ms,
                             "partition.assignment.strategy": JAVA_ASSIGNORS[m.assignor]})
        else:                                 # the rebalance timeout a consumer member sends
            settings["max.poll.interval.ms"] = m.rebalance_ms
            if m.assignor:
                settings["group.remote.assignor"] = m.assignor
        self.replies: queue.Queue = queue.Queue()
        self.process = subprocess.Popen(
            ["java", "-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto",
             "-cp", classpath, "GroupMember", bootstrap, scenario.group, m.instance_id or "-",
             protocol, scenario.pattern if m.pattern else ",".join(self.topics()),
             *(f"{k}={v}" for k, v in settings.items())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _partitions(self, text: str) -> list:
        out = []
        for name in filter(None, text.split(",")):
            topic, _, p = name.rpartition("-")
            out.append((topic, int(p)))
        return out

    def _read(self):
        for line in self.process.stdout:
            words = line.rstrip("\n").split(" ", 2)
            if words[0] == "callback":
                self.callback(words[1], self._partitions(words[2] if len(words) > 2 else ""))
            elif words[0] == "assigned":
                self.assignment = set(self._partitions(words[1] if len(words) > 1 else ""))
            elif words[0] == "error":
                self.record("error", words[1])
                if words[1] in ("FencedInstanceIdException", "UnreleasedInstanceIdException"):
                    self.running = False
            elif words[0] in ("commit", "subscribe"):
                self.replies.put(" ".join(words[1:]))

    def _send(self, line: str, reply=True):
        try:
            self.process.stdin.write(line + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            return "process gone"
        if reply:
            try:
                return self.replies.get(timeout=30)
            except queue.Empty:
                return "timed out"

    def commit(self, offset: int):
        answer = self._send(f"commit {offset}")
        if answer.startswith("ok"):
            owned = sorted(self._partitions(answer[3:]))
            return "ok " + ",".join(self.name_of(t, p) for t, p in owned)
        return answer

    def subscribe(self, short_topics):
        return self._send("subscribe " + ",".join(self.topics(short_topics)))

    def pause(self):
        self.running = False
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self):
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGCONT)
        self.running = True

    def close(self):
        self.running = False
        if self.process.poll() is None:
            self._send("close", reply=False)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.reader.join(5)

    def kill(self):
        self.running = False
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self.reader.join(5)

    def discard(self):
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGCONT)
            self.process.kill()
            self.process.wait(10)


def start_driver(member, scenario, bootstrap, java_classpath=None) -> Driver:
    kind = member.client
    if kind == "kafka-python":
        return PythonDriver(member, scenario, bootstrap)
    if kind.startswith("rdkafka-"):
        return RdkafkaDriver(member, scenario, bootstrap, kind.split("-", 1)[1])
    if java_classpath is None:
        raise ValueError(f"member {member.name}: a Java member needs the compiled GroupMember")
    return JavaDriver(member, scenario, bootstrap, kind.split("-", 1)[1], java_classpath())
