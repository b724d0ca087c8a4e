"""reset-offsets and delete-offsets for KIP-932 share groups, as kafka-share-groups does them.

A share group commits no offsets: what it keeps per partition is the share-partition start offset
(every record before it acknowledged), read with DescribeShareGroupOffsets (`share_describe`),
set with AlterShareGroupOffsets (API 91) and dropped per topic with DeleteShareGroupOffsets
(API 92). Kafka's rules (GroupMetadataManager.alterShareGroupOffsets, ShareGroup.validateDeleteGroup,
ShareGroupCommand):

- both need the group Empty: the coordinator answers NON_EMPTY_GROUP while it has a member, and
  kafka-share-groups refuses a reset of a group that is not Empty or Dead before asking;
- AlterShareGroupOffsets creates the group when there is none (an offset for a group not started
  yet); it needs Read on the group and on each topic, DeleteShareGroupOffsets Delete on the group
  and Read on each topic;
- a reset takes --to-earliest, --to-latest, --to-current, --to-offset, --to-datetime or
  --from-file, on --topic T[:P,...], --all-topics (every partition the group has a start offset
  for) or the file's partitions; there is no --shift-by and no static member to select by;
- offsets are deleted per topic (a topic the group has no share partitions of:
  UNKNOWN_TOPIC_OR_PARTITION, "There is no offset information to delete").

The plan itself is `client.reset`'s (the same clamping into the log), with the start offset as
the current offset.
"""

from __future__ import annotations

from kgroup.client.groups import group_exists, listed_types, no_such_group, topic_partitions
from kgroup.client.offsets_admin import (ResetReport, describe_one, mark_refusals, plan_partitions, plans_by_topic,
                                         select_partitions)
from kgroup.client.reset import PartitionPlan, Target
from kgroup.client.share_describe import SHARE, attach_share_offsets
from kgroup.errors import KgroupError, KgroupUsageError
from kgroup.views.model import GroupView
from kgroup.wire.authorization import NotAuthorized, check
from kgroup.wire.cluster import ClusterClient, error_name, retriable_coordinator_error

EMPTY_STATES = ("Empty", "Dead")
SHARE_TARGETS = ("--to-earliest, --to-latest, --to-current, --to-offset, --to-datetime, --by-duration "
                 "or --from-file")


def is_share_group(client: ClusterClient, group: str) -> bool:
    """Whether the group's coordinator lists it as a share group (ListGroups v5+)."""
    return listed_types(client, client.find_coordinator(group)).get(group) == SHARE


def not_empty_error(group: str, view: GroupView, what: str) -> str:
    """Kafka's rule as one line: `what` (resets, deletes) only while the share group is Empty."""
    count = len(view.members)
    return (f"group {group!r} is a share group with {count} member(s) ({view.state}): Kafka {what} a share "
            f"group's offsets only while it is Empty; {empty_share_group_steps(group, view)}")


def empty_share_group_steps(group: str, view: GroupView) -> str:
    """What makes a share group Empty: a share consumer leaves when it closes (no static members)."""
    clients = sorted({m.client_id or m.member_id for m in view.members})
    named = ", ".join(clients[:10]) + (f" and {len(clients) - 10} more" if len(clients) > 10 else "")
    return (f"stop its consumers ({named or 'none listed'}: one leaves when it closes, else when its "
            f"session times out), then wait (kgroup wait {group} --state Empty)")


def start_offsets(client: ClusterClient, view: GroupView) -> dict[tuple[str, int], int | None]:
    """(topic, partition) -> share-partition start offset (None: not initialized yet) of every
    partition DescribeShareGroupOffsets lists for the group, as Kafka's Admin lists them."""
    probe = GroupView(view.group, view.state, SHARE, "", view.coordinator, group_type=SHARE)
    attach_share_offsets(client, probe)
    if probe.error:
        if "GROUP_AUTHORIZATION_FAILED" in probe.error:
            check("GROUP_AUTHORIZATION_FAILED", "Describe", view.group)
        raise KgroupError(probe.error)
    return {(r.topic, r.partition): (r.start_offset if r.start_offset is not None and r.start_offset >= 0 else None)
            for r in probe.offsets or [] if not r.error}


def plan_share_reset(client: ClusterClient, group: str, target: Target, selectors=(), all_topics=False,
                     file_offsets=None, instance_ids=(), execute=False, view=None):
    """A share group's reset-offsets (`offsets_admin.plan_reset`'s arguments): the plan (and with
    `execute`, AlterShareGroupOffsets) of new start offsets. Refused (KgroupError, exit 1) with
    --execute while the group has members."""

    view = view or describe_one(client, group)
    if instance_ids:
        raise KgroupUsageError(f"group {group!r} is a share group: --instance-id selects static members' "
                               f"partitions, and a share group has none (its members share every partition)")
    if target.kind == "shift-by":
        raise KgroupUsageError(f"group {group!r} is a share group: --shift-by is not a reset of a share group's "
                               f"start offsets (as kafka-share-groups); use {SHARE_TARGETS}")
    exists = group_exists(view)
    state = view.state if exists else "Dead"
    if execute and exists and state not in EMPTY_STATES:
        raise KgroupError(not_empty_error(group, view, "resets"))
    current = start_offsets(client, view) if exists else {}
    partitions, missing = select_partitions(client, selectors, all_topics, current, file_offsets, None)
    if not partitions and not missing:
        raise KgroupUsageError(f"group {group!r}: no partition selected"
                               + (" (it has no share-partition start offset for --all-topics)" if all_topics else ""))
    plans = plan_partitions(client, partitions, missing, target, current, file_offsets)
    report = ResetReport(group, state, execute, plans)
    if exists and state not in EMPTY_STATES:
        report.execute_refused = empty_share_group_steps(group, view)
    if execute:
        alter_start_offsets(client, view, [p for p in plans if not p.error])
    else:
        mark_refusals(client, view, plans)   # AlterShareGroupOffsets: Read on the group and each topic
    return report


def alter_start_offsets(client: ClusterClient, view: GroupView, plans: list[PartitionPlan]) -> None:
    """One AlterShareGroupOffsets to the coordinator, each partition's error on its row."""
    from kgroup.protocol import AlterShareGroupOffsetsRequest

    if not plans:
        return
    group = view.group
    if client.max_version(AlterShareGroupOffsetsRequest) < 0:
        raise KgroupError("the broker does not support AlterShareGroupOffsets (Kafka 4.1+)")
    T = AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestTopic
    P = T.AlterShareGroupOffsetsRequestPartition
    by_topic = plans_by_topic(plans)
    request = AlterShareGroupOffsetsRequest(version=0, group_id=group, topics=[
        T(topic_name=t, partitions=[P(partition_index=p.partition, start_offset=p.new) for p in rows])
        for t, rows in by_topic.items()])
    response, _ = client.to_coordinator(group, lambda _c: request, f"AlterShareGroupOffsets for group {group!r}",
                                        code_of=_alter_code, coordinator=view.coordinator)
    if response.error_code:
        _top_level(response, view, "AlterShareGroupOffsets", "Read", "resets")
    index = {(p.topic, p.partition): p for p in plans}
    for topic in response.responses:
        for part in topic.partitions:
            row = index.get((topic.topic_name, part.partition_index))
            if part.error_code and row is not None:
                row.error = error_name(part.error_code)


def _alter_code(response) -> int:
    return response.error_code or next((p.error_code for t in response.responses for p in t.partitions
                                        if retriable_coordinator_error(p.error_code)), 0)


def _top_level(response, view: GroupView, api: str, operation: str, what: str) -> None:
    """Raise `api`'s top-level error as one line (`operation`: the group right it needs)."""
    group, name = view.group, error_name(response.error_code)
    check(name, operation, group)
    if name == "NON_EMPTY_GROUP":         # a member joined since the describe
        raise KgroupError(not_empty_error(group, view, what) + " (NON_EMPTY_GROUP)")
    if name == "GROUP_ID_NOT_FOUND":
        raise KgroupError(no_such_group(group, view.coordinator))
    message = response.error_message
    raise KgroupError(f"group {group!r}: {api} failed: {name}" + (f": {message}" if message else ""))


def _whole_topics(group: str, selectors) -> list[str]:
    for topic, parts in selectors:
        if parts is not None:
            raise KgroupUsageError(f"bad --topic {topic}:{','.join(map(str, parts))}: group {group!r} is a share "
                                   f"group, whose offsets are deleted per topic (give --topic {topic})")
    return list(dict.fromkeys(t for t, _ in selectors))


def delete_share_offsets(client: ClusterClient, group: str, selectors, dry_run: bool = False) -> list[dict]:
    """DeleteShareGroupOffsets for whole topics: one row per topic (partition None) with its error.
    `dry_run` predicts each row from the group's description, start offsets and the rights."""

    topics = _whole_topics(group, selectors)
    view = describe_one(client, group)
    if dry_run:
        return _plan_delete(client, view, topics)
    from kgroup.protocol import DeleteShareGroupOffsetsRequest

    if client.max_version(DeleteShareGroupOffsetsRequest) < 0:
        raise KgroupError("the broker does not support DeleteShareGroupOffsets (Kafka 4.1+)")
    T = DeleteShareGroupOffsetsRequest.DeleteShareGroupOffsetsRequestTopic
    request = DeleteShareGroupOffsetsRequest(version=0, group_id=group, topics=[T(topic_name=t) for t in topics])
    response, _ = client.to_coordinator(group, lambda _c: request, f"DeleteShareGroupOffsets for group {group!r}",
                                        coordinator=view.coordinator)
    if response.error_code:
        _top_level(response, view, "DeleteShareGroupOffsets", "Delete", "deletes")
    answered = {r.topic_name: (error_name(r.error_code) if r.error_code else None) for r in response.responses}
    return [{"topic": t, "partition": None, "error": answered.get(t, "MISSING_FROM_RESPONSE")} for t in sorted(topics)]


def _plan_delete(client: ClusterClient, view: GroupView, topics: list[str]) -> list[dict]:
    """The rows DeleteShareGroupOffsets would answer (KafkaApis: Delete on the group, then Read on
    each topic; the coordinator: the group Empty, then each topic known and initialized)."""
    from kgroup.client.rights import WOULD_BE_REFUSED, group_refusal, refused_topics

    group = view.group
    refusal = group_refusal(client, view, "Delete")
    if refusal:
        raise NotAuthorized(WOULD_BE_REFUSED + refusal)
    if not group_exists(view):
        raise KgroupError(no_such_group(group, view.coordinator))
    if view.state not in EMPTY_STATES:
        raise KgroupError(not_empty_error(group, view, "deletes"))
    initialized = {t for t, _ in start_offsets(client, view)}
    denied = refused_topics(client, topics)
    existing = topic_partitions(client, topics)
    rows = []
    for t in sorted(topics):
        if t in denied:
            error = "TOPIC_AUTHORIZATION_FAILED"
        elif not isinstance(existing.get(t), list) or t not in initialized:
            error = "UNKNOWN_TOPIC_OR_PARTITION"
        else:
            error = None
        rows.append({"topic": t, "partition": None, "error": error})
    return rows
