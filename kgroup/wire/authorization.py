"""Authorization failures said as one sentence naming the operation and the resource:
`not authorized to Read group orders`.

Kafka answers a missing ACL with an error code that names only the resource type
(GROUP_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED, ...); the operation it checked is the one
the request needs (Kafka's KafkaApis), which the caller knows: Describe for DescribeGroups,
FindCoordinator and OffsetFetch, Read for LeaveGroup and OffsetCommit, Delete for DeleteGroups and
OffsetDelete.
"""

from __future__ import annotations

from kgroup.errors import KgroupError

RESOURCES = {"GROUP_AUTHORIZATION_FAILED": "group", "TOPIC_AUTHORIZATION_FAILED": "topic",
             "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": "transactional id",
             "CLUSTER_AUTHORIZATION_FAILED": "cluster"}
PREFIX = "not authorized to "


class NotAuthorized(KgroupError):
    """The principal lacks an ACL for what was asked (exit 1)."""


def denial(error: str | None, operation: str, name: str) -> str | None:
    """The sentence for `error` (a Kafka error name, maybe followed by `: message`) when it is an
    authorization failure; None otherwise."""
    resource = RESOURCES.get((error or "").split(":", 1)[0])
    if resource is None:
        return None
    return PREFIX + (f"{operation} the cluster" if resource == "cluster" else f"{operation} {resource} {name}")


def check(error: str | None, operation: str, name: str) -> None:
    """Raise NotAuthorized if `error` is an authorization failure."""
    sentence = denial(error, operation, name)
    if sentence is not None:
        raise NotAuthorized(sentence)


def is_denial(message: str | None) -> bool:
    return bool(message) and message.startswith(PREFIX)


def failure(message: str, otherwise: str) -> KgroupError:
    """A view's error as the exception to raise: the denial itself, else `otherwise`."""
    return NotAuthorized(message) if is_denial(message) else KgroupError(otherwise)


def partition_failure_lines(rows, group: str):
    """stderr lines for per-partition errors, rows of (where, error, topic, operation): an
    authorization failure once per group or topic (`not authorized to Read topic events`), any
    other error once per row (`events:0: UNKNOWN_TOPIC_OR_PARTITION`)."""
    seen = set()
    for where, error, topic, operation in rows:
        if not error:
            continue
        sentence = denial(error, operation, group if error.startswith("GROUP_") else topic)
        if sentence is None:
            yield f"{where}: {error}"
        elif sentence not in seen:
            seen.add(sentence)
            yield sentence
