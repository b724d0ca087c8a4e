"""`kgroup list`: the groups every broker knows, with state and type."""

import click

from kgroup.commands.options import (CONTEXT_SETTINGS, DumpWarnings, GroupState, cluster_options, fail,
                                     output_option, refuse_cluster_with_dump)

COLUMNS = ["group", "state", "protocol_type", "type", "coordinator"]


@click.command("list", context_settings=CONTEXT_SETTINGS)
@cluster_options
@click.option("--state", "states", multiple=True, metavar="STATE", type=GroupState(),
              help="Only groups in this state (Stable, PreparingRebalance, CompletingRebalance, Empty, "
                   "Dead, Assigning, Reconciling, NotReady; repeatable, case-insensitive).")
@click.option("--type", "types", multiple=True, metavar="TYPE",
              help="Only groups of this type (classic, consumer, share, streams; connect: kgroup serve's "
                   "Connect worker groups; repeatable). Before ListGroups v5 the types are learnt by "
                   "describing the groups.")
@click.option("--from-dump", "dumps", multiple=True, type=click.Path(exists=False), metavar="PATH",
              help="List offline from __consumer_offsets (and __worker_offsets: Connect worker groups, "
                   "type connect) segment files, partition directories or a log directory (repeatable); "
                   "share and streams groups included.")
@output_option(["table", "json", "csv"])
def list_command(cluster, states, types, dumps, output):
    """List the groups (every type) on every broker of the cluster (or in a dump, with --from-dump).

    Exit status: 0 ok (also when no group matches), 1 broker unreachable or a request failed,
    3 --from-dump found problems in the dump (warnings) and listed the rest.
    """
    from kgroup.client.groups import GROUP_TYPES, list_groups
    from kgroup.commands.output import echo_json
    from kgroup.writers import CsvWriter, table
    from kgroup.errors import KgroupError

    refuse_cluster_with_dump(dumps)
    for t in types:
        if t.lower() not in GROUP_TYPES:
            raise click.BadParameter(f"{t!r}; choose from {', '.join(GROUP_TYPES)}", param_hint="--type")
    warnings = DumpWarnings("list")
    try:
        if dumps:
            groups = _offline(dumps, states, types, warnings)
        else:
            with cluster.connect() as client:
                groups = list_groups(client, states, types)
    except KgroupError as exc:
        fail("list", exc)
    rows = [g.to_json() for g in groups]
    if output == "json":
        echo_json(rows)
    elif output == "csv":
        writer = CsvWriter(COLUMNS)
        for g in groups:
            writer.write({"group": g.group, "state": g.state, "protocol_type": g.protocol_type,
                          "type": g.group_type,
                          "coordinator": str(g.coordinator) if g.coordinator else ""})   # as describe's
    else:
        table([[g.group, g.state, g.protocol_type, g.group_type, str(g.coordinator or "(offline)")] for g in groups],
              ["GROUP", "STATE", "PROTOCOL-TYPE", "TYPE", "COORDINATOR"])
    warnings.exit_if_any()


def _offline(dumps, states, types, warnings):
    from kgroup.client.from_dump import listed_groups, replay_dump

    return listed_groups(replay_dump(dumps, report=warnings), states, types)
