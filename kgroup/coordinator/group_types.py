"""The group-type seam: what every kind of group offers the coordinator (Kafka's ``Group``), and how
a group type registers with the facade.

Kafka's coordinator holds groups of several types in one map, keyed by group id: ``classic``
(JoinGroup/SyncGroup, ``classic/``), ``consumer`` (KIP-848 ConsumerGroupHeartbeat, ``consumer/``)
and the Connect draft's ``connect`` (``connect/``, whose records go to ``__worker_offsets``). They
share the timers, the undo journal, the ``__consumer_offsets`` log and the offsets manager; each
type brings its own records and its own replay of them (``GroupMetadataManager.replay`` dispatches
on the record's key type).

Two halves, so that the shared code (the facade, ``admin``, ``offsets/``, ``runtime/``) never asks
a group its type:

* ``Group``: the questions Kafka's ``org.apache.kafka.coordinator.group.Group`` answers about one
  group's state (offset commit / fetch / delete validation, delete validation, ``is_subscribed_to_topic``,
  the offset-expiration condition, ``is_in_states``), implemented by each type's group class.
* ``GroupTypeRegistration``: what a type does with the coordinator in hand — its request handlers,
  the replay of its records, its tombstones and deletion, restarting its sessions after a load,
  its session timers, and how a classic-protocol request reaches one of its groups. Each type's
  package builds one in its ``registration.py``; the facade lists them (``coordinator.GROUP_TYPES``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, ClassVar, Iterable, Mapping, NamedTuple, Protocol


class Group(Protocol):
    """One group on the coordinator, whatever its type."""

    group_type: ClassVar[str]     # "classic", "consumer" or "connect"
    group_id: str
    state: str
    protocol_type: str | None
    listener: object              # the coordinator's on_group_transition
    undo: object                  # the coordinator's UndoJournal: changes go through it

    def snapshot(self):
        """An immutable view for embedders (``GroupCoordinator.group``)."""

    def listed(self) -> tuple[str, str, str, str]:
        """(group id, protocol type, state, group type): its ListGroups entry."""

    def is_in_states(self, states: set[str]) -> bool:
        """ListGroups' states filter (lower-case state names): Kafka's ``isInStates``."""

    def timer_keys(self) -> list:
        """Keys of every timer the group may own: cancelled when it is deleted or replaced."""

    def is_empty(self) -> bool:
        """True when the group may be deleted (DeleteGroups, offsets expiry)."""

    def validate_offset_commit(self, member_id: str, instance_id: str | None, generation_or_epoch: int,
                               transactional: bool, api_version: int, partitions: Iterable) -> int:
        """0 or the error every partition of an OffsetCommit / TxnOffsetCommit gets. ``partitions``:
        the committed (topic id or None, partition) pairs, iterated only if the type needs them."""

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int, api_version: int) -> int:
        """0 or the group-level error of an OffsetFetch."""

    def validate_offset_delete(self) -> int:
        """0 or the error of an OffsetDelete on this group (before its topics are looked at)."""

    def validate_delete_group(self) -> int:
        """0 or the error of DeleteGroups on this group."""

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """True if some member consumes ``topic``: OffsetDelete refuses to delete its offsets."""

    def offset_expiration_condition(self):
        """How its offsets expire (``offsets.retention.OffsetExpirationCondition``), or None: they don't."""


class ClassicProtocol(NamedTuple):
    """How classic-protocol requests reach a group of a type that is not classic (Kafka: a consumer
    group's classic members). The classic handlers call these when the group id names such a group;
    None for sync / heartbeat / leave answers as for a missing classic group (UNKNOWN_MEMBER_ID).

    ``join(coord, group, join)`` with ``join`` the JoinGroup's (version, member id, instance id, session
    timeout, rebalance timeout, protocol type, protocols, client id, client host) returns (reply, None)
    when the group answered, or (None, classic group or None) when the join goes on as a classic join
    (the group converted or gave way; None: a new classic group is made)."""

    join: Callable
    sync: Callable | None = None          # (coord, group, request, version) -> Reply
    heartbeat: Callable | None = None     # (coord, group, request, version) -> Reply
    leave: Callable | None = None         # (coord, group, identities) -> [(member id, instance id, error)]


@dataclass(frozen=True)
class GroupTypeRegistration:
    """One group type's entry in the facade (``coordinator.GROUP_TYPES``)."""

    group_type: str
    # API key -> handler(coord, request, client_id, client_host) -> Reply
    handlers: Mapping[int, Callable]
    # ``__consumer_offsets`` record key type -> replay(coord, key, value, log offset, entry)
    replay: Mapping[int, Callable]
    # (group) -> the records that delete it (Kafka's createGroupTombstoneRecords)
    tombstones: Callable
    # (coord, group): DeleteGroups / expiry after validate_delete_group, offsets already gone: the
    # group's tombstones are written and the group leaves the map
    delete: Callable
    # (coord, group): the load's restart of its members' sessions (Kafka's onLoaded)
    restart_sessions: Callable
    # (coord, group, member id, timeout ms): expire the member's session that far from now
    schedule_session: Callable
    # (group id, member id) -> the key of the member's session timer
    session_timer_key: Callable
    # offsets expiry deletes an empty group whose offsets all expired: True also tombstones the
    # partitions only its open transactions hold, as DeleteGroups does (kgroup's consumer groups);
    # False writes the group's tombstones alone (Kafka's cleanupGroupMetadata)
    expiry_deletes_offsets: bool = False
    # (coord, group, member id): after an accepted OffsetCommit (a classic member's session is
    # refreshed, Kafka's rescheduleClassicGroupMemberHeartbeat); None: nothing
    offset_committed: Callable | None = None
    # how classic-protocol requests reach its groups; None: they are classic groups themselves
    classic_protocol: ClassicProtocol | None = None
    # (coord, records): ``from_records(worker_records=...)``, the type's records in a topic of its own
    worker_replay: Callable | None = None


@dataclass
class GroupTypes:
    """The registered group types: every request handler and record replay of theirs, by key."""

    registrations: tuple[GroupTypeRegistration, ...]
    by_type: dict[str, GroupTypeRegistration] = field(init=False)
    handlers: dict[int, Callable] = field(init=False)
    replay: dict[int, Callable] = field(init=False)

    def __post_init__(self) -> None:
        self.by_type, self.handlers, self.replay = {}, {}, {}
        for registration in self.registrations:
            _add(self.by_type, registration.group_type, registration, "group type")
            for api_key, handler in registration.handlers.items():
                _add(self.handlers, api_key, handler, f"API key (group type {registration.group_type})")
            for record_type, replay in registration.replay.items():
                _add(self.replay, record_type, replay, f"record key type (group type {registration.group_type})")

    def of(self, group: Group) -> GroupTypeRegistration:
        return self.by_type[group.group_type]

    def worker_replays(self) -> list[Callable]:
        return [r.worker_replay for r in self.registrations if r.worker_replay is not None]


def _add(table: dict, key, value, what: str) -> None:
    if key in table:
        raise ValueError(f"{what} {key!r} is registered twice")
    table[key] = value
