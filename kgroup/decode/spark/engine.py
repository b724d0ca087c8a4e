"""The Spark jobs of `decode-offsets --engine spark`: one task per planned byte range.

Imports pyspark, so import this module only once Spark is known to be there. Every task opens its own
file and reads only its range (never Spark's binaryFile source, which loads a whole file into one JVM
buffer). Problems and counts travel back per task (`RangeSummary`): in band with the rows when the
driver renders them, as the job's result when tasks write their own part files, through an
accumulator when Spark's writers write the output.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from pyspark.accumulators import AccumulatorParam

from ..render import SCHEMA_DDL
from ..run import fewer_collections
from .reader import RangeReader, RangeSummary
from .replay import kept_records, pack_range, pack_state, replay, unpack_state
from .rows import batch_payloads, parquet_tuples, text_blocks, write_parquet, write_text


@dataclass(frozen=True)
class ReadOptions:
    """What every task needs besides its range."""

    until_offset: int | None = None
    until_time: int | None = None
    row_filter: object = None  # kgroup.decode.inputs.RowFilter, applied on the executors


class SummariesParam(AccumulatorParam):
    """seq -> RangeSummary; a retried task overwrites its own entry instead of counting twice."""

    def zero(self, value):
        return {}

    def addInPlace(self, value1, value2):
        value1.update(value2)
        return value1


def _task_items(task, options: ReadOptions, output: str):
    """("p", problem) / ("r", [payload, ...]) or ("t", (joined payloads, count)) / ("e", summary) for one
    range, in the local engine's order: a batch's problems before its rows (one item per batch:
    per-row items would cost more to ship than to render)."""
    reader = RangeReader(task, options.until_offset, options.until_time)
    problems = reader.summary.problems
    seen = 0
    with fewer_collections():
        for item in batch_payloads(reader, options.row_filter, output):
            while seen < len(problems):
                yield ("p", problems[seen])
                seen += 1
            yield item
    while seen < len(problems):
        yield ("p", problems[seen])
        seen += 1
    yield ("e", reader.summary)


#: Tasks whose rows the driver holds at once when it renders to stdout (x2 with the wave being computed).
MAX_WAVE = 8


def _parallelize(sc, tasks):
    return sc.parallelize(tasks, max(1, len(tasks)))


def stream_items(spark, tasks, options: ReadOptions, output: str, wave: int | None = None,
                 spool: str | None = None):
    """Every task's items in task order, computed a wave of tasks at a time (the next wave runs while
    the driver consumes the current one), so at most two waves' rows are held: stdout is one stream
    anyway, --out is the way to use a whole cluster.

    spool: a directory the tasks can write and the driver read (local masters). Each task then pickles
    its items to a file there instead of sending them through the JVM, which would hold a task's
    whole output in its heap and copy it twice.
    """
    sc = spark.sparkContext
    wave = wave or max(2, min(sc.defaultParallelism, MAX_WAVE))
    chunks = [list(range(i, min(i + wave, len(tasks)))) for i in range(0, len(tasks), wave)]
    if not chunks:
        return
    if spool is None:
        rdd = _parallelize(sc, tasks).flatMap(lambda task: _task_items(task, options, output))
    else:
        rdd = _parallelize(sc, tasks).map(lambda task: _spool_items(task, options, output, spool))

    def run(chunk):
        return sc.runJob(rdd, list, chunk)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="kgroup-wave") as pool:
        pending = pool.submit(run, chunks[0])
        try:
            for index in range(len(chunks)):
                items = pending.result()
                if index + 1 < len(chunks):
                    pending = pool.submit(run, chunks[index + 1])
                if spool is None:
                    yield from items
                else:
                    for path in items:
                        yield from _unspool(path)
        finally:
            if not pending.done():  # the reader stopped early (--strict, a closed pipe): stop the next wave
                sc.cancelAllJobs()


def _spool_items(task, options: ReadOptions, output: str, spool: str) -> str:
    import os
    import pickle

    final = os.path.join(spool, f"{task.seq:06d}.items")
    partial = f"{final}.{os.getpid()}.partial"
    if not os.path.isdir(spool):  # the driver has finished (stopped early) and cleaned up
        return final
    with open(partial, "wb") as f:
        for item in _task_items(task, options, output):
            pickle.dump(item, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(partial, final)
    return final


def _unspool(path: str):
    import os
    import pickle

    with open(path, "rb") as f:
        while True:
            try:
                yield pickle.load(f)
            except EOFError:
                break
    os.remove(path)


def write_output(spark, tasks, options: ReadOptions, out: str, fmt: str, *, direct: bool = False) -> dict:
    """Decode every range and write it under `out` (fmt: parquet or jsonl); returns the summaries by
    task seq.

    direct=True (a local master, or a file:// directory every executor sees): each task writes its
    own part file (Parquet through pyarrow when installed, or JSON lines), under a hidden name renamed
    into place when complete, so a retried task just rewrites it and readers never see half a file.
    Otherwise Spark's writers: Parquet from row tuples, text from blocks of lines.
    """
    sc = spark.sparkContext
    row_filter = options.row_filter
    until = (options.until_offset, options.until_time)
    if direct and (fmt != "parquet" or _has_pyarrow()):
        return _write_parts(sc, tasks, until, row_filter, out, fmt)
    summaries = sc.accumulator({}, SummariesParam())
    if fmt == "parquet":
        def rows(task_iter):
            for task in task_iter:
                reader = RangeReader(task, *until)
                with fewer_collections():
                    yield from parquet_tuples(reader, row_filter)
                summaries.add({task.seq: reader.summary})

        frame = spark.createDataFrame(_parallelize(sc, tasks).mapPartitions(rows), SCHEMA_DDL, verifySchema=False)
        frame.write.parquet(out)
        return dict(summaries.value)

    def lines(task_iter):
        for task in task_iter:
            reader = RangeReader(task, *until)
            with fewer_collections():
                yield from text_blocks(reader, row_filter, fmt)
            summaries.add({task.seq: reader.summary})

    _parallelize(sc, tasks).mapPartitions(lines).saveAsTextFile(out)
    return dict(summaries.value)


def _has_pyarrow() -> bool:
    try:
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return False
    return True


def _write_parts(sc, tasks, until, row_filter, out: str, fmt: str) -> dict:
    import os

    directory = out.removeprefix("file://")
    os.makedirs(directory)

    def run(task_iter):
        for task in task_iter:
            reader = RangeReader(task, *until)
            name = f"part-{task.seq:05d}" + (".parquet" if fmt == "parquet" else "")
            partial = os.path.join(directory, f".{name}.{os.getpid()}.partial")
            with fewer_collections():
                if fmt == "parquet":
                    write_parquet(reader, row_filter, partial)
                else:
                    with open(partial, "w", encoding="utf-8") as f:
                        write_text(reader, row_filter, fmt, f)
            os.replace(partial, os.path.join(directory, name))
            yield task.seq, reader.summary

    summaries = dict(_parallelize(sc, tasks).mapPartitions(run).collect())
    with open(os.path.join(directory, "_SUCCESS"), "w"):
        pass
    return summaries


def compute_state(spark, tasks, options: ReadOptions) -> tuple[list, dict]:
    """([(log partition index, replay.ReplayedPartition)] in reading order, summaries by seq): the
    replay runs on the executors, one log partition per group, over the records each range could not
    drop; records and states travel packed (`replay.pack_range`, `pack_state`)."""
    sc = spark.sparkContext
    summaries = sc.accumulator({}, SummariesParam())
    until = (options.until_offset, options.until_time)
    index_of: dict = {}
    for task in tasks:
        index_of.setdefault(task.log_partition, len(index_of))
    keyed = [(index_of[t.log_partition], t) for t in tasks]

    def run(pairs):
        for log_index, task in pairs:
            reader = RangeReader(task, *until)
            with fewer_collections():
                kept = pack_range(task, kept_records(reader))
            yield log_index, (task.seq, kept)
            summaries.add({task.seq: reader.summary})

    partitions = max(1, min(len(index_of), sc.defaultParallelism * 2))
    states = (sc.parallelize(keyed, max(1, len(keyed)))
              .mapPartitions(run)
              .groupByKey(partitions, partitionFunc=lambda key: key)
              .mapValues(lambda parts: pack_state(replay(parts)))
              .collect())
    states.sort(key=lambda pair: pair[0])
    return [(index, unpack_state(packed)) for index, packed in states], dict(summaries.value)


def log_partitions(tasks) -> list:
    """The distinct log partitions in reading order (index -> (topic or path, partition))."""
    seen: dict = {}
    for task in tasks:
        seen.setdefault(task.log_partition, len(seen))
    return list(seen)


__all__ = ["ReadOptions", "RangeSummary", "stream_items", "write_output", "compute_state", "log_partitions"]
