"""Timeline of a scenario: one row per consumer, bars while it owns partitions, rebalance lines.

matplotlib is an optional extra (`pip install 'kgroup[plot]'`), imported only here.
"""

from __future__ import annotations

from pathlib import Path


class PlotUnavailable(Exception):
    """matplotlib is missing or the file type is not one it can write here."""


FORMATS = (".png", ".svg")
MAX_ROWS = 60      # beyond this, rows are sampled evenly so the figure stays readable
LABEL_MIN_SPAN = 0.03   # a bar this share of the time axis or wider shows its partition count
LABEL_MAX_ROWS = 20     # and only while the rows are tall enough for a digit


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
    results = list(results)
    rows_per = [min(len(_names(r)), MAX_ROWS) for r in results]
    height = sum(1.2 + 0.22 * n for n in rows_per)
    fig, axes = plt.subplots(len(results), 1, figsize=(9, max(2.5, height)), squeeze=False,
                             gridspec_kw={"height_ratios": [max(n, 2) for n in rows_per]})
    cmap = plt.get_cmap("viridis")
    for ax, result in zip(axes[:, 0], results):
        _panel(ax, result, cmap)
    lines = "red line: rebalance begins"
    mixed = any(r.migration is not None for r in results)
    if mixed or any(r.protocol == "consumer" for r in results):
        lines = ("red line: rebalance begins (classic); orange line: group-epoch bump (consumer)"
                 if mixed or any(r.protocol == "classic" for r in results)
                 else "orange line: group-epoch bump")
    if mixed:
        lines += ";\nstrip under a row: its protocol (blue classic, orange consumer)"
    axes[-1, 0].set_xlabel("virtual time since the scenario started (s)\nbar: partitions held (the number on it, "
                           "darker: fewer);"
                           f" {lines}; ▶ start, ■ stop, ✕ fenced", fontsize=8)
    save(plt, fig, path)


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
    """Lay out, write and close ``fig``; a file that cannot be written is a PlotUnavailable."""
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=90)
    except OSError as exc:
        raise PlotUnavailable(f"--plot {path}: cannot write the file: {exc.strerror or exc}") from exc
    finally:
        plt.close(fig)


def _names(result) -> list[str]:
    names = []
    for name, *_ in result.intervals:
        if name not in names:
            names.append(name)
    for name in result.events.members():
        if name not in names:
            names.append(name)
    return sorted(names, key=natural_order)


def natural_order(name: str):
    """Row order: by prefix, then by number (c2 before c10; W2 before W10)."""
    head = name.rstrip("0123456789-twin")
    digits = name[len(head):].split("-")[0]
    return (head, int(digits) if digits.isdigit() else -1, name)


def _panel(ax, result, cmap) -> None:
    names = _names(result)
    if len(names) > MAX_ROWS:
        step = len(names) / MAX_ROWS
        names = [names[int(i * step)] for i in range(MAX_ROWS)]
    row = {name: i for i, name in enumerate(names)}
    most = max((count for *_, count in result.intervals), default=1) or 1
    span = max(result.duration_ms, 1)
    for name, start, end, count in result.intervals:
        if name in row:
            shade = 0.25 + 0.65 * count / most
            ax.broken_barh([(start / 1000, (end - start) / 1000)], (row[name] - 0.4, 0.8),
                           facecolors=cmap(shade))
            if (end - start) >= LABEL_MIN_SPAN * span and len(names) <= LABEL_MAX_ROWS:
                ax.text((start + end) / 2000, row[name], str(count), ha="center", va="center",
                        fontsize=6, color="white" if shade < 0.6 else "black")
    for event in result.events.of_kind("stop", "crash", "fenced", "failed", "start"):
        name = event.get("member")
        if name in row:
            marker = {"start": ">", "fenced": "X", "failed": "X"}.get(event["event"], "s")
            ax.plot(event["t_ms"] / 1000, row[name], marker=marker, color="black", markersize=4)
    consumer = result.protocol == "consumer"
    if result.migration is not None:
        _protocol_strips(ax, result, row)
        for kind, t in _mixed_rebalances(result):
            ax.axvline(t / 1000, color="darkorange" if kind == "consumer" else "crimson",
                       linewidth=0.8, alpha=0.7)
    for t in () if result.migration is not None else result.rebalance_times:
        ax.axvline(t / 1000, color="darkorange" if consumer else "crimson", linewidth=0.8, alpha=0.7)
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=7)
    ax.set_ylim(-0.7, max(len(names), 1) - 0.3)
    end = max(result.duration_ms, 1) / 1000
    ax.set_xlim(-0.01 * end, 1.01 * end)
    what = "group-epoch bump(s)" if consumer else "rebalance(s)"
    protocol = " · consumer protocol" if consumer else ""
    if result.migration is not None:
        protocol, what = f" · {result.protocol}", "rebalance(s) and group-epoch bump(s)"
    ax.set_title(f"{result.scenario}{protocol} · {result.membership} · {result.assignor}: "
                 f"{result.rebalances} {what}, {result.partitions_moved} moved, "
                 f"{result.unowned_partition_seconds:g} partition-s unowned", fontsize=9)
    ax.grid(axis="x", alpha=0.3)


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
    for name, start, protocol in sorted(spans, key=lambda s: s[1]):
        stop = next((t for n, t, _ in spans if n == name and t > start), end)
        ax.broken_barh([(start / 1000, max(stop - start, 1) / 1000)], (row[name] - 0.48, 0.12),
                       facecolors=PROTOCOL_COLOURS[protocol])


def _mixed_rebalances(result) -> list:
    """(kind, t_ms): classic rebalances and group-epoch bumps, whichever the group was then."""
    out = []
    for event in result.events.of_kind("group-epoch", "group-state"):
        if event["event"] == "group-epoch":
            out.append(("consumer", event["t_ms"]))
        elif event["event"] == "group-state" and event.get("state") == "PreparingRebalance":
            out.append(("classic", event["t_ms"]))
    return out
