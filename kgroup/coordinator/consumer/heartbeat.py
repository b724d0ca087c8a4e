"""ConsumerGroupHeartbeat (API 68, KIP-848): Kafka's ``GroupMetadataManager.consumerGroupHeartbeat``.

One heartbeat is one coordinator operation. It first plans without changing anything — checks,
the member as it will be stored, the new group epoch and, if that moved, the new target
assignment (the only step that can fail late: the assignor) — then applies its records in order
through ``records`` (static replacement, member metadata, group epoch with its metadata hash,
target rows and target epoch, current assignment) and appends them as one batch. A steady
heartbeat writes nothing: it checks the epoch, reschedules the session timer and answers.
"""

from __future__ import annotations

import base64
import uuid

from kgroup.kafka_errors import (FENCED_INSTANCE_ID, FENCED_MEMBER_EPOCH, GROUP_ID_NOT_FOUND,
                                 GROUP_MAX_SIZE_REACHED, INVALID_REGULAR_EXPRESSION, INVALID_REQUEST,
                                 UNKNOWN_MEMBER_ID,
                                 UNKNOWN_SERVER_ERROR, UNRELEASED_INSTANCE_ID, UNSUPPORTED_ASSIGNOR)
from kgroup.protocol import ConsumerGroupHeartbeatResponse, fast_constructor

from . import records as rec
from .fencing import fence_member, schedule_rebalance_timeout, schedule_session_timeout
from .errors import HeartbeatError
from .group import LEAVE_EPOCH, STATIC_LEAVE_EPOCH, ConsumerGroup, ConsumerGroupMember, subscribed_names
from .regex import plan_regexes, regex_refresh_due
from .target import (TargetAssignmentError, members_with, plan_epoch_and_target, preferred_assignor,
                              subscribed_ids, subscriber_counts, subscription_metadata)
from .migration_upgrade import upgrade
from .topic_regex import InvalidTopicRegex, compile_topic_regex
from .reconciliation import UNKNOWN, ReconciliationError, check_unknown_state, reconcile

# (version, throttle_time_ms, error_code, error_message, member_id, member_epoch,
#  heartbeat_interval_ms, assignment): built on every heartbeat
_response = fast_constructor(ConsumerGroupHeartbeatResponse)
_assignment_of = fast_constructor(ConsumerGroupHeartbeatResponse.Assignment)
_topic_partitions = fast_constructor(ConsumerGroupHeartbeatResponse.Assignment.TopicPartitions)


def handle_consumer_group_heartbeat(coord, request, client_id: str, client_host: str):
    version = request.API_VERSION
    try:
        response = _heartbeat(coord, request, version, client_id, client_host)
    except HeartbeatError as exc:
        response = _response(version, 0, exc.code, exc.message, None, 0, 0, None)
    except ReconciliationError as exc:
        response = _response(version, 0, exc.code, str(exc), None, 0, 0, None)
    return coord.done_reply(response)


# ---- checks (throwIfConsumerGroupHeartbeatRequestIsInvalid) ----------------------------------
def _blank(text) -> bool:
    return text is not None and not text.strip()


def validate(request, version: int, assignors: tuple) -> None:
    epoch = request.member_epoch
    if (version >= 1 or epoch > 0 or epoch == LEAVE_EPOCH) and not (request.member_id or "").strip():
        raise HeartbeatError(INVALID_REQUEST, "MemberId can't be empty.")
    if not (request.group_id or "").strip():
        raise HeartbeatError(INVALID_REQUEST, "GroupId can't be empty.")
    if _blank(request.instance_id):
        raise HeartbeatError(INVALID_REQUEST, "InstanceId can't be empty.")
    if _blank(request.rack_id):
        raise HeartbeatError(INVALID_REQUEST, "RackId can't be empty.")
    regex = _regex(request, version)
    if epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise HeartbeatError(INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
        if request.topic_partitions is None or request.topic_partitions:
            raise HeartbeatError(INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
        if request.subscribed_topic_names is None and regex is None:
            raise HeartbeatError(INVALID_REQUEST, "Either SubscribedTopicNames or SubscribedTopicRegex "
                                                  "must be non-null when (re-)joining.")
    elif epoch == STATIC_LEAVE_EPOCH:
        if request.instance_id is None:
            raise HeartbeatError(INVALID_REQUEST, "InstanceId can't be null.")
    elif epoch < STATIC_LEAVE_EPOCH:
        raise HeartbeatError(INVALID_REQUEST, "MemberEpoch is invalid.")
    if request.server_assignor is not None and request.server_assignor not in assignors:
        raise HeartbeatError(UNSUPPORTED_ASSIGNOR, f"ServerAssignor {request.server_assignor} is not "
                                                   f"supported. Supported assignors: {', '.join(assignors)}.")


def _regex(request, version: int):
    """The request's SubscribedTopicRegex (v1+; v0 has no such field)."""
    return getattr(request, "subscribed_topic_regex", None) if version >= 1 else None


def _check_new_regex(group: ConsumerGroup, regex: str | None) -> None:
    """Kafka checks a regex's syntax only when it is new to the group."""
    if regex is None or regex in group.resolved_regexes:
        return
    try:
        compile_topic_regex(regex)
    except InvalidTopicRegex as exc:
        raise HeartbeatError(INVALID_REGULAR_EXPRESSION, str(exc)) from None


def check_epoch(member: ConsumerGroupMember, epoch: int, owned) -> None:
    """Kafka's throwIfConsumerGroupMemberEpochIsInvalid. Epoch 0 is a (re)join and always valid:
    a member the client believes fenced rejoins under its member id (Kafka 4.3+, KAFKA-19233)."""
    if epoch == 0:
        return
    if epoch > member.member_epoch:
        raise HeartbeatError(FENCED_MEMBER_EPOCH, f"The consumer group member has a greater member epoch "
                                                  f"({epoch}) than the one known by the group coordinator "
                                                  f"({member.member_epoch}). The member must abandon all "
                                                  f"its partitions and rejoin.")
    if epoch < member.member_epoch:
        if epoch != member.previous_member_epoch or owned is None or not _subset(owned, member.assigned):
            raise HeartbeatError(FENCED_MEMBER_EPOCH, f"The consumer group member has a smaller member "
                                                      f"epoch ({epoch}) than the one known by the group "
                                                      f"coordinator ({member.member_epoch}). The member "
                                                      f"must abandon all its partitions and rejoin.")


def _subset(owned, assigned) -> bool:
    """Kafka's isSubset: every listed topic must be assigned, even one listed with no partitions."""
    return all(topic_id in assigned and parts <= assigned[topic_id] for topic_id, parts in owned.items())


def _owned(request):
    """The request's TopicPartitions as {topic id: partitions}; a topic listed without partitions
    stays (as an empty set), since the lost-response check counts it."""
    if request.topic_partitions is None:
        return None
    owned: dict = {}
    for tp in request.topic_partitions:
        parts = frozenset(tp.partitions or ())
        before = owned.get(tp.topic_id)
        owned[tp.topic_id] = parts if before is None else before | parts
    return owned


# ---- the operation ------------------------------------------------------------------------
def _heartbeat(coord, request, version: int, client_id: str, client_host: str):
    config = coord.config
    validate(request, version, config.group_consumer_assignors)
    group_id, member_id, epoch = request.group_id, request.member_id, request.member_epoch
    if epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
        return _leave(coord, request, version)
    records: list = []     # an online upgrade's records come first
    group = _group_for(coord, group_id, join=epoch == 0, records=records)
    if len(group.members) >= config.group_consumer_max_size and (not member_id or member_id not in group.members):
        raise HeartbeatError(GROUP_MAX_SIZE_REACHED,
                             f"The consumer group has reached its maximum capacity of "
                             f"{config.group_consumer_max_size} members.")
    if not member_id:
        member_id = new_member_id(coord)
    owned = _owned(request)
    member, replaced = _member_for(group, request, member_id, epoch, owned, records)
    if member.state == UNKNOWN:
        check_unknown_state(owned)

    updated = _updated(member, request, version, client_id, client_host)
    regex_changed = updated.subscribed_topic_regex != member.subscribed_topic_regex
    if regex_changed:
        _check_new_regex(group, updated.subscribed_topic_regex)
    # Kafka 4.3+ (KAFKA-20268) bumps a new group's epoch (1) only for what bumps any group's: the
    # first member's topics or regex are a change (an empty subscription is not: the member then
    # reconciles to the initial empty target at epoch 1)
    bump = False
    if updated is not member and updated.subscription() != member.subscription() or \
            member_id not in group.members and replaced is None:
        records.append(rec.member_metadata_record(group_id, updated))
        bump |= updated.subscribed_topic_names != member.subscribed_topic_names or regex_changed
    # Kafka 4.4 (KAFKA-20434): the target is recomputed when the assignor most members prefer changes
    # (the counts only move when this member's choice does: otherwise both sides are the same)
    if updated.server_assignor != member.server_assignor or member_id not in group.members:
        default = coord.config.group_consumer_assignors[0]
        bump |= (preferred_assignor(group, None, None, default, as_described=True)
                 != preferred_assignor(group, updated, replaced, default))
    refresh = group.metadata_version != coord.topic_image_version
    resolved = group.resolved_regexes
    refresh_regexes = bool(resolved) and regex_refresh_due(coord, group, regex_changed)
    if regex_changed or refresh_regexes:
        plan = plan_regexes(coord, group, members_with(group, updated, replaced), refresh_regexes)
        records += plan.records
        bump |= plan.changed
        resolved = plan.resolved
    topics, metadata = group.subscribed_topics, None
    if bump or refresh:
        metadata = subscription_metadata(
            coord, group, subscribed_names(subscriber_counts(group, member, updated), resolved))
        topics = metadata.topics
        bump |= metadata.changed
    try:
        plan_epoch_and_target(coord, group, updated, replaced, topics, bump, records, resolved, metadata)
    except TargetAssignmentError:       # logged where it failed; Kafka answers it without a message
        raise HeartbeatError(UNKNOWN_SERVER_ERROR, None) from None

    stored_group = coord.get_group(group_id)
    classic_tombstone = []
    if stored_group is not None and stored_group is not group:
        coord.remove_group(group_id)      # a classic group gives way: its tombstone heads the batch
        classic_tombstone = coord.group_type_of(stored_group).tombstones(stored_group)
    group = _apply(coord, group, records)
    group.set_field("metadata_version", coord.topic_image_version)
    group.set_field("subscribed_topics", topics)
    if regex_changed or refresh_regexes:
        group.set_field("regex_version", coord.topic_image_version)
    stored = group.members[member_id]
    subscription_changed = updated.subscribed_topic_names != member.subscribed_topic_names or regex_changed
    if subscription_changed or not stored.is_reconciled_to(group.assignment_epoch):
        reconciled = reconcile(stored, group.assignment_epoch, group.target_row(member_id), owned,
                               group.partition_epoch, subscribed_ids(coord, group, stored), subscription_changed)
    else:
        reconciled = stored
    current = ()
    if reconciled is not stored:       # the batch's last record: stored now, encoded for append
        current = (rec.store_current_assignment(coord, group_id, reconciled),)
        schedule_rebalance_timeout(coord, group_id, reconciled)
    rec.append(coord, records, before=classic_tombstone, after=current)
    schedule_session_timeout(coord, group_id, member_id)
    subscribed = request.subscribed_topic_names is not None or _regex(request, version) is not None
    full = epoch == 0 or (request.rebalance_timeout_ms != -1 and subscribed and request.topic_partitions is not None)
    changed = reconciled.assigned != member.assigned
    return _response(version, 0, 0, None, member_id, reconciled.member_epoch,
                     config.group_consumer_heartbeat_interval_ms,
                     _assignment(reconciled.assigned) if full or changed else None)


def _group_for(coord, group_id: str, join: bool, records: list) -> ConsumerGroup:
    """The consumer group; on a join, a new one (not stored until its first record is applied; an
    empty classic group of that id is deleted then), or a non-empty classic group converted
    (``migration.upgrade``: its records go first into ``records``)."""
    group = coord.get_group(group_id)
    if group is not None and group.group_type == ConsumerGroup.group_type:
        return group
    if group is None and join:
        return ConsumerGroup(group_id)
    if group is None:
        raise HeartbeatError(GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
    if join and group.is_empty():
        return ConsumerGroup(group_id)     # an empty classic group gives way once the join is planned
    if join:
        converted = upgrade(coord, group, records)
        if converted is not None:
            return converted
    raise HeartbeatError(GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")


def _member_for(group: ConsumerGroup, request, member_id: str, epoch: int, owned, records: list):
    """(the member as stored or newly made, the member id a static member replaces or None)."""
    instance_id = request.instance_id
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            if epoch != 0:
                raise HeartbeatError(UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group "
                                                        f"{group.group_id}.")
            member = ConsumerGroupMember(member_id, member_epoch=0)
        check_epoch(member, epoch, owned)
        return member, None
    existing = group.static_member(instance_id)
    if epoch == 0:
        if existing is None:
            # getOrMaybeSubscribeStaticConsumerGroupMember takes the member as it is: unlike the
            # dynamic path, a join with a new instance id runs no epoch check
            member = group.members.get(member_id) or ConsumerGroupMember(member_id, instance_id=instance_id)
            return member, None
        if existing.member_epoch != STATIC_LEAVE_EPOCH and existing.classic is None:   # a classic one is replaced
            raise HeartbeatError(UNRELEASED_INSTANCE_ID, f"Static member {member_id} with instance id "
                                                         f"{instance_id} cannot join the group because the "
                                                         f"instance id is owned by {existing.member_id} member.")
        member = existing.evolve(member_id=member_id, member_epoch=0, previous_member_epoch=0)
        records += rec.member_tombstones(group.group_id, existing.member_id)
        records.append(rec.member_metadata_record(group.group_id, member))
        records.append(rec.target_member_record(group.group_id, member_id, group.target_row(existing.member_id)))
        records.append(rec.current_assignment_record(group.group_id, member))
        return member, existing.member_id
    _check_static(existing, instance_id, member_id)
    check_epoch(existing, epoch, owned)
    return existing, None


def _check_static(existing, instance_id: str, member_id: str) -> None:
    """Kafka's throwIfStaticMemberIsUnknown and throwIfInstanceIdIsFenced, with their texts."""
    if existing is None:
        raise HeartbeatError(UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
    if existing.member_id != member_id:
        raise HeartbeatError(FENCED_INSTANCE_ID, f"Static member {member_id} with instance id {instance_id} "
                                                 f"was fenced by member {existing.member_id}.")


def _updated(member: ConsumerGroupMember, request, version: int, client_id: str,
             client_host: str) -> ConsumerGroupMember:
    changes = {}
    if request.instance_id is not None and request.instance_id != member.instance_id:
        changes["instance_id"] = request.instance_id
    if request.rack_id is not None and request.rack_id != member.rack_id:
        changes["rack_id"] = request.rack_id
    if request.server_assignor is not None and request.server_assignor != member.server_assignor:
        changes["server_assignor"] = request.server_assignor
    if request.rebalance_timeout_ms != -1 and request.rebalance_timeout_ms != member.rebalance_timeout_ms:
        changes["rebalance_timeout_ms"] = request.rebalance_timeout_ms
    if request.subscribed_topic_names is not None:
        names = frozenset(request.subscribed_topic_names)
        if names != member.subscribed_topic_names:
            changes["subscribed_topic_names"] = names
    regex = _regex(request, version)
    if regex is not None and (regex or None) != member.subscribed_topic_regex:
        changes["subscribed_topic_regex"] = regex or None      # "" clears the regex
    if client_id != member.client_id:
        changes["client_id"] = client_id
    if client_host != member.client_host:
        changes["client_host"] = client_host
    if member.classic is not None:     # a classic static member's successor speaks the consumer protocol
        changes["classic"] = None
    return member.evolve(**changes) if changes else member


def _apply(coord, group: ConsumerGroup, records: list) -> ConsumerGroup:
    """Apply the records (appended later, as one batch); the group as stored afterwards."""
    rec.apply_all(coord, records)
    return coord.get_group(group.group_id) if records else group


def _assignment(assigned) -> object:
    items = assigned.items() if len(assigned) < 2 else sorted(assigned.items(), key=rec.topic_id_order)
    return _assignment_of(None, [_topic_partitions(None, t, sorted(p)) for t, p in items])


def new_member_id(coord) -> str:
    """Kafka's Uuid.randomUuid().toString(): 22 URL-safe base64 characters (from the coordinator's
    uuid source, so tests choose it)."""
    raw = coord.uuid_source()
    try:
        raw_bytes = uuid.UUID(raw).bytes
    except ValueError:
        return raw
    return base64.urlsafe_b64encode(raw_bytes).decode().rstrip("=")


# ---- leaving and fencing ------------------------------------------------------------------
def _leave(coord, request, version: int):
    group_id, member_id, instance_id = request.group_id, request.member_id, request.instance_id
    group = coord.get_group(group_id)
    if group is None or group.group_type != ConsumerGroup.group_type:
        # Kafka's consumerGroupLeave looks the group up with consumerGroup(groupId), whose texts
        # differ from the join path's getOrMaybeCreateConsumerGroup ("Consumer group g not found.")
        raise HeartbeatError(GROUP_ID_NOT_FOUND, f"Group {group_id} not found." if group is None
                             else f"Group {group_id} is not a consumer group.")
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            raise HeartbeatError(UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
    else:
        member = group.static_member(instance_id)
        _check_static(member, instance_id, member_id)
    if request.member_epoch == STATIC_LEAVE_EPOCH:
        # Kafka 4.4 resets the assignment epochs to 0: the successor commits for them from epoch 0
        parked = member.evolve(member_epoch=STATIC_LEAVE_EPOCH, previous_member_epoch=member.previous_member_epoch,
                               pending_revocation={}, assignment_epochs={
                                   topic_id: dict.fromkeys(parts, 0) for topic_id, parts in member.assigned.items()})
        rec.write(coord, [rec.current_assignment_record(group_id, parked)])
    else:
        fence_member(coord, group, member_id)
    return _response(version, 0, 0, None, member_id, request.member_epoch, 0, None)
