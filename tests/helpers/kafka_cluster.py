"""A real Apache Kafka cluster for the tests: KRaft nodes started from Kafka's own jars.

Node 1 is a combined broker+controller (``process.roles=broker,controller``) whose storage is
formatted ``--standalone`` by Kafka's storage tool; further nodes are brokers only, on node 1's
controller quorum — the three-broker cluster, for groups whose coordinators live on different
brokers. Every node listens on free loopback ports, logs to ``server.log`` in its directory (log4j2,
not the console), and is stopped with SIGTERM, then SIGKILL. The group settings are short ones so
tests can expire sessions in seconds; they are in ``GROUP_SETTINGS`` so ``kgroup serve`` can be
started alike.
"""

from __future__ import annotations

import os
import pathlib
import signal
import socket
import subprocess
import time
import uuid

from helpers.kafka_jars import classpath

# Short group timeouts, as a test needs them; kgroup serve takes the same keys (--config).
GROUP_SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "500",
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.heartbeat.interval.ms": "500",
}

# Share groups (KIP-932) and streams groups (KIP-1071) are on by default in Kafka 4.4 (share.version
# and streams.version are formatted at their production levels); what tests need is short timeouts
# (the defaults allow no session under 45 s), no 3 s wait before a streams group's first assignment,
# and standby tasks: a streams group's standby count is the broker's (or the group's) setting, not
# the application's num.standby.replicas. Not in GROUP_SETTINGS: kgroup serve has no such groups.
SHARE_STREAMS_SETTINGS = {
    "group.share.min.session.timeout.ms": "1000",
    "group.share.session.timeout.ms": "6000",
    "group.share.min.heartbeat.interval.ms": "100",
    "group.share.heartbeat.interval.ms": "500",
    "group.streams.min.session.timeout.ms": "1000",
    "group.streams.session.timeout.ms": "6000",
    "group.streams.min.heartbeat.interval.ms": "100",
    "group.streams.heartbeat.interval.ms": "500",
    "group.streams.initial.rebalance.delay.ms": "0",
    "group.streams.num.standby.replicas": "1",
}

BROKER_SETTINGS = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "num.partitions": "1",
    "auto.create.topics.enable": "true",
    "log.flush.interval.messages": "1",     # segments on disk as soon as written, for kafka-dump-log
    # The group coordinator's cleanup (every 10 min by default) deletes emptied groups that have no
    # offsets: a test that reads such a group as Empty would fail whenever the cleanup ran in the
    # seconds between (seen once). kgroup copes with it (a group deleted during `remove-members
    # --wait` is Dead: tests/client/test_client_responses.py); the tests' groups stay put.
    "offsets.retention.check.interval.ms": "86400000",
    **GROUP_SETTINGS,
    **SHARE_STREAMS_SETTINGS,
}

LOG4J2 = """\
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = {level}
rootLogger.appenderRef.file.ref = file
"""

# Kafka's bin/ scripts, as the main classes they run.
TOOLS = {
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-groups": "org.apache.kafka.tools.GroupsCommand",
    "kafka-share-groups": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "kafka-streams-groups": "org.apache.kafka.tools.streams.StreamsGroupCommand",
    "kafka-dump-log": "org.apache.kafka.tools.DumpLogSegments",
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-configs": "org.apache.kafka.tools.ConfigCommand",
}

JVM = ["-Xmx1g", "-Xms1g", "-XX:+UseG1GC", "-Djava.awt.headless=true"]


_GIVEN: set[int] = set()


def free_port() -> int:
    """A free loopback port never handed out before in this process: a stopped node keeps its port
    for its restart, and another cluster started meanwhile must not take it."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _GIVEN:
            _GIVEN.add(port)
            return port


def wait_listening(process: subprocess.Popen, port: int, timeout: float, name: str, where) -> None:
    """Until ``port`` on loopback accepts a connection; fail at once if ``process`` exits
    (``where()`` says where its output is)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with {process.returncode}; {where()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{name} did not listen on 127.0.0.1:{port} within {timeout}s; {where()}")


class KafkaNode:
    def __init__(self, cluster: "KafkaCluster", node_id: int, controller: bool):
        self.cluster, self.node_id, self.controller = cluster, node_id, controller
        self.dir = cluster.root / f"node-{node_id}"
        self.port = free_port()
        self.controller_port = free_port() if controller else None
        self.process: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log(self) -> pathlib.Path:
        return self.dir / "server.log"

    @property
    def data(self) -> pathlib.Path:
        return self.dir / "data"

    def properties(self) -> dict:
        c = self.cluster
        listeners = {"PLAINTEXT": f"127.0.0.1:{self.port}", **c.extra_listeners(self)}
        props = {
            "node.id": str(self.node_id),
            "process.roles": "broker,controller" if self.controller else "broker",
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.bootstrap.servers": c.controller_address,
            "log.dirs": str(self.data),
            "inter.broker.listener.name": "PLAINTEXT",
        }
        if self.controller:
            listeners["CONTROLLER"] = f"127.0.0.1:{self.controller_port}"
        props["listeners"] = ",".join(f"{name}://{hp}" for name, hp in listeners.items())
        props["advertised.listeners"] = ",".join(
            f"{name}://{hp}" for name, hp in listeners.items() if name != "CONTROLLER")
        protocols = {name: c.security_protocols.get(name, name) for name in listeners}
        protocols["CONTROLLER"] = "PLAINTEXT"     # brokers-only nodes reach the quorum through it too
        props["listener.security.protocol.map"] = ",".join(f"{n}:{p}" for n, p in protocols.items())
        props.update(BROKER_SETTINGS)
        props.update(c.settings)
        return props

    def write_config(self) -> pathlib.Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        config = self.dir / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in self.properties().items()))
        (self.dir / "log4j2.properties").write_text(
            LOG4J2.format(log=self.log, level=self.cluster.log_level) + "".join(
                f"logger.l{i}.name = {name}\nlogger.l{i}.level = {level}\n"
                for i, (name, level) in enumerate(self.cluster.loggers.items())))
        return config

    def format(self) -> None:
        config = self.write_config()
        # "--cluster-id=ID": an id is URL-safe base64 and may begin with "-" (one in 64), which the
        # tool would read as an option in "-t ID"
        args = ["format", f"--cluster-id={self.cluster.cluster_id}", "-c", str(config)]
        if self.controller:
            args.append("--standalone")
            args += self.cluster.format_args   # e.g. --add-scram: bootstrap metadata, on the controller
        self.cluster.java("kafka.tools.StorageTool", *args, log4j=self.dir / "log4j2.properties")

    def start(self) -> None:
        assert self.process is None
        self.process = subprocess.Popen(
            ["java", *JVM, f"-Dlog4j2.configurationFile={self.dir / 'log4j2.properties'}",
             "-cp", self.cluster.classpath, "kafka.Kafka", str(self.dir / "server.properties")],
            stdin=subprocess.DEVNULL, stdout=open(self.dir / "stdout.log", "ab"),
            stderr=subprocess.STDOUT, start_new_session=True)

    def wait_listening(self, timeout: float = 90) -> None:
        # the listener accepts once the broker serves (Metadata is checked after)
        wait_listening(self.process, self.port, timeout, f"Kafka node {self.node_id}",
                       lambda: f"see {self.log} and {self.dir / 'stdout.log'}")

    def stop(self, kill: bool = False, timeout: float = 30) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL if kill else signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()
        self.wait_listening()



class KafkaCluster:
    """``brokers`` KRaft nodes: node 1 broker+controller, the others brokers on its quorum."""

    def __init__(self, lib: pathlib.Path, root: pathlib.Path, brokers: int = 1, settings: dict | None = None,
                 listeners: dict | None = None, security_protocols: dict | None = None,
                 log_level: str = "INFO", format_args: list | tuple = (), loggers: dict | None = None):
        self.lib, self.root = lib, root
        self.classpath = classpath(lib)
        self.cluster_id = _cluster_id()
        self.settings = dict(settings or {})
        # name -> callable(node) giving "host:port", for SASL/SSL listeners next to PLAINTEXT
        self._listeners = dict(listeners or {})
        self.security_protocols = dict(security_protocols or {})
        # extra arguments of the storage tool's format on the controller node, e.g.
        # ("--add-scram", "SCRAM-SHA-512=[name=ops,password=s3cret]"): users before the first start
        self.format_args = list(format_args)
        self.log_level = log_level
        # logger name -> level, besides the root's: e.g. {"kafka.authorizer.logger": "DEBUG"}
        self.loggers = dict(loggers or {})
        self.nodes = [KafkaNode(self, 1, controller=True)]
        self.nodes += [KafkaNode(self, n, controller=False) for n in range(2, brokers + 1)]

    def extra_listeners(self, node: KafkaNode) -> dict:
        return {name: port_of(node) for name, port_of in self._listeners.items()}

    @property
    def controller_address(self) -> str:
        return f"127.0.0.1:{self.nodes[0].controller_port}"

    @property
    def bootstrap(self) -> str:
        return ",".join(n.address for n in self.nodes)

    def node(self, node_id: int) -> KafkaNode:
        return next(n for n in self.nodes if n.node_id == node_id)

    def java(self, main: str, *args: str, log4j: pathlib.Path | None = None, timeout: float = 120,
             check: bool = True) -> subprocess.CompletedProcess:
        return run_java(self.classpath, main, *args, log4j=log4j, timeout=timeout, check=check)

    def tool(self, name: str, *args: str, check: bool = True, timeout: float = 120,
             stdin: str | None = None) -> subprocess.CompletedProcess:
        """One of Kafka's command-line tools (``kafka-consumer-groups``, ...), from the same jars."""
        return run_java(self.classpath, TOOLS[name], *args, check=check, timeout=timeout, stdin=stdin)

    def start(self) -> "KafkaCluster":
        for node in self.nodes:
            node.format()
        for node in self.nodes:
            node.start()
        for node in self.nodes:
            node.wait_listening()
        self.wait_brokers(len(self.nodes))
        return self

    def wait_brokers(self, count: int, timeout: float = 60) -> None:
        """Until Metadata lists ``count`` brokers: they have registered with the controller."""
        from kafka.admin import KafkaAdminClient

        deadline = time.monotonic() + timeout
        while True:
            try:
                admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=5000)
                try:
                    brokers = admin.describe_cluster()["brokers"]
                    if sum(not b.get("is_fenced") for b in brokers) >= count:
                        return
                finally:
                    admin.close()
            except Exception:
                if time.monotonic() > deadline:
                    raise
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kafka cluster at {self.bootstrap}: fewer than {count} brokers "
                                   f"after {timeout}s; see {self.root}")
            time.sleep(0.3)

    def stop(self) -> None:
        for node in reversed(self.nodes):
            node.stop()


def run_java(cp: str, main: str, *args: str, log4j: pathlib.Path | None = None, timeout: float = 120,
             check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess:
    cmd = ["java", "-Xmx512m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]
    if log4j is not None:
        cmd.append(f"-Dlog4j2.configurationFile={log4j}")
    feed = {"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}
    done = subprocess.run([*cmd, "-cp", cp, main, *args], capture_output=True, text=True,
                          timeout=timeout, **feed)
    if check and done.returncode != 0:
        raise RuntimeError(f"{main} {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


def _cluster_id() -> str:
    """A KRaft cluster id: a random UUID in Kafka's URL-safe base64, as ``kafka-storage random-uuid``."""
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
