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
        members.append({
            "memberId": member.member_id,
            "groupInstanceId": member.group_instance_id,
            "clientId": member.client_id,
            "clientHost": member.client_host,
            "rebalanceTimeout": member.rebalance_timeout_ms,
            "sessionTimeout": member.session_timeout_ms,
            "subscription": member.metadata(protocol),
            "assignment": assignment,
        })
    value = {
        "protocolType": group.protocol_type or "",
        "generation": group.generation_id,
        "protocol": protocol,
        "leader": group.leader_id,
        "currentStateTimestamp": -1 if group.current_state_timestamp is None
        else group.current_state_timestamp,
        "members": members,
    }
    recs = _records()
    return (recs.encode_key(GROUP_METADATA, {"group": group.group_id}),
            recs.encode_value(GROUP_METADATA, GROUP_METADATA_VALUE_VERSION, value))


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
