"""decode-offsets on Spark, the driver's side: plan the ranges, run the jobs, render what comes back.

The rows a task sends back are rendered by the local engine's functions (`kgroup.decode.render`,
`render_state`), problems are reported through the same `ProblemLog` in the local engine's order,
and `kgroup.decode.outcome` decides the exit status, so output, stderr and exit status match the
local engine's.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile

from kgroup.errors import KgroupError
from kgroup.writers import note

from .. import run
from ..decoder import ProblemLog
from ..inputs import STDIN, RowFilter, normalize_types, resolve_inputs
from ..out_dir import open_output_file, prepare_out_dir
from ..outcome import run_decode
from ..render import PAYLOADS, RowWriter
from ..render_state import render_state
from ..state import OffsetsState

#: Ranges of at most this size when the rows come back to the driver (stdout): a task's rows are
#: held whole by the JVM and the driver (JSON text is ~5x the segment bytes).
STDOUT_SPLIT_BYTES = 4 << 20


class _Tally:
    """Problems in the local engine's order; a file's later ranges are ignored once reading it stopped."""

    def __init__(self, problems: ProblemLog, tasks):
        self.problems = problems
        self.tasks = tasks
        self.stopped_inputs: set = set()
        self.batches = 0
        self.spool: str | None = None  # where local tasks leave rows for the driver

    def skipped(self, task) -> bool:
        return task.input_index in self.stopped_inputs

    def problem(self, item) -> None:
        self.problems.add(*item)

    def end(self, task, summary) -> None:
        self.problems.records_ok += summary.records_ok
        self.batches += summary.batches
        if summary.stops_file:
            self.stopped_inputs.add(task.input_index)

    def replay(self, summaries: dict) -> None:
        """Report the collected summaries (from an accumulator) in task order."""
        for task in self.tasks:
            summary = summaries.get(task.seq)
            if summary is None:
                raise KgroupError(f"Spark returned no result for {task.path} bytes {task.start}-{task.end}")
            if self.skipped(task):
                continue
            for item in summary.problems:
                self.problem(item)
            self.end(task, summary)


def decode_spark(paths, *, output, view, family, groups, topics, types, until_offset, until_time, strict,
                 master, spark_conf, out, split_bytes) -> int:
    from .plan import plan_tasks
    from .session import SparkUnavailable, get_session, is_local_master, jvm_log_file

    if STDIN in paths:
        raise KgroupError("the Spark engine reads files (each task opens its own byte range); "
                          "stdin can't be split: use --engine local for -")
    if not resolve_inputs(paths, family, ProblemLog()):  # nothing to read: no reason to start Spark
        return run.decode(paths, output=output, view=view, family=family, groups=groups, topics=topics,
                          types=types, until_offset=until_offset, until_time=until_time, strict=strict,
                          progress=False)
    row_filter = RowFilter(groups, topics, normalize_types(types, family))
    problems = ProblemLog(strict=strict, report=lambda problem: note(str(problem)))
    if out is not None:
        prepare_out_dir(out)

    def body() -> int:
        spark_failed = False
        inputs = resolve_inputs(paths, family, problems)
        tasks = plan_tasks(inputs, split_bytes, until_offset)
        try:
            spark, created = get_session(master, spark_conf)
        except SparkUnavailable as exc:
            raise KgroupError(str(exc)) from None
        if view == "records" and out is None and not is_local_master(spark.sparkContext.master):
            # rows travel through the JVM to the driver: keep each task's share small
            tasks = plan_tasks(inputs, min(split_bytes, STDOUT_SPLIT_BYTES), until_offset)
        tally = _Tally(problems, tasks)
        try:
            try:
                _run_jobs(spark, tasks, tally, output=output, view=view, row_filter=row_filter,
                          until_offset=until_offset, until_ms=until_time, out=out)
            except Exception as exc:  # noqa: BLE001 - a failed Spark job: one clear line, not a JVM trace
                if not type(exc).__module__.startswith(("py4j", "pyspark")):
                    raise
                spark_failed = True
                raise KgroupError(f"the Spark job failed: {spark_error_text(exc)}{jvm_log_hint(jvm_log_file())} "
                                  f"(Spark's log: {jvm_log_file()})") from None
        finally:
            if created:
                with contextlib.suppress(Exception):  # a JVM that died has nothing left to stop
                    spark.stop()
                if tally.spool is not None:  # tasks cancelled early may have written on after the cleanup
                    shutil.rmtree(tally.spool, ignore_errors=True)
                if not spark_failed:  # kept when the job failed: the error names it
                    with contextlib.suppress(OSError):
                        os.remove(jvm_log_file())
        return tally.batches

    return run_decode(problems, body)


def jvm_log_hint(log: str) -> str:
    """What the JVM's log says that the Python exception does not (e.g. it ran out of memory)."""
    try:
        with open(log, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return ""
    if "java.lang.OutOfMemoryError" in text:
        return ("; the Spark JVM ran out of memory: give it more (--spark-conf spark.driver.memory=4g, "
                "spark.executor.memory=4g on a cluster) or use a smaller --split-size")
    return ""


def spark_error_text(exc) -> str:
    """The useful line of a Spark failure: the Python error raised in a task, else the first line."""
    text = str(exc)
    python_errors = [line.strip() for line in text.splitlines()
                     if line and not line.startswith((" ", "\t")) and "Error" in line.split(":")[0]
                     and not line.startswith(("py4j", "org.", "java.", "Caused by"))]
    return python_errors[-1] if python_errors else (text.strip().splitlines() or [type(exc).__name__])[0]


def _run_jobs(spark, tasks, tally, *, output, view, row_filter, until_offset, until_ms, out):
    from . import engine
    from .session import is_local_master

    options = engine.ReadOptions(until_offset, until_ms, row_filter)
    if view == "state":
        states, summaries = engine.compute_state(spark, tasks, options)
        tally.replay(summaries)
        state = OffsetsState()
        names = engine.log_partitions(tasks)
        for index, partition_state in states:
            state.partitions[names[index]] = partition_state
        if out is None:
            render_state(state, output, row_filter)
        else:
            directory = out.removeprefix("file://")
            with open_output_file(directory, view, output) as stream:
                render_state(state, output, row_filter, stream)
        return
    if out is not None:
        on_local_fs = "://" not in out or out.startswith("file://")
        direct = on_local_fs and (is_local_master(spark.sparkContext.master) or out.startswith("file://"))
        summaries = engine.write_output(spark, tasks, options, out, output, PAYLOADS.get(output), direct=direct)
        tally.replay(summaries)
        return
    writer = RowWriter(output)
    spool = None
    if is_local_master(spark.sparkContext.master):
        spool = tally.spool = tempfile.mkdtemp(prefix="kgroup-spark-rows-")
    try:
        _stream(engine.stream_items(spark, tasks, options, PAYLOADS[output], spool=spool), tasks, tally, writer)
    finally:
        if spool is not None:
            shutil.rmtree(spool, ignore_errors=True)


def _stream(items, tasks, tally, writer):
    position = 0
    for kind, item in items:
        task = tasks[position]
        if kind == "e":
            if not tally.skipped(task):
                tally.end(task, item)
            position += 1
        elif tally.skipped(task):
            continue
        elif kind == "p":
            tally.problem(item)
        else:
            writer.add_all(item)
    writer.close()
