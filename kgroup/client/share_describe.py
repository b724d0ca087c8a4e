"""ShareGroupDescribe (API 77) and DescribeShareGroupOffsets (API 90): KIP-932 share groups as GroupViews.

A share group's members read its partitions together, so a partition has no owner; what the group
keeps per partition is its share-partition start offset (records before it are all acknowledged)
and, from DescribeShareGroupOffsets v1, the lag Kafka computes from it — as kafka-share-groups
shows them.
"""

from __future__ import annotations

from kgroup.client.consumer_describe import resolve_topic_ids
from kgroup.views.model import GroupView, MemberView, OffsetRow, member_order, topic_rows
from kgroup.wire.cluster import ClusterClient, Coordinator, error_name

SHARE = "share"
# Kafka 4.4 has no admin request that removes a share group's member: its coordinator answers
# LeaveGroup for a share group UNKNOWN_MEMBER_ID ("Group ... not found"), and Admin has no
# removeMembersFromShareGroup. A member leaves with its own ShareGroupHeartbeat (epoch -1) when its
# consumer closes, or is fenced when its session times out.
NO_MEMBER_REMOVAL = ("group {group!r} is a share group: Kafka 4.4 has no request that removes a share group's "
                     "member (LeaveGroup is for classic and consumer groups); stop its consumer, which leaves when "
                     "it closes, or wait for its session to time out (group.share.session.timeout.ms)")


def describe_share_groups(client: ClusterClient, coordinator: Coordinator,
                          groups: list[str]) -> dict[str, GroupView]:
    """One ShareGroupDescribe (v1, Kafka 4.1+) to the coordinator; {} when the broker lacks it."""
    from kgroup.protocol import ShareGroupDescribeRequest

    if not groups or client.max_version(ShareGroupDescribeRequest) < 1:
        return {}
    request = ShareGroupDescribeRequest(version=1, group_ids=list(groups), include_authorized_operations=False)
    response = client.send(request, node_id=coordinator.node_id, what=f"ShareGroupDescribe on {coordinator}")
    unnamed = {tp.topic_id for g in response.groups for m in g.members if m.assignment is not None
               for tp in m.assignment.topic_partitions if not tp.topic_name}
    names = resolve_topic_ids(client, unnamed)
    return {raw.group_id: group_from_share_described(raw, coordinator, names) for raw in response.groups}


def group_from_share_described(raw, coordinator: Coordinator | None, names: dict) -> GroupView:
    """A ShareGroupDescribe group entry as a GroupView (type and protocol type "share")."""
    if raw.error_code:
        message = raw.error_message
        return GroupView(raw.group_id, raw.group_state or "", SHARE, "", coordinator, group_type=SHARE,
                         error=error_name(raw.error_code) + (f": {message}" if message else ""))
    members = []
    for m in raw.members:
        rows = m.assignment.topic_partitions if m.assignment is not None else ()
        members.append(MemberView(
            m.member_id, None, m.client_id or "", m.client_host or "",
            assignment=topic_rows(((tp.topic_name or tp.topic_id, tp.partitions) for tp in rows), names),
            subscription=sorted(m.subscribed_topic_names or []), member_epoch=m.member_epoch,
            member_type=SHARE, rack_id=m.rack_id))
    members.sort(key=member_order)
    return GroupView(raw.group_id, raw.group_state, SHARE, raw.assignor_name or "", coordinator, members,
                     group_type=SHARE, group_epoch=raw.group_epoch, assignment_epoch=raw.assignment_epoch,
                     assignor=raw.assignor_name or None)


def attach_share_offsets(client: ClusterClient, view: GroupView) -> None:
    """view.offsets: each share partition's start offset and lag (every topic the group has
    initialized), from one DescribeShareGroupOffsets to the coordinator. A group-level error is
    the view's error (this group only: the others are still described)."""
    from kgroup.protocol import DescribeShareGroupOffsetsRequest

    version = min(client.max_version(DescribeShareGroupOffsetsRequest), 1)
    if version < 0 or view.coordinator is None:
        view.offsets = []
        return
    group_cls = DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup
    request = DescribeShareGroupOffsetsRequest(version=version, groups=[group_cls(group_id=view.group, topics=None)])
    response = client.send(request, node_id=view.coordinator.node_id,
                           what=f"DescribeShareGroupOffsets on {view.coordinator}")
    rows = []
    for group in response.groups:
        if group.error_code:
            message = group.error_message
            view.error = (f"group {view.group!r}: DescribeShareGroupOffsets: {error_name(group.error_code)}"
                          + (f": {message}" if message else ""))
        for topic in group.topics:
            for p in topic.partitions:
                error = error_name(p.error_code) if p.error_code else None
                lag = getattr(p, "lag", -1)
                rows.append(OffsetRow(topic.topic_name, p.partition_index, None, None, error=error,
                                      leader_epoch=p.leader_epoch if p.leader_epoch >= 0 else None,
                                      start_offset=p.start_offset, share_lag=lag if lag >= 0 else None))
    view.offsets = sorted(rows, key=lambda r: (r.topic, r.partition))
