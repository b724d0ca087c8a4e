"""Output only commands need (click's echo, the wait status line); the shared writers are kgroup.writers."""

from __future__ import annotations

import sys

import click

from kgroup.writers import StatusLine, stdout_reader_gone, write_json


def echo_json(obj) -> None:
    """The document as `json.dumps(obj, ensure_ascii=False, indent=2)`, an array given as an
    iterator or a lazy sequence streamed (``write_json``: a simulation's event log). A reader that
    goes away (`| head`) ends the output, not the command."""
    try:
        write_json(obj, sys.stdout)
        sys.stdout.flush()
    except BrokenPipeError:
        stdout_reader_gone()


class WaitStatus(StatusLine):
    """`waiting for GROUP: STATE, N members, 3.4s`, cleared before the result is printed.
    Passed to kgroup.client.waiting.poll as on_poll."""

    def __init__(self, group: str, enabled: bool | None = None):
        super().__init__(enabled)
        self.group = group

    def __call__(self, view, elapsed_s: float) -> None:
        what = ("no answer from the coordinator, retrying" if view is None
                else f"{view.state}, {len(view.members)} member(s)")
        self.show(f"waiting for {self.group}: {what}, {elapsed_s:.1f}s")


def render_rows(rows: list[dict], columns: list[str], output: str) -> None:
    """Result rows as a JSON list, CSV or a table ('-' for no value)."""
    from kgroup.writers import CsvWriter, table

    if output == "json":
        echo_json(rows)
    elif output == "csv":
        writer = CsvWriter(columns)
        for row in rows:
            writer.write(row)
    else:
        def cell(value):
            if value is None:
                return "-"
            if isinstance(value, bool):  # `delete`'s DELETED: yes/no, not Python's True/False
                return "yes" if value else "no"
            return str(value)

        table([[cell(row.get(c)) for c in columns] for row in rows],
              [c.upper().replace("_", "-") for c in columns])
