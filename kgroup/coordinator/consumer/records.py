"""The consumer group's records (key types 3-8 and 16) and the one path that applies them.

A consumer-group operation decides on a list of ``Record`` values (type, key data, value data or
None for a tombstone), applies each to the group with ``apply`` and appends them all as one batch — the function ``from_records`` calls for the same records read back from the log
(Kafka's ``GroupMetadataManager.replay`` overloads). So the live state and the replayed state
cannot drift apart: there is one definition of what a record means.

Record data uses kafka-dump-log's field names (``kgroup.records``' encoders); topic ids travel
as ``uuid.UUID`` here and come back from the decoder as 16 bytes.
"""

from __future__ import annotations

import struct
import uuid
from functools import partial
from typing import Mapping, NamedTuple

from kgroup.records import encode_key, encode_value, value_element_encoder

from .group import (TOMBSTONED_ASSIGNMENT_EPOCH, ClassicMemberMetadata, ConsumerGroup, ConsumerGroupMember,
                             SubscribedTopic)
from .reconciliation import member_state

METADATA, PARTITION_METADATA, MEMBER_METADATA = 3, 4, 5
TARGET_ASSIGNMENT_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT = 6, 7, 8
REGULAR_EXPRESSION = 16
CONSUMER_RECORD_TYPES = (METADATA, PARTITION_METADATA, MEMBER_METADATA, TARGET_ASSIGNMENT_METADATA,
                         TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT, REGULAR_EXPRESSION)


class Record(NamedTuple):
    record_type: int
    key: dict
    value: dict | None     # None: a tombstone


# ---- builders (Kafka's GroupCoordinatorRecordHelpers) --------------------------------------
def group_epoch_record(group_id: str, epoch: int, metadata_hash: int = 0) -> Record:
    """ConsumerGroupMetadataValue with its KIP-1101 MetadataHash (tag 0, written when not 0). Kafka
    4.1+ writes no ConsumerGroupPartitionMetadata record any more: the hash stands for it."""
    return Record(METADATA, {"groupId": group_id}, {"epoch": epoch, "metadataHash": metadata_hash})


def member_metadata_record(group_id: str, m: ConsumerGroupMember) -> Record:
    return Record(MEMBER_METADATA, {"groupId": group_id, "memberId": m.member_id}, {
        "instanceId": m.instance_id, "rackId": m.rack_id, "clientId": m.client_id,
        "clientHost": m.client_host, "subscribedTopicNames": sorted(m.subscribed_topic_names),
        "subscribedTopicRegex": m.subscribed_topic_regex if m.subscribed_topic_regex is not None else "",
        "rebalanceTimeoutMs": m.rebalance_timeout_ms, "serverAssignor": m.server_assignor,
        "classicMemberMetadata": _classic_out(m.classic)})


def _classic_out(classic: ClassicMemberMetadata | None) -> dict | None:
    if classic is None:
        return None
    return {"sessionTimeoutMs": classic.session_timeout_ms,
            "supportedProtocols": [{"name": name, "metadata": metadata} for name, metadata in classic.protocols]}


def _classic_in(value) -> ClassicMemberMetadata | None:
    """An absent tag reads as the empty struct: a classic member always offers a protocol."""
    if not value or not value.get("supportedProtocols"):
        return None
    return ClassicMemberMetadata(value["sessionTimeoutMs"], tuple(
        (p["name"], bytes(p["metadata"])) for p in value["supportedProtocols"]))


def target_epoch_record(group_id: str, epoch: int, timestamp: int = 0) -> Record:
    """ConsumerGroupTargetAssignmentMetadataValue; ``timestamp``: when the assignment was computed
    (KIP-1263's AssignmentTimestamp, tag 0, written when not 0)."""
    return Record(TARGET_ASSIGNMENT_METADATA, {"groupId": group_id},
                  {"assignmentEpoch": epoch, "assignmentTimestamp": timestamp})


def target_member_record(group_id: str, member_id: str, row: Mapping) -> Record:
    return Record(TARGET_ASSIGNMENT_MEMBER, {"groupId": group_id, "memberId": member_id},
                  {"topicPartitions": _partitions_out(row)})


def current_assignment_record(group_id: str, m: ConsumerGroupMember) -> Record:
    """Kafka 4.4 writes each topic's AssignmentEpochs (KIP-1251, tag 0) beside its partitions."""
    return Record(CURRENT_MEMBER_ASSIGNMENT, {"groupId": group_id, "memberId": m.member_id}, {
        "memberEpoch": m.member_epoch, "previousMemberEpoch": m.previous_member_epoch,
        "state": m.state, "assignedPartitions": _partitions_with_epochs(m, m.assigned),
        "partitionsPendingRevocation": _partitions_with_epochs(m, m.pending_revocation)})


def _partitions_with_epochs(m: ConsumerGroupMember, row: Mapping) -> list[dict]:
    """Each partition's ``m.assignment_epoch``, looked up per topic rather than per partition (a
    topic id's hash is computed in Python: a per-partition lookup of it dominated this record)."""
    out = _partitions_out(row)
    if not out:
        return out
    default = max(m.member_epoch, 0)
    assigned, pending, epochs = m.assigned, m.pending_revocation, m.assignment_epochs
    for topic in out:
        topic_id = topic["topicId"]
        held, revoking = assigned.get(topic_id, ()), pending.get(topic_id, ())
        known = epochs.get(topic_id) or {}
        topic["assignmentEpochs"] = [
            (default if (epoch := known.get(p)) is None else epoch) if p in held or p in revoking else None
            for p in topic["partitions"]]
    return out


def regular_expression_record(group_id: str, regex: str, topics, version: int, timestamp: int) -> Record:
    return Record(REGULAR_EXPRESSION, {"groupId": group_id, "regularExpression": regex},
                  {"topics": sorted(topics), "version": version, "timestamp": timestamp})


def regular_expression_tombstone(group_id: str, regex: str) -> Record:
    return Record(REGULAR_EXPRESSION, {"groupId": group_id, "regularExpression": regex}, None)


def tombstone(record_type: int, group_id: str, member_id: str | None = None) -> Record:
    key = {"groupId": group_id} if member_id is None else {"groupId": group_id, "memberId": member_id}
    return Record(record_type, key, None)


def member_tombstones(group_id: str, member_id: str) -> list[Record]:
    """Kafka's removeMember order: current assignment, target row, member metadata."""
    return [tombstone(CURRENT_MEMBER_ASSIGNMENT, group_id, member_id),
            tombstone(TARGET_ASSIGNMENT_MEMBER, group_id, member_id),
            tombstone(MEMBER_METADATA, group_id, member_id)]


def group_tombstones(group: ConsumerGroup) -> list:
    """Kafka's ConsumerGroup.createGroupTombstoneRecords: a tombstone for every record the group
    has, in its order — current assignments, target rows, target epoch, member metadata, regex
    resolutions, partition metadata, group epoch (the last one removes the group on replay)."""
    group_id, member_ids = group.group_id, list(group.members)
    return ([tombstone(CURRENT_MEMBER_ASSIGNMENT, group_id, m) for m in member_ids]
            + [tombstone(TARGET_ASSIGNMENT_MEMBER, group_id, m)
               for m in dict.fromkeys(member_ids + list(group.target))]
            + [tombstone(TARGET_ASSIGNMENT_METADATA, group_id)]
            + [tombstone(MEMBER_METADATA, group_id, m) for m in member_ids]
            + [regular_expression_tombstone(group_id, regex) for regex in sorted(group.resolved_regexes)]
            + [tombstone(PARTITION_METADATA, group_id), tombstone(METADATA, group_id)])


def _partitions_out(row: Mapping) -> list[dict]:
    if not row:
        return []
    items = row.items() if len(row) < 2 else sorted(row.items(), key=topic_id_order)
    return [{"topicId": topic_id, "partitions": sorted(parts)} for topic_id, parts in items if parts]


def topic_id_order(item) -> int:
    """Kafka's order of topic ids (by their bytes, unsigned): the same as their 128-bit value's,
    which a UUID holds, while ``.bytes`` is computed at each call."""
    return item[0].int


def _partitions_in(items, epochs: dict | None = None, member_epoch: int = 0) -> dict:
    """{topic id: partitions}; with ``epochs``, each partition's assignment epoch goes there
    (Kafka's Utils.assignmentFromTopicPartitions: a record without them, or with a list of another
    length, gives every partition max(member epoch, 0))."""
    out = {}
    for t in items:
        if not t["partitions"]:
            continue
        topic_id = _topic_id(t["topicId"])
        out[topic_id] = frozenset(t["partitions"])
        if epochs is not None:
            listed = t.get("assignmentEpochs")
            if listed is None or len(listed) != len(t["partitions"]):
                listed = [max(member_epoch, 0)] * len(t["partitions"])
            epochs.setdefault(topic_id, {}).update(zip(t["partitions"], listed))
    return out


def _topic_id(raw) -> uuid.UUID:
    return raw if isinstance(raw, uuid.UUID) else uuid.UUID(bytes=bytes(raw))


# ---- a member's new current assignment, stored without its replay ---------------------------
def store_current_assignment(coord, group_id: str, m: ConsumerGroupMember) -> tuple[bytes, bytes]:
    """Store ``m`` (the group's member of that id, reconciled) as its current-assignment record
    would, and return that record encoded, for ``append``'s ``after``.

    Every member of a consumer group writes this record at every epoch bump, mostly with the same
    partitions at a new epoch: replaying it (a value dict built, then read back into a member) and
    encoding it from scratch was most of such a heartbeat's cost. When ``m`` is what the replay
    would make of its record (``_replays_as_itself``) it is stored as it is, and the record's
    bytes are joined from the encodings of its partition lists, kept while those lists are the same
    objects (``_partitions_bytes``); otherwise the record goes the generic way."""
    group = coord.get_group(group_id)
    if group is None or group.group_type != ConsumerGroup.group_type or not _replays_as_itself(m):
        record = current_assignment_record(group_id, m)
        apply(coord, record.record_type, record.key, record.value)
        return encoded([record])[0]
    group.put_member(m)
    key = _encoded_key(CURRENT_MEMBER_ASSIGNMENT, {"groupId": group_id, "memberId": m.member_id})
    return key, b"".join((_CURRENT_HEAD.pack(0, m.member_epoch, m.previous_member_epoch, m.state),
                          _partitions_bytes(m, m.assigned, "assignedPartitions"),
                          _partitions_bytes(m, m.pending_revocation, "partitionsPendingRevocation"),
                          b"\x00"))       # no tagged fields


_CURRENT_HEAD = struct.Struct(">hiib")   # value version 0, MemberEpoch, PreviousMemberEpoch, State


def _replays_as_itself(m: ConsumerGroupMember) -> bool:
    """Whether ``_apply_current_assignment`` would give back ``m`` from its own record: a known
    state, no topic without partitions, topics in the record's order (by id bytes), and an
    assignment epoch for exactly its assigned and pending partitions (a replay writes every one).
    Only the state depends on more than the three maps, and an epoch bump mostly keeps all three
    objects: the answer for them is kept (``_CANONICAL``)."""
    if m.state not in _KNOWN_STATES:
        return False
    epochs = m.assignment_epochs
    kept = _CANONICAL.get(id(epochs))
    if kept is not None and kept[0] is epochs and kept[1] is m.assigned and kept[2] is m.pending_revocation:
        return True
    if not _maps_replay_as_themselves(m):
        return False
    if len(_CANONICAL) >= _ROW_BYTES_LIMIT:
        _CANONICAL.clear()
    _CANONICAL[id(epochs)] = (epochs, m.assigned, m.pending_revocation)
    return True


# id(assignment_epochs) -> (assignment_epochs, assigned, pending_revocation) of a member whose
# maps replay as themselves
_CANONICAL: dict[int, tuple] = {}


def _maps_replay_as_themselves(m: ConsumerGroupMember) -> bool:
    epochs = m.assignment_epochs
    topics = 0
    for row in (m.assigned, m.pending_revocation):
        if len(row) > 1 and sorted(row, key=_id_bytes) != list(row):
            return False
        for topic_id, parts in row.items():
            if not parts:
                return False
            topics += 1
            known = epochs.get(topic_id)
            if known is None or not parts <= known.keys():
                return False
    if len(epochs) != topics:       # a topic both assigned and pending: count its partitions
        return _epochs_cover_exactly(m)
    return all(len(epochs[t]) == len(parts) for t, parts in m.assigned.items()) and \
        all(len(epochs[t]) == len(parts) for t, parts in m.pending_revocation.items())


def _epochs_cover_exactly(m: ConsumerGroupMember) -> bool:
    wanted: dict = {}
    for row in (m.assigned, m.pending_revocation):
        for topic_id, parts in row.items():
            wanted[topic_id] = wanted.get(topic_id, frozenset()) | parts
    return wanted.keys() == m.assignment_epochs.keys() and all(
        m.assignment_epochs[t].keys() == parts for t, parts in wanted.items())


def _id_bytes(topic_id) -> bytes:
    return topic_id.bytes


_KNOWN_STATES = frozenset((0, 1, 2))      # reconciliation's STABLE, UNREVOKED_ and UNRELEASED_PARTITIONS

# id(row) -> (row, the member's assignment_epochs, field, bytes): a row's encoding, valid while the
# member holds the same row and epochs objects (members are immutable; a step that keeps a row
# keeps the object)
_ROW_BYTES: dict[int, tuple] = {}
_ROW_BYTES_LIMIT = 1 << 16


def _partitions_bytes(m: ConsumerGroupMember, row: Mapping, field: str) -> bytes:
    """The record's compact array ``field`` for ``row``, each partition with its assignment epoch."""
    if not row:
        return b"\x01"              # an empty compact array: length + 1
    epochs = m.assignment_epochs
    kept = _ROW_BYTES.get(id(row))
    if kept is not None and kept[0] is row and kept[1] is epochs and kept[2] == field:
        return kept[3]
    encode = value_element_encoder(CURRENT_MEMBER_ASSIGNMENT, 0, field)
    out = bytearray()
    _write_uvarint(out, len(row) + 1)
    for topic in _partitions_with_epochs(m, row):
        out += encode(topic)
    raw = bytes(out)
    if len(_ROW_BYTES) >= _ROW_BYTES_LIMIT:
        _ROW_BYTES.clear()
    _ROW_BYTES[id(row)] = (row, epochs, field, raw)
    return raw


def _write_uvarint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


# ---- writing and applying ------------------------------------------------------------------
def write(coord, records: list[Record]) -> None:
    """Apply ``records`` in order, then append them as one batch."""
    apply_all(coord, records)
    append(coord, records)


def apply_all(coord, records: list[Record]) -> None:
    for record in records:
        apply(coord, record.record_type, record.key, record.value)


def apply_to(coord, group: ConsumerGroup, records: list[Record]) -> None:
    """Apply ``records`` to a group not (yet) in the coordinator's map (an online upgrade's plan)."""
    for record in records:
        _APPLY[record.record_type](coord, group, record.key, record.value)


def append(coord, records: list[Record], before: list = (), after: list = ()) -> None:
    """One LogEntry holding ``records`` (nothing when empty), between already encoded (key, value)
    pairs of classic records: a conversion writes both kinds as one operation's batch."""
    if not records and not before and not after:
        return
    coord.append_records([*before, *encoded(records), *after])


def encoded(records: list[Record]) -> list[tuple[bytes, bytes | None]]:
    return [(_encoded_key(r.record_type, r.key),
             None if r.value is None else encode_value(r.record_type, 0, r.value))
            for r in records]


_KEY_BYTES: dict[tuple, bytes] = {}
_KEY_BYTES_LIMIT = 1 << 16


def _encoded_key(record_type: int, key: dict) -> bytes:
    """The key's bytes, remembered: a member's keys are written again and again (every
    assignment change, then its tombstones), and a key is only its ids."""
    ids = (record_type, *key.items())
    raw = _KEY_BYTES.get(ids)
    if raw is None:
        if len(_KEY_BYTES) >= _KEY_BYTES_LIMIT:
            _KEY_BYTES.clear()
        raw = _KEY_BYTES[ids] = encode_key(record_type, key)
    return raw


def replay_functions() -> dict:
    """from_records' entries for key types 3-8 and 16 (``replay.REPLAY``)."""
    return {record_type: partial(_replay, record_type) for record_type in CONSUMER_RECORD_TYPES}


def _replay(record_type: int, coord, key, value, offset, entry) -> None:
    apply(coord, record_type, key.data, None if value is None else value.data)


def apply(coord, record_type: int, key: Mapping, value: Mapping | None) -> None:
    group_id = key["groupId"]
    group = coord.get_group(group_id)
    if group is None or group.group_type != ConsumerGroup.group_type:
        if value is None:
            return
        group = coord.add_group(ConsumerGroup(group_id, coord.undo))
    _APPLY[record_type](coord, group, key, value)


def _apply_metadata(coord, group: ConsumerGroup, key, value) -> None:
    if value is None:
        coord.remove_group(group.group_id)
    else:
        group.set_field("group_epoch", value["epoch"])
        group.set_field("metadata_hash", value.get("metadataHash") or 0)


def _apply_partition_metadata(coord, group: ConsumerGroup, key, value) -> None:
    """A Kafka 4.0-era record (type 4; Kafka 4.1+ and kgroup write only its tombstone). Kafka 4.4's
    replay notes that the group has one, so the next subscription update tombstones it; its topics
    still name the group's topic ids for an offline view (``client.from_dump``)."""
    topics = {} if value is None else {
        t["topicName"]: SubscribedTopic(_topic_id(t["topicId"]), t["topicName"], t["numPartitions"])
        for t in value["topics"]}
    group.set_field("subscribed_topics", topics)
    group.set_field("has_partition_metadata_record", value is not None)


def _apply_member_metadata(coord, group: ConsumerGroup, key, value) -> None:
    member_id = key["memberId"]
    if value is None:
        group.remove_member(member_id)
        return
    metadata = dict(
        instance_id=value.get("instanceId"), rack_id=value.get("rackId"),
        client_id=value["clientId"], client_host=value["clientHost"],
        subscribed_topic_names=frozenset(value["subscribedTopicNames"]),
        subscribed_topic_regex=value.get("subscribedTopicRegex") or None,
        rebalance_timeout_ms=value["rebalanceTimeoutMs"], server_assignor=value.get("serverAssignor"),
        classic=_classic_in(value.get("classicMemberMetadata")))
    old = group.members.get(member_id)
    group.put_member(ConsumerGroupMember(member_id, **metadata) if old is None else old.evolve(**metadata))


def _apply_target_metadata(coord, group: ConsumerGroup, key, value) -> None:
    """A tombstone leaves epoch -1, as Kafka's replay does (not a new group's 1: the group is
    being deleted, its metadata tombstone follows)."""
    group.set_field("assignment_epoch", TOMBSTONED_ASSIGNMENT_EPOCH if value is None else value["assignmentEpoch"])
    group.set_field("assignment_timestamp", 0 if value is None else value.get("assignmentTimestamp") or 0)


def _apply_target_member(coord, group: ConsumerGroup, key, value) -> None:
    group.set_target_row(key["memberId"], None if value is None else _partitions_in(value["topicPartitions"]))


def _apply_current_assignment(coord, group: ConsumerGroup, key, value) -> None:
    member_id = key["memberId"]
    old = group.members.get(member_id)
    if value is None:
        if old is not None:     # Kafka keeps the member until its metadata tombstone, unassigned
            group.put_member(old.evolve(member_epoch=-1, previous_member_epoch=-1, state=0,
                                        assigned={}, pending_revocation={}, assignment_epochs={}))
        return
    old = old or ConsumerGroupMember(member_id)
    epochs: dict = {}
    group.put_member(old.evolve(
        member_epoch=value["memberEpoch"], previous_member_epoch=value["previousMemberEpoch"],
        state=member_state(value["state"]),
        assigned=_partitions_in(value["assignedPartitions"], epochs, value["memberEpoch"]),
        pending_revocation=_partitions_in(value["partitionsPendingRevocation"], epochs, value["memberEpoch"]),
        assignment_epochs=epochs))


def _apply_regular_expression(coord, group: ConsumerGroup, key, value) -> None:
    group.set_resolved_regex(key["regularExpression"], None if value is None else frozenset(value["topics"]))
    if value is not None:     # a refresh writes every regex of the group: the last one says when
        group.set_field("regex_refreshed_ms", value["timestamp"])


_APPLY = {METADATA: _apply_metadata, PARTITION_METADATA: _apply_partition_metadata,
          MEMBER_METADATA: _apply_member_metadata, TARGET_ASSIGNMENT_METADATA: _apply_target_metadata,
          TARGET_ASSIGNMENT_MEMBER: _apply_target_member,
          CURRENT_MEMBER_ASSIGNMENT: _apply_current_assignment, REGULAR_EXPRESSION: _apply_regular_expression}
