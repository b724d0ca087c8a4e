"""An interrupted `decode-offsets --engine spark` (SIGINT or SIGTERM, while the JVM starts or while the
job runs) removes the JVM's log file and the rows' spool directory, as a finished run does, and leaves
no JVM running."""

import os
import signal
import subprocess
import sys
import time

import pytest

from kgroup.decode.spark.session import unavailable_reason
from decode.test_spark_plan import write_mixed_dump

REASON = unavailable_reason()
pytestmark = [pytest.mark.spark, pytest.mark.skipif(REASON is not None, reason=f"Spark unavailable: {REASON}")]


def ours(tmp):
    return sorted(name for name in os.listdir(tmp) if name.startswith("kgroup-spark"))


def spark_jvms_of(tmp) -> list[int]:
    """The Spark JVMs still running that the run started (they inherited its TMPDIR)."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read().split(b"\0")
        except OSError:
            continue
        if b"SparkSubmit" in cmdline and f"TMPDIR={tmp}".encode() in environ:
            found.append(int(entry))
    return found


@pytest.mark.parametrize("sig, when, code", [(signal.SIGTERM, "kgroup-spark-", 143),
                                             (signal.SIGINT, "kgroup-spark-rows-", 130)])
def test_an_interrupted_spark_run_leaves_no_log_or_spool(tmp_path, sig, when, code):
    """SIGTERM as soon as the JVM's log exists (Spark starting), SIGINT once the rows' spool exists
    (the job running)."""
    segment_dir = tmp_path / "__consumer_offsets-3"
    segment_dir.mkdir()
    write_mixed_dump(segment_dir / "00000000000000000000.log", rounds=3000)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", "from kgroup.commands.cli import main; main()", "decode-offsets",
         "--engine", "spark", "--master", "local[1]", "--split-size", "2000", "-o", "jsonl", str(segment_dir)],
        env={**os.environ, "TMPDIR": str(tmp)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 180
        while not any(name.startswith(when) for name in ours(tmp)):
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "Spark did not get that far in 180 s"
            time.sleep(0.05)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, err.decode()
    assert ours(tmp) == [], err.decode()
    if os.path.isdir("/proc"):     # no JVM runs on without its parent (one cut off while starting ignores SIGINT)
        deadline = time.monotonic() + 10
        while spark_jvms_of(tmp) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert spark_jvms_of(tmp) == []
    assert all(line.startswith("kgroup decode-offsets: ") for line in err.decode().splitlines()), err.decode()
    if sig == signal.SIGINT:
        assert err.decode().endswith("kgroup decode-offsets: interrupted\n")


def test_an_interrupted_run_removes_its_out_directory(tmp_path):
    """SIGINT once the tasks have written part files under --out (local master: each task writes its
    own): the directory, new when the run started, goes with them, as the local engine's does."""
    segment_dir = tmp_path / "__consumer_offsets-3"
    segment_dir.mkdir()
    write_mixed_dump(segment_dir / "00000000000000000000.log", rounds=3000)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-c", "from kgroup.commands.cli import main; main()", "decode-offsets",
         "--engine", "spark", "--master", "local[1]", "--split-size", "2000", "-o", "jsonl", "--out", str(out),
         str(segment_dir)],
        env={**os.environ, "TMPDIR": str(tmp)}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 180
        while not (out.is_dir() and any(name.startswith("part-") for name in os.listdir(out))):
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "no part file in 180 s"
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err.decode()
    assert err.decode() == "kgroup decode-offsets: interrupted\n"
    assert not out.exists(), sorted(os.listdir(out))
    assert ours(tmp) == []
