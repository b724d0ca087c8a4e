"""`kgroup wait`: block until a group reaches a state, for runbooks."""

import click

from kgroup.commands.options import CONTEXT_SETTINGS, cluster_options, fail, output_option

STATES = ["Stable", "Empty", "PreparingRebalance", "CompletingRebalance", "Dead"]


@click.command("wait", context_settings=CONTEXT_SETTINGS)
@click.argument("group")
@click.option("--state", "state", type=click.Choice(STATES, case_sensitive=False), default="Stable", metavar="STATE",
              show_default=True, help="State to wait for: Stable, Empty, PreparingRebalance, CompletingRebalance or Dead "
                   "(which also matches a group that does not exist).")
@click.option("--interval", type=click.FloatRange(min=0.05), default=0.5, show_default=True, metavar="SECONDS",
              help="Time between DescribeGroups polls.")
@cluster_options
@output_option(["table", "json"])
def wait(group, state, interval, cluster, output):
    """Poll GROUP until it is in STATE; prints the state and member counts reached.

    --timeout bounds the whole wait (and each request in it); requests that get no answer (the
    coordinator restarting) are retried until then.

    Exit status: 0 state reached, 1 timed out or the broker could not be asked.
    """
    from kgroup.client.waiting import wait_for_state
    from kgroup.commands.output import WaitStatus, echo_json
    from kgroup.errors import KgroupError

    state = next(s for s in STATES if s.lower() == state.lower())
    try:
        with cluster.connect() as client, WaitStatus(group) as status:  # the line is gone after
            view = wait_for_state(client, group, state, cluster.timeout, interval_s=interval,
                                  on_poll=status)
    except KgroupError as exc:
        fail("wait", exc)
    reached = view.state if state != "Dead" else "Dead"
    if output == "json":
        echo_json({"group": group, "state": reached, "members": len(view.members),
                   "static": view.static_count, "dynamic": view.dynamic_count})
    else:
        click.echo(f"group {group} is {reached} with {len(view.members)} member(s) "
                   f"({view.static_count} static, {view.dynamic_count} dynamic)")
