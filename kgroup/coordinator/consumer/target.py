"""Subscriptions and the target assignment of a consumer group (Kafka's ``TargetAssignmentBuilder``).

Pure planning: these functions read the group as it is and the member the heartbeat is about to
store (``updated``), and return what would change; the heartbeat turns that into records. The
target is computed only when the group epoch moved past the assignment epoch, so a steady-state
heartbeat never calls the assignor.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Mapping, NamedTuple

from kgroup.assignors.server_api import (HETEROGENEOUS, HOMOGENEOUS, GroupSpec, TopicMetadata,
                                         get_server_assignor, member_subscription)
from kgroup.assignors.server_order import frozen_row

from . import records as rec
from .group import ConsumerGroup, ConsumerGroupMember, SubscribedTopic

log = logging.getLogger("kgroup.coordinator")


class TargetAssignmentError(Exception):
    """The assignor failed (logged here): the request is answered UNKNOWN_SERVER_ERROR without a
    message, as Kafka's CoordinatorOperationExceptionHelper.handleOperationException does."""


def subscriber_counts(group: ConsumerGroup, old: ConsumerGroupMember | None,
                      updated: ConsumerGroupMember | None) -> dict[str, int]:
    """Topic name -> number of subscribers, with ``old`` replaced by ``updated`` (either may be None)."""
    counts = dict(group.subscriber_counts)
    if old is not None and old.member_id in group.members:
        for name in old.subscribed_topic_names:
            counts[name] -= 1
            if not counts[name]:
                del counts[name]
    if updated is not None:
        for name in updated.subscribed_topic_names:
            counts[name] = counts.get(name, 0) + 1
    return counts


def subscribed_topics(image: Mapping[str, tuple], names) -> dict[str, SubscribedTopic]:
    """The subscribed topics the metadata image knows (Kafka's computeSubscriptionMetadata)."""
    out = {}
    for name in sorted(names):
        known = image.get(name)
        if known is not None:
            out[name] = SubscribedTopic(known[0], name, known[1])
    return out


class SubscriptionMetadata(NamedTuple):
    """What Kafka's updateSubscriptionMetadata decides: the subscribed topics the image knows, their
    metadata hash, whether it moved (a new group epoch) and the records that go after the epoch
    record (the tombstone of a 4.0-era ConsumerGroupPartitionMetadata record)."""

    topics: dict
    metadata_hash: int
    changed: bool
    tombstones: list


def subscription_metadata(coord, group: ConsumerGroup, names) -> SubscriptionMetadata:
    """The metadata hash of ``names`` (KIP-1101), computed when the subscription changed or the
    image moved since the group last looked; a group loaded from a log Kafka 4.0 wrote drops its
    PartitionMetadata record with the first such update, as Kafka 4.4 does."""
    metadata_hash = coord.metadata_hash(names)
    tombstones = [rec.tombstone(rec.PARTITION_METADATA, group.group_id)] \
        if group.has_partition_metadata_record else []
    return SubscriptionMetadata(subscribed_topics(coord.topic_image, names), metadata_hash,
                                metadata_hash != group.metadata_hash, tombstones)


def preferred_assignor(group: ConsumerGroup, updated: ConsumerGroupMember | None, replaced: str | None,
                       default: str, *, as_described: bool = False) -> str:
    """The ServerAssignor most members ask for, else ``default`` (``updated``: the member a
    heartbeat is about to store, counted in place of its old self).

    On a tie Kafka takes the first name its map iterates (``Stream.max`` keeps the first): the
    group's count table (a TimelineHashMap) where it describes the group or checks whether the
    preference changed (``as_described``), a ``HashMap`` copy of it where it computes the target."""
    from kgroup.assignors.java_order import (hash_order, map_copy_capacity, string_hash,
                                             timeline_capacity, timeline_order)

    counts: dict[str, int] = {}
    for member in members_with(group, updated, replaced).values():
        if member.server_assignor is not None:
            counts[member.server_assignor] = counts.get(member.server_assignor, 0) + 1
    if not counts:
        return default
    if len(counts) == 1:
        return next(iter(counts))
    names = timeline_order(counts, timeline_capacity(len(counts)))
    if not as_described:
        names = hash_order(names, string_hash, map_copy_capacity(len(names)))
    best = max(counts.values())
    return next(name for name in names if counts[name] == best)


def compute_target(group: ConsumerGroup, updated: ConsumerGroupMember, replaced: str | None,
                   topics: Mapping[str, SubscribedTopic], assignor_name: str, epoch: int,
                   resolved: Mapping[str, frozenset] | None = None) -> dict[str, dict]:
    """member id -> its new target row, for every member (``replaced``: a static member's old id,
    whose row the new member inherits; ``resolved``: the regex resolutions the operation leaves,
    by default the group's)."""
    members = members_with(group, updated, replaced)
    by_name = {t.name: t.topic_id for t in topics.values()}
    ids_of: dict[frozenset, frozenset] = {}      # topic names -> their ids: members mostly share one set
    current_row = group.target.get
    updated_id = updated.member_id
    specs = {}
    for member_id, member in members.items():
        current = current_row(replaced if replaced and member_id == updated_id else member_id, {})
        names = group.topics_of(member, resolved)
        ids = ids_of.get(names)
        if ids is None:
            ids = ids_of[names] = frozenset(by_name[n] for n in names if n in by_name)
        specs[member_id] = member_subscription(ids, current, member.instance_id, member.rack_id)
    described = {t.topic_id: TopicMetadata(t.topic_id, t.name, t.num_partitions) for t in topics.values()}
    # Kafka's ModernGroup.subscriptionType counts subscribers per topic *name*, so members naming
    # different topics are heterogeneous even when only the same ones exist
    homogeneous = len(ids_of) < 2
    # Kafka walks the group's member table, then the member this operation adds (its overlay view)
    added = frozenset() if updated_id in group.members else frozenset((updated_id,))
    spec = GroupSpec(members=specs, subscription_type=HOMOGENEOUS if homogeneous else HETEROGENEOUS,
                     added=added, member_high_water=group.member_high_water)
    order = spec.member_order()
    spec = replace(spec, order=tuple(order))
    try:
        assigned = get_server_assignor(assignor_name).assign(spec, described)
    except Exception as exc:     # noqa: BLE001 - Kafka answers any assignor failure the same way
        message = f"Failed to compute a new target assignment for epoch {epoch}: {exc}"
        log.error("Group %s: %s", group.group_id, message)
        raise TargetAssignmentError(message) from exc
    # in the order Kafka writes the target records: its member map's (TargetAssignmentBuilder.build)
    return {member_id: frozen_row(assigned.get(member_id, {})) for member_id in order}


def plan_epoch_and_target(coord, group: ConsumerGroup, updated: ConsumerGroupMember, replaced: str | None,
                          topics: Mapping[str, SubscribedTopic], bump: bool, records: list,
                          resolved: Mapping[str, frozenset] | None = None,
                          metadata: SubscriptionMetadata | None = None) -> int:
    """The group epoch record (with the metadata hash) when ``bump``, then ``metadata``'s tombstones;
    then, if the epoch is past the assignment epoch and ``target_due``, the new target as Kafka's
    updateTargetAssignment writes it: only the rows that changed, then the target epoch with the
    time it was computed. Returns the group epoch; raises TargetAssignmentError when the assignor
    fails."""
    group_id = group.group_id
    epoch = group.group_epoch + 1 if bump else group.group_epoch
    if bump:
        metadata_hash = group.metadata_hash if metadata is None else metadata.metadata_hash
        records.append(rec.group_epoch_record(group_id, epoch, metadata_hash))
    if metadata is not None:
        records += metadata.tombstones
    if epoch > group.assignment_epoch and target_due(group, coord.config.group_consumer_assignment_interval_ms,
                                                     coord.now_ms):
        name = preferred_assignor(group, updated, replaced, coord.config.group_consumer_assignors[0])
        target = compute_target(group, updated, replaced, topics, name, epoch, resolved)
        for row_member, row in target.items():
            old_row = group.target.get(replaced if row_member == updated.member_id and replaced else row_member)
            if old_row != row or row_member not in group.target:
                records.append(rec.target_member_record(group_id, row_member, row))
        records.append(rec.target_epoch_record(group_id, epoch, coord.now_ms))
    return epoch


def subscribed_ids(coord, group: ConsumerGroup, member: ConsumerGroupMember) -> frozenset:
    """The ids of the existing topics ``member`` subscribes to, by name or through its resolved
    regex (an unresolved one matches nothing): Kafka 4.4's CurrentAssignmentBuilder.subscribedTopicIds."""
    image = coord.topic_image
    names = group.topics_of(member)
    key = (id(image), names)
    kept = _SUBSCRIBED_IDS.get(key)
    if kept is not None and kept[0] is image:
        return kept[1]
    ids = frozenset(image[name][0] for name in names if name in image)
    if len(_SUBSCRIBED_IDS) >= 1024:
        _SUBSCRIBED_IDS.clear()
    _SUBSCRIBED_IDS[key] = (image, ids)
    return ids


# (id(topic image), topic names) -> (image, their ids): every heartbeat that reconciles asks, and a
# group's members mostly share one set of names; an image is replaced, not changed, by set_topics
_SUBSCRIBED_IDS: dict[tuple, tuple] = {}


def target_due(group: ConsumerGroup, interval_ms: int, now_ms: int) -> bool:
    """Whether a new target may be computed now (Kafka 4.3+'s canComputeNextTargetAssignment,
    KIP-1263): at once for a group whose last target time is unknown (0: new, or every member
    fenced) or with no interval, else once the interval has passed since the last one. Until then
    members reconcile towards the last target, and the next heartbeat after the interval computes
    it — a group can be seen Assigning for up to the interval."""
    if group.assignment_timestamp == 0 or interval_ms == 0:
        return True
    return now_ms >= group.assignment_timestamp + interval_ms


def members_with(group: ConsumerGroup, updated: ConsumerGroupMember | None, replaced: str | None) -> dict:
    """The group's members with ``updated`` stored (in place of ``replaced``, a static member's old id)."""
    if updated is None:
        return group.members
    members = dict(group.members)
    if replaced is not None:
        members.pop(replaced, None)
    members[updated.member_id] = updated
    return members
