"""`--engine auto`: Spark only where it beats the local engine, by the benchmark's own figures.

The cost model (one place; `engines.choose_engine` asks it and prints its reason on stderr):

* local engine: one core, `local_cpu` CPU seconds per million records;
* Spark: `SPARK_START_S` seconds to launch its JVM and session, then `spark_fixed` CPU seconds a job
  (its Python workers' start and first keys, the JVM's first job of its kind, the driver's plan and
  result) and `spark_cpu` CPU seconds per million records (the Python workers, the JVM and the driver
  together), spread over the cores it gets at the parallel efficiency `efficiency` that `local[2]`
  reached (its CPU seconds ÷ 2 cores ÷ its job's wall time: waves, the last task, the serial replay
  of `--view state`, the driver's share);
* records from the input's size at `BYTES_PER_RECORD` (the benchmark's dump: Kafka 4.4's commits).

Spark is chosen when its estimate (start included) is below the local engine's. The cores Spark gets:
`local[*]` the CPUs this process may run on, `local[N]` N (at most those CPUs), `local-cluster[n,c,m]`
n×c; a cluster master (spark://, yarn, k8s://) the executors' cores when `--spark-conf` says them
(`spark.executor.instances` × `spark.executor.cores`, or `spark.cores.max`) — then its start is taken
as a local session's, a lower bound — and otherwise the named cluster is the user's choice: Spark.
An explicit `--spark-threshold` is the user's rule instead of the model: Spark from that size. (`-o
parquet`, which only Spark writes, and inputs Spark cannot read are decided in `engines.choose_engine`.)

No pyspark import and no timing here: tests check the decisions (tests/decode/test_engine_choice.py).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from kgroup.sizes import size_text


@dataclass(frozen=True)
class Costs:
    """One view's figures from `benchmarks/spark.py` (the same run for both engines; per-record figures
    at the margin, between its two dumps)."""

    local_cpu: float  # CPU seconds per million records, the local engine (one process, one core)
    spark_cpu: float  # CPU seconds per million records, Spark local[2]: workers + JVM + driver
    spark_fixed: float  # CPU seconds a Spark job costs whatever its size
    efficiency: float  # a local[2] job's CPU seconds ÷ (2 cores × its wall seconds)


#: Measured 2026-11-28 with `benchmarks/spark.py --size 1g --repeat 2` (1.12 GB, 12 M records of Kafka
#: 4.4's commits, and 280 MB for the margin) on this project's machine: 2 vCPUs (x86-64 VM, Intel Xeon,
#: load average 0.9 at the start), Python 3.11.7, pyspark 4.x on OpenJDK 17. docs/decode-offsets.md
#: ("Measured") has the run.
COSTS = {
    "records": Costs(local_cpu=2.61, spark_cpu=2.68, spark_fixed=6.1, efficiency=0.92),
    "state": Costs(local_cpu=0.86, spark_cpu=1.49, spark_fixed=5.8, efficiency=0.85),
}
#: Seconds from asking for a session to its first job (JVM launch, SparkContext), the same run.
SPARK_START_S = 6.1
#: Bytes of segment per record in the benchmark's dump (1,118,681,460 bytes / 12.0 M records).
BYTES_PER_RECORD = 93.2
#: The benchmark's cases the figures come from: view -> (input bytes, local engine's wall seconds,
#: Spark local[2]'s wall seconds with its start); `auto` must pick the faster in each (tests).
BENCHMARK = {
    "records": (1_118_681_460, 35.2, 20.7 + 5.9),
    "state": (1_118_681_460, 11.1, 14.1 + 6.2),
}

_LOCAL = re.compile(r"^local(?:\[(\*|\d+)(?:,\s*\d+)?\])?$")
_LOCAL_CLUSTER = re.compile(r"^local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,\s*\d+\s*\]$")


@dataclass(frozen=True)
class Choice:
    engine: str  # "local" or "spark"
    why: str  # what the note on stderr says in parentheses


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity, else the machine's)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def spark_cores(master: str, spark_conf: dict, cpus: int) -> int | None:
    """The cores Spark's tasks run on for this master, or None when they are not known here."""
    found = _LOCAL.match(master)
    if found:
        threads = found.group(1)
        if threads is None:
            return 1
        return cpus if threads == "*" else max(1, min(int(threads), cpus))
    found = _LOCAL_CLUSTER.match(master)
    if found:
        return max(1, min(int(found.group(1)) * int(found.group(2)), cpus))
    try:
        if "spark.executor.instances" in spark_conf and "spark.executor.cores" in spark_conf:
            return int(spark_conf["spark.executor.instances"]) * int(spark_conf["spark.executor.cores"])
        if "spark.cores.max" in spark_conf:
            return int(spark_conf["spark.cores.max"])
    except ValueError:
        return None
    return None


def estimates(size: int, view: str, cores: int) -> tuple[float, float]:
    """(local seconds, Spark seconds with its start) for `size` bytes of input."""
    costs = COSTS["state" if view == "state" else "records"]
    millions = size / BYTES_PER_RECORD / 1e6
    local = millions * costs.local_cpu
    spark = SPARK_START_S + (costs.spark_fixed + millions * costs.spark_cpu) / (cores * costs.efficiency)
    return local, spark


def choose(size: int, view: str, master: str, spark_conf: dict, *, threshold: int | None = None,
           cpus: int | None = None) -> Choice:
    """Which engine decodes `size` bytes of input faster (Spark assumed able to run here)."""
    shown = size_text(size)
    if threshold is not None:
        if size < threshold:
            return Choice("local", f"{shown} of input is below the Spark threshold of {size_text(threshold)}, "
                                   "see --spark-threshold")
        return Choice("spark", f"{shown} of input, at least the Spark threshold of {size_text(threshold)}")
    cores = spark_cores(master, spark_conf, available_cpus() if cpus is None else cpus)
    if cores is None:
        return Choice("spark", f"{shown} of input; --master {master} names a cluster whose cores are not "
                               "known here (see --spark-conf spark.executor.instances, spark.executor.cores): "
                               "taken as your choice")
    local, spark = estimates(size, view, cores)
    figures = (f"{shown} of input: about {_seconds(local)} on the local engine, {_seconds(spark)} on Spark "
               f"{master} with {cores} core{'s' if cores != 1 else ''}, its {SPARK_START_S:.0f} s start included")
    if spark < local:
        return Choice("spark", figures)
    return Choice("local", figures + "; see --spark-threshold")


def _seconds(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 600:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min"
