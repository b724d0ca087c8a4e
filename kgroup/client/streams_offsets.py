"""A streams group's (KIP-1071) offsets as kafka-streams-groups handles them (Kafka 4.4's
StreamsGroupCommand): reset-offsets of its input topics (and, asked, the deletion of its internal
topics after it: `streams_topics`), delete-offsets' --all-input-topics and its dry run's rule, and why
remove-members cannot act on it.

Kafka's Admin maps its streams-group calls onto the consumer-group wire requests
(alterStreamsGroupOffsets: OffsetCommit as an admin, deleteStreamsGroupOffsets: OffsetDelete,
deleteStreamsGroups: DeleteGroups), so kgroup sends the same requests; what differs is which
partitions are chosen and the coordinator's rules for a streams group (StreamsGroup.java): an admin
commit only while the group has no member, DeleteGroups only while it is Empty, OffsetDelete refused
(GROUP_SUBSCRIBED_TO_TOPIC) for a source or repartition-source topic of its topology while it is
neither Empty nor Dead. Kafka 4.4 has no admin removal of a streams group's member: LeaveGroup
answers UNKNOWN_MEMBER_ID for one ("Group ... not found"), and Admin has no removeMembers call for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgroup.client.groups import committed_offsets, topic_partitions
from kgroup.client.offsets_admin import (ResetReport, commit_plan, describe_one, mark_refusals,
                                         plan_partitions, select_partitions)
from kgroup.client.streams_topics import (input_topics, internal_topic_failures, internal_topic_lines,
                                          internal_topics, settle_internal_topics)
from kgroup.errors import KgroupError, KgroupUsageError
from kgroup.views.streams import STREAMS_TYPE, StreamsGroupView
from kgroup.wire.cluster import ClusterClient

INACTIVE_STATES = ("Empty", "Dead")


def read_topics(view: StreamsGroupView) -> set[str]:
    """Source and repartition-source topics: what the coordinator counts as the group's subscription
    (StreamsTopology.sourceTopicMap)."""
    return {t for s in view.subtopologies for t in s["source_topics"] + s["repartition_source_topics"]}


def subscribed_topics(view: StreamsGroupView) -> set[str]:
    """The topics OffsetDelete refuses (GROUP_SUBSCRIBED_TO_TOPIC): none while the group is Empty
    or Dead (StreamsGroup.isSubscribedToTopic), else those it reads."""
    return set() if view.state in INACTIVE_STATES else read_topics(view)


def make_empty_steps(view: StreamsGroupView) -> str:
    """What makes a streams group Empty: its instances stopped, and the static ones that closed
    without leaving (member epoch -2) gone when their session times out — Kafka 4.4 cannot remove a
    streams group's member as an admin."""
    def listed(names):
        return ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")

    running = [m.group_instance_id or m.member_id for m in view.members if not m.left]
    left = [m.group_instance_id for m in view.members if m.left]
    steps = []
    if running:
        steps.append(f"stop the application's instances ({listed(running)})")
    if left:
        steps.append(f"{listed(left)} closed but the group keeps static members until their session times out "
                     "(Kafka 4.4 cannot remove a streams group's member)")
    return "; ".join(steps) + f", then wait (kgroup wait {view.group} --state Empty)"


def active_group_error(view: StreamsGroupView) -> str:
    """kafka-streams-groups' rule for --reset-offsets --execute, as one line."""
    return (f"streams group {view.group!r} is {view.state}, not Empty: offsets can only be reset while no "
            f"instance of the application is in the group; {make_empty_steps(view)}")


def member_removal_refusal(group: str) -> str:
    """Why `remove-members` cannot act on a streams group."""
    return (f"group {group!r} is a streams group: Kafka 4.4 cannot remove its members as an admin (its "
            "LeaveGroup does not apply to streams groups and Admin has no such call); stop the instance "
            "(KafkaStreams.close with leaveGroup) or let its session time out")


def select_streams_partitions(client: ClusterClient, view: StreamsGroupView, selectors, all_topics: bool,
                              committed, file_offsets):
    """The partitions kafka-streams-groups resets -> (chosen, failed rows): `--all-topics` the input
    topics' committed partitions; `--topic` the given ones, each of which the group must have a
    committed offset for (Kafka's tool otherwise resets nothing: "One or more topics are not part of
    the group"); `--from-file` the file's."""
    chosen, missing = select_partitions(client, selectors, False, committed, file_offsets, None)
    if selectors:
        foreign = [tp for tp in chosen if tp not in committed and not (file_offsets and tp in file_offsets)]
        if foreign:
            named = ", ".join(f"{t}:{p}" for t, p in foreign[:10]) + (" ..." if len(foreign) > 10 else "")
            raise KgroupError(f"streams group {view.group!r} has no committed offset for {named}: a streams group "
                              f"resets only partitions it has committed (its input topics: "
                              f"{', '.join(sorted(input_topics(view))) or 'none'})")
    if all_topics:
        chosen = sorted(set(chosen) | {tp for tp in committed if tp[0] in input_topics(view)})
    return chosen, missing


def require_streams_selectors(instance_ids) -> None:
    if instance_ids:
        raise KgroupUsageError("--instance-id selects the partitions a consumer owns; a streams group's members "
                               "run tasks: select with --topic, --all-topics or --from-file")


@dataclass
class StreamsResetReport(ResetReport):
    """A streams group's reset: with --internal-topics, what became of its internal topics."""
    internal_topics: list | None = None      # [{"topic", "action", "error"}], as `delete` has them

    def to_json(self) -> dict:
        doc = super().to_json()
        if self.internal_topics is not None:
            doc["internal_topics"] = self.internal_topics
        return doc

    @property
    def topic_failures(self) -> int:
        return internal_topic_failures([{"internal_topics": self.internal_topics}])


def plan_streams_reset(client: ClusterClient, group: str, target, selectors=(), all_topics=False,
                       file_offsets=None, instance_ids=(), execute=False, view: StreamsGroupView | None = None):
    """`plan_reset` of a streams group, as kafka-streams-groups --reset-offsets: its input topics'
    partitions planned with the same targets; with `execute`, committed as an admin while the group
    is Empty (else a KgroupError naming its instances). Internal topics are not reset; with
    --internal-topics `reset_internal_topics` deletes them afterwards."""
    require_streams_selectors(instance_ids)
    view = view or describe_one(client, group)
    if execute and view.state not in INACTIVE_STATES:
        raise KgroupError(active_group_error(view))
    committed = committed_offsets(client, view.group, view.coordinator)
    partitions, missing = select_streams_partitions(client, view, selectors, all_topics, committed, file_offsets)
    if not partitions and not missing:
        raise KgroupUsageError(f"streams group {view.group!r}: no partition selected"
                               + (" (it has no committed offset of an input topic)" if all_topics else ""))
    plans = plan_partitions(client, partitions, missing, target, committed, file_offsets)
    report = StreamsResetReport(view.group, view.state, execute, plans)
    if view.state not in INACTIVE_STATES:
        report.execute_refused = make_empty_steps(view)
    if execute:
        commit_plan(client, view.group, view.coordinator, [p for p in plans if not p.error])
    else:
        mark_refusals(client, view, plans)
    return report


def reset_internal_topics(client: ClusterClient, view: StreamsGroupView, report: StreamsResetReport) -> list[str]:
    """kafka-streams-groups --reset-offsets --execute --delete-all-internal-topics: once the offsets are
    committed, DeleteTopics for the group's internal topics that exist (a plan: the ones it would
    delete), so the application rebuilds its state from the reset input. -> the lines to say."""
    deletable, foreign = internal_topics(view)
    existing = topic_partitions(client, deletable)
    found = {view.group: ([t for t in deletable if isinstance(existing.get(t), list)], foreign)}
    committed = not report.executed or not report.failed      # Kafka's tool: only after the whole commit
    row = {"group": view.group, "error": None if committed else "NOT_ALL_COMMITTED",
           "kept_because": "not every offset was committed"}
    settle_internal_topics(client, [row], found, True, not report.executed)
    report.internal_topics = row["internal_topics"]
    return internal_topic_lines([row], found)


def input_topic_selectors(client: ClusterClient, group: str) -> list[tuple[str, list[int]]]:
    """kafka-streams-groups --delete-offsets --all-input-topics: the partitions of the topology's
    source topics the group has committed offsets for, as `--topic T:P,...` selectors."""
    view = describe_one(client, group)
    if view.group_type != STREAMS_TYPE:
        raise KgroupUsageError(f"--all-input-topics: group {group!r} is not a streams group")
    sources = input_topics(view)
    partitions: dict[str, list[int]] = {}
    for topic, partition in sorted(committed_offsets(client, group, view.coordinator)):
        if topic in sources:
            partitions.setdefault(topic, []).append(partition)
    if not partitions:
        raise KgroupError(f"streams group {group!r} has no committed offset of an input topic "
                          f"({', '.join(sorted(sources)) or 'none'})")
    return sorted(partitions.items())
