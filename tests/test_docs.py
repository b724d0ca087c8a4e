"""The documentation tells the truth about the commands: every option `--help` shows is in the
command's man page and in its README section, the defaults `--help` states are the real ones, and
the modules docs/architecture.md names exist."""

from __future__ import annotations

import pathlib
import re

import pytest
from click.testing import CliRunner

from kgroup.commands.cli import COMMANDS, cli

ROOT = pathlib.Path(__file__).resolve().parent.parent


def help_text(command: str) -> str:
    result = CliRunner().invoke(cli, [*command.split(), "--help"])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("command", ["serve", "demo"])
def test_plain_text_commands_say_their_output_default_is_table(command):
    """serve and demo print text whatever stdout is; their help says so once, not 'table on a
    terminal, table otherwise'."""
    text = " ".join(help_text(command).split())
    assert "Output format: table, json (default: table)." in text
    assert "table otherwise" not in text


def test_live_commands_say_json_when_not_a_terminal():
    text = " ".join(help_text("list").split())
    assert "(default: table on a terminal, json otherwise)" in text


def test_by_duration_takes_seconds_as_its_metavar_says(monkeypatch):
    from kgroup.client.reset import parse_duration_ms

    assert "--by-duration PnDTnHnMnS" in help_text("reset-offsets")
    assert parse_duration_ms("P1DT2H3M4S") == ((24 + 2) * 3600 + 3 * 60 + 4) * 1000
