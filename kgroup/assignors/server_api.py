"""The contract between the KIP-848 group coordinator and its server-side assignors.

Kafka's `ConsumerGroupPartitionAssignor.assign(GroupSpec, SubscribedTopicDescriber)` returns a
`GroupAssignment`; the coordinator calls it when a consumer group's epoch moves past its assignment
epoch and installs the result as the new target assignment. The same shape here, in plain data, so
the coordinator and the assignors (``uniform``, ``range``) are written against one definition:

    assignor = get_server_assignor("uniform")
    target = assignor.assign(GroupSpec(members={...}), {topic_id: TopicMetadata(...)})
    # target: member id -> {topic id -> frozenset of partitions}

Topic ids are Kafka's `Uuid`s as the coordinator keeps them (any hashable, usually the 16 bytes or
the base64 text); assignors only compare and sort them, so every choice they make is deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Mapping, Protocol

from .java_order import hash_order, member_order, string_hash

HOMOGENEOUS = "HOMOGENEOUS"      # every member subscribes to the same topics (Kafka's SubscriptionType)
HETEROGENEOUS = "HETEROGENEOUS"

# member id -> topic id -> partitions
Assignment = Mapping[str, Mapping[object, frozenset]]


@dataclass(frozen=True, slots=True)
class MemberSubscription:
    """One member as the assignor sees it (Kafka's MemberSubscriptionAndAssignmentImpl)."""

    subscribed_topic_ids: frozenset
    assignment: Mapping[object, frozenset] = field(default_factory=dict)  # its current target
    instance_id: str | None = None
    rack_id: str | None = None


def _subscription_maker():
    """``make(ids, assignment, instance_id, rack_id)``: a MemberSubscription built past the frozen
    ``__init__`` (one ``object.__setattr__`` per field), half its cost: the coordinator builds one
    per member at every epoch bump, a dynamic group's roll some members² times."""
    names = ("subscribed_topic_ids", "assignment", "instance_id", "rack_id")
    # a field added to MemberSubscription must be added here too (a loop over fields() costs more
    # than the frozen __init__ it replaces)
    assert tuple(f.name for f in fields(MemberSubscription)) == names
    new = object.__new__
    set_ids, set_assignment, set_instance, set_rack = (getattr(MemberSubscription, n).__set__ for n in names)

    def make(subscribed_topic_ids, assignment, instance_id, rack_id) -> MemberSubscription:
        spec = new(MemberSubscription)
        set_ids(spec, subscribed_topic_ids)
        set_assignment(spec, assignment)
        set_instance(spec, instance_id)
        set_rack(spec, rack_id)
        return spec
    return make


member_subscription = _subscription_maker()


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """The members, in the order they joined: assignors walk them in the order Kafka's maps would
    (``java_order.member_order``), which that order and the hints below decide (Kafka's
    GroupSpecImpl). ``added``: members this operation adds to the group's member table;
    ``member_high_water``: the most members that table ever held (None: as many as now);
    ``in_table_order``: the members are given in the order Kafka's table iterates them already (as
    ConsumerGroupDescribe lists them), not in the order they joined."""

    members: Mapping[str, MemberSubscription]
    subscription_type: str = HOMOGENEOUS
    added: frozenset = frozenset()
    member_high_water: int | None = None
    in_table_order: bool = False
    order: tuple | None = None      # member_order(), when the caller computed it already

    def member_order(self) -> list:
        if self.order is not None:
            return list(self.order)
        if self.in_table_order:
            return hash_order(self.members, string_hash)
        return member_order(self.members, self.added, self.member_high_water)


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    """A subscribed topic as the coordinator knows it from the metadata image."""

    topic_id: object
    name: str
    num_partitions: int


class ServerAssignor(Protocol):
    name: str

    def assign(self, group: GroupSpec, topics: Mapping[object, TopicMetadata]) -> Assignment:
        """The target assignment: every member of ``group`` gets an entry, possibly empty."""


class PartitionAssignorError(ValueError):
    """The assignor cannot assign this input (Kafka's PartitionAssignorException)."""


SERVER_ASSIGNORS: dict[str, type] = {}


def register_server_assignor(cls: type) -> type:
    """Class decorator: make an assignor available under its ``name`` (group.consumer.assignors)."""
    SERVER_ASSIGNORS[cls.name] = cls
    return cls


def get_server_assignor(name: str) -> ServerAssignor:
    """The server-side assignor registered as ``name``; ValueError names the known ones."""
    _load_builtin()
    cls = SERVER_ASSIGNORS.get(name)
    if cls is None:
        known = ", ".join(sorted(SERVER_ASSIGNORS)) or "none"
        raise ValueError(f"unknown server-side assignor {name!r}; known: {known}")
    return cls()


def _load_builtin() -> None:
    """Import the built-in assignors' modules so they register (uniform, range)."""
    import importlib

    for module in ("uniform", "server_range"):
        importlib.import_module(f"{__package__}.{module}")
