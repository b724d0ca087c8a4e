"""decode-offsets on Spark: engine choice, the driver's side of the jobs, and rendering what comes back.

The rows a task sends back are rendered by the same functions the local engine uses (`row_json`,
`JsonlLines`, `table_row`, `render_state`), and problems are reported through the same `ProblemLog`
in the local engine's order, so output, stderr and exit status match the local engine's.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile

import click

from kgroup.commands import _decode_run as run
from kgroup.commands.output import ChunkedTable, CsvWriter, JsonArrayWriter, dumps
from kgroup.errors import EXIT_FAILURE, EXIT_OK, EXIT_PARTIAL, KgroupError
from kgroup.decode.decoder import ProblemLog, StrictModeStop
from kgroup.decode.inputs import STDIN, RowFilter, resolve_inputs

DEFAULT_THRESHOLD = "1g"
#: Ranges of at most this size when the rows come back to the driver (stdout): a task's rows are
#: held whole by the JVM and the driver (JSON text is ~5x the segment bytes).
STDOUT_SPLIT_BYTES = 4 << 20
EXTENSIONS = {"jsonl": "jsonl", "json": "json", "csv": "csv", "table": "txt", "dump-log": "txt"}

# ---------------------------------------------------------------------------------- row payloads
# Module-level functions, so Spark ships them by reference: workers import this module.

_lines = None


def jsonl_payload(row) -> str:
    global _lines
    if _lines is None:
        _lines = run.JsonlLines()
    return _lines.line(row)


def csv_payload(row) -> dict:
    return run._flat(run.row_json(row))  # noqa: SLF001 - the local engine's CSV row, shared on purpose


def table_payload(row) -> list:
    return run.table_row(row)


PAYLOADS = {"jsonl": jsonl_payload, "json": jsonl_payload, "csv": csv_payload, "table": table_payload}


class PayloadSink:
    """The local RowSink's rendering, fed with payloads computed on the executors."""

    def __init__(self, output):
        self.output = output
        self.count = 0
        if output == "json":
            self.writer = JsonArrayWriter().__enter__()
        elif output == "csv":
            self.writer = CsvWriter(run.RECORD_COLUMNS)
        elif output == "table":
            self.writer = ChunkedTable(["OFFSET", "TIME", "TYPE", "GROUP", "KEY", "VALUE"])

    def add(self, payload) -> None:
        self.count += 1
        if self.output == "jsonl":
            sys.stdout.write(payload + "\n")
        elif self.output == "json":
            self.writer.write_text(payload)
        elif self.output == "csv":
            self.writer.write(payload)
        else:
            self.writer.add(payload)

    def close(self) -> None:
        if self.output == "json":
            self.writer.__exit__(None, None, None)
        elif self.output == "table":
            self.writer.flush()
            if not self.count:
                click.echo("(no records)")


# ---------------------------------------------------------------------------------- engine choice

def input_bytes(paths) -> int:
    """Total size of the segment files under paths (unreadable paths count 0; they are reported later)."""
    quiet = ProblemLog()
    return sum(i.size for i in resolve_inputs([p for p in paths if p != STDIN], None, quiet))


def choose_engine(engine: str, paths, threshold: int, output: str) -> str:
    """local or spark; for auto, a note on stderr says which and why."""
    if engine != "auto":
        return engine
    from kgroup.decode.spark.session import unavailable_reason

    size = input_bytes(paths)
    if STDIN in paths or output == "dump-log":
        why = "stdin can't be split" if STDIN in paths else "-o dump-log is local only"
        _note(f"--engine auto: decoding locally ({why})")
        return "local"
    if size < threshold:
        _note(f"--engine auto: decoding locally ({_mb(size)} of input is below the Spark threshold "
              f"of {_mb(threshold)}, see --spark-threshold)")
        return "local"
    reason = unavailable_reason()
    if reason:
        _note(f"--engine auto: decoding locally although the input is {_mb(size)}: {reason}")
        return "local"
    _note(f"--engine auto: decoding with Spark ({_mb(size)} of input)")
    return "spark"


def _note(text: str) -> None:
    click.echo(f"kgroup: note: {text}", err=True)


def _mb(size: int) -> str:
    return f"{size / 1e6:,.1f} MB" if size < 1e9 else f"{size / 1e9:,.2f} GB"


def parse_spark_conf(pairs) -> dict:
    conf = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--spark-conf")
        conf[key.strip()] = value
    return conf


def prepare_out_dir(out: str) -> None:
    """A local --out must not exist yet or be empty (Spark refuses to write into an existing one)."""
    if "://" in out and not out.startswith("file://"):
        return  # hdfs://, s3a://, ...: Spark itself checks
    path = out.removeprefix("file://")
    if os.path.isdir(path):
        if os.listdir(path):
            raise KgroupError(f"--out {out}: directory exists and is not empty; give a new directory")
        os.rmdir(path)  # Spark creates it, and refuses an existing one
    elif os.path.exists(path):
        raise KgroupError(f"--out {out}: exists and is not a directory")


@contextlib.contextmanager
def stdout_to(path: str):
    """Send what would go to stdout into a file (outputs rendered on the driver, with --out)."""
    saved = sys.stdout
    with open(path, "w", encoding="utf-8") as f:
        sys.stdout = f
        try:
            yield
        finally:
            sys.stdout = saved


# ---------------------------------------------------------------------------------- the run

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
    from kgroup.decode.spark.plan import plan_tasks
    from kgroup.decode.spark.session import SparkUnavailable, get_session, jvm_log_file

    if STDIN in paths:
        raise KgroupError("the Spark engine reads files (each task opens its own byte range); "
                          "stdin can't be split: use --engine local for -")
    if not resolve_inputs(paths, family, ProblemLog()):  # nothing to read: no reason to start Spark
        return run.decode(paths, output=output, view=view, family=family, groups=groups, topics=topics,
                          types=types, until_offset=until_offset, until_time=until_time, strict=strict,
                          progress=False)
    row_filter = RowFilter(groups, topics, run.normalize_types(types, family))
    problems = ProblemLog(strict=strict, report=run._report)  # noqa: SLF001 - the same report format
    if out is not None:
        prepare_out_dir(out)
    spark_failed = False
    try:
        inputs = resolve_inputs(paths, family, problems)
        tasks = plan_tasks(inputs, split_bytes, until_offset)
        try:
            spark, created = get_session(master, spark_conf)
        except SparkUnavailable as exc:
            raise KgroupError(str(exc)) from None
        from kgroup.decode.spark.session import is_local_master

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
    except StrictModeStop:
        sys.stdout.flush()
        click.echo("kgroup: stopped at the first problem (--strict)", err=True)
        return EXIT_FAILURE
    except BrokenPipeError:
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        return EXIT_OK
    if problems.problems:
        n = len(problems.problems)
        click.echo(f"kgroup: {n} problem{'s' if n != 1 else ''}; {problems.records_ok} records decoded "
                   f"from {tally.batches} batches", err=True)
        return EXIT_PARTIAL if tally.batches or problems.records_ok else EXIT_FAILURE
    return EXIT_OK


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
    from kgroup.decode.state import OffsetsState
    from kgroup.decode.spark import engine
    from kgroup.decode.spark.session import is_local_master

    options = engine.ReadOptions(until_offset, until_ms, row_filter)
    if view == "state":
        states, summaries = engine.compute_state(spark, tasks, options)
        tally.replay(summaries)
        state = OffsetsState()
        names = engine.log_partitions(tasks)
        for index, partition_state in states:
            state.partitions[names[index]] = partition_state
        if out is None:
            run.render_state(state, output, row_filter)
        else:
            os.makedirs(out.removeprefix("file://"), exist_ok=True)
            with stdout_to(os.path.join(out.removeprefix("file://"), f"state.{EXTENSIONS[output]}")):
                run.render_state(state, output, row_filter)
        return
    if out is not None:
        on_local_fs = "://" not in out or out.startswith("file://")
        direct = on_local_fs and (is_local_master(spark.sparkContext.master) or out.startswith("file://"))
        summaries = engine.write_output(spark, tasks, options, out, output, PAYLOADS.get(output), direct=direct)
        tally.replay(summaries)
        return
    sink = PayloadSink(output)
    spool = None
    if is_local_master(spark.sparkContext.master):
        spool = tally.spool = tempfile.mkdtemp(prefix="kgroup-spark-rows-")
    try:
        _stream(engine.stream_items(spark, tasks, options, PAYLOADS[output], spool=spool), tasks, tally, sink)
    finally:
        if spool is not None:
            shutil.rmtree(spool, ignore_errors=True)


def _stream(items, tasks, tally, sink):
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
            for payload in item:
                sink.add(payload)
    sink.close()


__all__ = ["decode_spark", "choose_engine", "parse_spark_conf", "DEFAULT_THRESHOLD", "dumps"]
