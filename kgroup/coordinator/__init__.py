"""kgroup.coordinator: Kafka's classic group coordinator as a pure state machine on virtual time.

    coord = GroupCoordinator(config={...}, now_ms=0, uuid_source=None)
    reply = coord.handle(request, client_id, client_host)   # kafka-python request objects
    coord.advance(ms)
    coord = GroupCoordinator(..., log_writer=fn)   # fn(entries) persists each operation's records

The contract (what the embedding API promises) is in docs/architecture.md, "The embedded coordinator".
"""

# Loaded on first use (PEP 562): `kgroup.coordinator.offsets.store`, which the decode wing's state replay
# shares, must not pull in the request handlers and kafka-python's protocol classes with it.
_EXPORTS = {
    "CoordinatorReplayError": "codes", "UnsupportedRequest": "codes",
    "CoordinatorConfig": "config", "CoordinatorConfigError": "config",
    "GroupCoordinator": "coordinator",
    "ClassicGroup": "classic.group", "Member": "classic.group", "Group": "group_types",
    "GroupSnapshot": "classic.snapshots", "MemberSnapshot": "classic.snapshots",
    "LogEntry": "runtime.log", "Reply": "runtime.log",
}

__all__ = ["GroupCoordinator", "CoordinatorConfig", "CoordinatorConfigError", "LogEntry", "Reply",
           "UnsupportedRequest", "CoordinatorReplayError", "Group", "ClassicGroup", "Member",
           "GroupSnapshot", "MemberSnapshot"]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
