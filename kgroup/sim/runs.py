"""`kgroup simulate --runs N`: one scenario played N times with seeds seed .. seed+N-1, its figures
summarised as a spread.

One run answers "what does this roll cost with these heartbeat phases and these restart times"; a
planner asks how *likely* a cost is. Restart spreads (``restart_spread``) and heartbeat phases both
come from the seed, so N seeds are N draws of the same operation, and the answer is a count
(``runs_rebalanced``: runs with at least one rebalance) and each figure's min / p50 / p90 / max /
mean.

The figures are whatever numeric top-level fields ``SimResult.document()`` has (``rebalances``,
``handoffs``, ``unowned_partition_seconds``, ...), and its ``restore`` part's, less the parameters a run
echoes (``ECHOES``): a figure added there is summarised here without a change. A figure null in some runs (``time_to_stable_ms`` of a run that did not settle) is
summarised over the runs that have a number, and says how many did (``runs``); one null in every run
(a classic group's ``group_epoch_start``) is left out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable

from .model import SimParams
from .restart_spread import Restart

KEPT = ("errors", "never_rejoined")   # the lists a per-run summary keeps beside its scalars
# Numbers a run echoes from its parameters (the same in every run), and partitions_moved (the earlier
# name of partitions_ever_moved): not figures.
ECHOES = frozenset({"members_start", "partitions", "concurrency", "generation_start", "group_epoch_start",
                    "safe_restart_ms", "partitions_moved"})


def _figures_of(document: dict) -> dict:
    """A run's numeric figures: its top-level numbers and those of its ``restore`` part (as
    ``restore_bytes`` ...), less the echoes of its parameters."""
    out = {k: v for k, v in document.items() if is_number(v) and k not in ECHOES}
    for k, v in (document.get("restore") or {}).items():
        if is_number(v) and k not in ("bytes_per_partition", "rate_bytes_per_s"):
            out[f"restore_{k}"] = v
    return out


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass
class RunSet:
    """N runs of one scenario (one ``--compare`` variant), each kept as a summary without events."""
    scenario: str
    restart_ms: Restart
    seeds: list = field(default_factory=list)
    documents: list = field(default_factory=list)    # document(events=False) of each run, in seed order

    @property
    def runs(self) -> int:
        return len(self.documents)

    @property
    def runs_rebalanced(self) -> int:
        return sum(1 for d in self.documents if (d.get("rebalances") or 0) >= 1)

    def lost(self) -> list[tuple[int, dict]]:
        """(seed, never_rejoined entry) for every member a run lost."""
        return [(seed, m) for seed, d in zip(self.seeds, self.documents) for m in d.get("never_rejoined", [])]

    def unsettled_seeds(self) -> list[int]:
        return [seed for seed, d in zip(self.seeds, self.documents) if d.get("settled") is False]

    def figure_names(self) -> list[str]:
        """Numeric top-level fields, ``rebalances`` first, then in the document's order."""
        names: list[str] = []
        for d in self.documents:
            names += [k for k in _figures_of(d) if k not in names]
        return sorted(names, key=lambda k: k != "rebalances")

    def figures(self) -> dict:
        figures = [_figures_of(d) for d in self.documents]
        return {name: spread([f.get(name) for f in figures]) for name in self.figure_names()}

    def per_run(self) -> list[dict]:
        """Each run's scalars (numbers, flags, nulls) and its errors and lost members: no events,
        no per-step breakdown."""
        out = []
        for seed, d in zip(self.seeds, self.documents):
            summary = {"seed": seed}
            summary.update((k, v) for k, v in d.items()
                           if k in KEPT or v is None or isinstance(v, (int, float, bool)))
            out.append(summary)
        return out

    def document(self) -> dict:
        """``{<the runs' shared text fields: scenario, protocol, membership, assignor>, "restart_ms",
        "runs", "seeds", "runs_rebalanced", "runs_settled", "runs_never_rejoined", "figures":
        {NAME: {"min", "p50", "p90", "max", "mean", "runs"}}, "per_run": [...]}``."""
        first = self.documents[0] if self.documents else {}
        out = {k: v for k, v in first.items() if isinstance(v, str)}
        out.update({
            "restart_ms": str(self.restart_ms),
            "runs": self.runs, "seeds": list(self.seeds),
            "runs_rebalanced": self.runs_rebalanced,
            "runs_settled": sum(1 for d in self.documents if d.get("settled")),
            "runs_never_rejoined": sum(1 for d in self.documents if d.get("never_rejoined")),
            "figures": self.figures(),
            "per_run": self.per_run()})
        return out


def spread(values: list) -> dict:
    """min, nearest-rank p50 and p90 (a value some run had), max and mean of the numbers among
    ``values``; ``runs``: how many runs had one."""
    numbers = sorted(v for v in values if is_number(v))
    if not numbers:
        return {"min": None, "p50": None, "p90": None, "max": None, "mean": None, "runs": 0}
    return {"min": numbers[0], "p50": nearest_rank(numbers, 50), "p90": nearest_rank(numbers, 90),
            "max": numbers[-1], "mean": round(sum(numbers) / len(numbers), 3), "runs": len(numbers)}


def nearest_rank(ordered: list, percent: float):
    """The smallest value with at least ``percent``% of the values at or below it."""
    return ordered[max(math.ceil(percent / 100 * len(ordered)), 1) - 1]


def run_many(scenario: str, params: SimParams, runs: int,
             on_run: Callable[[int, int], None] | None = None, on_progress=None) -> RunSet:
    """Play ``scenario`` ``runs`` times, seeds params.seed .. params.seed+runs-1. ``on_run(i, seed)``
    is called before each (a progress line; the seed a ScenarioError came from), ``on_progress``
    within each as ``run_scenario`` calls it (its phases: the progress line's estimate)."""
    from .scenarios import run_scenario

    result = RunSet(scenario, params.restart_ms)
    for i in range(runs):
        seed = params.seed + i
        if on_run is not None:
            on_run(i, seed)
        document = run_scenario(scenario, replace(params, seed=seed),
                                on_progress=on_progress).document(events=False)
        result.seeds.append(seed)
        result.documents.append(document)
    return result
