"""The online upgrade, classic -> consumer (Kafka 4.0's ``GroupMetadataManager.validateOnlineUpgrade``
/ ``convertToConsumerGroup``, ``ConsumerGroup.fromClassicGroup``): the policy and the rules of
both directions are in ``migration``.

This half sits above ``fencing``: the converted members' sessions start here, and a
session that ends fences its member, which may downgrade the group again (``migration``, below
``fencing``).
"""

from __future__ import annotations

from kgroup.kafka_errors import GROUP_ID_NOT_FOUND, REBALANCE_IN_PROGRESS, UNSUPPORTED_VERSION
from kgroup.records import decode_assignment, decode_subscription

from . import records as rec
from .errors import HeartbeatError
from .fencing import schedule_session_timeout
from .group import ClassicMemberMetadata, ConsumerGroup, ConsumerGroupMember
from ..classic.group import ClassicGroup, Member
from ..classic.responses import join_error, sync_response
from .migration import CONSUMER_PROTOCOL_TYPE, topic_id_map, upgrade_allowed
from .reconciliation import STABLE as MEMBER_STABLE


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
        raise HeartbeatError(GROUP_ID_NOT_FOUND, f"Cannot upgrade the classic group {classic.group_id} to "
                                                 f"consumer group because the embedded consumer protocol "
                                                 f"is malformed.") from None
    except _UserData:
        raise HeartbeatError(UNSUPPORTED_VERSION, "userData from a custom assignor would be lost") from None
    names = {name for m in members for name in m.subscribed_topic_names}
    conversion = conversion_records(classic.group_id, classic.generation_id, members, coord.metadata_hash(names))
    rec.apply_to(coord, group, conversion)
    records += conversion
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
