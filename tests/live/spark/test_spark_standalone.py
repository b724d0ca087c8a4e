"""`decode-offsets --engine spark --master spark://...` on a real Spark standalone cluster: a master and
two one-core workers started from the installed pyspark on loopback (tests/helpers/spark_cluster.py).

The driver is a process of its own, as a user's is: it registers an application with the master, the
workers start executors, and the executors' Python workers decode, opening the files by the paths the
driver gave them (the paths on the command line are relative: an executor's working directory is
its own). Checked: records on stdout and `--view state` equal the local engine's, `-o jsonl --out`
written by the executors (Spark's text writer, through the file system they share with the driver)
concatenates to the local engine's output, and a `kgroup` run interrupted while the executors write
leaves no application on the master, no executor on the workers and nothing under --out or in its
TMPDIR.

Time: every application costs a driver JVM and two executor JVMs (~15 s on two cores), so the three
comparisons run in one driver process (`ONE_DRIVER`: the session kgroup's `get_session` makes, then
the three `decode-offsets` command lines, each finding it running); the interrupted run is a whole
`kgroup` process.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from helpers.spark_cluster import standalone_cluster
from kgroup.commands.cli import cli
from kgroup.decode.spark.session import unavailable_reason
from decode.test_spark_plan import write_mixed_dump

REASON = unavailable_reason()
pytestmark = [pytest.mark.spark, pytest.mark.skipif(REASON is not None, reason=f"Spark unavailable: {REASON}")]
SPLIT = "8k"  # bytes: three to four ranges per segment, tasks on both executors
LOGS = "logs"
#: An executor's log line for a task's committed output: its partition (part-NNNNN) and --out.
SAVED = re.compile(r"Saved output of task '\S+_m_(\d{6})_\d+' to file:(\S+)/_temporary/")

#: A driver process running several decode-offsets command lines on one session (argv[1]: JSON of the
#: master, the Spark conf and the command lines); prints [exit code, stdout, stderr] of each.
ONE_DRIVER = """
import json, os, sys
from click.testing import CliRunner
from kgroup.commands.cli import cli
from kgroup.decode.spark.session import get_session, jvm_log_file

spec = json.loads(sys.argv[1])
session, _ = get_session(spec["master"], spec["conf"])
try:
    results = []
    for args in spec["runs"]:
        result = CliRunner().invoke(cli, ["decode-offsets", *args], catch_exceptions=False)
        results.append([result.exit_code, result.stdout, result.stderr])
finally:
    session.stop()
    os.remove(jvm_log_file())
json.dump(results, sys.stdout)
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from standalone_cluster(tmp_path_factory.mktemp("spark-standalone"))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """The drivers' working directory, holding `logs/` (two partitions, one of them with two
    segments) and `big/` (one segment of ~600 kB, for the interrupted run)."""
    root = tmp_path_factory.mktemp("spark-standalone-runs")
    for part, segments in ((3, [(0, 3, 150), (100000, 4, 60)]), (9, [(0, 9, 150)])):
        d = root / LOGS / f"__consumer_offsets-{part}"
        d.mkdir(parents=True)
        for start, seed, rounds in segments:
            write_mixed_dump(d / f"{start:020d}.log", seed=seed, rounds=rounds, start_offset=start)
    big = root / "big" / "__consumer_offsets-5"
    big.mkdir(parents=True)
    write_mixed_dump(big / "00000000000000000000.log", seed=5, rounds=3000)
    return root


RUNS = {
    "records": ["-o", "jsonl", LOGS],
    "state": ["--view", "state", "-o", "json", LOGS],
    "out": ["-o", "jsonl", "--out", "jsonl-out", LOGS],
}


@pytest.fixture(scope="module")
def runs(cluster, workdir, tmp_path_factory):
    """{name: (exit code, stdout, stderr)} of RUNS on the cluster, in one driver process."""
    spark = ["--engine", "spark", *cluster.submit_args(), "--split-size", SPLIT]
    spec = {"master": cluster.master_url, "conf": cluster.spark_conf(),
            "runs": [spark + args for args in RUNS.values()]}
    tmp = tmp_path_factory.mktemp("driver-tmp")
    done = subprocess.run([sys.executable, "-c", ONE_DRIVER, json.dumps(spec)], cwd=workdir,
                          env={**os.environ, "TMPDIR": str(tmp)}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert os.listdir(tmp) == []
    results = dict(zip(RUNS, json.loads(done.stdout)))
    assert_cluster_idle(cluster)
    return results


def local(workdir, *args):
    """The local engine's output, run in workdir."""
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        result = CliRunner().invoke(cli, ["decode-offsets", *args], catch_exceptions=False)
    finally:
        os.chdir(cwd)
    assert result.exit_code == 0 and result.stderr == "", result.stderr
    return result.stdout


def assert_cluster_idle(cluster):
    """No application left on the master and every worker's cores free (its executors ended)."""
    deadline = time.monotonic() + 30
    while (cluster.active_applications() or not cluster.workers_idle()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert cluster.active_applications() == []
    assert cluster.workers_idle(), cluster.state()["workers"]


def test_records_on_stdout_match_the_local_engine(runs, workdir):
    code, out, err = runs["records"]
    assert (code, err) == (0, ""), err
    assert out == local(workdir, *RUNS["records"])
    rows = [json.loads(line) for line in out.splitlines()]
    assert {r["file"] for r in rows} == {f"{LOGS}/__consumer_offsets-{p}/{o:020d}.log" for p, o in
                                          ((3, 0), (3, 100000), (9, 0))}  # as given: relative
    assert any(r.get("transactional") for r in rows)


def test_state_matches_the_local_engine(runs, workdir):
    code, out, err = runs["state"]
    assert (code, err) == (0, ""), err
    assert out == local(workdir, *RUNS["state"])
    assert json.loads(out)["committed_offsets"]


def test_out_is_written_by_the_executors(runs, cluster, workdir):
    code, out, err = runs["out"]
    assert (code, out, err) == (0, "", ""), err
    out_dir = workdir / "jsonl-out"
    parts = sorted(p for p in os.listdir(out_dir) if p.startswith("part-"))
    assert len(parts) >= 6 and (out_dir / "_SUCCESS").exists()
    assert "".join((out_dir / p).read_text() for p in parts) == local(workdir, *RUNS["records"])
    saved = set()  # (task, directory) of each output an executor's task committed (Hadoop's committer logs it)
    for log in cluster.executor_logs():
        saved.update(SAVED.findall(log.read_text(errors="replace")))
    assert {(f"{int(part.removeprefix('part-')):06d}", os.path.realpath(out_dir)) for part in parts} <= saved


def test_an_interrupted_run_leaves_nothing_on_the_cluster(cluster, workdir, tmp_path):
    """SIGTERM lands while the executors write (their task attempts exist under --out/_temporary): the
    application ends on the master, the executors on the workers, and --out (this run's new directory)
    is removed, as are the JVM's log and everything else in the run's TMPDIR."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out_dir = workdir / "interrupted-out"
    attempts = out_dir / "_temporary" / "0" / "_temporary"
    command = [sys.executable, "-c", "from kgroup.commands.cli import main; main()", "decode-offsets",
               "--engine", "spark", *cluster.submit_args(), "--split-size", "2000", "-o", "jsonl",
               "--out", out_dir.name, "big"]
    process = subprocess.Popen(command, cwd=workdir, env={**os.environ, "TMPDIR": str(tmp)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not (attempts.is_dir() and os.listdir(attempts)):
            assert process.poll() is None, process.stderr.read().decode()
            assert time.monotonic() < deadline, "the executors did not start writing in 120 s"
            time.sleep(0.05)
        assert cluster.active_applications()
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    err = err.decode()
    assert process.returncode == 143, err
    assert all(line.startswith("kgroup decode-offsets: ") for line in err.splitlines()), err
    assert_cluster_idle(cluster)
    assert not out_dir.exists(), sorted(str(p) for p in out_dir.rglob("*"))
    assert os.listdir(tmp) == []
