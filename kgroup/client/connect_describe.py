"""kgroup's ConnectGroupDescribe (EXPERIMENTAL, API key 1004): Connect worker groups, live.

Kafka describes no worker group of the Connect draft (ConsumerGroupDescribe and DescribeGroups
answer it as unknown), so a broker that lists key 1004 in ApiVersions — kgroup serve — is asked
for the groups ConsumerGroupDescribe did not know, before DescribeGroups. Any other broker is
never sent it.
"""

from __future__ import annotations

from kgroup.views.connect import ConnectGroupView, ConnectMemberView
from kgroup.wire.cluster import ClusterClient, Coordinator


def describe_connect_groups(client: ClusterClient, coordinator: Coordinator,
                            groups: list[str]) -> dict[str, ConnectGroupView]:
    """One ConnectGroupDescribe to the coordinator; the groups it knows as worker groups (the others,
    GROUP_ID_NOT_FOUND, are left to DescribeGroups). Nothing when the broker lacks the key."""
    from kgroup import kafka_errors as codes
    from kgroup.protocol import ConnectGroupDescribeRequest

    if not groups or client.max_version(ConnectGroupDescribeRequest) < 0:
        return {}
    response = client.send(ConnectGroupDescribeRequest(version=0, group_ids=list(groups)),
                           node_id=coordinator.node_id, what=f"ConnectGroupDescribe on {coordinator}")
    return {raw.group_id: _view(raw, coordinator) for raw in response.groups
            if raw.error_code != codes.GROUP_ID_NOT_FOUND}


def _view(raw, coordinator: Coordinator) -> ConnectGroupView:
    from kgroup.views.model import member_order
    from kgroup.wire.cluster import error_name

    members = [ConnectMemberView(m.member_id, m.instance_id, m.client_id, m.client_host, m.member_epoch,
                                 _items(m.assignment), _items(m.target_assignment)) for m in raw.members]
    view = ConnectGroupView(raw.group_id, raw.group_state, raw.group_epoch, raw.assignment_epoch,
                            raw.assignor_name, raw.assigner, raw.assignment_error,
                            {c.name: c.tasks for c in raw.connectors}, _items(raw.unassigned),
                            sorted(members, key=member_order), coordinator)
    if raw.error_code:
        view.error = error_name(raw.error_code) + (f": {raw.error_message}" if raw.error_message else "")
    return view


def _items(wire) -> dict:
    from kgroup.coordinator.connect.protocol import TaskId, item_set

    return item_set(list(wire.connectors) + [TaskId(t.connector, t.task) for t in wire.tasks])
