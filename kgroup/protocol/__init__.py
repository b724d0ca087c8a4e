"""Kafka wire messages kafka-python 3.0 does not ship, declared as data the way it declares its own.

kafka-python builds each message class from Kafka's JSON message schema (its ``JsonSchemaData``
metaclass reads ``<ClassName>.json`` through ``load_json``). The classes here point that loader at
``kgroup/protocol/schemas`` instead, so they encode and decode exactly like kafka-python's classes
(``Request[v].encode()``, ``Response.decode(data, version=v)``) and serve can treat them alike.
"""

import keyword
import types

from kafka.protocol.api_message import ApiMessage

from kgroup.protocol import schemas

__all__ = [
    "ConsumerGroupHeartbeatRequest",
    "ConsumerGroupHeartbeatResponse",
    "ConsumerGroupDescribeRequest",
    "ConsumerGroupDescribeResponse",
    "DeleteGroupsRequest",
    "DeleteGroupsResponse",
    "ConnectGroupHeartbeatRequest",
    "ConnectGroupHeartbeatResponse",
    "ConnectGroupPrepareAssignmentRequest",
    "ConnectGroupPrepareAssignmentResponse",
    "ConnectGroupInstallAssignmentRequest",
    "ConnectGroupInstallAssignmentResponse",
    "ConnectGroupSetConnectorsRequest",
    "ConnectGroupSetConnectorsResponse",
    "ConnectGroupDescribeRequest",
    "ConnectGroupDescribeResponse",
    "ShareGroupDescribeRequest",
    "ShareGroupDescribeResponse",
    "DescribeShareGroupOffsetsRequest",
    "DescribeShareGroupOffsetsResponse",
    "StreamsGroupDescribeRequest",
    "StreamsGroupDescribeResponse",
    "AlterShareGroupOffsetsRequest",
    "AlterShareGroupOffsetsResponse",
    "DeleteShareGroupOffsetsRequest",
    "DeleteShareGroupOffsetsResponse",
    "fast_constructor",
]


class ConsumerGroupHeartbeatRequest(ApiMessage, load_json=schemas):
    pass


class ConsumerGroupHeartbeatResponse(ApiMessage, load_json=schemas):
    pass


class ConsumerGroupDescribeRequest(ApiMessage, load_json=schemas):
    pass


class ConsumerGroupDescribeResponse(ApiMessage, load_json=schemas):
    pass


# DeleteGroups v3 (Kafka 4.4, KIP-1331: a per-group ErrorMessage); kafka-python 3.0 stops at v2
class DeleteGroupsRequest(ApiMessage, load_json=schemas):
    pass


class DeleteGroupsResponse(ApiMessage, load_json=schemas):
    pass


# The Connect draft's three APIs, kgroup's ConnectGroupSetConnectors and ConnectGroupDescribe:
# EXPERIMENTAL, under kgroup's own API keys 1000-1004 (Kafka never allocated any). The coordinator's Python API for
# them is kgroup.coordinator.connect.protocol.
def _declared(name: str) -> type:
    """``class <name>(ApiMessage, load_json=schemas): pass``, for a message that adds nothing."""
    return types.new_class(name, (ApiMessage,), {"load_json": schemas},
                           lambda namespace: namespace.update(__module__=__name__, __qualname__=name))


ConnectGroupHeartbeatRequest = _declared("ConnectGroupHeartbeatRequest")
ConnectGroupHeartbeatResponse = _declared("ConnectGroupHeartbeatResponse")
ConnectGroupPrepareAssignmentRequest = _declared("ConnectGroupPrepareAssignmentRequest")
ConnectGroupPrepareAssignmentResponse = _declared("ConnectGroupPrepareAssignmentResponse")
ConnectGroupInstallAssignmentRequest = _declared("ConnectGroupInstallAssignmentRequest")
ConnectGroupInstallAssignmentResponse = _declared("ConnectGroupInstallAssignmentResponse")
ConnectGroupSetConnectorsRequest = _declared("ConnectGroupSetConnectorsRequest")
ConnectGroupSetConnectorsResponse = _declared("ConnectGroupSetConnectorsResponse")
ConnectGroupDescribeRequest = _declared("ConnectGroupDescribeRequest")
ConnectGroupDescribeResponse = _declared("ConnectGroupDescribeResponse")


# Share groups (KIP-932) and streams groups (KIP-1071) at Kafka 4.4's versions: describe reads them
# (ShareGroupDescribe v1, DescribeShareGroupOffsets v0-1, StreamsGroupDescribe v0-1); the share
# offsets' Alter (v0) and Delete (v0) are declared for reset-offsets / delete-offsets.
ShareGroupDescribeRequest = _declared("ShareGroupDescribeRequest")
ShareGroupDescribeResponse = _declared("ShareGroupDescribeResponse")
DescribeShareGroupOffsetsRequest = _declared("DescribeShareGroupOffsetsRequest")
DescribeShareGroupOffsetsResponse = _declared("DescribeShareGroupOffsetsResponse")
StreamsGroupDescribeRequest = _declared("StreamsGroupDescribeRequest")
StreamsGroupDescribeResponse = _declared("StreamsGroupDescribeResponse")
AlterShareGroupOffsetsRequest = _declared("AlterShareGroupOffsetsRequest")
AlterShareGroupOffsetsResponse = _declared("AlterShareGroupOffsetsResponse")
DeleteShareGroupOffsetsRequest = _declared("DeleteShareGroupOffsetsRequest")
DeleteShareGroupOffsetsResponse = _declared("DeleteShareGroupOffsetsResponse")


def fast_constructor(cls):
    """``make(version, *values)``, the same object as ``cls(version=version, **fields)`` with every
    field given in schema order (version None for a nested struct), without kafka-python's walk of
    the schema per field: the coordinator builds a heartbeat response on every heartbeat, at a third
    of the cost this way. It compares itself once with the real constructor and falls back to it if
    kafka-python ever lays its objects out differently."""
    names = tuple(field.name for field in cls._struct._fields)
    extra = ("_header", "_min_version", "_max_version") if issubclass(cls, ApiMessage) else ()

    def slow(version, *values):
        return cls(version=version, **dict(zip(names, values)))

    sample = [f"v{k}" for k in range(len(names))]
    version = cls._struct.max_version if extra else None
    if any(field._tag is not None for field in cls._struct._fields) or \
            not all(name.isidentifier() and not keyword.iskeyword(name) for name in names):
        return slow
    make = _compiled_make(cls, names, extra)
    return make if _slots(make(version, *sample)) == _slots(slow(version, *sample)) else slow


def _compiled_make(cls, names: tuple, extra: tuple):
    """``make`` as straight-line code (one attribute store per slot, no loop over the names)."""
    params = [f"v{k}" for k in range(len(names))]
    body = [f"    message.{name} = None" for name in extra]
    body += ["    message._version = version", "    message.tags = message.unknown_tags = None"]
    body += [f"    message.{name} = {param}" for name, param in zip(names, params)]
    source = (f"def make(version, {', '.join(params)}):\n    message = new(cls)\n"
              + "\n".join(body) + "\n    return message\n")
    namespace = {"new": object.__new__, "cls": cls}
    exec(compile(source, f"<fast constructor {cls.__name__}>", "exec"), namespace)
    return namespace["make"]


def _slots(message) -> dict:
    return {name: getattr(message, name, None) for klass in type(message).__mro__
            for name in getattr(klass, "__slots__", ())}
