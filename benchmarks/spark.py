"""decode-offsets on Spark local[2] and a standalone cluster against the local engine, on one generated dump,
in the same run.

Both engines decode every record of a generated __consumer_offsets dump (≥ 1 GB by default), for each
output measured: `-o jsonl --out DIR` (the same JSON lines: the local engine one file, Spark a part
file per 64 MB task, compared by size), `--view state -o json --out DIR` (the same state, compared
byte for byte) and Spark's default Parquet (no local counterpart: compared with the local jsonl run).
Each run is a child process. Printed per run: wall time and records/s, CPU seconds and CPU seconds
per million records — the local engine: the process (getrusage); Spark: the driver, the JVM and the
Python workers (its process tree, read from /proc before and after the job, reaped children
included) — and the ratio of the two engines: wall (Spark's job alone, and with its session start,
the JVM's launch, which is printed apart with its CPU seconds) and per-record CPU. Every run is
repeated on a smaller dump (--small): between the two sizes, each engine's CPU seconds per million
records at the margin (what one more record costs, the per-record CPU of Spark's tasks against the
local engine's) and what a job costs whatever its size (Spark: its Python workers' start and first
keys, the JVM's first job of its kind, the driver's plan and result; the local engine: the process).
The last line gives the constants of `--engine auto`'s cost model (kgroup/decode/engine_choice.py)
from this run.
A sampler walks each process tree every 0.2 s for the peak RSS of the driver, the Spark JVM and the
Python workers; the smaller dump shows Spark's memory does not grow with the input. --repeat N
runs each engine N times, alternately, and keeps each one's fastest run (other load on a shared
machine slows Spark, which needs every core, more than the local engine, which leaves one free).
Beside --master, every Spark run is also made on a real Spark standalone cluster started here from
the installed pyspark's jars (the tests' own, tests/helpers/spark_cluster.py: a master and
--cluster-workers one-core workers on loopback); its CPU seconds add the cluster's JVMs, executors
and their Python workers ("cluster") over the whole run. --no-cluster leaves it out.

    .venv/bin/python benchmarks/spark.py [--size 1g] [--small 256m] [--master local[2]]
        [--outputs jsonl,state,parquet] [--no-parquet] [--repeat N] [--cluster-workers 2 | --no-cluster]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
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
sys.path.insert(0, os.path.join(ROOT, "tests"))

import _gen  # noqa: E402

PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024
TICKS = os.sysconf("SC_CLK_TCK")
OUTPUTS = ("jsonl", "state", "parquet")


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


def _tree(root: int) -> list[int]:
    tree, pids, todo = _children(), [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        todo.extend(tree.get(pid, []))
    return pids


def _cpu_seconds(pid: int, reaped: bool = False) -> float:
    """utime + stime; with `reaped`, plus the children it has waited for (who are gone from the tree)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12])
    if reaped:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / TICKS


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


def tree_cpu(root: int) -> dict:
    """CPU seconds by role of a process tree, each process with the children it reaped."""
    out: dict[str, float] = {}
    for pid in _tree(root):
        role = _role(pid, root)
        out[role] = out.get(role, 0.0) + _cpu_seconds(pid, reaped=True)
    return out


class TreeSampler(threading.Thread):
    """Peak RSS (MB) per role in a process tree: driver, jvm, largest worker, all workers together."""

    def __init__(self, root: int, interval: float = 0.2):
        super().__init__(daemon=True)
        self.root, self.interval = root, interval
        self.peak = {"driver": 0.0, "jvm": 0.0, "worker_max": 0.0, "workers_sum": 0.0}
        self.done = threading.Event()

    def run(self):
        while not self.done.is_set():
            workers = 0.0
            for pid in _tree(self.root):
                role, rss = _role(pid, self.root), _rss_mb(pid)
                if role == "worker":
                    workers += rss
                    self.peak["worker_max"] = max(self.peak["worker_max"], rss)
                elif role in self.peak:
                    self.peak[role] = max(self.peak[role], rss)
            self.peak["workers_sum"] = max(self.peak["workers_sum"], workers)
            self.done.wait(self.interval)


def run_child(argv: list[str]) -> tuple[float, float, dict, str]:
    """(wall seconds, CPU seconds of the child and what it reaped, peak RSS by role, stdout) of one child."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    sampler = TreeSampler(proc.pid)
    sampler.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    sampler.done.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{err}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, sampler.peak, out


def spark_child(path: str, out: str, view: str, fmt: str, master: str, conf: str) -> None:
    """In the child: start the session, then time decode-offsets --engine spark alone; the CPU
    seconds of this process tree by role, before the session, once it is up and after the job."""
    from kgroup.decode.spark.driver import decode_spark
    from kgroup.decode.spark.plan import DEFAULT_SPLIT_BYTES
    from kgroup.decode.spark.session import get_session, jvm_log_file

    me = os.getpid()
    cpu0 = tree_cpu(me)
    t0 = time.perf_counter()
    session, _ = get_session(master, json.loads(conf))
    t1 = time.perf_counter()
    cpu1 = tree_cpu(me)
    code = decode_spark([path], output=fmt, view=view, family=None, groups=[], topics=[], types=[],
                        until_offset=None, until_time=None, strict=False, master=master, spark_conf=json.loads(conf),
                        out=out, split_bytes=DEFAULT_SPLIT_BYTES)
    t2 = time.perf_counter()
    cpu2 = tree_cpu(me)
    session.stop()
    os.remove(jvm_log_file())
    roles = set(cpu0) | set(cpu1) | set(cpu2)
    print(json.dumps({"startup": t1 - t0, "job": t2 - t1, "code": code,
                      "startup_cpu": {r: cpu1.get(r, 0) - cpu0.get(r, 0) for r in roles},
                      "job_cpu": {r: cpu2.get(r, 0) - cpu1.get(r, 0) for r in roles}}))


def dir_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(path, n)) for n in os.listdir(path) if not n.startswith(("_", ".")))


def dir_text(path: str) -> str:
    return "".join(open(os.path.join(path, n), encoding="utf-8").read() for n in sorted(os.listdir(path))
                   if not n.startswith(("_", ".")))


def make_dump(directory: str, size: int) -> tuple[str, int]:
    """A partition dir holding one segment of about `size` bytes: 1M generated records, doubled."""
    part = os.path.join(directory, "__consumer_offsets-0")
    os.makedirs(part)
    path = os.path.join(part, "00000000000000000000.log")
    info = _gen.write_dump(path, 1_000_000)
    copies_size = _gen.grow(path, size)
    return part, info["records"] * (copies_size // info["bytes"])


class ClusterCpu(threading.Thread):
    """The CPU seconds a standalone cluster's processes spend during a run: its daemons' process
    trees (workers, executors, their Python workers) walked every 0.2 s, each process's CPU taken
    at its last sighting, so executors and workers that end (their CPU is not always reaped into a
    parent's) still count; less what the processes alive at the start had spent by then."""

    def __init__(self, cluster, interval: float = 0.2):
        super().__init__(daemon=True)
        self.roots = [process.pid for process in cluster.processes]
        self.interval = interval
        self.seen: dict[int, float] = {}
        self.baseline = self._sample()
        self.done = threading.Event()

    def _sample(self) -> dict[int, float]:
        return {pid: _cpu_seconds(pid) for root in self.roots for pid in _tree(root)}

    def run(self):
        while not self.done.is_set():
            self.seen.update(self._sample())
            self.done.wait(self.interval)

    def stop(self) -> float:
        self.done.set()
        self.join()
        self.seen.update(self._sample())
        return sum(self.seen.values()) - sum(self.baseline.get(pid, 0.0) for pid in self.seen)


def bench_spark(part, out, view, fmt, master, conf=None, cluster=None):
    """(times, peak) of one Spark run in a child; on a standalone cluster, its processes' CPU seconds
    over the run (up to the executors' end) are added to the job's as "cluster"."""
    meter = ClusterCpu(cluster) if cluster else None
    if meter:
        meter.start()
    wall, _cpu, peak, stdout = run_child([sys.executable, __file__, "--child-spark", part, out, view, fmt, master,
                                          json.dumps(conf or {})])
    times = json.loads(stdout.strip().splitlines()[-1])
    if meter:
        deadline = time.monotonic() + 20
        while not cluster.workers_idle() and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1.0)  # the workers end their executors after the master frees the cores
        times["job_cpu"]["cluster"] = meter.stop()
    return times, peak


def fastest(runs: list, wall) -> tuple:
    """The run with the least wall time; its peaks replaced by the highest of all runs'."""
    best = min(runs, key=wall)
    peaks = [run[-1] for run in runs]
    return (*best[:-1], {k: max(p[k] for p in peaks) for k in peaks[0]})


def _cores(master: str) -> int:
    from kgroup.decode.engine_choice import available_cpus, spark_cores

    return spark_cores(master, {}, available_cpus()) or 2


def per_m(seconds: float, records: int) -> float:
    return seconds / records * 1e6


def _cpu_text(cpu: dict) -> str:
    return ", ".join(f"{role} {sec:.1f}" for role, sec in sorted(cpu.items()) if sec >= 0.05)


def marginal(big_cpu: float, big_records: int, small_cpu: float, small_records: int) -> tuple[float, float]:
    """(CPU seconds per million records at the margin, CPU seconds whatever the size) from two sizes."""
    per_record = (big_cpu - small_cpu) / (big_records - small_records)
    return per_record * 1e6, big_cpu - per_record * big_records


def compare(name: str, sizes: dict, local: dict, spark: dict, master: str) -> dict:
    """Print one output's Spark run against the local engine's; returns the figures. sizes: "big" and
    "small" -> records; local, spark: "big" and "small" -> the runs' figures (spark: (times, peak))."""
    records = sizes["big"]
    times, peak = spark["big"]
    small_times = spark["small"][0]
    local_big, local_small = local["big"], local["small"]
    rate = records / times["job"]
    cpu = sum(times["job_cpu"].values())
    start_cpu = sum(times["startup_cpu"].values())
    spark_margin, spark_fixed = marginal(cpu, records, sum(small_times["job_cpu"].values()), sizes["small"])
    local_margin, local_fixed = marginal(local_big["cpu"], records, local_small["cpu"], sizes["small"])
    figures = {"wall": times["job"], "startup": times["startup"], "cpu": cpu, "startup_cpu": start_cpu,
               "cpu_per_m": per_m(cpu, records), "speedup": local_big["wall"] / times["job"],
               "speedup_with_start": local_big["wall"] / (times["job"] + times["startup"]),
               "cpu_ratio": cpu / local_big["cpu"], "roles": times["job_cpu"],
               "margin": spark_margin, "fixed": spark_fixed, "local_margin": local_margin,
               "local_fixed": local_fixed, "margin_ratio": spark_margin / local_margin,
               "efficiency": cpu / (_cores(master) * times["job"]),
               "local_wall": {d: local[d]["wall"] for d in ("big", "small")},
               "spark_wall": {d: spark[d][0]["job"] + spark[d][0]["startup"] for d in ("big", "small")}}
    print(f"spark {label(master):9s} {name:8s}: {times['job']:6.1f} s = {rate:>9,.0f} records/s (+ {times['startup']:.1f} s, "
          f"{start_cpu:.1f} CPU-s session start)   {cpu:6.1f} CPU-s = {figures['cpu_per_m']:5.2f} CPU-s/M records")
    print(f"    vs local {local_big['name']}: {figures['speedup']:.2f}x faster ({figures['speedup_with_start']:.2f}x with "
          f"the start); CPU per record {figures['cpu_ratio']:.2f}x the local engine's; "
          f"CPU-s by role: {_cpu_text(times['job_cpu'])}")
    print(f"    at the margin (the {sizes['small'] / 1e6:.1f} M-record dump against this one): Spark "
          f"{spark_margin:.2f} CPU-s/M records + {spark_fixed:.1f} CPU-s a job, the local engine {local_margin:.2f} + "
          f"{local_fixed:.1f}: {figures['margin_ratio']:.2f}x per record")
    if master.startswith("spark://"):
        print(f"    peak RSS: driver {peak['driver']:.0f} MB, JVM {peak['jvm']:.0f} MB (the executors are the "
              f"cluster's, not sampled)")
    else:
        print(f"    peak RSS: driver {peak['driver']:.0f} MB, JVM {peak['jvm']:.0f} MB, "
              f"largest worker {peak['worker_max']:.0f} MB, all workers {peak['workers_sum']:.0f} MB")
    return figures


def bench_local(kgroup: str, dump: str, records: int, out: str, name: str, args: list) -> dict:
    wall, cpu, peak, _ = run_child([kgroup, "decode-offsets", *args, "--out", out, dump])
    return {"name": name, "wall": wall, "cpu": cpu, "cpu_per_m": per_m(cpu, records), "rss": peak["driver"]}


def print_local(figures: dict, records: int) -> None:
    print(f"local {'':9s} {figures['name']:8s}: {figures['wall']:6.1f} s = {records / figures['wall']:>9,.0f} records/s"
          f"{'':33s}{figures['cpu']:6.1f} CPU-s = {figures['cpu_per_m']:5.2f} CPU-s/M records   "
          f"peak RSS {figures['rss']:.0f} MB")


def alternate(repeat: int, local, sparks: dict) -> tuple:
    """Each engine `repeat` times, alternately: (the local engine's fastest, {master: Spark's fastest
    (times, peak)}); sparks: master -> a run."""
    locals_, runs = [], {master: [] for master in sparks}
    for _ in range(repeat):
        if local is not None:
            locals_.append(local())
        for master, spark in sparks.items():
            runs[master].append(spark())
    best_local = min(locals_, key=lambda f: f["wall"]) if locals_ else None
    return best_local, {master: fastest(r, lambda run: run[0]["job"] + run[0]["startup"]) for master, r in runs.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="1g", help="the large dump (default 1g)")
    ap.add_argument("--small", default="256m", help="the small dump: per-record CPU at the margin, memory "
                    "against input size")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--outputs", default=",".join(OUTPUTS), help="of jsonl,state,parquet (default: all)")
    ap.add_argument("--no-parquet", action="store_true", help="skip the Parquet run")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each engine, alternately; the fastest kept")
    ap.add_argument("--cluster-workers", type=int, default=2, help="one-core workers of the standalone cluster")
    ap.add_argument("--no-cluster", action="store_true", help="no standalone cluster run")
    ap.add_argument("--child-spark", nargs=6, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_spark:
        spark_child(*args.child_spark)
        return
    from kgroup.sizes import parse_size

    outputs = [o for o in args.outputs.split(",") if o and not (o == "parquet" and args.no_parquet)]
    if set(outputs) - set(OUTPUTS):
        raise SystemExit(f"--outputs: of {','.join(OUTPUTS)}")
    kgroup = os.path.join(os.path.dirname(sys.executable), "kgroup")
    with tempfile.TemporaryDirectory(prefix="kgroup-spark-bench-") as tmp:
        t = time.perf_counter()
        dumps, sizes = {}, {}
        for name, size_text in (("big", args.size), ("small", args.small)):
            dumps[name], sizes[name] = make_dump(os.path.join(tmp, name), parse_size(size_text))
        if sizes["big"] <= sizes["small"]:
            raise SystemExit(f"--size must give more records than --small (both {sizes['big']:,}: the dumps are "
                             "1 M generated records, doubled)")
        size = os.path.getsize(os.path.join(dumps["big"], "00000000000000000000.log"))
        small_size = os.path.getsize(os.path.join(dumps["small"], "00000000000000000000.log"))
        print(f"dumps: {sizes['big']:,} records, {size / 1e6:,.0f} MB and {sizes['small']:,} records, "
              f"{small_size / 1e6:,.0f} MB (generated in {time.perf_counter() - t:.0f} s); {os.cpu_count()} CPUs; "
              f"load average {os.getloadavg()[0]:.1f}")

        masters = {args.master: ({}, None)}
        cluster = None
        if not args.no_cluster:
            from helpers.spark_cluster import SparkStandalone

            cluster = SparkStandalone(pathlib.Path(tmp) / "cluster", args.cluster_workers)
            t = time.perf_counter()
            cluster.start()
            print(f"standalone cluster: {cluster.master_url}, {args.cluster_workers} one-core workers "
                  f"(started in {time.perf_counter() - t:.1f} s)")
            masters[cluster.master_url] = (cluster.spark_conf(), cluster)
        try:
            run_outputs(args, outputs, tmp, dumps, sizes, size, kgroup, masters)
        finally:
            if cluster is not None:
                cluster.stop()


def auto_check(results: dict, sizes: dict, dumps: dict, master: str) -> None:
    """What --engine auto would pick for each output and dump of this run, against the engine that
    was faster here (Spark with its start): auto must never pick the slower one."""
    from kgroup.decode.engine_choice import choose

    verdicts = []
    for name, view in (("jsonl", "records"), ("state", "state")):
        r = results.get((name, master))
        if r is None:
            continue
        for dump in ("small", "big"):
            size = os.path.getsize(os.path.join(dumps[dump], "00000000000000000000.log"))
            local_s = r["local_wall"][dump]
            spark_s = r["spark_wall"][dump]
            faster = "spark" if spark_s < local_s else "local"
            picked = choose(size, view, master, {}).engine
            verdicts.append(f"{name} {size / 1e6:,.0f} MB: auto picks {picked}, {faster} was faster "
                            f"(local {local_s:.1f} s, spark {spark_s:.1f} s with its start)"
                            + ("" if picked == faster else "  <-- WRONG"))
    if verdicts:
        print(f"--engine auto against this run ({master}): " + "; ".join(verdicts))


def label(master: str) -> str:
    return "cluster" if master.startswith("spark://") else master


def run_outputs(args, outputs, tmp, dumps, sizes, size, kgroup, masters) -> None:
    """Every output on both dump sizes: the local engine and each master, alternately."""

    def local_run(dump, name, cli_args, keep=None):
        out = os.path.join(tmp, f"local-{name}")
        figures = bench_local(kgroup, dumps[dump], sizes[dump], out, name, cli_args)
        figures["output"] = keep(out) if keep else None
        shutil.rmtree(out)
        return figures

    def spark_run(master, dump, name, view, fmt, keep):
        out = os.path.join(tmp, f"spark-{name}")
        conf, cluster = masters[master]
        # on a cluster a plain --out is the default file system's, written by Spark's own writers; file://
        # says every executor sees the directory (one machine here), so the tasks write their part files
        # themselves, as on a local master
        target = f"file://{out}" if cluster is not None else out
        times, peak = bench_spark(dumps[dump], target, view, fmt, master, conf, cluster)
        times["output"] = keep(out)
        shutil.rmtree(out)
        return times, peak

    def both_sizes(name, cli_args, view, fmt, keep, local=True):
        """{"big"/"small": the local engine's fastest run}, {master: {"big"/"small": Spark's fastest (times, peak)}}."""
        local_runs, spark_runs = {}, {master: {} for master in masters}
        for dump in ("big", "small"):
            local_runs[dump], by_master = alternate(
                args.repeat, (lambda: local_run(dump, name, cli_args, keep)) if local else None,
                {master: (lambda m=master: spark_run(m, dump, name, view, fmt, keep)) for master in masters})
            for master, run in by_master.items():
                spark_runs[master][dump] = run
        return local_runs, spark_runs

    results: dict = {}
    local_jsonl = None
    peaks = {}
    if "jsonl" in outputs or "parquet" in outputs:
        local_jsonl, sparks = both_sizes("jsonl", ["-o", "jsonl"], "records", "jsonl", dir_bytes)
        if "jsonl" in outputs:
            print_local(local_jsonl["big"], sizes["big"])
            for master, spark in sparks.items():
                if spark["big"][0]["output"] != local_jsonl["big"]["output"]:
                    raise SystemExit(f"outputs differ in size: local {local_jsonl['big']['output']}, "
                                     f"spark {master} {spark['big'][0]['output']}")
                results[("jsonl", master)] = compare("jsonl", sizes, local_jsonl, spark, master)
            print(f"    same {local_jsonl['big']['output'] / 1e9:.2f} GB of JSON lines from every engine")
            peaks = {dump: sparks[args.master][dump][1] for dump in ("big", "small")}
    if "state" in outputs:
        local_state, sparks = both_sizes("state", ["--view", "state", "-o", "json"], "state", "json", dir_text)
        print_local(local_state["big"], sizes["big"])
        for master, spark in sparks.items():
            if any(spark[dump][0]["output"] != local_state[dump]["output"] for dump in spark):
                raise SystemExit(f"the state differs between the engines (spark {master})")
            results[("state", master)] = compare("state", sizes, local_state, spark, master)
        print(f"    the same state ({len(local_state['big']['output']) / 1e6:.1f} MB of JSON) from every engine")
    if "parquet" in outputs:
        _none, sparks = both_sizes("parquet", [], "records", "parquet", dir_bytes, local=False)
        for master, spark in sparks.items():
            results[("parquet", master)] = compare("parquet", sizes, local_jsonl, spark, master)
            print(f"    {spark['big'][0]['output'] / 1e6:,.0f} MB of Parquet (the local engine writes no Parquet: "
                  f"its jsonl run is the measure)")

    auto_check(results, sizes, dumps, args.master)
    print(f"summary ({sizes['big'] / 1e6:.1f} M records, best of {args.repeat}, load average "
          f"{os.getloadavg()[0]:.1f} at the end): " + "; ".join(
              f"{name} {label(master)} {r['speedup']:.2f}x wall ({r['speedup_with_start']:.2f}x with the start), "
              f"CPU per record {r['cpu_ratio']:.2f}x ({r['margin_ratio']:.2f}x at the margin)"
              for (name, master), r in results.items()))
    model = [(view, results[(name, args.master)]) for name, view in (("jsonl", "records"), ("state", "state"))
             if (name, args.master) in results]
    if model:
        starts = [r["startup"] for (_name, m), r in results.items() if m == args.master]
        start = sum(starts) / len(starts)
        print(f"cost model (kgroup/decode/engine_choice.py, {args.master}): SPARK_START_S = {start:.1f}, "
              f"BYTES_PER_RECORD = {size / sizes['big']:.1f}; " + "; ".join(
                  f"{view}: Costs(local_cpu={r['local_margin']:.2f}, spark_cpu={r['margin']:.2f}, "
                  f"spark_fixed={r['fixed']:.1f}, efficiency={r['efficiency']:.2f})" for view, r in model))
    if peaks:
        print(f"memory against input size (spark {args.master} jsonl): " + "; ".join(
            f"{os.path.getsize(os.path.join(dumps[d], '00000000000000000000.log')) / 1e6:,.0f} MB -> driver "
            f"{peaks[d]['driver']:.0f} / JVM {peaks[d]['jvm']:.0f} / largest worker {peaks[d]['worker_max']:.0f} MB"
            for d in ("small", "big")))

if __name__ == "__main__":
    main()
