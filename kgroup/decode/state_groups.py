"""`--view state`'s groups and members: the state's surviving records replayed as `describe --from-dump`
replays a dump (`views.dump_replay.ReplayBuilder`, the embedded coordinator, the same group views), so
a classic group, a KIP-848 consumer group and a Connect worker group read the same in both.

The state is what compaction keeps — the latest record per key — which is what a coordinator loading
the partition replays, so the groups are those a new coordinator would hold; the committed offsets name
the topic ids of consumer-group assignments, as in `describe --from-dump`. (The Spark engine's rows of
offset commits travel without their raw bytes, which the replay would need; the names need none.)
Share-group (types 10-15) and streams-group records (17, 19-23) replay as `describe --from-dump`
replays them (``views.dump_share_streams``); a share group's offsets are the share partitions of the
`__share_group_state` partitions read with it. (Type 9, ShareGroupPartitionMetadata, and 18, which
Kafka 4.4 no longer replays, stay records.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .decoder import key_group

GROUP_METADATA = 2
#: Record types that make up a group, per family: what its view shows (the rest stay records).
#: Share-group (10-15) and streams-group (17, 19-23) record types: `views.dump_share_streams` replays them
#: (its own constant: that module is imported only for a state that holds such records).
SHARE_STREAMS_TYPES = frozenset({*range(10, 16), 17, *range(19, 24)})
GROUP_RECORD_TYPES = {"consumer": frozenset({2, 3, 4, 5, 6, 7, 8, 16}) | SHARE_STREAMS_TYPES,
                      "connect": frozenset(range(3, 9))}


@dataclass
class StateGroups:
    views: list = field(default_factory=list)  # GroupView / ConnectGroupView / StreamsGroupView, by group id
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
    builder.share_state = state.share_partitions()  # a share group's offsets, when the input has them
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


def state_topic_names(state) -> dict:
    """topic id -> name: the committed offsets' (``committed_topic_names``) and the share groups'
    initialized topics (ShareGroupStatePartitionMetadata, type 15, names each topic id it holds)."""
    from kgroup.views.share_state import as_uuid

    names = committed_topic_names(state)
    for partition in state.partitions.values():
        for row in partition.latest.values():
            if row.key.family == "consumer" and row.record_type == 15 and row.value is not None:
                data = row.value.data
                for t in (data.get("initializingTopics") or []) + (data.get("initializedTopics") or []):
                    names.setdefault(as_uuid(t["topicId"]), t["topicName"])
    return names


def is_group_record(row) -> bool:
    return row.record_type in GROUP_RECORD_TYPES.get(row.key.family, ())


def share_streams_views(state, keep=None) -> list:
    """The share and streams groups of an `OffsetsState` whose group records survive (and pass `keep`),
    as `describe --from-dump` shows them (the same replay and views, without replaying the other
    groups into a coordinator): `--view state`'s JSON, JSON lines and CSV."""
    found = [sorted((r for r in partition.latest.values()
                     if r.record_type in SHARE_STREAMS_TYPES and r.key.family == "consumer"),
                    key=lambda r: (r.file, r.offset)) for partition in state.partitions.values()]
    if not any(found):      # the views' modules are imported only for a state that has such groups
        return []
    from kgroup.views.dump_share_streams import ShareStreamsReplay, share_group_view, streams_group_view, topic_names_of

    replay = ShareStreamsReplay()
    wanted = set()
    for rows in found:
        replay.apply_all(rows)
        wanted.update(key_group(r.key.data) for r in rows if keep is None or keep(r))
    if not replay.groups:
        return []
    names = {**state_topic_names(state), **topic_names_of(replay.groups.values())}
    shares = state.share_partitions()
    committed: dict = {}
    for c in state.committed_offsets():
        committed.setdefault(c.group, {})[(c.topic, c.partition)] = _Committed(c.offset, c.leader_epoch)
    views = []
    for gid in sorted(wanted & set(replay.groups)):
        group = replay.groups[gid]
        if group.group_type == "share":
            views.append(share_group_view(group, names, shares.states(gid) if shares is not None else None))
        else:
            views.append(streams_group_view(group, committed.get(gid)))
    return views


@dataclass(frozen=True)
class _Committed:
    """What a streams group's offset row needs of a committed offset."""

    offset: int
    leader_epoch: int
