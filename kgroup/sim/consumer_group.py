"""The simulated KIP-848 consumer group: the topic image it runs on, and when it has settled.

Its session timeout and heartbeat interval belong to the coordinator
(``group.consumer.session.timeout.ms``, ``group.consumer.heartbeat.interval.ms``): see
``group_config``.
"""

from __future__ import annotations

import uuid

from .consumer_client import RECONCILED


def topic_image(topics) -> dict:
    """``{name: (topic id, partitions)}`` with stable ids (the n-th topic by name: UUID n)."""
    return {name: (uuid.UUID(int=k + 1), count) for k, (name, count) in enumerate(sorted(topics))}


def settled(group, live, ledger) -> bool:
    """Stable (every member at the group epoch owning its target), the live processes exactly its
    members, each having acknowledged what it owns (a classic one: synced at the group epoch, its
    member epoch), and every partition owned."""
    if live and len(ledger.owner) != len(ledger.partitions):
        return False                      # the cheapest test first: it fails most often
    if group is None or len(group.members) != len(live) or group.group_epoch != group.assignment_epoch:
        return False
    return not any(holds_back(consumer, group) for consumer in live)


def holds_back(consumer, group) -> bool:
    """This live process alone keeps the consumer group from having settled: not a member at the
    group epoch owning its target, or it has not acknowledged what it owns."""
    member = group.members.get(consumer.member_id)
    epoch = group.group_epoch
    return (member is None or consumer.state != "stable" or consumer.generation != epoch
            or member.state != RECONCILED or member.member_epoch != epoch
            or not getattr(consumer, "acknowledged", True))
