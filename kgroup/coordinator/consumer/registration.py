"""The KIP-848 consumer group type's registration with the facade (``coordinator.GROUP_TYPES``)."""

from __future__ import annotations

from ..group_types import ClassicProtocol, GroupTypeRegistration
from . import records as rec
from .admin import handle_consumer_group_describe, remove_members
from .classic_members import heartbeat, join, sync
from .fencing import restart_sessions, schedule_session_timeout
from .group import session_timer_key
from .heartbeat import handle_consumer_group_heartbeat
from .migration import delete_empty_consumer_group


def tombstones(group) -> list:
    return rec.encoded(rec.group_tombstones(group))


def delete(coord, group) -> None:
    """DeleteGroups on an Empty consumer group (and its expiry): its tombstones, applied."""
    rec.write(coord, rec.group_tombstones(group))


def schedule_session(coord, group, member_id: str, timeout_ms: int) -> None:
    schedule_session_timeout(coord, group.group_id, member_id, timeout_ms)


def classic_join(coord, group, joining: tuple):
    """A classic JoinGroup on a consumer group: a classic member joins it, unless it is empty, which
    gives way to a classic group (Kafka's maybeDeleteEmptyConsumerGroup)."""
    if not group.is_empty():
        return join(coord, group, *joining), None
    delete_empty_consumer_group(coord, group)
    return None, None


CONSUMER = GroupTypeRegistration(
    group_type="consumer",
    handlers={68: handle_consumer_group_heartbeat, 69: handle_consumer_group_describe},
    replay=rec.replay_functions(),
    tombstones=tombstones, delete=delete, restart_sessions=restart_sessions,
    schedule_session=schedule_session, session_timer_key=session_timer_key, expiry_deletes_offsets=True,
    classic_protocol=ClassicProtocol(join=classic_join, sync=sync, heartbeat=heartbeat, leave=remove_members))
