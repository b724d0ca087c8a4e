"""Immutable views of a classic group for embedders (``GroupCoordinator.group``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MemberSnapshot:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupSnapshot:
    group_id: str
    state: str
    generation: int
    leader: str | None
    protocol_type: str | None
    protocol: str | None
    members: tuple[MemberSnapshot, ...]
    pending_members: tuple[str, ...]
    static_members: dict
    current_state_timestamp: int | None = None

    @classmethod
    def of(cls, group) -> "GroupSnapshot":
        return cls(
            group_id=group.group_id, state=group.state, generation=group.generation_id,
            leader=group.leader_id, protocol_type=group.protocol_type, protocol=group.protocol_name,
            members=tuple(MemberSnapshot(m.member_id, m.group_instance_id, m.client_id,
                                         m.client_host, m.session_timeout_ms,
                                         m.rebalance_timeout_ms, m.assignment)
                          for m in group.java_ordered_members()),
            pending_members=tuple(sorted(group.pending_members)),
            static_members=dict(group.static_members),
            current_state_timestamp=group.current_state_timestamp)
