"""`--view state`'s groups and members: the state's surviving records replayed as `describe --from-dump`
replays a dump (`views.dump_replay.ReplayBuilder`, the embedded coordinator, the same group views), so
a classic group, a KIP-848 consumer group and a Connect worker group read the same in both.

The state is what compaction keeps — the latest record per key — which is what a coordinator loading
the partition replays, so the groups are those a new coordinator would hold; the committed offsets name
the topic ids of consumer-group assignments, as in `describe --from-dump`. (The Spark engine's rows of
offset commits travel without their raw bytes, which the replay would need; the names need none.)
Share-group records (types 9-15) are decoded but no coordinator here replays them: they stay records.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .decoder import key_group

GROUP_METADATA = 2
#: Record types that make up a group, per family: what its view shows (the rest stay records).
GROUP_RECORD_TYPES = {"consumer": frozenset({2, 3, 4, 5, 6, 7, 8, 16}), "connect": frozenset(range(3, 9))}


@dataclass
class StateGroups:
    views: list = field(default_factory=list)  # GroupView / ConnectGroupView, by group id
    shown: set = field(default_factory=set)     # group ids the views stand for
    error: str | None = None                    # why the groups could not be rebuilt


def state_groups(state, keep=None) -> StateGroups:
    """The groups of an `OffsetsState` whose group records survive (and pass `keep`, the row filter)."""
    from kgroup.views.dump_replay import ReplayBuilder, group_views
    from kgroup.errors import KgroupError

    builder = ReplayBuilder()
    wanted = set()
    for partition in state.partitions.values():
        rows = sorted(partition.latest.values(), key=lambda r: (r.file, r.offset))
        builder.add([r for r in rows if r.key.family == "consumer"], settled=True)  # not share-state's
        builder.add([r for r in rows if r.key.family == "connect"], connect=True, settled=True)
        wanted.update(key_group(r.key.data) for r in rows if is_group_record(r) and (keep is None or keep(r)))
    if not wanted:
        return StateGroups()
    try:
        replay = builder.replay(committed_topic_names(state))
    except KgroupError as exc:
        return StateGroups(error=str(exc))
    views = [v for v in group_views(replay, sorted(wanted)) if not v.error]
    return StateGroups(views, {v.group for v in views})


def committed_topic_names(state) -> dict:
    """topic id -> name from the committed offsets (OffsetCommitValue v4's topicId, Kafka 4.1+): since
    Kafka 4.1 no consumer-group record names the topic ids of an assignment (as `describe --from-dump`
    names them from the commits it replays)."""
    from kgroup.coordinator.offsets.manager import offset_from_record

    names = {}
    for partition in state.partitions.values():
        for row in partition.committed_rows():
            topic_id = offset_from_record(row.value.data).topic_id
            if topic_id is not None:
                names[topic_id] = row.key.data["topic"]
    return names


def is_group_record(row) -> bool:
    return row.record_type in GROUP_RECORD_TYPES.get(row.key.family, ())
