"""Share groups (KIP-932, record types 10-15) and streams groups (KIP-1071, types 17 and 19-23) of a
`__consumer_offsets` dump, replayed as Kafka 4.4's GroupMetadataManager.replay replays them, and
shown as `describe` shows them live (``client.share_describe``, ``client.streams_describe``).

kgroup's embedded coordinator runs no share or streams group, so these records are replayed here,
into what a loading coordinator holds of each group: its epochs, members (metadata and current
assignment), target assignment, topology (streams) and initialized share partitions (share). The
group's state is derived as Kafka derives it (ShareGroup / StreamsGroup.maybeUpdateGroupState).
What a dump cannot know stays empty: the assignor (a broker setting), a streams topology as the
broker configured it against the live topics (the stored topology is shown, as Kafka's describe
does until a member's heartbeat configures it), lag (no log end offsets).

Records replay in log order; a tombstone that Kafka's replay would refuse (a group deleted while it
has members, a member deleted before its assignment) is applied anyway: a dump is read, not trusted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kgroup.views.model import GroupView, MemberView, OffsetRow, member_order, topic_rows
from kgroup.views.share_state import as_uuid
from kgroup.views.streams import TASK_KINDS, StreamsGroupView, StreamsMemberView

SHARE_TYPES = frozenset(range(10, 16))
STREAMS_TYPES = frozenset({17, 19, 20, 21, 22, 23})
SHARE_STREAMS_TYPES = SHARE_TYPES | STREAMS_TYPES
SHARE_MEMBER_METADATA, SHARE_METADATA, SHARE_TARGET_METADATA, SHARE_TARGET_MEMBER = 10, 11, 12, 13
SHARE_CURRENT_ASSIGNMENT, SHARE_STATE_PARTITION_METADATA = 14, 15
STREAMS_METADATA, STREAMS_MEMBER_METADATA, STREAMS_TARGET_METADATA = 17, 19, 20
STREAMS_TARGET_MEMBER, STREAMS_CURRENT_ASSIGNMENT, STREAMS_TOPOLOGY = 21, 22, 23
LEAVE_GROUP_MEMBER_EPOCH = -1
#: A member's STABLE state as its current-assignment record writes it: the share and consumer groups'
#: MemberState has STABLE = 0, the streams group's own MemberState STABLE = 1 (2, 3: unrevoked and
#: unreleased tasks).
STABLE_STATE = {"share": 0, "streams": 1}


@dataclass
class ModernMember:
    """A share or streams member as the replay holds it (the fields its records carry)."""

    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: int = 0                                 # MemberState as the record holds it (STABLE_STATE)
    metadata: dict = field(default_factory=dict)   # the latest member-metadata value
    assigned: dict = field(default_factory=dict)   # share: topic id -> partitions; streams: kind -> {sub: parts}


@dataclass
class ModernGroup:
    group_id: str
    group_type: str                          # "share" or "streams"
    group_epoch: int = 0
    metadata_hash: int = 0
    assignment_epoch: int = -1
    members: dict = field(default_factory=dict)   # member id -> ModernMember
    target: dict = field(default_factory=dict)    # member id -> as ModernMember.assigned
    metadata: dict = field(default_factory=dict)  # streams: the group-metadata value (topology epochs)
    topology: dict | None = None                  # streams: the StreamsGroupTopology value
    initialized: dict = field(default_factory=dict)  # share: topic id -> (name, partitions), and initializing

    @property
    def state(self) -> str:
        if not self.members:
            return "Empty"
        if self.group_type == "share":
            return "Stable"
        validated = self.metadata.get("validatedTopologyEpoch", -1)
        if self.topology is None or self.topology.get("epoch") != validated:
            return "NotReady"
        if self.group_epoch > self.assignment_epoch:
            return "Assigning"
        stable = STABLE_STATE["streams"]
        if any(m.state != stable or m.member_epoch != self.assignment_epoch for m in self.members.values()):
            return "Reconciling"
        return "Stable"


class ShareStreamsReplay:
    """Fed a `__consumer_offsets` partition's decoded data rows in log order; keeps share and
    streams groups (other types are ignored)."""

    def __init__(self):
        self.groups: dict = {}   # group id -> ModernGroup

    def apply_all(self, rows) -> None:
        for row in rows:
            if row.kind == "data" and row.record_type in SHARE_STREAMS_TYPES and row.key.family == "consumer":
                self.apply(row)

    def _group(self, gid: str, group_type: str, create: bool):
        group = self.groups.get(gid)
        if group is None and create:
            group = self.groups[gid] = ModernGroup(gid, group_type)
        return group

    def apply(self, row) -> None:
        rtype = row.record_type
        key = row.key.data
        value = row.value.data if row.value is not None else None
        gid = key["groupId"]
        group_type = "share" if rtype in SHARE_TYPES else "streams"
        group = self._group(gid, group_type, value is not None)
        if group is None:
            return   # a tombstone for a group not held: ignored, as Kafka does
        member_id = key.get("memberId")
        if rtype in (SHARE_METADATA, STREAMS_METADATA):
            if value is None:
                del self.groups[gid]
                return
            group.group_epoch, group.metadata_hash = value["epoch"], value.get("metadataHash", 0)
            if rtype == STREAMS_METADATA:
                group.metadata = dict(value)
        elif rtype in (SHARE_MEMBER_METADATA, STREAMS_MEMBER_METADATA):
            if value is None:
                group.members.pop(member_id, None)
            else:
                group.members.setdefault(member_id, ModernMember(member_id, state=STABLE_STATE[group_type])
                                         ).metadata = dict(value)
        elif rtype in (SHARE_TARGET_METADATA, STREAMS_TARGET_METADATA):
            group.assignment_epoch = value["assignmentEpoch"] if value is not None else -1
        elif rtype in (SHARE_TARGET_MEMBER, STREAMS_TARGET_MEMBER):
            if value is None:
                group.target.pop(member_id, None)
            else:
                group.target[member_id] = _share_partitions(value["topicPartitions"]) \
                    if rtype == SHARE_TARGET_MEMBER else _streams_tasks(value)
        elif rtype in (SHARE_CURRENT_ASSIGNMENT, STREAMS_CURRENT_ASSIGNMENT):
            member = group.members.get(member_id)
            if value is None:
                if member is not None:
                    member.member_epoch = member.previous_member_epoch = LEAVE_GROUP_MEMBER_EPOCH
                    member.assigned = {}
                return
            member = group.members.setdefault(member_id, ModernMember(member_id, state=STABLE_STATE[group_type]))
            member.member_epoch, member.previous_member_epoch = value["memberEpoch"], value["previousMemberEpoch"]
            member.state = value.get("state", STABLE_STATE[group_type])
            member.assigned = _share_partitions(value["assignedPartitions"]) \
                if rtype == SHARE_CURRENT_ASSIGNMENT else _streams_tasks(value)
        elif rtype == SHARE_STATE_PARTITION_METADATA:
            group.initialized = {} if value is None else {
                as_uuid(t["topicId"]): (t["topicName"], sorted(t["partitions"]))
                for t in (value.get("initializingTopics") or []) + (value.get("initializedTopics") or [])}
        elif rtype == STREAMS_TOPOLOGY:
            group.topology = dict(value) if value is not None else None


def _share_partitions(topics) -> dict:
    return {as_uuid(t["topicId"]): sorted(t["partitions"]) for t in topics or ()}


def _streams_tasks(value: dict) -> dict:
    return {kind: {t["subtopologyId"]: sorted(t["partitions"]) for t in value.get(f"{kind}Tasks") or ()}
            for kind in TASK_KINDS}


def topic_names_of(groups) -> dict:
    """topic id -> name from the share groups' initialized topics (ShareGroupStatePartitionMetadata)."""
    return {tid: name for g in groups for tid, (name, _parts) in g.initialized.items() if name}


def share_group_view(group: ModernGroup, names: dict, share_states=None) -> GroupView:
    """The group as `describe` shows a share group; offsets: the share partitions' state from the
    dump's `__share_group_state` partitions (share_states: SharePartitionStates of this group), else
    none (None when the dump has no such partition)."""
    members = []
    for m in group.members.values():
        meta = m.metadata
        members.append(MemberView(m.member_id, None, meta.get("clientId") or "", meta.get("clientHost") or "",
                                  assignment=topic_rows(m.assigned.items(), names),
                                  subscription=sorted(meta.get("subscribedTopicNames") or []),
                                  member_epoch=m.member_epoch, member_type="share", rack_id=meta.get("rackId")))
    members.sort(key=member_order)
    offsets = None
    if share_states is not None:
        offsets = [OffsetRow(names.get(s.topic_id) or str(s.topic_id), s.partition, None, None,
                             leader_epoch=s.leader_epoch if s.leader_epoch >= 0 else None,
                             start_offset=s.start_offset)
                   for s in share_states]
        offsets.sort(key=lambda r: (r.topic, r.partition))
    return GroupView(group.group_id, group.state, "share", "", None, members, offsets=offsets, group_type="share",
                     group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch)


def streams_group_view(group: ModernGroup, committed: dict | None = None) -> StreamsGroupView:
    """The group as `describe` shows a streams group: the stored topology (sorted as Kafka's
    describe sorts it), members with their tasks beside their target; offsets: the group's committed
    offsets and the partitions its active tasks read, each with its owner (an active task of a
    subtopology owns its source partitions)."""
    topology = group.topology or {}
    subtopologies = [{"subtopology": s["subtopologyId"], "source_topics": sorted(s.get("sourceTopics") or []),
                      "repartition_sink_topics": sorted(s.get("repartitionSinkTopics") or []),
                      "state_changelog_topics": sorted(t["name"] for t in s.get("stateChangelogTopics") or []),
                      "repartition_source_topics": sorted(t["name"] for t in s.get("repartitionSourceTopics") or [])}
                     for s in topology.get("subtopologies") or []]
    members = []
    for m in group.members.values():
        meta = m.metadata
        endpoint = meta.get("userEndpoint")
        members.append(StreamsMemberView(
            m.member_id, meta.get("instanceId"), meta.get("clientId") or "", meta.get("clientHost") or "",
            m.member_epoch, meta.get("processId") or "", rack_id=meta.get("rackId"),
            endpoint=f"{endpoint['host']}:{endpoint['port']}" if endpoint else None,
            client_tags={kv["key"]: kv["value"] for kv in meta.get("clientTags") or []},
            tasks=dict(m.assigned), target_tasks=dict(group.target.get(m.member_id) or {})))
    members.sort(key=member_order)
    view = StreamsGroupView(group.group_id, group.state, None, group.group_epoch, group.assignment_epoch,
                            topology.get("epoch") if group.topology is not None else None,
                            sorted(subtopologies, key=lambda s: s["subtopology"]), members)
    owners = view.owners()
    committed = committed or {}
    rows = []
    for topic, partition in sorted(set(committed) | set(owners)):   # as the live describe's rows
        om, owner = committed.get((topic, partition)), owners.get((topic, partition))
        rows.append(OffsetRow(topic, partition, om.offset if om is not None else None, None,
                              owner.member_id if owner else None, owner.group_instance_id if owner else None,
                              leader_epoch=om.leader_epoch if om is not None and om.leader_epoch >= 0 else None))
    view.offsets = rows
    return view
