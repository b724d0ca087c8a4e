"""Compact builders for the server-side assignor tests: groups, topics and expected rows."""

from kgroup.assignors.server_api import (
    HETEROGENEOUS, HOMOGENEOUS, GroupSpec, MemberSubscription, TopicMetadata,
)

# The topic ids of Kafka's assignor tests (Uuid.fromString), in Uuid order T1 < T2 < T3 < T4.
T1 = "T1-A4s3VTwiI5CTbEp6POw"
T2 = "T2-B4s3VTwiI5YHbPp6YUe"
T3 = "T3-CU8fVTLCz5YMkLoDQsa"
T4 = "T4-Tw9fVTLCz5HbPp6YQsa"


def topics(**counts_by_name) -> dict:
    """topics(T1=3, T3=6) with the names T1..T4 standing for the ids above."""
    ids = {"T1": T1, "T2": T2, "T3": T3, "T4": T4}
    return {ids.get(name, name): TopicMetadata(ids.get(name, name), name, count)
            for name, count in counts_by_name.items()}


def member(subscribed, assignment=None, instance_id=None, rack_id=None) -> MemberSubscription:
    return MemberSubscription(
        frozenset(subscribed),
        {topic: frozenset(parts) for topic, parts in (assignment or {}).items()},
        instance_id, rack_id)


def group(members: dict, subscription_type: str | None = None) -> GroupSpec:
    """A GroupSpec; the subscription type is derived from the members unless given."""
    if subscription_type is None:
        subscriptions = {m.subscribed_topic_ids for m in members.values()}
        subscription_type = HOMOGENEOUS if len(subscriptions) <= 1 else HETEROGENEOUS
    return GroupSpec(members=members, subscription_type=subscription_type)


def rows(**by_member) -> dict:
    """Expected result: rows(A={T1: [0, 1]}, B={}) with frozensets."""
    return {m: {t: frozenset(p) for t, p in row.items()} for m, row in by_member.items()}
