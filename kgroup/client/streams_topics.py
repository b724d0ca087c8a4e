"""A streams group's (KIP-1071) internal topics as kafka-streams-groups finds and deletes them
(Kafka 4.4's StreamsGroupCommand.retrieveInternalTopics): the repartition and changelog topics its
topology names, read with StreamsGroupDescribe before the group is deleted (the topology goes with
it), of which only those named as Kafka Streams names internal topics are ever deleted (DeleteTopics,
which a broker forwards to the controller): `delete --internal-topics` and `reset-offsets --execute
--internal-topics`.
"""

from __future__ import annotations

import re

from kgroup.client.groups import describe_groups, list_groups, topic_partitions
from kgroup.errors import KgroupError
from kgroup.views.streams import STREAMS_TYPE, StreamsGroupView
from kgroup.wire.cluster import ClusterClient, error_name

# StreamsGroupCommand.matchesInternalTopicFormat: the suffixes Kafka Streams gives its internal topics
_INTERNAL_SUFFIXES = ("-changelog", "-repartition", "-subscription-registration-topic",
                      "-subscription-response-topic")
_FK_JOIN = re.compile(r".+-KTABLE-FK-JOIN-SUBSCRIPTION-(REGISTRATION|RESPONSE)-\d+-topic")


def input_topics(view: StreamsGroupView) -> set[str]:
    """The topology's source topics (not the repartition topics it reads): what
    `--all-topics` resets, kafka-streams-groups' --all-input-topics."""
    return {t for s in view.subtopologies for t in s["source_topics"]}


def inferred_internal(topic: str, application_id: str) -> bool:
    """StreamsGroupCommand.isInferredInternalTopic: named `{application id}-...` with an internal suffix."""
    return topic.startswith(application_id + "-") and (topic.endswith(_INTERNAL_SUFFIXES)
                                                          or bool(_FK_JOIN.fullmatch(topic)))


def internal_topics(view: StreamsGroupView) -> tuple[list[str], list[str]]:
    """(the group's repartition and changelog topics that deleting it may delete, those its topology
    names but that are not named as Kafka Streams names internal topics, which Kafka's tool keeps)."""
    sources = input_topics(view)
    named = sorted({t for s in view.subtopologies for t in s["repartition_source_topics"] + s["state_changelog_topics"]}
                   - sources)
    return ([t for t in named if inferred_internal(t, view.group)],
            [t for t in named if not inferred_internal(t, view.group)])


def delete_topics(client: ClusterClient, topics) -> dict[str, str | None]:
    """DeleteTopics (a broker forwards it to the controller) -> topic: error name or None."""
    from kafka.protocol.admin import DeleteTopicsRequest

    topics = sorted(set(topics))
    if not topics:
        return {}
    version = min(client.max_version(DeleteTopicsRequest), 5)
    if version < 0:
        raise KgroupError("the broker does not support DeleteTopics")
    response = client.send(DeleteTopicsRequest(version=version, topic_names=topics,
                                               timeout_ms=int(client.timeout_s * 1000)),
                           what="DeleteTopics for the group's internal topics")
    answered = {r.name: (error_name(r.error_code) if r.error_code else None) for r in response.responses}
    return {t: answered.get(t, "MISSING_FROM_RESPONSE") for t in topics}


def streams_internal_topics(client: ClusterClient, groups, required: bool = True):
    """({group: (its internal topics that exist, topology topics not named as internal ones)},
    {group: why they could not be read}) for the streams groups among `groups`, read before they are
    deleted (their topology goes with them). Not `required` (nobody asked to delete them: they are
    only named), a failure to read them is no failure of the verb: nothing is named."""
    try:
        wanted = set(groups)
        streams = [g.group for g in list_groups(client, types=[STREAMS_TYPE]) if g.group in wanted]
        found, unread = {}, {}
        for view in describe_groups(client, streams) if streams else ():
            if view.error or view.group_type != STREAMS_TYPE:
                unread[view.group] = view.error or f"not a streams group now ({view.group_type})"
                continue
            deletable, foreign = internal_topics(view)
            existing = topic_partitions(client, deletable)
            found[view.group] = ([t for t in deletable if isinstance(existing.get(t), list)], foreign)
    except KgroupError:
        if required:
            raise
        return {}, {}
    return found, unread


def settle_internal_topics(client: ClusterClient, rows: list[dict], found, delete: bool, dry_run: bool) -> None:
    """A streams group's delete row gets `internal_topics`: [{"topic", "action", "error"}] (the rows of
    other groups stay as they were), action "deleted", "failed", "kept" (no --internal-topics, or the group was not deleted),
    or in a dry run "would-delete"; with `delete`, DeleteTopics for the deleted groups' topics."""
    doomed = [t for r in rows if r["error"] is None and r["group"] in found for t in found[r["group"]][0]]
    answers = delete_topics(client, doomed) if delete and not dry_run else {}
    for row in (r for r in rows if r["group"] in found):
        entries = []
        for topic in found[row["group"]][0]:
            if row["error"] is None and delete:
                error = answers.get(topic) if not dry_run else None
                action = "would-delete" if dry_run else ("failed" if error else "deleted")
            else:
                error, action = None, "kept"
            entries.append({"topic": topic, "action": action, "error": error})
        row["internal_topics"] = entries


def internal_topic_lines(rows: list[dict], found, unread=None) -> list[str]:
    """What delete says of each streams group's internal topics, one line each."""
    lines = [f"group {group!r}: its internal topics could not be read, none is deleted: {why}"
             for group, why in sorted((unread or {}).items())]
    for row in rows:
        entries = row.get("internal_topics") or []
        group = row["group"]
        for action, words in (("deleted", "deleted its internal topics"),
                              ("would-delete", "would delete its internal topics")):
            named = [e["topic"] for e in entries if e["action"] == action]
            if named:
                lines.append(f"group {group!r}: {words} {', '.join(named)}")
        kept = [e["topic"] for e in entries if e["action"] == "kept"]
        if kept:
            how = ("--internal-topics deletes them with the group" if row["error"] is None
                   else row.get("kept_because", "the group was not deleted"))
            lines.append(f"group {group!r}: internal topics kept: {', '.join(kept)} ({how})")
        for e in entries:
            if e["action"] == "failed":
                lines.append(f"group {group!r}: internal topic {e['topic']} not deleted: {e['error']}")
        for topic in found.get(group, ([], []))[1]:
            lines.append(f"group {group!r}: {topic} is not named as an internal topic of the group "
                         "(application id prefix and internal suffix) and is never deleted with it")
    return lines


def internal_topic_failures(rows: list[dict]) -> int:
    """Rows whose group was deleted but an internal topic was not (gone already does not count, as
    kafka-streams-groups does not count it)."""
    return sum(1 for r in rows if any(e["action"] == "failed" and e["error"] != "UNKNOWN_TOPIC_OR_PARTITION"
                                      for e in r.get("internal_topics") or []))
