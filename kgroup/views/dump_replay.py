"""A dump's rows replayed into the embedded coordinator, and the groups it holds as kgroup shows them:
the one way `describe --from-dump`, `list --from-dump` (``kgroup.client.from_dump``, which reads the files) and
`decode-offsets --view state`'s tables (``kgroup.decode.state_groups``) rebuild groups.

The coordinator (GroupCoordinator.from_records) gives the state a new coordinator would load; the
rows give what DescribeGroups never says: each classic member's session timeout, when the log last
saw each member (``dump_members``) and the history of every group.instance.id. It reads no files
and talks to no cluster, so the decode wing can stand on it: with ``model``, ``connect`` and
``dump_members`` it is the views layer, below ``kgroup.decode`` (tests/test_layering.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kgroup.errors import KgroupError
from kgroup.views.connect import CONNECT_TYPE, connect_group_view
from kgroup.views.dump_members import MemberTimes
from kgroup.views.dump_share_streams import (SHARE_STREAMS_TYPES, ShareStreamsReplay, share_group_view,
                                             streams_group_view, topic_names_of)
from kgroup.views.model import (CONSUMER_PROTOCOL, GroupView, MemberView, OffsetRow, member_from_bytes, member_order,
                                 topic_rows)

GROUP_METADATA = 2
CONSUMER_MEMBER_METADATA = 5   # a KIP-848 member's ConsumerGroupMemberMetadata (instance id, host)


@dataclass
class InstanceHistory:
    member_ids: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    last_offset: int = -1

    def note(self, member_id: str, host: str, offset: int) -> None:
        if not self.member_ids or self.member_ids[-1] != member_id:
            self.member_ids.append(member_id)
        if host and host not in self.hosts:
            self.hosts.append(host)
        self.last_offset = offset


@dataclass
class DumpReplay:
    """Everything read from the dump: the rebuilt coordinator plus per-member log facts."""

    coordinator: object
    last_timestamp_ms: int
    member_times: MemberTimes = field(default_factory=MemberTimes)  # last seen; ended after --until-time
    instances: dict = field(default_factory=dict)        # (group, instance id) -> InstanceHistory
    subscriptions: dict = field(default_factory=dict)    # (group, member id) -> subscription bytes
    problems: list = field(default_factory=list)
    records: int = 0
    topic_names: dict = field(default_factory=dict)      # topic id -> name: partition.metadata files, then commits
    share_streams: object = None     # ShareStreamsReplay: share and streams groups (``dump_share_streams``)
    share_state: object = None       # ShareStateReplay of the dump's __share_group_state partitions, or None


class ReplayBuilder:
    """Decoded rows of a dump, each partition's in log order, to the replayed coordinator and the
    per-member log facts: the one way `describe --from-dump`, `list --from-dump` and `decode-offsets
    --view state`'s tables rebuild groups."""

    def __init__(self):
        from kgroup.coordinator import LogEntry

        self._entry = LogEntry
        self.entries: list = []
        self.worker_records: list = []   # __worker_offsets: Connect worker groups, a log of their own
        self.times = MemberTimes()
        self.instances: dict = {}
        self.subscriptions: dict = {}
        self.last_ts = 0
        self.share_streams = ShareStreamsReplay()
        self.share_state = None      # a ShareStateReplay once a __share_group_state partition is added
        self.share_state_rows = 0

    @property
    def empty(self) -> bool:
        return not self.entries and not self.worker_records and not self.share_state_rows

    def add_share_state(self, rows) -> None:
        """One `__share_group_state` partition's rows in log order (every record counts: not compacted)."""
        from kgroup.views.share_state import ShareStateReplay

        if self.share_state is None:
            self.share_state = ShareStateReplay()
        rows = [r for r in rows if r.kind == "data"]
        self.share_state_rows += len(rows)
        for row in rows:
            self.last_ts = max(self.last_ts, row.timestamp)
        self.share_state.apply_all(rows)

    def add(self, rows, connect: bool = False, *, settled: bool = False) -> None:
        """One partition's rows in log order (data, control and error rows). settled: the rows are a
        replayed state's survivors (offset commits already committed), replayed as plain records."""
        LogEntry = self._entry
        for row in rows:
            self.last_ts = max(self.last_ts, row.timestamp)
            if connect:
                if row.kind == "data":
                    self.worker_records.append((row.key_bytes, row.value_bytes))
                continue
            if row.kind == "control":
                if not settled:
                    self.entries.append(LogEntry(records=[], producer_id=row.producer_id, control=row.marker,
                                                 coordinator_epoch=row.coordinator_epoch or 0,
                                                 timestamp_ms=row.timestamp))
                continue
            if row.kind != "data":
                continue
            if row.record_type in SHARE_STREAMS_TYPES:     # kgroup's coordinator runs no share or streams group
                self.share_streams.apply(row)
            if settled:
                self.entries.append(LogEntry(records=[(row.key_bytes, row.value_bytes)], timestamp_ms=row.timestamp))
            else:
                self.entries.append(LogEntry(records=[(row.key_bytes, row.value_bytes)], producer_id=row.producer_id,
                                             transactional=row.transactional, timestamp_ms=row.timestamp))
            self.times.seen(row)
            if row.record_type == GROUP_METADATA and row.value is not None:
                _note_members(row, self.instances, self.subscriptions)
            elif row.record_type == CONSUMER_MEMBER_METADATA and row.value is not None:
                _note_consumer_member(row, self.instances)

    def replay(self, topic_names: dict | None = None) -> DumpReplay:
        """The coordinator a new coordinator would load from these rows (KgroupError if it cannot)."""
        from kgroup.coordinator import GroupCoordinator
        from kgroup.coordinator.coordinator import CoordinatorReplayError

        try:
            coord = GroupCoordinator.from_records(self.entries, now_ms=self.last_ts,
                                                  worker_records=self.worker_records)
        except CoordinatorReplayError as exc:
            raise KgroupError(f"cannot replay the dump: {exc}") from None
        return DumpReplay(coord, self.last_ts, self.times, self.instances, self.subscriptions, [],
                          len(self.entries) + len(self.worker_records),
                          {**(topic_names or {}), **_topic_names(coord),   # once, for every group's view
                           **topic_names_of(self.share_streams.groups.values())},
                          self.share_streams, self.share_state)


def _note_members(row, instances, subscriptions) -> None:
    group = row.key.data["group"]
    for m in row.value.data.get("members") or []:
        member_id = m.get("memberId") or ""
        subscriptions[(group, member_id)] = m.get("subscription") or b""
        iid = m.get("groupInstanceId")
        if iid is not None:
            instances.setdefault((group, iid), InstanceHistory()).note(member_id, m.get("clientHost") or "",
                                                                       row.offset)


def _note_consumer_member(row, instances) -> None:
    iid = row.value.data.get("instanceId")
    if iid is not None:
        instances.setdefault((row.key.data["groupId"], iid), InstanceHistory()).note(
            row.key.data["memberId"], row.value.data.get("clientHost") or "", row.offset)


def group_views(replay: DumpReplay, group_ids=None) -> list[GroupView]:
    """Views of the named groups (all groups when None); an unknown name gets an error entry."""
    coord = replay.coordinator
    known = set(coord.groups())
    if coord.offsets is not None:  # a group whose metadata was deleted may still have committed offsets
        known.update(coord.offsets.groups())
    modern = replay.share_streams.groups if replay.share_streams is not None else {}
    known.update(modern)
    wanted = sorted(known) if not group_ids else list(group_ids)
    views = []
    for gid in wanted:
        if gid in modern:
            views.append(_share_streams_view(replay, modern[gid]))
            continue
        snap = coord.group(gid)
        committed = coord.committed_offsets(gid)
        if snap is None and not committed:
            views.append(GroupView(gid, "Dead", "", "", None, error=f"group {gid!r} is not in the dump"))
            continue
        views.append(_view(replay, gid, snap, committed))
    return views


def _view(replay: DumpReplay, gid: str, snap, committed) -> GroupView:
    if getattr(snap, "group_type", None) == CONNECT_TYPE:
        return connect_group_view(replay.coordinator, gid)
    if hasattr(snap, "group_epoch"):
        view = consumer_group_view(replay.coordinator, gid, replay.topic_names)
    else:
        view = _classic_view(replay, gid, snap)
    times = replay.member_times
    for member in view.members:
        member.last_seen_ms = times.last_seen.get((gid, member.member_id))
        member.session_ended_ms = times.ended.get((gid, member.member_id))
    owners = view.owners()
    rows = []
    for (topic, partition) in sorted(set(committed) | set(owners)):
        om = committed.get((topic, partition))
        owner = owners.get((topic, partition))
        rows.append(OffsetRow(topic, partition, om.offset if om is not None else None, None,
                              owner.member_id if owner else None, owner.group_instance_id if owner else None,
                              leader_epoch=om.leader_epoch if om is not None and om.leader_epoch >= 0 else None))
    view.offsets = rows
    moves = []
    for (group, iid), hist in sorted(replay.instances.items()):
        if group != gid or (len(hist.member_ids) < 2 and len(hist.hosts) < 2):
            continue
        moves.append({"group_instance_id": iid, "member_ids": list(hist.member_ids), "hosts": list(hist.hosts),
                      "member_id_changes": len(hist.member_ids) - 1, "moved_host": len(hist.hosts) > 1})
    view.instance_moves = moves
    return view


def _share_streams_view(replay: DumpReplay, group):
    """A share group with its share partitions' state when the dump holds `__share_group_state`
    partitions; a streams group with its committed offsets."""
    if group.group_type == "share":
        states = replay.share_state.states(group.group_id) if replay.share_state is not None else None
        return share_group_view(group, replay.topic_names, states)
    return streams_group_view(group, replay.coordinator.committed_offsets(group.group_id))


def _classic_view(replay: DumpReplay, gid: str, snap) -> GroupView:
    protocol_type = (snap.protocol_type or "") if snap else ""
    members = []
    for m in (snap.members if snap else ()):
        view = member_from_bytes(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                 replay.subscriptions.get((gid, m.member_id), b""), m.assignment, protocol_type)
        view.session_timeout_ms = m.session_timeout_ms
        members.append(view)
    members.sort(key=member_order)
    return GroupView(gid, snap.state if snap else "Empty", protocol_type, (snap.protocol or "") if snap else "",
                     None, members, generation=snap.generation if snap else None)


def _topic_names(coord) -> dict:
    """topic id -> name, from the topic ids of the committed offsets in the dump."""
    names = {}
    if coord.offsets is None:
        return names
    for group_id in coord.offsets.groups():
        for (topic, _partition), value in coord.committed_offsets(group_id).items():
            if getattr(value, "topic_id", None) is not None:
                names[value.topic_id] = topic
    return names


def consumer_group_view(coord, gid: str, topic_names: dict | None = None) -> GroupView:
    """A replayed KIP-848 group as ConsumerGroupDescribe would show it: epochs, the assignor the
    coordinator would use, each member's epoch, subscriptions, current and target assignment.
    Topic ids are named by ``topic_names`` (a replay's: the log dirs' partition.metadata files and
    the topic ids committed offsets carry — OffsetCommitValue v4, Kafka 4.1+; any group's: ids are
    the cluster's — else those of the commits in ``coord``) and a Kafka 4.0 log's PartitionMetadata
    record; an id none names is shown as the id."""
    from kgroup.coordinator.consumer.target import preferred_assignor

    group = coord.get_group(gid)
    names = dict(_topic_names(coord) if topic_names is None else topic_names)
    names.update((t.topic_id, t.name) for t in group.subscribed_topics.values())
    assignor = preferred_assignor(group, None, None, coord.config.group_consumer_assignors[0], as_described=True)
    members = [MemberView(m.member_id, m.instance_id, m.client_id, m.client_host,
                          assignment=topic_rows(m.assigned.items(), names),
                          subscription=sorted(m.subscribed_topic_names), member_epoch=m.member_epoch,
                          member_type=CONSUMER_PROTOCOL if m.classic is None else "classic",
                          target_assignment=topic_rows(group.target_row(m.member_id).items(), names),
                          subscribed_topic_regex=m.subscribed_topic_regex or None, rack_id=m.rack_id)
               for m in group.members.values()]
    members.sort(key=member_order)
    return GroupView(gid, group.state, CONSUMER_PROTOCOL, assignor, None, members, group_type="consumer",
                     group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch, assignor=assignor)
