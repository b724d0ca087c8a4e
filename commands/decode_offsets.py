"""`kgroup decode-offsets`: decode __consumer_offsets / __worker_offsets segments into data or kafka-dump-log text."""

from __future__ import annotations

import sys

import click

from kgroup.commands.options import CONTEXT_SETTINGS, output_option

FORMATS = ["table", "jsonl", "json", "csv", "dump-log"]


@click.command("decode-offsets", context_settings=CONTEXT_SETTINGS)
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@output_option(FORMATS, default_tty="table", default_pipe="jsonl")
@click.option("--view", type=click.Choice(["records", "state"]), default="records", show_default=True,
              help="records: every record in log order. state: what remains after compaction and the "
                   "transaction rules (committed offsets, open transactions, latest record per key).")
@click.option("--family", type=click.Choice(["consumer", "connect"]), default=None,
              help="Record family when the path does not name the topic (__consumer_offsets or "
                   "__worker_offsets). Never guessed from the records.")
@click.option("--group", "groups", multiple=True, metavar="GLOB", help="Only these groups (repeatable).")
@click.option("--topic", "topics", multiple=True, metavar="GLOB",
              help="Only offset commits for these topics (repeatable).")
@click.option("--type", "types", multiple=True, metavar="TYPE",
              help="Only these record types: a name (offset_commit, group_metadata, ...), a key type "
                   "number, control or error (repeatable).")
@click.option("--until-offset", type=int, default=None, metavar="N",
              help="Stop after log offset N (in each partition): the state as it was then.")
@click.option("--until-time", default=None, metavar="TIME",
              help="Ignore records after TIME (epoch ms or ISO 8601, UTC by default).")
@click.option("--strict", is_flag=True, help="Stop at the first problem (exit 1).")
@click.option("--progress/--no-progress", default=None,
              help="Progress on stderr (default: only when stderr is a terminal).")
def decode_offsets(paths, output, view, family, groups, topics, types, until_offset, until_time, strict,
                   progress):
    """Decode __consumer_offsets (or the draft Connect __worker_offsets) segments.

    PATH is a segment file (.log), a partition directory (__consumer_offsets-N), a log directory
    holding partition directories, or - for raw batches on stdin.

    Every record type and version is decoded (offset commits, classic group metadata with
    static members' group.instance.id, KIP-848 and share-group records), over magic 0-2 batches with
    any codec. `-o dump-log` prints exactly what `kafka-dump-log.sh --offsets-decoder` prints.

    Problems (bad CRC, corrupt batches, undecodable records) are reported on stderr with the file
    and byte position; decoding goes on. Exit 0 all decoded, 3 some problems, 1 nothing readable.
    """
    from kgroup.commands import _decode_run as run
    from kgroup.errors import KgroupError

    if output == "dump-log" and (view != "records" or groups or topics or types or until_offset is not None
                                 or until_time is not None):
        raise click.UsageError("-o dump-log reproduces kafka-dump-log: it takes no --view, filters or --until")
    try:
        code = run.decode(paths, output=output, view=view, family=family, groups=list(groups),
                          topics=list(topics), types=list(types), until_offset=until_offset,
                          until_time=until_time, strict=strict, progress=progress)
    except KgroupError as exc:
        raise click.ClickException(str(exc)) from None
    sys.exit(code)
