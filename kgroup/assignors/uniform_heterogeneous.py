"""The ``uniform`` assignor for groups whose members subscribe to different topics (Kafka's
UniformHeterogeneousAssignmentBuilder).

Members keep their current partitions of topics they still subscribe to; the partitions nobody
holds are dealt topic by topic (most partitions per subscriber first) to the least-loaded
subscribers; then up to ``MAX_ITERATION_COUNT`` passes over the shared topics move partitions
from the most- to the least-loaded subscribers until each topic's subscribers are within one
partition of each other. Members are numbered in the order Kafka's member map iterates
(``java_order``): ties between equally loaded members go the way they go in Kafka.
"""

from __future__ import annotations

from typing import Mapping

from .server_api import GroupSpec, TopicMetadata
from .server_order import partition_count, topic_order_key

MAX_ITERATION_COUNT = 16
UNOWNED = -1


def build_heterogeneous(group: GroupSpec, topics: Mapping[object, TopicMetadata]) -> dict:
    """member id -> {topic id -> set of partitions}, every member present."""
    return _Builder(group, topics).build()


class _Builder:
    def __init__(self, group: GroupSpec, topics: Mapping[object, TopicMetadata]) -> None:
        self.group = group
        self.member_ids = group.member_order()
        self.sizes = [0] * len(self.member_ids)              # partitions per member index
        self.subscribers: dict[object, list[int]] = {}       # topic id -> member indices, ascending
        self.counts: dict[object, int] = {}
        for index, member in enumerate(self.member_ids):
            for topic in sorted(group.members[member].subscribed_topic_ids, key=topic_order_key):
                if topic not in self.counts:
                    self.counts[topic] = partition_count(topics, topic)
                self.subscribers.setdefault(topic, []).append(index)
        self.owners = {topic: [UNOWNED] * count for topic, count in self.counts.items()}
        self.rows: list[dict[object, set]] = [{} for _ in self.member_ids]

    def sorted_topics(self, topic_ids) -> list:
        """Partitions per subscriber descending, then subscriber count ascending, then Uuid order."""
        def key(topic):
            subscribers = len(self.subscribers[topic])
            return (-(self.counts[topic] / subscribers), subscribers, topic_order_key(topic))
        return sorted(topic_ids, key=key)

    def build(self) -> dict:
        if self.counts:
            self.keep_subscribed()
            self.assign_unowned()
            self.balance()
        return {member: row for member, row in zip(self.member_ids, self.rows)}

    def keep_subscribed(self) -> None:
        """Kafka's maybeRevokePartitions: drop only topics the member no longer subscribes to."""
        for index, member in enumerate(self.member_ids):
            spec = self.group.members[member]
            for topic, partitions in spec.assignment.items():
                if topic not in spec.subscribed_topic_ids:
                    continue
                kept = {p for p in partitions if p < self.counts[topic]}
                if kept:
                    self.rows[index][topic] = kept
                    self.sizes[index] += len(kept)
                    owners = self.owners[topic]
                    for p in kept:
                        owners[p] = index

    def assign_unowned(self) -> None:
        """Kafka's assignRemainingPartitions: each free partition to the next least-loaded subscriber."""
        unowned = {topic: [p for p, owner in enumerate(owners) if owner == UNOWNED]
                   for topic, owners in self.owners.items()}
        balancer = _Balancer(self.sizes)
        for topic in self.sorted_topics(t for t, free in unowned.items() if free):
            balancer.initialize(self.subscribers[topic])
            for partition in unowned[topic]:
                self.move(topic, partition, balancer.next_least_loaded())

    def balance(self) -> None:
        """Kafka's balanceTopics: loop over shared topics until a whole loop moves nothing."""
        topic_ids = self.sorted_topics(t for t, subs in self.subscribers.items() if len(subs) >= 2)
        if not topic_ids:
            return
        balancer = _Balancer(self.sizes)
        last_moved = -1
        for _ in range(MAX_ITERATION_COUNT):
            for position, topic in enumerate(topic_ids):
                if position == last_moved:
                    return
                if self.balance_topic(topic, balancer) > 0 or last_moved == -1:
                    last_moved = position

    def balance_topic(self, topic, balancer: "_Balancer") -> int:
        """Kafka's balanceTopic: the most-loaded subscriber gives its highest partition to the least."""
        if balancer.initialize(self.subscribers[topic]) <= 1:
            return 0
        owners = self.owners[topic]
        partitions = sorted(range(self.counts[topic]), key=lambda p: (owners[p], p))
        start: dict[int, int] = {}
        end: dict[int, int] = {}                               # exclusive
        for position, partition in enumerate(partitions):
            start.setdefault(owners[partition], position)
            end[owners[partition]] = position + 1
        moved = 0
        while not balancer.is_balanced():
            while True:
                donor = balancer.next_most_loaded()
                if donor == UNOWNED or end.get(donor, 0) - start.get(donor, 0) > 0:
                    break
                balancer.exclude_most_loaded()
            if donor == UNOWNED:
                break
            end[donor] -= 1
            partition = partitions[end[donor]]
            receiver = balancer.next_least_loaded()
            if balancer.is_balanced():
                break
            self.move(topic, partition, receiver)
            moved += 1
        return moved

    def move(self, topic, partition: int, index: int) -> None:
        """Kafka's assignPartition: take the partition from its owner, if any, and give it to ``index``."""
        owner = self.owners[topic][partition]
        if owner != UNOWNED:
            partitions = self.rows[owner][topic]
            partitions.discard(partition)
            if not partitions:
                del self.rows[owner][topic]
            self.sizes[owner] -= 1
        self.rows[index].setdefault(topic, set()).add(partition)
        self.owners[topic][partition] = index
        self.sizes[index] += 1


class _Balancer:
    """Kafka's MemberAssignmentBalancer: a topic's subscribers sorted by load, with a least-loaded
    range that grows rightwards and a most-loaded range that grows leftwards."""

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes                                     # shared with the builder, live
        self.members: list[int] = []

    def initialize(self, members: list[int]) -> int:
        """Start on a topic's subscribers; returns the load difference between the extremes."""
        sizes = self.sizes
        self.members = sorted(members, key=lambda m: (sizes[m], m))
        first, last = sizes[self.members[0]], sizes[self.members[-1]]
        self.least_end = 0
        self.least_count = first - 1
        self.next_least = 0
        self.most_start = self.most_end = len(self.members)
        self.most_count = last + 1
        self.next_most = len(self.members) - 1
        return last - first

    def next_least_loaded(self) -> int:
        if self.next_least >= self.least_end:
            self.least_count += 1
            while self.least_end < len(self.members) and self.sizes[self.members[self.least_end]] == self.least_count:
                self.least_end += 1
            self.next_least = 0
        member = self.members[self.next_least]
        self.next_least += 1
        return member

    def next_most_loaded(self) -> int:
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                self.most_count = self.sizes[self.members[self.most_start - 1]]
            else:
                self.most_count -= 1
            while self.most_start > 0 and self.sizes[self.members[self.most_start - 1]] == self.most_count:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return UNOWNED
        member = self.members[self.next_most]
        self.next_most -= 1
        return member

    def exclude_most_loaded(self) -> None:
        """Swap the member last returned by next_most_loaded to the end of the range and shrink it."""
        at = self.next_most + 1
        self.members[at], self.members[self.most_end - 1] = self.members[self.most_end - 1], self.members[at]
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_count - self.least_count <= 1
