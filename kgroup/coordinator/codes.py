"""Kafka error codes the group coordinator answers with (clients' Errors.java)."""

UNKNOWN_SERVER_ERROR = -1
NONE = 0
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
MEMBER_ID_REQUIRED = 79
GROUP_MAX_SIZE_REACHED = 81
FENCED_INSTANCE_ID = 82


class UnsupportedRequest(ValueError):
    """handle() was given a request of an API the group coordinator does not serve."""


class CoordinatorReplayError(ValueError):
    """A record could not be replayed by from_records; the message names its log offset."""
