"""Timeline of a scenario: one row per consumer, bars while it owns partitions, rebalance lines.

``timeline_figure`` builds the figure (a test can measure it), ``plot_timeline`` writes it; rows,
row names, shades and bar labels follow ``timeline_layout``'s rules, shared with ``connect.plot``.
matplotlib is an optional extra (`pip install 'kgroup[plot]'`), imported only here (``pyplot``).
"""

from __future__ import annotations

from pathlib import Path

from . import timeline_layout as layout
from .fleet_series import mixed_rebalances as _mixed_rebalances  # noqa: F401  (tests read it here)
from .fleet_series import rebalance_marks, uses_aggregate


class PlotUnavailable(Exception):
    """matplotlib is missing or the file type is not one it can write here."""


FORMATS = (".png", ".svg")
LABEL_MIN_SPAN = 0.03   # a bar this share of the time axis or wider shows its partition count


_NO_MATPLOTLIB = "--plot needs matplotlib, which is not installed: pip install 'kgroup[plot]'"


def check_target(path: str) -> None:
    """Fail before a long simulation, not after it: a usable file type and matplotlib installed."""
    import importlib.util

    if Path(path).suffix.lower() not in FORMATS:
        raise PlotUnavailable(f"--plot {path}: the file name must end in .png or .svg")
    if importlib.util.find_spec("matplotlib") is None:
        raise PlotUnavailable(_NO_MATPLOTLIB)
    problem = _unwritable(Path(path))
    if problem:
        raise PlotUnavailable(f"--plot {path}: cannot write the file: {problem}")


def _unwritable(target: Path) -> str | None:
    """Why ``target`` cannot be written (None: it can), so a run's results are not thrown away
    after the simulation for a directory that is missing or read-only."""
    import errno
    import os

    parent = target.parent
    if target.is_dir():
        return os.strerror(errno.EISDIR)
    if not parent.is_dir():
        return os.strerror(errno.ENOTDIR if parent.exists() else errno.ENOENT)
    if not os.access(target if target.exists() else parent, os.W_OK):
        return os.strerror(errno.EACCES)
    return None


def plot_timeline(results, path: str) -> None:
    """Write one panel per result (variants of --compare stacked) to a PNG or SVG file."""
    plt = pyplot(path)
    save(plt, timeline_figure(plt, results), path)


def timeline_figure(plt, results, view: str | None = None):
    """The figure ``plot_timeline`` writes, laid out and frozen (``timeline_layout``): one panel per
    result, a legend under them. ``view``: "rows" (a row per member), "aggregate" (the group as a
    whole: ``fleet_plot``), or None: rows up to AGGREGATE_ABOVE_MEMBERS members, aggregate above."""
    results = list(results)
    names = [_names(r) for r in results]
    if view is None:
        view = "aggregate" if uses_aggregate(len(n) for n in names) else "rows"
    if view == "aggregate":
        from .fleet_plot import fleet_figure
        return fleet_figure(plt, results, lambda result, rows: _title(result, rows, 1), [len(n) for n in names])
    return _rows_figure(plt, results, [layout.sample(n) for n in names])


def _rows_figure(plt, results, shown):
    """A row per member (``shown``: each result's rows drawn and their stride)."""
    heights = [layout.rows_height_in(len(names)) + 1.0 for names, _ in shown]
    fig, axes = layout.figure(plt, 9, max(3.2, sum(heights) + 0.9), len(results), height_ratios=heights)
    cmap = plt.get_cmap("viridis")
    most = max((count for r in results for *_, count in r.intervals), default=1) or 1
    pending = [_panel(ax, result, cmap, names, stride, most)
               for ax, result, (names, stride) in zip(axes[:, 0], results, shown)]
    axes[-1, 0].set_xlabel("virtual time since the scenario started (s)", fontsize=8)
    fig.legend(handles=_legend(results, cmap, most, shown), loc="outside lower center", fontsize=7,
               frameon=False, ncol=4, handlelength=1.6, columnspacing=1.4)
    layout.freeze_layout(fig)
    for ax, labels, (names, _) in zip(axes[:, 0], pending, shown):
        marker_px = marker_size_pt(layout.row_pitch_pt(len(names))) * layout.DPI / 72
        layout.fitting_texts(ax, labels, margin_px=marker_px / 2)     # clear of a start or stop marker
    return fig


def _legend(results, cmap, most, shown) -> list:
    """What the shades, lines, markers and strips mean, as legend entries (only those drawn), and
    which rows are named when not every one is."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    counts = [count for r in results for *_, count in r.intervals]
    handles = layout.swatches(cmap, counts, most, "partition held", "partitions held")
    mixed = any(r.migration is not None for r in results)
    kinds = {kind for r in results for kind, _ in rebalance_marks(r)}
    if "classic" in kinds:
        handles.append(Line2D([], [], color="crimson", linewidth=1, label="rebalance begins (classic)"))
    if "consumer" in kinds:
        handles.append(Line2D([], [], color="darkorange", linewidth=1, label="group-epoch bump (consumer)"))
    drawn = {MARKERS[e["event"]] for r in results for e in r.events.of_kind(*MARKERS)}
    handles += [Line2D([], [], marker=marker, color=colour, label=label, linestyle="none", markersize=5)
                for (marker, colour), label in MARKER_LABELS.items() if (marker, colour) in drawn]
    if any(r.never_rejoined for r in results):
        handles.append(Line2D([], [], color="crimson", linestyle=":", linewidth=1.2, label="never rejoined"))
    if mixed:
        handles += [Patch(facecolor=colour, label=f"strip: speaks {protocol}")
                    for protocol, colour in PROTOCOL_COLOURS.items()]
    step = max(layout.label_step(len(names)) for names, _ in shown)
    if step > 1:
        handles.append(Patch(facecolor="none", edgecolor="none", label=f"row names: every {ordinal(step)} row"))
    return handles


def ordinal(n: int) -> str:
    """2nd, 5th, 21st, 112th."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def pyplot(path: str):
    """matplotlib.pyplot on the Agg backend, once ``path`` passed ``check_target``."""
    check_target(path)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # found but broken
        raise PlotUnavailable(_NO_MATPLOTLIB) from exc
    return plt


def save(plt, fig, path: str) -> None:
    """Write and close ``fig`` (laid out by its maker); a file that cannot be written is a PlotUnavailable."""
    try:
        fig.savefig(path, dpi="figure")
    except OSError as exc:
        raise PlotUnavailable(f"--plot {path}: cannot write the file: {exc.strerror or exc}") from exc
    finally:
        plt.close(fig)


def _names(result) -> list[str]:
    names = dict.fromkeys(result.intervals.holders())
    names.update(dict.fromkeys(result.events.members()))
    return sorted(names, key=natural_order)


def natural_order(name: str):
    """Row order: by prefix, then by number (c2 before c10; W2 before W10)."""
    head = name.rstrip("0123456789-twin")
    digits = name[len(head):].split("-")[0]
    return (head, int(digits) if digits.isdigit() else -1, name)


def _panel(ax, result, cmap, names=None, stride=1, most=None) -> list:
    """Draw one result; returns the bar labels to write once the layout is frozen."""
    if names is None:
        names, stride = layout.sample(_names(result))
    if most is None:
        most = max((count for *_, count in result.intervals), default=1) or 1
    row = {name: i for i, name in enumerate(names)}
    pitch = layout.row_pitch_pt(len(names))
    span = max(result.duration_ms, 1)
    mixed = result.migration is not None
    low, high = (-0.22, 0.38) if mixed else (-0.4, 0.4)      # a mixed run's strip goes under the bar
    bars, colours, labels = [], [], []
    label_bars = pitch >= layout.LABEL_MIN_PITCH_PT
    colour_of = {}                 # count -> colour: a colour map call per bar costs seconds at 80,000
    for name, start, end, count in result.intervals:
        y = row.get(name)
        if y is None:
            continue
        colour = colour_of.get(count)
        if colour is None:
            colour = colour_of[count] = cmap(layout.shade(count, most))
        bars.append((start / 1000, end / 1000, y + low, y + high))
        colours.append(colour)
        if label_bars and (end - start) >= LABEL_MIN_SPAN * span:
            labels.append((start / 1000, end / 1000, y + (low + high) / 2, str(count),
                           layout.text_colour(layout.shade(count, most))))
    layout.draw_bars(ax, bars, colours, thin=pitch < layout.THIN_PITCH_PT)
    if mixed:
        _protocol_strips(ax, result, row)
    lines = rebalance_marks(result)
    for kind, colour in (("classic", "crimson"), ("consumer", "darkorange")):
        layout.draw_event_lines(ax, [t / 1000 for k, t in lines if k == kind], colour)
    _markers(ax, result, row, pitch)
    layout.label_rows(ax, names)
    end = span / 1000
    ax.set_xlim(-0.01 * end, 1.01 * end)
    ax.set_title(_title(result, len(names), stride), fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    return labels


MARKERS = {"start": (">", "black"), "stop": ("s", "black"), "crash": ("s", "black"),
           "fenced": ("X", "crimson"), "failed": ("X", "crimson")}
MARKER_LABELS = {(">", "black"): "process starts", ("s", "black"): "stops or crashes",
                 ("X", "crimson"): "fenced or failed (fatal)"}


def _markers(ax, result, row, pitch) -> None:
    """Starts, stops, fatal errors; a member that never rejoined: a dotted red line to the end."""
    points: dict = {}
    for event in result.events.of_kind(*MARKERS):
        y = row.get(event.get("member"))
        if y is not None:
            points.setdefault(MARKERS[event["event"]], []).append((event["t_ms"] / 1000, y))
    layout.draw_markers(ax, points, marker_size_pt(pitch))
    end = result.duration_ms / 1000
    for lost in result.never_rejoined:
        y = row.get(lost["member"])
        if y is not None:
            ax.hlines(y, lost["stopped_at_ms"] / 1000, end, colors="crimson", linestyles=":", linewidth=1.2)


def marker_size_pt(pitch: float) -> float:
    """Markers as tall as most of a row, within 1.5 and 5 points."""
    return max(1.5, min(5.0, 0.8 * pitch))


def _title(result, rows: int, stride: int) -> str:
    """Two lines: what ran, then what it cost (one line would run off a narrow figure)."""
    consumer = result.protocol == "consumer"
    what = "group-epoch bump(s)" if consumer else "rebalance(s)"
    protocol = " · consumer protocol" if consumer else ""
    if result.migration is not None:
        protocol, what = f" · {result.protocol}", "rebalance(s) and group-epoch bump(s)"
    members = (f"{result.members} members" if result.members_start is None
               else f"{result.members_start} -> {result.members_end} members")
    if stride > 1:
        members += f" (1 in {stride} drawn)"
    lost = [m["member"] for m in result.never_rejoined]
    never = f", never rejoined: {', '.join(lost)}" if lost else ""
    return (f"{result.scenario}{protocol} · {result.membership} · {result.assignor} · {members}\n"
            f"{result.rebalances} {what}, {result.handoffs} hand-offs, "
            f"{result.unowned_partition_seconds:g} partition-s unowned{never}")


PROTOCOL_COLOURS = {"classic": "tab:blue", "consumer": "darkorange"}


def _protocol_strips(ax, result, row) -> None:
    """A thin strip under each row, coloured by the protocol its process speaks from then on."""
    end = result.duration_ms
    since: dict = {}
    spans = []
    for event in result.events.of_kind("protocol"):
        if event.get("member") in row:
            name = event["member"]
            if name in since:
                spans.append((name, *since[name]))
            since[name] = (event["t_ms"], event["protocol"])
    spans += [(name, t, protocol) for name, (t, protocol) in since.items()]
    strips, colours = [], []
    for name, start, protocol in sorted(spans, key=lambda s: s[1]):
        stop = next((t for n, t, _ in spans if n == name and t > start), end)
        strips.append((start / 1000, max(stop, start + 1) / 1000, row[name] - 0.44, row[name] - 0.32))
        colours.append(PROTOCOL_COLOURS[protocol])
    layout.draw_bars(ax, strips, colours)
