"""decode-offsets on Spark local[2] against the local engine, on one generated dump, in the same run.

Both engines decode every record of a generated __consumer_offsets dump (≥ 1 GB by default), for each
output measured: `-o jsonl --out DIR` (the same JSON lines: the local engine one file, Spark a part
file per 64 MB task, compared by size), `--view state -o json --out DIR` (the same state, compared
byte for byte) and Spark's default Parquet (no local counterpart: compared with the local jsonl run).
Each run is a child process. Printed per run: wall time and records/s, CPU seconds and CPU seconds
per million records — the local engine: the process (getrusage); Spark: the driver, the JVM and the
Python workers (its process tree, read from /proc before and after the job, reaped children
included) — and the ratio of the two engines: wall (Spark's job alone, and with its session start,
the JVM's launch, which is printed apart with its CPU seconds) and per-record CPU. A job's fixed
CPU seconds (its Python workers' start and first keys, the JVM's first job of its kind, the driver's
share) are measured on a tiny dump (20,000 records) run the same way, and the per-record figures are
also given net of them: the per-record CPU of Spark's tasks against the local engine's. The last line
gives the constants of `--engine auto`'s cost model (kgroup/decode/engine_choice.py) from this run.
A sampler walks each process tree every 0.2 s for the peak RSS of the driver, the Spark JVM and the
Python workers; a second, smaller dump shows Spark's memory does not grow with the input. --repeat N
runs each engine N times, alternately, and keeps each one's fastest run (other load on a shared
machine slows Spark, which needs every core, more than the local engine, which leaves one free).

    .venv/bin/python benchmarks/spark.py [--size 1g] [--small 256m] [--master local[2]]
        [--outputs jsonl,state,parquet] [--no-parquet] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
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


def spark_child(path: str, out: str, view: str, fmt: str, master: str) -> None:
    """In the child: start the session, then time decode-offsets --engine spark alone; the CPU
    seconds of this process tree by role, before the session, once it is up and after the job."""
    from kgroup.decode.spark.driver import decode_spark
    from kgroup.decode.spark.plan import DEFAULT_SPLIT_BYTES
    from kgroup.decode.spark.session import get_session, jvm_log_file

    me = os.getpid()
    cpu0 = tree_cpu(me)
    t0 = time.perf_counter()
    session, _ = get_session(master)
    t1 = time.perf_counter()
    cpu1 = tree_cpu(me)
    code = decode_spark([path], output=fmt, view=view, family=None, groups=[], topics=[], types=[],
                        until_offset=None, until_time=None, strict=False, master=master, spark_conf={},
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


TINY_RECORDS = 20_000


def make_tiny_dump(directory: str) -> str:
    part = os.path.join(directory, "__consumer_offsets-0")
    os.makedirs(part)
    _gen.write_dump(os.path.join(part, "00000000000000000000.log"), TINY_RECORDS)
    return part


def make_dump(directory: str, size: int) -> tuple[str, int]:
    """A partition dir holding one segment of about `size` bytes: 1M generated records, doubled."""
    part = os.path.join(directory, "__consumer_offsets-0")
    os.makedirs(part)
    path = os.path.join(part, "00000000000000000000.log")
    info = _gen.write_dump(path, 1_000_000)
    copies_size = _gen.grow(path, size)
    return part, info["records"] * (copies_size // info["bytes"])


def bench_spark(part, out, view, fmt, master):
    wall, _cpu, peak, stdout = run_child([sys.executable, __file__, "--child-spark", part, out, view, fmt, master])
    times = json.loads(stdout.strip().splitlines()[-1])
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


def compare(name: str, records: int, local: dict, times: dict, peak: dict, master: str, fixed: dict) -> dict:
    """Print one output's Spark run against the local engine's; returns the figures. fixed: the
    same job's run on the tiny dump (its CPU seconds are the job's fixed cost)."""
    rate = records / times["job"]
    cpu = sum(times["job_cpu"].values())
    start_cpu = sum(times["startup_cpu"].values())
    fixed_cpu = sum(fixed["job_cpu"].values())
    net = per_m(cpu - fixed_cpu, records - TINY_RECORDS)
    figures = {"wall": times["job"], "startup": times["startup"], "cpu": cpu, "startup_cpu": start_cpu,
               "cpu_per_m": per_m(cpu, records), "speedup": local["wall"] / times["job"],
               "speedup_with_start": local["wall"] / (times["job"] + times["startup"]),
               "cpu_ratio": cpu / local["cpu"], "roles": times["job_cpu"], "fixed_cpu": fixed_cpu,
               "net_cpu_per_m": net, "net_ratio": net / local["cpu_per_m"],
               "efficiency": cpu / (_cores(master) * times["job"])}
    print(f"spark {master:9s} {name:8s}: {times['job']:6.1f} s = {rate:>9,.0f} records/s (+ {times['startup']:.1f} s, "
          f"{start_cpu:.1f} CPU-s session start)   {cpu:6.1f} CPU-s = {figures['cpu_per_m']:5.2f} CPU-s/M records")
    print(f"    vs local {local['name']}: {figures['speedup']:.2f}x faster ({figures['speedup_with_start']:.2f}x with "
          f"the start); CPU per record {figures['cpu_ratio']:.2f}x the local engine's; "
          f"CPU-s by role: {_cpu_text(times['job_cpu'])}")
    print(f"    the job's fixed cost {fixed_cpu:.1f} CPU-s ({_cpu_text(fixed['job_cpu'])}; {fixed['job']:.1f} s on "
          f"{TINY_RECORDS:,} records); net of it {net:.2f} CPU-s/M records = {figures['net_ratio']:.2f}x the local "
          f"engine's per record")
    print(f"    peak RSS: driver {peak['driver']:.0f} MB, JVM {peak['jvm']:.0f} MB, "
          f"largest worker {peak['worker_max']:.0f} MB, all workers {peak['workers_sum']:.0f} MB")
    return figures


def bench_local(kgroup: str, big: str, records: int, out: str, name: str, args: list) -> dict:
    wall, cpu, peak, _ = run_child([kgroup, "decode-offsets", *args, "--out", out, big])
    return {"name": name, "wall": wall, "cpu": cpu, "cpu_per_m": per_m(cpu, records), "rss": peak["driver"]}


def print_local(figures: dict, records: int) -> None:
    print(f"local {'':9s} {figures['name']:8s}: {figures['wall']:6.1f} s = {records / figures['wall']:>9,.0f} records/s"
          f"{'':33s}{figures['cpu']:6.1f} CPU-s = {figures['cpu_per_m']:5.2f} CPU-s/M records   "
          f"peak RSS {figures['rss']:.0f} MB")


def alternate(repeat: int, local, spark) -> tuple:
    """Each engine `repeat` times, alternately: (the local engine's fastest, Spark's fastest (times, peak))."""
    locals_, sparks = [], []
    for _ in range(repeat):
        if local is not None:
            locals_.append(local())
        sparks.append(spark())
    best_local = min(locals_, key=lambda f: f["wall"]) if locals_ else None
    return best_local, fastest(sparks, lambda run: run[0]["job"] + run[0]["startup"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="1g", help="the large dump (default 1g)")
    ap.add_argument("--small", default="256m", help="the small dump, for memory against input size")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--outputs", default=",".join(OUTPUTS), help="of jsonl,state,parquet (default: all)")
    ap.add_argument("--no-parquet", action="store_true", help="skip the Parquet run")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each engine, alternately; the fastest kept")
    ap.add_argument("--child-spark", nargs=5, help=argparse.SUPPRESS)
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
        big, records = make_dump(os.path.join(tmp, "big"), parse_size(args.size))
        size = os.path.getsize(os.path.join(big, "00000000000000000000.log"))
        print(f"dump: {records:,} records, {size / 1e6:,.0f} MB (generated in {time.perf_counter() - t:.0f} s); "
              f"{os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}")

        local_jsonl = large_peak = None
        results: dict = {}
        local_cpu: dict = {}  # output -> the local engine's CPU seconds per million records

        def local_run(name, cli_args, keep=None):
            out = os.path.join(tmp, f"local-{name}")
            figures = bench_local(kgroup, big, records, out, name, cli_args)
            figures["output"] = keep(out) if keep else None
            shutil.rmtree(out)
            return figures

        def spark_run(name, view, fmt, keep, dump=big):
            out = os.path.join(tmp, f"spark-{name}")
            times, peak = bench_spark(dump, out, view, fmt, args.master)
            times["output"] = keep(out)
            shutil.rmtree(out)
            return times, peak

        tiny = make_tiny_dump(os.path.join(tmp, "tiny"))

        def fixed(name, view, fmt):
            """The job's run on the tiny dump, the fastest of --repeat."""
            return min((spark_run(f"{name}-tiny", view, fmt, dir_bytes, tiny)[0] for _ in range(args.repeat)),
                       key=lambda t: t["job"])

        if "jsonl" in outputs:
            local_jsonl, (times, peak) = alternate(
                args.repeat, lambda: local_run("jsonl", ["-o", "jsonl"], dir_bytes),
                lambda: spark_run("jsonl", "records", "jsonl", dir_bytes))
            print_local(local_jsonl, records)
            local_cpu["jsonl"] = local_jsonl["cpu_per_m"]
            if times["output"] != local_jsonl["output"]:
                raise SystemExit(f"outputs differ in size: local {local_jsonl['output']}, spark {times['output']}")
            results["jsonl"] = compare("jsonl", records, local_jsonl, times, peak, args.master,
                                       fixed("jsonl", "records", "jsonl"))
            print(f"    same {times['output'] / 1e9:.2f} GB of JSON lines")
            large_peak = peak
        if "state" in outputs:
            local_state, (times, peak) = alternate(
                args.repeat, lambda: local_run("state", ["--view", "state", "-o", "json"], dir_text),
                lambda: spark_run("state", "state", "json", dir_text))
            print_local(local_state, records)
            local_cpu["state"] = local_state["cpu_per_m"]
            if times["output"] != local_state["output"]:
                raise SystemExit("the state differs between the engines")
            results["state"] = compare("state", records, local_state, times, peak, args.master,
                                       fixed("state", "state", "json"))
            print(f"    the same state ({len(local_state['output']) / 1e6:.1f} MB of JSON)")
        if "parquet" in outputs:
            if local_jsonl is None:
                local_jsonl = local_run("jsonl", ["-o", "jsonl"])
                print_local(local_jsonl, records)
            _none, (times, peak) = alternate(args.repeat, None,
                                             lambda: spark_run("parquet", "records", "parquet", dir_bytes))
            results["parquet"] = compare("parquet", records, local_jsonl, times, peak, args.master,
                                         fixed("parquet", "records", "parquet"))
            print(f"    {times['output'] / 1e6:,.0f} MB of Parquet (the local engine writes no Parquet: its jsonl run "
                  f"is the measure)")

        print(f"summary ({records / 1e6:.1f} M records, best of {args.repeat}, load average "
              f"{os.getloadavg()[0]:.1f} at the end): "
              + "; ".join(f"{name} {r['speedup']:.2f}x wall, CPU/record {r['cpu_ratio']:.2f}x "
                          f"({r['net_ratio']:.2f}x net of the job's fixed cost)" for name, r in results.items()))
        model = [(view, results[name], local_cpu[name]) for name, view in (("jsonl", "records"), ("state", "state"))
                 if name in results]
        if model:
            start = sum(r["startup"] for r in results.values()) / len(results)
            print(f"cost model (kgroup/decode/engine_choice.py): SPARK_START_S = {start:.1f}, BYTES_PER_RECORD = "
                  f"{size / records:.1f}; " + "; ".join(
                      f"{view}: Costs(local_cpu={local:.2f}, spark_cpu={r['cpu_per_m']:.2f}, "
                      f"efficiency={r['efficiency']:.2f})" for view, r, local in model))

        if large_peak is not None and args.small:
            small, _small_records = make_dump(os.path.join(tmp, "small"), parse_size(args.small))
            shutil.rmtree(big)
            out = os.path.join(tmp, "spark-small")
            _times, peak = bench_spark(small, out, "records", "jsonl", args.master)
            small_size = os.path.getsize(os.path.join(small, "00000000000000000000.log"))
            print(f"memory against input size (spark jsonl): {small_size / 1e6:,.0f} MB -> driver "
                  f"{peak['driver']:.0f} / JVM {peak['jvm']:.0f} / largest worker {peak['worker_max']:.0f} MB; "
                  f"{size / 1e6:,.0f} MB -> driver {large_peak['driver']:.0f} / JVM {large_peak['jvm']:.0f} / "
                  f"largest worker {large_peak['worker_max']:.0f} MB")


if __name__ == "__main__":
    main()
