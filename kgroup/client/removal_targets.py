"""Which member of a group each removal target names, for `remove-members` and its prediction.

The operator names a member by instance id or by member id; the describe says which member that is
now. Both the classic prediction (`removal`) and the consumer group's (`consumer_removal`) resolve
targets here.
"""

from __future__ import annotations

from kgroup.views.model import GroupView


def members_named(view: GroupView, targets) -> list:
    """The member of `view` each removal target names, None where none: by instance id when the
    target has one (a static member rejoins under it with a new member id), else by member id."""
    by_instance = view.member_by_instance()
    by_member = {m.member_id: m for m in view.members}
    return [by_instance.get(t.group_instance_id) if t.group_instance_id is not None else by_member.get(t.member_id)
            for t in targets]


def target_member_ids(view: GroupView, results) -> list[str]:
    """The member id of each known target (an instance id resolved through the describe)."""
    by_instance = view.member_by_instance()
    return [by_instance[r.target.group_instance_id].member_id if r.target.group_instance_id is not None
            else r.target.member_id for r in results]
