"""The Connect draft's worker group type's registration with the facade (``coordinator.GROUP_TYPES``).

Its records live in ``__worker_offsets`` (``worker_replay``), none in ``__consumer_offsets``."""

from __future__ import annotations

from ..group_types import ClassicProtocol, GroupTypeRegistration
from . import records as rec
from .assignment import (handle_connect_group_describe, handle_install_assignment, handle_prepare_assignment,
                         handle_set_connectors)
from .fencing import restart_sessions, schedule_session
from .group import session_timer_key
from .heartbeat import handle_connect_group_heartbeat
from .migration import classic_join
from .protocol import (CONNECT_GROUP_DESCRIBE, CONNECT_GROUP_HEARTBEAT, CONNECT_GROUP_INSTALL_ASSIGNMENT,
                       CONNECT_GROUP_PREPARE_ASSIGNMENT, SET_CONNECTORS)


def tombstones(group) -> list:
    """Its ``__worker_offsets`` tombstones."""
    return rec.group_tombstones(group)


def delete(coord, group) -> None:
    rec.write(coord, rec.group_tombstones(group))


def schedule_worker_session(coord, group, member_id: str, timeout_ms: int) -> None:
    schedule_session(coord, group.group_id, member_id, timeout_ms)


# The draft's three APIs (kgroup's API keys 1000-1002), kgroup's SetConnectors (1003) and
# ConnectGroupDescribe (1004).
CONNECT = GroupTypeRegistration(
    group_type="connect",
    handlers={CONNECT_GROUP_HEARTBEAT: handle_connect_group_heartbeat,
              CONNECT_GROUP_PREPARE_ASSIGNMENT: handle_prepare_assignment,
              CONNECT_GROUP_INSTALL_ASSIGNMENT: handle_install_assignment,
              SET_CONNECTORS: handle_set_connectors,
              CONNECT_GROUP_DESCRIBE: handle_connect_group_describe},
    replay={},
    tombstones=tombstones, delete=delete, restart_sessions=restart_sessions,
    schedule_session=schedule_worker_session, session_timer_key=session_timer_key,
    classic_protocol=ClassicProtocol(join=classic_join),
    worker_replay=rec.replay_worker_records)
