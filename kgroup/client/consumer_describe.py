"""ConsumerGroupDescribe (API 69): KIP-848 consumer groups as GroupViews, topic ids named.

Kafka 4 answers DescribeGroups for a consumer group with GROUP_ID_NOT_FOUND ("not a classic
group"), so describe asks ConsumerGroupDescribe first and sends DescribeGroups only for the groups
it does not know as consumer groups — as Kafka's AdminClient (DescribeConsumerGroupsHandler) does.
"""

from __future__ import annotations

from kgroup.views.model import CONSUMER_PROTOCOL, GroupView, MemberView, member_order, topic_rows
from kgroup.wire.cluster import ClusterClient, Coordinator, error_name

# Member types of ConsumerGroupDescribe v1 (-1 in v0: a v0 broker only lists consumer members).
MEMBER_TYPES = {0: "classic", 1: "consumer"}


def fallback_error(code: int) -> bool:
    """The errors that mean "ask DescribeGroups instead": a classic (or unknown) group, or a
    broker whose consumer-group protocol is switched off."""
    from kgroup import kafka_errors as codes

    return code in (codes.GROUP_ID_NOT_FOUND, codes.UNSUPPORTED_VERSION)


def describe_consumer_groups(client: ClusterClient, coordinator: Coordinator,
                             groups: list[str]) -> dict[str, GroupView]:
    """One ConsumerGroupDescribe (v1, else v0) to the coordinator; the groups it answered.

    Groups answered with a fallback error are left out (the caller asks DescribeGroups); so are
    all of them when the broker lacks API 69. Other per-group errors come back as error views.
    """
    from kgroup.protocol import ConsumerGroupDescribeRequest

    version = min(client.max_version(ConsumerGroupDescribeRequest), 1)
    if version < 0 or not groups:
        return {}
    request = ConsumerGroupDescribeRequest(version=version, group_ids=list(groups),
                                           include_authorized_operations=False)
    response = client.send(request, node_id=coordinator.node_id,
                           what=f"ConsumerGroupDescribe on {coordinator}")
    answered = [raw for raw in response.groups if not fallback_error(raw.error_code)]
    names = resolve_topic_ids(client, _unnamed_topic_ids(answered))
    views = {}
    for raw in answered:
        if raw.error_code:
            message = raw.error_message
            views[raw.group_id] = GroupView(raw.group_id, raw.group_state or "", "", "", coordinator,
                                            error=error_name(raw.error_code) + (f": {message}" if message else ""),
                                            group_type="consumer")
        else:
            views[raw.group_id] = group_from_consumer_described(raw, coordinator, names)
    return views


def group_from_consumer_described(raw, coordinator: Coordinator | None, names: dict) -> GroupView:
    """A ConsumerGroupDescribe group entry as a GroupView (protocol shows the server-side assignor)."""
    members = []
    for m in raw.members:
        member = MemberView(m.member_id, m.instance_id, m.client_id or "", m.client_host or "",
                            assignment=_assignment(m.assignment, names),
                            subscription=list(m.subscribed_topic_names or []),
                            member_epoch=m.member_epoch,
                            member_type=MEMBER_TYPES.get(getattr(m, "member_type", -1), CONSUMER_PROTOCOL),
                            target_assignment=_assignment(m.target_assignment, names),
                            subscribed_topic_regex=m.subscribed_topic_regex or None, rack_id=m.rack_id)
        members.append(member)
    members.sort(key=member_order)
    return GroupView(raw.group_id, raw.group_state, CONSUMER_PROTOCOL, raw.assignor_name or "", coordinator,
                     members, group_type="consumer", group_epoch=raw.group_epoch,
                     assignment_epoch=raw.assignment_epoch, assignor=raw.assignor_name or None)


def _assignment(assignment, names: dict) -> list[dict]:
    rows = assignment.topic_partitions if assignment is not None else ()
    return topic_rows(((tp.topic_name or tp.topic_id, tp.partitions) for tp in rows), names)


def _unnamed_topic_ids(groups) -> set:
    return {tp.topic_id for g in groups for m in g.members
            for a in (m.assignment, m.target_assignment) if a is not None
            for tp in a.topic_partitions if not tp.topic_name}


def resolve_topic_ids(client: ClusterClient, topic_ids) -> dict:
    """Topic id -> name through one Metadata request by id (v10+); ids it does not know stay out."""
    from kafka.protocol.metadata import MetadataRequest

    topic_ids = sorted(set(topic_ids), key=str)
    version = min(client.max_version(MetadataRequest), 12)
    if not topic_ids or version < 10:
        return {}
    request = MetadataRequest(version=version, allow_auto_topic_creation=False, topics=[
        MetadataRequest.MetadataRequestTopic(topic_id=tid, name=None) for tid in topic_ids])
    response = client.send(request, what="Metadata by topic id")
    return {t.topic_id: t.name for t in response.topics if not t.error_code and t.name}
