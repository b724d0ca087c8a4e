"""Broker settings the coordinator honours, under Kafka's own names and defaults.

The server passes the broker's whole group/offsets configuration through, so settings
the coordinator itself does not use (``offsets.topic.num.partitions`` ...) are accepted
and kept, but an unknown name or a bad value is refused: a typo must not be silently
ignored.
"""

from __future__ import annotations

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1


class CoordinatorConfigError(ValueError):
    """A configuration key is unknown or its value is out of range; the message names the key."""


# name -> (default, minimum, maximum); every setting here is an integer in Kafka.
SETTINGS: dict[str, tuple[int, int, int]] = {
    "group.min.session.timeout.ms": (6000, 0, INT_MAX),
    "group.max.session.timeout.ms": (1_800_000, 0, INT_MAX),
    "group.initial.rebalance.delay.ms": (3000, 0, INT_MAX),
    "group.max.size": (INT_MAX, 1, INT_MAX),
    "offsets.retention.minutes": (10080, 1, INT_MAX),
    "offsets.retention.check.interval.ms": (600_000, 1, LONG_MAX),
    "offsets.topic.num.partitions": (50, 1, INT_MAX),
    "offsets.topic.replication.factor": (3, 1, 32767),
    "offsets.topic.segment.bytes": (104_857_600, 1, INT_MAX),
    "offsets.load.buffer.size": (5_242_880, 1, INT_MAX),
    "offsets.commit.timeout.ms": (5000, 1, INT_MAX),
    "offset.metadata.max.bytes": (4096, 0, INT_MAX),
    "transactional.id.expiration.ms": (604_800_000, 1, INT_MAX),
    # KIP-848 consumer groups (GroupCoordinatorConfig's CONSUMER_GROUP_* keys)
    "group.consumer.session.timeout.ms": (45_000, 1, INT_MAX),
    "group.consumer.min.session.timeout.ms": (45_000, 1, INT_MAX),
    "group.consumer.max.session.timeout.ms": (60_000, 1, INT_MAX),
    "group.consumer.heartbeat.interval.ms": (5000, 1, INT_MAX),
    "group.consumer.min.heartbeat.interval.ms": (5000, 1, INT_MAX),
    "group.consumer.max.heartbeat.interval.ms": (15_000, 1, INT_MAX),
    "group.consumer.max.size": (INT_MAX, 1, INT_MAX),
    # KIP-1263 (Kafka 4.3+): a new target assignment at most once per interval (0: at every bump)
    "group.consumer.assignment.interval.ms": (1000, 0, INT_MAX),
    # Connect worker groups (the Connect draft's type): Connect's worker defaults
    "group.connect.session.timeout.ms": (10_000, 1, INT_MAX),
    "group.connect.heartbeat.interval.ms": (3000, 1, INT_MAX),
}

# Settings that are not integers: name -> default.
# group.consumer.assignors is the ordered list of server-side assignor names, the first being the
# default; Kafka spells them as class names, which are accepted and shortened (``UniformAssignor``
# -> ``uniform``). group.consumer.migration.policy governs classic <-> consumer online migration.
TEXT_SETTINGS: dict[str, object] = {
    "group.consumer.assignors": ("uniform", "range"),
    "group.consumer.migration.policy": "bidirectional",
}
MIGRATION_POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")

# (value, minimum, maximum) triples checked after parsing: Kafka's GroupCoordinatorConfig requires
# min <= value <= max for the consumer session timeout and heartbeat interval.
_BOUNDED = (
    ("group.consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms",
     "group.consumer.max.session.timeout.ms"),
    ("group.consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms",
     "group.consumer.max.heartbeat.interval.ms"),
)

# Classic-protocol constant (GroupCoordinatorConfig CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS); not configurable.
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000


def _attribute(name: str) -> str:
    return name.replace(".", "_")


class CoordinatorConfig:
    """Validated settings; each is an attribute named like the key with dots turned into underscores."""

    __slots__ = tuple(_attribute(name) for name in (*SETTINGS, *TEXT_SETTINGS)) + ("_values",)

    def __init__(self, values: dict | None = None):
        merged = {name: spec[0] for name, spec in SETTINGS.items()}
        merged.update(TEXT_SETTINGS)
        for name, raw in (values or {}).items():
            if name in SETTINGS:
                merged[name] = _parse(name, raw)
            elif name in TEXT_SETTINGS:
                merged[name] = _parse_text(name, raw)
            else:
                raise CoordinatorConfigError(f"unknown coordinator setting {name!r}")
        _check_not_above(merged, "group.min.session.timeout.ms", "group.max.session.timeout.ms")
        for value_key, min_key, max_key in _BOUNDED:
            _check_not_above(merged, min_key, max_key)
            _check_not_above(merged, min_key, value_key)
            _check_not_above(merged, value_key, max_key)
        if merged["group.consumer.heartbeat.interval.ms"] >= merged["group.consumer.session.timeout.ms"]:
            raise CoordinatorConfigError(
                "group.consumer.heartbeat.interval.ms "
                f"({merged['group.consumer.heartbeat.interval.ms']}) must be lower than "
                f"group.consumer.session.timeout.ms ({merged['group.consumer.session.timeout.ms']})")
        for name, value in merged.items():
            setattr(self, _attribute(name), value)
        self._values = merged

    def classic_session_timeout_allowed(self, session_timeout_ms: int) -> bool:
        """A JoinGroup's session timeout within [group.min.session.timeout.ms,
        group.max.session.timeout.ms]; outside, Kafka answers INVALID_SESSION_TIMEOUT."""
        return self.group_min_session_timeout_ms <= session_timeout_ms <= self.group_max_session_timeout_ms

    def as_dict(self) -> dict[str, object]:
        """Every setting under its Kafka name (defaults included)."""
        return dict(self._values)

    def __repr__(self) -> str:
        defaults = {name: spec[0] for name, spec in SETTINGS.items()} | TEXT_SETTINGS
        changed = {k: v for k, v in self._values.items() if v != defaults[k]}
        return f"CoordinatorConfig({changed!r})"


def _parse(name: str, raw) -> int:
    if isinstance(raw, bool):
        raise CoordinatorConfigError(f"{name}: expected an integer, got {raw!r}")
    if isinstance(raw, int):
        value = raw
    elif isinstance(raw, str) and raw.strip().lstrip("+-").isdigit():
        value = int(raw.strip())
    else:
        raise CoordinatorConfigError(f"{name}: expected an integer, got {raw!r}")
    _, low, high = SETTINGS[name]
    if not low <= value <= high:
        raise CoordinatorConfigError(f"{name}: {value} is out of range [{low}, {high}]")
    return value


def _check_not_above(values: dict, low_key: str, high_key: str) -> None:
    if values[low_key] > values[high_key]:
        raise CoordinatorConfigError(
            f"{low_key} ({values[low_key]}) must not exceed {high_key} ({values[high_key]})")


def _parse_text(name: str, raw):
    if name == "group.consumer.migration.policy":
        policy = str(raw).strip().lower()
        if policy not in MIGRATION_POLICIES:
            raise CoordinatorConfigError(
                f"{name}: {raw!r} is not one of {', '.join(MIGRATION_POLICIES)}")
        return policy
    items = list(raw) if isinstance(raw, (list, tuple)) else str(raw).split(",")
    names = tuple(_assignor_name(str(item).strip()) for item in items if str(item).strip())
    if not names:
        raise CoordinatorConfigError(f"{name}: expected at least one assignor name")
    if len(set(names)) != len(names):
        raise CoordinatorConfigError(f"{name}: {raw!r} names an assignor twice")
    from kgroup.assignors.server_api import get_server_assignor

    for assignor in names:     # Kafka instantiates them at start-up: an unknown one stops it
        try:
            get_server_assignor(assignor)
        except ValueError as exc:
            raise CoordinatorConfigError(f"{name}: {exc}") from None
    return names


def _assignor_name(text: str) -> str:
    """``uniform`` as it is, or Kafka's class name (``...assignor.UniformAssignor``) shortened."""
    simple = text.rsplit(".", 1)[-1]
    if simple.endswith("Assignor") and len(simple) > len("Assignor"):
        return simple[: -len("Assignor")].lower()
    return text
