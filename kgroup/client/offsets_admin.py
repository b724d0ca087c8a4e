"""The operator's offset and group verbs on a live cluster: reset-offsets (plan, then OffsetCommit
as an admin), delete-offsets (OffsetDelete) and delete (DeleteGroups).

The plan itself is `client.reset`'s pure functions; this module fetches their inputs (describe,
OffsetFetch, ListOffsets, Metadata) and sends the writes to the group's coordinator.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from kgroup.views.connect import CONNECT_TYPE, worker_group_refusal
from kgroup.client.groups import (committed_offsets, describe_groups, group_exists, no_such_group, offsets_at,
                                  topic_partitions)
from kgroup.client.last_assignment import InstanceAssignment, instance_assignments
from kgroup.views.model import GroupView
from kgroup.client.reset import (TIMESTAMP_TARGETS, PartitionPlan, Target, active_members_error, empty_group_steps,
                                 plan_partition)
from kgroup.errors import KgroupError, KgroupUsageError
from kgroup.wire.authorization import NotAuthorized, check, failure
from kgroup.wire.cluster import ClusterClient, TransportError, error_name, retriable_coordinator_error

INACTIVE_STATES = ("Empty", "Dead")
NO_OFFSETS = "it commits no offsets here (the coordinator refuses OffsetCommit and OffsetDelete for it)"
EARLIEST, LATEST = -2, -1


@dataclass
class ResetReport:
    group: str
    state: str
    executed: bool
    offsets: list[PartitionPlan] = field(default_factory=list)
    instances: list[InstanceAssignment] | None = None   # --instance-id: where each one's partitions came from
    execute_refused: str | None = None   # a plan of a group that is not Empty: what --execute awaits

    @property
    def failed(self) -> int:
        return sum(1 for p in self.offsets if p.error)

    def to_json(self) -> dict:
        doc = {"group": self.group, "state": self.state, "executed": self.executed}
        if self.instances is not None:
            doc["assignment_source"] = [i.to_json() for i in self.instances]
        doc["offsets"] = [p.to_json() for p in self.offsets]
        return doc


def describe_one(client: ClusterClient, group: str) -> GroupView:
    view = describe_groups(client, [group])[0]
    if view.error and not view.error.startswith("GROUP_ID_NOT_FOUND"):
        raise failure(view.error, f"group {group!r}: describe failed: {view.error}")
    if view.coordinator is None:
        view.coordinator = client.find_coordinator(group)
    return view


def plan_partitions(client: ClusterClient, partitions, missing, target: Target, current: dict,
                    file_offsets=None) -> list[PartitionPlan]:
    """Each selected partition's plan from its current offset (committed, or a share group's start
    offset) and its log's start, end and (for a time target) offset at that time, with the rows of
    partitions that do not exist (`missing`), by topic and partition: every group type's reset."""
    timed = target.kind in TIMESTAMP_TARGETS
    found = offsets_at(client, partitions, (EARLIEST, LATEST) + ((target.value,) if timed else ()))
    starts, ends = found[EARLIEST], found[LATEST]
    by_time = found[target.value] if timed else {}
    plans = [plan_partition(t, p, target, current.get((t, p)), starts.get((t, p)), ends.get((t, p)),
                            timestamp_offset=_int_or_none(by_time.get((t, p))),
                            file_offset=(file_offsets or {}).get((t, p)))
             for t, p in partitions]
    return sorted(plans + missing, key=lambda r: (r.topic, r.partition))


def select_partitions(client: ClusterClient, selectors, all_topics: bool, committed, file_offsets,
                      owned) -> tuple[list[tuple[str, int]], list[PartitionPlan]]:
    """The partitions to reset, and a failed plan row for each selected one that does not exist.
    `--all-topics`: every partition the group has an offset for (Kafka's rule); `--topic T`: all of
    T's partitions; `--from-file`: the file's partitions; `--instance-id` narrows any of them (or
    selects alone)."""
    chosen: set[tuple[str, int]] = set()
    missing: list[PartitionPlan] = []
    if all_topics:
        chosen |= set(committed)
    counts = topic_partitions(client, [t for t, _ in selectors])
    for topic, parts in selectors:
        existing = counts.get(topic)
        if isinstance(existing, str):
            missing.append(PartitionPlan(topic, -1, None, None, None, None, error=existing))
            continue
        for p in parts if parts is not None else existing:
            if p in existing:
                chosen.add((topic, p))
            else:
                missing.append(PartitionPlan(topic, p, committed.get((topic, p)), None, None, None,
                                             error="UNKNOWN_TOPIC_OR_PARTITION"))
    if file_offsets is not None:
        chosen |= set(file_offsets)
    if owned is not None:
        chosen = (chosen & owned) if (chosen or missing or all_topics or file_offsets) else set(owned)
    return sorted(chosen), missing


def _why_none(instances, all_topics: bool) -> str:
    """Why a reset selected nothing, as far as kgroup can tell."""
    empty = [i for i in (instances or ()) if not i.partitions]
    if empty:
        named = ", ".join(f"{i.instance_id} ({'its current' if i.source == 'current' else 'the last'} "
                          f"assignment)" for i in empty)
        return (f" (--instance-id {named} owns no partition: an empty assignment, or one that is not the "
                f"consumer protocol's)")
    return " (it has no committed offset for --all-topics)" if all_topics else ""


def plan_reset(client: ClusterClient, group: str, target: Target, selectors=(), all_topics=False,
               file_offsets=None, instance_ids=(), execute=False, view: GroupView | None = None) -> ResetReport:
    """Describe the group (unless `view` is its description), choose its partitions, plan each one;
    with `execute`, commit the plan when the group is Empty or Dead (else a KgroupError naming its
    members). A plan of a group that is neither carries what makes it Empty (`execute_refused`), the
    refusal's own words."""
    view = view or describe_one(client, group)
    if view.group_type == CONNECT_TYPE:
        raise KgroupError(worker_group_refusal(group, NO_OFFSETS))
    exists = group_exists(view)
    state = view.state if exists else "Dead"
    if execute and exists and state not in INACTIVE_STATES:
        raise KgroupError(active_members_error(group, state, view.members))
    instances = instance_assignments(client, view, instance_ids) if instance_ids else None
    owned = {tp for i in instances for tp in i.partitions} if instances is not None else None
    committed = committed_offsets(client, group, view.coordinator) if exists else {}
    partitions, missing = select_partitions(client, selectors, all_topics, committed, file_offsets, owned)
    if not partitions and not missing:
        raise KgroupUsageError(f"group {group!r}: no partition selected" + _why_none(instances, all_topics))
    plans = plan_partitions(client, partitions, missing, target, committed, file_offsets)
    report = ResetReport(group, state, execute, plans, instances)
    if exists and state not in INACTIVE_STATES:        # a plan only: say now what --execute will need
        report.execute_refused = empty_group_steps(group, view.members)
    if execute:
        commit_plan(client, group, view.coordinator, [p for p in plans if not p.error])
    else:
        mark_refusals(client, view, plans)
    return report


def mark_refusals(client: ClusterClient, view: GroupView, plans: list[PartitionPlan]) -> None:
    """A plan's rows get the error the commit would get for want of a right: OffsetCommit needs Read
    on the group (else every partition GROUP_AUTHORIZATION_FAILED) and Read on each topic."""
    from kgroup.client.rights import group_refusal, refused_topics

    rows = [p for p in plans if not p.error]
    if not rows:
        return
    if group_refusal(client, view, "Read"):
        denied, error = {p.topic for p in rows}, "GROUP_AUTHORIZATION_FAILED"
    else:
        denied, error = refused_topics(client, {p.topic for p in rows}), "TOPIC_AUTHORIZATION_FAILED"
    for p in rows:
        if p.topic in denied:
            p.error = error


def _int_or_none(value):
    return value if isinstance(value, int) else None


def plans_by_topic(plans: list[PartitionPlan]) -> dict[str, list[PartitionPlan]]:
    """topic -> its partitions' plans, in plan order: the shape every offsets request takes."""
    by_topic: dict[str, list[PartitionPlan]] = defaultdict(list)
    for plan in plans:
        by_topic[plan.topic].append(plan)
    return by_topic


def commit_plan(client: ClusterClient, group: str, coordinator, plans: list[PartitionPlan]) -> None:
    """One OffsetCommit as an admin (generation -1, no member id), each partition's error on its row."""
    from kafka.protocol.consumer import OffsetCommitRequest

    if not plans:
        return
    version = min(client.max_version(OffsetCommitRequest), 8)
    if version < 2:
        raise KgroupError("the broker does not support OffsetCommit v2+")
    T = OffsetCommitRequest.OffsetCommitRequestTopic
    P = T.OffsetCommitRequestPartition
    by_topic = plans_by_topic(plans)
    request = OffsetCommitRequest(
        version=version, group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
        retention_time_ms=-1,
        topics=[T(name=t, partitions=[P(partition_index=p.partition, committed_offset=p.new, committed_leader_epoch=-1,
                                        commit_timestamp=-1, committed_metadata="") for p in rows])
                for t, rows in by_topic.items()])
    response, _ = client.to_coordinator(group, lambda _c: request, f"OffsetCommit for group {group!r}",
                                        code_of=_partition_code, coordinator=coordinator)
    index = {(p.topic, p.partition): p for p in plans}
    for topic in response.topics:
        for part in topic.partitions:
            if part.error_code and (topic.name, part.partition_index) in index:
                index[(topic.name, part.partition_index)].error = error_name(part.error_code)


def _partition_code(response) -> int:
    """A per-partition answer's error code to judge for a retry: the first coordinator error."""
    return next((p.error_code for t in response.topics for p in t.partitions
                 if retriable_coordinator_error(p.error_code)), getattr(response, "error_code", 0) or 0)


def offsets_to_delete(client: ClusterClient, group: str, selectors, coordinator) -> dict[str, list[int]]:
    """topic -> the partitions OffsetDelete is asked for: TOPIC:P,P as given, a whole topic every
    partition the group has an offset for (else every partition of the topic), as Kafka's tool does;
    an unknown topic has none."""
    wanted: dict[str, list[int]] = {}
    whole = [t for t, parts in selectors if parts is None]
    committed = committed_offsets(client, group, coordinator) if whole else {}
    counts = topic_partitions(client, whole) if whole else {}
    for topic, parts in selectors:
        if parts is None:
            parts = sorted(p for t, p in committed if t == topic)
            if not parts and isinstance(counts.get(topic), list):
                parts = counts[topic]
        wanted.setdefault(topic, [])
        wanted[topic] = sorted(set(wanted[topic]) | set(parts))
    return wanted


def delete_offsets(client: ClusterClient, group: str, selectors) -> list[dict]:
    """OffsetDelete for the selected partitions (a whole topic: every partition the group has an
    offset for, as Kafka's tool does): one row per partition with its error
    (GROUP_SUBSCRIBED_TO_TOPIC while a member still reads the topic)."""
    from kafka.protocol.consumer import OffsetDeleteRequest

    if client.max_version(OffsetDeleteRequest) < 0:
        raise KgroupError("the broker does not support OffsetDelete (Kafka 2.4+)")
    coordinator = client.find_coordinator(group)
    wanted = offsets_to_delete(client, group, selectors, coordinator)
    T = OffsetDeleteRequest.OffsetDeleteRequestTopic
    request = OffsetDeleteRequest(version=0, group_id=group, topics=[
        T(name=t, partitions=[T.OffsetDeleteRequestPartition(partition_index=p) for p in ps])
        for t, ps in wanted.items() if ps])
    rows = [{"topic": t, "partition": None, "error": "UNKNOWN_TOPIC_OR_PARTITION"}
            for t, ps in wanted.items() if not ps]
    if request.topics:
        response, coordinator = client.to_coordinator(group, lambda _c: request, f"OffsetDelete for group {group!r}",
                                                      coordinator=coordinator)
        if response.error_code:
            check(error_name(response.error_code), "Delete", group)
            if error_name(response.error_code) == "GROUP_ID_NOT_FOUND":  # as describe and remove-members say it
                if describe_groups(client, [group])[0].group_type == CONNECT_TYPE:  # serve answers it for them too
                    raise KgroupError(worker_group_refusal(group, NO_OFFSETS))
                raise KgroupError(no_such_group(group, coordinator))
            raise KgroupError(f"group {group!r}: OffsetDelete failed: {error_name(response.error_code)}")
        for topic in response.topics:
            for part in topic.partitions:
                rows.append({"topic": topic.name, "partition": part.partition_index,
                             "error": error_name(part.error_code) if part.error_code else None})
    return sorted(rows, key=lambda r: (r["topic"], -1 if r["partition"] is None else r["partition"]))


def delete_groups(client: ClusterClient, groups, dry_run: bool = False) -> list[dict]:
    """DeleteGroups per coordinator, one row per group with its error (NON_EMPTY_GROUP,
    GROUP_ID_NOT_FOUND). `dry_run` describes instead and reports the error Kafka would give."""
    from kafka.protocol.admin import DeleteGroupsRequest

    rows = {}
    if dry_run:
        from kgroup.client.rights import group_refusal

        for view in describe_groups(client, list(groups)):
            if view.error and view.error.startswith("GROUP_AUTHORIZATION_FAILED"):
                error = "GROUP_AUTHORIZATION_FAILED"       # not even Describe: no Delete either
            elif group_refusal(client, view, "Delete"):    # Kafka checks the right first
                error = "GROUP_AUTHORIZATION_FAILED"
            elif not group_exists(view):
                error = "GROUP_ID_NOT_FOUND"
            elif view.state not in INACTIVE_STATES:
                error = "NON_EMPTY_GROUP"
            else:
                error = None
            rows[view.group] = {"group": view.group, "state": view.state or "Dead", "error": error}
        return [rows[g] for g in dict.fromkeys(groups)]
    version = min(client.max_version(DeleteGroupsRequest), 2)
    if version < 0:
        raise KgroupError("the broker does not support DeleteGroups (Kafka 1.1+)")
    by_coordinator = defaultdict(list)
    for group in dict.fromkeys(groups):
        try:
            by_coordinator[client.find_coordinator(group)].append(group)
        except NotAuthorized:  # no Describe, so no Delete (Delete implies Describe): this group only
            rows[group] = {"group": group, "state": None, "error": "GROUP_AUTHORIZATION_FAILED"}
    for coordinator, names in by_coordinator.items():
        try:
            response = client.send(DeleteGroupsRequest(version=version, groups_names=names),
                                   node_id=coordinator.node_id, what=f"DeleteGroups on {coordinator}")
            codes = {r.group_id: r.error_code for r in response.results}
        except TransportError:  # the coordinator stopped: each group is asked of its new one below
            codes = {}
        for name in names:
            if name in codes and not retriable_coordinator_error(codes[name]):
                code = codes[name]
            elif codes and name not in codes:
                continue  # left out of the answer: MISSING_FROM_RESPONSE below
            else:  # its coordinator moved: found again for this group alone, as Kafka's AdminClient retries it
                response, _ = client.to_coordinator(
                    name, lambda _c, name=name: DeleteGroupsRequest(version=version, groups_names=[name]),
                    f"DeleteGroups for group {name!r}",
                    code_of=lambda r: r.results[0].error_code if r.results else 0)
                if not response.results:
                    continue
                code = response.results[0].error_code
            rows[name] = {"group": name, "state": None, "error": error_name(code) if code else None}
    return [rows.get(g, {"group": g, "state": None, "error": "MISSING_FROM_RESPONSE"}) for g in dict.fromkeys(groups)]
