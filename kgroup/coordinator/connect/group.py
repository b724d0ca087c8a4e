"""The ``connect`` group: a Connect worker cluster on the coordinator (the Connect draft's worker group).

Like the KIP-848 consumer group, its durable state *is* its ``__worker_offsets`` records
(``connect.records.apply`` builds it, live and on replay): the group epoch, the connector set,
the members' metadata, the target assignment and each member's current assignment. What is not
in the records lives here too but is rebuilt empty on a load: the assigner and the computation in
flight (a new one starts when the group epoch is ahead of the assignment epoch), a member's
previous epoch (the lost-response case) and its revocation deadline.

Assignments are frozensets of items (``connect.TaskId`` or a connector name).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from kgroup.kafka_errors import GROUP_ID_NOT_FOUND, NONE

from .protocol import connector_items, connectors_and_tasks, error_name
from .selection import selected_assignor


@dataclass(slots=True)
class ConnectMember:
    member_id: str
    instance_id: str | None = None
    member_epoch: int = 0
    previous_epoch: int = -1
    rebalance_timeout_ms: int = 60_000
    assignors: tuple = ()
    client_id: str = ""
    client_host: str = ""
    owned: frozenset = frozenset()      # the current assignment: what the coordinator gave it
    error: int = 0
    version: int = 0
    metadata: bytes = b""


@dataclass(slots=True)
class Computation:
    """One client-side computation in flight: who computes, and the snapshot Prepare handed out."""
    group_epoch: int
    assigner: str
    snapshot_members: frozenset | None = None    # member ids, once Prepare answered
    snapshot_connectors: dict | None = None


@dataclass(slots=True)
class ConnectGroup:
    group_type: ClassVar[str] = "connect"
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    connectors: dict = field(default_factory=dict)
    members: dict = field(default_factory=dict)           # member id -> ConnectMember, in join order
    target: dict = field(default_factory=dict)            # member id -> frozenset of items
    target_versions: dict = field(default_factory=dict)   # member id -> (version, metadata)
    target_error: int = 0
    assigner: str | None = None
    computation: Computation | None = None
    timed_out: dict = field(default_factory=dict)         # group epoch -> assigners that let it time out
    assignment_error: str | None = None                   # "NO_COVERING_WORKER"
    protocol_type: str | None = "connect"
    listener: object = None
    undo: object = None

    # ---- the Group seam ------------------------------------------------------------------
    @property
    def state(self) -> str:
        if not self.members:
            return "Empty"
        if self.group_epoch > self.assignment_epoch:
            return "Assigning"
        for member_id, member in self.members.items():
            if member.member_epoch < self.assignment_epoch or \
                    member.owned != self.target.get(member_id, frozenset()):
                return "Reconciling"
        return "Stable"

    def listed(self) -> tuple[str, str, str, str]:
        return (self.group_id, "connect", self.state, self.group_type)

    def timer_keys(self) -> list:
        keys = [assigner_timer_key(self.group_id)]
        for member_id in self.members:
            keys += member_timer_keys(self.group_id, member_id)
        return keys

    def is_empty(self) -> bool:
        """Never: deleting a worker group is out of the draft's scope (its metadata record is never
        tombstoned), so neither DeleteGroups nor offsets expiry may drop it."""
        return False

    def snapshot(self) -> "ConnectGroupSnapshot":
        return ConnectGroupSnapshot.of(self)

    def is_in_states(self, states: set[str]) -> bool:
        return self.state.lower() in states

    # A worker group commits no offsets to __consumer_offsets: the offset APIs find no such group.
    def validate_offset_commit(self, member_id: str, instance_id: str | None, generation_or_epoch: int,
                               transactional: bool, api_version: int, partitions=()) -> int:
        return GROUP_ID_NOT_FOUND

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int, api_version: int) -> int:
        return NONE      # nothing committed: every partition reads as no offset

    def validate_offset_delete(self) -> int:
        return GROUP_ID_NOT_FOUND

    def validate_delete_group(self) -> int:
        """DeleteGroups is the classic APIs' business here: "not found", as for any non-classic,
        non-consumer group (and see ``is_empty``)."""
        return GROUP_ID_NOT_FOUND

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return False

    def offset_expiration_condition(self) -> None:
        return None      # it has no offsets here to expire

    # ---- derived views -------------------------------------------------------------------
    def unassigned(self) -> frozenset:
        assigned = frozenset().union(*self.target.values()) if self.target else frozenset()
        return connector_items(self.connectors) - assigned


def journaled(coord, group):
    """``group``, saved once in the open operation (copy on first write, as consumer groups do) so
    that a host that cannot write its ``__worker_offsets`` records reverts the whole change."""
    if group is not None and group.group_type == ConnectGroup.group_type \
            and coord.undo.first_change(("connect", id(group))):
        from copy import deepcopy
        state = {name: deepcopy(getattr(group, name)) for name in _SAVED}
        coord.undo.push(_restore, group, state)
    return group


_SAVED = tuple(name for name in ConnectGroup.__slots__ if name not in ("group_id", "listener", "undo"))


def _restore(group: ConnectGroup, state: dict) -> None:
    for name, value in state.items():
        setattr(group, name, value)


def session_timer_key(group_id: str, member_id: str) -> tuple:
    return ("connect-session", group_id, member_id)


def revocation_timer_key(group_id: str, member_id: str) -> tuple:
    return ("connect-revocation", group_id, member_id)


def assigner_timer_key(group_id: str) -> tuple:
    return ("connect-assigner", group_id)


def member_timer_keys(group_id: str, member_id: str) -> list:
    return [session_timer_key(group_id, member_id), revocation_timer_key(group_id, member_id)]


@dataclass(frozen=True, slots=True)
class ConnectMemberSnapshot:
    member_id: str
    instance_id: str | None
    member_epoch: int
    rebalance_timeout_ms: int
    assignors: tuple
    owned: object           # ConnectorsAndTasks
    target: object
    pending: object         # in the target, not yet given (another member still holds them)
    revoking: object        # given, no longer in the target: to stop
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class ConnectGroupSnapshot:
    group_id: str
    group_type: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str | None
    assigner: str | None
    assignment_error: str | None
    connectors: dict
    target: dict
    unassigned: object
    members: tuple

    @classmethod
    def of(cls, group: ConnectGroup) -> "ConnectGroupSnapshot":
        members = []
        for member_id, m in group.members.items():
            target = group.target.get(member_id, frozenset())
            members.append(ConnectMemberSnapshot(
                member_id, m.instance_id, m.member_epoch, m.rebalance_timeout_ms, m.assignors,
                connectors_and_tasks(m.owned), connectors_and_tasks(target),
                connectors_and_tasks(target - m.owned), connectors_and_tasks(m.owned - target),
                m.client_id, m.client_host))
        error = group.assignment_error
        if error is None and group.target_error:
            error = error_name(group.target_error)
        return cls(group.group_id, group.group_type, group.state, group.group_epoch,
                   group.assignment_epoch, selected_assignor(group.members.values()), group.assigner,
                   error, dict(group.connectors),
                   {m: connectors_and_tasks(items) for m, items in group.target.items()},
                   connectors_and_tasks(group.unassigned()), tuple(members))
