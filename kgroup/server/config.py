"""Broker settings for `kgroup serve`, named like Kafka's broker configs.

Keys the server itself uses are parsed here; `group.*` and `offsets.*` keys, and the other keys the
coordinator knows (`offset.metadata.max.bytes`, `transactional.id.expiration.ms`), are handed to the
group coordinator. All of them are validated when the configuration is built, before anything is
created on disk: an unknown key or a bad value is a ServerConfigError (exit status 2) naming the key.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kgroup.errors import EXIT_USAGE, KgroupError


class ServerConfigError(KgroupError):
    """A --config entry the server cannot use; the message names the key."""

    exit_code = EXIT_USAGE


def _bool(key, text):
    low = text.strip().lower()
    if low in ("true", "1", "yes"):
        return True
    if low in ("false", "0", "no"):
        return False
    raise ServerConfigError(f"config {key}: expected true or false, got {text!r}")


def _int(key, text, minimum):
    try:
        value = int(str(text).strip())
    except ValueError:
        raise ServerConfigError(f"config {key}: expected an integer, got {text!r}") from None
    if value < minimum:
        raise ServerConfigError(f"config {key}: must be >= {minimum}, got {value}")
    return value


# Kafka's KafkaConfig requires connection.failed.authentication.delay.ms < connections.max.idle.ms
# (600000 by default), so a refused client is answered before its connection idles out.
_CONNECTIONS_MAX_IDLE_MS = 600000


def _failed_authentication_delay(key, text):
    value = _int(key, text, 0)
    if value >= _CONNECTIONS_MAX_IDLE_MS:
        raise ServerConfigError(f"config {key}: must be less than connections.max.idle.ms "
                                f"({_CONNECTIONS_MAX_IDLE_MS}), as Kafka requires, got {value}")
    return value


# key -> (attribute, parser, Kafka's default)
_BROKER_KEYS = {
    "num.partitions": ("num_partitions", lambda k, v: _int(k, v, 1), 1),
    "auto.create.topics.enable": ("auto_create_topics", _bool, True),
    "socket.request.max.bytes": ("socket_request_max_bytes", lambda k, v: _int(k, v, 1), 104857600),
    "offsets.topic.num.partitions": ("offsets_topic_num_partitions", lambda k, v: _int(k, v, 1), 50),
    "log.segment.bytes": ("log_segment_bytes", lambda k, v: _int(k, v, 14), 1073741824),
    "message.max.bytes": ("message_max_bytes", lambda k, v: _int(k, v, 0), 1048588),
    "broker.id": ("node_id", lambda k, v: _int(k, v, 0), 0),
    "node.id": ("node_id", lambda k, v: _int(k, v, 0), 0),
    "cluster.id": ("cluster_id", lambda k, v: str(v), "kgroup-cluster"),
    "offsets.topic.segment.bytes": ("offsets_topic_segment_bytes",
                                    lambda k, v: _int(k, v, 14), 104857600),
    # a failed SASL authentication is answered and closed this much later (Kafka's SocketServer)
    "connection.failed.authentication.delay.ms": ("failed_authentication_delay_ms",
                                                  _failed_authentication_delay, 100),
}

# Listener security settings, read by kgroup.server.security.admission when the broker is built.
_SECURITY_KEYS = {"sasl.enabled.mechanisms", "ssl.keystore.type", "ssl.keystore.location",
                  "ssl.key.password", "ssl.client.auth", "ssl.truststore.type",
                  "ssl.truststore.location"}

# Prefixes passed through to the coordinator (which refuses the names it does not know).
_COORDINATOR_PREFIXES = ("group.", "offsets.")


def _validate_coordinator(values):
    """Build the coordinator's config now, so a bad group.* entry is a usage error up front."""
    from kgroup.coordinator.config import CoordinatorConfig, CoordinatorConfigError

    try:
        CoordinatorConfig(values)
    except CoordinatorConfigError as exc:  # its message names the key
        raise ServerConfigError(str(exc)) from None


# Broker keys the coordinator also knows: parsed here and passed on too.
_SHARED = {"offsets.topic.num.partitions", "offsets.topic.segment.bytes"}


def _coordinator_value(text):
    """Numbers become ints so the coordinator's own validation sees typed values."""
    if isinstance(text, str):
        stripped = text.strip()
        try:
            return int(stripped)
        except ValueError:
            return stripped
    return text


def split_pair(pair) -> tuple[str, object]:
    """A ("key", value) pair, or a "key=value" string split at its first "=", the key stripped."""
    if isinstance(pair, str):
        if "=" not in pair:
            raise ServerConfigError(f"config {pair!r}: expected KEY=VALUE")
        key, value = pair.split("=", 1)
    else:
        key, value = pair
    return key.strip(), value


@dataclass
class ServerConfig:
    num_partitions: int = 1
    auto_create_topics: bool = True
    socket_request_max_bytes: int = 104857600
    offsets_topic_num_partitions: int = 50
    log_segment_bytes: int = 1073741824
    message_max_bytes: int = 1048588
    node_id: int = 0
    cluster_id: str = "kgroup-cluster"
    offsets_topic_segment_bytes: int = 104857600
    failed_authentication_delay_ms: int = 100
    coordinator: dict = field(default_factory=dict)
    security: dict = field(default_factory=dict)  # sasl.enabled.mechanisms, ssl.*: see listeners

    @classmethod
    def from_pairs(cls, pairs):
        """Build from ("key", "value") pairs or "key=value" strings; last one wins."""
        cfg = cls()
        from kgroup.coordinator.config import SETTINGS as coordinator_keys  # some have no prefix
        for pair in pairs:
            key, value = split_pair(pair)
            if key in _BROKER_KEYS:
                attr, parse, _ = _BROKER_KEYS[key]
                setattr(cfg, attr, parse(key, value))
                if key in _SHARED:
                    cfg.coordinator[key] = getattr(cfg, attr)
            elif key in _SECURITY_KEYS:
                cfg.security[key] = value.strip()
            elif key.startswith(_COORDINATOR_PREFIXES) or key in coordinator_keys:
                cfg.coordinator[key] = _coordinator_value(value)
            else:
                known = ", ".join(sorted(_BROKER_KEYS))
                raise ServerConfigError(
                    f"config {key}: not a setting kgroup serve uses (broker keys: {known}; "
                    f"group.* and offsets.* go to the group coordinator)")
        _validate_coordinator(cfg.coordinator)
        return cfg
