"""`kgroup demo` end to end (in-process broker, real consumers) and the man pages of the client commands."""

from __future__ import annotations

import re
import pathlib

import pytest
from click.testing import CliRunner

from kgroup.commands.cli import COMMANDS, cli

ROOT = pathlib.Path(__file__).resolve().parents[2]
MINE = ["list", "describe", "remove-members", "wait", "demo", "reset-offsets", "delete-offsets", "delete"]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_is_in_the_index_page_and_has_json(name):
    index = (ROOT / "man" / "kgroup.1").read_text()
    assert f".B {name}\n" in index and f"kgroup-{name} (1)" in index
    assert (ROOT / "man" / f"kgroup-{name}.1").is_file()
    help_text = CliRunner().invoke(cli, [name, "--help"]).stdout
    assert re.search(r"-o, --output \[[^\]]*json", help_text), f"{name} has no -o json"


def test_demo_runs_the_tour_and_cleans_up(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = CliRunner().invoke(cli, ["demo", "--consumers", "3"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = result.stdout
    commands = re.findall(r"^\$ kgroup (\S+(?: \S+)?)", out, re.M)
    assert [c.split()[0] for c in commands] == ["list", "describe", "describe", "remove-members", "remove-members",
                                                 "describe", "remove-members", "wait", "reset-offsets",
                                                 "reset-offsets", "decode-offsets", "describe"]
    assert re.search(r"^orders\s+0\s+\d+\s+0\s+0\s+\d+", out, re.M)  # the plan: partition 0 back to 0
    assert re.search(r"Generation before (\d+), after \1: no rebalance", out)
    assert re.search(r"^node-\d\s+instance id\s+removed$", out, re.M)
    assert re.search(r"^after\s+Stable\s+2\s+node-\d node-\d$", out, re.M)
    assert re.search(r"^demo-app\s+.*\s+Stable\s+classic\s+consumer/range\s+2 \(static 2, dynamic 0\)$", out, re.M)
    # offline, from the log: the group emptied for the reset, its offsets back at 0
    assert re.search(r"^demo-app\s+\(offline\)\s+Empty\s+\d+\s+classic\s+\S+\s+0 \(static 0, dynamic 0\)$", out, re.M)
    assert re.search(r"^orders\s+0\s+0\s+-", out, re.M)
    restarted = re.search(r"Rolling restart of (node-\d)", out).group(1)
    # the restarted instance, seen in the log with a second member id
    assert re.search(rf"^{restarted}\s+1\s+no\s+/127.0.0.1$", out, re.M)
    assert list(tmp_path.iterdir()) == []  # the temporary log directory is gone


def test_demo_json_is_one_document_of_the_steps_and_their_own_json(tmp_path, monkeypatch):
    import json
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = CliRunner().invoke(cli, ["demo", "-o", "json", "--consumers", "2"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)  # nothing but the one document on stdout
    assert doc["ok"] is True and doc["error"] is None
    runs = [s for s in doc["steps"] if "command" in s]
    assert [r["command"][1] for r in runs] == ["list", "describe", "describe", "remove-members", "remove-members",
                                               "describe", "remove-members", "wait", "reset-offsets",
                                               "reset-offsets", "decode-offsets", "describe"]
    assert all(r["exit_code"] == 0 and r["command"][2:4] == ["-o", "json"] for r in runs)
    removal = runs[4]["output"]
    assert removal["dry_run"] is False and removal["removed"] == 1 and removal["failed"] == 0
    [final] = runs[5]["output"]
    assert final["state"] == "Stable" and len(final["members"]) == 1 and final["members"][0]["static"] is True
    assert any("no rebalance" in s.get("note", "") for s in doc["steps"])
    plan, executed = runs[8]["output"], runs[9]["output"]
    assert plan["executed"] is False and executed["executed"] is True and executed["state"] == "Empty"
    assert {r["new"] for r in executed["offsets"]} == {0} and all(r["error"] is None for r in executed["offsets"])
    assert list(tmp_path.iterdir()) == []


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


def test_demo_sigterm_removes_its_temporary_directory_as_sigint_does(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    env = dict(os.environ, TMPDIR=str(tmp_path), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "kgroup.commands.cli", "demo"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=str(ROOT))
    try:
        for line in proc.stdout:  # mid-tour: the broker is up, consumers are starting
            if "static consumers" in line:
                break
        assert any(tmp_path.glob("kgroup-demo-*/logs")), "the demo did not start its broker"
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM
    assert list(tmp_path.glob("kgroup-demo-*")) == []
