"""The simulation against reality: real kafka-python consumers on `kgroup serve` bounce the same way.

A rolling bounce of three range-assigned consumers, restarted one at a time with the group
settling in between, as the simulation does. The real run's rebalances and generations
during the bounce must match the simulated ones exactly.
"""

from __future__ import annotations

import threading
import time

import pytest
from kafka import KafkaConsumer
from kafka.coordinator.assignors.range import RangePartitionAssignor

from kgroup.server.harness import ThreadedBroker
from kgroup.sim.model import SimParams
from kgroup.sim.scenarios import run_scenario

pytestmark = pytest.mark.timeout(60)

TOPIC = "events"
PARTITIONS = 6
MEMBERS = 3
SESSION_MS = 10_000
INITIAL_DELAY_MS = 1_500
POLL_MS = 2_000


@pytest.fixture
def broker(tmp_path):
    b = ThreadedBroker(tmp_path / "logs", topics=[(TOPIC, PARTITIONS)],
                       config={"group.initial.rebalance.delay.ms": str(INITIAL_DELAY_MS)})
    yield b
    b.stop()


class ConsumerProcess:
    """One real consumer polling in its own thread, as an application's poll loop does."""

    def __init__(self, b, group, name, static):
        self.assigned = frozenset()
        self.error = None
        self._stop = threading.Event()
        self._args = (b, group, name, static)
        self._thread = threading.Thread(target=self._run, name=f"consumer-{name}", daemon=True)
        self._thread.start()

    def _run(self):
        b, group, name, static = self._args
        try:
            c = KafkaConsumer(bootstrap_servers=b.bootstrap, group_id=group,
                              group_instance_id=name if static else None, client_id=name,
                              session_timeout_ms=SESSION_MS, heartbeat_interval_ms=300,
                              partition_assignment_strategy=[RangePartitionAssignor],
                              enable_auto_commit=False, auto_offset_reset="earliest")
            # The topic's metadata first: a kafka-python leader that assigned before it knew the topic
            # rejoins once the metadata arrives, an extra generation of the client's, not the group's.
            c.partitions_for_topic(TOPIC)
            c.subscribe([TOPIC])
            try:
                while not self._stop.is_set():
                    # A poll longer than a join: kafka-python 3.0.12 drops a join round that
                    # completes between a poll that timed out mid-join and the next poll, and
                    # rejoins (its leader: an extra generation). With 100 ms polls on a loaded
                    # machine that happened in about one run in five.
                    c.poll(timeout_ms=POLL_MS)
                    self.assigned = frozenset(tp.partition for tp in c.assignment())
            finally:
                c.close(autocommit=False)       # dynamic: LeaveGroup; static: nothing
        except Exception as exc:   # noqa: BLE001 - reported by the test thread
            self.error = exc

    def close(self):
        self._stop.set()
        self._thread.join(15)
        assert not self._thread.is_alive(), "consumer thread did not stop"
        assert self.error is None, self.error


def snapshot(b, group):
    return b.group(group)


def settle(b, group, consumers, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.05)
        g = snapshot(b, group)
        held = sorted(p for c in consumers for p in c.assigned)
        if (g is not None and g.state == "Stable" and len(g.members) == len(consumers)
                and held == list(range(PARTITIONS))):
            time.sleep(0.5)                       # and it stays so
            again = snapshot(b, group)
            if again.generation == g.generation and again.state == "Stable":
                return g
    errors = [c.error for c in consumers if c.error]
    raise AssertionError(f"group {group} did not settle: {snapshot(b, group)} {errors}")


def real_rolling_bounce(b, static):
    """Returns (generation after forming, generation at the end) of a real rolling bounce."""
    group = "static" if static else "dynamic"
    names = [f"c{i}" for i in range(MEMBERS)]
    consumers = [ConsumerProcess(b, group, n, static) for n in names]
    try:
        start = settle(b, group, consumers).generation
        for i, name in enumerate(names):
            consumers[i].close()
            if not static:
                settle(b, group, consumers[:i] + consumers[i + 1:])   # the leave's round ends
            consumers[i] = ConsumerProcess(b, group, name, static)
            settle(b, group, consumers)
        return start, snapshot(b, group).generation
    finally:
        for c in consumers:
            c._stop.set()
        for c in consumers:
            c._thread.join(15)


@pytest.mark.parametrize("membership", ["static", "dynamic"])
def test_real_consumers_match_the_simulation(broker, membership):
    simulated = run_scenario("rolling-bounce", SimParams(
        members=MEMBERS, topics=((TOPIC, PARTITIONS),), membership=membership, assignor="range",
        session_timeout_ms=SESSION_MS, heartbeat_interval_ms=300, restart_ms=1_000,
        initial_rebalance_delay_ms=INITIAL_DELAY_MS))
    start, end = real_rolling_bounce(broker, membership == "static")
    # The forming of the group is not part of the scenario: kafka-python's leader may rejoin
    # once topic metadata arrives after its first assignment, so the real group can start at
    # generation 2. From there on, every generation must match.
    assert start >= simulated.generation_start == 1
    assert end - start == simulated.generation_end - simulated.generation_start
    assert end - start == simulated.rebalances
    assert simulated.rebalances == (0 if membership == "static" else 2 * MEMBERS)
