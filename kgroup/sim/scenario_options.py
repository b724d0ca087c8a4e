"""Which `kgroup simulate` options apply to which scenario: one table, checked before a run (by the
command, for every option given) and by ``model.variants`` (which comparisons a scenario takes).

An option the scenario would ignore (`rolling-bounce --remove-members`) or a value it cannot take
(`duplicate-instance --membership dynamic`: a duplicate needs a group.instance.id) is a usage error,
so a user never reads a result that silently left out what they asked for. A new option goes into
COMMON (every scenario) or into the rows of the scenarios it applies to; `test_sim_options` fails
for an option found in neither. Names are the command's click parameter names (mostly SimParams fields).
"""

from __future__ import annotations

# the online migrations: every process restarted on the other protocol (from, to); both protocols'
# options apply to them
PROTOCOL_ROLLS = {"upgrade-protocol": ("classic", "consumer"),
                  "downgrade-protocol": ("consumer", "classic")}

ANY = None  # every value of the option applies

# Options every consumer-group scenario honours (click parameter names).
COMMON = frozenset({"output", "members", "topics", "assignor", "server_assignor", "session_timeout_ms",
                    "rebalance_timeout_ms", "heartbeat_interval_ms", "initial_rebalance_delay_ms", "configs", "sort_by",
                    "seed", "runs", "show_events", "plot_path", "wire_heartbeats", "state_bytes_per_partition",
                    "restore_rate"})

_ROLL = {"membership": ANY, "protocol": ANY, "restart_ms": ANY, "order": ANY, "concurrency": ANY,
         "compare": ("membership", "assignor", "protocol", "concurrency")}
_KIP345 = {"protocol": ANY, "restart_ms": ANY, "order": ANY, "concurrency": ANY,
           "compare": ("assignor", "protocol", "concurrency")}
_PROTOCOL_ROLL = {"membership": ANY, "migration_policy": ANY, "add_topic": ANY, "topic_regex": ANY, "restart_ms": ANY, "order": ANY, "concurrency": ANY,
                  "compare": ("membership", "assignor", "concurrency")}

# scenario -> {option: the values it takes there (ANY: all)}, beside COMMON.
SCENARIO_OPTIONS: dict[str, dict[str, tuple | None]] = {
    "rolling-bounce": _ROLL,
    "upgrade": _KIP345,              # dynamic -> static: sets the membership itself
    "downgrade": _KIP345,            # static -> dynamic
    "leader-bounce": {"membership": ANY, "protocol": ANY, "restart_ms": ANY,
                      "order": ANY,  # a consumer group has no leader: the first member in --order
                      "compare": ("membership", "assignor", "protocol")},
    "crash": {**_ROLL, "count": ANY},
    "scale-down": {"membership": ANY, "protocol": ANY, "order": ANY, "count": ANY, "remove_members": ANY,
                   "compare": ("membership", "assignor", "protocol", "removal")},
    "scale-up": {"membership": ANY, "protocol": ANY, "count": ANY, "compare": ("membership", "assignor", "protocol")},
    "duplicate-instance": {"membership": ("static",), "protocol": ANY, "compare": ("assignor", "protocol")},
    "upgrade-protocol": _PROTOCOL_ROLL,    # classic -> consumer: sets the protocol itself
    "downgrade-protocol": _PROTOCOL_ROLL,
}


# Options only one group protocol's consumers use, and why the other ignores them. A Java consumer
# with group.protocol=consumer refuses partition.assignment.strategy (ConsumerConfig's
# CONSUMER_PROTOCOL_UNSUPPORTED_CONFIGS) and a classic one refuses group.remote.assignor.
CLASSIC_ONLY = {
    "assignor": "a consumer-protocol consumer has no partition.assignment.strategy: use --server-assignor",
    "sort_by": "the server-side assignors order members by member id",
    "initial_rebalance_delay_ms": "group.initial.rebalance.delay.ms applies to classic groups only",
}
CONSUMER_ONLY = {
    "server_assignor": "group.remote.assignor is the consumer protocol's: classic consumers assign with --assignor",
}


def run_protocols(scenario: str, protocol: str, compare: str | None) -> set:
    """The group protocols the run's consumers speak."""
    if scenario in PROTOCOL_ROLLS or compare == "protocol":
        return {"classic", "consumer"}
    return {protocol}


def inapplicable(scenario: str, given: dict, flags: dict, protocol: str = "classic",
                 compare: str | None = None, membership: str = "static") -> str | None:
    """The first option in `given` (name -> value, only those the user gave) that `scenario` does
    not take, as one line naming the option and the scenario; None when all apply. `flags` names
    each option as typed (`remove_members` -> `--remove-members`). `protocol`, `compare` and
    `membership` are the run's (given or default): an option only the other protocol's consumers
    use, or --remove-members for dynamic members (they leave on their own), is refused too."""
    row = SCENARIO_OPTIONS[scenario]
    protocols = run_protocols(scenario, protocol, compare)
    for name, value in given.items():
        flag = flags.get(name, name)
        for only, reasons in (("classic", CLASSIC_ONLY), ("consumer", CONSUMER_ONLY)):
            if name in reasons and only not in protocols:
                return f"{flag} does not apply with --protocol {protocol} ({reasons[name]})"
        if (name == "remove_members" or (name == "compare" and value == "removal")) and membership == "dynamic":
            return (f"{flag if name == 'remove_members' else '--compare removal'} does not apply with "
                    f"--membership dynamic (dynamic members send LeaveGroup themselves when they stop)")
        if name == "compare" and isinstance(value, str):
            value = value.partition("=")[0]        # concurrency=1,5,10: the kind decides
        if name in COMMON:
            continue
        if name not in row:
            takers = [s for s, options in SCENARIO_OPTIONS.items() if name in options]
            return f"{flag} does not apply to {scenario} (it applies to {', '.join(takers)})"
        allowed = row[name]
        if allowed is not ANY and value not in allowed:
            return f"{flag} {value} does not apply to {scenario} (it takes {' or '.join(allowed)})"
    return None
