"""`kgroup simulate ... --runs N` and `--restart-ms` spreads: the option's type, the repeated runs
(``kgroup.sim.runs``) and their table or JSON."""

from __future__ import annotations

import click

from kgroup.commands.options import fail
from kgroup.commands._simulate.report import RESTORE_ROWS, ROWS, warn_never_rejoined


class RestartMs(click.ParamType):
    """`--restart-ms`: MS, MIN..MAX (uniform) or pLEVEL=MS,pLEVEL=MS (log-normal); a bad one is one
    usage line (exit 2)."""

    name = "restart-ms"

    def convert(self, value, param, ctx):
        from kgroup.sim.restart_spread import RestartSpreadError, parse_restart

        if not isinstance(value, str):
            return value                  # the default, or a value already parsed
        try:
            return parse_restart(value)
        except RestartSpreadError as exc:
            self.fail(str(exc), param, ctx)


def simulate_runs(scenario: str, param_sets: list, compare, runs: int, output: str, *,
                  show_events: bool, plot_path) -> None:
    """Play every variant ``runs`` times and print the spread of its figures; exit 3 when any run lost
    a member (a warning line each), as one run does."""
    from kgroup.errors import KgroupUsageError
    from kgroup.sim.model import ParameterError, ScenarioError
    from kgroup.sim.runs import run_many
    from kgroup.writers import RunsProgress

    for given, flag in ((show_events, "--events"), (plot_path, "--plot")):
        if given:
            fail("simulate", KgroupUsageError(f"{flag} shows one run: it does not apply with --runs "
                                              "(use --seed S without --runs for that run)"))
    sets, seed = [], None
    # one line for every run of every variant: its estimate of the time left is over all of them
    with RunsProgress(f"simulate {scenario}", runs * len(param_sets)) as status:
        def progress(i, run_seed, name=""):
            nonlocal seed
            seed = run_seed
            status.run(len(sets) * runs + i, f"{name} (seed {run_seed})")
        try:
            for params in param_sets:
                name = f" ({_variant(params, compare)})" if compare else ""
                sets.append(run_many(scenario, params, runs,
                                     on_run=lambda i, s, name=name: progress(i, s, name),
                                     on_progress=status.update))
        except ParameterError as exc:
            status.clear()
            raise click.UsageError(str(exc)) from exc
        except ScenarioError as exc:
            status.clear()
            fail("simulate", f"{scenario} (seed {seed}): {exc}")
    labels = [_variant(p, compare) for p in param_sets]
    if output == "json":
        from kgroup.commands.output import echo_json
        documents = [s.document() for s in sets]
        echo_json(documents if compare else documents[0])
    else:
        _print_tables(sets, labels, compare)
    _exit_if_members_lost(sets, labels, compare)


def _variant(params, compare) -> str:
    from kgroup.sim.model import params_label

    return params_label(params, compare)


def _figure_label(name: str) -> str:
    labels = {key: label for label, key in ROWS if key}
    labels.update({f"restore_{key}": label for label, key, _ in RESTORE_ROWS})
    labels["least_session_left_ms"] = "least session left (ms)"
    return labels.get(name, name.replace("_", " "))


def _cell(value) -> str:
    return "-" if value is None else str(value)


def _print_tables(sets, labels, compare) -> None:
    from kgroup.sim.restart_spread import describe
    from kgroup.writers import table

    for n, (runs, label) in enumerate(zip(sets, labels)):
        if n:
            click.echo("")
        variant = f" ({label})" if compare else ""
        seeds = f"seed {runs.seeds[0]}" if runs.runs == 1 else f"seeds {runs.seeds[0]}..{runs.seeds[-1]}"
        click.echo(f"{runs.scenario}{variant}: {runs.runs} runs ({seeds}), restart {describe(runs.restart_ms)}")
        share = round(100 * runs.runs_rebalanced / runs.runs) if runs.runs else 0
        click.echo(f"runs rebalanced: {runs.runs_rebalanced} of {runs.runs} ({share}%)")
        lost = len({seed for seed, _ in runs.lost()})
        if lost:
            click.echo(f"runs with a member that never rejoined: {lost} of {runs.runs}")
        rows = []
        for name, figure in runs.figures().items():
            label_text = _figure_label(name)
            if figure["runs"] < runs.runs:
                label_text += f" ({figure['runs']} of {runs.runs} runs)"
            rows.append([label_text] + [_cell(figure[k]) for k in ("min", "p50", "p90", "max", "mean")])
        table(rows, headers=["figure", "min", "p50", "p90", "max", "mean"])
        prefix = f"{label}: " if compare else ""
        for seed, document in zip(runs.seeds, runs.documents):
            for error in document.get("errors", []):
                click.echo(f"{prefix}seed {seed}: {error}", err=True)
        unsettled = runs.unsettled_seeds()
        if unsettled:
            click.echo(f"{prefix}{len(unsettled)} of {runs.runs} runs did not settle within the time cap "
                       f"(seeds {', '.join(map(str, unsettled))})", err=True)


def _exit_if_members_lost(sets, labels, compare) -> None:
    """A run whose member never came back makes the whole set partial (its seed named)."""
    warn_never_rejoined([((f"{label}: " if compare else "") + f"seed {seed}: ", m)
                         for runs, label in zip(sets, labels) for seed, m in runs.lost()])
