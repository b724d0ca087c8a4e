"""`kgroup delete-offsets`: drop a group's committed offsets of topics it no longer reads (OffsetDelete)."""

import click

from kgroup.commands.options import (CONTEXT_SETTINGS, cluster_options, exit_for_failures, fail, output_option,
                                     topic_selector_option)


@click.command("delete-offsets", context_settings=CONTEXT_SETTINGS)
@click.argument("group")
@topic_selector_option("Delete the offsets of this topic (every partition the group has an offset for, or "
                       "TOPIC:P,P only; repeatable).", required=True)
@click.option("--dry-run", is_flag=True,
              help="Delete nothing: report for each partition the error Kafka would give "
                   "(GROUP_SUBSCRIBED_TO_TOPIC, UNKNOWN_TOPIC_OR_PARTITION, a missing right: "
                   "\"would be refused: not authorized to ...\"), with the exit status the real run would have.")
@cluster_options
@output_option(["table", "json", "csv"])
def delete_offsets(group, topics, dry_run, cluster, output):
    """Delete GROUP's committed offsets of the given topics with one OffsetDelete request.

    Kafka refuses a partition of a topic a member is still subscribed to
    (GROUP_SUBSCRIBED_TO_TOPIC): each partition is reported with its own error.

    A share group's (KIP-932) start offsets are deleted per topic (DeleteShareGroupOffsets), only
    while it is Empty.

    Exit status: 0 all deleted (dry run: all would be), 3 some partitions failed, 1 nothing
    deleted, 2 usage error.
    """
    from kgroup.wire.authorization import partition_failure_lines
    from kgroup.client.offset_delete_plan import plan_offset_delete
    from kgroup.client.offsets_admin import delete_offsets as delete
    from kgroup.client.rights import predicted
    from kgroup.commands.output import render_rows
    from kgroup.errors import KgroupError

    try:
        from kgroup.client.share_offsets import delete_share_offsets, is_share_group

        with cluster.connect() as client:
            if is_share_group(client, group):    # per topic, DeleteShareGroupOffsets
                rows = delete_share_offsets(client, group, topics, dry_run)
            else:
                rows = (plan_offset_delete if dry_run else delete)(client, group, topics)
    except KgroupError as exc:
        fail("delete-offsets", exc)
    render_rows(rows, ["topic", "partition", "error"], output)
    failures = [(r["topic"] if r["partition"] is None else f"{r['topic']}:{r['partition']}", r["error"],
                 r["topic"], "Read") for r in rows]  # OffsetDelete: Read on each topic
    for line in partition_failure_lines(failures, group):
        click.echo(f"kgroup delete-offsets: {predicted(line, dry_run)}", err=True)
    exit_for_failures(sum(1 for r in rows if r["error"]), len(rows))

