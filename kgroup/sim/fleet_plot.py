"""The aggregate view of `kgroup simulate --plot`, drawn: what ``fleet_series`` computes, one panel per
result (variants of --compare stacked on one time axis).

A panel is three lanes, four with restores: partitions without an owner, partitions owned but still
restoring (when the run modelled restores), members down, and rebalances as ticks in a strip of their own (a full-height line per
rebalance is a wall of red at 600 of them). Each series is one artist, however long the run: the
cost is matplotlib's import and the file written, not the members.
"""

from __future__ import annotations

import math

from . import timeline_layout as layout
from .fleet_series import AGGREGATE_ABOVE_MEMBERS, fleet_series

UNOWNED_COLOUR = "tab:red"
RESTORING_COLOUR = "tab:purple"
DOWN_COLOUR = "slategrey"
REBALANCE_COLOURS = {"classic": "crimson", "consumer": "darkorange"}
MIXED_ROW_NAMES = {"classic": "rebalances (classic)", "consumer": "epoch bumps (consumer)"}
REBALANCE_LABELS = {"classic": "rebalance begins (classic)", "consumer": "group-epoch bump (consumer)"}
PARTITIONS_IN, RESTORING_PARTITIONS_IN, DOWN_IN, LANE_IN, TITLE_IN = 1.3, 0.9, 0.6, 0.28, 0.5
FILL_ALPHA = 0.3
WIDTH_IN = 9
AXES_WIDTH_IN = 7.4      # about what is left of WIDTH_IN beside the lane names
LABEL_GAP_IN = 0.4       # lane name to axis: room for tick labels up to four digits


def fleet_figure(plt, results, title, rows_per_result):
    """One panel per result, sharing the time axis and each lane's scale (variants compare at a
    glance), a legend under them; ``title(result, rows)`` writes a panel's two-line title. Laid out
    and frozen."""
    series = [fleet_series(r) for r in results]
    lanes = [_lanes(s) for s in series]
    heights = [h for panel in lanes for _, h in panel]
    total = sum(heights) + TITLE_IN * len(results) + 1.2
    fig, axes = layout.figure(plt, WIDTH_IN, total, len(heights), sharex=True, height_ratios=heights)
    most_partitions = max((v for s in series for _, v in s.unowned + s.restoring), default=0)
    most_down = max((v for s in series for _, v in s.down), default=0)
    column = iter(axes[:, 0])
    for result, data, panel, rows in zip(results, series, lanes, rows_per_result):
        drawn = {name: next(column) for name, _ in panel}
        _counts(drawn["unowned"], data.unowned, data.end_ms, UNOWNED_COLOUR, "unowned", most_partitions,
                "partitions\nwithout an owner")
        if "restoring" in drawn:
            _counts(drawn["restoring"], data.restoring, data.end_ms, RESTORING_COLOUR, "restoring",
                    most_partitions, "partitions\nstill restoring")
        _counts(drawn["down"], data.down, data.end_ms, DOWN_COLOUR, "down", most_down, "members down")
        _rebalances(drawn["rebalances"], data)
        drawn["unowned"].set_title(title(result, rows), fontsize=9)
    end = max(max(s.end_ms for s in series), 1) / 1000
    axes[0, 0].set_xlim(-0.01 * end, 1.01 * end)           # shared: every panel
    for ax in axes[:, 0]:
        ax.grid(axis="x", alpha=0.3)
        ax.tick_params(labelsize=7)
    axes[-1, 0].set_xlabel("virtual time since the scenario started (s)", fontsize=8)
    handles = legend_handles(series)
    columns = len(handles) if len(handles) <= 3 else math.ceil(len(handles) / 2)   # 4: two by two
    fig.legend(handles=handles, loc="outside lower center", fontsize=7, frameon=False, ncol=columns,
               handlelength=1.6, columnspacing=1.4, title_fontsize=7,
               title=f"{max(rows_per_result)} consumers: the group as a whole, each series a count over "
                     f"time (a row per consumer up to {AGGREGATE_ABOVE_MEMBERS})")
    layout.freeze_layout(fig)
    return fig


def _lanes(data) -> list:
    """(lane, height in inches) of one panel, top to bottom: the restoring lane only when the run
    modelled restores (a lane of its own: drawn over the unowned one, each hid the other), the
    rebalance strip two rows tall when it holds both kinds (a protocol roll)."""
    kinds = {kind for kind, _ in data.rebalances}
    partitions = [("unowned", PARTITIONS_IN)]
    if data.restoring:
        partitions = [("unowned", RESTORING_PARTITIONS_IN), ("restoring", RESTORING_PARTITIONS_IN)]
    return partitions + [("down", DOWN_IN), ("rebalances", LANE_IN * (1.6 if len(kinds) > 1 else 1))]


def stairs(series, end_ms: int) -> tuple[list, list]:
    """A step series as ``ax.stairs`` takes it: the values, and the edges in seconds (one more: the
    last value holds to ``end_ms``, the time axis' end)."""
    values = [v for _, v in series]
    edges = [t / 1000 for t, _ in series] + [max(end_ms, series[-1][0] if series else 0) / 1000]
    return values, edges


def _step(ax, series, end_ms: int, colour: str, gid: str) -> None:
    """A step series filled down to 0, outlined. Added as an artist: ``ax.stairs`` would walk every
    step in Python to update the data limits (seconds at 80,000 steps); the lane sets its own."""
    if not series:
        return
    from matplotlib.colors import to_rgba
    from matplotlib.patches import StepPatch

    values, edges = stairs(series, end_ms)
    ax.add_artist(StepPatch(values, edges, baseline=0, fill=True, facecolor=to_rgba(colour, FILL_ALPHA),
                            edgecolor=colour, linewidth=0.8, gid=gid))


def _counts(ax, series, end_ms: int, colour: str, gid: str, most: int, name: str) -> None:
    """A lane of counts over time, on the scale every panel's lane of this kind shares (its peak in
    its name says what a flat one holds); "none" when it stayed at 0."""
    from matplotlib.ticker import MaxNLocator

    _step(ax, series, end_ms, colour, gid)
    ax.set_ylim(0, max(most, 1) * 1.15)
    ax.yaxis.set_major_locator(MaxNLocator(nbins=3, integer=True, min_n_ticks=2))
    _lane_label(ax, f"{name}\npeak {peak(series)}")
    if not peak(series):
        _none(ax)


def peak(series) -> int:
    return max((v for _, v in series), default=0)


def _none(ax) -> None:
    """A lane with nothing in it says so (an empty box reads as a drawing that failed)."""
    ax.text(0.01, 0.5, "none", transform=ax.transAxes, ha="left", va="center", fontsize=7, color="dimgrey")


def _lane_label(ax, label: str) -> None:
    """The lane's name left of its ticks, at one place in every lane (``fig.align_ylabels`` would
    measure every lane's ticks for every lane: seconds with a --compare's dozen lanes)."""
    ax.set_ylabel(label, fontsize=8, rotation=0, ha="right", va="center")
    ax.yaxis.set_label_coords(-LABEL_GAP_IN / AXES_WIDTH_IN, 0.5)


def _rebalances(ax, data) -> None:
    """A tick per rebalance in a strip; a protocol roll's strip has a row per kind, named."""
    kinds = [k for k in REBALANCE_COLOURS if any(kind == k for kind, _ in data.rebalances)]
    rows = {kind: i for i, kind in enumerate(reversed(kinds))}
    width_pt = WIDTH_IN * 72 * 0.8
    linewidth = max(0.4, min(1.0, 0.3 * width_pt / max(len(data.rebalances), 1)))
    for kind in kinds:
        times = [t / 1000 for k, t in data.rebalances if k == kind]
        y = rows[kind]
        ax.vlines(times, y + 0.15, y + 0.85, colors=REBALANCE_COLOURS[kind], linewidth=linewidth, gid=kind)
    ax.set_ylim(0, max(len(kinds), 1))
    if not kinds:
        _none(ax)
    if len(kinds) > 1:            # each row named instead of the lane
        ax.set_yticks([rows[k] + 0.5 for k in kinds], [MIXED_ROW_NAMES[k] for k in kinds], fontsize=7)
    else:
        ax.set_yticks([])
        _lane_label(ax, "rebalances")


def legend_handles(series) -> list:
    """What each series is, as legend entries (only those drawn)."""
    from matplotlib.colors import to_rgba
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    def patch(colour, label):
        return Patch(facecolor=to_rgba(colour, FILL_ALPHA), edgecolor=colour, linewidth=0.8, label=label)

    partitions = sorted({s.partitions for s in series})
    of = f" (of {partitions[0]})" if len(partitions) == 1 else ""
    handles = [patch(UNOWNED_COLOUR, f"partitions without an owner{of}")]
    if any(s.restoring for s in series):
        handles.append(patch(RESTORING_COLOUR, "partitions owned, still restoring state"))
    handles.append(patch(DOWN_COLOUR, "members down (stopped, crashed, fenced or failed)"))
    kinds = {kind for s in series for kind, _ in s.rebalances}
    handles += [Line2D([], [], color=REBALANCE_COLOURS[k], marker="|", linestyle="none", markersize=9,
                       markeredgewidth=1.2, label=REBALANCE_LABELS[k])
                for k in REBALANCE_COLOURS if k in kinds]
    return handles
