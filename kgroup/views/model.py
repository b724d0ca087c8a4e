"""What kgroup shows about a group, built from DescribeGroups or ConsumerGroupDescribe (live) or
a replayed dump (offline).

Parsing is tolerant on purpose: old brokers omit fields (no group.instance.id before
DescribeGroups v4), other protocol types carry opaque metadata, and a broker may set
authorized-operation bits no client knows. None of that may stop a describe.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kgroup.wire.cluster import Coordinator

CONSUMER_PROTOCOL = "consumer"
STATIC_LEAVE_EPOCH = -2   # ConsumerGroupDescribe's member epoch of a static member that left for a while


@dataclass
class MemberView:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: list[dict] = field(default_factory=list)   # [{"topic", "partitions"}]
    subscription: list[str] | None = None                  # subscribed topics, consumer protocol only
    metadata_size: int = 0
    assignment_size: int = 0
    decode_error: str | None = None
    decoded: bool = True                                    # False for protocol types other than consumer
    # Only known offline (from a dump, `dump_members`): a classic member's session timeout, when
    # the log last saw the member (its last record: heartbeats are never logged, so not when it was
    # last alive), and when a record after the replayed time shows its session ended (None: none does).
    session_timeout_ms: int | None = None
    last_seen_ms: int | None = None
    session_ended_ms: int | None = None
    # KIP-848 consumer groups only (None in a classic group): the member's epoch and its row of
    # the target assignment; member_type says which protocol the member speaks, "classic" for a
    # classic consumer inside a consumer group during a migration.
    member_epoch: int | None = None
    member_type: str = "classic"
    target_assignment: list[dict] | None = None
    subscribed_topic_regex: str | None = None
    rack_id: str | None = None

    @property
    def static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def left(self) -> bool:
        """A static consumer-group member that left for a while (member epoch -2, KIP-848): the
        coordinator keeps it and its partitions until it rejoins or its session times out."""
        return self.member_epoch == STATIC_LEAVE_EPOCH

    def partitions(self) -> list[tuple[str, int]]:
        return [(tp["topic"], p) for tp in self.assignment for p in tp["partitions"]]

    def assignment_text(self, protocol_type: str) -> str:
        """`orders:0,1 payments:3`; for another protocol type than `consumer`, the sizes of its bytes."""
        if protocol_type != CONSUMER_PROTOCOL:
            return f"metadata {self.metadata_size} B, assignment {self.assignment_size} B"
        if self.decode_error:
            return f"(undecodable: {self.decode_error})"
        return topic_partitions_text(self.assignment)

    def to_json(self, offline: bool = False) -> dict:
        data = {"member_id": self.member_id, "group_instance_id": self.group_instance_id,
                "static": self.static, "client_id": self.client_id, "client_host": self.client_host,
                "assignment": [dict(tp) for tp in self.assignment],
                "member_epoch": self.member_epoch, "member_type": self.member_type,
                "target_assignment": ([dict(tp) for tp in self.target_assignment]
                                      if self.target_assignment is not None else None),
                "subscribed_topics": list(self.subscription) if self.subscription is not None else None,
                "subscribed_topic_regex": self.subscribed_topic_regex, "rack_id": self.rack_id}
        if self.decode_error:
            data["decode_error"] = self.decode_error
        if not self.decoded:  # another protocol: its bytes are opaque, show their sizes
            data["metadata_bytes"] = self.metadata_size
            data["assignment_bytes"] = self.assignment_size
        if offline:
            data["session_timeout_ms"] = self.session_timeout_ms
            data["last_seen_ms"] = self.last_seen_ms
            data["session_ended_ms"] = self.session_ended_ms
        return data


@dataclass
class OffsetRow:
    topic: str
    partition: int
    committed: int | None
    log_end: int | None
    member_id: str | None = None
    group_instance_id: str | None = None
    error: str | None = None
    leader_epoch: int | None = None     # the committed offset's leader epoch (kafka-consumer-groups --verbose)
    # A share group's partition (KIP-932): its share-partition start offset and the lag Kafka
    # reports for it (DescribeShareGroupOffsets v1), instead of a committed offset.
    start_offset: int | None = None
    share_lag: int | None = None
    # A streams group's input partition (KIP-1071): its log start, for the lag before the first
    # commit — all of the log, as kafka-streams-groups counts it (a consumer group's is unknown: "-").
    log_start: int | None = None

    @property
    def lag(self) -> int | None:
        if self.start_offset is not None:
            return self.share_lag
        if self.committed is None and self.log_start is not None and self.log_end is not None:
            return self.log_end - self.log_start
        if self.committed is None or self.log_end is None or self.committed < 0:
            return None
        # Negative, as kafka-consumer-groups shows it, when the committed offset is past the log
        # end (a truncated or recreated topic): the consumer will reset, and a 0 would hide it.
        return self.log_end - self.committed

    def to_json(self) -> dict:
        data = {"topic": self.topic, "partition": self.partition, "committed": self.committed,
                "log_end": self.log_end, "lag": self.lag, "member_id": self.member_id,
                "group_instance_id": self.group_instance_id, "leader_epoch": self.leader_epoch}
        if self.start_offset is not None:
            data["start_offset"] = self.start_offset
        if self.log_start is not None:
            data["log_start"] = self.log_start
        if self.error:
            data["error"] = self.error
        return data


class MembersSummary:
    """What a group view (a classic, consumer or Connect worker group) tells from its members and
    its own ``reconciling(member)``."""

    def left_instances(self) -> list[str]:
        """The instance ids of KIP-848 static members that stopped (member epoch -2): the group
        keeps them, Reconciling, until they rejoin or their session times out."""
        return [m.group_instance_id for m in self.members if m.left]

    @property
    def caught_up(self) -> bool:
        """Stable, and no member reconciling (each at its epoch owning or running its target): a
        rollout has converged (`wait --caught-up`)."""
        return self.state == "Stable" and not any(self.reconciling(m) for m in self.members)

    @property
    def static_count(self) -> int:
        return sum(1 for m in self.members if m.static)

    @property
    def dynamic_count(self) -> int:
        return len(self.members) - self.static_count


@dataclass
class GroupView(MembersSummary):
    group: str
    state: str
    protocol_type: str
    protocol: str
    coordinator: Coordinator | None
    members: list[MemberView] = field(default_factory=list)
    offsets: list[OffsetRow] | None = None
    error: str | None = None
    generation: int | None = None          # known offline only (DescribeGroups does not carry it)
    instance_moves: list[dict] | None = None  # offline only: instance ids seen with several member ids/hosts
    group_type: str = "classic"            # "consumer" for a KIP-848 group, "share" for a KIP-932 one
    group_epoch: int | None = None         # consumer and share groups only, as the three below
    assignment_epoch: int | None = None
    assignor: str | None = None

    def reconciling(self, member: MemberView) -> bool:
        """A consumer-group member not caught up yet: its epoch is behind the group epoch, or it
        does not own exactly its row of the target assignment (Kafka's member states
        UNREVOKED_PARTITIONS / UNRELEASED_PARTITIONS). Always False in a classic group."""
        if member.member_epoch is None:
            return False
        if self.group_type == "share":   # no revocation: a member takes its target at its next heartbeat
            return member.member_epoch != self.group_epoch
        if self.group_type != "consumer":
            return False
        return (member.member_epoch != self.group_epoch
                or _partition_set(member.assignment) != _partition_set(member.target_assignment or []))

    def member_by_instance(self) -> dict[str, MemberView]:
        return {m.group_instance_id: m for m in self.members if m.static}

    def owners(self) -> dict[tuple[str, int], MemberView]:
        return {tp: m for m in self.members for tp in m.partitions()}

    def lag_by_owner(self) -> list[tuple[str, int | None]]:
        """Total lag per group.instance.id (member id for dynamic owners, "-" for unowned)."""
        totals: dict[str, int | None] = {}
        for row in self.offsets or []:
            key = row.group_instance_id or row.member_id or "-"
            lag = row.lag
            if key not in totals:
                totals[key] = lag
            elif lag is not None:
                totals[key] = lag if totals[key] is None else totals[key] + lag
        return sorted(totals.items())

    def to_json(self, offline: bool = False) -> dict:
        data = {"group": self.group, "state": self.state, "protocol_type": self.protocol_type,
                "protocol": self.protocol,
                "coordinator": self.coordinator.to_json() if self.coordinator else None,
                "members": [m.to_json(offline) for m in self.members],
                "offsets": [r.to_json() for r in self.offsets] if self.offsets is not None else [],
                "error": self.error, "type": self.group_type, "group_epoch": self.group_epoch,
                "assignment_epoch": self.assignment_epoch, "assignor": self.assignor}
        if offline:
            data["generation"] = self.generation
            data["instance_moves"] = self.instance_moves or []
        return data


def topic_partitions_text(assignment: list[dict]) -> str:
    """`orders:0,1 payments:3` for [{"topic", "partitions"}]; `-` for none."""
    return " ".join(f"{tp['topic']}:{','.join(map(str, tp['partitions']))}" for tp in assignment) or "-"


def _partition_set(assignment: list[dict]) -> set[tuple[str, int]]:
    return {(tp["topic"], p) for tp in assignment for p in tp["partitions"]}


def _as_bytes(value) -> bytes:
    if value is None:
        return b""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    encode = getattr(value, "encode", None)
    if callable(encode):  # an already-decoded ApiData: re-encode to show its size
        try:
            return bytes(encode())
        except Exception:  # noqa: BLE001 - size is informational only
            return b""
    return b""


def member_from_bytes(member_id, instance_id, client_id, client_host, metadata, assignment,
                      protocol_type) -> MemberView:
    """A member with its assignment decoded when the protocol type is `consumer`."""
    meta, assigned = _as_bytes(metadata), _as_bytes(assignment)
    member = MemberView(member_id or "", instance_id, client_id or "", client_host or "",
                        metadata_size=len(meta), assignment_size=len(assigned))
    if protocol_type != CONSUMER_PROTOCOL:
        member.decoded = False
        return member
    from kgroup.records import RecordDecodeError, decode_assignment, decode_subscription

    problems = []
    if assigned:
        try:
            data = decode_assignment(assigned)
            by_topic: dict[str, set[int]] = {}
            for tp in data.get("assignedPartitions") or []:  # clients list topics in any order
                by_topic.setdefault(tp["topic"], set()).update(tp["partitions"])
            member.assignment = [{"topic": topic, "partitions": sorted(parts)}
                                 for topic, parts in sorted(by_topic.items())]
        except RecordDecodeError as exc:
            problems.append(f"assignment: {exc}")
    if meta:
        try:
            member.subscription = list(decode_subscription(meta).get("topics") or [])
        except RecordDecodeError as exc:
            problems.append(f"subscription: {exc}")
    member.decode_error = "; ".join(problems) or None
    return member


def member_order(member: MemberView):
    """Static members by instance id, then dynamic ones by member id: stable output across calls."""
    return (0, member.group_instance_id, member.member_id) if member.static else (1, "", member.member_id)


def group_from_described(raw, coordinator: Coordinator | None) -> GroupView:
    """A DescribeGroups response entry (any version) as a GroupView; missing fields get defaults."""
    from kgroup.wire.cluster import error_name

    protocol_type = getattr(raw, "protocol_type", "") or ""
    members = [member_from_bytes(getattr(m, "member_id", ""), getattr(m, "group_instance_id", None),
                                 getattr(m, "client_id", ""), getattr(m, "client_host", ""),
                                 getattr(m, "member_metadata", b""), getattr(m, "member_assignment", b""),
                                 protocol_type)
               for m in getattr(raw, "members", None) or []]
    code = getattr(raw, "error_code", 0) or 0
    error = None
    if code:
        message = getattr(raw, "error_message", None)
        error = error_name(code) + (f": {message}" if message else "")
    members.sort(key=member_order)
    return GroupView(group=raw.group_id, state=getattr(raw, "group_state", "") or "",
                     protocol_type=protocol_type, protocol=getattr(raw, "protocol_data", "") or "",
                     coordinator=coordinator, members=members, error=error)


def topic_rows(pairs, names: dict) -> list[dict]:
    """(topic id or name, partitions) pairs as [{"topic", "partitions"}] by name; an id `names`
    does not know is shown as the id."""
    by_topic: dict[str, set[int]] = {}
    for topic, partitions in pairs:
        name = topic if isinstance(topic, str) else names.get(topic) or str(topic)
        by_topic.setdefault(name, set()).update(partitions)
    return [{"topic": t, "partitions": sorted(ps)} for t, ps in sorted(by_topic.items()) if ps]
