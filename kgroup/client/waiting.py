"""Polling a group (ConsumerGroupDescribe or DescribeGroups) until it reaches a state, for runbooks and
`remove-members --wait`."""

from __future__ import annotations

import time

from kgroup.client.groups import describe_groups, group_exists
from kgroup.views.model import GroupView
from kgroup.errors import KgroupError
from kgroup.wire.authorization import failure
from kgroup.wire.cluster import ClusterClient, TransportError, retriable_coordinator_name

POLL_INTERVAL_S = 0.2


class WaitTimeout(KgroupError):
    """The condition was not met in time; carries the last view seen."""

    def __init__(self, message: str, last: GroupView | None):
        super().__init__(message)
        self.last = last


def poll(client: ClusterClient, group: str, done, timeout_s: float, describe_what: str,
         interval_s: float = POLL_INTERVAL_S, clock=time.monotonic, sleep=time.sleep,
         on_poll=None) -> GroupView:
    """Describe the group until done(view) is true; WaitTimeout (exit 1) after timeout_s.

    A request that gets no answer (the coordinator restarting or moving) is retried until the
    deadline, like a coordinator error: the wait is bounded by timeout_s, not by the first hiccup.
    """
    start = clock()
    deadline = start + timeout_s
    last = None
    unanswered = None
    while True:
        try:
            last = describe_groups(client, [group], deadline=deadline)[0]
            unanswered = None
        except TransportError as exc:
            unanswered = exc
        if on_poll is not None:  # a status line for a person watching (never for scripts)
            on_poll(None if unanswered is not None else last, clock() - start)
        if unanswered is None:
            if last.error and not retriable_coordinator_name(last.error):  # a coordinator moving: poll on
                raise failure(last.error, f"group {group!r}: DescribeGroups failed: {last.error}")
            if not last.error and done(last):
                return last
        if clock() >= deadline:
            if unanswered is not None:
                seen = f"last request: {unanswered}"
            else:
                seen = (f"last state: {last.state if group_exists(last) else 'does not exist'}, "
                        f"{len(last.members)} member(s)")
                left = last.left_instances()
                if left:  # KIP-848 static members that stopped keep the group Reconciling
                    seen += (f"; {', '.join(left)} left (static, member epoch -2): the group stays Reconciling "
                             "until they rejoin or their session times out")
            raise WaitTimeout(f"group {group!r}: timed out after {timeout_s:g}s waiting for {describe_what} "
                              f"({seen})", last)
        sleep(interval_s)


def wait_for_state(client: ClusterClient, group: str, state: str, timeout_s: float, **kw) -> GroupView:
    """Until the group is in `state` ("Dead" also matches a group that does not exist)."""
    wanted = state.lower()
    def done(view):
        if wanted == "dead":
            return not group_exists(view)
        return group_exists(view) and view.state.lower() == wanted
    return poll(client, group, done, timeout_s, f"state {state}", **kw)


def wait_caught_up(client: ClusterClient, group: str, timeout_s: float, **kw) -> GroupView:
    """Until the group is Stable and every member is at the group epoch owning exactly its target
    (GroupView.caught_up): a rolling restart of a consumer group has converged. A classic group
    has no epochs: Stable is caught up."""
    return poll(client, group, lambda view: group_exists(view) and view.caught_up, timeout_s,
                "every member caught up (Stable, member epochs at the group epoch)", **kw)


SETTLE_S = 1.0
# A consumer whose process still runs learns of its removal at its next heartbeat and rejoins at
# once: within heartbeat.interval.ms (a classic member's default 3 s, a consumer group's
# group.consumer.heartbeat.interval.ms 5 s). The wait watches that long before it calls a removal done.
REJOIN_WINDOW_S = 5.0


def wait_after_removal(client: ClusterClient, group: str, removed_member_ids, timeout_s: float,
                       settle_s: float = SETTLE_S, clock=time.monotonic, before_epoch: int | None = None,
                       rejoin_window_s: float = REJOIN_WINDOW_S, **kw) -> GroupView:
    """Until the rebalance that a successful removal starts has completed and held.

    Kafka starts that rebalance inside the LeaveGroup call (classic coordinator), so every later
    DescribeGroups sees it: the group is settled once it is Stable again (Empty if nobody is left),
    none of the removed member ids is a member, and members and assignment have stayed the same for
    settle_s — a leader that assigned before it knew every partition rebalances again at once, and
    the first Stable view would report partitions going nowhere. A group that no longer exists (Dead)
    is settled too: nobody is left and the coordinator deleted it. A consumer group (KIP-848) must
    instead be at a group epoch past `before_epoch` with every member caught up to it; there a
    removed member whose process runs comes back under its own member id, so its id may be seen
    again. Either way the view is taken no sooner than rejoin_window_s (at most half the timeout)
    after the removal, so that a member that rejoins is in it (`RemovalReport.mark_rejoined`).
    """
    gone = set(removed_member_ids) if before_epoch is None else set()
    seen = {"key": None, "since": 0.0}
    start = clock()
    window = min(rejoin_window_s, timeout_s / 2)

    def settled(view) -> bool:
        if not group_exists(view):
            # Nobody left, and the coordinator deleted the emptied group: Kafka deletes an empty
            # consumer group without offsets at its next cleanup, or when a classic member joins
            # its id. As settled as Empty (the window still watches for a member coming back).
            return True
        if any(m.member_id in gone for m in view.members) or not (
                view.state == "Stable" or (view.state == "Empty" and not view.members)):
            return False
        return not (view.group_type == "consumer" and (not view.caught_up and view.members or (
            before_epoch is not None and (view.group_epoch or 0) <= before_epoch)))

    def done(view):
        if not settled(view):
            seen["key"] = None
            return False
        key = (view.state, tuple(sorted((tp, m.member_id) for tp, m in view.owners().items())),
               tuple(sorted(m.member_id for m in view.members)))
        now = clock()
        if key != seen["key"]:
            seen["key"], seen["since"] = key, now
        return now - seen["since"] >= settle_s and now - start >= window
    what = "a Stable group at a new group epoch, every member at it" if before_epoch is not None \
        else "a Stable group at a new generation"
    return poll(client, group, done, timeout_s, what, clock=clock, **kw)
