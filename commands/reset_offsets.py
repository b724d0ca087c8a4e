"""`kgroup reset-offsets`: kafka-consumer-groups.sh --reset-offsets, a plan by default."""

import click

from kgroup.commands.options import (CONTEXT_SETTINGS, cluster_options, exit_for_failures, fail, output_option,
                                     topic_selector_option)

COLUMNS = ["topic", "partition", "current", "new", "log_start", "log_end", "lag_before", "lag_after",
           "clamped", "error"]


@click.command("reset-offsets", context_settings=CONTEXT_SETTINGS)
@click.argument("group")
@topic_selector_option("Reset this topic (all its partitions, or TOPIC:P,P only; repeatable).")
@click.option("--all-topics", is_flag=True, help="Reset every partition the group has a committed offset for.")
@click.option("--instance-id", "instance_ids", multiple=True, metavar="ID[,ID...]",
              help="Only the partitions these static members own: their current assignment, or the group's "
                   "last one in __consumer_offsets once they have stopped (repeatable, comma lists allowed); "
                   "narrows the other selectors or selects alone.")
@click.option("--to-earliest", is_flag=True, help="To the log start offset.")
@click.option("--to-latest", is_flag=True, help="To the log end offset.")
@click.option("--to-current", is_flag=True,
              help="To the committed offset (the log end where none is committed).")
@click.option("--to-offset", type=int, default=None, metavar="N", help="To offset N (clamped to the log).")
@click.option("--shift-by", type=int, default=None, metavar="±N", help="By N from the committed offset.")
@click.option("--to-datetime", default=None, metavar="ISO-8601",
              help="To the first offset whose record timestamp is at or after this time (UTC without an offset).")
@click.option("--by-duration", default=None, metavar="PnDTnHnMnS",
              help="To the first offset at or after now minus this duration, e.g. PT1H or P1DT12H.")
@click.option("--from-file", "from_file", type=click.Path(dir_okay=False), metavar="CSV",
              help="To the offsets in Kafka's TOPIC,PARTITION,OFFSET format (what --export writes).")
@click.option("--dry-run", is_flag=True,
              help="Plan only, commit nothing: the default, accepted as Kafka's tool takes it. Not with --execute.")
@click.option("--execute", is_flag=True,
              help="Commit the plan. Kafka's rule: only while the group is Empty or Dead (a plan of a group "
                   "that is not says so, with the commands that make it Empty).")
@click.option("--export", is_flag=True, help="Print the plan as TOPIC,PARTITION,OFFSET CSV instead of a table.")
@cluster_options
@output_option(["table", "json", "csv"])
def reset_offsets(group, topics, all_topics, instance_ids, to_earliest, to_latest, to_current, to_offset, shift_by, to_datetime,
                  by_duration, from_file, dry_run, execute, export, cluster, output):
    """Plan new committed offsets for GROUP and, with --execute, commit them.

    \b
    Choose partitions with --topic, --all-topics, --from-file
    and/or --instance-id, and exactly one target.

    Without --execute (or with --dry-run, Kafka's name for the same) nothing changes: the plan shows
    each partition's current and new offset, the log start and end, the lag before and after, and
    whether the target was clamped into the log. The plan of a group that is not Empty or Dead says
    that --execute will be refused until it is, naming its members and the `kgroup wait` or
    `kgroup remove-members` command that gets it there.

    A share group's (KIP-932) start offsets are planned and reset (AlterShareGroupOffsets) as
    kafka-share-groups does, only while it is Empty; --shift-by and --instance-id do not apply.

    Exit status: 0 ok, 3 some partitions failed, 1 nothing done (unreachable broker, active group,
    every partition failed), 2 usage error.
    """
    from kgroup.wire.authorization import partition_failure_lines
    from kgroup.client.rights import predicted
    from kgroup.client.removal import split_ids
    from kgroup.errors import KgroupError

    try:
        if dry_run and execute:
            raise click.UsageError("--dry-run and --execute exclude each other: --dry-run plans only (the "
                                   "default), --execute commits")
        flags = [name for name, on in (("to-earliest", to_earliest), ("to-latest", to_latest),
                                       ("to-current", to_current)) if on]
        chosen = _target(flags, to_offset, shift_by, to_datetime, by_duration, from_file)
        if all_topics and topics:
            raise click.UsageError("--all-topics cannot be combined with --topic")
        if from_file and (topics or all_topics):
            # Kafka's tool would silently reset the file's partitions only; say so instead
            raise click.UsageError("--from-file selects the file's partitions: it cannot be combined with "
                                   "--topic or --all-topics (--instance-id narrows it)")
        file_offsets = _read_file(from_file, group) if from_file else None
        instances = split_ids(instance_ids)
        if not (topics or all_topics or file_offsets or instances):
            raise click.UsageError("no partitions selected: give --topic, --all-topics, --from-file or --instance-id")
        from kgroup.client.offsets_admin import plan_reset
        from kgroup.client.share_offsets import is_share_group, plan_share_reset

        with cluster.connect() as client:
            plan = plan_share_reset if is_share_group(client, group) else plan_reset
            report = plan(client, group, chosen, topics, all_topics, file_offsets, instances, execute)
    except KgroupError as exc:
        fail("reset-offsets", exc)
    _render(report, output, export)
    # a topic's Metadata (partition -1) needs Describe on it, its OffsetCommit Read
    rows = [(row.topic if row.partition < 0 else f"{row.topic}:{row.partition}", row.error, row.topic,
             "Describe" if row.partition < 0 else "Read") for row in report.offsets]
    for line in partition_failure_lines(rows, group):
        click.echo(f"kgroup reset-offsets: {predicted(line, not report.executed)}", err=True)
    exit_for_failures(report.failed, len(report.offsets))


def _target(flags, to_offset, shift_by, to_datetime, by_duration, from_file):
    """Exactly one target, as a `Target`."""
    import time

    from kgroup.client.reset import Target, parse_datetime_ms, parse_duration_ms

    given = [f"--{flag}" for flag in flags] + [
        name for name, value in (("--to-offset", to_offset), ("--shift-by", shift_by), ("--to-datetime", to_datetime),
                                 ("--by-duration", by_duration), ("--from-file", from_file)) if value is not None]
    if len(given) != 1:
        raise click.UsageError("give exactly one target: --to-earliest, --to-latest, --to-current, --to-offset, "
                               "--shift-by, --to-datetime, --by-duration or --from-file"
                               + (f" (got {', '.join(given)})" if given else ""))
    if to_offset is not None:
        if to_offset < 0:
            raise click.BadParameter("an offset is not negative", param_hint="--to-offset")
        return Target("to-offset", to_offset)
    if shift_by is not None:
        return Target("shift-by", shift_by)
    # a time before 1970 is the start of every log; a negative timestamp would be one of
    # ListOffsets' special values (-1 latest, -2 earliest)
    if to_datetime is not None:
        return Target("to-datetime", max(0, parse_datetime_ms(to_datetime)))
    if by_duration is not None:
        return Target("by-duration", max(0, int(time.time() * 1000) - parse_duration_ms(by_duration)))
    if from_file is not None:
        return Target("from-file")
    return Target(flags[0])


def _read_file(path, group):
    from kgroup.client.reset import read_offsets_csv
    from kgroup.errors import KgroupUsageError

    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or "not UTF-8 text"
        raise KgroupUsageError(f"cannot read --from-file {path}: {reason}") from None
    return read_offsets_csv(text, f"--from-file {path}", group)


def _render(report, output, export):
    from kgroup.client.reset import write_offsets_csv
    from kgroup.commands.output import echo_json
    from kgroup.writers import CsvWriter, table

    if export:
        click.echo(write_offsets_csv(report.offsets), nl=False)
    elif output == "json":
        echo_json(report.to_json())
    elif output == "csv":
        writer = CsvWriter(COLUMNS)
        for row in report.offsets:
            writer.write({k: v for k, v in row.to_json().items() if k in COLUMNS})
    else:
        def cell(v):
            return "-" if v is None else str(v)

        table([[r.topic, cell(r.partition if r.partition >= 0 else None), cell(r.current), cell(r.new),
                cell(r.log_start), cell(r.log_end), cell(r.lag_before), cell(r.lag_after),
                "yes" if r.clamped else "", r.error or ""] for r in report.offsets],
              ["TOPIC", "PARTITION", "CURRENT", "NEW", "LOG-START", "LOG-END", "LAG-BEFORE", "LAG-AFTER",
               "CLAMPED", "ERROR"])
        for source in report.instances or ():
            click.echo(f"instance {source.instance_id}: {_source_text(source)}", err=True)
        done = len(report.offsets) - report.failed
        if not report.executed and report.execute_refused:
            verb = (f"plan only, nothing committed; --execute is refused until the group is Empty: "
                    f"{report.execute_refused}")
        elif not report.executed:
            verb = "plan only, nothing committed (add --execute)"
        elif not done:
            verb = "nothing committed: every partition failed"
        else:
            verb = f"committed {done} partition(s)" + (f", {report.failed} failed" if report.failed else "")
        click.echo(f"group {report.group} ({report.state}): {verb}", err=True)


def _source_text(source) -> str:
    from kgroup.writers import iso_ms

    if source.source == "current":
        return "partitions from the group's current assignment"
    return (f"partitions from the group's last assignment ({source.log} offset {source.offset}, "
            f"{iso_ms(source.timestamp)})")
