"""`kgroup wait`: block until a group reaches a state, for runbooks."""

import click

from kgroup.commands.options import CONTEXT_SETTINGS, GroupState, Seconds, cluster_options, fail, output_option


@click.command("wait", context_settings=CONTEXT_SETTINGS)
@click.argument("group")
@click.option("--state", "state", type=GroupState(), default="Stable", metavar="STATE",
              show_default=True, help="State to wait for: Stable, Empty, PreparingRebalance, CompletingRebalance "
                   "(classic groups), Assigning, Reconciling (consumer and streams groups), NotReady (streams "
                   "groups) or Dead (which also matches a group that does not exist); a share group is Empty, "
                   "Stable or Dead.")
@click.option("--caught-up", is_flag=True,
              help="Wait until the group is Stable and every member's epoch equals the group epoch with its "
                   "target assignment owned (a consumer group has converged; a share group: every member at the "
                   "group epoch; for a classic group: Stable).")
@click.option("--interval", type=Seconds(min=0.05), default=0.5, show_default=True, metavar="SECONDS",
              help="Time between describe polls.")
@cluster_options
@output_option(["table", "json"])
@click.pass_context
def wait(ctx, group, state, caught_up, interval, cluster, output):
    """Poll GROUP until it is in STATE (or caught up); prints the state and member counts reached.

    --timeout bounds the whole wait (and each request in it); requests that get no answer (the
    coordinator restarting) are retried until then.

    Exit status: 0 state reached, 1 timed out or the broker could not be asked, 2 usage error.
    """
    from click.core import ParameterSource

    from kgroup.client.waiting import wait_caught_up, wait_for_state
    from kgroup.commands.output import WaitStatus, echo_json
    from kgroup.errors import KgroupError

    if caught_up and ctx.get_parameter_source("state") is not ParameterSource.DEFAULT and state.lower() != "stable":
        raise click.UsageError("--caught-up waits for Stable: it excludes --state " + state)
    try:
        with cluster.connect(refused_at_once=False) as client, WaitStatus(group) as status:  # the line is gone after
            if caught_up:
                view = wait_caught_up(client, group, cluster.timeout, interval_s=interval, on_poll=status)
            else:
                view = wait_for_state(client, group, state, cluster.timeout, interval_s=interval,
                                      on_poll=status)
    except KgroupError as exc:
        fail("wait", exc)
    reached = view.state if state != "Dead" else "Dead"
    consumer = view.group_type in ("consumer", "share") and reached != "Dead"   # groups with epochs
    if output == "json":
        data = {"group": group, "state": reached, "members": len(view.members),
                "static": view.static_count, "dynamic": view.dynamic_count}
        if consumer:
            data.update(type=view.group_type, group_epoch=view.group_epoch, caught_up=view.caught_up)
        echo_json(data)
    else:
        epoch = ""
        if consumer:
            epoch = f" at group epoch {view.group_epoch}" + (", all caught up" if view.caught_up else "")
        click.echo(f"group {group} is {reached}{epoch} with {len(view.members)} member(s) "
                   f"({view.static_count} static, {view.dynamic_count} dynamic)")
