"""Server-side assignor speed: ``uniform`` for 1,000 members × 3,000 partitions (10 topics × 300),
every member on every topic, as the KIP-848 coordinator calls it on each group-epoch bump.

Two uniform runs: a fresh assignment (no member holds anything) and a reassignment after one
member left (the others hold the fresh result: they keep it, the leaver's partitions move). The
same-run baseline is a naive round-robin over the same input that builds the same result shape
(member id -> topic id -> frozenset), so the ratio shows what uniform's balance and stickiness
cost beyond dealing partitions out. ``range`` on the same input is printed for comparison, and
a heterogeneous variant (each member on 7 in 10 of the topics) for the balancing builder.

    .venv/bin/python benchmarks/assignors.py [--members N] [--topics T] [--partitions P] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from kgroup.assignors.server_api import (  # noqa: E402
    HETEROGENEOUS, HOMOGENEOUS, GroupSpec, MemberSubscription, TopicMetadata, get_server_assignor,
)


def make_input(members: int, topics: int, partitions: int, seed: int = 7):
    rng = random.Random(seed)
    topic_ids = [rng.randbytes(16) for _ in range(topics)]
    metadata = {t: TopicMetadata(t, f"topic-{k}", partitions) for k, t in enumerate(topic_ids)}
    subscribed = frozenset(topic_ids)
    group = GroupSpec({f"member-{k:04d}-{rng.getrandbits(64):016x}": MemberSubscription(subscribed)
                       for k in range(members)}, HOMOGENEOUS)
    return group, metadata


def heterogeneous(group: GroupSpec, metadata, per_member: int, seed: int = 11) -> GroupSpec:
    rng = random.Random(seed)
    topic_ids = sorted(metadata)
    return GroupSpec({m: MemberSubscription(frozenset(rng.sample(topic_ids, per_member)))
                      for m in group.members}, HETEROGENEOUS)


def with_current(group: GroupSpec, assignment, leaving: str | None = None) -> GroupSpec:
    return GroupSpec({m: MemberSubscription(s.subscribed_topic_ids, assignment[m])
                      for m, s in group.members.items() if m != leaving}, group.subscription_type)


def round_robin(group: GroupSpec, metadata):
    """The baseline: deal every partition out in turn, no balance across topics, no stickiness."""
    members = sorted(group.members)
    rows = {m: {} for m in members}
    k = 0
    for topic in sorted(metadata):
        for p in range(metadata[topic].num_partitions):
            rows[members[k % len(members)]].setdefault(topic, []).append(p)
            k += 1
    return {m: {t: frozenset(ps) for t, ps in row.items()} for m, row in rows.items()}


def owners(assignment) -> dict:
    return {(t, p): m for m, row in assignment.items() for t, ps in row.items() for p in ps}


def best_ms(fn, repeat: int) -> tuple[float, object]:
    best, result = None, None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        elapsed = (time.perf_counter() - start) * 1000
        best = elapsed if best is None else min(best, elapsed)
    return best, result


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--topics", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=300, help="per topic")
    parser.add_argument("--repeat", type=int, default=5, help="best of R runs")
    args = parser.parse_args(argv)
    uniform, range_assignor = get_server_assignor("uniform"), get_server_assignor("range")
    group, metadata = make_input(args.members, args.topics, args.partitions)

    fresh_ms, fresh = best_ms(lambda: uniform.assign(group, metadata), args.repeat)
    leaver = sorted(group.members)[len(group.members) // 2]
    after_leave = with_current(group, fresh, leaving=leaver)
    leave_ms, left = best_ms(lambda: uniform.assign(after_leave, metadata), args.repeat)
    owner_before, owner_after = owners(fresh), owners(left)
    moved = sum(1 for tp, m in owner_after.items() if owner_before[tp] != m)
    held = sum(len(ps) for ps in fresh[leaver].values())
    base_ms, _ = best_ms(lambda: round_robin(group, metadata), args.repeat)
    range_ms, _ = best_ms(lambda: range_assignor.assign(group, metadata), args.repeat)
    per_member = max(1, args.topics * 7 // 10)
    mixed = heterogeneous(group, metadata, per_member)
    mixed_ms, _ = best_ms(lambda: uniform.assign(mixed, metadata), args.repeat)

    total = args.topics * args.partitions
    print(f"members × partitions               {args.members} × {total} ({args.topics} topics)")
    print(f"uniform, fresh assignment          {fresh_ms:.1f} ms")
    print(f"uniform, one member leaves         {leave_ms:.1f} ms "
          f"(partitions moved: {moved}; the leaver held {held})")
    print(f"baseline round-robin, same input   {base_ms:.1f} ms")
    print(f"ratio uniform fresh/baseline       {fresh_ms / base_ms:.2f}x")
    print(f"range, fresh assignment            {range_ms:.1f} ms")
    print(f"uniform, heterogeneous ({per_member}/{args.topics} topics each) {mixed_ms:.1f} ms")
    assert moved == held, "uniform moved partitions the leaver did not hold"


if __name__ == "__main__":
    main()
