"""GroupMetadata records (key type 2, value v3) and their replay (Kafka's GroupCoordinatorRecordHelpers.newGroupMetadataRecord, GroupMetadataManager.replay).

The record encoder belongs to ``kgroup.records``; it is imported on first use so that the
coordinator stays importable (and fast to import) on its own.
"""

from __future__ import annotations

from functools import cache
from itertools import chain

from .group import EMPTY, STABLE, ClassicGroup, Member
from .subscriptions import remember_subscriptions

GROUP_METADATA = 2
GROUP_METADATA_VALUE_VERSION = 3   # what brokers at IBP >= 2.3 write


def _records():
    from kgroup import records
    return records


def group_key(group_id: str) -> bytes:
    return _records().encode_key(GROUP_METADATA, {"group": group_id})


def group_metadata_record(group: ClassicGroup, *, cached: bool = True) -> tuple[bytes, bytes]:
    """Kafka's newGroupMetadataRecord: every member with its selected-protocol metadata, in Kafka's
    member-map order (ClassicGroup.java_ordered_members).

    The members' encodings come from the group's record cache (see ClassicGroup.touch_record),
    so a static restart in a large Stable group re-encodes one member, not all;
    ``cached=False`` encodes every member afresh (the tests' oracle for the cache).
    """
    protocol = group.protocol_name
    if cached:
        body = _cached_members(group, protocol)
    else:
        body = [_encode_member(member, protocol) for member in group.java_ordered_members()]
    head = _records().encode_value(GROUP_METADATA, GROUP_METADATA_VALUE_VERSION, {
        "protocolType": group.protocol_type or "",
        "generation": group.generation_id,
        "protocol": protocol,
        "leader": group.leader_id,
        "currentStateTimestamp": -1 if group.current_state_timestamp is None
        else group.current_state_timestamp,
        "members": [],
    })
    # v3 is not flexible: the value ends with the members array (int32 count, then each member).
    # One join: a large group's value is copied once.
    value = b"".join(chain((head[:-4], len(group.members).to_bytes(4, "big", signed=True)), body))
    return group_key(group.group_id), value


def _encode_member(member: Member, protocol: str | None) -> bytes:
    return _member_bytes(_member_fields(member, protocol))


def _member_fields(member: Member, protocol: str | None) -> tuple:
    """What a member's entry in the record holds (``_MEMBER_FIELDS``, in order)."""
    return (member.member_id, member.group_instance_id, member.client_id, member.client_host,
            member.rebalance_timeout_ms, member.session_timeout_ms, member.metadata(protocol),
            member.assignment)


def _cached_members(group: ClassicGroup, protocol: str | None) -> list[bytes]:
    """The members' encodings in Kafka's member-map order, from the group's record cache.

    A touched member is re-encoded only if what it writes changed: a rejoin with the same
    subscription, or a sync that hands it the assignment it had, reuses its bytes."""
    cache, members, dirty = group.record_cache, group.members, group.record_dirty
    if (cache is None or group.record_protocol != protocol or len(cache) != len(members)
            or any(member_id not in members for member_id in dirty)):
        cache = {}
        for member_id, member in members.items():
            fields = _member_fields(member, protocol)
            cache[member_id] = (fields, _member_bytes(fields))
        group.record_cache, group.record_protocol = cache, protocol
        dirty.clear()
    elif dirty:
        for member_id in dirty:
            fields = _member_fields(members[member_id], protocol)
            if cache[member_id][0] != fields:
                cache[member_id] = (fields, _member_bytes(fields))
        dirty.clear()
    return [cache[member.member_id][1] for member in group.java_ordered_members()]


_MEMBER_FIELDS = ("memberId", "groupInstanceId", "clientId", "clientHost", "rebalanceTimeout",
                  "sessionTimeout", "subscription", "assignment")


@cache
def _member_encoder():
    return _records().value_element_encoder(GROUP_METADATA, GROUP_METADATA_VALUE_VERSION, "members")


def _member_bytes(fields: tuple) -> bytes:
    """One member's bytes in a v3 members array."""
    return _member_encoder()(dict(zip(_MEMBER_FIELDS, fields)))


def empty_group_metadata_record(group_id: str, current_state_timestamp: int | None) -> tuple[bytes, bytes]:
    """The record Kafka writes for a group a JoinGroup created (newEmptyGroupMetadataRecord):
    generation 0, protocol type "", no protocol, leader or members, whatever the join did; only
    the state timestamp is the group's (its creation time, or its PreparingRebalance transition's)."""
    return group_metadata_record(ClassicGroup(group_id, current_state_timestamp))


def group_tombstone(group_id: str) -> tuple[bytes, None]:
    return group_key(group_id), None


def group_from_value(group_id: str, data: dict) -> ClassicGroup:
    """Rebuild a group as Kafka's replay does: Stable with members, else Empty."""
    group = ClassicGroup(group_id, state=STABLE if data.get("members") else EMPTY)
    group.generation_id = data.get("generation", 0)
    group.protocol_type = data.get("protocolType") or None
    group.protocol_name = data.get("protocol")
    timestamp = data.get("currentStateTimestamp", -1)
    group.current_state_timestamp = None if timestamp is None or timestamp < 0 else timestamp
    for raw in data.get("members") or ():
        session = raw.get("sessionTimeout", 0)
        rebalance = raw.get("rebalanceTimeout", -1)
        member = Member(
            member_id=raw["memberId"], group_instance_id=raw.get("groupInstanceId"),
            client_id=raw.get("clientId", ""), client_host=raw.get("clientHost", ""),
            rebalance_timeout_ms=session if rebalance == -1 else rebalance,
            session_timeout_ms=session, protocol_type=group.protocol_type or "",
            protocols=[(group.protocol_name, bytes(raw.get("subscription") or b""))],
            assignment=bytes(raw.get("assignment") or b""))
        group.add(member)
    group.protocol_type = data.get("protocolType") or None   # add() set it from the first member
    if data.get("leader") is not None:
        # Kafka sets the stored leader first and add() only fills an absent one: a record without
        # a leader leaves the first member leading
        group.leader_id = data["leader"]
    remember_subscriptions(group)       # Kafka's replay computes subscribedTopics from the record
    return group
