"""The group-type seam: what every kind of group offers the coordinator (Kafka's ``Group``).

Kafka's coordinator holds groups of several types in one map, keyed by group id: ``classic``
(JoinGroup/SyncGroup, ``ClassicGroup``), ``consumer`` (KIP-848 ConsumerGroupHeartbeat,
``ConsumerGroup``) and the Connect draft's ``connect`` (``connect_group.ConnectGroup``, whose
records go to ``__worker_offsets``). They share the timers, the undo journal, the
``__consumer_offsets`` log and the offsets manager; each type brings its own records and its
own replay of them (``GroupMetadataManager.replay`` dispatches on the record's key type).

A new type implements ``Group``, registers the key types of its records in the replay table
(``replay.REPLAY``), and answers its own APIs; the classic APIs find only classic groups
(``GroupCoordinator.get_classic_group``), as Kafka's do.
"""

from __future__ import annotations

from typing import ClassVar, Protocol


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

    def timer_keys(self) -> list:
        """Keys of every timer the group may own: cancelled when it is deleted or replaced."""

    def is_empty(self) -> bool:
        """True when the group may be deleted (DeleteGroups, offsets expiry)."""
