"""Regex subscriptions of a consumer group (Kafka's ``GroupMetadataManager.maybeUpdateRegularExpressions``,
``refreshRegularExpressions`` and ``handleRegularExpressionsResult``).

A member subscribes by SubscribedTopicRegex (ConsumerGroupHeartbeat v1); the group keeps one
resolution per regex in use — the topic names of the metadata image the regex fully matches — as a
ConsumerGroupRegularExpression record (type 16), and a regex no member uses any more is tombstoned.
The resolved topics count as the members' subscriptions (``ConsumerGroup.topics_of``).

Deviation from Kafka 4.0, on purpose: Kafka resolves regexes asynchronously (at most every 10 s, off
the coordinator thread), so a member joining with a regex first gets an empty assignment and the
group epoch bumps when the resolution lands. kgroup's coordinator is pure and single-threaded, so it
resolves inside the heartbeat: a new regex is resolved at once. As in Kafka, the group's regexes are
re-resolved at a heartbeat after the topic image changed (``GroupCoordinator.set_topics``), at most
once per ``REGEX_REFRESH_INTERVAL_MS`` (10 s) since the last resolution, and a refresh writes a record
for every regex it resolved; the epoch bumps only when some regex's topics changed. The records and
epochs are Kafka's; only a new regex's resolution is earlier.
"""

from __future__ import annotations

from typing import Mapping, NamedTuple

from . import records as rec
from .group import ConsumerGroup, ConsumerGroupMember
from .topic_regex import matching_topics


REGEX_REFRESH_INTERVAL_MS = 10_000     # Kafka's GroupMetadataManager.REGEX_BATCH_REFRESH_INTERVAL_MS


def regex_refresh_due(coord, group: ConsumerGroup, new_regex: bool) -> bool:
    """Are the group's regexes resolved again now? When the topic image moved since they were last
    resolved, and either a new regex is being resolved anyway or 10 s passed since the last
    resolution (Kafka's rate limit on refreshes of one group)."""
    if group.regex_version == coord.topic_image_version:
        return False
    last = group.regex_refreshed_ms
    return new_regex or last is None or coord.now_ms >= last + REGEX_REFRESH_INTERVAL_MS


class RegexPlan(NamedTuple):
    resolved: dict       # regex -> topic names, as the group will hold them
    records: list        # type-16 records and tombstones
    changed: bool        # some member's resolved subscription changed: the group epoch bumps


def plan_regexes(coord, group: ConsumerGroup, members: Mapping[str, ConsumerGroupMember],
                 refresh: bool) -> RegexPlan:
    """The resolutions for ``members`` (the group's members as the operation leaves them): new
    regexes resolved, unused ones tombstoned, every one re-resolved when ``refresh`` (the topic
    image moved since the group last read it). Call ``compile_topic_regex`` first for a new regex:
    this function expects valid ones."""
    in_use = {m.subscribed_topic_regex for m in members.values() if m.subscribed_topic_regex is not None}
    old = group.resolved_regexes
    resolved, records, changed = {}, [], False
    for regex in sorted(in_use):
        if regex in old and not refresh:
            resolved[regex] = old[regex]
            continue
        topics = frozenset(matching_topics(regex, coord.topic_image))
        resolved[regex] = topics
        if refresh or old.get(regex) != topics:     # Kafka writes every regex a refresh resolved
            records.append(rec.regular_expression_record(group.group_id, regex, topics,
                                                         coord.topic_image_version, coord.now_ms))
        changed |= old.get(regex) != topics
    for regex in sorted(set(old) - in_use):
        records.append(rec.regular_expression_tombstone(group.group_id, regex))
    return RegexPlan(resolved, records, changed)
