"""The range assignor (Kafka's RangeAssignor): each topic split into consecutive ranges."""

from __future__ import annotations

from .common import Assignor, topic_partitions


class RangeAssignor(Assignor):
    """Per topic: consecutive ranges, the first ``n % k`` members one partition longer."""

    name = "range"

    def _assign(self, members, partitions_per_topic):
        plan = {m.member_id: [] for m in members}
        for topic in sorted(partitions_per_topic):
            subscribers = [m.member_id for m in members if topic in m.topics]
            if not subscribers:
                continue
            count = partitions_per_topic[topic]
            per, extra = divmod(count, len(subscribers))
            start = 0
            pairs = topic_partitions(topic, count)
            for index, member_id in enumerate(subscribers):
                length = per + (1 if index < extra else 0)
                plan[member_id].extend(pairs[start:start + length])
                start += length
        return plan
