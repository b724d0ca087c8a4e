"""The classic group type's registration with the facade (``coordinator.GROUP_TYPES``)."""

from __future__ import annotations

from ..group_types import GroupTypeRegistration
from .describe import handle_describe_groups
from .group import PREPARING_REBALANCE, STABLE, heartbeat_key
from .join import handle_join_group
from .leave import handle_leave_group
from .rebalance import prepare_rebalance, reschedule_heartbeat, reschedule_member
from .records import GROUP_METADATA, group_from_value, group_tombstone
from .sync import handle_heartbeat, handle_sync_group


def replay_classic_group(coord, key, value, offset, entry) -> None:
    """GroupMetadata (key type 2): the classic group as its record describes it, or gone."""
    group_id = key.data["group"]
    coord.put_group(group_id, None if value is None else group_from_value(group_id, value.data))


def tombstones(group) -> list:
    return [group_tombstone(group.group_id)]


def delete(coord, group) -> None:
    coord.delete_group_metadata(group.group_id)


def restart_sessions(coord, group) -> None:
    """After a load: every member's heartbeat timer restarts; a group loaded with more members than
    group.max.size allows rebalances (Kafka's onLoaded)."""
    for member in group.members.values():
        reschedule_member(coord, group, member)
    if len(group.members) > coord.config.group_max_size and group.can_rebalance():
        prepare_rebalance(coord, group)


def offset_committed(coord, group, member_id: str) -> None:
    """Accepted commits keep a classic member's session alive (spec c.3)."""
    if group.state in (STABLE, PREPARING_REBALANCE):
        coord.refresh_session(group, member_id)


CLASSIC = GroupTypeRegistration(
    group_type="classic",
    handlers={11: handle_join_group, 12: handle_heartbeat, 13: handle_leave_group, 14: handle_sync_group,
              15: handle_describe_groups},
    replay={GROUP_METADATA: replay_classic_group},
    tombstones=tombstones, delete=delete, restart_sessions=restart_sessions,
    schedule_session=reschedule_heartbeat, session_timer_key=heartbeat_key,
    offset_committed=offset_committed)
