"""What a scenario is asked (``SimParams``) and what it answers (``SimResult``), the errors that stop
it, and the parameter sets ``--compare`` runs side by side."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from kgroup.assignors import ASSIGNORS
from kgroup.coordinator.config import INT_MAX

from .restart_spread import Restart, given_values
from .run_log import EventLog, Intervals
from .scenario_options import PROTOCOL_ROLLS, inapplicable  # noqa: F401  (PROTOCOL_ROLLS: re-exported)

SCENARIOS = ("rolling-bounce", "upgrade", "downgrade", "scale-down", "scale-up", "leader-bounce",
             "crash", "duplicate-instance", "upgrade-protocol", "downgrade-protocol")
MIGRATION_POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")
ORDERS = ("name", "reverse", "random", "leader-first", "leader-last")
MEMBERSHIPS = ("static", "dynamic")
PROTOCOLS = ("classic", "consumer")
SERVER_ASSIGNORS = ("uniform", "range")      # the coordinator's, for consumer-protocol members
GROUP = "g"


class ScenarioError(Exception):
    """The scenario cannot run with these parameters (the message says why)."""


class ParameterError(ScenarioError):
    """The parameters contradict each other or the scenario: a usage error."""


@dataclass(frozen=True)
class SimParams:
    members: int = 3
    topics: tuple[tuple[str, int], ...] = (("t", 9),)
    membership: str = "static"
    protocol: str = "classic"       # group.protocol of every consumer
    assignor: str = "range"         # the classic consumers' partition.assignment.strategy
    server_assignor: str = "uniform"  # the assignor consumer-protocol members ask the coordinator for
    restart_ms: Restart = 10_000   # an int, or a spread each restart draws from (restart_spread)
    session_timeout_ms: int = 45_000     # classic consumers'; consumer protocol: the broker's (broker_config)
    rebalance_timeout_ms: int = 300_000
    heartbeat_interval_ms: int = 3_000   # classic consumers'; consumer protocol: the broker's (broker_config)
    initial_rebalance_delay_ms: int = 3_000
    order: str = "name"
    concurrency: int = 1
    count: int = 1                 # members removed / added / crashed
    remove_members: bool = False   # scale-down: admin LeaveGroup right away (static members)
    by_instance_id: bool = True    # assignor sort key
    seed: int = 0
    wire_heartbeats: bool = False  # send every heartbeat as a request (slower, same results)
    max_time_ms: int | None = None  # virtual-time cap per phase (default: derived from timeouts)
    migration_policy: str = "bidirectional"  # the coordinator's group.consumer.migration.policy
    add_topic: tuple[str, int] | None = None  # protocol rolls: restarted processes subscribe to it too
    topic_regex: str | None = None   # protocol rolls: consumer-protocol processes subscribe by regex
    state_bytes_per_partition: int | None = None   # the state a hand-off makes the new owner restore
    restore_rate: int | None = None  # bytes per second one process restores
    broker_config: tuple = ()        # the simulated broker's group.* settings, (key, value) pairs (group_config)

    def validate(self) -> None:
        checks = [
            (self.members >= 1, f"--members must be at least 1 (got {self.members})"),
            (bool(self.topics), "at least one topic is needed"),
            (all(n >= 1 for _, n in self.topics), "every topic needs at least one partition"),
            (self.membership in MEMBERSHIPS, f"unknown membership {self.membership!r}"),
            (self.protocol in PROTOCOLS, f"unknown protocol {self.protocol!r}"),
            (self.migration_policy in MIGRATION_POLICIES,
             f"unknown migration policy {self.migration_policy!r}"),
            (self.assignor in ASSIGNORS, f"unknown assignor {self.assignor!r}"),
            (self.server_assignor in SERVER_ASSIGNORS,
             f"unknown server-side assignor {self.server_assignor!r}"),
            (self.order in ORDERS, f"unknown bounce order {self.order!r}"),
            (self.concurrency >= 1, f"--concurrency must be at least 1 (got {self.concurrency})"),
            (self.count >= 1, f"--count must be at least 1 (got {self.count})"),
            (min(given_values(self.restart_ms)) >= 0, "--restart-ms must not be negative"),
            (self.heartbeat_interval_ms >= 1, "--heartbeat-interval-ms must be at least 1"),
            (self.heartbeat_interval_ms < self.session_timeout_ms,
             f"--heartbeat-interval-ms ({self.heartbeat_interval_ms}) must be lower than "
             f"--session-timeout-ms ({self.session_timeout_ms})"),
            (self.rebalance_timeout_ms >= 1, "--rebalance-timeout-ms must be at least 1"),
            ((self.state_bytes_per_partition is None) == (self.restore_rate is None),
             "--state-bytes-per-partition and --restore-rate go together (the state each partition "
             "holds, and the bytes per second a process restores)"),
        ]
        # Kafka's timeouts are 32-bit ints (client and coordinator configs, JoinGroup fields, the
        # group's records); the restart is held to the same bound, which keeps a run finite.
        checks += [(value <= INT_MAX, f"--{name.replace('_', '-')} must be at most {INT_MAX} (got {value})")
                   for name, value in (("session_timeout_ms", self.session_timeout_ms),
                                       ("rebalance_timeout_ms", self.rebalance_timeout_ms),
                                       ("heartbeat_interval_ms", self.heartbeat_interval_ms),
                                       ("initial_rebalance_delay_ms", self.initial_rebalance_delay_ms),
                                       ("restart_ms", max(given_values(self.restart_ms))))]
        for ok, message in checks:
            if not ok:
                raise ParameterError(message)

    @property
    def partitions(self) -> int:
        return sum(n for _, n in self.topics)


@dataclass
class SimResult:
    scenario: str
    membership: str
    assignor: str
    members: int
    partitions: int
    rebalances: int
    generation_start: int
    generation_end: int
    partitions_moved: int        # partitions_ever_moved: the JSON keeps both names
    unowned_partition_seconds: float
    time_to_stable_ms: int | None
    longest_stop_ms: int
    settled: bool
    errors: list = field(default_factory=list)
    events: EventLog = field(default_factory=EventLog)
    intervals: Intervals = field(default_factory=Intervals)
    rebalance_times: list = field(default_factory=list)
    duration_ms: int = 0
    remove_members: bool = False
    protocol: str = "classic"
    group_epoch_start: int | None = None   # consumer protocol; its generation fields are None
    group_epoch_end: int | None = None
    migration: dict | None = None          # upgrade-protocol / downgrade-protocol (protocol_roll)
    members_start: int | None = None       # live processes when the scenario began (``members``: at its end)
    # processes a fatal error stopped for good, their place taken by no other: {"member", "instance_id",
    # "error", "stopped_at_ms", "advice"} (``scenarios.never_rejoined``)
    never_rejoined: list = field(default_factory=list)
    # (t_ms, count) step series for the plots' aggregate view: partitions without an owner, and
    # partitions owned but still restoring their state (empty unless a state size is given)
    unowned_steps: list = field(default_factory=list)
    restoring_steps: list = field(default_factory=list)
    handoffs: int = 0                      # changes of a partition's owner (metrics.Ledger)
    peak_unowned_partitions: int = 0
    longest_partition_wait_ms: int = 0
    safe_restart_ms: int | None = None     # static members: restarts under it rebalance nothing, whatever
    #                                        their heartbeat phase (session timeout - heartbeat interval)
    least_session_left_ms: int | None = None  # the least session a stopped static member had left in this run
    restore: dict | None = None            # restore.Restores.figures(), with a state size
    concurrency: int = 1                   # members restarted at once
    config: dict = field(default_factory=dict)   # the settings the run assumed (group_config.document)

    @property
    def members_end(self) -> int:
        return self.members

    def document(self, events: bool = True) -> dict:
        """The JSON document of `kgroup simulate`, its event log still this run's ``EventLog`` (an
        iterable of dicts, each built as the document is written: ``kgroup.writers.write_json``)."""
        out = {"scenario": self.scenario, "protocol": self.protocol,
               "membership": self.membership, "assignor": self.assignor,
               "members": self.members, "members_start": self.members_start, "concurrency": self.concurrency,
               "members_end": self.members_end, "partitions": self.partitions,
               "rebalances": self.rebalances, "generation_start": self.generation_start,
               "generation_end": self.generation_end, "group_epoch_start": self.group_epoch_start,
               "group_epoch_end": self.group_epoch_end, "handoffs": self.handoffs,
               "partitions_ever_moved": self.partitions_moved, "partitions_moved": self.partitions_moved,
               "unowned_partition_seconds": self.unowned_partition_seconds,
               "peak_unowned_partitions": self.peak_unowned_partitions,
               "longest_partition_wait_ms": self.longest_partition_wait_ms,
               "safe_restart_ms": self.safe_restart_ms, "least_session_left_ms": self.least_session_left_ms,
               "time_to_stable_ms": self.time_to_stable_ms, "longest_stop_ms": self.longest_stop_ms,
               "settled": self.settled, "errors": self.errors,
               "never_rejoined": self.never_rejoined, "config": self.config}
        if self.restore is not None:
            out["restore"] = self.restore
        if self.migration is not None:
            out["migration"] = self.migration
        if events:
            out["events"] = self.events
        return out

    def as_dict(self, events: bool = True) -> dict:
        """The JSON document as plain data: the event log a list of dicts."""
        out = self.document(events)
        if events:
            out["events"] = list(self.events)
        return out


# ---- comparisons ----------------------------------------------------------------------------
COMPARE = ("membership", "assignor", "removal", "protocol", "concurrency")
DEFAULT_CONCURRENCIES = (1, 5, 10, 50)


def variant_label(compare: str | None, membership: str, assignor: str, protocol: str, remove_members: bool,
                  concurrency: int) -> str:
    """The name a --compare variant goes by in tables, notes and status lines."""
    kind = (compare or "").partition("=")[0]
    return {"membership": membership, "assignor": assignor, "protocol": protocol,
            "removal": "remove-members" if remove_members else "session timeout",
            "concurrency": f"concurrency {concurrency}"}.get(kind, "value")


def params_label(params: SimParams, compare: str | None) -> str:
    assignor = params.server_assignor if params.protocol == "consumer" else params.assignor
    return variant_label(compare, params.membership, assignor, params.protocol, params.remove_members,
                         params.concurrency)


def comparison(text: str) -> tuple[str, tuple[int, ...]]:
    """``--compare``'s value: a kind, and for ``concurrency[=1,5,10]`` the settings to compare."""
    kind, sep, values = text.partition("=")
    if kind not in COMPARE:
        raise ParameterError(f"unknown comparison {text!r}; choose from {', '.join(COMPARE)} "
                             "(concurrency=N,N,... to choose the settings)")
    if kind != "concurrency":
        if sep:
            raise ParameterError(f"--compare {kind} takes no values (got {text!r})")
        return kind, ()
    if not sep:
        return kind, DEFAULT_CONCURRENCIES
    settings = []
    for value in values.split(","):
        if not value.strip().isdigit() or int(value) < 1:
            raise ParameterError(f"--compare {text!r}: {value!r} is not a concurrency (a whole number, at least 1)")
        if int(value) not in settings:
            settings.append(int(value))
    if len(settings) < 2:
        raise ParameterError(f"--compare {text!r}: give at least two settings to compare")
    return kind, tuple(settings)


def variants(scenario: str, params: SimParams, compare: str | None) -> list[SimParams]:
    """The parameter sets `--compare` runs side by side (the comparisons a scenario takes are
    ``scenario_options``' table: membership not where the scenario switches it, protocol not in the
    protocol rolls, removal only in scale-down)."""
    if compare is None:
        return [params]
    compare, settings = comparison(compare)
    message = inapplicable(scenario, {"compare": compare}, {"compare": "--compare"})
    if message:
        raise ParameterError(message)
    if compare == "concurrency":
        return [replace(params, concurrency=n) for n in settings]
    if compare == "membership":
        return [replace(params, membership=m) for m in MEMBERSHIPS]
    if compare == "assignor":
        if params.protocol == "consumer":
            return [replace(params, server_assignor=a) for a in SERVER_ASSIGNORS]
        return [replace(params, assignor=a) for a in ASSIGNORS]
    if compare == "protocol":
        return [replace(params, protocol=p) for p in PROTOCOLS]
    if compare == "removal":
        return [replace(params, remove_members=flag) for flag in (False, True)]
    raise AssertionError(compare)
