"""Response builders at the request's version, with Kafka's per-version rules applied."""

from __future__ import annotations

from kafka.protocol.consumer.group import HeartbeatResponse, JoinGroupResponse, SyncGroupResponse

from kgroup.protocol import fast_constructor

# A classic group answers every JoinGroup, SyncGroup and Heartbeat with one of these (a large
# dynamic group's rolling bounce, millions): built without kafka-python's walk of the schema.
_join = fast_constructor(JoinGroupResponse)
_join_member = fast_constructor(JoinGroupResponse.JoinGroupResponseMember)
_sync = fast_constructor(SyncGroupResponse)
_heartbeat = fast_constructor(HeartbeatResponse)


def wire_bytes(raw, field: str, *args) -> bytes:
    """A bytes field of a request (kafka-python may hold an ApiData object there); ``field`` is
    the field's name for an error, ``field.format(*args)`` (formatted only then)."""
    if type(raw) is bytes:
        return raw
    if raw is None:
        return b""
    if isinstance(raw, bytes):
        return raw
    if isinstance(raw, (bytearray, memoryview)):
        return bytes(raw)
    encode = getattr(raw, "encode", None)
    if callable(encode) and not isinstance(raw, str):
        return bytes(encode())
    raise ValueError(f"{field.format(*args)}: expected bytes, got {type(raw).__name__}")


def join_response(version: int, error: int, member_id: str, generation: int = -1,
                  protocol_type: str | None = None, protocol_name: str | None = None,
                  leader: str | None = "", skip_assignment: bool = False,
                  members: list | None = None) -> JoinGroupResponse:
    """ProtocolName is nullable only from v7: older versions send "" for null."""
    if protocol_name is None and version < 7:
        protocol_name = ""
    return _join(version, 0, error, generation, protocol_type, protocol_name, leader or "",
                 skip_assignment, member_id, members if members is not None else [])


def join_error(version: int, error: int, member_id: str = "") -> JoinGroupResponse:
    return join_response(version, error, member_id)


def member_list(group) -> list:
    """The leader's view: every member (absent static ones too) with its selected-protocol metadata,
    in Kafka's member-map order (ClassicGroup.java_ordered_members)."""
    protocol = group.protocol_name
    return [_join_member(None, m.member_id, m.group_instance_id, m.metadata(protocol))
            for m in group.java_ordered_members()]


def sync_response(version: int, error: int, assignment: bytes = b"",
                  protocol_type: str | None = None, protocol_name: str | None = None
                  ) -> SyncGroupResponse:
    return _sync(version, 0, error, protocol_type, protocol_name, assignment)


def heartbeat_response(version: int, error: int) -> HeartbeatResponse:
    return _heartbeat(version, 0, error)
