"""Online migration on ``kgroup serve`` with real clients: kafka-python classic static consumers
replaced one by one by librdkafka ``group.protocol=consumer`` consumers with the same
group.instance.id (the group converts to a consumer group at the first), and back (it converts to
a classic group again when the last consumer-protocol member is replaced). The coordinator is the
real one behind the server; every partition stays owned by a running consumer except for handovers
shorter than the classic session timeout."""

from __future__ import annotations

import time

from helpers.rdkafka_groups import FAST_CONSUMER_GROUPS, PARTITIONS, TOPIC, new_consumer, owned, start_broker

from kgroup.client.fleet import FleetConsumer, wait_settled
from kgroup.server.harness import ThreadedBroker

CLASSIC_SESSION_MS = 6000
INSTANCES = ("i0", "i1", "i2")


class Ownership:
    """Who owns what among the running consumers, sampled; the longest time a partition had no owner."""

    def __init__(self):
        self.unowned_since: dict[int, float] = {}
        self.longest = 0.0

    def sample(self, classic: dict, modern: dict) -> set:
        now = time.monotonic()
        held = {p for c in classic.values() for _, p in c.assignment}
        held |= {p for c in modern.values() for p in owned(c)}
        for partition in range(PARTITIONS):
            if partition in held:
                since = self.unowned_since.pop(partition, None)
                if since is not None:
                    self.longest = max(self.longest, now - since)
            else:
                self.unowned_since.setdefault(partition, now)
        return held


def _pump(ownership, classic, modern, condition, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for consumer in modern.values():
            consumer.poll(0.05)
        if not modern:
            time.sleep(0.05)
        held = ownership.sample(classic, modern)
        if condition(held):
            return
    raise AssertionError(f"not reached in {timeout}s: classic {[sorted(c.assignment) for c in classic.values()]}, "
                         f"modern {[sorted(owned(c)) for c in modern.values()]}")


def _every_partition(held) -> bool:
    return held == set(range(PARTITIONS))


def _close_all(broker, classic: dict, modern: dict) -> None:
    for consumer in modern.values():
        consumer.close()
    for consumer in classic.values():
        consumer.stop()
    broker.stop()


def _is_consumer_group(snapshot) -> bool:
    return hasattr(snapshot, "group_epoch")     # a classic group's snapshot has a generation instead


def _stop_classic(ownership, classic, modern, instance):
    consumer = classic.pop(instance)
    ownership.sample(classic, modern)      # its partitions have no running owner from now on
    consumer.stop()


def test_a_static_fleet_rolls_from_classic_to_consumer_and_back(tmp_path):
    broker = start_broker(tmp_path)
    classic: dict = {}
    modern: dict = {}
    try:
        for instance in INSTANCES:
            classic[instance] = FleetConsumer(broker.bootstrap, "cg", [TOPIC], instance_id=instance,
                                              session_timeout_ms=CLASSIC_SESSION_MS)
        assert wait_settled(lambda: broker.group("cg"), classic.values(), PARTITIONS, timeout=60)
        ownership = Ownership()
        ownership.sample(classic, modern)

        # upgrade: each classic static consumer is replaced by a consumer-protocol one
        epochs = []
        for instance in INSTANCES:
            _stop_classic(ownership, classic, modern, instance)
            modern[instance] = new_consumer(broker, instance)
            _pump(ownership, classic, modern, lambda held: owned(modern[instance]) and _every_partition(held))
            assert _is_consumer_group(broker.group("cg"))       # converted at the first step
            epochs.append(broker.group("cg").group_epoch)
        group = broker.group("cg")
        assert set(group.static_members) == set(INSTANCES)
        assert all(m.classic is None for m in group.members)
        # the conversion bumps the epoch once (the group reads its topics' metadata); replacing a
        # static member by instance id afterwards moves nothing
        assert epochs == [epochs[0]] * len(INSTANCES)

        # downgrade: each consumer-protocol consumer is replaced by a classic one
        for instance in INSTANCES:
            modern.pop(instance).close()        # a static member's temporary leave (epoch -2)
            ownership.sample(classic, modern)
            classic[instance] = FleetConsumer(broker.bootstrap, "cg", [TOPIC], instance_id=instance,
                                              session_timeout_ms=CLASSIC_SESSION_MS)
            _pump(ownership, classic, modern,
                  lambda held: classic[instance].assignment and _every_partition(held))
            # still a consumer group while a consumer-protocol member is left; classic after the last
            assert _is_consumer_group(broker.group("cg")) == (instance != INSTANCES[-1])
        assert wait_settled(lambda: broker.group("cg"), classic.values(), PARTITIONS, timeout=60)
        assert not _is_consumer_group(broker.group("cg"))      # a classic group again
        assert broker.group("cg").generation == epochs[-1]       # replaced, not rebalanced
        assert ownership.longest < CLASSIC_SESSION_MS / 1000, ownership.longest
    finally:
        _close_all(broker, classic, modern)


def test_a_restarted_server_keeps_a_mixed_group(tmp_path):
    """Classic and consumer-protocol members in one consumer group survive a restart on the same
    --log-dir (replayed from its records), and rejoin it with their partitions."""
    config = {**FAST_CONSUMER_GROUPS, "group.consumer.session.timeout.ms": "60000",
              "group.consumer.max.session.timeout.ms": "60000"}
    broker = ThreadedBroker(tmp_path / "logs", topics=[(TOPIC, PARTITIONS)], config=config)
    classic = {i: FleetConsumer(broker.bootstrap, "cg", [TOPIC], instance_id=i, session_timeout_ms=30_000)
               for i in ("k0", "k1")}
    modern: dict = {}
    ownership = Ownership()
    try:
        assert wait_settled(lambda: broker.group("cg"), classic.values(), PARTITIONS, timeout=60)
        _stop_classic(ownership, classic, modern, "k0")
        modern["k0"] = new_consumer(broker, "k0")
        _pump(ownership, classic, modern, lambda held: owned(modern["k0"]) and _every_partition(held)
              and broker.group("cg").state == "Stable")
        before = broker.group("cg")
        assert _is_consumer_group(before) and sorted(m.classic is None for m in before.members) == [False, True]
    finally:
        _close_all(broker, classic, modern)
    broker = ThreadedBroker(tmp_path / "logs", config=config)
    classic, modern = {}, {}
    try:
        after = broker.group("cg")
        assert (after.group_epoch, after.static_members, after.target) == \
            (before.group_epoch, before.static_members, before.target)
        assert {m.instance_id: m.classic for m in after.members} == {m.instance_id: m.classic for m in before.members}
        classic["k1"] = FleetConsumer(broker.bootstrap, "cg", [TOPIC], instance_id="k1", session_timeout_ms=30_000)
        modern["k0"] = new_consumer(broker, "k0")
        _pump(ownership, classic, modern, lambda held: _every_partition(held) and owned(modern["k0"])
              and classic["k1"].assignment and broker.group("cg").state == "Stable")
        assert broker.group("cg").group_epoch == before.group_epoch
    finally:
        _close_all(broker, classic, modern)
