"""Kafka error codes the group coordinator answers with, from kgroup's one table (kgroup.kafka_errors)."""

from kgroup.kafka_errors import (  # noqa: F401  (re-exported: coordinator modules read codes.X)
    COORDINATOR_NOT_AVAILABLE,
    FENCED_INSTANCE_ID,
    GROUP_ID_NOT_FOUND,
    GROUP_MAX_SIZE_REACHED,
    ILLEGAL_GENERATION,
    INCONSISTENT_GROUP_PROTOCOL,
    INVALID_GROUP_ID,
    INVALID_SESSION_TIMEOUT,
    MEMBER_ID_REQUIRED,
    NON_EMPTY_GROUP,
    NONE,
    NOT_COORDINATOR,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
    UNKNOWN_SERVER_ERROR,
)


class UnsupportedRequest(ValueError):
    """handle() was given a request of an API the group coordinator does not serve."""


class CoordinatorReplayError(ValueError):
    """A record could not be replayed by from_records; the message names its log offset."""
