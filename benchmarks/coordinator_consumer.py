"""The consumer-protocol half of `benchmarks/coordinator.py`: KIP-848 heartbeats on the coordinator.

1,000 static members (ConsumerGroupHeartbeat v1, client-made member ids, the default ``uniform``
assignor) subscribe to one topic of 3,000 partitions and heartbeat until every member owns its
target assignment, then a few steady-state rounds; then a full rolling bounce: each member leaves
with epoch -2 (a static member's temporary leave) and rejoins with epoch 0, a new member id and its
instance id (same assignment, no group-epoch bump), then confirms what it owns. All in virtual time, on one core.
Members echo exactly what the coordinator last gave them as their owned partitions, as a client
does once it has revoked and assigned. Heartbeats are counted inside the coordinator's ``handle``
and ``advance`` (requests arrive already built, as from the wire in `serve`); the same-run
baseline builds and encodes the very same requests, nothing else.
"""

from __future__ import annotations

import itertools
import time
import uuid

from kgroup.assignors.server_api import GroupSpec, MemberSubscription, TopicMetadata, get_server_assignor
from kgroup.coordinator import GroupCoordinator
from kgroup.protocol import ConsumerGroupHeartbeatRequest

Heartbeat = ConsumerGroupHeartbeatRequest[1]
TopicPartitions = ConsumerGroupHeartbeatRequest.TopicPartitions
TOPIC = "orders"
TOPIC_ID = uuid.UUID("7f6c2b1e-0000-4000-8000-00000000beef")
GROUP = "bench-848"
STEADY_ROUNDS = 3
TARGET_RATE = 30_000      # heartbeats/s on one core (issue 13)
_PHASES = (   # (phase, label, held to TARGET_RATE, what it does)
    ("converge", "join+converge", False, "every join bumps the group epoch: the assignor runs for the "
                                         "whole group once per join, as in Kafka"),
    ("steady", "steady state", True, "heartbeats carrying what each member owns"),
    ("bounce", "rolling bounce", True, "leave -2, rejoin 0 with a new member id, confirm"))


def heartbeat_request(member_id: str, epoch: int, instance: str, owned=None) -> Heartbeat:
    """A join (epoch 0) carries the subscription; later heartbeats only what the member owns."""
    joining = epoch == 0
    return Heartbeat(group_id=GROUP, member_id=member_id, member_epoch=epoch, instance_id=instance,
                     rack_id=None, rebalance_timeout_ms=300_000 if joining else -1,
                     subscribed_topic_names=[TOPIC] if joining else None, subscribed_topic_regex=None,
                     server_assignor=None, topic_partitions=[] if joining else owned)


def _owned(response, previous):
    """What the member owns after this answer: the new assignment if one came, else the old."""
    if response.assignment is None:
        return previous
    return [TopicPartitions(topic_id=tp.topic_id, partitions=list(tp.partitions))
            for tp in response.assignment.topic_partitions]


class _Member:
    __slots__ = ("instance", "member_id", "epoch", "owned")

    def __init__(self, instance: str, member_id: str):
        self.instance, self.member_id, self.epoch, self.owned = instance, member_id, 0, []


def run_consumer_coordinator(n: int, partitions: int) -> dict:
    """Returns heartbeat counts and seconds inside the coordinator per phase, and wall time."""
    counter = itertools.count()
    coord = GroupCoordinator(config={}, keep_log=False,
                             uuid_source=lambda: str(uuid.UUID(int=next(counter))))
    coord.set_topics({TOPIC: (TOPIC_ID, partitions)})
    ids = itertools.count(1)
    members = [_Member(f"instance-{k}", str(uuid.UUID(int=next(ids)))) for k in range(n)]
    inside = {"converge": 0.0, "steady": 0.0, "bounce": 0.0}
    beats = {"converge": 0, "steady": 0, "bounce": 0}

    def beat(member, phase, epoch=None):
        request = heartbeat_request(member.member_id, member.epoch if epoch is None else epoch,
                                    member.instance, member.owned)
        t = time.perf_counter()
        response = coord.handle(request).response
        coord.take_log()
        inside[phase] += time.perf_counter() - t
        beats[phase] += 1
        assert response.error_code == 0, response
        return response

    def converged():
        group = coord.group(GROUP)
        return group.state == "Stable"

    start = time.perf_counter()
    rounds = 0
    while True:        # join, then heartbeat rounds 1 ms apart until the group is Stable
        for member in members:
            response = beat(member, "converge")
            member.epoch, member.owned = response.member_epoch, _owned(response, member.owned)
        rounds += 1
        t = time.perf_counter()
        coord.advance(1)
        inside["converge"] += time.perf_counter() - t
        if converged():
            break
        assert rounds < 100, "the group did not converge"
    group_epoch = coord.group(GROUP).group_epoch
    for _ in range(STEADY_ROUNDS):     # steady state: every member heartbeats what it owns
        for member in members:
            beat(member, "steady")
        t = time.perf_counter()
        coord.advance(1)
        inside["steady"] += time.perf_counter() - t
    for member in members:        # rolling bounce: leave with -2, rejoin with 0 and a new id, confirm
        beat(member, "bounce", epoch=-2)
        member.member_id = str(uuid.UUID(int=next(ids)))
        response = beat(member, "bounce", epoch=0)
        member.epoch, member.owned = response.member_epoch, _owned(response, member.owned)
        beat(member, "bounce")
        t = time.perf_counter()
        coord.advance(1)
        inside["bounce"] += time.perf_counter() - t
    wall = time.perf_counter() - start
    group = coord.group(GROUP)
    assert group.state == "Stable" and group.group_epoch == group_epoch, (group.state, group.group_epoch)
    return {"rounds": rounds, "beats": beats, "inside": inside, "wall": wall, "group_epoch": group_epoch}


def run_consumer_baseline(n: int, rounds: int, partitions: int) -> tuple[int, float]:
    """Build and encode the same heartbeats (same counts, same owned-partition sizes), nothing else."""
    share = [TopicPartitions(topic_id=TOPIC_ID, partitions=list(range(partitions // n)))]
    members = [(f"instance-{k}", str(uuid.UUID(int=k + 1))) for k in range(n)]
    built = 0
    start = time.perf_counter()
    for round_ in range(rounds + STEADY_ROUNDS):
        for instance, member_id in members:
            heartbeat_request(member_id, 0 if round_ == 0 else 2, instance, share).encode()
            built += 1
    for instance, member_id in members:
        heartbeat_request(member_id, -2, instance, share).encode()
        heartbeat_request(member_id, 0, instance).encode()
        heartbeat_request(member_id, 2, instance, share).encode()
        built += 3
    return built, time.perf_counter() - start


def time_uniform(n: int, partitions: int) -> float:
    """Seconds for one ``uniform`` assignment of n members x partitions from scratch."""
    spec = GroupSpec(members={str(uuid.UUID(int=k + 1)): MemberSubscription(frozenset([TOPIC_ID]))
                              for k in range(n)})
    topics = {TOPIC_ID: TopicMetadata(TOPIC_ID, TOPIC, partitions)}
    assignor = get_server_assignor("uniform")
    start = time.perf_counter()
    assignor.assign(spec, topics)
    return time.perf_counter() - start


def report(n: int, partitions: int, repeat: int) -> None:
    runs = [run_consumer_coordinator(n, partitions) for _ in range(repeat)]
    run = min(runs, key=lambda r: r["wall"])
    base = min((run_consumer_baseline(n, run["rounds"], partitions) for _ in range(repeat)),
               key=lambda r: r[1])
    uniform = min(time_uniform(n, partitions) for _ in range(repeat))
    beats, inside = run["beats"], run["inside"]
    total, spent = sum(beats.values()), sum(inside.values())
    print(f"consumer protocol (KIP-848): {n} static members, {partitions} partitions, uniform assignor")
    print(f"  target                        >= {TARGET_RATE:,} heartbeats/s inside the coordinator on one core "
          f"(steady state, rolling bounce); uniform assignor {n} x {partitions} < 100 ms")
    print(f"  rounds until Stable           {run['rounds']} (group epoch {run['group_epoch']})")
    for phase, label, held, what in _PHASES:
        rate = beats[phase] / inside[phase]
        verdict = ("target met, " if rate >= TARGET_RATE else "BELOW TARGET, ") if held else ""
        print(f"  {label:29s} {rate:,.0f} heartbeats/s ({beats[phase]} in {inside[phase] * 1000:.1f} ms; "
              f"{verdict}{what})")
    print(f"  all heartbeats                {total / spent:,.0f}/s inside; wall time (requests built too) "
          f"{run['wall'] * 1000:.1f} ms = {total / run['wall']:,.0f}/s")
    print(f"  baseline (build+encode)       {base[1] * 1000:.1f} ms for {base[0]} requests = "
          f"{base[0] / base[1]:,.0f}/s")
    print(f"  ratio coordinator/baseline    {spent / base[1]:.2f}x (inside), {run['wall'] / base[1]:.2f}x (wall)")
    print(f"  uniform assignor {n} x {partitions}  {uniform * 1000:.1f} ms (from scratch, best of {repeat})")
