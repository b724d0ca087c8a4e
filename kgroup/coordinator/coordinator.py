"""GroupCoordinator: the facade over the group state machines and the offsets manager.

Pure and deterministic: no sockets, no wall clock, no threads. Time only moves through
``advance``; due timers fire in deadline order, each at its own deadline (a timer that
fires at t schedules its follow-ups relative to t), and ``now_ms`` ends at the target.

Each request, timer firing and transaction marker is one operation (Kafka's CoordinatorRuntime
write operation): it changes state in place, appends its records and hands them to the host's
``log_writer``; if that raises, the operation is reverted as one unit (``undo.py``). Why revert
rather than apply by replay, and the host's contract: docs/coordinator-event-sourcing.md.
"""

from __future__ import annotations

import uuid
from collections import deque
from typing import Callable, Iterable

from . import codes
from .admin import handle_delete_groups, handle_list_groups
from .classic.group import ClassicGroup
from .classic.rebalance import reschedule_member
from .classic.records import empty_group_metadata_record
from .classic.registration import CLASSIC
from .classic.snapshots import GroupSnapshot
from .codes import CoordinatorReplayError, UnsupportedRequest  # noqa: F401 - re-exported
from .config import CoordinatorConfig
from .connect.registration import CONNECT
from .consumer.registration import CONSUMER
from .group_types import ClassicProtocol, Group, GroupTypeRegistration, GroupTypes
from .runtime.log import LogEntry, Reply
from .runtime.metadata_hash import group_hash, topic_hash
from .runtime.operation_log import OperationLog
from .runtime.replay import OFFSET_REPLAY, replay_log
from .runtime.timers import TimerQueue
from .runtime.undo import UndoJournal

# The group types this coordinator serves: one registration each (its package's registration.py).
GROUP_TYPES = GroupTypes((CLASSIC, CONSUMER, CONNECT))

API_NAMES = {8: "OffsetCommit", 9: "OffsetFetch", 11: "JoinGroup", 12: "Heartbeat",
             13: "LeaveGroup", 14: "SyncGroup", 15: "DescribeGroups", 16: "ListGroups",
             28: "TxnOffsetCommit", 42: "DeleteGroups", 47: "OffsetDelete",
             68: "ConsumerGroupHeartbeat", 69: "ConsumerGroupDescribe"}


# the admin APIs that see every group type; each type's own come from its registration
_ADMIN_HANDLERS = {16: handle_list_groups, 42: handle_delete_groups}
_REPLAY = {**OFFSET_REPLAY, **GROUP_TYPES.replay}


_OFFSET_METHODS = {8: "handle_offset_commit", 9: "handle_offset_fetch",
                   28: "handle_txn_offset_commit", 47: "handle_offset_delete"}


_API_KEYS: dict[type, int | None] = {}


def _api_key(request) -> int | None:
    """The request's API key, read once per request class (kafka-python's is a class property
    computed at every access)."""
    kind = type(request)
    try:
        return _API_KEYS[kind]
    except KeyError:
        api_key = _API_KEYS[kind] = getattr(kind, "API_KEY", None)
        return api_key


def _load_offset_manager():
    try:
        from .offsets.manager import OffsetManager
    except ImportError:      # the offsets side is optional for the membership engine
        return None
    return OffsetManager


class GroupCoordinator(OperationLog):
    def __init__(self, config: dict | None = None, now_ms: int = 0,
                 uuid_source: Callable[[], str] | None = None, keep_log: bool = True,
                 log_writer: Callable[[list[LogEntry]], None] | None = None,
                 worker_log_writer: Callable[[list[tuple]], None] | None = None):
        """``keep_log=False`` is for long-running hosts (``kgroup serve``, large simulations): the
        log is handed over by ``take_log()`` (or ``log_writer``) and forgotten, and ``records``
        stays empty, so memory does not grow with the number of commits and rebalances.

        ``log_writer(entries)``, if given, is called at the end of every operation that appended
        something, with that operation's entries; it makes them durable or raises, and then the
        operation is reverted (see the module docstring). Entries it took are not handed over
        again by ``take_log()``. ``worker_log_writer(records)`` does the same for the operation's
        ``__worker_offsets`` records (Connect worker groups, ``worker_records``); with
        ``keep_log=False`` they too are forgotten once written."""
        self.config = config if isinstance(config, CoordinatorConfig) else CoordinatorConfig(config)
        self.now_ms = int(now_ms)
        self.uuid_source = uuid_source or (lambda: str(uuid.uuid4()))
        self.topic_image: dict[str, tuple] = {}   # topic name -> (topic id, partitions): set_topics
        self.topic_racks: dict[str, tuple] = {}   # topic name -> each partition's replica racks
        self.topic_image_version = 0
        self._topic_hashes: dict[str, int] = {}   # Kafka's topicHashCache
        self.undo = UndoJournal()
        self._timers = TimerQueue(self.undo)
        self._groups: dict[str, Group] = {}       # every group, whatever its type
        self._callbacks: deque[Reply] = deque()    # completed in this operation, callbacks to run
        self._handlers = {**_ADMIN_HANDLERS, **GROUP_TYPES.handlers}
        self._init_log(keep_log, log_writer, worker_log_writer)
        self._on_group_transition: Callable | None = None
        manager = _load_offset_manager()
        self.offsets = manager(self) if manager is not None else None

    @property
    def on_group_transition(self) -> Callable | None:
        """``fn(group, previous_state, now_ms)``, called at every state change of every classic group
        as it happens, inside the operation that made it (simulate draws its rebalance markers from
        it: looking between requests misses Stable -> PreparingRebalance -> Empty in one call)."""
        return self._on_group_transition

    @on_group_transition.setter
    def on_group_transition(self, fn: Callable | None) -> None:
        self._on_group_transition = fn
        for group in self._groups.values():
            group.listener = fn

    # ---- requests ----------------------------------------------------------------------
    def handle(self, request, client_id: str = "client", client_host: str = "/127.0.0.1") -> Reply:
        api_key = _api_key(request)
        handler = self._handlers.get(api_key)
        if handler is None and api_key not in _OFFSET_METHODS:
            name = getattr(request, "name", type(request).__name__)
            raise UnsupportedRequest(
                f"the group coordinator does not serve {name} (API key {api_key})")
        if handler is None and self.offsets is None:
            raise UnsupportedRequest(
                f"{API_NAMES[api_key]} (API key {api_key}): the offsets manager is not available")
        start = self._begin()
        try:
            if handler is not None:
                reply = handler(self, request, client_id, client_host)
            else:
                reply = self.done_reply(
                    getattr(self.offsets, _OFFSET_METHODS[api_key])(request, client_id, client_host))
        except BaseException:
            self._abort(start)
            raise
        try:
            reply.records = self._end(start)
        except Exception as exc:     # noqa: BLE001 - the host's writer refused: tell the client
            reply.fail(exc)
            return reply
        self._run_callbacks()
        return reply

    def done_reply(self, response) -> Reply:
        return Reply(self._callbacks, response)

    def parked_reply(self) -> Reply:
        return Reply(self._callbacks)

    def _run_callbacks(self) -> None:
        queue = self._callbacks
        while queue:
            queue.popleft().run_callbacks()

    # ---- time --------------------------------------------------------------------------
    def advance(self, ms: int) -> list[LogEntry]:
        """Move virtual time forward by whole milliseconds (fractions are dropped).

        Returns the entries the timers that fired appended (each firing is one operation)."""
        ms = int(ms)
        if ms < 0:
            raise ValueError(f"advance: time cannot go backwards ({ms} ms)")
        target = self.now_ms + ms
        timers = self._timers
        appended: list[LogEntry] = []
        while True:
            deadline = timers.next_deadline()
            if deadline is None or deadline > target:
                break
            start = self._begin()
            deadline, fn = timers.pop_due(target)
            if deadline > self.now_ms:
                self.now_ms = deadline
            try:
                fn()
            except BaseException:
                self._abort(start)
                raise
            # a writer's failure propagates: the timer is back, due, and fires at the next advance
            appended += self._end(start)
            self._run_callbacks()
        self.now_ms = target
        return appended

    def next_deadline_ms(self) -> int | None:
        return self._timers.next_deadline()

    def timer_deadline(self, key) -> int | None:
        """When the timer ``key`` fires (None: no such timer). Keys: ``heartbeat-<group>-<member>``,
        ``join-<group>``, ``sync-<group>``, ``expire-group-metadata``."""
        return self._timers.deadline(key)

    def set_session_deadline(self, group_id: str, member_id: str, timeout_ms: int) -> bool:
        """Expire the member's session ``timeout_ms`` from now, as a heartbeat then would have
        (simulate's coalesced heartbeats), in a classic, consumer or connect group. False if the group
        has no such member."""
        group = self.get_group(group_id)
        if group is None or member_id not in group.members:
            return False
        self.group_type_of(group).schedule_session(self, group, member_id, timeout_ms)
        return True

    def session_deadline(self, group_id: str, member_id: str) -> int | None:
        """When the member's session expires (None: the group has no such member or no session
        timer): simulate's safe restart window, read where ``set_session_deadline`` writes."""
        group = self.get_group(group_id)
        if group is None or member_id not in group.members:
            return None
        return self.timer_deadline(self.group_type_of(group).session_timer_key(group_id, member_id))

    def schedule(self, key, delay_ms: int, fn: Callable[[], None]) -> None:
        """Keyed timer due delay_ms from now; rescheduling a key replaces it."""
        self._timers.schedule(key, self.now_ms + delay_ms, fn)

    def cancel(self, key) -> None:
        self._timers.cancel(key)

    def set_topics(self, topics: dict) -> None:
        """The metadata image consumer groups assign from: ``{name: (topic id, partitions)}`` or
        ``{name: (topic id, partitions, racks)}`` with ``racks[i]`` the racks of partition i's
        replicas (topic ids as ``uuid.UUID``). The host calls it before serving heartbeats (after
        ``from_records`` too: the image is not in the log) and whenever topics change; a consumer
        group whose subscribed topics' metadata hash changed bumps its epoch at its next heartbeat."""
        image, racks = {}, {}
        for name, (topic_id, partitions, *rest) in topics.items():
            image[name] = (topic_id, int(partitions))
            if rest and rest[0] is not None:
                racks[name] = tuple(tuple(r) for r in rest[0])
        if image != self.topic_image or racks != self.topic_racks:
            # Kafka's onMetadataUpdate: a changed, created or deleted topic's cached hash goes
            changed = {name for name in image.keys() | self.topic_image.keys()
                       if image.get(name) != self.topic_image.get(name)
                       or racks.get(name) != self.topic_racks.get(name)}
            for name in changed:
                self._topic_hashes.pop(name, None)
            self.topic_image, self.topic_racks = image, racks
            self.topic_image_version += 1

    def metadata_hash(self, names) -> int:
        """The metadata hash of a group subscribed to ``names`` (Kafka's ModernGroup.computeMetadataHash:
        topics the image does not know are left out)."""
        image, cache = self.topic_image, self._topic_hashes
        hashes = {}
        for name in names:
            known = image.get(name)
            if known is None:
                continue
            value = cache.get(name)
            if value is None:
                value = cache[name] = topic_hash(known[0], name, known[1], self.topic_racks.get(name))
            hashes[name] = value
        return group_hash(hashes)

    def new_member_id(self, prefix: str) -> str:
        return f"{prefix}-{self.uuid_source()}"

    # ---- groups ------------------------------------------------------------------------
    def connect_group(self, group_id: str):
        """A Connect worker group's snapshot (``connect.group.ConnectGroupSnapshot``), or None."""
        group = self._group_of_type(group_id, "connect")
        return None if group is None else group.snapshot()

    def group(self, group_id: str) -> GroupSnapshot | None:
        group = self._groups.get(group_id)
        return None if group is None else group.snapshot()

    def groups(self) -> list[str]:
        return list(self._groups)

    def all_groups(self) -> list[Group]:
        """The live groups of every type, in creation order (a new list: the coordinator's own map
        stays private). Read them; only operations change them."""
        return list(self._groups.values())

    def get_group(self, group_id: str) -> Group | None:
        return self._groups.get(group_id)

    def get_classic_group(self, group_id: str) -> ClassicGroup | None:
        """The group if it is a classic one: the classic APIs see only those (Kafka's
        GroupMetadataManager.getOrMaybeCreateClassicGroup)."""
        return self._group_of_type(group_id, "classic")

    def _group_of_type(self, group_id: str, group_type: str) -> Group | None:
        """The group if it is of ``group_type`` (a typed lookup, Kafka's castToClassicGroup & co)."""
        group = self._groups.get(group_id)
        return group if group is not None and group.group_type == group_type else None

    def group_type_of(self, group: Group) -> GroupTypeRegistration:
        """The registration of the group's type: its session timers, tombstones, deletion."""
        return GROUP_TYPES.of(group)

    def classic_protocol(self, group: Group | None) -> ClassicProtocol | None:
        """How a classic-protocol request reaches ``group`` when it is of another type (a consumer
        group's classic members); None when there is no group or it is a classic one."""
        return None if group is None else GROUP_TYPES.of(group).classic_protocol

    def get_or_create_classic_group(self, group_id: str, persist: bool = True) -> ClassicGroup:
        """The group, created Empty if unknown.

        A new group's state timestamp is its creation time: Kafka's ClassicGroup constructor sets
        currentStateTimestamp to time.milliseconds() (only a replayed record can leave it unset).
        With ``persist`` the empty GroupMetadata record is written at once; JoinGroup writes it
        itself after the join ran (Kafka appends it only then, with the timestamp the join left).
        A "simple" group created by an offset commit is not persisted: replaying its offsets
        recreates it.
        """
        group = self._groups.get(group_id)
        if group is None:
            group = ClassicGroup(group_id, self.now_ms)
            group.listener = self.on_group_transition
            group.undo = self.undo
            self.undo.push(self._groups.pop, group_id, None)
            self._groups[group_id] = group
            if persist:
                self.append_records([empty_group_metadata_record(group_id, self.now_ms)])
        return group

    def add_group(self, group: Group) -> Group:
        """A new group in the map (a type's records' replay and live apply create theirs so)."""
        self.undo.push(self._groups.pop, group.group_id, None)
        self._groups[group.group_id] = group
        return group

    def remove_group(self, group_id: str) -> None:
        """Drop a group from the map with its timers (a consumer group's metadata tombstone)."""
        if group_id in self._groups:
            self._save_group_map()
            self._cancel_group_timers(self._groups.pop(group_id))

    def refresh_session(self, group: ClassicGroup, member_id: str) -> None:
        member = group.members.get(member_id)
        if member is not None:
            reschedule_member(self, group, member)

    def delete_group_metadata(self, group_id: str) -> None:
        """Drop the group and append its tombstones (its type's ``tombstones``)."""
        if group_id not in self._groups:
            return
        self._save_group_map()
        group = self._groups.pop(group_id)
        self._cancel_group_timers(group)
        self.append_records(GROUP_TYPES.of(group).tombstones(group))

    def delete_group(self, group: Group, offsets: bool = True) -> None:
        """DeleteGroups (and offsets expiry) once ``validate_delete_group`` passed: the group's
        offsets' tombstones (unless ``offsets`` is False), then its type's ``delete``."""
        if offsets and self.offsets is not None:
            self.offsets.delete_group_offsets(group.group_id)
        GROUP_TYPES.of(group).delete(self, group)

    def _save_group_map(self) -> None:
        """Before removing a group: the map as it was (its order is ListGroups' order)."""
        if self.undo.first_change("group map"):
            self.undo.push(self._restore_group_map, dict(self._groups))

    def _restore_group_map(self, saved: dict) -> None:
        self._groups.clear()
        self._groups.update(saved)

    def _cancel_group_timers(self, group: Group) -> None:
        for key in group.timer_keys():
            self.cancel(key)

    def committed_offsets(self, group_id: str) -> dict:
        return {} if self.offsets is None else self.offsets.committed(group_id)

    def end_transaction(self, producer_id: int, producer_epoch: int, commit: bool,
                        coordinator_epoch: int = 0) -> None:
        """The transaction coordinator's marker: the offsets manager appends and applies it."""
        start = self._begin()
        try:
            if self.offsets is None:
                self.append(LogEntry(records=[], producer_id=producer_id,
                                     producer_epoch=producer_epoch, transactional=True,
                                     control="COMMIT" if commit else "ABORT",
                                     coordinator_epoch=coordinator_epoch))
            else:
                self.offsets.end_transaction(producer_id, producer_epoch, commit, coordinator_epoch)
        except BaseException:
            self._abort(start)
            raise
        self._end(start)
        self._run_callbacks()

    # ---- failover ----------------------------------------------------------------------
    @classmethod
    def from_records(cls, records: Iterable, config: dict | None = None, now_ms: int = 0,
                     uuid_source: Callable[[], str] | None = None,
                     keep_log: bool = True,
                     log_writer: Callable[[list[LogEntry]], None] | None = None,
                     worker_records: Iterable = (),
                     worker_log_writer: Callable[[list[tuple]], None] | None = None) -> "GroupCoordinator":
        """Rebuild groups (static member maps included) and offsets from a partition's records.

        ``records`` is a ``coord.records`` list of (key, value) pairs or a list of LogEntry;
        ``worker_records`` a ``coord.worker_records`` list (Connect worker groups' ``__worker_offsets``).
        The new coordinator's own log starts empty: the replayed records are already stored
        (replay applies records, it never appends any).
        """
        coord = cls(config=config, now_ms=now_ms, uuid_source=uuid_source, keep_log=keep_log,
                    log_writer=log_writer, worker_log_writer=worker_log_writer)
        coord.log_end_offset = replay_log(coord, records, _REPLAY)
        if worker_records:
            for worker_replay in GROUP_TYPES.worker_replays():
                worker_replay(coord, worker_records)
        coord._on_loaded()
        return coord

    def put_group(self, group_id: str, group: Group | None) -> None:
        """Replay's change of the group map: the record's group replaces any earlier one."""
        old = self._groups.pop(group_id, None)
        if old is not None:
            self._cancel_group_timers(old)
        if group is not None:
            group.listener = self._on_group_transition
            group.undo = self.undo
            self._groups[group_id] = group

    def _on_loaded(self) -> None:
        """The load's own operation: sessions restart, oversized groups rebalance."""
        start = self._begin()
        for group in list(self._groups.values()):
            GROUP_TYPES.of(group).restart_sessions(self, group)
        if self.offsets is not None:
            self.offsets.start()
        self._end(start)
        self._run_callbacks()


__all__ = ["GroupCoordinator", "UnsupportedRequest", "CoordinatorReplayError", "codes"]
