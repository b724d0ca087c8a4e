"""Real kafka-python consumers, each polling on its own thread: the demo's (and tests') fleet.

A KafkaConsumer must be driven by poll() to join and rebalance, and is not thread-safe, so each
consumer lives entirely on one thread. Stopping a static consumer sends no LeaveGroup (KIP-345),
which is what makes a rolling restart invisible to the group. Polls are long (3 s by default):
in kafka-python 3.0.12 a poll that times out while its JoinGroup/SyncGroup task is in flight can
lose the join completion (BaseCoordinator.join_group_async returns on the timer and, if the task
then succeeds, the next poll no longer sees need_rejoin(), so heartbeats are never re-enabled and
the member expires). A poll longer than any join keeps that from happening.

Their range assignor is kafka-python's with one bug worked around: it splits a topic's members
into static and dynamic with ``itertools.groupby`` over the members as the JoinGroup lists them, so
a static member listed before a dynamic one and another after it loses the first to the second.
Kafka lists a classic group's members in its member map's hash order, so that happens to a mixed
group at random; ``_RangeAssignor`` hands it the static members first.
"""

from __future__ import annotations

import threading
import time


def _range_assignor():
    from kafka.coordinator.assignors.range import RangePartitionAssignor

    class _RangeAssignor(RangePartitionAssignor):
        """kafka-python's range assignor, given the static members first (see the module's doc)."""

        @classmethod
        def assign(cls, cluster, members):
            ordered = sorted(members, key=lambda member: member.group_instance_id is None)
            return super().assign(cluster, ordered)
    return _RangeAssignor


class FleetConsumer:
    """One consumer on its own thread; `assignment` is its latest assignment as (topic, partition) pairs."""

    def __init__(self, bootstrap: str, group: str, topics, instance_id: str | None = None,
                 session_timeout_ms: int = 6000, client_id: str | None = None,
                 poll_timeout_ms: int = 3000, **settings):
        self.instance_id = instance_id
        self.poll_timeout_ms = poll_timeout_ms
        self.assignment: frozenset = frozenset()
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._ready = threading.Event()
        config = dict(bootstrap_servers=bootstrap, group_id=group, group_instance_id=instance_id,
                      session_timeout_ms=session_timeout_ms,
                      heartbeat_interval_ms=max(100, session_timeout_ms // 10),
                      enable_auto_commit=True, auto_commit_interval_ms=500, auto_offset_reset="earliest",
                      client_id=client_id or f"kgroup-demo-{instance_id or 'dynamic'}")
        config.setdefault("partition_assignment_strategy", (_range_assignor(),))
        config.update(settings)
        self._config = config
        self._topics = list(topics)
        self._thread = threading.Thread(target=self._run, name=f"consumer-{instance_id}", daemon=True)
        self._thread.start()

    def _run(self):
        from kafka import KafkaConsumer

        consumer = None
        try:
            consumer = KafkaConsumer(**self._config)
            for topic in self._topics:  # a leader without topic metadata would assign itself nothing
                consumer.partitions_for_topic(topic)
            consumer.subscribe(self._topics)
            self._ready.set()
            while not self._stop.is_set():
                consumer.poll(timeout_ms=self.poll_timeout_ms)
                self.assignment = frozenset((tp.topic, tp.partition) for tp in consumer.assignment())
        except BaseException as exc:  # noqa: BLE001 - kept for the owner to report
            self.error = exc
        finally:
            self._ready.set()
            if consumer is not None:
                try:
                    consumer.close(autocommit=False)
                except Exception:  # noqa: BLE001 - closing a consumer of a stopped broker may fail
                    pass

    def stop(self, timeout: float = 10.0) -> None:
        """Stop polling and close (a static consumer leaves no LeaveGroup behind)."""
        self._stop.set()
        self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()


def wait_until(predicate, timeout: float, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


def stop_all(consumers, timeout: float = 10.0) -> None:
    """Stop several consumers at once (each stop waits out one poll)."""
    consumers = list(consumers)
    for consumer in consumers:
        consumer._stop.set()
    for consumer in consumers:
        consumer.stop(timeout)


def wait_settled(group_snapshot, consumers, partitions: int, timeout: float = 30.0, quiet: float = 1.2) -> bool:
    """Until the group is Stable with every consumer, each owning something and all partitions owned,
    at one generation for `quiet` seconds.

    The quiet period matters: a kafka-python leader that assigned before its topic metadata arrived
    rejoins about half a second later, which starts one more rebalance.
    """
    consumers = list(consumers)
    deadline = time.monotonic() + timeout
    since, generation = None, None
    while time.monotonic() < deadline:
        g = group_snapshot()
        owned = sorted(p for c in consumers for _, p in c.assignment)
        ok = (g is not None and g.state == "Stable" and len(g.members) == len(consumers)
              and owned == list(range(partitions))
              and all(c.assignment for c in consumers[:partitions]))
        if not ok or g.generation != generation:
            since, generation = (time.monotonic(), g.generation) if ok else (None, None)
        elif time.monotonic() - since >= quiet:
            return True
        time.sleep(0.05)
    return False
