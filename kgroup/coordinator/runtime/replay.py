"""Rebuilding a coordinator from its ``__consumer_offsets`` records (``GroupCoordinator.from_records``).

One dispatch by the record's key type, as Kafka's ``GroupMetadataManager.replay`` and
``OffsetMetadataManager.replay`` do: OffsetCommit records go through the offsets manager's one
apply path (the one live commits take too); every other key type is a group type's, registered with
its replay in the facade's ``GROUP_TYPES`` (GroupMetadata rebuilds classic groups, the KIP-848 consumer
group's types 3-8 and 16 go through ``consumer.records.apply``). The ``connect`` group's records live in
another topic (``__worker_offsets``, whose types 3-8 mean other things) and replay through its
registration's ``worker_replay``. Replay applies records; it never appends any.
"""

from __future__ import annotations

from typing import Iterable

from ..codes import CoordinatorReplayError
from .log import LogEntry


def replay_log(coord, records: Iterable, table: dict) -> int:
    """Apply ``records`` ((key, value) pairs or LogEntry) in order; returns the next log offset.
    ``table``: record key type -> replay (``OFFSET_REPLAY`` and the group types' own)."""
    from kgroup.records import decode_key, decode_value
    offset = 0
    for item in records:
        if isinstance(item, LogEntry):
            entry = item
            if entry.control is not None:
                if coord.offsets is not None:
                    coord.offsets.replay_end_transaction(entry.producer_id,
                                                         entry.control == "COMMIT", offset)
                offset += 1
                continue
            pairs = entry.records
        else:
            entry, pairs = None, (item,)
        for key, value in pairs:
            record_entry = entry if entry is not None else LogEntry(records=[(key, value)])
            _replay_record(coord, table, key, value, offset, record_entry, decode_key, decode_value)
            offset += 1
    return offset


def _replay_record(coord, table, key, value, offset, entry, decode_key, decode_value) -> None:
    if not isinstance(key, (bytes, bytearray)) or len(key) < 2:
        raise CoordinatorReplayError(f"record at log offset {offset}: key is missing or too short")
    record_type = int.from_bytes(key[:2], "big", signed=True)
    replay = table.get(record_type)
    if replay is None:
        return          # unknown record types are skipped, as Kafka's loader does
    try:
        decoded_key = decode_key(bytes(key))
        decoded_value = decode_value(record_type, None if value is None else bytes(value))
    except Exception as exc:     # noqa: BLE001 - the decoder's own error names the field
        raise CoordinatorReplayError(
            f"record at log offset {offset} (type {record_type}) cannot be decoded: {exc}") from exc
    replay(coord, decoded_key, decoded_value, offset, entry)


def replay_offset_commit(coord, key, value, offset, entry) -> None:
    """OffsetCommit (key types 0 and 1)."""
    if coord.offsets is None:
        return
    if value is not None and coord.get_group(key.data["group"]) is None:
        # Offsets of a group that never joined: Kafka's loader recreates the simple group.
        coord.get_or_create_classic_group(key.data["group"], persist=False)
    coord.offsets.replay(key, value, offset, entry)


# OffsetCommit (key types 0 and 1); the group types' key types come from their registrations
OFFSET_REPLAY = {0: replay_offset_commit, 1: replay_offset_commit}
