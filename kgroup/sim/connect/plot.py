"""`kgroup simulate connect --plot`: the assignment over time, one row per worker.

``timeline`` reads a run's JSON document (``kgroup.sim.connect.simulation.run``) into what is drawn, so a test
can hold the picture to the run; ``plot_connect`` draws it with ``kgroup.sim.plot``'s file checks,
matplotlib loader and writer (matplotlib is imported only there, on use), laid out by the rules of
``kgroup.sim.timeline_layout`` (rows, row labels, shades, text that fits).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kgroup.sim import timeline_layout as layout
from kgroup.sim.plot import PROTOCOL_COLOURS, natural_order, pyplot, save

# the migration case's two kinds of worker: the classic protocol's, and the draft's (as the consumer
# protocol's strip in `kgroup simulate`'s plot: the new protocol is orange)
WORKER_PROTOCOL_COLOURS = {"classic": PROTOCOL_COLOURS["classic"], "connect": PROTOCOL_COLOURS["consumer"]}
END_COLUMN_CHARS = 28      # the "runs at the end" column cuts longer item lists
ROW_IN = 0.36              # a worker's row holds its items' names, revocation marks, its membership and protocol


@dataclass(frozen=True)
class ConnectTimeline:
    workers: list            # row order (natural: W2 before W10)
    bars: list               # (worker, start_ms, end_ms, items it runs: ("A", "A-1", ...))
    lifetimes: list          # (worker, from_ms, to_ms): while it is a member of the group
    revocations: list        # (at_ms, worker, items, cause): "revoked" or "abandoned"
    epoch_bumps: list        # (at_ms, new group epoch)
    end_ms: int
    protocols: list = field(default_factory=list)   # (worker, from_ms, to_ms, "classic" | "connect"): migration


def _items(item_set: dict) -> tuple:
    return tuple(item_set["connectors"] + item_set["tasks"])


def seeded(params) -> dict:
    """What the seeded workers of ``params`` (ConnectParams) run at t=0: {W: items}. The document's
    steps start at the first event, so a seed is known only from the parameters."""
    from kgroup.coordinator.connect.protocol import item_set
    if params is None:
        return {}
    return {w: _items(item_set(items)) for w, items in params.seed().items()}


def timeline(document: dict, params=None) -> ConnectTimeline:
    """What ``plot_connect`` draws, from the run's document and the parameters it ran with."""
    end = document["ended_at_ms"]
    running = seeded(params)
    since = {w: 0 for w in running}             # bar start per worker running something
    member_since = {w: 0 for w in running}
    bars, lifetimes, bumps = [], [], []
    epoch = document["group_epoch_start"]

    revocations = [(r["at_ms"], r["worker"], _items(r), r["cause"]) for r in document["revoked"]]

    def close_bar(worker, at, removed=False):
        """A removed (hung) worker runs its items on until it learns it lost them ("abandoned")."""
        if running.get(worker):
            if removed:
                at = next((t for t, w, _, cause in revocations if w == worker and cause == "abandoned"
                           and t >= at), at)
            bars.append((worker, since[worker], at, running[worker]))

    for step in document["steps"]:
        at, members = step["at_ms"], step["members"]
        if step["group_epoch"] is not None:     # None: no group yet (the migration case's start)
            if epoch is not None and step["group_epoch"] > epoch:
                bumps.append((at, step["group_epoch"]))
            epoch = step["group_epoch"]
        for worker in [w for w in member_since if w not in members]:
            lifetimes.append((worker, member_since.pop(worker), at))
        for worker in set(running) | set(members):
            items = _items(members[worker]) if worker in members else ()
            if items != running.get(worker, ()):
                close_bar(worker, at, removed=worker not in members)
                running[worker], since[worker] = items, at
        for worker in members:
            member_since.setdefault(worker, at)
    for worker in running:
        close_bar(worker, end)
    lifetimes += [(w, start, end) for w, start in member_since.items()]
    workers = sorted({w for w, *_ in bars} | {w for w, *_ in lifetimes}, key=natural_order)
    return ConnectTimeline(workers, sorted(bars, key=lambda b: (b[1], b[0])), sorted(lifetimes),
                           revocations, bumps, end, protocol_spans(document, params))


def protocol_spans(document: dict, params) -> list:
    """The migration case: which protocol each worker process speaks, from its start (the preset's
    workers at 0, a ``join``) until it leaves or crashes for good, switching at ``upgrade`` and
    ``downgrade`` (a ``restart`` resumes the protocol it had). Other cases: none."""
    if document.get("protocol") != "migration" or params is None:
        return []
    end = document["ended_at_ms"]
    running = {w: (0, "classic") for w in params.workers}    # worker -> (since, protocol)
    last: dict = {}
    spans = []
    for ms, action, args in sorted(params.events, key=lambda event: event[0]):
        worker = args[0] if args else None
        if action in ("join", "upgrade", "downgrade", "restart"):
            protocol = {"upgrade": "connect", "downgrade": "classic",
                        "restart": last.get(worker, "classic")}.get(action, "classic")
            if worker in running:
                since, before = running.pop(worker)
                spans.append((worker, since, ms, before))
            running[worker] = (ms, protocol)
            last[worker] = protocol
        elif action in ("leave", "crash") and worker in running:
            since, before = running.pop(worker)
            spans.append((worker, since, ms, before))
    spans += [(w, since, end, protocol) for w, (since, protocol) in running.items()]
    return sorted(spans, key=lambda s: (s[1], natural_order(s[0])))


def plot_connect(document: dict, path: str, params=None) -> None:
    """Write the run's timeline to a PNG or SVG file (raises ``kgroup.sim.plot.PlotUnavailable``)."""
    plt = pyplot(path)
    save(plt, connect_figure(plt, document, params), path)


def connect_figure(plt, document: dict, params=None):
    """The figure ``plot_connect`` writes, laid out and frozen."""
    data = timeline(document, params)
    names, stride = layout.sample(data.workers)
    rows = {w: i for i, w in enumerate(names)}
    pitch = layout.row_pitch_pt(len(names), ROW_IN)
    fig, axes = layout.figure(plt, 10, layout.rows_height_in(len(names), ROW_IN) + 2.0)
    ax = axes[0, 0]
    cmap = plt.get_cmap("viridis")
    most = max((len(items) for *_, items in data.bars), default=1) or 1
    bars = _draw_rows(ax, data, rows, pitch, cmap, most)
    layout.draw_event_lines(ax, [at / 1000 for at, _ in data.epoch_bumps], "darkorange")
    layout.label_rows(ax, names, fontsize=8, row_in=ROW_IN)
    end = max(data.end_ms, 1) / 1000
    ax.set_xlim(-0.01 * end, 1.01 * end)
    labelled = pitch >= layout.LABEL_MIN_PITCH_PT
    if labelled:
        _end_column(ax, data, rows)
    ax.set_title(_title(document, data, len(names), stride), fontsize=9, pad=14)
    ax.set_xlabel("virtual time (s)", fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    fig.legend(handles=_legend(data, cmap, most), loc="outside lower center", fontsize=7, frameon=False,
               ncol=4, handlelength=1.6, columnspacing=1.4)
    layout.freeze_layout(fig)
    if labelled:
        layout.fitting_texts(ax, [(a / 1000, b / 1000, rows[w] + 0.03, " ".join(items),
                                   layout.text_colour(layout.shade(len(items), most)))
                                  for w, a, b, items in bars if items])
    _epoch_labels(ax, data.epoch_bumps)
    return fig


def _draw_rows(ax, data: ConnectTimeline, rows: dict, pitch: float, cmap, most: int) -> list:
    """Each drawn row, bottom to top: the protocol strip (migration), the membership line, the bars,
    the revocation marks above them. Returns the bars drawn (their names go on once laid out)."""
    thin = pitch < layout.THIN_PITCH_PT
    members = [(rows[w] - 0.28, a / 1000, b / 1000) for w, a, b in data.lifetimes if w in rows]
    if members:
        ys, starts, stops = zip(*members)
        ax.hlines(ys, starts, stops, colors="grey", linewidth=max(0.5, min(1.5, 0.1 * pitch)))
    strips = [(w, a, b, p) for w, a, b, p in data.protocols if w in rows]
    layout.draw_bars(ax, [(a / 1000, max(b, a + 1) / 1000, rows[w] - 0.42, rows[w] - 0.33) for w, a, b, _ in strips],
                     [WORKER_PROTOCOL_COLOURS[p] for *_, p in strips], thin=thin)
    bars = [(w, a, b, items) for w, a, b, items in data.bars if w in rows]
    colours = {n: cmap(layout.shade(n, most)) for n in {len(items) for *_, items in bars}}
    layout.draw_bars(ax, [(a / 1000, max(b, a + 1) / 1000, rows[w] - 0.22, rows[w] + 0.28) for w, a, b, _ in bars],
                     [colours[len(items)] for *_, items in bars], thin=thin, edgecolors="white",
                     linewidths=0 if thin else 0.5)
    marks: dict = {}
    for at, worker, _, cause in data.revocations:
        if worker in rows:
            kind = ("v" if cause == "revoked" else "X", "crimson")
            marks.setdefault(kind, []).append((at / 1000, rows[worker] + 0.4))
    layout.draw_markers(ax, marks, max(2.0, min(6.0, 0.6 * pitch)))
    return bars


def _title(document: dict, data: ConnectTimeline, rows: int, stride: int) -> str:
    protocol = "classic and connect workers" if document.get("protocol") == "migration" else "connect"
    drawn = f" ({rows} of {len(data.workers)} workers drawn, 1 in {stride})" if stride > 1 else ""
    return (f"{document['scenario']} · {protocol} · {document['assignor']}{drawn}\n"
            f"group epoch {document['group_epoch_start']} → {document['group_epoch_end']}, "
            f"{len(data.revocations)} revocation(s)")


def _end_column(ax, data: ConnectTimeline, rows: dict) -> None:
    """What each worker runs when the run ends, right of the panel (its last bar is often too short
    to carry its name)."""
    from matplotlib.transforms import blended_transform_factory

    at_end = {w: items for w, _, stop, items in data.bars if stop == data.end_ms and w in rows}
    place = blended_transform_factory(ax.transAxes, ax.transData)
    ax.text(1.01, len(rows) - 0.3, "runs at the end", transform=place, fontsize=6, va="bottom",
            color="dimgrey", clip_on=False)
    for worker, items in at_end.items():
        text = " ".join(items) or "-"
        if len(text) > END_COLUMN_CHARS:
            text = text[:END_COLUMN_CHARS - 1].rsplit(" ", 1)[0] + f" … ({len(items)})"
        ax.text(1.01, rows[worker], text, transform=place, fontsize=6, va="center", clip_on=False)


def _epoch_labels(ax, bumps: list, fontsize: float = 6) -> None:
    """The new epoch above each orange line; bumps too close to be told apart share one label,
    ``first–last``. Written after the layout froze, in the room the title's pad left; a label that
    would run past the panel's right edge ends at its line instead, or joins the one before it."""
    if not bumps:
        return
    left, right = ax.get_xlim()
    px_per_s = ax.bbox.width / (right - left)
    gap = 2 * layout.TEXT_PAD_PX

    def text(cluster):
        return str(cluster[1]) if cluster[1] == cluster[2] else f"{cluster[1]}–{cluster[2]}"

    def width(cluster):
        return layout.text_width_px(ax.figure, text(cluster), fontsize)
    clusters: list = []      # [x (s), first epoch, last epoch]
    for at, epoch in bumps:
        x = at / 1000
        if clusters and (x - clusters[-1][0]) * px_per_s < width(clusters[-1]) + gap:
            clusters[-1][2] = epoch
        else:
            clusters.append([x, epoch, epoch])
    ends_at_line = False
    while (right - clusters[-1][0]) * px_per_s < width(clusters[-1]):
        last = clusters[-1]
        before = clusters[-2] if len(clusters) > 1 else None
        if before is None or (last[0] - before[0]) * px_per_s >= width(before) + gap + width(last):
            ends_at_line = True
            break
        before[2] = last[2]          # no room on either side: one label for both
        clusters.pop()
    for i, cluster in enumerate(clusters):
        right_aligned = ends_at_line and i == len(clusters) - 1
        ax.text(cluster[0], 1.005, text(cluster), transform=ax.get_xaxis_transform(),
                ha="right" if right_aligned else "left", va="bottom", fontsize=fontsize, color="darkorange",
                clip_on=False)


def _legend(data: ConnectTimeline, cmap, most: int) -> list:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = layout.swatches(cmap, [len(items) for *_, items in data.bars if items], most,
                              "item run (connector or task)", "items run (connectors and tasks)")
    handles += [Line2D([], [], color="grey", linewidth=1.5, label="a member of the group"),
                Line2D([], [], color="darkorange", linewidth=1, label="group-epoch bump (new epoch above)")]
    causes = {cause for *_, cause in data.revocations}
    if "revoked" in causes:
        handles.append(Line2D([], [], marker="v", color="crimson", linestyle="none", label="revoked"))
    if "abandoned" in causes:
        handles.append(Line2D([], [], marker="X", color="crimson", linestyle="none", label="abandoned (hung worker)"))
    if data.protocols:
        handles += [Patch(facecolor=WORKER_PROTOCOL_COLOURS["classic"], label="strip: classic worker"),
                    Patch(facecolor=WORKER_PROTOCOL_COLOURS["connect"], label="strip: new-protocol worker")]
    return handles
