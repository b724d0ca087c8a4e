"""Kafka Connect's assignors on the classic protocol, run by the leader worker before its SyncGroup.

Connect workers today join a classic group (protocol type ``connect``) and the leader computes the
assignment (Kafka's ``WorkerCoordinator.onLeaderElected``):

* ``eager`` (``connect.protocol=eager``, Connect's ``EagerAssignor``): every worker stops everything
  before it rejoins; the leader deals the connectors, then the tasks, round-robin over the members
  in member-id order, one iterator for both (``performTaskAssignment``).
* ``incremental cooperative`` (KIP-415, ``connect.protocol=compatible|sessioned``, Connect's
  ``IncrementalCooperativeAssignor``): workers keep running while they rejoin and report what they
  run. The placement rule is the one the draft keeps, so it is the same assignor
  (``connect_cooperative.IncrementalCooperativeAssignor``) fed the members' running sets instead of
  their target entries; what the classic protocol adds is the round: an item leaving a worker is
  only revoked in this round and assigned in the next one (the revoking worker rejoins at once),
  and a held departure is a ``delay`` in every assignment, after which the workers rejoin.
"""

from __future__ import annotations

from dataclasses import dataclass

from .connect_cooperative import IncrementalCooperativeAssignor
from .connect_items import connector_items, item_order

EAGER = "eager"
COOPERATIVE = "incremental-cooperative"
PROTOCOL_NAMES = {EAGER: "default", COOPERATIVE: "sessioned"}   # Connect's ConnectProtocolCompatibility


def eager_assignment(members, connectors: dict) -> dict:
    """Connect's EagerAssignor: connectors then tasks, in sorted order, dealt round-robin over the
    sorted member ids by one circular iterator."""
    order = sorted(members)
    assigned: dict = {m: set() for m in order}
    items = sorted(connector_items(connectors), key=item_order)
    for k, item in enumerate(items):
        assigned[order[k % len(order)]].add(item)
    return {m: frozenset(items) for m, items in assigned.items()}


@dataclass(frozen=True)
class ClassicRound:
    """One leader computation: what each worker starts now, what it must stop, and the delay after
    which the workers rejoin (0: none)."""
    assigned: dict
    revoked: dict
    delay_ms: int


def cooperative_round(assignor: IncrementalCooperativeAssignor, running: dict, connectors: dict,
                      now_ms: int) -> ClassicRound:
    """``running``: member id -> the items it reports running (its JoinGroup metadata)."""
    target = assignor.assign(sorted(running.items()), connectors, now_ms)
    revoked = {m: running[m] - target[m] for m in target}
    still_running = frozenset().union(frozenset(), *running.values())
    assigned = {m: target[m] - running[m] - still_running for m in target}
    deadline = assignor.reason_change_at
    return ClassicRound(assigned, revoked, 0 if deadline is None else max(deadline - now_ms, 1))
