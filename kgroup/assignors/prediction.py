"""What removing members will move: the assignment the leader computes once they have left."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from .common import Assignor, MemberInfo, TopicPartition
from .registry import get_assignor
from .sticky import CooperativeStickyAssignor


@dataclass(slots=True)
class RemovalPrediction:
    """The assignment after removing members, and where each moved partition goes."""

    assignment: dict[str, list[TopicPartition]]
    moves: list[tuple[str, int, str | None, str | None]] = field(default_factory=list)
    rounds: int = 1

    def moved_from(self, member_id: str) -> list[tuple[str, int, str | None]]:
        """(topic, partition, new owner) for each partition the given member held."""
        return [(t, p, new) for t, p, old, new in self.moves if old == member_id]



def predict_after_removal(members: Sequence[MemberInfo], removed: Iterable[str],
                          partitions_per_topic: Mapping[str, int],
                          assignor: str | Assignor = "range") -> RemovalPrediction:
    """Predict the assignment the leader computes once ``removed`` leave the group.

    ``members`` is the group as it is now, each with its current assignment in ``owned``
    (``MemberInfo.from_bytes`` builds one from DescribeGroups' metadata and assignment bytes).
    ``removed`` holds member ids or group instance ids. The result is the settled
    assignment (for cooperative-sticky, after its second round) and every partition whose
    owner changes: ``(topic, partition, old owner or None, new owner or None)``.
    Raises ValueError naming a removed id that matches no member.
    """
    chosen = get_assignor(assignor) if isinstance(assignor, str) else assignor
    removed = list(removed)
    by_member = {m.member_id: m for m in members}
    by_instance = {m.instance_id: m for m in members if m.instance_id is not None}
    gone = set()
    for ident in removed:
        member = by_member.get(ident) or by_instance.get(ident)
        if member is None:
            raise ValueError(f"member {ident!r} is not in the group (neither a member id nor "
                             f"a group.instance.id)")
        gone.add(member.member_id)
    remaining = [m for m in members if m.member_id not in gone]
    if isinstance(chosen, CooperativeStickyAssignor):
        plan = chosen.target(remaining, partitions_per_topic)
        first = chosen.assign(remaining, partitions_per_topic)
        rounds = 1 if first == plan else 2
    else:
        plan = chosen.assign(remaining, partitions_per_topic)
        rounds = 1
    old_owner = {tp: m.member_id for m in members for tp in m.owned}
    new_owner = {tp: mid for mid, parts in plan.items() for tp in parts}
    moves = []
    for tp in sorted(set(old_owner) | set(new_owner)):
        before, after = old_owner.get(tp), new_owner.get(tp)
        if before != after:
            moves.append((tp[0], tp[1], before, after))
    return RemovalPrediction(plan, moves, rounds)
