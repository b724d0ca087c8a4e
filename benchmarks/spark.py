"""decode-offsets on Spark local[2] against the local engine, on one generated dump, in the same run.

Both engines decode every record of a generated __consumer_offsets dump (≥ 1 GB by default) and write
the same JSON lines under --out (the local engine one file, Spark one file per 64 MB task); Spark also
writes its default Parquet. Each run is a child process; a sampler walks its process tree every 0.2 s
for the peak RSS of the driver, the Spark JVM and the Python workers. Spark's job time excludes its
session start-up (JVM launch), which is printed apart. A second, smaller dump shows Spark's memory does
not grow with the input.

    .venv/bin/python benchmarks/spark.py [--size 1g] [--small 256m] [--master local[2]] [--no-parquet]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

import _gen  # noqa: E402

PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(name))
    return tree


TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE_KB / 1024
    except OSError:
        return 0.0


def _role(pid: int, root: int) -> str:
    if pid == root:
        return "driver"
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ")
    except OSError:
        return "other"
    if b"java" in cmd.split(b" ")[0]:
        return "jvm"
    if b"pyspark.daemon" in cmd or b"pyspark.worker" in cmd:
        return "worker"
    return "other"


class TreeSampler(threading.Thread):
    """Peak RSS (MB) per role in a process tree: driver, jvm, largest worker, all workers together."""

    def __init__(self, root: int, interval: float = 0.2):
        super().__init__(daemon=True)
        self.root, self.interval = root, interval
        self.peak = {"driver": 0.0, "jvm": 0.0, "worker_max": 0.0, "workers_sum": 0.0}
        self.cpu: dict[int, tuple[str, float]] = {}  # pid -> (role, CPU seconds last seen)
        self.done = threading.Event()

    def cpu_by_role(self) -> dict:
        out: dict[str, float] = {}
        for role, seconds in self.cpu.values():
            out[role] = out.get(role, 0.0) + seconds
        return out

    def run(self):
        while not self.done.is_set():
            tree = _children()
            pids, todo = [], [self.root]
            while todo:
                pid = todo.pop()
                pids.append(pid)
                todo.extend(tree.get(pid, []))
            workers = 0.0
            for pid in pids:
                role, rss = _role(pid, self.root), _rss_mb(pid)
                self.cpu[pid] = (role, _cpu_seconds(pid) or self.cpu.get(pid, (role, 0.0))[1])
                if role == "worker":
                    workers += rss
                    self.peak["worker_max"] = max(self.peak["worker_max"], rss)
                elif role in self.peak:
                    self.peak[role] = max(self.peak[role], rss)
            self.peak["workers_sum"] = max(self.peak["workers_sum"], workers)
            self.done.wait(self.interval)


def run_child(argv: list[str]) -> tuple[float, dict, str]:
    """(wall seconds, peak RSS by role plus CPU seconds by role under "cpu", stdout) of one child."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    sampler = TreeSampler(proc.pid)
    sampler.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    sampler.done.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{err}")
    return wall, {**sampler.peak, "cpu": sampler.cpu_by_role()}, out


def spark_child(path: str, out: str, fmt: str, master: str) -> None:
    """In the child: start the session, then time decode-offsets --engine spark alone."""
    from kgroup.decode.spark.driver import decode_spark
    from kgroup.decode.spark.plan import DEFAULT_SPLIT_BYTES
    from kgroup.decode.spark.session import get_session, jvm_log_file

    t0 = time.perf_counter()
    session, _ = get_session(master)
    t1 = time.perf_counter()
    code = decode_spark([path], output=fmt, view="records", family=None, groups=[], topics=[], types=[],
                        until_offset=None, until_time=None, strict=False, master=master, spark_conf={},
                        out=out, split_bytes=DEFAULT_SPLIT_BYTES)
    t2 = time.perf_counter()
    session.stop()
    os.remove(jvm_log_file())
    print(json.dumps({"startup": t1 - t0, "job": t2 - t1, "code": code}))


def dir_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(path, n)) for n in os.listdir(path) if not n.startswith(("_", ".")))


def make_dump(directory: str, size: int) -> tuple[str, int]:
    """A partition dir holding one segment of about `size` bytes: 1M generated records, doubled."""
    part = os.path.join(directory, "__consumer_offsets-0")
    os.makedirs(part)
    path = os.path.join(part, "00000000000000000000.log")
    info = _gen.write_dump(path, 1_000_000)
    copies_size = _gen.grow(path, size)
    return part, info["records"] * (copies_size // info["bytes"])


def bench_spark(part, out, fmt, master):
    wall, peak, stdout = run_child([sys.executable, __file__, "--child-spark", part, out, fmt, master])
    times = json.loads(stdout.strip().splitlines()[-1])
    return times, peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="1g", help="the large dump (default 1g)")
    ap.add_argument("--small", default="256m", help="the small dump, for memory against input size")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--no-parquet", action="store_true", help="skip the Parquet run")
    ap.add_argument("--child-spark", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_spark:
        spark_child(*args.child_spark)
        return
    from kgroup.decode.spark.plan import parse_size

    kgroup = os.path.join(os.path.dirname(sys.executable), "kgroup")
    with tempfile.TemporaryDirectory(prefix="kgroup-spark-bench-") as tmp:
        t = time.perf_counter()
        big, records = make_dump(os.path.join(tmp, "big"), parse_size(args.size))
        size = os.path.getsize(os.path.join(big, "00000000000000000000.log"))
        print(f"dump: {records:,} records, {size / 1e6:,.0f} MB (generated in {time.perf_counter() - t:.0f} s); "
              f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}")

        out = os.path.join(tmp, "local-out")
        wall, peak, _ = run_child([kgroup, "decode-offsets", "-o", "jsonl", "--out", out, big])
        local_rate = records / wall
        local_cpu = sum(peak["cpu"].values())
        local_bytes = dir_bytes(out)
        shutil.rmtree(out)
        print(f"local engine  jsonl: {wall:6.1f} s = {local_rate:>9,.0f} records/s   "
              f"peak RSS {peak['driver']:.0f} MB")

        out = os.path.join(tmp, "spark-out")
        times, peak = bench_spark(big, out, "jsonl", args.master)
        spark_bytes = dir_bytes(out)
        shutil.rmtree(out)
        if spark_bytes != local_bytes:
            raise SystemExit(f"outputs differ in size: local {local_bytes}, spark {spark_bytes}")
        rate = records / times["job"]
        print(f"spark {args.master} jsonl: {times['job']:6.1f} s = {rate:>9,.0f} records/s   "
              f"(+ {times['startup']:.1f} s session start)   ratio spark/local {rate / local_rate:.2f}x, "
              f"{records / (times['job'] + times['startup']) / local_rate:.2f}x with start-up; "
              f"same {spark_bytes / 1e9:.2f} GB of JSON lines")
        print(f"    peak RSS: driver {peak['driver']:.0f} MB, JVM {peak['jvm']:.0f} MB, "
              f"largest worker {peak['worker_max']:.0f} MB, all workers {peak['workers_sum']:.0f} MB")
        print("    CPU seconds: " + ", ".join(f"{role} {sec:.1f}" for role, sec in sorted(peak["cpu"].items()))
              + f" (the local engine: {local_cpu:.1f})")
        large_peak = peak

        if not args.no_parquet:
            out = os.path.join(tmp, "spark-parquet")
            times, peak = bench_spark(big, out, "parquet", args.master)
            pq_bytes = dir_bytes(out)
            shutil.rmtree(out)
            rate = records / times["job"]
            print(f"spark {args.master} parquet: {times['job']:6.1f} s = {rate:>9,.0f} records/s   "
                  f"ratio to local jsonl {rate / local_rate:.2f}x; {pq_bytes / 1e6:,.0f} MB of Parquet; "
                  f"peak RSS driver {peak['driver']:.0f} / JVM {peak['jvm']:.0f} / "
                  f"worker {peak['worker_max']:.0f} MB")

        small, small_records = make_dump(os.path.join(tmp, "small"), parse_size(args.small))
        shutil.rmtree(big)
        out = os.path.join(tmp, "spark-small")
        times, peak = bench_spark(small, out, "jsonl", args.master)
        small_size = os.path.getsize(os.path.join(small, "00000000000000000000.log"))
        print(f"memory against input size (spark jsonl): {small_size / 1e6:,.0f} MB -> driver "
              f"{peak['driver']:.0f} / JVM {peak['jvm']:.0f} / largest worker {peak['worker_max']:.0f} MB; "
              f"{size / 1e6:,.0f} MB -> driver {large_peak['driver']:.0f} / JVM {large_peak['jvm']:.0f} / "
              f"largest worker {large_peak['worker_max']:.0f} MB")


if __name__ == "__main__":
    main()
