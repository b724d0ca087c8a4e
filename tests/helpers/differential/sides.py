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
        self.wait_group_coordinator_sees(topic, partitions)

    def add_partitions(self, topic: str, count: int) -> None:
        from kafka.admin import NewPartitions

        admin = self.admin()
        try:
            admin.create_partitions({topic: NewPartitions(count)})
        finally:
            admin.close()
        self.wait_partitions(topic, count)
        self.wait_group_coordinator_sees(topic, count)

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

    def wait_group_coordinator_sees(self, topic: str, count: int, timeout: float = 30) -> None:
        """Until a throwaway consumer group subscribed to ``topic`` is assigned ``count`` partitions.

        Kafka's group coordinator learns of topics from its own metadata publisher, a moment after
        Metadata answers show them (seconds on a loaded machine): a member joining in between is
        assigned nothing and the group takes one more epoch than on a side that knew the topic,
        which is timing, not behaviour. The probe group joins and leaves; its records are its own."""
        import base64
        import uuid

        from kgroup.client.wire import ClusterClient
        from kgroup.protocol import ConsumerGroupHeartbeatRequest

        group = f"probe-{topic}-{count}"
        member_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        deadline = time.monotonic() + timeout

        def beat(epoch, topics):
            return lambda _coordinator: ConsumerGroupHeartbeatRequest[1](
                group_id=group, member_id=member_id, member_epoch=epoch, instance_id=None, rack_id=None,
                rebalance_timeout_ms=10_000 if epoch == 0 else -1, subscribed_topic_names=topics,
                subscribed_topic_regex=None, server_assignor="uniform",
                topic_partitions=[] if epoch == 0 else None)

        with ClusterClient(self.bootstrap, timeout_s=10) as client:
            epoch = 0
            try:
                while True:
                    response, _ = client.to_coordinator(group, beat(epoch, [topic] if epoch == 0 else None),
                                                        "ConsumerGroupHeartbeat")
                    if response.error_code:
                        raise RuntimeError(f"{self.name}: probe heartbeat for {topic}: error {response.error_code}")
                    epoch = response.member_epoch
                    if response.assignment is not None and sum(
                            len(tp.partitions) for tp in response.assignment.topic_partitions) == count:
                        return
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"{self.name}: the group coordinator does not assign {count} "
                                           f"partitions of {topic} after {timeout}s")
                    time.sleep(0.2)
            finally:
                if epoch:
                    client.to_coordinator(group, beat(-1, None), "ConsumerGroupHeartbeat")

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
