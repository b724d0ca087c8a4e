"""`kgroup remove-members`: KIP-345 removal of static members, safe to script."""

import click

from kgroup.commands.options import CONTEXT_SETTINGS, Seconds, cluster_options, fail, output_option

RESULT_COLUMNS = ["group", "group_instance_id", "member_id", "error"]


@click.command("remove-members", context_settings=CONTEXT_SETTINGS)
@click.argument("group")
@click.option("--instance-id", "instance_ids", multiple=True, metavar="ID[,ID...]",
              help="group.instance.id of a static member to remove (repeatable, comma lists allowed).")
@click.option("--from-file", "from_file", type=click.Path(dir_okay=False), metavar="FILE",
              help="Read instance ids from FILE: one per line or comma-separated; '#' starts a comment.")
@click.option("--member-id", "member_ids", multiple=True, metavar="ID[,ID...]",
              help="Member id of a member to remove, for dynamic members (repeatable, comma lists allowed).")
@click.option("--all", "remove_all", is_flag=True,
              help="Remove every current member. Never implied: an empty selection is an error.")
@click.option("--reason", default=None, metavar="TEXT",
              help="Reason sent with each member (LeaveGroup v5+, KIP-800; ignored by older brokers).")
@click.option("--dry-run", is_flag=True,
              help="Change nothing: report which ids exist (static or dynamic), which are unknown, the "
                   "partitions they own and where the group's assignor would move them.")
@click.option("--wait", "wait", is_flag=True,
              help="After removing, wait until the group is Stable at a new generation with an "
                   "assignment that held for 1 s, and print a before/after view (members and "
                   "partitions that moved).")
@click.option("--wait-timeout", type=Seconds(min=0.1), default=60.0, show_default=True,
              metavar="SECONDS", help="How long --wait waits.")
@cluster_options
@output_option(["table", "json", "csv"])
@click.pass_context
def remove_members(ctx, group, instance_ids, from_file, member_ids, remove_all, reason, dry_run, wait,
                   wait_timeout, cluster, output):
    """Remove members from GROUP with one LeaveGroup request (v3+ batch, KIP-345).

    Results are keyed by the id you gave (instance id or member id) and carry Kafka's error name
    (UNKNOWN_MEMBER_ID for an id the group does not have). Stop the consumer process first: a
    running static consumer rejoins under the same instance id.

    Exit status: 0 all removed (dry run: all exist), 3 some failed (dry run: some unknown) or
    --wait timed out, 1 nothing done (unreachable broker, unknown group, old broker), 2 usage error.
    """
    from click.core import ParameterSource

    from kgroup.client.removal import build_targets, read_id_file, split_ids
    from kgroup.errors import KgroupError

    try:
        instances = split_ids(instance_ids) + (read_id_file(from_file) if from_file else [])
        targets = build_targets(instances, split_ids(member_ids))
        if remove_all and targets:
            raise click.UsageError("--all cannot be combined with --instance-id, --from-file or --member-id")
        if not remove_all and not targets:
            raise click.UsageError("no members selected: give --instance-id, --from-file, --member-id or --all "
                                   "(an empty selection never means everyone)")
        if dry_run and wait:
            raise click.UsageError("--wait has nothing to wait for with --dry-run")
        if not wait and ctx.get_parameter_source("wait_timeout") is not ParameterSource.DEFAULT:
            # a runbook that meant to wait must not go on before the group has settled
            raise click.UsageError("--wait-timeout needs --wait")
        report = _run(cluster, group, targets, remove_all, reason, dry_run, wait, wait_timeout)
    except KgroupError as exc:
        fail("remove-members", exc)
    _render(report, output)
    wait_error = report.wait_error
    if wait_error:
        click.echo(f"kgroup remove-members: the removal was done, but {wait_error}", err=True)
    if report.failed:
        for r in report.results:
            if r.error:
                click.echo(f"kgroup remove-members: {r.target.label}: {r.error}", err=True)
        raise SystemExit(1 if report.failed == len(report.results) else 3)
    if wait_error:
        raise SystemExit(3)


def _run(cluster, group, targets, remove_all, reason, dry_run, wait, wait_timeout):
    from kgroup.client.removal import plan_removal, remove_members as remove
    from kgroup.client.waiting import wait_after_removal
    from kgroup.commands.output import WaitStatus
    from kgroup.errors import KgroupError

    with cluster.connect() as client:
        if dry_run:
            return plan_removal(client, group, targets, remove_all=remove_all)
        report = remove(client, group, targets, remove_all=remove_all, reason=reason)
        if reason is not None and report.leave_version is not None and report.leave_version < 5:
            click.echo(f"kgroup remove-members: warning: the broker supports LeaveGroup v{report.leave_version}; "
                       f"--reason needs v5 and was not sent", err=True)
        if wait and report.removed:
            by_instance = report.before.member_by_instance()
            removed_ids = set()
            for r in report.results:
                if r.error is None:
                    t = r.target
                    member = by_instance.get(t.group_instance_id) if t.group_instance_id is not None else None
                    removed_ids.add(member.member_id if member else t.member_id)
            with WaitStatus(group) as status:
                try:
                    report.after = wait_after_removal(client, group, removed_ids, wait_timeout,
                                                      on_poll=status, before_epoch=report.before.group_epoch)
                except KgroupError as exc:  # a timeout, or the cluster failing us: the removal is done anyway
                    report.wait_error = str(exc)
        return report


def _render(report, output):
    from kgroup.commands.output import echo_json
    from kgroup.writers import CsvWriter, table

    if output == "json":
        echo_json(report.to_json())
        return
    if output == "csv":
        writer = CsvWriter(RESULT_COLUMNS + (["status", "partitions", "moves"] if report.dry_run else []))
        for r in report.results:
            row = r.to_json(report.dry_run)
            row["group"] = report.group
            if report.dry_run:
                row["partitions"] = " ".join(f"{p['topic']}:{p['partition']}" for p in row["partitions"])
                row["moves"] = " ".join(f"{m['topic']}:{m['partition']}->{m['to'] or '-'}" for m in row["moves"])
            writer.write(row)
        return
    if report.dry_run:
        rows = [[r.target.label, "instance id" if r.target.group_instance_id is not None else "member id",
                 r.status, " ".join(f"{t}:{p}" for t, p in r.partitions) or "-",
                 " ".join(f"{t}:{p}->{new or '-'}" for t, p, new in r.moves) or "-"] for r in report.results]
        table(rows, ["ID", "GIVEN-AS", "STATUS", "OWNS", "WOULD-MOVE-TO"],
              title=f"Dry run for group {report.group} (state {report.before.state}, protocol "
                    f"{report.before.protocol or '-'}); nothing was changed.")
        if report.other_moves:
            click.echo("")
            table([[t, p, old or "-", new or "-"] for t, p, old, new in report.other_moves],
                  ["TOPIC", "PARTITION", "FROM", "TO"],
                  title="The assignor would also move these partitions of members that stay:")
        if report.prediction_note:
            click.echo(report.prediction_note)
        return
    table([[r.target.label, "instance id" if r.target.group_instance_id is not None else "member id",
            r.error or "removed"] for r in report.results], ["ID", "GIVEN-AS", "RESULT"],
          title=f"Group {report.group}: {report.removed} removed, {report.failed} failed.")
    if report.after is not None:
        from kgroup.client.removal import before_after

        diff = before_after(report.before, report.after)
        click.echo("")
        table([["before", diff["before"]["state"], str(len(diff["before"]["members"])),
                " ".join(diff["before"]["members"]) or "-"],
               ["after", diff["after"]["state"], str(len(diff["after"]["members"])),
                " ".join(diff["after"]["members"]) or "-"]],
              ["", "STATE", "MEMBERS", "IDS"], title="The group rebalanced to a new generation:"
              if report.after.group_type != "consumer" else
              f"The group moved from group epoch {report.before.group_epoch} to {report.after.group_epoch}:")
        click.echo("")
        table([[m["topic"], str(m["partition"]), m["from"] or "-", m["to"] or "-"] for m in diff["partitions_moved"]],
              ["TOPIC", "PARTITION", "FROM", "TO"], title="Partitions that moved:")
