"""`kgroup simulate upgrade-protocol` against the same roll with real clients on `kgroup serve`:
three kafka-python classic static consumers replaced one by one by librdkafka
``group.protocol=consumer`` consumers with the same group.instance.id; then `downgrade-protocol`,
the same consumers replaced back by classic ones.

What is compared, and why only that: the step at which the group became a consumer group, how many
times its epoch moved from the classic generation before the roll to the end, and how many partitions
went to another process than their owner before the roll. These follow from the coordinator's rules
alone (the first ConsumerGroupHeartbeat join converts the group and bumps its epoch once; a static
member replaced by instance id, with the same subscription, bumps nothing; the server-side assignor
keeps every partition where it is when the members and topics do not change), so the simulation and
the real fleet must agree on them. Back, the same three: the group becomes a classic one at the last
step (a classic static joiner replacing the last consumer-protocol member, no rebalance), the
generation it gets is the group epoch it had, and nothing moves. Times are not compared: real clients poll, start and close on
wall-clock threads, so unowned partition-seconds and time to Stable depend on the machine; and the
classic generation before the roll is not compared either (kafka-python may need more than one round
to form the group, depending on when its metadata arrives), only the epoch count from it.
"""

from __future__ import annotations

import time

from helpers.rdkafka_groups import (FAST_CONSUMER_GROUPS, PARTITIONS, TOPIC, new_consumer, owned, start_broker,
                                    start_classic_fleet)

from kgroup.client.fleet import FleetConsumer, wait_settled
from kgroup.sim.model import SimParams
from kgroup.sim.scenarios import run_scenario

CLASSIC_SESSION_MS = 6000
INSTANCES = ("i0", "i1", "i2")


def _simulated(scenario: str) -> tuple:
    """(step of the conversion, epoch moves across the roll, partitions moved), on the serve broker's
    consumer-group settings."""
    result = run_scenario(scenario, SimParams(
        members=len(INSTANCES), topics=((TOPIC, PARTITIONS),), membership="static",
        session_timeout_ms=CLASSIC_SESSION_MS, heartbeat_interval_ms=600, restart_ms=1000,
        broker_config=tuple(FAST_CONSUMER_GROUPS.items())))
    assert result.settled and result.errors == []
    m = result.migration
    step = m["converted_at_step"] if scenario == "upgrade-protocol" else m["converted_back_at_step"]
    return step, m["group_epoch_bumps"] + m["classic_rebalances"], result.partitions_moved


def _epoch(snapshot) -> int:
    """A consumer group's epoch, or a classic group's generation."""
    return snapshot.group_epoch if hasattr(snapshot, "group_epoch") else snapshot.generation


class Owners:
    """Who (by instance id) holds each partition, sampled; which ones ever went to another owner."""

    def __init__(self, classic: dict, modern: dict):
        self.start = self._holders(classic, modern)
        self.moved: set = set()

    @staticmethod
    def _holders(classic: dict, modern: dict) -> dict:
        holders = {p: i for i, c in classic.items() for _, p in c.assignment}
        holders.update({p: i for i, c in modern.items() for p in owned(c)})
        return holders

    def sample(self, classic: dict, modern: dict) -> set:
        holders = self._holders(classic, modern)
        self.moved |= {p for p, i in holders.items() if self.start.get(p) != i}
        return set(holders)


def _pump(owners, classic, modern, condition, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for consumer in modern.values():
            consumer.poll(0.05)
        if condition(owners.sample(classic, modern)):
            return
    raise AssertionError(f"not reached in {timeout}s")


def test_upgrade_and_downgrade_protocol_on_serve_match_the_simulation(tmp_path):
    upgrade, downgrade = _simulated("upgrade-protocol"), _simulated("downgrade-protocol")
    broker = start_broker(tmp_path)
    classic: dict = {}
    modern: dict = {}
    try:
        start_classic_fleet(broker, classic, INSTANCES, CLASSIC_SESSION_MS)
        generation = broker.group("cg").generation
        owners = Owners(classic, modern)
        converted_at = None
        for step, instance in enumerate(INSTANCES, 1):
            classic.pop(instance).stop()
            modern[instance] = new_consumer(broker, instance)
            _pump(owners, classic, modern,
                  lambda held: owned(modern[instance]) and held == set(range(PARTITIONS)))
            if converted_at is None and hasattr(broker.group("cg"), "group_epoch"):
                converted_at = step
        group = broker.group("cg")
        assert all(m.classic is None for m in group.members)
        assert (converted_at, group.group_epoch - generation, len(owners.moved)) == upgrade

        epoch = group.group_epoch
        owners = Owners(classic, modern)
        converted_at = None
        for step, instance in enumerate(INSTANCES, 1):
            modern.pop(instance).close()        # a static member's temporary leave (epoch -2)
            classic[instance] = FleetConsumer(broker.bootstrap, "cg", [TOPIC], instance_id=instance,
                                              session_timeout_ms=CLASSIC_SESSION_MS)
            _pump(owners, classic, modern,
                  lambda held: classic[instance].assignment and held == set(range(PARTITIONS)))
            if converted_at is None and not hasattr(broker.group("cg"), "group_epoch"):
                converted_at = step
        assert wait_settled(lambda: broker.group("cg"), classic.values(), PARTITIONS, timeout=60)
        owners.sample(classic, modern)
        assert (converted_at, _epoch(broker.group("cg")) - epoch, len(owners.moved)) == downgrade
    finally:
        for consumer in modern.values():
            consumer.close()
        for consumer in classic.values():
            consumer.stop()
        broker.stop()
