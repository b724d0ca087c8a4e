"""Which partitions a static member owns, now or in the group's last assignment.

`reset-offsets --instance-id` may only `--execute` once the group is Empty, and an Empty group has
no members to describe: what the stopped members owned is then in the group's `__consumer_offsets`
partition (`records.partitioning`), the coordinator's own log. This module reads that partition
with Fetch (`wire.topic_log`, the batches through `decode.live`'s reader) and keeps, per
group.instance.id, the latest record that gave it an assignment:

- a classic group: the last GroupMetadata value listing a member with that instance id, its
  assignment bytes read as Kafka's ConsumerProtocol assignment (empty bytes: no assignment there);
- a consumer group: the member with that instance id in the last ConsumerGroupMemberMetadata
  record, and that member's last ConsumerGroupCurrentMemberAssignment value (assigned and pending
  revocation partitions), kept even when tombstoned since, as it is when a session expires.

Members present now keep their current assignment (describe), which needs no log read.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from kgroup.errors import KgroupError, KgroupUsageError
from kgroup.records.consumer_protocol import decode_assignment
from kgroup.records.schema_records import RecordDecodeError, decode_key, decode_value, group_id_of_key

OFFSETS_TOPIC = "__consumer_offsets"
GROUP_METADATA, CONSUMER_PARTITION_METADATA, CONSUMER_MEMBER_METADATA, CONSUMER_CURRENT_ASSIGNMENT = 2, 4, 5, 8


@dataclass
class InstanceAssignment:
    """One instance id's partitions and where they were read: "current" (describe) or "last" (the
    record at `offset` of `log`, written at `timestamp`)."""

    instance_id: str
    partitions: set[tuple[str, int]]
    source: str
    log: str | None = None
    offset: int | None = None
    timestamp: int | None = None

    def to_json(self) -> dict:
        from kgroup.writers import iso_ms

        doc = {"instance_id": self.instance_id, "source": self.source}
        if self.source == "last":
            doc.update({"log": self.log, "offset": self.offset, "timestamp": iso_ms(self.timestamp)})
        return doc


@dataclass
class _Seen:
    partitions: list    # [(topic name or topic id, [partition, ...])]
    offset: int
    timestamp: int


@dataclass
class LastAssignments:
    """Replays one group's records (in log order) keeping what `instance_assignments` needs."""

    group: str
    instance_ids: frozenset
    classic: dict = field(default_factory=dict)        # instance id -> _Seen
    member_of: dict = field(default_factory=dict)      # instance id -> (member id, offset)
    current: dict = field(default_factory=dict)        # member id -> _Seen
    topic_names: dict = field(default_factory=dict)    # topic id -> name (ConsumerGroupPartitionMetadata)

    def add(self, key: bytes | None, value: bytes | None, offset: int, timestamp: int) -> None:
        """One record of the group's partition; other groups' records and unreadable ones are skipped."""
        if key is None or len(key) < 4:
            return
        try:
            if group_id_of_key(key) != self.group:
                return
            k = decode_key(key)
            if k.record_type not in (GROUP_METADATA, CONSUMER_PARTITION_METADATA, CONSUMER_MEMBER_METADATA,
                                     CONSUMER_CURRENT_ASSIGNMENT):
                return
            v = decode_value(k.record_type, value)
        except (ValueError, IndexError):  # RecordDecodeError, a group id that is not UTF-8
            return
        if v is not None:
            self.apply(k.record_type, k.data, v.data, offset, timestamp)

    def apply(self, record_type: int, key: dict, value: dict, offset: int, timestamp: int) -> None:
        if record_type == GROUP_METADATA and value.get("protocolType") == "consumer":
            for member in value.get("members") or ():
                instance = member.get("groupInstanceId")
                if instance in self.instance_ids and member.get("assignment"):
                    try:
                        assigned = decode_assignment(member["assignment"])["assignedPartitions"] or ()
                    except RecordDecodeError:
                        continue
                    self.classic[instance] = _Seen([(a["topic"], a["partitions"]) for a in assigned], offset,
                                                   timestamp)
        elif record_type == CONSUMER_PARTITION_METADATA:
            self.topic_names.update({_uuid(t["topicId"]): t["topicName"] for t in value.get("topics") or ()})
        elif record_type == CONSUMER_MEMBER_METADATA and value.get("instanceId") in self.instance_ids:
            self.member_of[value["instanceId"]] = (key["memberId"], offset)
        elif record_type == CONSUMER_CURRENT_ASSIGNMENT:
            owned = list(value.get("assignedPartitions") or ()) + list(value.get("partitionsPendingRevocation") or ())
            self.current[key["memberId"]] = _Seen([(_uuid(t["topicId"]), t["partitions"]) for t in owned], offset,
                                                  timestamp)

    def latest(self) -> dict[str, _Seen]:
        """instance id -> its latest assignment record, classic or consumer group, whichever is later."""
        found = dict(self.classic)
        for instance, (member_id, member_offset) in self.member_of.items():
            seen = self.current.get(member_id)
            if seen is not None and (instance not in found or found[instance].offset < max(seen.offset, member_offset)):
                found[instance] = seen
        return found


def _uuid(raw) -> uuid.UUID:
    return raw if isinstance(raw, uuid.UUID) else uuid.UUID(bytes=bytes(raw))


def instance_assignments(client, view, instance_ids) -> list[InstanceAssignment]:
    """Each instance id's partitions: from the group's current members where it is one, else from
    the group's last assignment in `__consumer_offsets`; an id found in neither is a usage error."""
    present = {m.group_instance_id: m for m in view.members if m.static}
    result = {i: InstanceAssignment(i, set(present[i].partitions()), "current") for i in instance_ids if i in present}
    missing = [i for i in instance_ids if i not in present]
    if missing:
        try:
            result.update(read_last_assignments(client, view.group, missing))
        except KgroupUsageError:
            raise
        except KgroupError as exc:
            raise KgroupError(f"--instance-id {', '.join(missing)}: not in group {view.group!r} now, and its last "
                              f"assignment could not be read from {OFFSETS_TOPIC}: {exc}") from None
    unknown = [i for i in instance_ids if i not in result]
    if unknown:
        now = ", ".join(sorted(present)) or "none"
        raise KgroupUsageError(f"unknown --instance-id {', '.join(unknown)}: no member of group {view.group!r} "
                               f"has had it, now (static members: {now}) or in its {OFFSETS_TOPIC} records")
    return [result[i] for i in dict.fromkeys(instance_ids)]


def read_last_assignments(client, group: str, instance_ids) -> dict[str, InstanceAssignment]:
    """The group's `__consumer_offsets` partition read from its start to its end, replayed through
    `LastAssignments`; topic ids named by Metadata, else by the group's partition-metadata record."""
    from kgroup.client.consumer_describe import resolve_topic_ids
    from kgroup.wire.topic_log import EARLIEST, LATEST, TopicLog
    from kgroup.decode.decoder import ProblemLog
    from kgroup.decode.live import PartitionReader
    from kgroup.records.partitioning import partition_for

    log = TopicLog(client, OFFSETS_TOPIC)
    partition = partition_for(group, log.partition_count)
    reader = PartitionReader(log, "consumer", ProblemLog(), [partition], client.timeout_s, decode=False)
    reader.positions.update(log.offsets([partition], EARLIEST))
    end = log.offsets([partition], LATEST)[partition]
    replay = LastAssignments(group, frozenset(instance_ids))
    for batch, records in reader.read_to(partition, end):
        if not batch.is_control:
            for record in records:
                replay.add(record.key, record.value, record.offset, record.timestamp)
    latest = replay.latest()
    ids = {t for seen in latest.values() for t, _ in seen.partitions if not isinstance(t, str)}
    names = {**replay.topic_names, **resolve_topic_ids(client, ids)} if ids else {}
    return {instance: InstanceAssignment(
        instance, {(t if isinstance(t, str) else names.get(t, str(t)), p) for t, ps in seen.partitions for p in ps},
        "last", f"{OFFSETS_TOPIC}-{partition}", seen.offset, seen.timestamp)
        for instance, seen in latest.items()}
