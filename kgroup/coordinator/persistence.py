"""GroupMetadata records (key type 2, value v3) and their replay (spec §e).

The record encoder belongs to ``kgroup.records``; it is imported on first use so that the
coordinator stays importable (and fast to import) on its own.
"""

from __future__ import annotations

from .group import EMPTY, STABLE, ClassicGroup, Member

GROUP_METADATA = 2
GROUP_METADATA_VALUE_VERSION = 3   # what brokers at IBP >= 2.3 write


def _records():
    from kgroup import records
    return records


def group_key(group_id: str) -> bytes:
    return _records().encode_key(GROUP_METADATA, {"group": group_id})


def group_metadata_record(group: ClassicGroup, assignments: dict[str, bytes] | None = None
                          ) -> tuple[bytes, bytes]:
    """Kafka's newGroupMetadataRecord: every member with its selected-protocol metadata.

    ``assignments`` overrides the members' current assignments (the leader's SyncGroup
    writes the new assignment before it is installed).
    """
    protocol = group.protocol_name
    members = []
    for member in group.members.values():
        assignment = member.assignment if assignments is None else assignments.get(member.member_id, b"")
        members.append(_member_bytes((
            member.member_id, member.group_instance_id, member.client_id, member.client_host,
            member.rebalance_timeout_ms, member.session_timeout_ms, member.metadata(protocol), assignment)))
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
    value = head[:-4] + len(members).to_bytes(4, "big", signed=True) + b"".join(members)
    return group_key(group.group_id), value


# A static restart rewrites the whole group (Kafka does too) but changes one member: members'
# encodings are cached by their fields, so a 1,000-member rolling bounce encodes each member once.
_MEMBER_BYTES: dict[tuple, bytes] = {}
_MEMBER_BYTES_LIMIT = 200_000
_EMPTY_HEAD: bytes | None = None


def _member_bytes(fields: tuple) -> bytes:
    cached = _MEMBER_BYTES.get(fields)
    if cached is not None:
        return cached
    global _EMPTY_HEAD
    recs = _records()
    header = {"protocolType": "", "generation": 0, "protocol": None, "leader": None,
              "currentStateTimestamp": -1}
    if _EMPTY_HEAD is None:
        _EMPTY_HEAD = recs.encode_value(GROUP_METADATA, GROUP_METADATA_VALUE_VERSION, {**header, "members": []})
    names = ("memberId", "groupInstanceId", "clientId", "clientHost", "rebalanceTimeout", "sessionTimeout",
             "subscription", "assignment")
    one = recs.encode_value(GROUP_METADATA, GROUP_METADATA_VALUE_VERSION,
                            {**header, "members": [dict(zip(names, fields))]})
    encoded = one[len(_EMPTY_HEAD):]
    if len(_MEMBER_BYTES) >= _MEMBER_BYTES_LIMIT:
        _MEMBER_BYTES.clear()
    _MEMBER_BYTES[fields] = encoded
    return encoded


def empty_group_metadata_record(group_id: str) -> tuple[bytes, bytes]:
    """The record Kafka writes for a group a JoinGroup created (generation 0, no members)."""
    return group_metadata_record(ClassicGroup(group_id))


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
    group.leader_id = data.get("leader")
    return group
