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
import sys
import tempfile

from kgroup.errors import KgroupError

from .. import run
from ..decoder import ProblemLog, StrictModeStop
from ..inputs import STDIN, RowFilter, in_log_order, normalize_types, resolve_inputs
from ..out_dir import open_output_file, prepare_out_dir, remove_out_dir
from ..outcome import note, run_decode
from ..render import RowWriter
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
        inputs = resolve_inputs(paths, family, problems)
        if view == "state":  # replayed: in each partition's log order, as the local engine does
            inputs = in_log_order(inputs)
        resync = run.reads_past_damage(output, strict)
        tasks = plan_tasks(inputs, split_bytes, until_offset, resync)
        tally = _Tally(problems, tasks)
        spark, ours, keep_log = None, True, False  # the log is kept when an error names it
        unfinished_out = False  # --out of a run cut short: removed once the session is stopped
        interrupts = _Interrupts()
        interrupts.install()
        try:
            try:
                spark, ours = get_session(master, spark_conf)
            except SparkUnavailable as exc:
                keep_log = True
                raise KgroupError(str(exc)) from None
            interrupts.install()
            interrupts.check()      # a signal noted while the session started
            if view == "records" and out is None and not is_local_master(spark.sparkContext.master):
                # rows travel through the JVM to the driver: keep each task's share small
                tasks = plan_tasks(inputs, min(split_bytes, STDOUT_SPLIT_BYTES), until_offset, resync)
                tally = _Tally(problems, tasks)
            waiting = _ExecutorWait(spark)
            try:
                _run_jobs(spark, tasks, tally, output=output, view=view, row_filter=row_filter,
                          until_offset=until_offset, until_ms=until_time, out=out, check=interrupts.check)
            except Exception as exc:  # noqa: BLE001 - a failed Spark job: one clear line, not a JVM trace
                interrupts.check()  # jobs cancelled by an interrupt: not a failure
                if not type(exc).__module__.startswith(("py4j", "pyspark")):
                    raise
                keep_log = True
                raise KgroupError(f"the Spark job failed: {spark_error_text(exc)}{executor_python_hint(exc)}"
                                  f"{jvm_log_hint(jvm_log_file())} (Spark's log: {jvm_log_file()})") from None
            finally:
                waiting.stop()
            interrupts.check()
        except StrictModeStop:  # the output is whole; the first problem is reported after it
            raise
        except BaseException:
            unfinished_out = out is not None
            raise
        finally:
            interrupts.restore()
            if ours:  # a session found running is its owner's to stop, and its log theirs
                _clean_up(spark, tally.spool, None if keep_log else jvm_log_file())
            if unfinished_out:  # after the stop: no executor of this run writes there any more
                remove_out_dir(out)
        return tally.batches

    return run_decode(problems, body)


#: Seconds a run on a cluster waits for its first executor before it says why it may be waiting.
EXECUTOR_WAIT_NOTE_SECONDS = 30.0


class _ExecutorWait:
    """A cluster that cannot place an executor (no free core; no worker with spark.executor.memory
    free, 1g by default) leaves the job waiting for good, and Spark's warning goes to its log, not to
    kgroup's stderr: if no executor has registered after `seconds`, one note says so (non-local
    masters only; a local master's executor is the driver's own JVM)."""

    def __init__(self, spark, seconds: float | None = None):
        import threading

        from .session import is_local_master

        self.spark = spark
        self.done = threading.Event()
        if not is_local_master(spark.sparkContext.master):
            threading.Thread(target=self._watch, args=(seconds or EXECUTOR_WAIT_NOTE_SECONDS,),
                             name="kgroup-executor-wait", daemon=True).start()

    def stop(self) -> None:
        self.done.set()

    def executors(self) -> int:
        """Executors registered with the driver (Spark lists the driver among them)."""
        return len(self.spark.sparkContext._jsc.sc().statusTracker().getExecutorInfos()) - 1  # noqa: SLF001

    def _watch(self, seconds: float) -> None:
        if self.done.wait(seconds):
            return
        with contextlib.suppress(Exception):  # a session stopping meanwhile: nothing to say
            if self.executors() > 0 or self.done.is_set():
                return
            context = self.spark.sparkContext
            memory = context.getConf().get("spark.executor.memory", "1g")
            note(f"note: no Spark executor has started in {seconds:g} s: the cluster ({context.master}) may "
                 f"have no free core, or no worker with spark.executor.memory={memory} free (give less with "
                 "--spark-conf spark.executor.memory=...); its master's web UI says why the application waits")


def _clean_up(spark, spool: str | None, log: str | None) -> None:
    """Stop the session this run started and remove the row spool and the JVM's log: after the run,
    an interrupt, or a session that never got going (its JVM may have written the log already)."""
    if spark is not None:
        with contextlib.suppress(Exception):  # a JVM that died has nothing left to stop
            spark.stop()
    if spool is not None:  # tasks cancelled early may have written on after the cleanup
        shutil.rmtree(spool, ignore_errors=True)
    if log is not None:
        with contextlib.suppress(OSError):
            os.remove(log)


class _Interrupts:
    """SIGINT (KeyboardInterrupt, exit 130) and SIGTERM (exit 143; by default it would end the process
    with no cleanup at all) unwind the run through `_clean_up`.

    pyspark's SparkContext puts its own SIGINT handler in place, so `install` is called again once
    the session exists. A signal can land in a py4j finalizer, where Python drops what the handler
    raises (and would print a traceback): the handler also cancels the running jobs, `check` raises
    again when the job ends, and neither that traceback nor py4j's log of the cut call is printed."""

    def __init__(self):
        self.seen: list[int] = []
        self.previous: dict = {}
        self.unraisable_hook = None

    def install(self) -> None:
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.previous.setdefault(sig, signal.signal(sig, self._handler))
            if self.unraisable_hook is None:
                self.unraisable_hook, sys.unraisablehook = sys.unraisablehook, self._unraisable

    def restore(self) -> None:
        import signal

        for sig, old in self.previous.items():
            signal.signal(sig, old)
        if self.unraisable_hook is not None:
            sys.unraisablehook = self.unraisable_hook
        if self.seen:
            import logging

            logging.disable(logging.NOTSET)

    def _unraisable(self, unraisable) -> None:
        if not (self.seen and isinstance(unraisable.exc_value, (KeyboardInterrupt, SystemExit))):
            self.unraisable_hook(unraisable)

    def check(self) -> None:
        import signal

        if self.seen:
            if self.seen[0] == signal.SIGTERM:
                raise SystemExit(128 + signal.SIGTERM)
            raise KeyboardInterrupt

    def _handler(self, signum, frame):
        import logging

        self.seen.append(signum)
        logging.disable(logging.CRITICAL)  # py4j logs the call the interrupt cut short, with its traceback
        with contextlib.suppress(Exception):
            from pyspark import SparkContext

            if SparkContext._active_spark_context is not None:  # noqa: SLF001 - pyspark's own handler does this
                SparkContext._active_spark_context.cancelAllJobs()  # noqa: SLF001
        if _safe_to_raise(frame):
            self.check()


def _safe_to_raise(frame) -> bool:
    """Can the handler raise where the signal landed? Not inside a finalizer (Python drops the
    exception), nor inside logging or threading: an exception between a lock's acquire and its
    ``try`` leaves the lock held for good — py4j's connection finalizers log as they close, so the
    next thread to log (the wave thread, ending) waits forever on the main thread, which waits for it.
    There the signal is only noted: the cancelled jobs end, and `check` raises at the next step."""
    unsafe = (f"{os.sep}logging{os.sep}", f"{os.sep}threading.py")
    while frame is not None:
        code = frame.f_code
        if code.co_name == "__del__" or any(part in code.co_filename for part in unsafe):
            return False
        frame = frame.f_back
    return True


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


def executor_python_hint(exc) -> str:
    """Why executors could not import kgroup: their Python is not one kgroup is installed in."""
    if "No module named 'kgroup" not in str(exc):
        return ""
    python = os.environ.get("PYSPARK_PYTHON", sys.executable)
    return (f"; the executors' Python (PYSPARK_PYTHON={python}) has no kgroup: install kgroup in it on "
            "every node, or ship an environment with spark.archives and point PYSPARK_PYTHON into it")


def spark_error_text(exc) -> str:
    """The useful line of a Spark failure: the Python error raised in a task, else the first line."""
    text = str(exc)
    python_errors = [line.strip() for line in text.splitlines()
                     if line and not line.startswith((" ", "\t")) and "Error" in line.split(":")[0]
                     and not line.startswith(("py4j", "org.", "java.", "Caused by"))]
    return python_errors[-1] if python_errors else (text.strip().splitlines() or [type(exc).__name__])[0]


def _run_jobs(spark, tasks, tally, *, output, view, row_filter, until_offset, until_ms, out, check=lambda: None):
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
        summaries = engine.write_output(spark, tasks, options, out, output, direct=direct)
        tally.replay(summaries)
        return
    writer = RowWriter(output)
    spool = None
    if is_local_master(spark.sparkContext.master):
        spool = tally.spool = tempfile.mkdtemp(prefix="kgroup-spark-rows-")
    try:
        _stream(engine.stream_items(spark, tasks, options, output, spool=spool), tasks, tally, writer,
                check)
    finally:
        if spool is not None:
            shutil.rmtree(spool, ignore_errors=True)


def _stream(items, tasks, tally, writer, check):
    position = 0
    for kind, item in items:
        check()     # a signal noted where raising was unsafe: the next wave is not started
        task = tasks[position]
        if kind == "e":
            if not tally.skipped(task):
                tally.end(task, item)
            position += 1
        elif tally.skipped(task):
            continue
        elif kind == "p":
            tally.problem(item)
        elif kind == "t":
            writer.add_joined(*item)
        else:
            writer.add_all(item)
    writer.close()
