"""`describe --from-dump` and `list --from-dump` show Connect worker groups from `__worker_offsets`
beside the classic and consumer groups of `__consumer_offsets`: workers, epochs, what each runs,
its target, the connector set and what is unassigned, in table and JSON."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from helpers.connect_wire import worker_group_log

from kgroup.commands.cli import cli
from kgroup.records.writer import encode_batch
from kgroup.sim.connect.simulation import run
from kgroup.sim.connect.cluster import Cluster
from kgroup.sim.connect.params import resolve


def invoke(*args):
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def serve_dump(tmp_path_factory):
    """A serve log dir with a worker group "cc" (W1 runs A, A-1) and a classic group "g" (offsets)."""
    return worker_group_log(tmp_path_factory.mktemp("dump") / "logs", commits={"g": {("t", 0): 5}})


def test_describe_json_shows_the_worker_group(serve_dump):
    views = {v["group"]: v for v in json.loads(invoke("describe", "--all-groups", "--from-dump", str(serve_dump),
                                                      "-o", "json"))}
    assert sorted(views) == ["cc", "g"]
    cc = views["cc"]
    assert {k: cc[k] for k in ("state", "type", "group_epoch", "assignment_epoch", "assignor", "connectors")} == {
        "state": "Stable", "type": "connect", "group_epoch": 1, "assignment_epoch": 1,
        "assignor": "incremental-cooperative", "connectors": {"A": 1, "B": 2}}
    assert cc["unassigned"] == {"connectors": ["B"], "tasks": ["B-1", "B-2"]}
    [w1] = cc["members"]
    assert (w1["member_id"], w1["member_epoch"], w1["client_id"]) == ("W1", 1, "raw-test")
    assert w1["assignment"] == w1["target_assignment"] == {"connectors": ["A"], "tasks": ["A-1"]}
    assert views["g"]["type"] == "classic"


def test_describe_table_shows_the_worker_group(serve_dump):
    text = invoke("describe", "cc", "--from-dump", str(serve_dump), "-o", "table")
    lines = text.splitlines()
    assert lines[0].split() == ["GROUP", "COORDINATOR", "STATE", "TYPE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH",
                                "ASSIGNOR", "ASSIGNER", "WORKERS"]
    assert lines[1].split() == ["cc", "(offline)", "Stable", "connect", "1", "1", "incremental-cooperative", "-", "1"]
    assert "connectors: A:1 B:2; unassigned: B,B-1,B-2" in lines
    assert ["-", "W1", "raw-test", "/127.0.0.1", "1", "A,A-1", "A,A-1", "caught-up"] in [l.split() for l in lines]
    assert lines[-1] == "all 1 worker(s) caught up at assignment epoch 1"


def test_list_from_dump(serve_dump):
    rows = json.loads(invoke("list", "--from-dump", str(serve_dump), "-o", "json"))
    assert [(r["group"], r["state"], r["type"], r["coordinator"]) for r in rows] == [
        ("cc", "Stable", "connect", None), ("g", "Empty", "classic", None)]
    only = json.loads(invoke("list", "--from-dump", str(serve_dump), "--type", "connect", "-o", "json"))
    assert [r["group"] for r in only] == ["cc"]
    result = CliRunner().invoke(cli, ["list", "--type", "kafka"])
    assert result.exit_code == 2 and "'kafka'; choose from classic, consumer, share, streams, connect" in result.output


def test_a_simulated_run_replayed_from_its_records(tmp_path, monkeypatch):
    """The records of `simulate connect worker-leaves` (mid-delay: W2's items unassigned), written as
    a __worker_offsets segment, describe as the simulator's document says."""
    coordinators = []
    original = Cluster.__init__

    def keep(self, *args, **kwargs):
        original(self, *args, **kwargs)
        coordinators.append(self.coord)
    monkeypatch.setattr(Cluster, "__init__", keep)
    document = run(resolve("worker-leaves", until_ms=100_000))
    partition = tmp_path / "__worker_offsets-0"
    partition.mkdir()
    (partition / "00000000000000000000.log").write_bytes(
        encode_batch(coordinators[0].worker_records, timestamp=1_000))
    [view] = json.loads(invoke("describe", "cc", "--from-dump", str(tmp_path), "-o", "json"))
    final = document["final"]
    assert (view["group_epoch"], view["assignment_epoch"]) == (final["group_epoch"], final["assignment_epoch"])
    assert {m["member_id"]: (m["member_epoch"], m["target_assignment"]) for m in view["members"]} == {
        w: (m["member_epoch"], final["target"][w]) for w, m in final["members"].items()}
    assert view["unassigned"] == final["unassigned"] == {"connectors": ["B"], "tasks": ["B-1"]}
