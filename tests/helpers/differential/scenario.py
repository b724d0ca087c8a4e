"""A differential scenario is data: its members (which real client, instance id, assignor,
timeouts) and a timeline of steps. The runner gives every scenario its own group and topic names
(``group_of``/``topic_of``), so scenarios run side by side on one broker.

Steps are made with the constructors below (``start("a")``, ``wait_stable(2)``, ...). Every step
that reads or changes the group records what it saw under its ``label`` (default: its position and
kind), and those records are what is compared.

``tolerances`` maps a field pattern (fnmatch on the difference's field name, e.g.
``"member.b.callbacks"``) to how it is compared when Kafka itself is not deterministic there:
``Tolerance("unordered", why)`` compares as a multiset, ``Tolerance("final", why)`` only the last
element, ``Tolerance("ignore", why)`` not at all; for consumer groups, ``Tolerance("settled", why)``
compares records without the members' in-between reconciliation states and with each batch's target
rows as a set, ``Tolerance("sizes", why)`` partition lists by their lengths (compare.py says how). The reason is required and printed in the docs.
"""

from __future__ import annotations

import dataclasses

CLIENTS = ("kafka-python", "rdkafka-classic", "rdkafka-consumer", "java-classic", "java-consumer")
CLASSIC_ASSIGNORS = ("range", "roundrobin", "cooperative-sticky")


@dataclasses.dataclass(frozen=True)
class Member:
    """One client process/thread of the scenario. ``name`` labels it in the timeline and is its
    client.id (so a broker's member ids map back to it); ``topics`` are short topic names (default:
    every topic of the scenario). ``rebalance_ms`` is max.poll.interval.ms (the rebalance timeout a
    classic member sends). ``assignor`` is the classic assignor, or for the consumer protocol the
    server-side one (``group.remote.assignor``: uniform/range; None = the broker's default)."""
    name: str
    client: str = "kafka-python"
    topics: tuple | None = None
    instance_id: str | None = None
    assignor: str | None = "range"
    session_ms: int = 6000
    heartbeat_ms: int | None = None
    rebalance_ms: int = 10000
    settings: dict = dataclasses.field(default_factory=dict)    # extra client settings
    pattern: bool = False         # subscribe to the regex of every topic of the scenario instead

    def __post_init__(self):
        if self.client not in CLIENTS:
            raise ValueError(f"member {self.name}: unknown client {self.client!r} (one of {CLIENTS})")


@dataclasses.dataclass(frozen=True)
class Step:
    kind: str
    member: str | None = None
    args: dict = dataclasses.field(default_factory=dict)
    label: str | None = None


@dataclasses.dataclass(frozen=True)
class Tolerance:
    how: str        # unordered | final | ignore | settled | sizes
    why: str


@dataclasses.dataclass
class Scenario:
    name: str
    topics: dict                      # short name -> partitions
    members: list
    steps: list
    tolerances: dict = dataclasses.field(default_factory=dict)   # field pattern -> Tolerance
    protocol: str = "classic"         # classic | consumer | migration (for reports and selection)
    about: str = ""                   # one line: what it checks

    def __post_init__(self):
        names = [m.name for m in self.members]
        if len(set(names)) != len(names):
            raise ValueError(f"scenario {self.name}: member names repeat")
        for step in self.steps:
            if step.member is not None and step.member not in names:
                raise ValueError(f"scenario {self.name}: step {step.kind} names unknown member {step.member}")

    @property
    def group(self) -> str:
        return f"dg-{self.name}"

    def topic(self, short: str) -> str:
        return f"dt-{self.name}-{short}"

    @property
    def pattern(self) -> str:
        """The regex a ``pattern`` member subscribes to: every topic of this scenario, now or later."""
        return f"^dt-{self.name}-.*"

    def short(self, topic: str) -> str:
        prefix = f"dt-{self.name}-"
        return topic[len(prefix):] if topic.startswith(prefix) else topic

    def member(self, name: str) -> Member:
        return next(m for m in self.members if m.name == name)


# -- step constructors: the scenario language ------------------------------------------------------

def start(member: str) -> Step:
    """The member's client starts and subscribes (a restarted member is a new client, same config)."""
    return Step("start", member)


def close(member: str) -> Step:
    """Graceful close (a dynamic member leaves; a static classic member does not, KIP-345)."""
    return Step("close", member)


def kill(member: str) -> Step:
    """kill -9 / abandon: no leave, no more heartbeats; its session must expire."""
    return Step("kill", member)


def pause(member: str) -> Step:
    """The member stops polling. kafka-python and Java also stop heartbeating (a hung process:
    heartbeat thread disabled / SIGSTOP), librdkafka keeps heartbeating until max.poll.interval.ms
    runs out and then leaves the group itself."""
    return Step("pause", member)


def resume(member: str) -> Step:
    return Step("resume", member)


def commit(member: str, offset: int) -> Step:
    """The member commits ``offset`` for every partition it owns now (synchronously); the result
    (or error) is recorded."""
    return Step("commit", member, {"offset": offset})


def subscribe(member: str, topics) -> Step:
    """The running member changes its subscription to these short topic names."""
    return Step("subscribe", member, {"topics": tuple(topics)})


def create_topic(topic: str, partitions: int) -> Step:
    return Step("create_topic", None, {"topic": topic, "partitions": partitions})


def add_partitions(topic: str, count: int) -> Step:
    """CreatePartitions: the topic grows to ``count`` partitions."""
    return Step("add_partitions", None, {"topic": topic, "count": count})


def remove_members(*instance_ids: str, reason: str | None = None, label: str | None = None) -> Step:
    """An admin LeaveGroup (v5, KIP-345 batch) removing static members by instance id."""
    return Step("remove_members", None, {"instance_ids": instance_ids, "reason": reason}, label)


def delete_group(label: str | None = None) -> Step:
    return Step("delete_group", None, {}, label)


def delete_offsets(topic: str, label: str | None = None) -> Step:
    """OffsetDelete of every partition of a topic."""
    return Step("delete_offsets", None, {"topic": topic}, label)


def reset_offsets(topic: str, offset: int, label: str | None = None) -> Step:
    """An admin OffsetCommit (generation -1, no member) of ``offset`` for every partition of
    ``topic``: what kafka-consumer-groups --reset-offsets / AlterConsumerGroupOffsets send."""
    return Step("reset_offsets", None, {"topic": topic, "offset": offset}, label)


def checkpoint(label: str) -> Step:
    """Describe the group (DescribeGroups / ConsumerGroupDescribe) and read its committed offsets."""
    return Step("checkpoint", None, {}, label)


def wait_stable(members: int, timeout: float = 45, label: str | None = None, assigned=(),
                complete: bool = True, everyone_subscribes=()) -> Step:
    """Until the group is Stable with ``members`` members, every running client holds exactly
    what the broker says it assigned it, and (unless ``complete`` is False: a group that leaves a
    subscribed topic unassigned on purpose) every partition of the topics the members subscribe
    to — and of the short topics ``assigned`` (a change the group must take in first) — is
    assigned, and every member's subscription holds ``everyone_subscribes`` (members that find a
    topic by regex) (each side waits on its own; a timeout is recorded)."""
    return Step("wait", None, {"state": "Stable", "members": members, "timeout": timeout,
                               "assigned": tuple(assigned), "complete": complete,
                               "everyone_subscribes": tuple(everyone_subscribes)}, label)


def wait_empty(timeout: float = 45, label: str | None = None) -> Step:
    return Step("wait", None, {"state": "Empty", "members": 0, "timeout": timeout}, label)


def wait_errors(member: str, timeout: float = 20) -> Step:
    """Until the member has reported an error (e.g. it was fenced)."""
    return Step("wait_errors", member, {"timeout": timeout})


def sleep(seconds: float) -> Step:
    """A fixed wait, for what must NOT happen within a time (a bounce within the session)."""
    return Step("sleep", None, {"seconds": seconds})
