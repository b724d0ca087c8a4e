"""StreamsGroupDescribe (API 89): KIP-1071 streams groups as StreamsGroupViews."""

from __future__ import annotations

from kgroup.views.model import member_order
from kgroup.views.streams import TASK_KINDS, StreamsGroupView, StreamsMemberView
from kgroup.wire.cluster import ClusterClient, Coordinator, error_name


def describe_streams_groups(client: ClusterClient, coordinator: Coordinator,
                            groups: list[str]) -> dict[str, StreamsGroupView]:
    """One StreamsGroupDescribe (v1, else v0) to the coordinator; {} when the broker lacks it."""
    from kgroup.protocol import StreamsGroupDescribeRequest

    version = min(client.max_version(StreamsGroupDescribeRequest), 1)
    if version < 0 or not groups:
        return {}
    request = StreamsGroupDescribeRequest(version=version, group_ids=list(groups), include_authorized_operations=False)
    response = client.send(request, node_id=coordinator.node_id, what=f"StreamsGroupDescribe on {coordinator}")
    return {raw.group_id: group_from_streams_described(raw, coordinator) for raw in response.groups}


def group_from_streams_described(raw, coordinator: Coordinator | None) -> StreamsGroupView:
    if raw.error_code:
        message = raw.error_message
        return StreamsGroupView(raw.group_id, raw.group_state or "", coordinator,
                                error=error_name(raw.error_code) + (f": {message}" if message else ""))
    topology = raw.topology
    subtopologies = [{"subtopology": s.subtopology_id, "source_topics": list(s.source_topics or []),
                      "repartition_sink_topics": list(s.repartition_sink_topics or []),
                      "state_changelog_topics": [t.name for t in s.state_changelog_topics or []],
                      "repartition_source_topics": [t.name for t in s.repartition_source_topics or []]}
                     for s in (topology.subtopologies or [] if topology is not None else [])]
    members = []
    for m in raw.members:
        endpoint = m.user_endpoint
        members.append(StreamsMemberView(
            m.member_id, m.instance_id, m.client_id or "", m.client_host or "", m.member_epoch, m.process_id or "",
            rack_id=m.rack_id, endpoint=f"{endpoint.host}:{endpoint.port}" if endpoint is not None else None,
            client_tags={kv.key: kv.value for kv in m.client_tags or []},
            tasks=_tasks(m.assignment), target_tasks=_tasks(m.target_assignment), is_classic=bool(m.is_classic)))
    members.sort(key=member_order)
    return StreamsGroupView(raw.group_id, raw.group_state, coordinator, raw.group_epoch, raw.assignment_epoch,
                            topology.epoch if topology is not None else None, sorted(
                                subtopologies, key=lambda s: s["subtopology"]), members,
                            assignor=getattr(raw, "assignor_name", None))


def _tasks(assignment) -> dict:
    if assignment is None:
        return {}
    rows = {"active": assignment.active_tasks, "standby": assignment.standby_tasks, "warmup": assignment.warmup_tasks}
    return {kind: {t.subtopology_id: sorted(t.partitions) for t in rows[kind] or []} for kind in TASK_KINDS}
