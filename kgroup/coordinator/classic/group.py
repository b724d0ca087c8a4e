"""Classic group and member state (Kafka's ClassicGroup / ClassicGroupMember).

Counters that Kafka keeps incrementally are kept incrementally here too (members
awaiting a JoinGroup response, per-protocol support counts), so that no request pays
for a walk over every member except where Kafka's protocol itself needs one.
"""

from __future__ import annotations

from functools import lru_cache
from operator import attrgetter

from kgroup.records.partitioning import java_string_hash

from .. import codes
from ..offsets.retention import COMMIT_TIME, OffsetExpirationCondition, commit_time
from ..runtime.undo import NO_UNDO
from .snapshots import GroupSnapshot
from .subscriptions import is_subscribed, subscribed_topics

EMPTY = "Empty"
PREPARING_REBALANCE = "PreparingRebalance"
COMPLETING_REBALANCE = "CompletingRebalance"
STABLE = "Stable"
DEAD = "Dead"

# target state -> states it may be entered from (ClassicGroupState)
VALID_PREVIOUS = {
    EMPTY: frozenset({PREPARING_REBALANCE}),
    PREPARING_REBALANCE: frozenset({STABLE, COMPLETING_REBALANCE, EMPTY}),
    COMPLETING_REBALANCE: frozenset({PREPARING_REBALANCE}),
    STABLE: frozenset({COMPLETING_REBALANCE}),
    DEAD: frozenset({EMPTY, PREPARING_REBALANCE, COMPLETING_REBALANCE, STABLE, DEAD}),
}


_NOT_ENCODED = (None, b"")     # a record cache entry before its member's first encoding


class IllegalStateTransition(RuntimeError):
    """A bug guard: the coordinator tried a transition Kafka's state table forbids."""


class Member:
    __slots__ = ("member_id", "group_instance_id", "client_id", "client_host",
                 "rebalance_timeout_ms", "session_timeout_ms", "protocol_type", "protocols",
                 "assignment", "is_new", "join_reply", "join_version", "sync_reply",
                 "sync_version", "position")

    def __init__(self, member_id: str, group_instance_id: str | None, client_id: str,
                 client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int,
                 protocol_type: str, protocols: list[tuple[str, bytes]], assignment: bytes = b""):
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.protocols = protocols
        self.assignment = assignment
        self.is_new = False
        self.join_reply = None   # parked JoinGroup Reply
        self.join_version = 0
        self.sync_reply = None   # parked SyncGroup Reply
        self.sync_version = 0
        self.position = 0        # its place in the group's member map (ClassicGroup.append_member)

    def metadata(self, protocol: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        """Same ordered (name, metadata) list: a rejoin that changes nothing."""
        return self.protocols == protocols

    def has_satisfied_heartbeat(self) -> bool:
        """A member parked in a join or sync is alive by definition, unless it is new."""
        if self.is_new:
            return False
        return self.join_reply is not None or self.sync_reply is not None

    def __repr__(self) -> str:
        return f"Member({self.member_id!r}, instance={self.group_instance_id!r})"


class ClassicGroup:
    """A classic group (the ``Group`` of type "classic", see group_types.py)."""

    group_type = "classic"
    __slots__ = ("group_id", "state", "previous_state", "generation_id", "protocol_type",
                 "protocol_name", "leader_id", "members", "static_members", "pending_members",
                 "pending_sync", "current_state_timestamp", "new_member_added",
                 "num_awaiting_join", "protocol_counts", "record_cache", "record_protocol",
                 "record_dirty", "listener", "undo", "_next_position", "generation_subscriptions",
                 "java_capacity")

    def __init__(self, group_id: str, now_ms: int | None = None, state: str = EMPTY):
        self.group_id = group_id
        self.state = state
        self.previous_state: str | None = None
        self.listener = None  # the coordinator's on_group_transition, if any
        self.undo = NO_UNDO   # the coordinator's UndoJournal: what a failed append reverts
        self._next_position = 0
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}
        self.pending_members: set[str] = set()     # KIP-394 ids handed out, not yet joined
        self.pending_sync: set[str] = set()        # members yet to SyncGroup this generation
        self.current_state_timestamp = now_ms
        self.new_member_added = False
        self.num_awaiting_join = 0
        self.protocol_counts: dict[str, int] = {}
        # the subscriptions as the last generation (or the load) saw them: subscriptions.py
        self.generation_subscriptions = None
        # the capacity of Kafka's members HashMap (it grows, never shrinks): java_first_member
        self.java_capacity = 16
        # GroupMetadata record cache (records.group_metadata_record): each member's written
        # fields and their encoding, in self.members order, for protocol record_protocol; ids in
        # record_dirty are checked (and re-encoded if their fields changed) on the next write.
        # Every change of a persisted member field must go through touch_record() or
        # drop_record_cache().
        self.record_cache: dict[str, tuple[tuple | None, bytes]] | None = None
        self.record_protocol = None
        self.record_dirty: set[str] = set()

    # ---- undo ----------------------------------------------------------------------------
    _SAVED = ("state", "previous_state", "generation_id", "protocol_type", "protocol_name",
              "leader_id", "current_state_timestamp", "new_member_added", "num_awaiting_join",
              "generation_subscriptions", "java_capacity")

    def save(self) -> None:
        """Call before changing the group's fields: the first change in an operation saves them
        (and the few protocol counts) for a revert. The member map and the id sets are changed
        through the journal instead (``undo.dict_put`` ...), one inverse per change, so even a
        large group is never copied per request."""
        undo = self.undo
        if undo.open and self not in undo.saved:
            undo.saved.add(self)
            undo.actions.append((self._restore, (_group_fields(self), self.protocol_counts.copy())))

    def save_member(self, member: "Member") -> None:
        """Call before changing a member's fields (the group is saved with it)."""
        undo = self.undo
        if undo.open:
            self.save()
            saved = undo.saved
            if member not in saved:
                saved.add(member)
                undo.actions.append((_restore_slots, (member, Member.__slots__, _member_fields(member))))

    def append_member(self, member: "Member") -> None:
        """Put a member at the end of the member map (the map only: counts are the caller's).

        Positions grow with every append, so the map's order is the members' position order: a
        revert puts a dropped member back in its place without the map ever being copied."""
        existing = self.members.get(member.member_id)
        if existing is not None:
            member.position = existing.position
        else:
            member.position = self._next_position
            self._next_position += 1
        self.undo.dict_put(self.members, member.member_id, member)
        capacity = java_capacity(len(self.members), self.java_capacity)
        if capacity != self.java_capacity:
            self.save()
            self.java_capacity = capacity

    def drop_member(self, member_id: str) -> None:
        """Take a member out of the member map (the map only: counts are the caller's)."""
        member = self.members.pop(member_id)
        undo = self.undo
        if undo.open:
            undo.actions.append((self._put_back_member, (member,)))

    def _put_back_member(self, member: "Member") -> None:
        members = self.members
        members[member.member_id] = member
        ordered = sorted(members.values(), key=_position)
        members.clear()
        members.update((m.member_id, m) for m in ordered)

    def _restore(self, fields, protocol_counts) -> None:
        for name, value in zip(self._SAVED, fields):
            setattr(self, name, value)
        self.protocol_counts = protocol_counts
        self.drop_record_cache()     # it may hold encodings of the reverted members

    # ---- state ---------------------------------------------------------------------------
    def transition_to(self, target: str, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS[target]:
            raise IllegalStateTransition(
                f"group {self.group_id!r}: illegal transition {self.state} -> {target}")
        self.save()
        self.previous_state = self.state
        self.state = target
        self.current_state_timestamp = now_ms
        if self.listener is not None:
            self.listener(self, self.previous_state, now_ms)

    # ---- the Group interface (group_types.py) ---------------------------------------------
    def snapshot(self) -> "GroupSnapshot":
        return GroupSnapshot.of(self)

    def listed(self) -> tuple[str, str, str, str]:
        return self.group_id, self.protocol_type or "", self.state, self.group_type

    def timer_keys(self) -> list[str]:
        group_id = self.group_id
        keys = [heartbeat_key(group_id, member_id)
                for member_id in list(self.members) + list(self.pending_members)]
        return keys + [join_key(group_id), sync_key(group_id)]

    def can_rebalance(self) -> bool:
        return self.state in (STABLE, COMPLETING_REBALANCE, EMPTY)

    def is_empty(self) -> bool:
        return self.state == EMPTY

    def is_in_states(self, states: set[str]) -> bool:
        return self.state.lower() in states

    def validate_offset_commit(self, member_id: str, instance_id: str | None, generation_or_epoch: int,
                               transactional: bool, api_version: int, partitions=()) -> int:
        """Spec c.3 (ClassicGroup.validateOffsetCommit): 0 or the error for every partition."""
        generation = generation_or_epoch
        if self.state == DEAD:
            return codes.COORDINATOR_NOT_AVAILABLE
        if generation < 0 and self.state == EMPTY:
            return codes.NONE
        if generation >= 0 or member_id != "" or instance_id is not None:
            error = self.validate_member(member_id, instance_id)
            if error:
                return error
            if generation != self.generation_id:
                return codes.ILLEGAL_GENERATION
        elif not transactional and self.state != EMPTY:
            return codes.UNKNOWN_MEMBER_ID
        if not transactional and self.state == COMPLETING_REBALANCE:
            return codes.REBALANCE_IN_PROGRESS
        return codes.NONE

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int, api_version: int) -> int:
        return codes.NONE     # a Dead group's answer is the offsets manager's (it shapes the response)

    def validate_offset_delete(self) -> int:
        """Trunk's ClassicGroup.validateOffsetDelete: the group must exist; a non-empty one only if
        its protocol type is "consumer" (then only unsubscribed topics' offsets go)."""
        if self.state == DEAD:
            return codes.GROUP_ID_NOT_FOUND
        if self.state != EMPTY and self.protocol_type != "consumer":
            return codes.NON_EMPTY_GROUP
        return codes.NONE

    def validate_delete_group(self) -> int:
        if self.state == DEAD:
            return codes.GROUP_ID_NOT_FOUND
        if self.state != EMPTY:
            return codes.NON_EMPTY_GROUP
        return codes.NONE

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return is_subscribed(self, subscribed_topics(self), topic)

    def offset_expiration_condition(self) -> OffsetExpirationCondition | None:
        """Trunk's ClassicGroup.offsetExpirationCondition: a simple group's offsets age from their
        commit; an Empty group's from the time it became Empty (the commit time if unknown); a Stable
        "consumer" group with a known subscription's from their commit, unsubscribed topics only.
        Any other group keeps its offsets."""
        if not self.protocol_type:
            return COMMIT_TIME
        if self.state == EMPTY:
            state_ts = self.current_state_timestamp
            if state_ts is None or state_ts < 0:
                return COMMIT_TIME
            return OffsetExpirationCondition(lambda _v, ts=state_ts: ts)
        if self.protocol_type == "consumer" and self.state == STABLE:
            topics = subscribed_topics(self)
            return None if topics is None else OffsetExpirationCondition(commit_time, topics)
        return None

    @property
    def leader(self) -> str | None:
        return self.leader_id

    # ---- record cache --------------------------------------------------------------------
    def touch_record(self, member_id: str) -> None:
        """The member's persisted fields changed (or it was just appended to self.members)."""
        cache = self.record_cache
        if cache is not None:
            if member_id not in cache:      # a new member takes its place at the end
                cache[member_id] = _NOT_ENCODED
            self.record_dirty.add(member_id)

    def forget_record(self, member_id: str) -> None:
        if self.record_cache is not None:
            self.record_cache.pop(member_id, None)
            self.record_dirty.discard(member_id)

    def drop_record_cache(self) -> None:
        self.record_cache = None
        self.record_dirty.clear()

    # ---- membership ----------------------------------------------------------------------
    def add(self, member: Member, join_reply=None, join_version: int = 0) -> None:
        self.save()
        undo = self.undo
        if not self.members:
            self.protocol_type = member.protocol_type
        self.append_member(member)
        self.touch_record(member.member_id)
        self._count_protocols(member, 1)
        if join_reply is not None:
            member.join_reply = join_reply
            member.join_version = join_version
            self.num_awaiting_join += 1
        undo.set_discard(self.pending_members, member.member_id)
        if member.group_instance_id is not None:
            undo.dict_put(self.static_members, member.group_instance_id, member.member_id)
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove(self, member_id: str) -> Member | None:
        """Drop a member (or pending id) without answering its parked requests."""
        self.save()
        undo = self.undo
        member = self.members.get(member_id)
        if member is not None:
            self.drop_member(member_id)
            self.forget_record(member_id)
            self._count_protocols(member, -1)
            if member.join_reply is not None:
                self.num_awaiting_join -= 1
            if member.group_instance_id is not None \
                    and self.static_members.get(member.group_instance_id) == member_id:
                undo.dict_del(self.static_members, member.group_instance_id)
        if self.leader_id == member_id:
            # Kafka's ClassicGroup.remove: the first key of the members HashMap leads
            first = self.java_first_member(self.members.values())
            self.leader_id = None if first is None else first.member_id
        undo.set_discard(self.pending_members, member_id)
        undo.set_discard(self.pending_sync, member_id)
        return member

    def update_member(self, member: Member, protocols, rebalance_timeout_ms: int,
                      session_timeout_ms: int, join_reply, join_version: int) -> None:
        """Replace protocols and timeouts and park (or un-park) the member's JoinGroup."""
        self.save_member(member)
        self._count_protocols(member, -1)
        member.protocols = protocols
        self._count_protocols(member, 1)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        self.touch_record(member.member_id)
        if join_reply is not None and member.join_reply is None:
            self.num_awaiting_join += 1
        elif join_reply is None and member.join_reply is not None:
            self.num_awaiting_join -= 1
        member.join_reply = join_reply
        member.join_version = join_version

    def take_join_reply(self, member: Member):
        """Detach the member's parked JoinGroup reply (or None) so the caller can answer it."""
        reply = member.join_reply
        if reply is not None:
            self.save_member(member)
            member.join_reply = None
            self.num_awaiting_join -= 1
        return reply

    def validate_member(self, member_id: str, instance_id: str | None) -> int:
        """Error code of Kafka's ClassicGroup.validateMember: 0, UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID."""
        if instance_id is not None:
            mapped = self.static_members.get(instance_id)
            if mapped is None:
                return codes.UNKNOWN_MEMBER_ID
            if mapped != member_id:
                return codes.FENCED_INSTANCE_ID
            return codes.NONE
        if member_id not in self.members:
            return codes.UNKNOWN_MEMBER_ID
        return codes.NONE

    def java_first_member(self, members) -> "Member | None":
        """The one of ``members`` Kafka's members HashMap iterates first (ClassicGroup.remove and
        maybeElectNewJoinedLeader pick leaders that way): lowest bucket of String.hashCode at the
        map's capacity, then insertion order, which a bucket keeps."""
        capacity = self.java_capacity
        return min(members, key=lambda m: (_java_bucket(m.member_id, capacity), m.position), default=None)

    def java_ordered_members(self) -> list["Member"]:
        """The members in the order Kafka's ClassicGroup.members — a java.util.HashMap keyed by
        member id — iterates them: by bucket of String.hashCode at the map's capacity, then
        insertion order. Everything Kafka lists from that map comes in this order: the leader's
        JoinGroup members, the GroupMetadata record, DescribeGroups. (An order-sensitive client
        assignor assigns by it: kafka-python's range with static members.)"""
        capacity = self.java_capacity
        return sorted(self.members.values(), key=lambda m: (_java_bucket(m.member_id, capacity), m.position))

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_members

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # ---- protocols -----------------------------------------------------------------------
    def _count_protocols(self, member: Member, delta: int) -> None:
        counts = self.protocol_counts
        for name, _ in member.protocols:
            left = counts.get(name, 0) + delta
            if left:
                counts[name] = left
            else:
                counts.pop(name, None)

    def supports_protocols(self, protocol_type: str, names: list[str]) -> bool:
        if self.state == EMPTY:
            return protocol_type != "" and bool(names)
        if protocol_type != (self.protocol_type or ""):
            return False
        size, counts = len(self.members), self.protocol_counts
        return any(counts.get(name, 0) == size for name in names)

    def select_protocol(self) -> str | None:
        """Vote among protocols every member supports: each member backs its first candidate."""
        size = len(self.members)
        candidates = [name for name, count in self.protocol_counts.items() if count == size]
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        allowed = set(candidates)
        votes: dict[str, int] = {}          # in order of first vote, as Kafka's map is filled
        for member in self.members.values():
            for name, _ in member.protocols:
                if name in allowed:
                    votes[name] = votes.get(name, 0) + 1
                    break
        # Kafka's ClassicGroup.selectProtocol counts the votes in a java.util.HashMap and takes
        # Stream.max, which keeps the first of equal counts: a tie goes to the protocol the
        # HashMap iterates first, not to the one the members listed first.
        return max(java_hash_map_order(list(votes)), key=votes.__getitem__)


def java_hash_map_order(keys: list[str]) -> list[str]:
    """The order a java.util.HashMap<String, ?> filled with ``keys`` (in this order) iterates them:
    buckets in index order, each bucket's keys in insertion order (resizes keep that order). (Bins
    only turn into trees at 8 colliding keys.)"""
    capacity = java_capacity(len(keys))
    return sorted(keys, key=lambda key: _java_bucket(key, capacity))


def java_capacity(size: int, capacity: int = 16) -> int:
    """A java.util.HashMap's table size once it holds ``size`` keys: 16, doubled while it holds more
    than 3/4 of it (it never shrinks, so a map's current capacity is the floor)."""
    while size > capacity * 3 // 4:
        capacity *= 2
    return capacity


@lru_cache(maxsize=65536)
def _java_bucket_hash(key: str) -> int:
    """String.hashCode spread as HashMap.hash does, (h ^ h >>> 16), unsigned."""
    h = java_string_hash(key) & 0xFFFFFFFF
    return h ^ (h >> 16)


def _java_bucket(key: str, capacity: int) -> int:
    """The bucket of ``key`` in a java.util.HashMap of ``capacity``."""
    return _java_bucket_hash(key) & (capacity - 1)


_group_fields = attrgetter(*ClassicGroup._SAVED)
_position = attrgetter("position")
_member_fields = attrgetter(*Member.__slots__)


def _restore_slots(obj, names, values) -> None:
    for name, value in zip(names, values):
        setattr(obj, name, value)


# ---- the classic group's timers: a member's session, the join and the sync phase --------
def heartbeat_key(group_id: str, member_id: str) -> str:
    return f"heartbeat-{group_id}-{member_id}"


def join_key(group_id: str) -> str:
    return f"join-{group_id}"


def sync_key(group_id: str) -> str:
    return f"sync-{group_id}"
