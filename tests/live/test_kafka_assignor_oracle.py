"""kgroup's server-side assignors against Kafka 4.4's own, partition by partition.

``AssignorOracle.java`` runs Kafka's ``UniformAssignor`` and ``RangeAssignor`` from the
group-coordinator jar, fed as Kafka's coordinator feeds them: members in a ``TimelineHashMap`` in
the order they joined, the members an operation adds walked last, all put into a ``new HashMap``.
Groups evolve through random joins, leaves and partition increases (each step starts from Kafka's
previous answer, so one difference does not cascade); at every step both must give every member the
same partitions and walk the members in the same order (the order Kafka writes the target
assignment records in). Member ids are what Kafka 4.4's clients send: random Uuids as text.
"""

from __future__ import annotations

import base64
import random
import subprocess
import uuid

import pytest

from helpers.kafka_groups import java_classpath
from kgroup.assignors.server_api import GroupSpec, TopicMetadata, get_server_assignor, member_subscription

STEPS = 400


def _uuid_text(rng: random.Random) -> str:
    return base64.urlsafe_b64encode(uuid.UUID(int=rng.getrandbits(128)).bytes).decode().rstrip("=")


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    cp = java_classpath(tmp_path_factory.mktemp("oracle"))
    proc = subprocess.Popen(["java", "-cp", cp, "AssignorOracle"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)

    def ask(line: str) -> str:
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
        return proc.stdout.readline().rstrip("\n")
    yield ask
    proc.stdin.close()
    proc.wait(timeout=30)


class _Group:
    """A group as its coordinator would hold it: members in join order, each one's current target."""

    def __init__(self, rng: random.Random, topics: list[str], counts: list[int]):
        self.rng, self.topics, self.counts = rng, topics, counts
        self.members: dict[str, tuple[frozenset, dict]] = {}    # id -> (subscribed indices, current)
        self.high_water = 0

    def case(self, assignor: str, added: set) -> str:
        topics = ",".join(f"{t}:{c}" for t, c in zip(self.topics, self.counts))
        members = ",".join(
            f"{m}/{int(m in added)}/-/{'+'.join(map(str, sorted(subs)))}/"
            + ";".join(f"{t}={'.'.join(map(str, sorted(ps)))}" for t, ps in current.items() if ps)
            for m, (subs, current) in self.members.items())
        return f"{assignor}|{self.high_water}|{topics}|{members}"

    def kgroup_answer(self, assignor: str, added: set) -> str:
        specs = {m: member_subscription(frozenset(self.topics[i] for i in subs),
                                        {self.topics[t]: frozenset(ps) for t, ps in current.items() if ps},
                                        None, None)
                 for m, (subs, current) in self.members.items()}
        kinds = {subs for subs, _ in self.members.values()}
        spec = GroupSpec(specs, "HOMOGENEOUS" if len(kinds) < 2 else "HETEROGENEOUS",
                         frozenset(added), self.high_water)
        described = {t: TopicMetadata(t, t, c) for t, c in zip(self.topics, self.counts)}
        try:
            result = get_server_assignor(assignor).assign(spec, described)
        except Exception as exc:  # noqa: BLE001 - compared with Kafka's own failure
            return f"error {exc}"
        rows = []
        for m in spec.member_order():
            row = sorted(f"{self.topics.index(t)}:{'.'.join(map(str, sorted(ps)))}"
                         for t, ps in result.get(m, {}).items() if ps)
            rows.append(f"{m}={';'.join(row)}")
        return ",".join(rows)

    def adopt(self, answer: str) -> None:
        """Kafka's answer becomes every member's current target (and the join order stays)."""
        for item in answer.split(","):
            member, _, rows = item.partition("=")
            current = {}
            for row in filter(None, rows.split(";")):
                t, _, ps = row.partition(":")
                current[int(t)] = {int(p) for p in ps.split(".")}
            self.members[member] = (self.members[member][0], current)


def _step(group: _Group, rng: random.Random, heterogeneous: bool) -> set:
    """One change to the group; returns the members it adds."""
    added: set = set()
    roll = rng.random()
    if not group.members or roll < 0.45:
        for _ in range(rng.randint(1, 3)):
            member = _uuid_text(rng)
            subs = (frozenset(rng.sample(range(len(group.topics)), rng.randint(1, len(group.topics))))
                    if heterogeneous else frozenset(range(len(group.topics))))
            group.members[member] = (subs, {})
            added.add(member)
    elif roll < 0.8 and len(group.members) > 1:
        del group.members[rng.choice(list(group.members))]
    else:
        index = rng.randrange(len(group.counts))
        group.counts[index] += rng.randint(1, 8)
    group.high_water = max(group.high_water, len(group.members) - len(added))
    return added


@pytest.mark.parametrize("assignor,heterogeneous", [("uniform", False), ("uniform", True), ("range", False)])
def test_assignor_matches_kafka_partition_by_partition(oracle, assignor, heterogeneous):
    rng = random.Random(f"{assignor}-{heterogeneous}")
    differences = []
    for step in range(STEPS):
        if step % 40 == 0:                      # a new group every 40 steps
            topics = [_uuid_text(rng) for _ in range(rng.randint(1, 3))]
            group = _Group(rng, topics, [rng.randint(1, 24) for _ in topics])
        added = _step(group, rng, heterogeneous)
        expected = oracle(group.case(assignor, added))
        got = group.kgroup_answer(assignor, added)
        if got != expected:
            differences.append(f"step {step}: kafka {expected}\n          kgroup {got}")
        if not expected.startswith("error"):
            group.adopt(expected)
        for member in added:
            group.high_water = max(group.high_water, len(group.members))
    assert not differences, f"{len(differences)} of {STEPS} steps differ:\n" + "\n".join(differences[:5])
