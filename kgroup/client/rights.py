"""What a dry run must know to be honest: would the real run be refused?

A dry run only describes, which needs Describe; the real run needs more — LeaveGroup and
OffsetCommit need Read on the group, OffsetDelete and DeleteGroups Delete, and OffsetCommit and
OffsetDelete Read on each topic (Kafka's KafkaApis). Kafka says what a principal may do without
acting: DescribeGroups v3+, ConsumerGroupDescribe and ShareGroupDescribe (a share group, which
DescribeGroups does not know) report a group's AuthorizedOperations, Metadata
v8+ each topic's, when asked (``include_*authorized_operations``), as the set bits of an int32 whose
positions are Kafka's AclOperation codes. A broker that does not say (an older version, or the
"not provided" value INT32_MIN) leaves the answer unknown: the dry run then claims nothing.
"""

from __future__ import annotations

from kgroup.views.model import GroupView
from kgroup.wire.authorization import denial
from kgroup.wire.cluster import ClusterClient, error_name

# Kafka's AclOperation codes (bit positions in AuthorizedOperations)
OPERATIONS = {"Read": 3, "Write": 4, "Create": 5, "Delete": 6, "Alter": 7, "Describe": 8}
NOT_PROVIDED = -(1 << 31)
WOULD_BE_REFUSED = "would be refused: "


def _allowed(field) -> set[str] | None:
    """The operation names of an AuthorizedOperations field: an int32, or the set of its bit
    positions as kafka-python decodes it (None for "not provided")."""
    if field is None or field == NOT_PROVIDED:
        return None
    bits = set(field) if isinstance(field, (set, frozenset)) else {b for b in range(32) if field & (1 << b)}
    return {name for name, code in OPERATIONS.items() if code in bits}


def group_operations(client: ClusterClient, view: GroupView) -> set[str] | None:
    """The operations the principal may do on the group (None: the broker does not say). Asked of
    the group's coordinator with the describe API of its type; a group the principal may not even
    Describe (GROUP_AUTHORIZATION_FAILED) allows nothing."""
    from kafka.protocol.admin import DescribeGroupsRequest

    from kgroup.protocol import ConsumerGroupDescribeRequest, ShareGroupDescribeRequest
    coordinator = view.coordinator or client.find_coordinator(view.group)
    if view.group_type == "share":     # DescribeGroups does not know a share group: no rights there
        if client.max_version(ShareGroupDescribeRequest) < 1:
            return None
        request = ShareGroupDescribeRequest(version=1, group_ids=[view.group], include_authorized_operations=True)
    elif view.group_type == "consumer":
        version = min(client.max_version(ConsumerGroupDescribeRequest), 1)
        if version < 0:
            return None
        request = ConsumerGroupDescribeRequest(version=version, group_ids=[view.group],
                                               include_authorized_operations=True)
    else:
        version = min(client.max_version(DescribeGroupsRequest), 5)
        if version < 3:
            return None
        request = DescribeGroupsRequest(version=version, groups=[view.group], include_authorized_operations=True)
    response = client.send(request, node_id=coordinator.node_id, what=f"the rights on group {view.group!r}")
    answer = next((g for g in response.groups if g.group_id == view.group), None)
    if answer is None:
        return None
    if answer.error_code:
        return set() if error_name(answer.error_code) == "GROUP_AUTHORIZATION_FAILED" else None
    return _allowed(answer.authorized_operations)


def topic_operations(client: ClusterClient, topics) -> dict[str, set[str] | None]:
    """Each topic's operations for the principal (None: unknown; empty: not even Describe)."""
    from kafka.protocol.metadata import MetadataRequest

    topics = sorted(set(topics))
    version = min(client.max_version(MetadataRequest), 12)
    if not topics or version < 8:
        return {t: None for t in topics}
    extra = {"include_cluster_authorized_operations": False} if version <= 10 else {}
    response = client.send(MetadataRequest(
        version=version, allow_auto_topic_creation=False, include_topic_authorized_operations=True,
        topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics], **extra),
        what="the rights on topics")
    out: dict[str, set[str] | None] = {t: None for t in topics}
    for t in response.topics:
        if t.name in out:
            refused = t.error_code and error_name(t.error_code) == "TOPIC_AUTHORIZATION_FAILED"
            # kafka-python names TopicAuthorizedOperations authorized_operations
            field = getattr(t, "authorized_operations", getattr(t, "topic_authorized_operations", None))
            out[t.name] = set() if refused else _allowed(field)
    return out


def group_refusal(client: ClusterClient, view: GroupView, operation: str) -> str | None:
    """``not authorized to Read group X`` when the broker says the real run would be refused."""
    allowed = group_operations(client, view)
    if allowed is None or operation in allowed:
        return None
    return denial("GROUP_AUTHORIZATION_FAILED", operation, view.group)


def refused_topics(client: ClusterClient, topics, operation: str = "Read") -> set[str]:
    """The topics the broker says the principal may not ``operation``."""
    return {t for t, allowed in topic_operations(client, topics).items()
            if allowed is not None and operation not in allowed}


def predicted(line: str, dry_run: bool) -> str:
    """A dry run's refusal line (``not authorized to ...``) says it is a prediction."""
    from kgroup.wire.authorization import is_denial

    return WOULD_BE_REFUSED + line if dry_run and is_denial(line) else line
