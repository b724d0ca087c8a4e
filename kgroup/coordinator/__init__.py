"""kgroup.coordinator: Kafka's classic group coordinator as a pure state machine on virtual time.

    coord = GroupCoordinator(config={...}, now_ms=0, uuid_source=None)
    reply = coord.handle(request, client_id, client_host)   # kafka-python request objects
    coord.advance(ms)
    coord = GroupCoordinator(..., log_writer=fn)   # fn(entries) persists each operation's records

The contract (what the embedding API promises) is in docs/architecture.md, "The embedded coordinator".
"""

from .codes import CoordinatorReplayError, UnsupportedRequest
from .config import CoordinatorConfig, CoordinatorConfigError
from .coordinator import GroupCoordinator
from .group import ClassicGroup, Member
from .group_types import Group
from .log import LogEntry, Reply
from .snapshots import GroupSnapshot, MemberSnapshot

__all__ = ["GroupCoordinator", "CoordinatorConfig", "CoordinatorConfigError", "LogEntry", "Reply",
           "UnsupportedRequest", "CoordinatorReplayError", "Group", "ClassicGroup", "Member",
           "GroupSnapshot", "MemberSnapshot"]
