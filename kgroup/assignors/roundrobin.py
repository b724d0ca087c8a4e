"""The round-robin assignor (Kafka's RoundRobinAssignor): partitions dealt to members in turn."""

from __future__ import annotations

from .common import Assignor


class RoundRobinAssignor(Assignor):
    """All partitions in (topic, partition) order dealt to members in turn."""

    name = "roundrobin"

    def _assign(self, members, partitions_per_topic):
        plan = {m.member_id: [] for m in members}
        subscribed = [(m.member_id, frozenset(m.topics)) for m in members]
        position = 0
        for topic in sorted(partitions_per_topic):
            if not any(topic in topics for _, topics in subscribed):
                continue
            for partition in range(partitions_per_topic[topic]):
                while topic not in subscribed[position % len(subscribed)][1]:
                    position += 1
                plan[subscribed[position % len(subscribed)][0]].append((topic, partition))
                position += 1
        return plan
