"""A side: where a scenario is played — a bootstrap address, how topics are made there, and (for
Java members) the compiled GroupMember. The real Kafka comes from the tests' ``kafka`` fixture or
any cluster an operator names; ``serve_side`` starts one ``kgroup serve`` subprocess with the same
``group.*`` settings as the test Kafka (tests/helpers/kafka_cluster.py GROUP_SETTINGS)."""

from __future__ import annotations

import threading
import time


class Side:
    def __init__(self, name: str, bootstrap: str, java_classpath=None, stop=None):
        self.name, self.bootstrap = name, bootstrap
        self.java_classpath = java_classpath    # () -> classpath, compiled on first use
        self._stop = stop

    def admin(self):
        from kafka.admin import KafkaAdminClient

        return KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=15000)

    def create_topic(self, topic: str, partitions: int) -> None:
        from kafka.admin import NewTopic

        admin = self.admin()
        try:
            admin.create_topics([NewTopic(topic, partitions, 1)])
        finally:
            admin.close()
        self.wait_partitions(topic, partitions)

    def add_partitions(self, topic: str, count: int) -> None:
        from kafka.admin import NewPartitions

        admin = self.admin()
        try:
            admin.create_partitions({topic: NewPartitions(count)})
        finally:
            admin.close()
        self.wait_partitions(topic, count)

    def wait_partitions(self, topic: str, count: int, timeout: float = 30) -> None:
        """Until Metadata shows the topic with ``count`` partitions (a broker learns of a topic
        from the controller a moment after it is created)."""
        from kgroup.client.wire import ClusterClient
        from kafka.protocol.metadata import MetadataRequest

        deadline = time.monotonic() + timeout
        with ClusterClient(self.bootstrap, timeout_s=10) as client:
            while time.monotonic() < deadline:
                response = client.send(MetadataRequest(version=7, topics=[topic],
                                                       allow_auto_topic_creation=False))
                t = response.topics[0]
                if not t.error_code and len(t.partitions) == count and all(
                        p.leader_id >= 0 for p in t.partitions):
                    return
                time.sleep(0.1)
        raise RuntimeError(f"{self.name}: topic {topic} does not have {count} partitions after {timeout}s")

    def stop(self):
        if self._stop is not None:
            self._stop()


def serve_side(log_dir, java_classpath=None) -> Side:
    """``kgroup serve`` in a subprocess with the test Kafka's group settings."""
    from kgroup.server.harness import SubprocessBroker

    from helpers.kafka_cluster import GROUP_SETTINGS

    broker = SubprocessBroker(log_dir, config=GROUP_SETTINGS, stderr=open(f"{log_dir}.stderr", "w"))
    return Side("kgroup", broker.bootstrap, java_classpath, stop=broker.terminate)


def java_compiler(tmp_root):
    """() -> the classpath of tests/live/java compiled against the Kafka 4.4 client, once."""
    lock, done = threading.Lock(), []

    def classpath():
        from helpers.kafka_groups import java_classpath

        with lock:
            if not done:
                done.append(java_classpath(tmp_root))
            return done[0]
    return classpath
