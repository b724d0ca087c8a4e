"""Online migration between the classic and the consumer protocol (Kafka 4.0's
``GroupMetadataManager.validateOnlineUpgrade`` / ``convertToConsumerGroup`` /
``validateOnlineDowngradeWithFencedMember(s)`` / ``validateOnlineDowngradeWithReplacedMemberId`` /
``convertToClassicGroup``, ``ConsumerGroup.fromClassicGroup``, ``ClassicGroup.fromConsumerGroup``).

Upgrade: the first ConsumerGroupHeartbeat join into a non-empty classic group that uses the
``consumer`` protocol type turns it into a consumer group, if ``group.consumer.migration.policy``
allows upgrades and the group is not larger than ``group.consumer.max.size``. Every classic member
becomes a member at epoch = the classic generation, Stable, owning the partitions of its last
classic assignment (its target too), keeping its instance id, its session timeout and its
protocols (the member record's ClassicMemberMetadata). Parked JoinGroup/SyncGroup requests are
answered REBALANCE_IN_PROGRESS. The records: the classic GroupMetadata tombstone, then member
metadata x members, group epoch, target rows x members, target epoch, current assignments x members
— then the joining heartbeat's own records.

Downgrade: when members leave or are fenced (one LeaveGroup may remove several, of either protocol)
and only classic members stay (or a classic joiner replaces the last consumer-protocol member by
instance id), the policy allows downgrades and they are no more than ``group.max.size``, the
consumer group's tombstones and one GroupMetadata record (generation = group epoch, members with
their current partitions serialized) are written and the classic group takes its place; after a
leave it prepares a rebalance so the classic members rejoin.

Each conversion is written with the records of the operation that caused it as one batch, as
Kafka's coordinator appends one CoordinatorResult: the classic tombstone, the conversion and the
joining heartbeat's records for an upgrade; the tombstones and the GroupMetadata record (after a
replacing join's own records) for a downgrade.
"""

from __future__ import annotations

from kgroup.kafka_errors import GROUP_ID_NOT_FOUND, REBALANCE_IN_PROGRESS, UNSUPPORTED_VERSION
from kgroup.records import decode_assignment, decode_subscription, encode_assignment

from . import consumer_records as rec
from .consumer_group import ClassicMemberMetadata, ConsumerGroup, ConsumerGroupMember
from .group import STABLE, ClassicGroup, Member
from .reconciliation import STABLE as MEMBER_STABLE

CONSUMER_PROTOCOL_TYPE = "consumer"


def upgrade_allowed(config) -> bool:
    return config.group_consumer_migration_policy in ("bidirectional", "upgrade")


def downgrade_allowed(config) -> bool:
    return config.group_consumer_migration_policy in ("bidirectional", "downgrade")


# ---- classic -> consumer ------------------------------------------------------------------------
def validate_online_upgrade(coord, classic: ClassicGroup) -> bool:
    return (upgrade_allowed(coord.config) and classic.protocol_type == CONSUMER_PROTOCOL_TYPE
            and len(classic.members) <= coord.config.group_consumer_max_size)


def upgrade(coord, classic: ClassicGroup, records: list) -> ConsumerGroup | None:
    """The classic group converted (not stored: ``records``, which it extends, materialize it when
    the heartbeat applies them), or None when the upgrade is not allowed."""
    if classic.group_type != "classic" or not validate_online_upgrade(coord, classic):
        return None
    _answer_parked(classic)
    group = ConsumerGroup(classic.group_id)
    try:
        members = [_converted_member(coord, classic, m) for m in classic.members.values()]
    except _Malformed:
        from .consumer_heartbeat import HeartbeatError
        raise HeartbeatError(GROUP_ID_NOT_FOUND, f"Cannot upgrade the classic group {classic.group_id} to "
                                                 f"consumer group because the embedded consumer protocol "
                                                 f"is malformed.") from None
    except _UserData:
        from .consumer_heartbeat import HeartbeatError
        raise HeartbeatError(UNSUPPORTED_VERSION, "userData from a custom assignor would be lost") from None
    names = {name for m in members for name in m.subscribed_topic_names}
    conversion = conversion_records(classic.group_id, classic.generation_id, members, coord.metadata_hash(names))
    rec.apply_to(coord, group, conversion)
    records += conversion
    from .consumer_fencing import schedule_session_timeout
    for member in members:      # a failed conversion leaves them to find no consumer group
        schedule_session_timeout(coord, group.group_id, member.member_id, member.classic.session_timeout_ms)
    return group


def conversion_records(group_id: str, epoch: int, members: list, metadata_hash: int = 0) -> list:
    """Kafka's ConsumerGroup.createConsumerGroupRecords (the epoch record with the hash of the
    members' topics, as fromClassicGroup computes it)."""
    return ([rec.member_metadata_record(group_id, m) for m in members]
            + [rec.group_epoch_record(group_id, epoch, metadata_hash)]
            + [rec.target_member_record(group_id, m.member_id, m.assigned) for m in members]
            + [rec.target_epoch_record(group_id, epoch)]
            + [rec.current_assignment_record(group_id, m) for m in members])


def _answer_parked(classic: ClassicGroup) -> None:
    from .responses import join_error, sync_response
    for member in classic.members.values():
        reply = classic.take_join_reply(member)
        if reply is not None:
            reply.complete(join_error(member.join_version, REBALANCE_IN_PROGRESS, member.member_id))
        if member.sync_reply is not None:
            classic.save_member(member)
            reply, member.sync_reply = member.sync_reply, None
            reply.complete(sync_response(member.sync_version, REBALANCE_IN_PROGRESS))


class _Malformed(Exception):
    pass


class _UserData(Exception):
    pass


def _converted_member(coord, classic: ClassicGroup, member: Member) -> ConsumerGroupMember:
    protocol = classic.protocol_name or (member.protocols[0][0] if member.protocols else None)
    try:
        subscription = decode_subscription(member.metadata(protocol))
        assignment = decode_assignment(member.assignment) if member.assignment else None
    except Exception as exc:     # noqa: BLE001 - Kafka's SchemaException, whatever the field
        raise _Malformed(str(exc)) from exc
    if assignment is not None and assignment.get("userData"):
        raise _UserData()
    assigned = topic_id_map(coord, assignment["assignedPartitions"]) if assignment else {}
    generation = classic.generation_id
    return ConsumerGroupMember(
        member.member_id, member_epoch=generation, previous_member_epoch=generation, state=MEMBER_STABLE,
        instance_id=member.group_instance_id, rack_id=subscription.get("rackId") or None,   # toOptional: "" is none
        rebalance_timeout_ms=member.rebalance_timeout_ms, client_id=member.client_id,
        client_host=member.client_host, subscribed_topic_names=frozenset(subscription["topics"]),
        assigned=assigned, classic=ClassicMemberMetadata(member.session_timeout_ms, tuple(member.protocols)))


def topic_id_map(coord, topic_partitions) -> dict:
    """[{topic, partitions}] by name -> {topic id: partitions}; topics the image does not know are dropped."""
    image, out = coord.topic_image, {}
    for item in topic_partitions or ():
        known = image.get(item["topic"])
        if known is not None and item["partitions"]:
            out[known[0]] = out.get(known[0], frozenset()) | frozenset(item["partitions"])
    return out


# ---- consumer -> classic ------------------------------------------------------------------------
def maybe_downgrade(coord, group: ConsumerGroup, leaving: list) -> bool:
    """Kafka's validateOnlineDowngradeWithFencedMembers then convertToClassicGroup with a rebalance:
    True if the group became a classic one (the leaving members, of either protocol, are gone with
    it). Only the members that stay count: an admin LeaveGroup removing classic members with the
    last consumer-protocol one downgrades what is left."""
    staying = [m for m_id, m in group.members.items() if m_id not in leaving]
    if not _downgradable(coord, staying):
        return False
    convert_to_classic(coord, group, staying, rebalance=True)
    return True


def maybe_downgrade_after_replacement(coord, group: ConsumerGroup, subscription_changed: bool,
                                      pending: list) -> bool:
    """Kafka's validateOnlineDowngradeWithReplacedMember: a classic joiner took the instance id of
    the last consumer-protocol member (``pending``: the join's records, applied, not yet appended,
    which go first in the conversion's batch). The members keep their partitions; a rebalance only
    when the joiner subscribes to other topics than the member it replaced (KAFKA-19546: without it
    the new subscription would wait for the next rebalance, with partitions of the new topics
    unowned)."""
    staying = list(group.members.values())
    if not _downgradable(coord, staying):
        return False
    convert_to_classic(coord, group, staying, rebalance=subscription_changed, pending=pending)
    return True


def _downgradable(coord, staying: list) -> bool:
    """Members stay, all of them classic, the policy allows downgrades, a classic group can hold them."""
    return (bool(staying) and all(m.classic is not None for m in staying)
            and downgrade_allowed(coord.config) and len(staying) <= coord.config.group_max_size)


def delete_empty_consumer_group(coord, group: ConsumerGroup) -> None:
    """A classic JoinGroup to an empty consumer group: its tombstones (offsets stay), then the
    join creates a classic group (Kafka's maybeDeleteEmptyConsumerGroup)."""
    from .consumer_admin import group_tombstones
    rec.write(coord, group_tombstones(group))


def convert_to_classic(coord, group: ConsumerGroup, staying: list, rebalance: bool,
                       pending: list = ()) -> ClassicGroup:
    from .consumer_admin import group_tombstones
    from .offsets_retention import remember_subscriptions
    from .persistence import group_metadata_record
    from .rebalance import prepare_rebalance, reschedule_member
    tombstones = group_tombstones(group)
    rec.apply_all(coord, tombstones)                 # the consumer group and its timers are gone
    classic = coord.get_or_create_classic_group(group.group_id, persist=False)
    classic.save()
    classic.generation_id = group.group_epoch
    for m in staying:
        classic.add(Member(m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                           m.classic.session_timeout_ms, CONSUMER_PROTOCOL_TYPE, list(m.classic.protocols)))
    classic.protocol_type = CONSUMER_PROTOCOL_TYPE
    classic.protocol_name = classic.select_protocol()
    for m in staying:
        member = classic.members[m.member_id]
        member.assignment = classic_assignment(coord, m.assigned, member.metadata(classic.protocol_name))
        classic.touch_record(m.member_id)
    classic.state = STABLE
    classic.current_state_timestamp = coord.now_ms
    remember_subscriptions(classic)     # as a load would: the converted members' subscriptions
    rec.append(coord, [*pending, *tombstones], after=[group_metadata_record(classic)])
    for member in classic.members.values():
        reschedule_member(coord, classic, member)
    if rebalance:
        prepare_rebalance(coord, classic)
    return classic


def classic_assignment(coord, assigned, subscription: bytes) -> bytes:
    """Kafka's ConsumerProtocol.serializeAssignment of the partitions by name, at the version of the
    member's subscription (0 if it does not say). A classic member inside a consumer group is
    handed one at every SyncGroup: the topic names are looked up only for the topics it holds."""
    version = int.from_bytes(subscription[:2], "big", signed=True) if len(subscription) >= 2 else 0
    partitions = []
    if assigned:
        names = {topic_id: name for name, (topic_id, _) in coord.topic_image.items()}
        for topic_id, parts in assigned.items():
            name = names.get(topic_id)
            if name is not None and parts:
                partitions.append((name, sorted(parts)))
        partitions.sort()
    return encode_assignment({"assignedPartitions": [{"topic": n, "partitions": p} for n, p in partitions],
                              "userData": None}, min(max(version, 0), 3))
