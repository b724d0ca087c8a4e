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
                   "assignment that held for 1 s, no sooner than 5 s after the removal (a consumer "
                   "still running rejoins at its next heartbeat), and print a before/after view "
                   "(members and partitions that moved) and each removed id that rejoined. "
                   "Without --wait, a warning names the ids that may rejoin.")
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
    running static consumer rejoins under the same instance id (--wait reports it as "rejoined").
    Ctrl-C during --wait still prints each id's result (JSON: the wait's error "interrupted").
    A share group (KIP-932) has no member removal in Kafka 4.4: one line says so (exit 1).

    Exit status: 0 all removed (dry run: all exist), 3 some failed (dry run: some unknown), --wait
    timed out or saw a removed id rejoin, 1 nothing done (unreachable broker, unknown group, old
    broker), 2 usage error, 130 interrupted (during --wait: after the results).
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
        report = _run(cluster, group, targets, remove_all, reason, dry_run, wait, wait_timeout, output)
    except KgroupError as exc:
        fail("remove-members", exc)
    _render(report, output)
    interrupted = report.wait_error == INTERRUPTED
    if report.wait_error and not interrupted:
        click.echo(f"kgroup remove-members: the removal was done, but {report.wait_error}", err=True)
    for r in report.results:
        if r.error:
            click.echo(f"kgroup remove-members: {r.target.label}: {r.error}", err=True)
    for r in report.rejoined:
        click.echo(f"kgroup remove-members: {r.target.label}: {REJOINED}; stop it, then remove it again", err=True)
    if interrupted:  # the results are out: now the interrupt, as every command reports it (exit 130)
        raise KeyboardInterrupt
    if report.refused:  # dry run: as the real run would end, which sends the LeaveGroup and is refused
        from kgroup.client.rights import WOULD_BE_REFUSED
        click.echo(f"kgroup remove-members: {WOULD_BE_REFUSED}{report.refused}", err=True)
        raise SystemExit(1)
    if report.failed:
        raise SystemExit(1 if report.failed == len(report.results) else 3)
    if report.wait_error or report.rejoined:
        raise SystemExit(3)


INTERRUPTED = "interrupted"
REJOINED = "rejoined: the process is still running"


def _run(cluster, group, targets, remove_all, reason, dry_run, wait, wait_timeout, output):
    from kgroup.client.removal import plan_removal, remove_members as remove

    with cluster.connect() as client:
        if dry_run:
            report = plan_removal(client, group, targets, remove_all=remove_all)
            _warn_may_rejoin(report)
            return report
        report = remove(client, group, targets, remove_all=remove_all, reason=reason)
        if reason is not None and report.leave_version is not None and report.leave_version < 5:
            click.echo(f"kgroup remove-members: warning: the broker supports LeaveGroup v{report.leave_version}; "
                       f"--reason needs v5 and was not sent", err=True)
        if not wait:
            _warn_may_rejoin(report)
            return report
        report.waited = True
        if output == "table":  # the removal is done: say so before the wait, which may be interrupted
            _render_results(report)
        if report.removed:
            _wait(client, report, wait_timeout)
        return report


def _wait(client, report, wait_timeout):
    """Wait for the group to settle after the removal, and see which removed ids came back. A
    timeout, a failure or an interrupt is the report's wait_error: the removal is done anyway."""
    from kgroup.client.removal import members_named
    from kgroup.client.waiting import WaitTimeout, wait_after_removal
    from kgroup.commands.output import WaitStatus
    from kgroup.errors import KgroupError

    removed = [r.target for r in report.results if r.error is None]
    removed_ids = {member.member_id if member else t.member_id
                   for t, member in zip(removed, members_named(report.before, removed))}
    try:
        with WaitStatus(report.group) as status:
            report.after = wait_after_removal(client, report.group, removed_ids, wait_timeout, on_poll=status,
                                              before_epoch=report.before.group_epoch)
        report.mark_rejoined(report.after)
    except WaitTimeout as exc:
        report.wait_error = str(exc)
        report.mark_rejoined(exc.last)
    except KgroupError as exc:  # the cluster failing us
        report.wait_error = str(exc)
    except KeyboardInterrupt:
        report.wait_error = INTERRUPTED


def _warn_may_rejoin(report):
    """Without --wait nobody looks whether a removed member comes back: one line saying it may."""
    from kgroup.client.removal import may_rejoin

    labels = may_rejoin(report)
    if labels:
        click.echo(f"kgroup remove-members: warning: {', '.join(labels)} "
                   f"{'is a member' if len(labels) == 1 else 'are members'} of group {report.group!r}: a consumer "
                   f"whose process still runs rejoins at once (stop it first; --wait reports a rejoin)", err=True)


def _render(report, output):
    from kgroup.commands.output import echo_json
    from kgroup.writers import CsvWriter

    if output == "json":
        echo_json(report.to_json())
        return
    if output == "csv":
        columns = RESULT_COLUMNS + (["status", "partitions", "moves"] if report.dry_run else []) + \
            (["rejoined"] if report.waited else [])
        writer = CsvWriter(columns)
        for r in report.results:
            row = r.to_json(report.dry_run, report.waited)
            row["group"] = report.group
            if report.dry_run:
                row["partitions"] = " ".join(f"{p['topic']}:{p['partition']}" for p in row["partitions"])
                row["moves"] = " ".join(f"{m['topic']}:{m['partition']}->{m['to'] or '-'}" for m in row["moves"])
            writer.write(row)
        return
    if report.dry_run:
        _render_plan(report)
    elif not report.waited:  # with --wait they were shown before the wait
        _render_results(report)
    else:
        _render_wait(report)


def _render_plan(report):
    from kgroup.writers import table

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


def _render_results(report):
    """Each id's LeaveGroup result, flushed: a wait (and a Ctrl-C during it) comes after."""
    import sys

    from kgroup.writers import table

    table([[r.target.label, "instance id" if r.target.group_instance_id is not None else "member id",
            r.error or "removed"] for r in report.results], ["ID", "GIVEN-AS", "RESULT"],
          title=f"Group {report.group}: {report.removed} removed, {report.failed} failed.")
    sys.stdout.flush()


def _render_wait(report):
    """What --wait saw: the group before and after, the partitions that moved, the ids that rejoined."""
    from kgroup.client.removal import before_after
    from kgroup.writers import table

    if report.after is not None:
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
    if report.rejoined:
        click.echo("")
        table([[r.target.label, REJOINED] for r in report.rejoined], ["ID", "RESULT"],
              title="Removed, and back in the group at once:")
