"""Kafka's topic-name rule (Topic.validate), shared by `serve` (CreateTopics, auto-creation,
--topic) and `simulate` (--topic, --add-topic) without loading the server."""

from __future__ import annotations

import re

from kgroup.kafka_errors import INVALID_TOPIC_EXCEPTION

_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")


class TopicError(ValueError):
    def __init__(self, message, error_code):
        super().__init__(message)
        self.error_code = error_code


def validate_topic_name(name: str) -> None:
    if not name or name in (".", ".."):
        raise TopicError(f"topic name {name!r} is illegal", INVALID_TOPIC_EXCEPTION)
    if len(name) > 249:
        raise TopicError(f"topic name {name[:20]!r}... is longer than 249 characters",
                         INVALID_TOPIC_EXCEPTION)
    if not _LEGAL_TOPIC.match(name):
        raise TopicError(f"topic name {name!r} contains characters other than "
                         f"ASCII alphanumerics, '.', '_' and '-'", INVALID_TOPIC_EXCEPTION)
