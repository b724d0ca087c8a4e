"""Kafka's command-line tools print column tables (``%-Ns`` columns, each as wide as its widest value
or its header): read them back as dicts, and run kgroup beside them.

``parse_tables(text)`` -> a list of tables, one per header line (a blank line or a new header starts
one), each a list of ``{COLUMN: value}`` rows. A column runs from the start of its header to the
start of the next one, so an empty value (a dynamic member's GROUP-INSTANCE-ID) reads as ``""``.
"""

from __future__ import annotations

import json
import re
import subprocess

HEADERS = ("GROUP", "TOPIC", "TYPE")           # the first column of every table the tools print
_COLUMN = re.compile(r"COORDINATOR \(ID\)|\S+")
_HEADER = re.compile(r"^[A-Z#()\- ]+$")      # the tests' group and topic names are lower case


def _columns(header: str) -> list[tuple[str, int]]:
    return [(m.group(0), m.start()) for m in _COLUMN.finditer(header)]


def parse_tables(text: str) -> list[list[dict[str, str]]]:
    tables: list[list[dict[str, str]]] = []
    columns = None
    for line in text.splitlines():
        if not line.strip():
            columns = None
            continue
        if line.split()[0] in HEADERS and _HEADER.match(line):
            columns = _columns(line)
            tables.append([])
            continue
        if columns is None:
            continue                    # a message line ("Consumer group 'x' has no active members.")
        row = {}
        for i, (name, start) in enumerate(columns):
            end = columns[i + 1][1] if i + 1 < len(columns) else None
            row[name] = line[start:end].strip()
        tables[-1].append(row)
    return tables


def rows(text: str) -> list[dict[str, str]]:
    """Every row of every table of a tool's output."""
    return [row for table in parse_tables(text) for row in table]


def assignment_text(text: str) -> dict[str, set[int]]:
    """Kafka's ``t:0,1;u:2`` (or ``-``) as {topic: partitions}."""
    if text in ("", "-"):
        return {}
    out: dict[str, set[int]] = {}
    for part in text.split(";"):
        topic, _, parts = part.rpartition(":")
        out.setdefault(topic, set()).update(int(p) for p in parts.split(",") if p)
    return out


def assignment_json(items) -> dict[str, set[int]]:
    """kgroup's ``[{"topic", "partitions"}]`` (or null) the same way."""
    out: dict[str, set[int]] = {}
    for item in items or []:
        if item["partitions"]:
            out.setdefault(item["topic"], set()).update(item["partitions"])
    return out


def dash(value) -> str:
    """A kgroup value as Kafka's tools print it: ``-`` for a missing one."""
    return "-" if value is None else str(value)


def kgroup(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """kgroup's command line, in this process (click's runner: no interpreter start per call; not
    from two threads at once, the runner swaps sys.stdout)."""
    from click.testing import CliRunner

    from kgroup.commands.cli import cli

    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    done = subprocess.CompletedProcess(["kgroup", *args], result.exit_code, result.stdout, result.stderr)
    if check and done.returncode != 0:
        raise AssertionError(f"kgroup {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


def kgroup_json(*args: str):
    return json.loads(kgroup(*args, "-o", "json").stdout)
