"""The sticky family: sticky (Kafka's StickyAssignor) and cooperative-sticky (KIP-429).

Both keep as many owned partitions as balance allows; the cooperative one hands a moved partition
over in two rounds (the owner revokes it, then the next rebalance assigns it).
"""

from __future__ import annotations

from collections import deque
from functools import lru_cache

from .common import Assignor, TopicPartition, sort_key, topic_partitions


@lru_cache(maxsize=16)
def _all_partitions(partitions_per_topic: tuple) -> tuple[TopicPartition, ...]:
    """Every (topic, partition) of ((topic, count), ...) sorted by topic: a simulated group's
    leader assigns the same topics at every rebalance."""
    return tuple(tp for t, count in partitions_per_topic for tp in topic_partitions(t, count))


class StickyAssignor(Assignor):
    """Balanced (sizes differ by at most one) while keeping as many owned partitions as possible.

    When two members claim one partition, the claim from the higher generation wins, as in
    Kafka. Identical subscriptions take a quota-based fast path; differing ones fall back to
    giving each free partition to the least-loaded eligible member.
    """

    name = "sticky"
    uses_owned = True

    def _assign(self, members, partitions_per_topic):
        all_partitions = _all_partitions(tuple(sorted(partitions_per_topic.items())))
        topic_sets: dict[tuple, frozenset] = {}     # a member's topics, as the others' mostly
        for member in members:
            key = tuple(member.topics)
            if key not in topic_sets:
                topic_sets[key] = frozenset(key)
        subscriptions = set(topic_sets.values())
        claimed: dict[TopicPartition, tuple[int, str]] = {}
        for member in members:
            topics = topic_sets[tuple(member.topics)]
            for tp in member.owned:
                if tp[0] not in topics or not 0 <= tp[1] < partitions_per_topic.get(tp[0], 0):
                    continue
                previous = claimed.get(tp)
                if previous is None or member.generation > previous[0]:
                    claimed[tp] = (member.generation, member.member_id)
        kept: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
        for tp, (_, member_id) in claimed.items():
            kept[member_id].append(tp)
        for parts in kept.values():
            parts.sort()
        if len(subscriptions) == 1:
            return self._balanced_same_topics(members, all_partitions, kept)
        return self._greedy(members, all_partitions, kept)

    @staticmethod
    def _balanced_same_topics(members, all_partitions, kept):
        topics = frozenset(members[0].topics)
        partitions = [tp for tp in all_partitions if tp[0] in topics]
        count = len(members)
        min_quota, extra = divmod(len(partitions), count)
        order = {m.member_id: i for i, m in enumerate(members)}
        # Members holding the most keep up to min_quota + 1, while such slots remain.
        by_size = sorted(kept, key=lambda mid: (-len(kept[mid]), order[mid]))
        plan: dict[str, list[TopicPartition]] = {}
        assigned: set[TopicPartition] = set()
        for member_id in by_size:
            limit = min_quota + 1 if extra > 0 and len(kept[member_id]) > min_quota else min_quota
            if limit == min_quota + 1:
                extra -= 1
            keep = kept[member_id][:limit]
            plan[member_id] = keep
            assigned.update(keep)
        # Free partitions go round-robin (as Kafka's and librdkafka's sticky assignors hand them
        # out) to the members still under min_quota; once none is, one extra each to members at
        # min_quota, first come first served, while extra slots remain.
        under = [m.member_id for m in members if len(plan[m.member_id]) < min_quota]
        at_min = deque(m.member_id for m in members if len(plan[m.member_id]) == min_quota)
        turn = 0
        for tp in (tp for tp in partitions if tp not in assigned):
            if under:
                turn %= len(under)
                member_id = under[turn]
                plan[member_id].append(tp)
                if len(plan[member_id]) == min_quota:
                    at_min.append(under.pop(turn))
                else:
                    turn += 1
            else:
                plan[at_min.popleft()].append(tp)
        return plan

    @staticmethod
    def _greedy(members, all_partitions, kept):
        eligible_topics = {m.member_id: frozenset(m.topics) for m in members}
        order = {m.member_id: i for i, m in enumerate(members)}
        plan = {mid: list(parts) for mid, parts in kept.items()}
        assigned = {tp for parts in plan.values() for tp in parts}
        for tp in all_partitions:
            if tp in assigned:
                continue
            candidates = [mid for mid in plan if tp[0] in eligible_topics[mid]]
            if candidates:
                best = min(candidates, key=lambda mid: (len(plan[mid]), order[mid]))
                plan[best].append(tp)
        # Move partitions from overloaded to underloaded eligible members until balanced.
        changed = True
        while changed:
            changed = False
            for tp in all_partitions:
                owner = next((mid for mid, parts in plan.items() if tp in parts), None)
                if owner is None:
                    continue
                lighter = [mid for mid in plan if tp[0] in eligible_topics[mid]
                           and len(plan[mid]) + 1 < len(plan[owner])]
                if lighter:
                    target = min(lighter, key=lambda mid: (len(plan[mid]), order[mid]))
                    plan[owner].remove(tp)
                    plan[target].append(tp)
                    changed = True
        return plan


class CooperativeStickyAssignor(StickyAssignor):
    """Sticky target, but a partition still owned by another member is withheld this round.

    The owner revokes it and rejoins; the next round hands it over (KIP-429).
    """

    name = "cooperative-sticky"
    cooperative = True

    def _assign(self, members, partitions_per_topic):
        target = super()._assign(members, partitions_per_topic)
        owner_now: dict[TopicPartition, str] = {}
        for member in members:
            for tp in member.owned:
                owner_now.setdefault(tp, member.member_id)
        return {mid: [tp for tp in parts if owner_now.get(tp, mid) == mid]
                for mid, parts in target.items()}

    def target(self, members, partitions_per_topic):
        """The assignment once every revocation has gone through (the second round's result)."""
        ordered = sorted(members, key=lambda m: sort_key(m, self.by_instance_id))
        plan = StickyAssignor._assign(self, ordered, partitions_per_topic)
        for parts in plan.values():
            parts.sort()
        return plan
