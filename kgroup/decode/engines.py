"""Which engine decodes, in which format, and where its output goes.

`decode_offsets` is the whole `decode-offsets` verb below the option parsing: it checks that the
engine, format and --out fit together, chooses the engine for --engine auto (a note on stderr says
which and why), and runs the local engine or the Spark driver. Its result is the exit status.
"""

from __future__ import annotations

import os


from . import run
from .decoder import ProblemLog
from .inputs import STDIN, OptionError, resolve_inputs
from .out_dir import open_output_file, prepare_out_dir
from .outcome import note

def parse_sizes(split_size: str, spark_threshold: str | None) -> tuple[int, int | None]:
    """--split-size and --spark-threshold in bytes (no --spark-threshold: None, the cost model decides)."""
    from kgroup.sizes import parse_size

    out = []
    for name, text in (("--split-size", split_size), ("--spark-threshold", spark_threshold)):
        try:
            out.append(None if text is None else parse_size(text))
        except ValueError as exc:
            raise OptionError(str(exc), name) from None
    return out[0], out[1]


def parse_spark_conf(pairs) -> dict:
    conf = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise OptionError(f"{pair!r} is not KEY=VALUE", "--spark-conf")
        conf[key.strip()] = value
    return conf


def input_bytes(paths) -> int:
    """Total size of the segment files under paths (unreadable paths count 0; they are reported later)."""
    return sum(i.size for i in resolve_inputs([p for p in paths if p != STDIN], None, ProblemLog()))


def choose_engine(engine: str, paths, *, view: str, output: str, master: str, spark_conf: dict,
                  threshold: int | None) -> str:
    """local or spark; for auto, `engine_choice.choose` decides and a note on stderr says which and why."""
    if engine != "auto":
        return engine
    from .engine_choice import choose
    from .spark.session import unavailable_reason

    if STDIN in paths or output == "dump-log":
        why = "stdin can't be split" if STDIN in paths else "-o dump-log is local only"
        note(f"note: --engine auto: decoding locally ({why})")
        return "local"
    size = input_bytes(paths)
    if output == "parquet":
        choice = None
    else:
        choice = choose(size, view, master, spark_conf, threshold=threshold)
        if choice.engine == "local":
            note(f"note: --engine auto: decoding locally ({choice.why})")
            return "local"
    reason = unavailable_reason()
    if reason:
        note(f"note: --engine auto: decoding locally although the input is {_mb(size)}: {reason}")
        return "local"
    why = choice.why if choice is not None else f"{_mb(size)} of input; -o parquet: only Spark writes it"
    note(f"note: --engine auto: decoding with Spark ({why})")
    return "spark"


def _mb(size: int) -> str:
    from kgroup.sizes import size_text
    return size_text(size)


def decode_offsets(paths, output, explicit_output: bool, engine: str, out, common: dict, *, progress, master,
                   spark_conf: dict, split_bytes: int, threshold: int | None, cluster=None, follow=False) -> int:
    """Pick the engine and the output format, then decode; common holds the view, family, filters,
    --until cut-offs and --strict. With `cluster` (a `connect()` for a ClusterClient) the records come
    from a running cluster instead of paths (`live`), on the local engine."""
    view = common["view"]
    if cluster is not None:
        return _decode_cluster(cluster, output, explicit_output, engine, out, common, follow)
    if engine == "spark" and output == "dump-log":
        raise OptionError("-o dump-log runs on the local engine only (it prints one file at a time)")
    if engine == "spark" and STDIN in paths:
        raise OptionError("the Spark engine reads files (each task opens its own byte range); "
                          "stdin can't be split: use --engine local for -")
    engine = choose_engine(engine, paths, view=view, output=output, master=master, spark_conf=spark_conf,
                           threshold=threshold)
    if out is not None and not explicit_output:
        output = "parquet" if engine == "spark" and view == "records" else "jsonl"
    if output == "parquet":
        if engine != "spark":
            raise OptionError("-o parquet needs the Spark engine (--engine spark); "
                              "the local engine writes jsonl, json, csv or table")
        if out is None or view != "records":
            raise OptionError("-o parquet writes records under --out DIR (--view records)")
    if engine == "spark" and out is not None and view == "records" and output not in ("parquet", "jsonl"):
        raise OptionError(f"-o {output} --out: the Spark engine writes records as parquet or jsonl part "
                          f"files (use one of those, or leave out --out to get {output} on stdout)")
    if engine == "spark":
        from .spark.driver import decode_spark

        return decode_spark(paths, output=output, master=master, spark_conf=spark_conf, out=out,
                            split_bytes=split_bytes, **common)
    return _to_stream_or_out(lambda **kw: run.decode(paths, output=output, progress=progress, **common, **kw),
                             out, view, output)


def _to_stream_or_out(decode, out, view: str, output: str) -> int:
    """Run a local decode onto stdout, or into one file in a new --out DIR."""
    if out is None:
        return decode()
    prepare_out_dir(out)
    with open_output_file(out, view, output) as stream:
        return decode(stream=stream)


def _decode_cluster(connect, output, explicit_output, engine, out, common, follow) -> int:
    """The option rules of a cluster read (`live`): local engine, no kafka-dump-log text, and
    --follow only for formats that stream (jsonl, csv) over records with no --until cut-off."""
    from .live import decode_cluster

    if engine == "spark":
        raise OptionError("--bootstrap-server reads the cluster in this process: --engine spark "
                          "decodes files only")
    if engine == "auto":
        note("note: --engine auto: decoding locally (a cluster is read by the local engine)")
    if output == "dump-log":
        raise OptionError("-o dump-log prints a segment file as kafka-dump-log does; "
                          "a cluster has no files (use -o jsonl)")
    if out is not None and not explicit_output:
        output = "jsonl"
    if output == "parquet":
        raise OptionError("-o parquet needs the Spark engine, which decodes files only")
    if follow:
        if common["view"] != "records":
            raise OptionError("--follow streams records; --view state is the state at one moment "
                              "(run it again for a newer one)", "--follow")
        if common["until_offset"] is not None or common["until_time"] is not None:
            raise OptionError("--follow streams new records; --until-offset / --until-time stop "
                              "at a point in the past", "--follow")
        if output not in ("jsonl", "csv"):
            raise OptionError(f"--follow writes records as they arrive: -o jsonl or csv, not {output}",
                              "--follow")
    return _to_stream_or_out(lambda **kw: decode_cluster(connect, output=output, follow=follow, **common, **kw),
                             out, common["view"], output)
