"""The KIP-848 ``consumer`` group (Kafka's ``ConsumerGroup`` and ``ConsumerGroupMember``).

The group's state is exactly what its records say (types 3-8): the heartbeat handler decides on
records, and ``consumer.records.apply`` changes the group by them, the same path
``from_records`` takes. Members are immutable values: a change builds a new member
(``evolve``) and puts it in the member map, so the undo journal keeps one tuple per change and a
heartbeat that changes nothing copies nothing.

Topic ids are ``uuid.UUID``; assignments are ``{topic id: frozenset of partitions}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import ClassVar, Mapping

from kgroup.kafka_errors import NON_EMPTY_GROUP, NONE

from ..offsets.retention import OffsetExpirationCondition, commit_time
from ..runtime.undo import NO_UNDO
from .offsets import validate_commit, validate_fetch
from .reconciliation import EMPTY, STABLE

EMPTY_STATE, ASSIGNING, RECONCILING, STABLE_STATE = "Empty", "Assigning", "Reconciling", "Stable"

INITIAL_EPOCH = 1           # a new group's group and target epoch (Kafka 4.3+, KAFKA-20268)
TOMBSTONED_ASSIGNMENT_EPOCH = -1    # the target epoch after its record's tombstone (Kafka's replay)
LEAVE_EPOCH = -1            # MemberEpoch of a leaving member
STATIC_LEAVE_EPOCH = -2     # MemberEpoch of a static member's temporary leave


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """What a member speaking the classic protocol inside a consumer group keeps from its JoinGroup
    (the record's ClassicMemberMetadata): its session timeout and its (name, metadata) protocols."""

    session_timeout_ms: int
    protocols: tuple = ()

    def protocol_names(self) -> tuple:
        return tuple([name for name, _ in self.protocols])


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: int = STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset = frozenset()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    assigned: Mapping = field(default_factory=dict)
    pending_revocation: Mapping = field(default_factory=dict)
    classic: ClassicMemberMetadata | None = None    # set: the member speaks the classic protocol
    # KIP-1251 (Kafka 4.3+): topic id -> partition -> the epoch at which the member got it, for its
    # assigned and pending-revocation partitions; a partition it lacks has assignment_epoch's default
    assignment_epochs: Mapping = field(default_factory=dict)

    def evolve(self, **changes) -> "ConsumerGroupMember":
        """A copy with ``changes``; a new member epoch moves the old one to ``previous_member_epoch``
        (Kafka's Builder.updateMemberEpoch)."""
        if "member_epoch" in changes and "previous_member_epoch" not in changes:
            changes["previous_member_epoch"] = self.member_epoch
        fields_changed = tuple(changes)
        copy = _COPIERS.get(fields_changed)
        if copy is None:
            copy = _COPIERS[fields_changed] = _member_copier(fields_changed)
        return copy(self, changes)

    def assignment_epoch(self, topic_id, partition: int) -> int | None:
        """The epoch at which the member was assigned the partition (assigned or pending
        revocation), None when it has neither; a partition without a known epoch (a record written
        before Kafka 4.3) has max(member epoch, 0), as Kafka's replay gives it."""
        if partition in self.assigned.get(topic_id, ()) or partition in self.pending_revocation.get(topic_id, ()):
            known = self.assignment_epochs.get(topic_id)
            epoch = None if known is None else known.get(partition)
            return max(self.member_epoch, 0) if epoch is None else epoch
        return None

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state == STABLE and self.member_epoch == epoch

    def subscription(self) -> tuple:
        """The fields of its ConsumerGroupMemberMetadata record."""
        return (self.instance_id, self.rack_id, self.client_id, self.client_host,
                self.subscribed_topic_names, self.subscribed_topic_regex,
                self.rebalance_timeout_ms, self.server_assignor, self.classic)


def _member_copier(changed: tuple):
    """``copy(member, changes)`` for one set of changed fields: ``dataclasses.replace`` without its
    per-field checks and frozen ``__init__``, each field set once, from ``changes`` or from
    ``member`` (a rejoin evolves a member six times, a dynamic group's epoch bump every member
    twice). Generated from the fields, so a new field is copied without anyone remembering to add
    it here; one copier per tuple of changed fields, made at its first use."""
    names = [f.name for f in fields(ConsumerGroupMember)]
    unknown = sorted(set(changed) - set(names))
    if unknown:
        raise TypeError(f"ConsumerGroupMember has no field {unknown[0]!r}")
    namespace = {"new": object.__new__, "cls": ConsumerGroupMember}
    lines = ["def copy(member, changes):", "    out = new(cls)"]
    for k, name in enumerate(names):
        # the slot's own setter: past the frozen __setattr__
        namespace[f"set{k}"] = getattr(ConsumerGroupMember, name).__set__
        source = f"changes[{name!r}]" if name in changed else f"member.{name}"
        lines.append(f"    set{k}(out, {source})")
    lines.append("    return out")
    exec("\n".join(lines), namespace)
    return namespace["copy"]


_COPIERS: dict[tuple, object] = {}      # changed fields, in the order given -> their copier


@dataclass(frozen=True, slots=True)
class SubscribedTopic:
    """A subscribed topic as the group last read it from the metadata image."""

    topic_id: object
    name: str
    num_partitions: int


class ConsumerGroup:
    """One consumer group; every change goes through ``undo`` (the coordinator's journal)."""

    group_type: ClassVar[str] = "consumer"
    protocol_type: ClassVar[str] = "consumer"

    def __init__(self, group_id: str, undo=None):
        self.group_id = group_id
        self.undo = undo if undo is not None else NO_UNDO
        self.listener = None
        # Kafka 4.3+ (KAFKA-20268): a new group starts at epoch 1 with an empty target at epoch 1
        # (TargetAssignmentMetadata.INITIAL, in memory only: no record says so), so a member can
        # reconcile to a target before the group's first computed one, which has epoch 2
        self.group_epoch = INITIAL_EPOCH
        self.assignment_epoch = INITIAL_EPOCH
        self.assignment_timestamp = 0     # when the target was computed (0: unknown, or a new group)
        self.members: dict[str, ConsumerGroupMember] = {}
        # the most members the table ever held: Kafka's member map never shrinks, and its size
        # decides the order the assignor walks members in (assignors.java_order)
        self.member_high_water = 0
        self.static_members: dict[str, str] = {}         # instance id -> member id
        self.target: dict[str, Mapping] = {}              # member id -> its target row
        self.partition_epochs: dict[object, dict] = {}    # topic id -> partition -> owner's epoch
        # the subscribed topics as the image showed them when the metadata hash was last computed
        # (not a record since Kafka 4.1: ConsumerGroupMetadata's MetadataHash stands for them)
        self.subscribed_topics: dict[str, SubscribedTopic] = {}
        self.metadata_hash = 0                            # KIP-1101, from the group epoch record
        self.has_partition_metadata_record = False        # a 4.0-era type-4 record still in the log
        self.subscriber_counts: dict[str, int] = {}       # topic name -> members subscribed
        # Kafka's classicProtocolMembersSupportedProtocols and numClassicProtocolMembers: a classic
        # JoinGroup's protocol check without a walk over every member
        self.classic_protocols: dict[str, int] = {}       # protocol name -> classic members offering it
        self.classic_members = 0
        self.resolved_regexes: dict[str, frozenset] = {}  # regex -> topic names (record 16)
        self.metadata_version = -1    # the coordinator's image version subscribed_topics was read at
        self.regex_version = -1       # the image version resolved_regexes were last resolved at
        self.regex_refreshed_ms = None    # when (the last type-16 record's timestamp)

    # ---- the Group seam -----------------------------------------------------------------
    @property
    def state(self) -> str:
        """Kafka's ConsumerGroup.maybeUpdateGroupState, computed when asked."""
        if not self.members:
            return EMPTY_STATE
        if self.group_epoch > self.assignment_epoch:
            return ASSIGNING
        epoch = self.assignment_epoch
        if all(m.is_reconciled_to(epoch) for m in self.members.values()):
            return STABLE_STATE
        return RECONCILING

    def snapshot(self) -> "ConsumerGroupSnapshot":
        return ConsumerGroupSnapshot(
            group_id=self.group_id, state=self.state, group_epoch=self.group_epoch,
            assignment_epoch=self.assignment_epoch, members=tuple(self.members.values()),
            target={m: dict(row) for m, row in self.target.items()},
            static_members=dict(self.static_members),
            subscribed_topics=dict(self.subscribed_topics), resolved_regexes=dict(self.resolved_regexes),
            metadata_hash=self.metadata_hash)

    def listed(self) -> tuple[str, str, str, str]:
        return self.group_id, self.protocol_type, self.state, self.group_type

    def timer_keys(self) -> list:
        return [key for member_id in self.members for key in member_timer_keys(self.group_id, member_id)]

    def is_empty(self) -> bool:
        return not self.members

    def is_in_states(self, states: set[str]) -> bool:
        return self.state.lower() in states

    def validate_offset_commit(self, member_id: str, instance_id: str | None, generation_or_epoch: int,
                               transactional: bool, api_version: int, partitions=()) -> int:
        """The member epoch is the generation (``consumer.offsets.validate_commit``)."""
        return validate_commit(self, member_id, generation_or_epoch, api_version, transactional, partitions)

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int, api_version: int) -> int:
        """OffsetFetch v9+ names the member and its epoch; older versions are not checked."""
        return validate_fetch(self, member_id, member_epoch) if api_version >= 9 else NONE

    def validate_offset_delete(self) -> int:
        """Kafka's ConsumerGroup.validateOffsetDelete allows every delete (subscribed topics are
        refused per topic)."""
        return NONE

    def validate_delete_group(self) -> int:
        return NON_EMPTY_GROUP if self.members else NONE

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """Kafka's ConsumerGroup.isSubscribedToTopic: by name or through a resolved regex."""
        return topic in subscribed_names(self.subscriber_counts, self.resolved_regexes)

    def offset_expiration_condition(self) -> OffsetExpirationCondition:
        """Offsets age from their commit; a subscribed topic's never expire."""
        return OffsetExpirationCondition(commit_time, set(self.subscriber_counts))

    # ---- reads -------------------------------------------------------------------------
    def partition_epoch(self, topic_id, partition: int) -> int:
        owners = self.partition_epochs.get(topic_id)
        return -1 if owners is None else owners.get(partition, -1)

    def target_row(self, member_id: str) -> Mapping:
        return self.target.get(member_id, EMPTY)

    def topics_of(self, member: ConsumerGroupMember, resolved: Mapping | None = None) -> frozenset:
        """The topic names a member subscribes to: its names and what its regex resolved to."""
        regex = member.subscribed_topic_regex
        if regex is None:
            return member.subscribed_topic_names
        resolved = self.resolved_regexes if resolved is None else resolved
        return member.subscribed_topic_names | resolved.get(regex, frozenset())

    def static_member(self, instance_id: str | None) -> ConsumerGroupMember | None:
        member_id = self.static_members.get(instance_id) if instance_id is not None else None
        return None if member_id is None else self.members.get(member_id)

    # ---- changes (made by applying records) ------------------------------------------------
    def set_field(self, name: str, value) -> None:
        old = getattr(self, name)
        if old != value:
            self.undo.push(setattr, self, name, old)
            setattr(self, name, value)

    def put_member(self, member: ConsumerGroupMember) -> None:
        """Add or replace a member; keeps the static map, subscriber counts and partition epochs."""
        undo = self.undo
        old = self.members.get(member.member_id)
        if old is not None:
            if old.subscribed_topic_names != member.subscribed_topic_names:
                self._count(self.subscriber_counts, old.subscribed_topic_names, -1)
                self._count(self.subscriber_counts, member.subscribed_topic_names, +1)
            if old.classic is not member.classic and _classic_protocols(old) != _classic_protocols(member):
                self._count_classic(old, -1)
                self._count_classic(member, +1)
            if old.assigned != member.assigned or old.pending_revocation != member.pending_revocation:
                self._own(old, remove=True)
                self._own(member, remove=False)
            elif (old.member_epoch != member.member_epoch or old.state != member.state
                  or old.previous_member_epoch != member.previous_member_epoch):
                self._own(member, remove=False)     # the same partitions: re-owning them is enough
        else:
            self._count(self.subscriber_counts, member.subscribed_topic_names, +1)
            self._count_classic(member, +1)
            self._own(member, remove=False)
        undo.dict_put(self.members, member.member_id, member)
        if len(self.members) > self.member_high_water:
            self.set_field("member_high_water", len(self.members))
        if member.instance_id is not None and self.static_members.get(member.instance_id) != member.member_id:
            undo.dict_put(self.static_members, member.instance_id, member.member_id)

    def remove_member(self, member_id: str) -> None:
        member = self.members.get(member_id)
        if member is None:
            return
        self._count(self.subscriber_counts, member.subscribed_topic_names, -1)
        self._count_classic(member, -1)
        self._own(member, remove=True)
        undo = self.undo
        if undo.first_change((self, "members")):
            # the member map's order is the members' order (describe, snapshots): a revert puts
            # the map back as it was, not the removed member last
            undo.push(_restore_map, self.members, dict(self.members))
        del self.members[member_id]
        if member.instance_id is not None and self.static_members.get(member.instance_id) == member_id:
            self.undo.dict_del(self.static_members, member.instance_id)

    def set_resolved_regex(self, regex: str, topics: frozenset | None) -> None:
        self._put_or_delete(self.resolved_regexes, regex, topics)

    def set_target_row(self, member_id: str, row: Mapping | None) -> None:
        self._put_or_delete(self.target, member_id, row)

    def _put_or_delete(self, mapping: dict, key, value) -> None:
        """``mapping[key] = value``, or no ``key`` when value is None (a tombstone), through the journal."""
        if value is None:
            if key in mapping:
                self.undo.dict_del(mapping, key)
        else:
            self.undo.dict_put(mapping, key, value)

    def _count_classic(self, member: ConsumerGroupMember, delta: int) -> None:
        names = _classic_protocols(member)
        if names is not None:
            self.set_field("classic_members", self.classic_members + delta)
            self._count(self.classic_protocols, names, delta)

    def _count(self, counts: dict, names, delta: int) -> None:
        undo = self.undo
        for name in names:
            value = counts.get(name, 0) + delta
            if value:
                undo.dict_put(counts, name, value)
            elif name in counts:
                undo.dict_del(counts, name)

    def _own(self, member: ConsumerGroupMember, remove: bool) -> None:
        """Kafka's addPartitionEpochs / removePartitionEpochs for assigned and pending partitions
        (kept per topic: one topic-id lookup per topic, not one per partition)."""
        epochs, undo = self.partition_epochs, self.undo
        for partitions in (member.assigned, member.pending_revocation):
            for topic_id, parts in partitions.items():
                owners = epochs.get(topic_id)
                if remove:
                    if owners is not None:
                        undo.dict_del_many(owners, parts)
                    continue
                if owners is None:
                    owners = {}
                    undo.dict_put(epochs, topic_id, owners)
                undo.dict_put_many(owners, parts, member.member_epoch)


def subscribed_names(counts: Mapping[str, int], resolved: Mapping[str, frozenset]) -> set:
    """Every topic name the group subscribes to: by name (``counts``) or through a resolved regex."""
    names = {name for name, count in counts.items() if count}
    for topics in resolved.values():
        names |= topics
    return names


def _classic_protocols(member: ConsumerGroupMember) -> frozenset | None:
    """The protocol names a classic-protocol member offers (None: it speaks the consumer protocol)."""
    return None if member.classic is None else frozenset(member.classic.protocol_names())


def _restore_map(target: dict, saved: dict) -> None:
    target.clear()
    target.update(saved)


def member_timer_keys(group_id: str, member_id: str) -> tuple[str, str, str, str]:
    """The session and rebalance (revocation) timers of a member, and the join and sync timers of a
    classic member inside the group, under Kafka's key names."""
    return (session_timer_key(group_id, member_id), rebalance_timer_key(group_id, member_id),
            join_timer_key(group_id, member_id), sync_timer_key(group_id, member_id))


def session_timer_key(group_id: str, member_id: str) -> str:
    return f"session-timeout-{group_id}-{member_id}"


def rebalance_timer_key(group_id: str, member_id: str) -> str:
    return f"rebalance-timeout-{group_id}-{member_id}"


def join_timer_key(group_id: str, member_id: str) -> str:
    """A classic member's JoinGroup owed (after REBALANCE_IN_PROGRESS) or its SyncGroup owed (after
    a join): each is timed by its rebalance timeout."""
    return f"join-{group_id}-{member_id}"


def sync_timer_key(group_id: str, member_id: str) -> str:
    return f"sync-{group_id}-{member_id}"


@dataclass(frozen=True, slots=True)
class ConsumerGroupSnapshot:
    """An immutable view of a consumer group for embedders (``GroupCoordinator.group``)."""

    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    members: tuple
    target: dict
    static_members: dict
    # derived from the image at the last heartbeat, not replayed (no record has them since Kafka
    # 4.1): a loaded group equals the live one without them; metadata_hash is their replayed trace
    subscribed_topics: dict = field(compare=False)
    resolved_regexes: dict = field(default_factory=dict)    # regex -> topic names
    metadata_hash: int = 0
