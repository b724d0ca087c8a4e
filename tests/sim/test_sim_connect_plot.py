"""`kgroup simulate connect --plot`: a valid PNG, and the timeline it draws is the run's."""

import pytest
from click.testing import CliRunner

from kgroup.commands.cli import cli
from kgroup.sim.connect.simulation import run
from kgroup.sim.connect.params import CASES, resolve
from kgroup.sim.connect.plot import timeline

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "joins.png"
    result = CliRunner().invoke(cli, ["simulate", "connect", "worker-joins", "--plot", str(path), "-o", "json"])
    assert result.exit_code == 0, result.output
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and data[12:16] == b"IHDR" and data.endswith(b"IEND\xaeB`\x82")


def test_plot_refuses_an_unknown_file_type_before_running(tmp_path):
    result = CliRunner().invoke(cli, ["simulate", "connect", "worker-joins", "--plot", str(tmp_path / "x.gif")])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"kgroup simulate connect: --plot {tmp_path / 'x.gif'}: the file name must end in .png or .svg"]


def test_plot_refuses_a_missing_directory_before_running(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import kgroup.sim.connect.simulation as connect

    def boom(*a, **kw):
        raise AssertionError("the run happened before the --plot target was checked")
    monkeypatch.setattr(connect, "run", boom)
    target = tmp_path / "missing" / "x.svg"
    result = CliRunner().invoke(cli, ["simulate", "connect", "worker-joins", "--plot", str(target)])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith(f"--plot {target}: cannot write the file: No such file or directory")


def test_worker_joins_timeline():
    params = resolve("worker-joins")
    data = timeline(run(params), params)
    assert data.workers == ["W1", "W2"]
    assert data.bars == [("W1", 3000, 24000, ("A", "B", "A-1", "A-2", "B-1")),
                         ("W1", 24000, 26000, ("A", "A-1", "A-2")), ("W2", 26000, 26000, ("B", "B-1"))]
    assert data.lifetimes == [("W1", 0, 26000), ("W2", 20000, 26000)]
    assert data.revocations == [(24000, "W1", ("B", "B-1"), "revoked")]
    assert data.epoch_bumps == [(0, 1), (20000, 2)]


def test_a_hung_worker_runs_its_items_until_it_abandons_them():
    params = resolve("worker-bounce")
    data = timeline(run(params), params)
    assert [b for b in data.bars if b[0] == "W2"] == [("W2", 0, 60000, ("B", "B-1")),
                                                      ("W2", 63000, 400000, ("B", "B-1"))]
    assert [w for w in data.lifetimes if w[0] == "W2"] == [("W2", 0, 10000), ("W2", 60000, 400000)]


@pytest.mark.parametrize("case", [c for c in CASES if c != "custom"])
def test_timeline_matches_every_step(case):
    """At every step, each member runs exactly what the bar covering that moment says; the group-epoch
    bumps are the run's rebalances; the revocations are the run's."""
    params = resolve(case)
    document = run(params)
    data = timeline(document, params)
    settled = {step["at_ms"]: step for step in document["steps"]}      # the last step at each time
    for at, step in settled.items():
        if at == document["ended_at_ms"]:
            continue
        for worker, member in step["members"].items():
            held = [items for w, start, end, items in data.bars if w == worker and start <= at < end]
            assert held == ([tuple(member["connectors"] + member["tasks"])]
                            if member["connectors"] + member["tasks"] else []), (step, held)
    assert len(data.epoch_bumps) == document["rebalances"]
    assert [r[0] for r in data.revocations] == [r["at_ms"] for r in document["revoked"]]
    assert set(data.workers) >= set(document["final"]["members"])
