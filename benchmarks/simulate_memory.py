"""`kgroup simulate` memory: what a large dynamic bounce's event log costs, kept and written.

A dynamic rolling bounce logs every member's "joined" and "synced" at each rebalance: 360,000
events for 300 members, some 4 million for 1,000. Two sets of figures:

  the event log, in process    one dynamic run; the bytes its event log holds as columns (what
                               the run keeps) against the same events as dicts (what the JSON
                               document is made of, and what the log used to keep): a same-run
                               baseline, the ratio is what the columns save;
  the CLI, in subprocesses     peak RSS (VmHWM, Linux), wall and CPU time of
                                 dynamic -o json   the run and its document (events streamed),
                                 dynamic -o table  the same run, no document (no event dict built),
                                 static -o json    a group of the same size whose bounce logs a few
                                                   events a member: the baseline of the simulation's
                                                   own state.
                               json / table is what writing the document adds to the run;
                               dynamic table / static is what a dynamic bounce holds beyond a
                               static one (its rebalances' state and its event log).

    .venv/bin/python benchmarks/simulate_memory.py [--members 300] [--partitions 900]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from kgroup.sim.model import SimParams  # noqa: E402
from kgroup.sim.scenarios import run_scenario  # noqa: E402

# The child reports its own peak: the high-water mark of its resident set since it started this
# program (Linux's VmHWM). Its rusage would not do: a child's ru_maxrss includes the resident set
# of the process it was forked from, this benchmark, before the exec.
CLI = ("import atexit, sys\n"
       "def peak():\n"
       "    with open('/proc/self/status') as status:\n"
       "        sys.stderr.write(next(line for line in status if line.startswith('VmHWM:')))\n"
       "atexit.register(peak)\n"
       "from kgroup.commands.cli import main\n"
       "main()\n")


def _deep_size(objects) -> int:
    """Bytes of these objects and of what they hold, each object counted once."""
    seen: set = set()
    total = 0
    stack = list(objects)
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple)):
            stack.extend(obj)
    return total


def event_log(members: int, partitions: int) -> None:
    result = run_scenario("rolling-bounce", SimParams(members=members, topics=(("t", partitions),),
                                                      membership="dynamic"))
    log = result.events
    columns = _deep_size([log._t_ms, log._shape_of, log._members, log._first_value, log._values,
                          log._shapes])
    started = time.perf_counter()
    dicts = list(log)
    built_s = time.perf_counter() - started
    as_dicts = _deep_size([dicts])
    count = len(log)
    print(f"event log of a {members}-member dynamic bounce: {count:,} events")
    print(f"  as columns (kept)        {columns / 1e6:8.1f} MB  {columns / count:6.1f} bytes an event")
    print(f"  as dicts (the document)  {as_dicts / 1e6:8.1f} MB  {as_dicts / count:6.1f} bytes an event"
          f"  (built in {built_s:.2f} s)")
    print(f"  ratio dicts / columns    {as_dicts / columns:8.2f}x")
    print("  (both count the strings and numbers the events hold, which the simulated clients share)")


def cli_run(members: int, partitions: int, membership: str, output: str) -> dict:
    argv = [sys.executable, "-c", CLI, "simulate", "rolling-bounce", "--members", str(members),
            "--topic", f"t:{partitions}", "--membership", membership, "-o", output]
    started = time.perf_counter()
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=errors)
        written = 0
        while block := process.stdout.read(1 << 20):
            written += len(block)
        _, status, usage = os.wait4(process.pid, 0)
        errors.seek(0)
        peak_line = errors.read().decode().splitlines()[-1]
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode or not peak_line.startswith("VmHWM:"):
        raise SystemExit(f"{' '.join(argv[3:])} exited {process.returncode}: {peak_line}")
    return {"rss_mb": int(peak_line.split()[1]) / 1024, "wall_s": time.perf_counter() - started,
            "cpu_s": usage.ru_utime + usage.ru_stime, "bytes": written}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=300)
    parser.add_argument("--partitions", type=int, default=900)
    args = parser.parse_args()
    event_log(args.members, args.partitions)
    print()
    runs = {}
    for membership, output in (("dynamic", "json"), ("dynamic", "table"), ("static", "json")):
        figures = runs[membership, output] = cli_run(args.members, args.partitions, membership, output)
        print(f"kgroup simulate rolling-bounce --members {args.members} --topic t:{args.partitions} "
              f"--membership {membership} -o {output}")
        print(f"  peak RSS {figures['rss_mb']:8.1f} MB   wall {figures['wall_s']:6.1f} s   "
              f"CPU {figures['cpu_s']:6.1f} s   output {figures['bytes'] / 1e6:8.1f} MB", flush=True)
    document, table, static = runs["dynamic", "json"], runs["dynamic", "table"], runs["static", "json"]
    print(f"ratio dynamic json / dynamic table (the document)    "
          f"{document['rss_mb'] / table['rss_mb']:5.2f}x RSS  {document['cpu_s'] / table['cpu_s']:5.2f}x CPU")
    print(f"ratio dynamic table / static json (a dynamic bounce) "
          f"{table['rss_mb'] / static['rss_mb']:5.2f}x RSS  {table['cpu_s'] / static['cpu_s']:5.2f}x CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
