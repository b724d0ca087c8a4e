"""What a Spark task makes of its range's batches: the local engine's per-record work, batch by batch.

The text outputs go the way the local engine's `RowSink` goes: jsonl and json from the undecoded
records (`kgroup.decode.fast_rows.FastJsonl`) when batches come whole, every other case row by row
with `render.PAYLOADS`. Parquet columns come the same way (`kgroup.decode.fast_parquet`). The state
view's reduction is `replay.kept_records`.

A Python worker runs many tasks (spark.python.worker.reuse): the caches that the local engine keeps
for a whole run (key texts, key columns) are kept here for the worker's life, per row filter and
record family, so a task does not pay again for every key it meets. Each task runs with the local
engine's garbage-collector setting (`run.fewer_collections`, applied by `engine`).
No pyspark import: tests run this without Spark.
"""

from __future__ import annotations

from kgroup.decode.fast_parquet import FastParquet
from kgroup.decode.fast_rows import FastJsonl
from kgroup.decode.render import ARROW_BLOCK_ROWS, PAYLOADS, JsonlLines, arrow_schema
from kgroup.decode.run import fast_text_output

#: Lines per element the workers hand over to be written (see `text_blocks`).
TEXT_BLOCK_LINES = 4096
#: Row filters whose caches one worker keeps (a run has one; tests use a few).
_CACHED_FILTERS = 8

_worker_caches: dict = {}


def _cached(kind: str, reader, row_filter, make):
    """This worker's object of `kind` for this row filter (by value: each task unpickles its own copy)
    and the reader's record family (the same key bytes read otherwise in the other family)."""
    key = (kind, reader.task.family, _filter_key(row_filter))
    found = _worker_caches.get(key)
    if found is None:
        if len(_worker_caches) >= _CACHED_FILTERS * 3:
            _worker_caches.clear()
        found = _worker_caches[key] = make()
    return found


def _filter_key(row_filter) -> tuple:
    if row_filter is None or not row_filter.active:
        return ()
    return (tuple(row_filter.groups), tuple(row_filter.topics), frozenset(row_filter.types))


def _keep(row_filter):
    return row_filter.keep if row_filter is not None and row_filter.active else None


def separator(output: str) -> str:
    """What stands between two rows' payloads (`render.RowWriter.separator`)."""
    return "\n" if output == "jsonl" else ",\n"


def batch_payloads(reader, row_filter, output: str):
    """Per batch with rows to show, after reading and rendering it (so its problems are in the
    reader's summary): ("t", (text, count)), the jsonl/json rows already joined by the output's
    separator, or ("r", [payload, ...]) rendered row by row (`PAYLOADS[output]`)."""
    keep = _keep(row_filter)
    if fast_text_output(output) and reader.whole_batches:
        sep = separator(output)
        fast = _cached("jsonl" + sep, reader, row_filter, lambda: FastJsonl(JsonlLines(), keep, sep))
        fast.keep = keep  # the bound method of this task's filter (equal to the cached one's)
        text_of = fast.text
        for batch, records in reader.records():
            text, count = text_of(batch, records, reader.decoder)
            if count:
                yield "t", (text, count)
        return
    render = PAYLOADS[output]
    for _batch, rows in reader:
        payloads = [render(row) for row in rows if keep is None or keep(row)]
        if payloads:
            yield "r", payloads


def text_blocks(reader, row_filter, output: str = "jsonl"):
    """jsonl lines joined into blocks of about TEXT_BLOCK_LINES, for Spark's text writer: it writes each
    element plus a newline, so a block is written exactly as its lines would be, at a fraction of the
    per-element cost of moving them from the Python worker to the JVM."""
    block: list = []
    lines = 0
    for kind, item in batch_payloads(reader, row_filter, output):
        if kind == "t":
            block.append(item[0])
            lines += item[1]
        else:
            block.append("\n".join(item))
            lines += len(item)
        if lines >= TEXT_BLOCK_LINES:
            yield "\n".join(block)
            block, lines = [], 0
    if block:
        yield "\n".join(block)


def write_text(reader, row_filter, output: str, stream) -> None:
    """The range's rows as text lines to `stream`, a batch's lines with one write (as the local
    engine's `RowWriter` writes them)."""
    for kind, item in batch_payloads(reader, row_filter, output):
        if kind == "t":
            stream.write(item[0] + "\n")
        else:
            item.append("")
            stream.write("\n".join(item))


def parquet_blocks(reader, row_filter):
    """The range's rows as `fast_parquet.ParquetBlock`s of at least ARROW_BLOCK_ROWS rows each but
    the last, the offset commits of whole batches straight from their undecoded records."""
    fast = _cached("parquet", reader, row_filter, FastParquet)
    fast.keep = _keep(row_filter)
    block = fast.block()
    if reader.whole_batches:
        add = fast.add_batch
        for batch, records in reader.records():
            add(block, batch, records, reader.decoder)
            if block.count >= ARROW_BLOCK_ROWS:
                yield block
                block = fast.block()
    else:
        for _batch, rows in reader:
            fast.add_rows(block, rows)
            if block.count >= ARROW_BLOCK_ROWS:
                yield block
                block = fast.block()
    if block.count:
        yield block


def write_parquet(reader, row_filter, path: str) -> None:
    """The range's rows as one Parquet file (pyarrow), a row group per block."""
    import pyarrow.parquet as pq

    schema = arrow_schema()
    with pq.ParquetWriter(path, schema, compression="snappy") as writer:
        for block in parquet_blocks(reader, row_filter):
            writer.write_batch(block.record_batch(schema))


def parquet_tuples(reader, row_filter):
    """The range's rows as `render.COLUMNS` tuples (Spark's own Parquet writer takes rows)."""
    for block in parquet_blocks(reader, row_filter):
        yield from block.tuples()
