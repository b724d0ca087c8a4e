"""`kgroup delete`: delete groups with DeleteGroups, each group's error reported on its own."""

import click

from kgroup.commands.options import CONTEXT_SETTINGS, cluster_options, exit_for_failures, fail, output_option


@click.command("delete", context_settings=CONTEXT_SETTINGS)
@click.argument("groups", nargs=-1, required=True)
@click.option("--dry-run", is_flag=True,
              help="Delete nothing: describe each group and report whether it would be deleted "
                   "(WOULD-DELETE; JSON and CSV: would_delete) or the error Kafka would give "
                   "(NON_EMPTY_GROUP while it has members, GROUP_ID_NOT_FOUND).")
@click.option("--internal-topics", "internal_topics", is_flag=True,
              help="A streams group's repartition and changelog topics (from its topology) are deleted "
                   "too, once the group is, as kafka-streams-groups can. "
                   "Without it they stay, and each one that exists is named.")
@cluster_options
@output_option(["table", "json", "csv"])
def delete(groups, dry_run, internal_topics, cluster, output):
    """Delete GROUP... and their committed offsets (DeleteGroups, one request per coordinator).

    Kafka deletes only groups without members: a group in use answers NON_EMPTY_GROUP (a streams
    group: unless it is Empty). Share groups are deleted alike (with their share-partition state).
    A streams group's internal topics stay unless --internal-topics is
    given; JSON gives its row internal_topics: [{topic, action (deleted, failed, kept,
    would-delete), error}].

    Exit status: 0 all deleted (dry run: all deletable), 3 some failed, 1 none, 2 usage error.
    """
    from kgroup.wire.authorization import denial
    from kgroup.client.offsets_admin import delete_groups
    from kgroup.client.rights import predicted
    from kgroup.commands.output import render_rows
    from kgroup.client.streams_topics import (internal_topic_failures, internal_topic_lines,
                                              settle_internal_topics, streams_internal_topics)
    from kgroup.errors import KgroupError

    try:
        with cluster.connect() as client:
            # before: a streams group's topology goes with it
            found, unread = streams_internal_topics(client, groups, required=internal_topics)
            rows = delete_groups(client, groups, dry_run)
            settle_internal_topics(client, rows, found, internal_topics, dry_run)
    except KgroupError as exc:
        fail("delete", exc)
    columns = ["group", "state", "deleted", "error"]
    for row in rows:
        row["deleted"] = not dry_run and row["error"] is None
        if dry_run:  # what would happen; "deleted" stays false, as nothing was
            row["would_delete"] = row["error"] is None
    if dry_run:
        columns = ["group", "state", "would_delete", "error"] if output == "table" else columns + ["would_delete"]
    render_rows(rows, columns, output)
    for row in rows:
        if row["error"]:
            message = denial(row["error"], "Delete", row["group"])
            message = predicted(message, dry_run) if message else f"group {row['group']!r}: {row['error']}"
            click.echo(f"kgroup delete: {message}", err=True)
    for line in internal_topic_lines(rows, found, unread if internal_topics else None):
        click.echo(f"kgroup delete: {line}", err=True)
    failed = {r["group"] for r in rows if r["error"]} | {g for g in unread if internal_topics}
    exit_for_failures(len(failed) + internal_topic_failures(rows), len(rows))
