"""`kgroup decode-offsets`: decode __consumer_offsets / __share_group_state / __worker_offsets segments into data or kafka-dump-log text."""

from __future__ import annotations

import sys

import click
from click.core import ParameterSource

from kgroup.commands.options import CONTEXT_SETTINGS, cluster_options, fail, output_option, until_time_ms

FORMATS = ["table", "jsonl", "json", "csv", "dump-log", "parquet"]


@click.command("decode-offsets", context_settings=CONTEXT_SETTINGS)
@click.argument("paths", nargs=-1, metavar="[PATH...]")
@output_option(FORMATS, default_pipe="jsonl")
@click.option("--view", type=click.Choice(["records", "state"]), default="records", show_default=True,
              help="records: every record in log order. state: what remains after compaction and the "
                   "transaction rules (committed offsets, open transactions, latest record per key, share and "
                   "streams groups, and each share partition's state from __share_group_state, every record "
                   "replayed); its table lists the groups and members as describe --from-dump does.")
@click.option("--family", type=click.Choice(["consumer", "connect", "share-state"]), default=None,
              help="Record family when the path does not name the topic (__consumer_offsets, "
                   "__worker_offsets or __share_group_state). Never guessed from the records.")
@click.option("--group", "groups", multiple=True, metavar="GLOB", help="Only these groups (repeatable).")
@click.option("--topic", "topics", multiple=True, metavar="GLOB",
              help="Only offset commits for these topics (repeatable).")
@click.option("--type", "types", multiple=True, metavar="TYPE",
              help="Only these record types: a name (offset_commit, group_metadata, ...), a key type "
                   "number, control or error (repeatable).")
@click.option("--until-offset", type=click.IntRange(min=0), default=None, metavar="N",
              help="Stop after log offset N (in each partition): the state as it was then.")
@click.option("--until-time", default=None, metavar="TIME", callback=until_time_ms,
              help="Ignore records after TIME (epoch ms or ISO 8601, UTC by default).")
@click.option("--strict", is_flag=True,
              help="Stop at the first problem (exit 1), reading as Kafka does: no search for the next "
                   "batch after a damaged one.")
@click.option("--progress/--no-progress", default=None,
              help="Progress on stderr (default: only when stderr is a terminal and records are not "
                   "being printed to it; local engine).")
@click.option("--engine", type=click.Choice(["local", "spark", "auto"]), default="local", show_default=True,
              help="local: this process. spark: Apache Spark (pyspark + Java), each task decoding one "
                   "byte range of a file. auto: Spark where it is faster than the local engine for the "
                   "input's size, the cores --master gives it and its start-up (a cluster master whose "
                   "cores --spark-conf does not give: Spark), and Spark can run here; else local (a note "
                   "on stderr says which and why).")
@click.option("--master", default="local[*]", show_default=True, metavar="URL",
              help="Spark master: local[N], spark://host:7077, yarn, k8s://... (input paths must be "
                   "readable by the executors at the same path).")
@click.option("--spark-conf", "spark_conf", multiple=True, metavar="KEY=VALUE",
              help="Spark configuration (repeatable), e.g. spark.executor.memory=4g.")
@click.option("--out", "out", default=None, metavar="DIR",
              help="Write the output under DIR instead of stdout (a new directory). With Spark the "
                   "default format is parquet (part files); jsonl writes text part files. On a cluster "
                   "the executors write DIR: a path each of them can write (shared file system) or a "
                   "Hadoop URL.")
@click.option("--split-size", default="64m", show_default=True, metavar="SIZE",
              help="Spark: bytes per task; files are cut at batch boundaries.")
@click.option("--spark-threshold", default=None, metavar="SIZE",
              help="--engine auto: use Spark from this input size on, instead of the cost model.")
@cluster_options
@click.option("--follow", is_flag=True,
              help="With --bootstrap-server: after what the topic holds, print new records as they are "
                   "committed (-o jsonl or csv, --view records) until interrupted.")
def decode_offsets(paths, output, view, family, groups, topics, types, until_offset, until_time, strict,
                   progress, engine, master, spark_conf, out, split_size, spark_threshold, cluster, follow):
    """Decode __consumer_offsets, __share_group_state (or the draft Connect __worker_offsets) segments.

    PATH is a segment file (.log), a partition directory (__consumer_offsets-N), a log directory
    holding partition directories, or - for raw batches on stdin. Without PATH, --bootstrap-server
    reads __consumer_offsets (__worker_offsets with --family connect, __share_group_state with
    --family share-state) from a running cluster: every
    partition, or only those holding the --group ids when none is a glob.

    Every record type and version is decoded (offset commits, classic group metadata with
    static members' group.instance.id, KIP-848, share- and streams-group records, the share
    coordinator's ShareSnapshot / ShareUpdate), over magic 0-2 batches with
    any codec. `-o dump-log` prints exactly what `kafka-dump-log.sh --offsets-decoder` prints
    (`--share-group-state-decoder` for __share_group_state).

    Problems (bad CRC, corrupt batches, undecodable records) are reported on stderr with the file
    and byte position; decoding goes on. After a batch that cannot be read (a damaged length, say),
    decoding resumes at the next whole batch (a valid header and CRC) and the bytes skipped are one
    line, "FILE: bytes A–B skipped: WHY; resumed at byte B" (not with --strict, nor in -o dump-log,
    whose text stops where kafka-dump-log stops). Exit 0 all decoded, 3 some problems, 1 no record
    decoded.
    """
    from kgroup.decode.engines import decode_offsets as decode, parse_spark_conf, parse_sizes
    from kgroup.decode.inputs import OptionError
    from kgroup.errors import KgroupError

    if output == "dump-log" and (view != "records" or groups or topics or types or until_offset is not None
                                 or until_time is not None):
        raise click.UsageError("-o dump-log reproduces kafka-dump-log: it takes no --view, filters or --until")
    ctx = click.get_current_context()
    explicit_output = ctx.get_parameter_source("output") is ParameterSource.COMMANDLINE
    live = _cluster_to_read(ctx, paths, cluster, follow)
    try:
        split_bytes, threshold = parse_sizes(split_size, spark_threshold)
        code = decode(paths, output, explicit_output, engine, out,
                      dict(view=view, family=family, groups=list(groups), topics=list(topics), types=list(types),
                           until_offset=until_offset, until_time=until_time, strict=strict),
                      progress=progress, master=master, spark_conf=parse_spark_conf(spark_conf),
                      split_bytes=split_bytes, threshold=threshold,
                      cluster=cluster.connect if live else None, follow=follow)
    except OptionError as exc:
        if exc.option:
            raise click.BadParameter(str(exc), param_hint=exc.option) from None
        raise click.UsageError(str(exc)) from None
    except KgroupError as exc:          # exit 2 for a usage error found past parsing (an address, --out)
        fail("decode-offsets", exc)
    sys.exit(code)


def _cluster_to_read(ctx, paths, cluster, follow) -> bool:
    """Files or a cluster: paths win over KGROUP_BOOTSTRAP_SERVER; --bootstrap-server given with
    paths, or neither, is a usage error."""
    given = ctx.get_parameter_source("bootstrap") is ParameterSource.COMMANDLINE
    if paths and given:
        raise click.UsageError("give PATH... or --bootstrap-server, not both")
    if paths:
        if follow:
            raise click.UsageError("--follow reads a cluster (--bootstrap-server); files are read to their end")
        return False
    if not cluster.bootstrap:
        raise click.UsageError("give PATH... (segment files, partition or log directories, - for stdin) "
                               "or --bootstrap-server HOST:PORT")
    return True
