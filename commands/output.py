"""Output only commands need (click's echo, the wait status line); the shared writers are kgroup.writers."""

from __future__ import annotations

import json

import click

from kgroup.writers import StatusLine


def echo_json(obj) -> None:
    click.echo(json.dumps(obj, ensure_ascii=False, indent=2))


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
