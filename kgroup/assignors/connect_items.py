"""What Connect's worker assignors assign, and the Connect group APIs carry: *items*. An item is a
connector (its name) or a task (``TaskId(connector, n)``, numbered from 1 like the draft).

The assignors (``connect_cooperative``, ``connect_classic``) assign items; the coordinator's
Connect API (``kgroup.coordinator.connect.protocol``, which re-exports these names) carries them as
``ConnectorsAndTasks``; ``simulate connect`` and ``describe`` show them with ``item_set``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True, order=True, slots=True)
class TaskId:
    connector: str
    task: int

    def __str__(self) -> str:
        return f"{self.connector}-{self.task}"


@dataclass(frozen=True, slots=True)
class ConnectorsAndTasks:
    connectors: tuple = ()
    tasks: tuple = ()


def item_order(item) -> tuple:
    """Sorted order of items: connectors by name, then tasks by connector and number."""
    return (1, item.connector, item.task) if isinstance(item, TaskId) else (0, item, 0)


def item_set(items) -> dict:
    """Items as kgroup shows them (simulate connect's and describe's JSON): {"connectors": [names],
    "tasks": ["A-1", ...]}, each sorted (tasks by connector, then number)."""
    ordered = sorted(items, key=item_order)
    return {"connectors": [i for i in ordered if isinstance(i, str)],
            "tasks": [str(i) for i in ordered if not isinstance(i, str)]}


def items_text(shown: dict) -> str:
    """An ``item_set`` in a table cell: "A,B,A-1,B-1", or "-" for none."""
    return ",".join(shown["connectors"] + shown["tasks"]) or "-"


def items_of(assignment: ConnectorsAndTasks | None) -> frozenset:
    if assignment is None:
        return frozenset()
    return frozenset(assignment.connectors) | frozenset(
        task if isinstance(task, TaskId) else TaskId(*task) for task in assignment.tasks)


def connectors_and_tasks(items: Iterable) -> ConnectorsAndTasks:
    ordered = sorted(items, key=item_order)
    return ConnectorsAndTasks(connectors=tuple(i for i in ordered if not isinstance(i, TaskId)),
                              tasks=tuple(i for i in ordered if isinstance(i, TaskId)))


def connector_items(connectors: dict) -> frozenset:
    """Every item of a connector set: each connector and its tasks 1..n."""
    return frozenset(connectors) | frozenset(
        TaskId(name, n) for name, count in connectors.items() for n in range(1, count + 1))
