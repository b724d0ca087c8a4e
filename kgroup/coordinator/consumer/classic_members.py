"""Classic-protocol members inside a consumer group (Kafka 4.0's
``GroupMetadataManager.classicGroupJoinToConsumerGroup`` / ``classicGroupSyncToConsumerGroup`` /
``classicGroupHeartbeatToConsumerGroup``).

A classic consumer keeps speaking JoinGroup/SyncGroup/Heartbeat after its group became a consumer
group (an online upgrade), and may join one. Its JoinGroup is a heartbeat in disguise: the embedded
subscription gives its topics, rack and owned partitions, the group epoch moves when its topics
change, the server-side assignor computes the target and the member is reconciled; the response's
generation is its member epoch. SyncGroup hands it its current partitions (the ones nobody else still
holds) as a ConsumerProtocolAssignment. Heartbeat answers REBALANCE_IN_PROGRESS whenever it must
rejoin to move on: its epoch is behind the target assignment's (Kafka 4.3+; the group's before), it must revoke, or partitions it waited for are
free. Its session timeout is the one of its JoinGroup; a join it owes (after REBALANCE_IN_PROGRESS)
and the sync after a join are timed by its rebalance timeout, and missing either fences it.
"""

from __future__ import annotations

from kgroup.kafka_errors import (FENCED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED, ILLEGAL_GENERATION,
                                 INCONSISTENT_GROUP_PROTOCOL, MEMBER_ID_REQUIRED, NONE,
                                 REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID, UNKNOWN_SERVER_ERROR)

from . import records as rec
from .heartbeat import new_member_id
from .fencing import fence_member, schedule_session_timeout
from .group import (ClassicMemberMetadata, ConsumerGroup, ConsumerGroupMember, join_timer_key, subscribed_names,
                             sync_timer_key)
from .regex import plan_regexes
from .target import (TargetAssignmentError, members_with, plan_epoch_and_target, subscribed_ids,
                              subscriber_counts, subscription_metadata)
from .migration import CONSUMER_PROTOCOL_TYPE, classic_assignment, maybe_downgrade_after_replacement, topic_id_map
from .reconciliation import UNRELEASED_PARTITIONS, UNREVOKED_PARTITIONS, reconcile
from ..classic.responses import heartbeat_response, join_error, join_response, sync_response


class _Refused(Exception):
    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


# ---- JoinGroup ----------------------------------------------------------------------------------
def join(coord, group: ConsumerGroup, version: int, member_id: str, instance_id, session_timeout: int,
         rebalance_timeout: int, protocol_type: str, protocols: list, client_id: str, client_host: str):
    unknown = not member_id
    if unknown:
        member_id = new_member_id(coord)
    try:
        if len(group.members) >= coord.config.group_consumer_max_size and member_id not in group.members:
            raise _Refused(GROUP_MAX_SIZE_REACHED)
        if not _supports(group, protocol_type, [name for name, _ in protocols]):
            raise _Refused(INCONSISTENT_GROUP_PROTOCOL)
        if unknown and instance_id is None and version >= 4:
            return coord.done_reply(join_error(version, MEMBER_ID_REQUIRED, member_id))
        records: list = []
        member, replaced = _member_for(group, member_id, instance_id, unknown, records)
        subscription = _subscription(protocols)
        updated = member.evolve(
            instance_id=instance_id if instance_id is not None else member.instance_id,
            rack_id=subscription.get("rackId") or member.rack_id, rebalance_timeout_ms=rebalance_timeout,
            server_assignor=None, subscribed_topic_names=frozenset(subscription["topics"]),
            subscribed_topic_regex=None, client_id=client_id, client_host=client_host,
            classic=ClassicMemberMetadata(session_timeout, tuple(protocols)))
        topics = _plan(coord, group, member, updated, replaced, records)
    except _Refused as refused:
        return coord.done_reply(join_error(version, refused.code, "" if unknown else member_id))
    rec.apply_all(coord, records)
    group = coord.get_group(group.group_id)
    group.set_field("metadata_version", coord.topic_image_version)
    group.set_field("subscribed_topics", topics)
    stored = group.members[member_id]
    owned = topic_id_map(coord, subscription.get("ownedPartitions"))
    changed = updated.subscribed_topic_names != member.subscribed_topic_names
    reconciled = reconcile(stored, group.assignment_epoch, group.target_row(member_id), owned, group.partition_epoch,
                           subscribed_ids(coord, group, stored), changed)
    current = ()
    if reconciled is not stored and replaced is None:   # the batch's last record, stored and encoded
        current = (rec.store_current_assignment(coord, group.group_id, reconciled),)
    elif reconciled is not stored:      # a replacement may downgrade the group: its batch takes them
        records.append(rec.current_assignment_record(group.group_id, reconciled))
        rec.apply_all(coord, records[-1:])
    downgraded = replaced is not None and replaced[1] and maybe_downgrade_after_replacement(
        coord, group, updated.subscribed_topic_names != member.subscribed_topic_names, records)
    if not downgraded:
        rec.append(coord, records, after=current)
    coord.cancel(join_timer_key(group.group_id, member_id))
    if not downgraded:
        schedule_session_timeout(coord, group.group_id, member_id, session_timeout)
        _schedule_fence(coord, group.group_id, member_id, sync_timer_key(group.group_id, member_id),
                        rebalance_timeout)
    return coord.done_reply(join_response(
        version, NONE, member_id, reconciled.member_epoch, CONSUMER_PROTOCOL_TYPE, protocols[0][0], ""))


def _supports(group: ConsumerGroup, protocol_type: str, names: list) -> bool:
    """Kafka's ConsumerGroup.supportsClassicProtocols: a name every classic member offers."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE:
        return False
    if not group.members:
        return bool(names)
    everyone = group.classic_members
    return any(group.classic_protocols.get(name, 0) == everyone for name in names)


_SUBSCRIPTIONS: dict[bytes, dict] = {}
_SUBSCRIPTIONS_LIMIT = 1 << 12


def _subscription(protocols: list) -> dict:
    """The first protocol's embedded ConsumerProtocolSubscription (read only: remembered by its
    bytes, since a classic member rejoins with the same ones at every epoch bump of the group)."""
    from kgroup.records import decode_subscription
    metadata = protocols[0][1]
    known = _SUBSCRIPTIONS.get(metadata) if isinstance(metadata, bytes) else None
    if known is not None:
        return known
    try:
        subscription = decode_subscription(metadata)
    except Exception:     # noqa: BLE001 - a subscription that does not parse cannot join
        raise _Refused(INCONSISTENT_GROUP_PROTOCOL) from None
    if isinstance(metadata, bytes):
        if len(_SUBSCRIPTIONS) >= _SUBSCRIPTIONS_LIMIT:
            _SUBSCRIPTIONS.clear()
        _SUBSCRIPTIONS[metadata] = subscription
    return subscription


def _member_for(group: ConsumerGroup, member_id: str, instance_id, unknown: bool, records: list):
    """(member, (replaced member id, whether it spoke the consumer protocol) or None)."""
    if instance_id is None:
        return group.members.get(member_id) or ConsumerGroupMember(member_id), None
    existing = group.static_member(instance_id)
    if not unknown:
        if existing is None:
            raise _Refused(UNKNOWN_MEMBER_ID)
        if existing.member_id != member_id:
            raise _Refused(FENCED_INSTANCE_ID)
        return existing, None
    if existing is None:
        return group.members.get(member_id) or ConsumerGroupMember(member_id, instance_id=instance_id), None
    # a classic joiner replaces the static member at once, whatever protocol it spoke
    member = existing.evolve(member_id=member_id, member_epoch=0, previous_member_epoch=0)
    records += rec.member_tombstones(group.group_id, existing.member_id)
    records.append(rec.member_metadata_record(group.group_id, member))
    records.append(rec.target_member_record(group.group_id, member_id, group.target_row(existing.member_id)))
    records.append(rec.current_assignment_record(group.group_id, member))
    return member, (existing.member_id, existing.classic is None)


def _plan(coord, group: ConsumerGroup, member, updated, replaced, records: list) -> None:
    """Member metadata, group epoch (with the metadata hash) and target rows, as a heartbeat plans
    them; returns the subscribed topics the target was computed from.

    A classic member subscribes by topic names only: one that takes the place of a regex subscriber
    (a static replacement) drops the regex, its resolution goes with its last subscriber and the
    group epoch bumps so the target is computed again (KAFKA-19720)."""
    group_id = group.group_id
    replaced_id = replaced[0] if replaced else None
    bump = False
    if updated.subscription() != member.subscription() or member.member_id not in group.members and not replaced:
        records.append(rec.member_metadata_record(group_id, updated))
        bump = updated.subscribed_topic_names != member.subscribed_topic_names
    resolved = group.resolved_regexes
    if member.subscribed_topic_regex is not None:
        plan = plan_regexes(coord, group, members_with(group, updated, replaced_id), refresh=False)
        records += plan.records
        resolved = plan.resolved
        bump = True
    topics, metadata = group.subscribed_topics, None
    if bump or group.metadata_version != coord.topic_image_version:
        names = subscribed_names(subscriber_counts(group, member, updated), resolved)
        metadata = subscription_metadata(coord, group, names)
        topics = metadata.topics
        bump |= metadata.changed
    try:
        plan_epoch_and_target(coord, group, updated, replaced_id, topics, bump, records, resolved, metadata)
    except TargetAssignmentError:
        raise _Refused(UNKNOWN_SERVER_ERROR) from None
    return topics


# ---- SyncGroup and Heartbeat --------------------------------------------------------------------
def _classic_member(group: ConsumerGroup, member_id: str, instance_id, generation: int) -> ConsumerGroupMember:
    if instance_id is not None:
        member = group.static_member(instance_id)
        if member is None:
            raise _Refused(UNKNOWN_MEMBER_ID)
        if member.member_id != member_id:
            raise _Refused(FENCED_INSTANCE_ID)
    else:
        member = group.members.get(member_id)
    if member is None or member.classic is None:
        raise _Refused(UNKNOWN_MEMBER_ID)
    if generation != member.member_epoch:
        raise _Refused(ILLEGAL_GENERATION)
    return member


def sync(coord, group: ConsumerGroup, request, version: int):
    instance_id = request.group_instance_id if version >= 3 else None
    try:
        member = _classic_member(group, request.member_id or "", instance_id, request.generation_id)
        protocol_name = member.classic.protocols[0][0]
        if version >= 5 and ((request.protocol_type not in (None, CONSUMER_PROTOCOL_TYPE))
                             or request.protocol_name not in (None, protocol_name)):
            raise _Refused(INCONSISTENT_GROUP_PROTOCOL)
        # the target's epoch, not the group's (KAFKA-20272, 4.3+): with the assignment interval
        # the target can lag the group epoch, and a rejoin before it moves would change nothing
        if group.assignment_epoch > member.member_epoch and member.state != UNREVOKED_PARTITIONS:
            _join_owed(coord, group, member)
            raise _Refused(REBALANCE_IN_PROGRESS)
    except _Refused as refused:
        return coord.done_reply(sync_response(version, refused.code))
    coord.cancel(sync_timer_key(group.group_id, member.member_id))
    schedule_session_timeout(coord, group.group_id, member.member_id, member.classic.session_timeout_ms)
    assignment = classic_assignment(coord, member.assigned, member.classic.protocols[0][1])
    # the response echoes the request's protocol type and name (v5+), as Kafka's does
    return coord.done_reply(sync_response(version, NONE, assignment, getattr(request, "protocol_type", None),
                                          getattr(request, "protocol_name", None)))


def heartbeat(coord, group: ConsumerGroup, request, version: int):
    instance_id = request.group_instance_id if version >= 3 else None
    try:
        member = _classic_member(group, request.member_id or "", instance_id, request.generation_id)
    except _Refused as refused:
        return _heartbeat_response(coord, version, refused.code)
    schedule_session_timeout(coord, group.group_id, member.member_id, member.classic.session_timeout_ms)
    if (member.member_epoch < group.assignment_epoch or member.state == UNREVOKED_PARTITIONS
            or member.state == UNRELEASED_PARTITIONS and not _waiting_on_unreleased(group, member)):
        _join_owed(coord, group, member)
        return _heartbeat_response(coord, version, REBALANCE_IN_PROGRESS)
    return _heartbeat_response(coord, version, NONE)


def _heartbeat_response(coord, version: int, error: int):
    return coord.done_reply(heartbeat_response(version, error))


def _waiting_on_unreleased(group: ConsumerGroup, member: ConsumerGroupMember) -> bool:
    """Kafka's ConsumerGroup.waitingOnUnreleasedPartition: a target partition another member still holds."""
    for topic_id, partitions in group.target_row(member.member_id).items():
        held = member.assigned.get(topic_id, frozenset())
        if any(p not in held and group.partition_epoch(topic_id, p) != -1 for p in partitions):
            return True
    return False


def _join_owed(coord, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
    """Kafka's scheduleConsumerGroupJoinTimeoutIfAbsent: rejoin within the rebalance timeout or be fenced."""
    key = join_timer_key(group.group_id, member.member_id)
    if coord.timer_deadline(key) is None:
        _schedule_fence(coord, group.group_id, member.member_id, key, member.rebalance_timeout_ms)


def _schedule_fence(coord, group_id: str, member_id: str, key: str, timeout_ms: int) -> None:
    def fire():
        group = coord.get_group(group_id)
        if group is not None and group.group_type == ConsumerGroup.group_type and member_id in group.members:
            fence_member(coord, group, member_id)
    coord.schedule(key, max(timeout_ms, 0), fire)
