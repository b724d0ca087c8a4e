"""The settings a simulated group runs on: the simulated broker's ``group.*`` settings and the
consumers' own, checked before a run as the broker would check them, and the ``config`` field of
`kgroup simulate`'s JSON document that prints them.

The broker takes the ``group.*`` settings `kgroup serve --config` takes, parsed and refused by the
same code (``ServerConfig.from_pairs``, ``CoordinatorConfig``: Kafka's defaults and bounds).

Classic consumers bring their own session.timeout.ms and heartbeat.interval.ms (the Java client's
defaults: 45,000 and 3,000 ms). The coordinator answers a JoinGroup whose session timeout lies
outside [group.min.session.timeout.ms, group.max.session.timeout.ms] with INVALID_SESSION_TIMEOUT
(``CoordinatorConfig.classic_session_timeout_allowed``), so such a run is refused before it starts.

KIP-848 consumers have neither setting (the Java client refuses both with group.protocol=consumer):
the broker's group.consumer.session.timeout.ms and group.consumer.heartbeat.interval.ms (45,000 and
5,000 ms, each within its group.consumer.min/max) govern them. On the command line,
--session-timeout-ms and --heartbeat-interval-ms give those broker values too, checked against
their min/max as a broker checks them, unless --config names the key (``broker_overrides``).
"""

from __future__ import annotations

from kgroup.coordinator.config import CoordinatorConfig, CoordinatorConfigError
from kgroup.server.config import ServerConfig, ServerConfigError, split_pair

from .model import ParameterError

CLASSIC_SESSION_TIMEOUT_MS = 45_000      # the Java client's session.timeout.ms default
CLASSIC_HEARTBEAT_INTERVAL_MS = 3_000    # ... and heartbeat.interval.ms

# A consumer flag -> the broker setting that holds it for consumer-protocol members, and its bounds.
CONSUMER_PROTOCOL_SETTINGS = {
    "--session-timeout-ms": ("group.consumer.session.timeout.ms",
                             "group.consumer.min.session.timeout.ms",
                             "group.consumer.max.session.timeout.ms"),
    "--heartbeat-interval-ms": ("group.consumer.heartbeat.interval.ms",
                                "group.consumer.min.heartbeat.interval.ms",
                                "group.consumer.max.heartbeat.interval.ms"),
}
# Flags that are broker settings themselves.
BROKER_FLAGS = {"--initial-rebalance-delay-ms": "group.initial.rebalance.delay.ms",
                "--migration-policy": "group.consumer.migration.policy"}


def _attribute(key: str) -> str:
    return key.replace(".", "_")


def parse_broker_config(pairs) -> tuple[tuple[str, object], ...]:
    """``--config KEY=VALUE`` entries as the simulated broker's overrides, in order (the last of a
    key wins). Parsed and refused as `kgroup serve --config` refuses them (``ServerConfigError``:
    exit 2, one line naming the key); a key serve takes that is not a ``group.*`` setting is refused
    too, since nothing in a simulation reads it."""
    for pair in pairs:
        key, _ = split_pair(pair)
        if not key.startswith("group."):
            raise ServerConfigError(f"config {key}: not a setting kgroup simulate uses (the simulated "
                                    f"broker takes the group coordinator's group.* settings)")
    return tuple(ServerConfig.from_pairs(pairs).coordinator.items())


def broker_overrides(pairs, given: dict, protocols: set) -> tuple[tuple[str, object], ...]:
    """The simulated broker's overrides for a command line: ``--config`` (``parse_broker_config``)
    and what the consumer flags the user gave (``given``: flag as typed -> value) make of it.

    A flag that is a broker setting (``BROKER_FLAGS``) must agree with ``--config`` naming the same
    key. With consumer-protocol consumers in the run (``protocols``), --session-timeout-ms and
    --heartbeat-interval-ms give the broker's group.consumer.* value, checked against its min/max,
    unless ``--config`` names that key: then the flag is the classic consumers' alone, and with
    none of those it must agree with ``--config``."""
    overrides = dict(parse_broker_config(pairs))
    configured = CoordinatorConfig(overrides)         # valid: parse_broker_config built it
    for flag, key in BROKER_FLAGS.items():
        if flag in given and key in overrides and given[flag] != getattr(configured, _attribute(key)):
            raise ParameterError(f"{flag} {given[flag]} and --config {key}={overrides[key]} disagree "
                                 f"(give one)")
    if "consumer" not in protocols:
        return tuple(overrides.items())
    for flag, (key, low_key, high_key) in CONSUMER_PROTOCOL_SETTINGS.items():
        if flag not in given:
            continue
        value = given[flag]
        if key in overrides:
            if "classic" not in protocols and value != getattr(configured, _attribute(key)):
                raise ParameterError(f"{flag} {value} and --config {key}={overrides[key]} disagree: "
                                     f"consumer-protocol members have only the broker's {key} (give one)")
            continue
        low, high = getattr(configured, _attribute(low_key)), getattr(configured, _attribute(high_key))
        if not low <= value <= high:
            bound_key, bound, word, fix = ((low_key, low, "at least", "lower") if value < low
                                           else (high_key, high, "at most", "raise"))
            raise ParameterError(f"{flag} {value}: consumer-protocol members take it as the broker's "
                                 f"{key}, which must be {word} {bound_key} ({bound}), as a broker "
                                 f"requires; {fix} that with --config {bound_key}={value}")
        overrides[key] = value
    try:
        CoordinatorConfig(overrides)
    except CoordinatorConfigError as exc:
        raise ParameterError(str(exc)) from None
    return tuple(overrides.items())


def broker_config(params) -> CoordinatorConfig:
    """The simulated broker of a run: Kafka's defaults, the scenario's group.initial.rebalance.delay.ms
    and group.consumer.migration.policy, then ``params.broker_config``."""
    values = {"group.initial.rebalance.delay.ms": params.initial_rebalance_delay_ms,
              "group.consumer.migration.policy": params.migration_policy}
    values.update(params.broker_config)
    try:
        return CoordinatorConfig(values)
    except CoordinatorConfigError as exc:
        raise ParameterError(f"--config: {exc}") from None


def check(params, broker: CoordinatorConfig, protocols: set) -> None:
    """Refuse up front what the broker would refuse every consumer of the run: a classic session
    timeout outside [group.min.session.timeout.ms, group.max.session.timeout.ms] (JoinGroup:
    INVALID_SESSION_TIMEOUT), a server-side assignor it does not offer (UNSUPPORTED_ASSIGNOR)."""
    session = params.session_timeout_ms
    if "classic" in protocols and not broker.classic_session_timeout_allowed(session):
        low = session < broker.group_min_session_timeout_ms
        key = "group.min.session.timeout.ms" if low else "group.max.session.timeout.ms"
        raise ParameterError(
            f"--session-timeout-ms {session} is {'below' if low else 'above'} the broker's {key} "
            f"({getattr(broker, _attribute(key))}): a classic consumer's JoinGroup would fail with "
            f"INVALID_SESSION_TIMEOUT; {'lower' if low else 'raise'} that with --config {key}={session}")
    offered = broker.group_consumer_assignors
    if "consumer" in protocols and params.server_assignor not in offered:
        raise ParameterError(
            f"--server-assignor {params.server_assignor} is not among the broker's "
            f"group.consumer.assignors ({','.join(offered)}): a heartbeat asking for it would fail "
            f"with UNSUPPORTED_ASSIGNOR (choose one with --server-assignor)")


def document(params, broker: CoordinatorConfig, protocols: set) -> dict:
    """The ``config`` field: the broker's group.* settings in effect, and each protocol's consumer
    settings (None for a protocol no consumer of the run speaks). A consumer-protocol member's
    session timeout and heartbeat interval are the broker's group.consumer.* ones."""
    group = {key: list(value) if isinstance(value, tuple) else value
             for key, value in broker.as_dict().items() if key.startswith("group.")}
    classic = {"session.timeout.ms": params.session_timeout_ms,
               "heartbeat.interval.ms": params.heartbeat_interval_ms,
               "max.poll.interval.ms": params.rebalance_timeout_ms,
               "partition.assignment.strategy": params.assignor}
    consumer = {"max.poll.interval.ms": params.rebalance_timeout_ms,
                "group.remote.assignor": params.server_assignor}
    return {"broker": dict(sorted(group.items())),
            "classic": classic if "classic" in protocols else None,
            "consumer": consumer if "consumer" in protocols else None}
