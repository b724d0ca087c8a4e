"""`kgroup simulate connect CASE`: the Connect draft's case studies (and custom runs) on virtual time."""

from __future__ import annotations

import click

from kgroup.commands.options import CONTEXT_SETTINGS, fail, output_option, plot_errors
from kgroup.coordinator.config import INT_MAX
from kgroup.sim.connect.params import CASES


def _parsed(parser: str):
    """A click callback: unset stays None (the preset's value), anything else goes through
    ``kgroup.sim.connect.params.<parser>`` (imported on use, so `kgroup --help` stays fast)."""

    def callback(ctx, param, value):
        if value is None or value == ():
            return None
        from kgroup.sim.connect import params as connect_params
        try:
            return getattr(connect_params, parser)(value)
        except connect_params.UsageError as exc:
            raise click.UsageError(str(exc)) from exc

    return callback


def _ms(help_text):
    return dict(type=click.IntRange(min=1, max=INT_MAX), default=None, help=help_text)


@click.command("connect", context_settings=CONTEXT_SETTINGS)
@click.argument("case", type=click.Choice(CASES), metavar="CASE")
@output_option(["table", "json"])
@click.option("--connectors", default=None, metavar="A:2,B:1",
              callback=_parsed("parse_connectors"),
              help="Config topic at t=0: connector -> task count (default A:2,B:1).")
@click.option("--workers", default=None, metavar="W1,W2", callback=_parsed("parse_workers"),
              help="Workers that join at t=0, in this order.")
@click.option("--initial-epoch", type=click.IntRange(min=1, max=INT_MAX), default=None,
              help="Seed a settled group at this group/assignment/member epoch.")
@click.option("--initial-assignment", multiple=True, metavar="W=ITEM,ITEM",
              callback=_parsed("parse_assignment"),
              help="A seeded worker and what it runs (repeatable; W= for none).")
@click.option("--initial-assigner", default=None, metavar="W",
              help="The seeded worker that computed the seed (default: the first seeded worker).")
@click.option("--event", "events", multiple=True, metavar="MS:ACTION[:ARG...]",
              callback=_parsed("parse_events"),
              help="A timed event (repeatable; replaces the preset's events): join:W, leave:W, "
                   "crash:W, restart:W, hang:W, resume:W, add-connector:C:TASKS, remove-connector:C, "
                   "set-tasks:C:TASKS; upgrade:W, downgrade:W (migration: W restarts on the other protocol).")
@click.option("--assignor-versions", multiple=True, metavar="W=MIN-MAX",
              callback=_parsed("parse_versions"),
              help="A worker's version range for incremental-cooperative (repeatable; default 0-2).")
@click.option("--session-timeout-ms", **_ms("group.connect.session.timeout.ms (default 10000)."))
@click.option("--heartbeat-interval-ms", **_ms("group.connect.heartbeat.interval.ms (default 3000)."))
@click.option("--rebalance-timeout-ms", **_ms("The workers' rebalance.timeout.ms (default 60000)."))
@click.option("--scheduled-rebalance-max-delay-ms", type=click.IntRange(min=0, max=INT_MAX), default=None,
              help="The workers' scheduled.rebalance.max.delay.ms (default 300000).")
@click.option("--until-ms", type=click.IntRange(min=0, max=INT_MAX), default=None,
              help="Run to this virtual time even if settled (default: stop when settled).")
@click.option("--events", "show_events", is_flag=True, help="Also print every step (table output).")
@click.option("--compare", type=click.Choice(["protocol"]), default=None,
              help="Also run the same events under Connect's classic eager and incremental cooperative "
                   "protocols and compare (JSON: a compare object).")
@click.option("--plot", "plot_path", default=None, metavar="FILE.png|FILE.svg",
              help="Draw the assignment over time: a row per worker, bars darker the more items they "
                   "run, epoch bumps, in the migration case a strip of each worker's protocol (needs "
                   "matplotlib: pip install 'kgroup[plot]').")
def simulate_connect(case, output, show_events, compare, plot_path, **options):
    """Run Connect workers (ConnectGroupHeartbeat/Prepare/Install, the incremental cooperative
    assignor) against kgroup's coordinator in virtual time.

    CASE is a preset: worker-joins, worker-leaves, worker-bounce (resume variant),
    assigner-selection, connector-change, migration (classic workers rolled to the new protocol
    and back), or custom (no preset). Any option given replaces that part of the preset.

    Exit codes: 0 ok, 1 the scenario cannot run (or --plot failed), 2 usage.
    """
    from kgroup.sim.connect.simulation import run
    from kgroup.sim.connect.params import UsageError, resolve
    try:
        params = resolve(case, **options)
    except UsageError as exc:
        raise click.UsageError(str(exc)) from exc
    if compare and case == "migration":
        raise click.UsageError("--compare protocol compares one protocol's runs; the migration case mixes them")
    if compare:
        from kgroup.sim.connect.compare import run_compare as run
    if plot_path:
        from kgroup.sim.plot import check_target
        with plot_errors("simulate connect"):
            check_target(plot_path)
    try:
        document = run(params)
    except (AssertionError, ValueError, KeyError) as exc:
        fail("simulate connect", f"{case}: {exc}")
    if plot_path:
        from kgroup.sim.connect.plot import plot_connect
        with plot_errors("simulate connect"):
            plot_connect(document, plot_path, params)
    if output == "json":
        from kgroup.commands.output import echo_json
        echo_json(document)
        return
    _print_table(document, show_events)
    if compare:
        _print_compare(document["compare"])




def _items(item_set: dict) -> str:
    from kgroup.coordinator.connect.protocol import items_text
    return items_text(item_set)


def _print_table(document: dict, show_events: bool) -> None:
    from kgroup.writers import table
    final = document["final"]
    click.echo(f"{document['scenario']}: group epoch {document['group_epoch_start']} -> "
               f"{final['group_epoch']}, assignment epoch {final['assignment_epoch']}, "
               f"{document['rebalances']} rebalance(s), "
               + (f"settled at {document['settled_at_ms']} ms" if document["settled_at_ms"] is not None
                  else f"not settled (ran to {document['ended_at_ms']} ms)"))
    rows = [[w, m["member_epoch"], _items(m), _items(final["target"].get(w, {"connectors": [], "tasks": []}))]
            for w, m in final["members"].items()]
    table(rows, headers=["worker", "epoch", "runs", "target"])
    click.echo(f"unassigned: {_items(final['unassigned'])}")
    revoked = [f"{r['at_ms']} ms {r['worker']}: {_items(r)} ({r['cause']})" for r in document["revoked"]]
    click.echo("revoked: " + ("; ".join(revoked) if revoked else "-"))
    for c in document.get("conversions", ()):
        click.echo(f"converted: {c['at_ms']} ms {c['from']} -> {c['to']} at epoch {c['group_epoch']} "
                   f"({c['worker']} joined)")
    for line in _error_lines(document["errors"]):
        click.echo(line)
    if show_events:
        steps = [[s["at_ms"], s["event"], s["worker"] or "-", s["group_epoch"], s["assignment_epoch"],
                  " ".join(f"{w}({m['member_epoch']}):{_items(m)}" for w, m in s["members"].items()) or "-"]
                 for s in document["steps"]]
        table(steps, headers=["ms", "event", "worker", "group", "assignment", "members (epoch): runs"])


def _error_lines(errors: list) -> list:
    """One line per error response a simulated worker got (a result of the run, not kgroup's error); the
    same error a worker got again and again (one waiting for a migration's group to empty) as one line
    with its span and count."""
    times: dict = {}
    for e in errors:
        times.setdefault((e["worker"], e["api"], e["error"]), []).append(e["at_ms"])
    return [f"error response: {at[0]} ms {w} {api} {error}" if len(at) == 1 else
            f"error response: {at[0]}-{at[-1]} ms {w} {api} {error} (x{len(at)})" for (w, api, error), at in times.items()]


def _print_compare(compare: dict) -> None:
    from kgroup.writers import table
    click.echo(f"compare (task-seconds up to {compare['horizon_ms']} ms):")
    rows = [[label, f["rebalances"], f["tasks_stopped"], f["connectors_stopped"],
             f["task_seconds_without_worker"], "never" if f["stable_at_ms"] is None else f["stable_at_ms"]]
            for label, f in compare["protocols"].items()]
    table(rows, headers=["protocol", "rebalances", "tasks stopped", "connectors stopped",
                         "task-seconds without a worker", "stable at (ms)"])
