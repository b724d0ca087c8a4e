"""`kgroup simulate upgrade-protocol` against the same roll with real clients on `kgroup serve`:
three kafka-python classic static consumers replaced one by one by librdkafka
``group.protocol=consumer`` consumers with the same group.instance.id.

What is compared, and why only that: the step at which the group became a consumer group, how many
times its epoch moved from the classic generation before the roll to the end, and how many partitions
went to another process than their owner before the roll. These follow from the coordinator's rules
alone (the first ConsumerGroupHeartbeat join converts the group and bumps its epoch once; a static
member replaced by instance id, with the same subscription, bumps nothing; the server-side assignor
keeps every partition where it is when the members and topics do not change), so the simulation and
the real fleet must agree on them. Times are not compared: real clients poll, start and close on
wall-clock threads, so unowned partition-seconds and time to Stable depend on the machine; and the
classic generation before the roll is not compared either (kafka-python may need more than one round
to form the group, depending on when its metadata arrives), only the epoch count from it.
"""

from __future__ import annotations

import time

from helpers.rdkafka_groups import PARTITIONS, TOPIC, new_consumer, owned, start_broker, start_classic_fleet

from kgroup.sim.model import SimParams
from kgroup.sim.scenarios import run_scenario

CLASSIC_SESSION_MS = 6000
INSTANCES = ("i0", "i1", "i2")


def _simulated():
    result = run_scenario("upgrade-protocol", SimParams(
        members=len(INSTANCES), topics=((TOPIC, PARTITIONS),), membership="static",
        session_timeout_ms=CLASSIC_SESSION_MS, heartbeat_interval_ms=600, restart_ms=1000))
    assert result.settled
    return (result.migration["converted_at_step"], result.migration["group_epoch_bumps"],
            result.partitions_moved)


class Owners:
    """Who (by instance id) holds each partition, sampled; which ones ever went to another owner."""

    def __init__(self, classic: dict):
        self.start = {p: instance for instance, c in classic.items() for _, p in c.assignment}
        self.moved: set = set()

    def sample(self, classic: dict, modern: dict) -> set:
        holders = {p: i for i, c in classic.items() for _, p in c.assignment}
        holders.update({p: i for i, c in modern.items() for p in owned(c)})
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


def test_upgrade_protocol_on_serve_matches_the_simulation(tmp_path):
    expected = _simulated()
    broker = start_broker(tmp_path)
    classic: dict = {}
    modern: dict = {}
    try:
        start_classic_fleet(broker, classic, INSTANCES, CLASSIC_SESSION_MS)
        generation = broker.group("cg").generation
        owners = Owners(classic)
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
        assert (converted_at, group.group_epoch - generation, len(owners.moved)) == expected
    finally:
        for consumer in modern.values():
            consumer.close()
        for consumer in classic.values():
            consumer.stop()
        broker.stop()
