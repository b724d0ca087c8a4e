"""`remove-members --dry-run` for KIP-848 consumer groups: the next target assignment, predicted.

A consumer group has no client-side assignor: the coordinator computes the target with its own
server-side assignor (ConsumerGroupDescribe's AssignorName) when the group epoch moves. The
prediction runs that assignor (kgroup.assignors' `uniform` or `range`) on the members that stay,
each with its current target row, as the coordinator's target builder does: the members in the order
the group's description lists them (its member table's) and the topics' real ids, so ties break the
way Kafka's hash maps break them.
"""

from __future__ import annotations

from kgroup.views.model import GroupView
from kgroup.client.removal_targets import target_member_ids
from kgroup.wire.cluster import ClusterClient


def predict_target(client: ClusterClient, view: GroupView, removed_ids) -> dict[tuple[str, int], str]:
    """(topic, partition) -> the member id that would own it once `removed_ids` have left.
    ValueError (with the reason) when it cannot be predicted."""
    from kgroup.assignors.server_api import (HETEROGENEOUS, HOMOGENEOUS, GroupSpec, MemberSubscription,
                                             get_server_assignor)

    assignor = get_server_assignor(view.assignor or "")
    gone = set(removed_ids)
    staying = [m for m in view.members if m.member_id not in gone]
    topics = topic_metadata(client, sorted({t for m in view.members for t in _topics_of(m)}))
    specs = {}
    for m in staying:
        ids = frozenset(topics[t].topic_id for t in _topics_of(m) if t in topics)
        current = {topics[tp["topic"]].topic_id: frozenset(tp["partitions"])
                   for tp in m.target_assignment or [] if tp["topic"] in topics}
        specs[m.member_id] = MemberSubscription(ids, current, m.group_instance_id, m.rack_id)
    first = next(iter(specs.values()), None)
    homogeneous = first is None or all(s.subscribed_topic_ids == first.subscribed_topic_ids for s in specs.values())
    # ConsumerGroupDescribe lists members in the order the coordinator's member table iterates
    # them, which is the order its assignor starts from at the next heartbeat
    spec = GroupSpec(specs, HOMOGENEOUS if homogeneous else HETEROGENEOUS, in_table_order=True)
    assigned = assignor.assign(spec, {t.topic_id: t for t in topics.values()})
    names = {t.topic_id: t.name for t in topics.values()}
    return {(names[tid], p): member_id for member_id, row in assigned.items()
            for tid, parts in row.items() for p in parts}


def _topics_of(member) -> list[str]:
    """Subscribed names; a regex subscriber's resolved topics are not described, so its target's."""
    named = list(member.subscription or [])
    if member.subscribed_topic_regex:
        named += [tp["topic"] for tp in member.target_assignment or []]
    return named


def topic_metadata(client: ClusterClient, names) -> dict:
    """Topic name -> TopicMetadata (id, partition count) from one Metadata request (v10+ has ids)."""
    from kafka.protocol.metadata import MetadataRequest

    from kgroup.assignors.server_api import TopicMetadata

    if not names:
        return {}
    version = min(client.max_version(MetadataRequest), 12)
    if version < 10:
        raise ValueError("the broker's Metadata has no topic ids (needs v10+)")
    response = client.send(MetadataRequest(version=version, allow_auto_topic_creation=False, topics=[
        MetadataRequest.MetadataRequestTopic(name=t, topic_id=None) for t in names]), what="Metadata")
    return {t.name: TopicMetadata(t.topic_id, t.name, len(t.partitions)) for t in response.topics if not t.error_code}


def consumer_moves(client: ClusterClient, view: GroupView, removed_ids):
    """(moves per removed member id: [(topic, partition, new owner id)], moves of the others:
    [(topic, partition, old owner id, new owner id)]), old owners taken from the current target."""
    new_owner = predict_target(client, view, removed_ids)
    old_owner = {(tp["topic"], p): m.member_id for m in view.members
                 for tp in m.target_assignment or [] for p in tp["partitions"]}
    gone = set(removed_ids)
    per_removed = {mid: [(t, p, new_owner.get((t, p))) for (t, p), old in sorted(old_owner.items()) if old == mid]
                   for mid in removed_ids}
    others = [(t, p, old_owner.get((t, p)), new_owner.get((t, p)))
              for t, p in sorted(set(old_owner) | set(new_owner))
              if old_owner.get((t, p)) not in gone and old_owner.get((t, p)) != new_owner.get((t, p))]
    return per_removed, others


def predict_consumer_group_moves(client: ClusterClient, view: GroupView, report) -> str | None:
    """A consumer group's prediction: its server-side assignor on the members that stay, from
    their target rows — valid while members reconcile (a stopped static member at epoch -2 keeps a
    group Reconciling), not while a new target is being computed (Assigning)."""
    if view.group_epoch != view.assignment_epoch:
        return f"no prediction: the group is {view.state}, its target assignment is being computed"
    known = [r for r in report.results if r.status in ("static", "dynamic")]
    if not known:
        return None
    removed_ids = target_member_ids(view, known)
    try:
        per_removed, others = consumer_moves(client, view, removed_ids)
    except ValueError as exc:  # an unknown assignor, or one that cannot assign this input
        return f"no prediction: {exc}"
    label = {m.member_id: (m.group_instance_id or m.member_id) for m in view.members}
    for r, mid in zip(known, removed_ids):
        r.moves = [(t, p, label.get(new) if new else None) for t, p, new in per_removed[mid]]
    report.other_moves = [(t, p, label.get(old) if old else None, label.get(new) if new else None)
                          for t, p, old, new in others]
    return None
