"""The local engine: reads the inputs in this process and writes rows, state or kafka-dump-log text.

One sink per view/format gets every batch in log order; what a sink writes goes to the stream given
(stdout, or a file under --out). Problems go to stderr as they are found; `outcome` decides the
exit status, as it does for the Spark engine.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from functools import partial

from kgroup.writers import Progress

from .decoder import ProblemLog, RowDecoder
from .dump_log_text import batch_lines, header_lines, trailing_bytes_line
from .fast_rows import FastDumpLog, FastJsonl
from .inputs import (RowFilter, batches_again, family_overrides, in_log_order, iter_input,
                     normalize_types, resolve_inputs)
from .outcome import note, run_decode
from .render import JsonlLines, RowWriter, renderer
from .render_state import render_state
from .state import OffsetsState
from .state_replay import CompactingReplay


class DumpLogSink:
    """kafka-dump-log's text; with `fast`, from the batch's undecoded records (see `fast_rows`)."""

    def __init__(self, stream, problems, fast=False):
        self.stream = stream
        self.problems = problems
        self.decode = not fast  # the sink gets DecodedRows (False: the batch's undecoded records)
        self.fast = FastDumpLog() if fast else None
        self.decoder = None
        self.key_texts: dict = {}  # key bytes -> key text, for one input

    def begin(self, inp):
        self.key_texts = {}
        if self.fast is not None:
            self.decoder = RowDecoder(inp.segment, inp.family, self.problems)
        self.stream.write("".join(line + "\n" for line in header_lines(inp.shown_path, inp.segment.base_offset)))

    def batch(self, batch, rows):
        if self.fast is None:
            self.stream.write("\n".join(batch_lines(batch, rows, self.key_texts)) + "\n")
        else:
            self.stream.write(self.fast.text(batch, rows, self.decoder, self.key_texts))

    def end(self, inp, problems):
        trailing = problems.trailing_bytes.get(inp.segment.path)
        if trailing:
            self.stream.write(trailing_bytes_line(os.path.basename(inp.segment.path), trailing[1]) + "\n")

    def close(self):
        pass


class RowSink:
    """jsonl / json / csv / table of records, streaming; with `fast` (jsonl and json only), from the
    batch's undecoded records (see `fast_rows`)."""

    def __init__(self, output, row_filter, stream, problems, fast=False):
        self.keep = row_filter.keep if row_filter.active else None
        self.writer = RowWriter(output, stream)
        self.problems = problems
        self.decode = not fast
        if fast:
            self.render, self.fast = None, FastJsonl(JsonlLines(), self.keep, self.writer.separator)
        else:
            self.render, self.fast = renderer(output), None
        self.decoder = None

    def begin(self, inp):
        if self.fast is not None:
            self.decoder = RowDecoder(inp.segment, inp.family, self.problems)

    def batch(self, batch, rows):
        if self.fast is not None:
            self.writer.add_joined(*self.fast.text(batch, rows, self.decoder))
            return
        keep, render = self.keep, self.render
        self.writer.add_all([render(row) for row in rows if keep is None or keep(row)])

    def end(self, inp, problems):
        pass

    def close(self):
        self.writer.close()


class StateSink:
    """Replays every record (filters apply to what is shown, not to the replay); takes undecoded
    records and decodes only those compaction keeps (see `state_replay`)."""

    decode = False

    def __init__(self, output, row_filter, stream, problems, read_again=None):
        self.output = output
        self.filter = row_filter
        self.stream = stream
        self.problems = problems
        self.read_again = read_again  # input -> how to read it again (`inputs.batches_again`), or None
        self.state = OffsetsState()
        self.replay = None

    def begin(self, inp):
        partition = self.state.for_partition(inp.segment.topic or inp.segment.path, inp.segment.partition)
        self.replay = CompactingReplay(partition, RowDecoder(inp.segment, inp.family, self.problems), self.problems,
                                       None if self.read_again is None else self.read_again(inp))

    def batch(self, batch, records):
        self.replay.batch(batch, records)

    def end(self, inp, problems):
        self.replay.flush()

    def close(self):
        render_state(self.state, self.output, self.filter, self.stream)


def make_sink(view: str, output: str, row_filter: RowFilter, stream, problems: ProblemLog, *,
              whole_batches: bool = False, read_again=None):
    """The sink for a view and format; every source (files, a cluster) feeds it batches in log order,
    decoded rows or, where the sink's ``decode`` is False, the batch's undecoded records.

    whole_batches: every batch comes with all its records (no --until cut-offs), which the text
    sinks need to write offset commits straight from the undecoded records.
    read_again: input -> how to read part of it again (`inputs.batches_again`) or None; None for a
    source that cannot be read twice (a cluster's topic)."""
    if view == "state":
        return StateSink(output, row_filter, stream, problems, read_again)
    if output == "dump-log":
        return DumpLogSink(stream, problems, fast=whole_batches)
    return RowSink(output, row_filter, stream, problems, fast=whole_batches and fast_text_output(output))


def fast_text_output(output: str) -> bool:
    """Whether rows in this format are written straight from the undecoded records when batches come
    whole (`fast_rows.FastJsonl`), on both engines."""
    return output in ("jsonl", "json")


def reads_past_damage(output: str, strict: bool) -> bool:
    """Whether reading resumes at the next whole batch after one that cannot be read (both engines).
    Not with --strict (Kafka's reading: stop at the first problem) nor for kafka-dump-log's text,
    which stops where Kafka's reader stops."""
    return not strict and output != "dump-log"


def default_progress(view: str) -> bool:
    """Progress by default only when stderr is a terminal, and not when records stream to that
    terminal too (the meter's line would end up inside the printed records)."""
    return sys.stderr.isatty() and not (view == "records" and sys.stdout.isatty())


@contextlib.contextmanager
def fewer_collections():
    """Run the cyclic garbage collector rarely while decoding.

    The reader allocates millions of short-lived tuples and records, which trigger a collection
    every 700 allocations by default; the full ones walk every live object (the survivors and what
    the imports left), and cost more than decoding the survivors. Decoding makes few reference
    cycles, so a collection every 100,000 allocations keeps memory flat; what the imports built is
    set aside (`gc.freeze`) until the decode ends.
    """
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(100_000, 50, 100)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def decode(paths, *, output, view, family, groups, topics, types, until_offset, until_time, strict,
           progress, stream=None) -> int:
    """Decode with the local engine; until_time is epoch ms. Returns the exit status."""
    stream = stream or sys.stdout
    row_filter = RowFilter(groups, topics, normalize_types(types, family))
    if progress is None:
        progress = default_progress(view)
    meter = None

    def report(problem):
        if meter is not None:
            meter.clear()  # the message must not land on the progress line
        note(str(problem))

    problems = ProblemLog(strict=strict, report=report)
    resync = reads_past_damage(output, strict)
    sink = make_sink(view, output, row_filter, stream, problems,
                     whole_batches=until_offset is None and until_time is None,
                     read_again=partial(batches_again, until_offset=until_offset, until_time=until_time,
                                        resync=resync))

    def body() -> int:
        nonlocal meter
        batches_read = 0
        inputs = resolve_inputs(paths, family, problems)
        if view == "state":  # replayed: in each partition's log order
            inputs = in_log_order(inputs)
        for text in family_overrides(inputs, family):
            note(f"note: {text}")
        meter = Progress(sum(i.size for i in inputs), "decoding", enabled=progress)
        done = 0
        for inp in inputs:
            sink.begin(inp)
            base = done

            def tick(pos, base=base):
                meter.update(base + pos, problems.records_ok)

            for batch, rows in iter_input(inp, problems, until_offset=until_offset, until_time=until_time,
                                          progress=tick if meter.enabled else None,
                                          decode=sink.decode, resync=resync):
                batches_read += 1
                sink.batch(batch, rows)
            sink.end(inp, problems)
            done += inp.size
        meter.close()
        sink.close()
        return batches_read

    with fewer_collections():
        return run_decode(problems, body)
