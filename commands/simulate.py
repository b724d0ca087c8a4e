"""`kgroup simulate`: predict rebalances of an operation on the embedded coordinator."""

from __future__ import annotations

import click

from kgroup.commands.options import CONTEXT_SETTINGS, fail, output_option, plot_errors
from kgroup.commands.simulate_report import RESTORE_ROWS, ROWS, warn_never_rejoined
from kgroup.commands.simulate_runs import RestartMs

from kgroup.sim.model import ASSIGNORS, MIGRATION_POLICIES, ORDERS, SCENARIOS, SERVER_ASSIGNORS


def _name_and_partitions(value: str) -> tuple[str, int]:
    from kgroup.topic_names import TopicError, validate_topic_name

    name, sep, count = value.rpartition(":")
    if not sep or not name or not count.isdigit() or int(count) < 1:
        raise click.BadParameter(f"{value!r}: expected NAME:PARTITIONS with PARTITIONS >= 1")
    try:
        validate_topic_name(name)       # Kafka's rule: a broker would refuse to create it
    except TopicError as exc:
        raise click.BadParameter(f"{value!r}: {exc}") from None
    return name, int(count)


def _topic(ctx, param, values):
    topics = {}
    for value in values:
        name, count = _name_and_partitions(value)
        if name in topics:
            raise click.BadParameter(f"topic {name!r} given twice")
        topics[name] = count
    return tuple(sorted(topics.items())) or (("t", 9),)


def _added_topic(ctx, param, value):
    return None if value is None else _name_and_partitions(value)


def _size(ctx, param, value):
    from kgroup.sizes import parse_size

    if value is None:
        return None
    try:
        return parse_size(value.removesuffix("/s"))
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _comparison(ctx, param, value):
    from kgroup.sim.model import ParameterError, comparison

    if value is not None:
        try:
            comparison(value)
        except ParameterError as exc:
            raise click.BadParameter(str(exc)) from None
    return value


def _positive(ctx, param, value):
    if value is not None and value < 1:
        raise click.BadParameter(f"must be at least 1 (got {value})")
    return value


class SimulateCommand(click.Command):
    """`simulate SCENARIO` for consumer groups; `simulate connect CASE` hands over to Connect's command,
    whose options are its own."""

    def make_context(self, info_name, args, parent=None, **extra):
        if args and args[0] == "connect":
            from kgroup.commands.simulate_connect import simulate_connect
            return simulate_connect.make_context(f"{info_name} connect", args[1:], parent=parent, **extra)
        return super().make_context(info_name, args, parent=parent, **extra)


@click.command("simulate", cls=SimulateCommand, context_settings=CONTEXT_SETTINGS)
@click.argument("scenario", type=click.Choice(SCENARIOS), metavar="SCENARIO")
@output_option(["table", "json"])
@click.option("--members", type=int, default=3, show_default=True, callback=_positive,
              help="Consumers in the group before the scenario.")
@click.option("--topic", "topics", multiple=True, metavar="NAME:PARTITIONS", callback=_topic,
              help="A subscribed topic (repeatable; default t:9).")
@click.option("--membership", type=click.Choice(["static", "dynamic"]), default="static",
              show_default=True, help="group.instance.id set (static) or not (dynamic).")
@click.option("--protocol", type=click.Choice(["classic", "consumer"]), default="classic",
              show_default=True, help="group.protocol of every consumer: the classic group protocol, "
                                      "or KIP-848's consumer protocol (server-side assignment); "
                                      "upgrade-protocol and downgrade-protocol set it themselves.")
@click.option("--assignor", type=click.Choice(list(ASSIGNORS)), default="range", show_default=True,
              help="partition.assignment.strategy of every classic consumer.")
@click.option("--server-assignor", type=click.Choice(SERVER_ASSIGNORS), default="uniform",
              show_default=True, help="group.remote.assignor of every consumer-protocol consumer.")
@click.option("--migration-policy", type=click.Choice(MIGRATION_POLICIES), default="bidirectional",
              show_default=True, help="upgrade-protocol, downgrade-protocol: the coordinator's "
                                      "group.consumer.migration.policy (which online conversions it allows).")
@click.option("--add-topic", metavar="NAME:PARTITIONS", callback=_added_topic, default=None,
              help="upgrade-protocol, downgrade-protocol: the restarted processes come back "
                   "subscribed to this topic too (a subscription change during the roll).")
@click.option("--topic-regex", metavar="REGEX", default=None,
              help="upgrade-protocol, downgrade-protocol: the consumer-protocol processes subscribe "
                   "by this regex (SubscribedTopicRegex; it must match every --topic), the classic "
                   "ones by topic names.")
@click.option("--restart-ms", type=RestartMs(), default=10_000, show_default=True,
              metavar="MS|MIN..MAX|pN=MS,pM=MS",
              help="How long a restarted (or crashed) process stays down: MS, or a spread each "
                   "restart draws from (seeded by --seed): MIN..MAX (uniform, both included) or two "
                   "percentiles, e.g. p50=30000,p99=60000 (log-normal through them).")
@click.option("--session-timeout-ms", type=int, default=45_000, show_default=True,
              callback=_positive, help="session.timeout.ms of the classic consumers (within the "
                                       "broker's group.min/max.session.timeout.ms); for consumer-protocol "
                                       "members it sets the broker's group.consumer.session.timeout.ms "
                                       "(checked against its min/max) unless --config sets that.")
@click.option("--rebalance-timeout-ms", type=int, default=300_000, show_default=True,
              callback=_positive, help="max.poll.interval.ms of the consumers (the rebalance timeout).")
@click.option("--heartbeat-interval-ms", type=int, default=3_000,
              callback=_positive, help="heartbeat.interval.ms of the classic consumers (default 3000, the "
                                       "Java client's); for consumer-protocol members it sets the broker's "
                                       "group.consumer.heartbeat.interval.ms (default 5000; checked against "
                                       "its min/max) unless --config sets that.")
@click.option("--initial-rebalance-delay-ms", type=click.IntRange(min=0), default=3_000,
              show_default=True, help="group.initial.rebalance.delay.ms of the coordinator.")
@click.option("--config", "configs", multiple=True, metavar="KEY=VALUE",
              help="A group.* setting of the simulated broker, as `kgroup serve --config` takes it "
                   "(Kafka's names, defaults and bounds; repeatable; an unknown key or bad value "
                   "exits 2), e.g. group.consumer.heartbeat.interval.ms=10000.")
@click.option("--order", type=click.Choice(ORDERS), default="name", show_default=True,
              help="Bounce order (rolling-bounce, upgrade, downgrade, upgrade-protocol, "
                   "downgrade-protocol; also which members "
                   "scale-down removes (the last ones), crash kills (the first ones) and leader-bounce "
                   "restarts in a consumer group, which has no leader (the first one)).")
@click.option("--concurrency", type=int, default=1, show_default=True, callback=_positive,
              help="Members restarted at once; the next wave starts when the previous one is "
                   "back and the group has settled.")
@click.option("--count", type=int, default=1, show_default=True, callback=_positive,
              help="Members removed (scale-down), added (scale-up) or crashed (crash).")
@click.option("--remove-members", is_flag=True,
              help="scale-down: remove the stopped static members at once with an admin "
                   "LeaveGroup instead of waiting for their session timeout.")
@click.option("--sort-by", type=click.Choice(["instance-id", "member-id"]), default="instance-id",
              show_default=True, help="Member order the assignor uses (KIP-345: instance id first).")
@click.option("--compare", default=None, callback=_comparison,
              metavar="membership|assignor|removal|protocol|concurrency[=N,N...]",
              help="Run the variants side by side: static vs dynamic, every assignor (every "
                   "server-side one with --protocol consumer), (scale-down) waiting vs "
                   "--remove-members, classic (with --assignor) vs consumer protocol, or "
                   "--concurrency settings (default 1,5,10,50; the table marks the fastest with "
                   "no rebalance).")
@click.option("--state-bytes-per-partition", callback=_size, default=None, metavar="SIZE",
              help="The state each partition holds (e.g. 2g): every hand-off makes the new owner "
                   "restore it, which the restore figures report (with --restore-rate).")
@click.option("--restore-rate", callback=_size, default=None, metavar="SIZE/s",
              help="Bytes per second one process restores (e.g. 100m/s); its partitions are restored "
                   "one after another, and count as restoring (owned but not serving) until done.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seeds heartbeat phases, the random bounce order and --restart-ms draws.")
@click.option("--runs", type=int, default=None, callback=_positive, metavar="N",
              help="Play the scenario N times, seeds --seed .. --seed+N-1, and report how many runs "
                   "rebalanced and each figure's min, p50, p90, max and mean.")
@click.option("--events", "show_events", is_flag=True, help="Also print the event log (table output).")
@click.option("--plot", "plot_path", default=None, metavar="FILE.png|FILE.svg",
              help="Draw the timeline, a panel per variant: up to 50 consumers a row each (bars "
                   "darker the more partitions they hold, rebalances, starts and stops); above 50 "
                   "the group as a whole (partitions without an owner, and still restoring with "
                   "--restore-rate; members down; rebalances as ticks in a lane), on one time "
                   "axis; a legend says what each series is "
                   "(needs matplotlib: pip install 'kgroup[plot]').")
@click.option("--wire-heartbeats", is_flag=True,
              help="Send every heartbeat as a HeartbeatRequest (slower; same results).")
def simulate(scenario, output, members, topics, membership, protocol, assignor, server_assignor,
             migration_policy, add_topic, topic_regex, restart_ms, session_timeout_ms,
             rebalance_timeout_ms, heartbeat_interval_ms, initial_rebalance_delay_ms, configs, order,
             concurrency, count, remove_members, sort_by, compare, state_bytes_per_partition,
             restore_rate, seed, runs, show_events, plot_path, wire_heartbeats):
    """Predict the rebalances an operation causes, on the embedded coordinator in virtual time.

    SCENARIO is one of: rolling-bounce, upgrade (dynamic to static, KIP-345's steps),
    downgrade (static to dynamic), scale-down, scale-up, leader-bounce, crash (kill
    without LeaveGroup, restart after --restart-ms), duplicate-instance (a second process
    with the same group.instance.id), upgrade-protocol (every process restarted from the
    classic to the consumer protocol: the group is mixed in between and converts online),
    downgrade-protocol (back). Connect worker groups: `kgroup simulate connect CASE`
    (see `kgroup simulate connect --help`).

    Simulated consumers speak the classic group protocol (or, with --protocol consumer,
    KIP-848's, as the Java client and librdkafka do) to kgroup's coordinator: the group
    forms first (not measured), then the scenario runs until the group settles. Reported:
    rebalances (entries into PreparingRebalance; group-epoch bumps for a consumer group),
    generations (group epochs), members at the start and at the end, partitions moved (those
    that went to another process than their owner at the start at some point, even if they
    came back), partition-seconds without an owner, the longest stop of a member, time to
    Stable (a consumer group: every member at the group epoch owning its target), and an
    event log (JSON, or --events). A member that a fatal error stopped for good (a crashed
    static consumer-protocol member restarted within its session: UNRELEASED_INSTANCE_ID)
    is named ("never rejoined"), its stop counts until the run's end, and the exit is 3.

    --runs N plays it N times (seeds --seed onward) and reports runs_rebalanced, how many of
    the N rebalanced at least once, then each figure's min / p50 / p90 / max / mean: with a
    --restart-ms spread, how likely a roll is to rebalance.
    The simulated broker runs on Kafka's group.* defaults (--config changes them); a session
    timeout it would refuse is refused before the run. The JSON document's `config` field
    prints every setting the run assumed.

    Exit codes: 0 ok, 1 the scenario cannot run (or --plot failed), 2 usage, 3 a member
    never rejoined (in any run).
    """
    from dataclasses import replace

    from kgroup.sim.model import ParameterError, ScenarioError, SimParams, variants

    ctx = click.get_current_context()
    _reject_inapplicable(ctx, scenario)
    params = SimParams(
        members=members, topics=topics, membership=membership, protocol=protocol,
        assignor=assignor, server_assignor=server_assignor,
        restart_ms=restart_ms, session_timeout_ms=session_timeout_ms,
        rebalance_timeout_ms=rebalance_timeout_ms, heartbeat_interval_ms=heartbeat_interval_ms,
        initial_rebalance_delay_ms=initial_rebalance_delay_ms, order=order,
        concurrency=concurrency, count=count, remove_members=remove_members,
        by_instance_id=sort_by == "instance-id", seed=seed, wire_heartbeats=wire_heartbeats,
        migration_policy=migration_policy, add_topic=add_topic, topic_regex=topic_regex,
        state_bytes_per_partition=state_bytes_per_partition, restore_rate=restore_rate)
    params = replace(params, broker_config=_broker_config(ctx, scenario, params))
    if runs is not None:
        from kgroup.commands.simulate_runs import simulate_runs
        try:
            param_sets = variants(scenario, params, compare)
        except ParameterError as exc:
            raise click.UsageError(str(exc)) from exc
        simulate_runs(scenario, param_sets, compare, runs, output, show_events=show_events,
                      plot_path=plot_path)
        return
    if plot_path:
        from kgroup.sim.plot import check_target
        with plot_errors("simulate"):
            check_target(plot_path)
    try:
        results = _run_variants(scenario, variants(scenario, params, compare), compare)
    except ParameterError as exc:
        raise click.UsageError(str(exc)) from exc
    except ScenarioError as exc:
        fail("simulate", f"{scenario}: {exc}")
    if plot_path:
        from kgroup.sim.plot import plot_timeline
        with plot_errors("simulate"):
            plot_timeline(results, plot_path)
    if output == "json":
        from kgroup.commands.output import echo_json
        echo_json([r.document() for r in results] if compare else results[0].document())
    else:
        _print_table(scenario, results, compare, show_events)
    _exit_if_members_lost(results, compare)


def _run_variants(scenario, param_sets, compare) -> list:
    """Each variant's run, with a status line on a terminal once a run takes more than 2 s (waves
    done and the time left: a large dynamic bounce runs for minutes)."""
    from kgroup.sim.model import params_label
    from kgroup.sim.scenarios import run_scenario
    from kgroup.writers import StepProgress

    results = []
    for params in param_sets:
        label = f"simulate {scenario}" + (f" ({params_label(params, compare)})" if compare else "")
        with StepProgress(label) as progress:
            results.append(run_scenario(scenario, params, on_progress=progress.update))
    return results


def _exit_if_members_lost(results, compare) -> None:
    warn_never_rejoined([(f"{_label(r, compare)}: " if compare else "", m)
                         for r in results for m in r.never_rejoined])


def _given(ctx) -> tuple[dict, dict]:
    """The options the user gave (name -> value), and every option's flag (name -> `--flag`)."""
    from click.core import ParameterSource

    options = [p for p in ctx.command.params if isinstance(p, click.Option)]
    given = {p.name: ctx.params[p.name] for p in options
             if ctx.get_parameter_source(p.name) in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)}
    return given, {p.name: max(p.opts, key=len) for p in options}


def _broker_config(ctx, scenario, params) -> tuple:
    """--config, and what the consumer flags given make of it (``group_config.broker_overrides``),
    once the flags are valid themselves (``params.validate``); a bad entry is one line, exit 2."""
    from kgroup.errors import KgroupError, KgroupUsageError
    from kgroup.sim.group_config import BROKER_FLAGS, CONSUMER_PROTOCOL_SETTINGS, broker_overrides
    from kgroup.sim.model import ParameterError
    from kgroup.sim.scenario_options import run_protocols

    given, flags = _given(ctx)
    typed = {flags[name]: value for name, value in given.items()
             if flags[name] in BROKER_FLAGS or flags[name] in CONSUMER_PROTOCOL_SETTINGS}
    protocols = run_protocols(scenario, ctx.params["protocol"], ctx.params["compare"])
    try:
        params.validate()
        return broker_overrides(ctx.params["configs"], typed, protocols)
    except ParameterError as exc:
        fail("simulate", KgroupUsageError(str(exc)))
    except KgroupError as exc:         # serve's refusal of a --config entry: exit 2
        fail("simulate", exc)


def _reject_inapplicable(ctx, scenario) -> None:
    """An option the user gave that the scenario does not take: one line, exit 2."""
    from kgroup.sim.scenario_options import inapplicable
    from kgroup.errors import KgroupUsageError

    given, flags = _given(ctx)
    message = inapplicable(scenario, given, flags, protocol=ctx.params["protocol"],
                           compare=ctx.params["compare"], membership=ctx.params["membership"])
    if message:
        fail("simulate", KgroupUsageError(message))


def _label(result, compare) -> str:
    from kgroup.sim.model import variant_label

    return variant_label(compare, result.membership, result.assignor, result.protocol, result.remove_members,
                         result.concurrency)


def _epochs_label(results) -> str:
    """What the epoch row counts: classic generations, consumer-group epochs, or both."""
    protocols = {r.protocol for r in results}
    if protocols == {"consumer"}:
        return "group epoch"
    return "generation" if protocols == {"classic"} else "generation / group epoch"


def _epochs(result) -> str:
    if result.migration is not None:      # generation or group epoch, whichever the group was
        def one(generation, epoch):
            return f"generation {generation}" if epoch is None else f"group epoch {epoch}"
        return (f"{one(result.generation_start, result.group_epoch_start)} -> "
                f"{one(result.generation_end, result.group_epoch_end)}")
    if result.protocol == "consumer":
        return f"{result.group_epoch_start} -> {result.group_epoch_end}"
    return f"{result.generation_start} -> {result.generation_end}"


def _migration_rows(results) -> list:
    """The mixed phase of upgrade-protocol / downgrade-protocol (a dash: it did not happen)."""
    def step(value):
        return "-" if value is None else str(value)
    migrations = [r.migration for r in results]
    return [
        ["converted at step"] + [step(m["converted_at_step"]) for m in migrations],
        ["converted back at step"] + [step(m["converted_back_at_step"]) for m in migrations],
        ["group-epoch bumps"] + [str(m["group_epoch_bumps"]) for m in migrations],
        ["classic rebalances"] + [str(m["classic_rebalances"]) for m in migrations],
        ["classic rejoins (max)"] + [str(max(m["classic_rejoins"].values(), default=0))
                                     for m in migrations],
        ["downgrade rebalanced"] + [{None: "-", True: "yes", False: "no"}[m["downgrade_rebalanced"]]
                                    for m in migrations],
    ]


def _restore_rows(results) -> list:
    from kgroup.sizes import size_text

    return [[label] + [size_text(r.restore[key]) if how == "size" else str(r.restore[key]) for r in results]
            for label, key, how in RESTORE_ROWS]


def _fastest_without_rebalance(results) -> int | None:
    """The column of the quickest settled run that rebalanced nothing (None: every one did)."""
    calm = [(r.time_to_stable_ms, i) for i, r in enumerate(results)
            if r.rebalances == 0 and r.time_to_stable_ms is not None]
    return min(calm)[1] if calm else None


def _safe_window_notes(results, compare) -> list[str]:
    """The restart window static members have: what a planner must keep every restart under. One line
    per window (variants with other timeouts differ), the least session left in each run beside it."""
    windows: dict = {}
    for r in results:
        if r.safe_restart_ms is not None:
            windows.setdefault(r.safe_restart_ms, []).append(r)
    notes = []
    for safe, runs in windows.items():
        least = ", ".join(f"{r.least_session_left_ms} ms" + (f" ({_label(r, compare)})" if compare else "")
                          for r in runs)
        notes.append(f"safe restart: static members back within {safe} ms cause no rebalance, whatever their "
                     f"heartbeat phase (session timeout minus one heartbeat interval); the least session a "
                     f"stopped member had left: {least}")
    return notes


def _stop_open(result) -> bool:
    """The longest stop is one that had not ended when the run did (a member that never rejoined)."""
    return any(result.duration_ms - m["stopped_at_ms"] == result.longest_stop_ms for m in result.never_rejoined)


def _print_table(scenario, results, compare, show_events) -> None:
    from kgroup.writers import table

    rows = []
    if compare != "protocol" and any(r.protocol != "classic" for r in results):
        rows.append(["protocol"] + [r.protocol for r in results])
    for label, key in ROWS:
        if label == "generation":
            rows.append([_epochs_label(results)] + [_epochs(r) for r in results])
        elif label == "errors":
            rows.append([label] + [str(len(r.errors)) for r in results])
        elif key == "members":
            rows.append([label] + [f"{r.members_start} -> {r.members_end}" for r in results])
        elif key == "longest_stop_ms":     # "+": a member that never came back is stopped still
            rows.append([label] + [f"{r.longest_stop_ms}{'+' if _stop_open(r) else ''}" for r in results])
        elif label == "safe restart (ms)":
            if any(r.safe_restart_ms is not None for r in results):
                rows.append([label] + ["-" if r.safe_restart_ms is None else str(r.safe_restart_ms)
                                       for r in results])
        else:
            values = (getattr(r, key) for r in results)
            rows.append([label] + ["not settled" if v is None else str(v) for v in values])
    if results[0].restore is not None:
        rows[-1:-1] = _restore_rows(results)
    if results[0].migration is not None:
        rows[-1:-1] = _migration_rows(results)
    if any(r.never_rejoined for r in results):
        rows.insert(-1, ["never rejoined"] + [", ".join(f"{m['member']} ({m['error']})" for m in r.never_rejoined)
                                              or "-" for r in results])
    headers = [_label(r, compare) for r in results]
    fastest = _fastest_without_rebalance(results) if compare and compare.startswith("concurrency") else None
    if fastest is not None:
        headers[fastest] += " *"
    table(rows, headers=[scenario] + headers)
    if compare and compare.startswith("concurrency"):
        click.echo("* the fastest setting with no rebalance" if fastest is not None
                   else "every setting rebalanced: no concurrency avoids a rebalance here")
    for note in _safe_window_notes(results, compare):
        click.echo(note)
    for r in results:
        prefix = f"{_label(r, compare)}: " if compare else ""
        for error in r.errors:
            click.echo(f"{prefix}{error}", err=True)
        if not r.settled:
            click.echo(f"{prefix}the group did not settle within the time cap", err=True)
        if r.migration is not None:
            for note in ([r.migration["blocked"]] if r.migration["blocked"] else []) + r.migration["notes"]:
                click.echo(f"{prefix}{note}", err=True)
    if show_events:
        for r in results:
            title = f"events ({_label(r, compare)})" if compare else "events"
            click.echo("")
            table([[f"{e['t_ms']}", e.get("member", ""), e["event"],
                    " ".join(f"{k}={v}" for k, v in e.items()
                             if k not in ("t_ms", "member", "event"))] for e in r.events],
                  headers=["t (ms)", "member", "event", "detail"],
                  title=title)
