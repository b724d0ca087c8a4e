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
}

# Classic-protocol constant (GroupCoordinatorConfig CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS); not configurable.
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000


def _attribute(name: str) -> str:
    return name.replace(".", "_")


class CoordinatorConfig:
    """Validated settings; each is an attribute named like the key with dots turned into underscores."""

    __slots__ = tuple(_attribute(name) for name in SETTINGS) + ("_values",)

    def __init__(self, values: dict | None = None):
        merged = {name: spec[0] for name, spec in SETTINGS.items()}
        for name, raw in (values or {}).items():
            if name not in SETTINGS:
                raise CoordinatorConfigError(f"unknown coordinator setting {name!r}")
            merged[name] = _parse(name, raw)
        if merged["group.min.session.timeout.ms"] > merged["group.max.session.timeout.ms"]:
            raise CoordinatorConfigError(
                "group.min.session.timeout.ms "
                f"({merged['group.min.session.timeout.ms']}) must not exceed "
                f"group.max.session.timeout.ms ({merged['group.max.session.timeout.ms']})")
        for name, value in merged.items():
            setattr(self, _attribute(name), value)
        self._values = merged

    def as_dict(self) -> dict[str, int]:
        """Every setting under its Kafka name (defaults included)."""
        return dict(self._values)

    def __repr__(self) -> str:
        changed = {k: v for k, v in self._values.items() if v != SETTINGS[k][0]}
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
