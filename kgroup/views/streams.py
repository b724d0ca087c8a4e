"""What kgroup shows of a streams group (KIP-1071, Kafka Streams' `streams` group type).

A streams group assigns tasks (a subtopology and a partition number), not partitions, so it has a
view of its own beside ``model.GroupView``, as Connect worker groups do: the group, target-assignment
and topology epochs, the topology (subtopologies with their source, repartition and changelog
topics), and per member its process, endpoint and active/standby/warm-up tasks beside its target.
The group commits its input topics' offsets like a consumer group; an active task of a subtopology
owns that partition of each of its source topics, which gives each committed offset its owner.
Tasks are ``{"subtopology": [partitions]}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kgroup.views.model import STATIC_LEAVE_EPOCH, GroupView, MembersSummary

STREAMS_TYPE = "streams"
TASK_KINDS = ("active", "standby", "warmup")


@dataclass
class StreamsMemberView:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_epoch: int
    process_id: str
    rack_id: str | None = None
    endpoint: str | None = None              # the member's user endpoint, "host:port" (interactive queries)
    client_tags: dict = field(default_factory=dict)
    tasks: dict = field(default_factory=dict)          # kind -> {subtopology: [partitions]}
    target_tasks: dict = field(default_factory=dict)   # the same, of its target assignment
    is_classic: bool = False

    @property
    def static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def left(self) -> bool:
        return self.member_epoch == STATIC_LEAVE_EPOCH

    def to_json(self, offline: bool = False) -> dict:
        return {"member_id": self.member_id, "group_instance_id": self.group_instance_id, "static": self.static,
                "client_id": self.client_id, "client_host": self.client_host, "member_epoch": self.member_epoch,
                "process_id": self.process_id, "rack_id": self.rack_id, "endpoint": self.endpoint,
                "client_tags": dict(self.client_tags), "is_classic": self.is_classic,
                **{f"{kind}_tasks": _tasks_json(self.tasks.get(kind)) for kind in TASK_KINDS},
                **{f"target_{kind}_tasks": _tasks_json(self.target_tasks.get(kind)) for kind in TASK_KINDS}}


@dataclass
class StreamsGroupView(MembersSummary):
    group: str
    state: str
    coordinator: object = None
    group_epoch: int | None = None
    assignment_epoch: int | None = None      # the target assignment's epoch
    topology_epoch: int | None = None
    subtopologies: list = field(default_factory=list)    # [{"subtopology", "source_topics", ...}]
    members: list = field(default_factory=list)
    assignor: str | None = None
    error: str | None = None
    offsets: list | None = None
    group_type: str = STREAMS_TYPE
    protocol_type: str = STREAMS_TYPE

    def reconciling(self, member: StreamsMemberView) -> bool:
        """Behind the group epoch, or its tasks not yet exactly its target's."""
        return member.member_epoch != self.group_epoch or any(
            _tasks_json(member.tasks.get(k)) != _tasks_json(member.target_tasks.get(k)) for k in TASK_KINDS)

    def owners(self) -> dict:
        """(input topic, partition) -> the member running it as an active task."""
        sources = {s["subtopology"]: s["source_topics"] + s["repartition_source_topics"] for s in self.subtopologies}
        return {(topic, p): m for m in self.members for sub, parts in (m.tasks.get("active") or {}).items()
                for topic in sources.get(sub, ()) for p in parts}

    lag_by_owner = GroupView.lag_by_owner

    def to_json(self, offline: bool = False) -> dict:
        return {"group": self.group, "state": self.state, "type": self.group_type,
                "protocol_type": self.protocol_type,
                "coordinator": self.coordinator.to_json() if self.coordinator else None,
                "group_epoch": self.group_epoch, "assignment_epoch": self.assignment_epoch,
                "topology_epoch": self.topology_epoch, "assignor": self.assignor,
                "subtopologies": [dict(s) for s in self.subtopologies],
                "members": [m.to_json(offline) for m in self.members],
                "offsets": [r.to_json() for r in self.offsets] if self.offsets is not None else [],
                "error": self.error}


def tasks_text(tasks: dict | None) -> str:
    """`0:0,1 1:2` for {"0": [0, 1], "1": [2]}; `-` for none."""
    return " ".join(f"{sub}:{','.join(map(str, parts))}" for sub, parts in sorted((tasks or {}).items())) or "-"


def _tasks_json(tasks: dict | None) -> dict:
    return {sub: sorted(parts) for sub, parts in sorted((tasks or {}).items())}
