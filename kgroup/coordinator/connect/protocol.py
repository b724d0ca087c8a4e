"""Connect worker groups (group type ``connect``): the Python API of the three Connect APIs.

The draft design moving Kafka Connect onto KIP-848's engine adds ConnectGroupHeartbeat,
ConnectGroupPrepareAssignment and ConnectGroupInstallAssignment; the unit of assignment is an
*item*: a connector (its name) or a task (``TaskId(connector, n)``, numbered from 1 like the draft),
defined with the worker assignors that assign them (``kgroup.assignors.connect_items``).
These are plain frozen dataclasses handed to ``GroupCoordinator.handle``; the handlers are in
``connect.heartbeat`` and ``connect.assignment``, the group in ``connect.group``, its
``__worker_offsets`` records in ``connect.records``.

Kafka never allocated API keys or the draft's two new error codes: kgroup numbers them far above
Kafka's own (API keys 1000-1002, COMPUTE_ASSIGNMENT 1000, INVALID_ASSIGNMENT 1001) so no future
Kafka number collides; the other errors are Kafka's codes. kgroup's ConnectGroupSetConnectors
(the connector set, which the draft carries in no API) is key 1003, its ConnectGroupDescribe 1004.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from kgroup.assignors.connect_items import (  # noqa: F401  (re-exported: the API's items)
    ConnectorsAndTasks, TaskId, connector_items, connectors_and_tasks, item_order, item_set, items_of,
    items_text)
from kgroup.kafka_errors import (FENCED_MEMBER_EPOCH, GROUP_ID_NOT_FOUND, INVALID_REQUEST, NONE,
                                 UNKNOWN_MEMBER_ID, UNSUPPORTED_ASSIGNOR)

CONNECT_GROUP_HEARTBEAT = 1000
CONNECT_GROUP_PREPARE_ASSIGNMENT = 1001
CONNECT_GROUP_INSTALL_ASSIGNMENT = 1002
SET_CONNECTORS = 1003          # ConnectGroupSetConnectors: kgroup's own operation (the draft has none)
CONNECT_GROUP_DESCRIBE = 1004  # ConnectGroupDescribe: kgroup's own (Kafka describes no worker group)

COMPUTE_ASSIGNMENT = 1000
INVALID_ASSIGNMENT = 1001
ERROR_NAMES = {COMPUTE_ASSIGNMENT: "COMPUTE_ASSIGNMENT", INVALID_ASSIGNMENT: "INVALID_ASSIGNMENT"}

__all__ = ["TaskId", "ConnectorsAndTasks", "Assignor", "ConnectGroupHeartbeatRequest",
           "ConnectGroupHeartbeatResponse", "Assignment", "ConnectGroupPrepareAssignmentRequest",
           "ConnectGroupPrepareAssignmentResponse", "PreparedMember",
           "ConnectGroupInstallAssignmentRequest", "ConnectGroupInstallAssignmentResponse",
           "InstallMember", "ConnectGroupSetConnectors", "ConnectGroupSetConnectorsResponse",
           "ConnectGroupDescribeRequest", "ConnectGroupDescribeResponse", "DescribedConnectGroup",
           "NONE", "UNKNOWN_MEMBER_ID", "INVALID_REQUEST", "GROUP_ID_NOT_FOUND", "FENCED_MEMBER_EPOCH",
           "UNSUPPORTED_ASSIGNOR", "COMPUTE_ASSIGNMENT", "INVALID_ASSIGNMENT", "error_name",
           "items_of", "connectors_and_tasks", "item_order", "connector_items"]


@dataclass(frozen=True, slots=True)
class Assignor:
    name: str
    minimum_version: int
    maximum_version: int
    reason: int
    version: int
    metadata: bytes = b""


@dataclass(frozen=True, slots=True)
class ConnectGroupHeartbeatRequest:
    API_KEY: ClassVar[int] = CONNECT_GROUP_HEARTBEAT
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    client_assignors: tuple | list | None = None
    connectors_and_tasks: ConnectorsAndTasks | None = None


@dataclass(frozen=True, slots=True)
class Assignment:
    error: int
    connectors_and_tasks: ConnectorsAndTasks
    version: int
    metadata: bytes


@dataclass(frozen=True, slots=True)
class ConnectGroupHeartbeatResponse:
    error_code: int
    error_message: str | None
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: Assignment | None = None
    throttle_time_ms: int = 0


@dataclass(frozen=True, slots=True)
class ConnectGroupPrepareAssignmentRequest:
    API_KEY: ClassVar[int] = CONNECT_GROUP_PREPARE_ASSIGNMENT
    group_id: str
    member_id: str
    member_epoch: int


@dataclass(frozen=True, slots=True)
class PreparedMember:
    member_id: str
    member_epoch: int
    instance_id: str | None
    version: int
    reason: int
    metadata: bytes
    connectors_and_tasks: ConnectorsAndTasks


@dataclass(frozen=True, slots=True)
class ConnectGroupPrepareAssignmentResponse:
    error_code: int
    error_message: str | None = None
    group_epoch: int = -1
    assignor_name: str | None = None
    members: tuple = ()
    connectors: dict | None = None      # kgroup's addition: connector -> task count
    throttle_time_ms: int = 0


@dataclass(frozen=True, slots=True)
class InstallMember:
    member_id: str
    connectors_and_tasks: ConnectorsAndTasks | None
    version: int = 0
    metadata: bytes = b""


@dataclass(frozen=True, slots=True)
class ConnectGroupInstallAssignmentRequest:
    API_KEY: ClassVar[int] = CONNECT_GROUP_INSTALL_ASSIGNMENT
    group_id: str
    member_id: str
    member_epoch: int
    group_epoch: int
    error: int = 0
    members: tuple | list = ()


@dataclass(frozen=True, slots=True)
class ConnectGroupInstallAssignmentResponse:
    error_code: int
    error_message: str | None = None
    throttle_time_ms: int = 0


@dataclass(frozen=True, slots=True)
class ConnectGroupSetConnectors:
    """kgroup-only: the Connect config topic's connectors (name -> task count) for the group."""
    API_KEY: ClassVar[int] = SET_CONNECTORS
    group_id: str
    connectors: dict


@dataclass(frozen=True, slots=True)
class ConnectGroupSetConnectorsResponse:
    error_code: int
    error_message: str | None = None
    group_epoch: int = -1


@dataclass(frozen=True, slots=True)
class ConnectGroupDescribeRequest:
    """kgroup-only: describe worker groups (each answered with its ``coord.connect_group`` snapshot)."""
    API_KEY: ClassVar[int] = CONNECT_GROUP_DESCRIBE
    group_ids: tuple


@dataclass(frozen=True, slots=True)
class DescribedConnectGroup:
    group_id: str
    error_code: int
    error_message: str | None = None
    snapshot: object = None          # connect.group.ConnectGroupSnapshot when error_code is NONE


@dataclass(frozen=True, slots=True)
class ConnectGroupDescribeResponse:
    groups: tuple                    # DescribedConnectGroup, in the order asked
    throttle_time_ms: int = 0


def error_name(code: int) -> str:
    from kgroup.kafka_errors import name_of
    return ERROR_NAMES.get(code) or name_of(code)


# kgroup's limit on the tasks of one connector set: the coordinator holds every task id in memory
# and in its records, so a set of billions (a typo, a fuzzed request) must be refused, not built.
MAX_CONNECTOR_SET_TASKS = 100_000


def connector_set_problem(connectors: dict) -> str | None:
    """Why a connector set (name -> task count) cannot be taken, or None."""
    if any(count < 0 for count in connectors.values()):
        return "a task count is negative"
    if sum(connectors.values()) > MAX_CONNECTOR_SET_TASKS:
        return f"more than {MAX_CONNECTOR_SET_TASKS} tasks in the connector set"
    return None
