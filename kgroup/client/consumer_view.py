"""KIP-848 consumer groups as kgroup shows them (``GroupView``), live and offline.

A consumer group has no classic protocol bytes: DescribeGroups answers it as Dead (v0-5) or
GROUP_ID_NOT_FOUND "not a classic group" (v6), and its members' subscriptions and assignments are
data, not bytes. So, as Kafka's Admin does, kgroup describes such a group with
ConsumerGroupDescribe (API 69) when the broker has it (``describe_consumer_groups``), and
``describe --from-dump`` builds the same view from the replayed group (``view_from_snapshot``).
The protocol column is the group's server-side assignor live; offline, where the records do not
name it, it is empty. The generation is the group epoch.
"""

from __future__ import annotations

from kgroup.client.model import CONSUMER_PROTOCOL, GroupView, MemberView, member_order
from kgroup.client.wire import ClusterClient, Coordinator


def is_not_classic(view: GroupView) -> bool:
    """Did DescribeGroups answer as it does for a group that is not a classic group?"""
    if view.members:
        return False
    return view.error is None and view.state == "Dead" or (view.error or "").startswith("GROUP_ID_NOT_FOUND")


def describe_consumer_groups(client: ClusterClient, views: list[GroupView]) -> list[GroupView]:
    """``views`` with every group DescribeGroups did not describe replaced by its ConsumerGroupDescribe
    answer, where the broker has API 69 and knows the group as a consumer group."""
    from kgroup.protocol import ConsumerGroupDescribeRequest

    asked = [v for v in views if is_not_classic(v) and v.coordinator is not None]
    version = client.max_version(ConsumerGroupDescribeRequest) if asked else -1
    if version < 0:
        return views
    described = {}
    for view in asked:
        response = client.send(ConsumerGroupDescribeRequest(
            version=version, group_ids=[view.group], include_authorized_operations=False),
            node_id=view.coordinator.node_id, what=f"ConsumerGroupDescribe on {view.coordinator}")
        for raw in response.groups:
            if not raw.error_code:
                described[raw.group_id] = view_from_describe(raw, view.coordinator)
    return [described.get(v.group, v) for v in views]


def view_from_describe(raw, coordinator: Coordinator | None) -> GroupView:
    """A ConsumerGroupDescribe group entry as a GroupView."""
    members = [_member(m.member_id, m.instance_id, m.client_id, m.client_host,
                       [(tp.topic_name, tp.partitions) for tp in m.assignment.topic_partitions],
                       m.subscribed_topic_names)
               for m in raw.members]
    members.sort(key=member_order)
    return GroupView(raw.group_id, raw.group_state, CONSUMER_PROTOCOL, raw.assignor_name or "", coordinator,
                     members, generation=raw.group_epoch)


def view_from_snapshot(snap) -> GroupView:
    """A replayed consumer group (``ConsumerGroupSnapshot``) as a GroupView; topic ids are named from
    its partition metadata record (an id it does not name is shown as the id)."""
    names = {t.topic_id: t.name for t in snap.subscribed_topics.values()}
    members = [_member(m.member_id, m.instance_id, m.client_id, m.client_host,
                       [(names.get(t, str(t)), parts) for t, parts in m.assigned.items()],
                       m.subscribed_topic_names)
               for m in snap.members]
    members.sort(key=member_order)
    return GroupView(snap.group_id, snap.state, CONSUMER_PROTOCOL, "", None, members,
                     generation=snap.group_epoch)


def _member(member_id, instance_id, client_id, client_host, assignment, names) -> MemberView:
    """``subscription``: the topic names it subscribes to by name (a regex is not a topic list)."""
    return MemberView(member_id, instance_id, client_id or "", client_host or "",
                      assignment=[{"topic": topic, "partitions": sorted(parts)}
                                  for topic, parts in sorted(assignment) if parts],
                      subscription=sorted(names or ()))
