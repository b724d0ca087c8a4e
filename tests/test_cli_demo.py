"""`kgroup demo` end to end (in-process broker, real consumers) and the man pages of the client commands."""

from __future__ import annotations

import re
import pathlib

import pytest
from click.testing import CliRunner

from kgroup.commands.cli import COMMANDS, cli

ROOT = pathlib.Path(__file__).resolve().parent.parent
MINE = ["list", "describe", "remove-members", "wait", "demo"]


def test_demo_runs_the_tour_and_cleans_up(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = CliRunner().invoke(cli, ["demo", "--consumers", "3"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = result.stdout
    commands = re.findall(r"^\$ kgroup (\S+(?: \S+)?)", out, re.M)
    assert [c.split()[0] for c in commands] == ["list", "describe", "describe", "remove-members", "remove-members",
                                                 "describe", "decode-offsets", "describe"]
    assert re.search(r"Generation before (\d+), after \1: no rebalance", out)
    assert re.search(r"^node-\d\s+instance id\s+removed$", out, re.M)
    assert re.search(r"^after\s+Stable\s+2\s+node-\d node-\d$", out, re.M)
    assert re.search(r"^demo-app\s+\S+\s+Stable\s+\d+\s+consumer/range\s+2 \(static 2, dynamic 0\)$", out, re.M)
    restarted = re.search(r"Rolling restart of (node-\d)", out).group(1)
    # the restarted instance, seen in the log with a second member id
    assert re.search(rf"^{restarted}\s+1\s+no\s+/127.0.0.1$", out, re.M)
    assert list(tmp_path.iterdir()) == []  # the temporary log directory is gone


@pytest.mark.parametrize("name", MINE)
def test_man_page_in_step_with_help(name):
    page = (ROOT / "man" / f"kgroup-{name}.1").read_text()
    assert page.startswith(f".TH KGROUP-{name.upper()} 1")
    help_text = CliRunner().invoke(cli, [name, "--help"]).stdout
    options = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", help_text)) - {"--help"}
    documented = set(re.findall(r"--([a-z][a-z-]+)", page.replace("\\-", "-")))
    assert {o[2:] for o in options} <= documented, f"undocumented in man page: {sorted(options - documented)}"
    assert name in COMMANDS
    index = (ROOT / "man" / "kgroup.1").read_text()
    assert f".B {name}\n" in index and f"kgroup-{name} (1)" in index
