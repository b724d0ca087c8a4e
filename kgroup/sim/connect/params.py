"""`kgroup simulate connect`: its parameters, the option syntax and the case presets.

A preset is the setup of one of the Connect draft's case studies; any option given explicitly
replaces that part of the preset (a single ``--event`` replaces all the preset's events).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace


CASES = ["worker-joins", "worker-leaves", "worker-bounce", "assigner-selection", "connector-change", "migration",
         "custom"]
WORKER_ACTIONS = {"join", "leave", "crash", "restart", "hang", "resume", "upgrade", "downgrade"}
ROLL_ACTIONS = {"upgrade", "downgrade"}     # the migration case's: a worker restarted on the other protocol
CONNECTOR_ACTIONS = {"add-connector": 2, "remove-connector": 1, "set-tasks": 2}   # action -> argument count


class UsageError(ValueError):
    """A malformed option or an event naming an unknown worker (exit 2)."""


class EventError(UsageError):
    """An --event that does not fit the run (which may be a preset's event)."""


@dataclass(frozen=True)
class ConnectParams:
    case: str = "custom"
    connectors: dict = field(default_factory=lambda: {"A": 2, "B": 1})
    workers: tuple = ()
    initial_epoch: int | None = None
    initial_assignment: dict = field(default_factory=dict)      # worker -> (item text, ...)
    initial_assigner: str | None = None
    events: tuple = ()                                          # (ms, action, args tuple)
    assignor_versions: dict = field(default_factory=dict)       # worker -> (min, max)
    session_timeout_ms: int = 10_000
    heartbeat_interval_ms: int = 3_000
    rebalance_timeout_ms: int = 60_000
    scheduled_rebalance_max_delay_ms: int = 300_000
    until_ms: int | None = None

    def seed(self) -> dict:
        """What each seeded worker runs at t=0, {W: frozenset of items}; {} without a seed."""
        if self.initial_epoch is None:
            return {}
        return {w: frozenset(parse_item(i, self.connectors) for i in items)
                for w, items in self.initial_assignment.items()}

    def config(self) -> dict:
        """The timing settings, as the JSON document's ``config``."""
        return {"session_timeout_ms": self.session_timeout_ms, "heartbeat_interval_ms": self.heartbeat_interval_ms,
                "rebalance_timeout_ms": self.rebalance_timeout_ms,
                "scheduled_rebalance_max_delay_ms": self.scheduled_rebalance_max_delay_ms}


_SEEDED = dict(initial_epoch=35, initial_assigner="W3",
               initial_assignment={"W1": ("A", "A-1"), "W2": ("B", "B-1"), "W3": ("A-2",)})
PRESETS = {
    "worker-joins": dict(events=((0, "join", ("W1",)), (20_000, "join", ("W2",)))),
    "worker-leaves": dict(_SEEDED, events=((1_000, "crash", ("W2",)),)),
    "worker-bounce": dict(_SEEDED, events=((1_000, "hang", ("W2",)), (60_000, "resume", ("W2",))),
                          until_ms=400_000),
    "assigner-selection": dict(
        assignor_versions={"W1": (1, 5), "W2": (3, 4), "W3": (2, 4), "W4": (6, 7)},
        events=((0, "join", ("W2",)), (10_000, "join", ("W3",)), (20_000, "join", ("W1",)),
                (30_000, "join", ("W4",)))),
    "connector-change": dict(events=((0, "join", ("W1",)), (5_000, "join", ("W2",)),
                                     (30_000, "add-connector", ("C", "1")),
                                     (60_000, "remove-connector", ("B",)))),
    # the classic workers are rolled to the new protocol one by one, then back; with no delay each
    # worker's items move as soon as it leaves for its restart
    "migration": dict(workers=("W1", "W2", "W3"), scheduled_rebalance_max_delay_ms=0,
                      events=((30_000, "upgrade", ("W1",)), (60_000, "upgrade", ("W2",)),
                              (90_000, "upgrade", ("W3",)), (150_000, "downgrade", ("W1",)),
                              (180_000, "downgrade", ("W2",)), (210_000, "downgrade", ("W3",)))),
    "custom": {},
}


def resolve(case: str, **given) -> ConnectParams:
    """The preset of ``case`` with every explicitly given option (not None) in its place."""
    if case not in PRESETS:
        raise UsageError(f"unknown CASE {case!r}; choose from {', '.join(CASES)}")
    chosen = {k: v for k, v in given.items() if v is not None}
    params = replace(ConnectParams(case=case), **{**PRESETS[case], **chosen})
    try:
        check_workers(params)
    except UsageError as exc:
        if isinstance(exc, EventError) and "events" not in chosen and PRESETS[case].get("events"):
            raise UsageError(f"{exc} (an event of the {case} preset; --event replaces them)") from None
        raise
    return params


def parse_connectors(text: str) -> dict:
    connectors = {}
    for part in filter(None, text.split(",")):
        name, sep, count = part.partition(":")
        if not name or not sep or not count.isdigit():
            raise UsageError(f"--connectors {part!r}: expected NAME:TASKS")
        if name in connectors:
            raise UsageError(f"--connectors {text!r}: connector {name!r} given twice")
        connectors[name] = int(count)
    from kgroup.coordinator.connect.protocol import connector_set_problem
    problem = connector_set_problem(connectors)
    if problem:
        raise UsageError(f"--connectors {text!r}: {problem}")
    return connectors


def parse_assignment(values) -> dict:
    assignment = {}
    for value in values:
        worker, sep, items = value.partition("=")
        if not worker or not sep:
            raise UsageError(f"--initial-assignment {value!r}: expected W=ITEM,ITEM (W= for none)")
        if worker in assignment:
            raise UsageError(f"--initial-assignment {value!r}: worker {worker!r} is seeded twice")
        assignment[worker] = tuple(filter(None, items.split(",")))
    return assignment


def parse_versions(values) -> dict:
    versions = {}
    for value in values:
        worker, _, span = value.partition("=")
        low, _, high = span.partition("-")
        if not worker or not low.isdigit() or not high.isdigit() or int(low) > int(high):
            raise UsageError(f"--assignor-versions {value!r}: expected W=MIN-MAX")
        if worker in versions:
            raise UsageError(f"--assignor-versions {value!r}: worker {worker!r} given twice")
        versions[worker] = (int(low), int(high))
    return versions


def parse_event(value: str) -> tuple:
    ms, _, rest = value.partition(":")
    action, *args = rest.split(":")
    arity = 1 if action in WORKER_ACTIONS else CONNECTOR_ACTIONS.get(action)
    if not ms.isdigit() or arity is None or len(args) != arity or not all(args) or (
            action in ("add-connector", "set-tasks") and not args[1].isdigit()):
        raise UsageError(f"--event {value!r}: expected MS:ACTION[:ARG...] with ACTION one of "
                         f"{', '.join(sorted(WORKER_ACTIONS | set(CONNECTOR_ACTIONS)))}")
    return int(ms), action, tuple(args)


def parse_events(values) -> tuple:
    return tuple(parse_event(value) for value in values)


def parse_workers(text: str) -> tuple:
    workers = tuple(filter(None, text.split(",")))
    seen: set = set()
    for worker in workers:
        if worker in seen:
            raise UsageError(f"--workers {text!r}: worker {worker!r} given twice")
        seen.add(worker)
    return workers


def parse_item(text: str, connectors: dict):
    """A connector if it names one, else ``CONN-N`` is a task."""
    from kgroup.coordinator.connect.protocol import TaskId    # on use: `simulate connect --help` stays fast

    if text in connectors:
        return text
    connector, _, number = text.rpartition("-")
    if connector not in connectors or not number.isdigit() or not 1 <= int(number) <= connectors[connector]:
        raise UsageError(f"item {text!r} is neither a connector of --connectors nor one of its tasks")
    return TaskId(connector, int(number))


# worker action -> the states the worker may be in for it, and the state it leaves the worker in
_WORKER_STEPS = {"join": ((None, "down"), "up"), "restart": (("down", "hung"), "up"),
                 "leave": (("up",), "down"), "crash": (("up", "hung"), "down"),
                 "hang": (("up",), "hung"), "resume": (("hung",), "up"),
                 "upgrade": (("up",), "up"), "downgrade": (("up",), "up")}
_STATE_WORDS = {"up": "already running", "hung": "hung", "down": "stopped"}


def _check_worker_step(ms: int, action: str, worker: str, state: dict, new_protocol: set) -> None:
    """An event must fit what the worker is doing then (no second leave, no resume of a running
    worker, no upgrade of an upgraded one); ``state`` and ``new_protocol`` follow the event."""
    allowed, after = _WORKER_STEPS[action]
    where = f"--event {ms}:{action}:{worker}"
    if state.get(worker) not in allowed:
        raise EventError(f"{where}: {worker} is {_STATE_WORDS[state.get(worker)]} at {ms} ms")
    if (action == "upgrade") == (worker in new_protocol) and action in ROLL_ACTIONS:
        protocol = "the new protocol" if worker in new_protocol else "the classic protocol"
        raise EventError(f"{where}: {worker} already speaks {protocol} at {ms} ms")
    if action == "upgrade":
        new_protocol.add(worker)
    elif action == "downgrade":
        new_protocol.discard(worker)
    state[worker] = after


def check_workers(params: ConnectParams) -> None:
    """The run's inputs fit together: every event fits what its worker (seeded, or joined before) or
    connector is then; a seed needs its epoch and names only items of the connector set; assignor
    versions name workers of the run; heartbeats come within the session timeout."""
    from kgroup.coordinator.connect.protocol import connector_set_problem

    both = sorted(set(params.initial_assignment) & set(params.workers))
    if both:
        raise UsageError(f"--workers: {both[0]} is a seeded worker (--initial-assignment), in the group from t=0")
    # every worker the run has so far: up | hung | down, as the events change it
    state = dict.fromkeys([*params.initial_assignment, *params.workers], "up")
    new_protocol: set = set()                   # migration: the workers upgraded to the new protocol
    connectors = dict(params.connectors)        # the connector set as the events change it
    for ms, action, args in sorted(params.events, key=lambda e: e[0]):
        if action in ROLL_ACTIONS and params.case != "migration":
            raise EventError(f"--event {ms}:{action}:{args[0]}: {action} is the migration case's action")
        if action in WORKER_ACTIONS and action != "join" and args[0] not in state:
            raise EventError(f"--event {ms}:{action}:{args[0]}: unknown worker {args[0]!r}")
        if action in WORKER_ACTIONS:
            _check_worker_step(ms, action, args[0], state, new_protocol)
        elif action in CONNECTOR_ACTIONS and (args[0] in connectors) == (action == "add-connector"):
            raise EventError(f"--event {ms}:{action}:{':'.join(args)}: connector {args[0]!r} "
                             + (f"already exists at {ms} ms" if action == "add-connector"
                                else f"does not exist at {ms} ms"))
        elif action == "remove-connector":
            connectors.pop(args[0])
        elif action in CONNECTOR_ACTIONS:
            connectors[args[0]] = int(args[1])
            problem = connector_set_problem(connectors)
            if problem:
                raise EventError(f"--event {ms}:{action}:{':'.join(args)}: {problem}")
    unknown = sorted(set(params.assignor_versions) - state.keys())
    if unknown:
        raise UsageError(f"--assignor-versions {unknown[0]}=...: {unknown[0]!r} is not a worker of this run")
    if params.heartbeat_interval_ms >= params.session_timeout_ms:
        raise UsageError(f"--heartbeat-interval-ms ({params.heartbeat_interval_ms}) must be lower than "
                         f"--session-timeout-ms ({params.session_timeout_ms})")
    if params.initial_assigner is not None and params.initial_assigner not in params.initial_assignment:
        raise UsageError(f"--initial-assigner {params.initial_assigner!r} is not a seeded worker")
    if params.case == "migration" and params.initial_epoch is not None:
        raise UsageError("the migration case starts from classic workers (--workers), not a seeded group")
    if bool(params.initial_assignment) != (params.initial_epoch is not None):
        raise UsageError("--initial-epoch and --initial-assignment go together")
    seeded = {}
    for worker, items in params.initial_assignment.items():
        for text in items:
            item = parse_item(text, params.connectors)
            if item in seeded:
                raise UsageError(f"--initial-assignment: {text} is seeded on {seeded[item]} and {worker}")
            seeded[item] = worker
