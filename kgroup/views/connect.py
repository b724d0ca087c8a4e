"""What kgroup shows of a Connect worker group (the draft's experimental `connect` type).

A worker group assigns connectors and tasks, not partitions, so it has a view of its own beside
``model.GroupView``: the epochs, the connector set, the worker that computes the assignment, and
per worker what it runs (its current assignment) and its target. Built from a coordinator holding
the group (a replayed `__worker_offsets` dump, ``from_dump``) or, live, from kgroup serve's
experimental ConnectGroupDescribe (``connect_describe``). Item sets are ``{"connectors": [...],
"tasks": ["A-1", ...]}`` as in `simulate connect`'s JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kgroup.views.model import MembersSummary

CONNECT_TYPE = "connect"


def worker_group_refusal(group: str, what: str) -> str:
    """Why an offset or member verb does not apply to a Connect worker group (the draft's type)."""
    return f"group {group!r} is a Connect worker group (type connect): {what}"


@dataclass
class ConnectMemberView:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_epoch: int
    runs: dict                       # its current assignment: what the coordinator gave it
    target: dict                     # its row of the target assignment

    @property
    def static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def left(self) -> bool:
        """The draft has no temporary leave (KIP-848's member epoch -2): a worker is in or out."""
        return False

    def to_json(self, offline: bool = False) -> dict:
        return {"member_id": self.member_id, "group_instance_id": self.group_instance_id, "static": self.static,
                "client_id": self.client_id, "client_host": self.client_host, "member_epoch": self.member_epoch,
                "assignment": dict(self.runs), "target_assignment": dict(self.target)}


@dataclass
class ConnectGroupView(MembersSummary):
    group: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str | None
    assigner: str | None
    assignment_error: str | None
    connectors: dict                 # connector -> task count
    unassigned: dict
    members: list = field(default_factory=list)
    coordinator: object = None
    error: str | None = None
    offsets: list | None = None      # worker groups commit no offsets here
    group_type: str = CONNECT_TYPE
    protocol_type: str = CONNECT_TYPE

    def reconciling(self, member: ConnectMemberView) -> bool:
        """Behind the assignment epoch, or not yet running exactly its target."""
        return member.member_epoch < self.assignment_epoch or member.runs != member.target

    def to_json(self, offline: bool = False) -> dict:
        return {"group": self.group, "state": self.state, "type": self.group_type,
                "protocol_type": self.protocol_type,
                "coordinator": self.coordinator.to_json() if self.coordinator else None,
                "group_epoch": self.group_epoch, "assignment_epoch": self.assignment_epoch,
                "assignor": self.assignor, "assigner": self.assigner, "assignment_error": self.assignment_error,
                "connectors": dict(self.connectors), "unassigned": dict(self.unassigned),
                "members": [m.to_json(offline) for m in self.members], "error": self.error}


def connect_group_view(coord, group_id: str) -> ConnectGroupView:
    """The view of a worker group the coordinator ``coord`` holds."""
    from kgroup.views.model import member_order
    from kgroup.coordinator.connect.protocol import item_set, items_of

    snap = coord.connect_group(group_id)
    members = [ConnectMemberView(m.member_id, m.instance_id, m.client_id, m.client_host, m.member_epoch,
                                 item_set(items_of(m.owned)), item_set(items_of(m.target)))
               for m in snap.members]
    return ConnectGroupView(group_id, snap.state, snap.group_epoch, snap.assignment_epoch, snap.assignor,
                            snap.assigner, snap.assignment_error, dict(snap.connectors),
                            item_set(items_of(snap.unassigned)), sorted(members, key=member_order))

