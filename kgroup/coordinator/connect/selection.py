"""Which client-side assignor a Connect worker group uses, and which worker computes with it.

The draft lets "any" worker compute the assignment, provided its version range for the assignor
covers every other worker's (its example: A [1-5], B [3-4], C [2-4] -> only A covers). kgroup's
choices where it is silent: the assignor is the highest-ranked name of the earliest member among
the names every member lists; the assigner stays who it was while it is a member and covers (the
assigner remembers the delay it holds), else the earliest-joined covering member; a join or an
assignor change that would leave no covering member is refused (UNSUPPORTED_ASSIGNOR), since
the draft calls that state fatal.
"""

from __future__ import annotations

from typing import Iterable


def selected_assignor(members: Iterable) -> str | None:
    members = list(members)
    if not members:
        return None
    common = set.intersection(*({a.name for a in m.assignors} for m in members))
    for assignor in members[0].assignors:
        if assignor.name in common:
            return assignor.name
    return None


def version_range(member, name: str) -> tuple[int, int]:
    for assignor in member.assignors:
        if assignor.name == name:
            return assignor.minimum_version, assignor.maximum_version
    raise KeyError(name)


def assignor_of(member, name: str):
    return next(a for a in member.assignors if a.name == name)


def covers(member, members: Iterable, name: str) -> bool:
    low, high = version_range(member, name)
    return all(low <= version_range(m, name)[0] and version_range(m, name)[1] <= high for m in members)


def assignors_problem(members: list, changed) -> str | None:
    """Why the group with ``members`` (``changed`` being the joining or changed one) cannot run a
    client-side assignment, or None."""
    name = selected_assignor(members)
    if name is None:
        return "no assignor is supported by every worker of the group"
    low, high = version_range(changed, name)
    for other in members:
        if other is not changed:
            other_low, other_high = version_range(other, name)
            if other_high < low or high < other_low:
                return (f"the version range [{low}, {high}] of assignor {name} does not overlap "
                        f"worker {other.member_id}'s [{other_low}, {other_high}]")
    if not any(covers(m, members, name) for m in members):
        return f"no worker's version range of assignor {name} covers every other worker's"
    return None


def choose_assigner(group) -> str | None:
    """The member that computes the next target, or None when no member covers every range."""
    members = list(group.members.values())
    name = selected_assignor(members)
    if name is None:
        return None
    covering = [m.member_id for m in members if covers(m, members, name)]
    skipped = group.timed_out.get(group.group_epoch, ())
    preferred = [m for m in covering if m not in skipped] or covering
    if group.assigner in preferred:
        return group.assigner
    return preferred[0] if preferred else None
