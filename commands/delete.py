"""`kgroup delete`: delete groups with DeleteGroups, each group's error reported on its own."""

import click

from kgroup.commands.options import CONTEXT_SETTINGS, cluster_options, exit_for_failures, fail, output_option


@click.command("delete", context_settings=CONTEXT_SETTINGS)
@click.argument("groups", nargs=-1, required=True)
@click.option("--dry-run", is_flag=True,
              help="Delete nothing: describe each group and report whether it would be deleted "
                   "(WOULD-DELETE; JSON and CSV: would_delete) or the error Kafka would give "
                   "(NON_EMPTY_GROUP while it has members, GROUP_ID_NOT_FOUND).")
@cluster_options
@output_option(["table", "json", "csv"])
def delete(groups, dry_run, cluster, output):
    """Delete GROUP... and their committed offsets (DeleteGroups, one request per coordinator).

    Kafka deletes only groups without members: a group in use answers NON_EMPTY_GROUP. Share
    groups are deleted alike (with their share-partition state).

    Exit status: 0 all deleted (dry run: all deletable), 3 some failed, 1 none, 2 usage error.
    """
    from kgroup.wire.authorization import denial
    from kgroup.client.offsets_admin import delete_groups
    from kgroup.client.rights import predicted
    from kgroup.commands.output import render_rows
    from kgroup.errors import KgroupError

    try:
        with cluster.connect() as client:
            rows = delete_groups(client, groups, dry_run)
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
    exit_for_failures(sum(1 for r in rows if r["error"]), len(rows))
