"""How kgroup's timelines (``plot`` for consumer groups, ``connect.plot`` for Connect workers) lay out
their rows, label them and shade their bars: one set of rules, so both read the same way at 3 members
or at 200.

* Rows: every member, up to ``MAX_ROWS`` (beyond that an even sample, which the title says). A row is
  ``ROW_IN`` tall up to ``FULL_ROWS`` rows; more rows share ``FULL_ROWS * ROW_IN`` inches, or
  ``THIN_ROW_IN`` each when that is more, so 200 members stay on one readable page.
* Row labels: every row while rows are ``EVERY_ROW_PT`` tall; thinner, every k-th row (k in 2, 5, 10,
  20, ...) so that two labels are at least ``SUBSET_GAP_PT`` apart (c0, c5, c10, ... at 200 members).
* Bars: one collection per panel (tens of thousands of bars draw in about a second, where a call per
  bar took minutes), shaded *darker the more they hold*; the legend's swatches say how many.
* Text on a bar only where it fits, measured once the layout is done (``freeze_layout``): nothing
  spills over a neighbour or out of the axes.

matplotlib is imported by the callers (``plot.pyplot``); these helpers take its objects.
"""

from __future__ import annotations

import math

MAX_ROWS = 250
ROW_IN = 0.22
FULL_ROWS = 40
THIN_ROW_IN = 0.06
EVERY_ROW_PT = 12.0
SUBSET_GAP_PT = 20.0
NICE_STEPS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
LIGHT, DARK = 0.92, 0.28        # viridis: yellow-green for a little, blue for a lot
TEXT_PAD_PX = 3
THIN_PITCH_PT = 8               # rows thinner than this are drawn without anti-aliasing
LABEL_MIN_PITCH_PT = 9          # rows at least this tall carry text on their bars
DPI = 90
PAD_IN = 0.08


def sample(names: list) -> tuple[list, int]:
    """The rows drawn and the stride (1: every one)."""
    if len(names) <= MAX_ROWS:
        return names, 1
    stride = math.ceil(len(names) / MAX_ROWS)
    return names[::stride], stride


def rows_height_in(rows: int, row_in: float = ROW_IN) -> float:
    """Inches the rows of one panel take (title, axis and legend come on top); ``row_in``: a row's
    height while there are at most FULL_ROWS of them."""
    if rows <= FULL_ROWS:
        return row_in * max(rows, 2)
    return max(row_in * FULL_ROWS, THIN_ROW_IN * rows)


def row_pitch_pt(rows: int, row_in: float = ROW_IN) -> float:
    return rows_height_in(rows, row_in) * 72 / max(rows, 1)


def label_step(rows: int, row_in: float = ROW_IN) -> int:
    """Label every row while rows are EVERY_ROW_PT tall or more; else every k-th, the smallest nice k
    whose labels stay SUBSET_GAP_PT apart (a column of names every 10 pt is a wall of text)."""
    pitch = row_pitch_pt(rows, row_in)
    if pitch >= EVERY_ROW_PT:
        return 1
    return next((k for k in NICE_STEPS if k * pitch >= SUBSET_GAP_PT), NICE_STEPS[-1])


def label_rows(ax, names: list, fontsize: float = 7, row_in: float = ROW_IN) -> None:
    """Y ticks: a readable subset of the row names (no tick at every row: 200 of them cost a second
    and add nothing the bars do not show)."""
    step = label_step(len(names), row_in)
    shown = list(range(0, len(names), step))
    ax.set_yticks(shown, [names[i] for i in shown], fontsize=fontsize)
    ax.set_ylim(-0.7, max(len(names), 1) - 0.3)


def figure(plt, width_in: float, height_in: float, panels: int = 1, sharex: bool = False, **gridspec):
    """A figure at the DPI it is written at (text is measured as it will be drawn), laid out by
    matplotlib's constrained layout with room at the edges; ``sharex``: one time axis, its tick
    labels under the bottom panel only."""
    fig, axes = plt.subplots(panels, 1, figsize=(width_in, height_in), dpi=DPI, squeeze=False,
                             sharex=sharex, gridspec_kw=gridspec or None, layout="constrained")
    fig.get_layout_engine().set(w_pad=PAD_IN, h_pad=PAD_IN)
    return fig, axes


def shade(count: float, most: float) -> float:
    """Where on the colour map a bar holding ``count`` of at most ``most`` sits: darker, more."""
    return LIGHT - (LIGHT - DARK) * count / (most or 1)


def text_colour(value: float) -> str:
    return "white" if value < 0.6 else "black"


def swatches(cmap, counts, most: int, one: str, many: str) -> list:
    """Legend handles for a few representative counts (all of them when there are four or fewer),
    ``one`` / ``many`` naming what is counted ("partition held", "partitions held")."""
    from matplotlib.patches import Patch

    present = sorted(set(counts))
    if len(present) > 4:
        picks = {present[0], present[-1]}
        picks |= {present[round(i * (len(present) - 1) / 3)] for i in (1, 2)}
        present = sorted(picks)
    return [Patch(facecolor=cmap(shade(c, most)), label=f"{c} {one if c == 1 else many}")
            for c in present]


def draw_bars(ax, spans, colours, thin: bool = False, **style) -> None:
    """Rectangles ``(x0, x1, y0, y1)`` in data units, as one collection (``thin``: rows so thin that
    anti-aliasing would blur their gaps unevenly)."""
    if not spans:
        return
    import numpy as np
    from matplotlib.collections import PolyCollection

    a = np.asarray(spans, dtype=float)
    verts = np.stack([a[:, [0, 2]], a[:, [0, 3]], a[:, [1, 3]], a[:, [1, 2]]], axis=1)
    style.setdefault("linewidths", 0)
    if thin:                      # rows a few pixels tall: snapped to pixels, every gap looks the same
        style.setdefault("antialiased", False)
    ax.add_collection(PolyCollection(verts, facecolors=colours, **style))


def draw_event_lines(ax, times, colour: str) -> None:
    """Vertical lines across the panel at ``times`` (s), one collection; thinner and fainter the denser
    they are, so 400 rebalances still leave the bars visible between them."""
    if not times:
        return
    width_pt = ax.figure.get_figwidth() * 72 * 0.8
    spacing_pt = width_pt / len(times)
    linewidth = max(0.3, min(0.8, 0.25 * spacing_pt))
    ax.vlines(times, 0, 1, transform=ax.get_xaxis_transform(), colors=colour, linewidth=linewidth,
              alpha=0.7 if linewidth >= 0.5 else 0.55)


def draw_markers(ax, points: dict, size: float) -> None:
    """``{(marker, colour): [(x, y), ...]}``, one call per kind, drawn over the frame at the edges."""
    for (marker, colour), xy in points.items():
        if xy:
            xs, ys = zip(*xy)
            ax.plot(xs, ys, linestyle="none", marker=marker, color=colour, markersize=size,
                    clip_on=False, zorder=4)


def freeze_layout(fig) -> None:
    """Run the figure's layout now and keep it: text placed afterwards is measured against the final
    axes, and saving does not move them again."""
    engine = fig.get_layout_engine()
    if engine is not None:
        engine.execute(fig)
        fig.set_layout_engine("none")


def fitting_texts(ax, texts, fontsize: float = 6, margin_px: float = 0) -> int:
    """Write each ``(x0, x1, y, text, colour)`` centred in its span, if it fits there with
    ``margin_px`` clear at either end (a marker drawn there) (after ``freeze_layout``); returns how
    many were written."""
    from matplotlib.font_manager import FontProperties

    renderer = ax.figure.canvas.get_renderer()
    prop = FontProperties(size=fontsize)
    left, right = ax.get_xlim()
    px_per_unit = ax.bbox.width / (right - left)
    widths: dict = {}
    written = 0
    for x0, x1, y, text, colour in texts:
        width = widths.get(text)
        if width is None:
            width = widths[text] = renderer.get_text_width_height_descent(text, prop, ismath=False)[0]
        lo, hi = max(x0, left), min(x1, right)
        if width + 2 * (TEXT_PAD_PX + margin_px) <= (hi - lo) * px_per_unit:
            ax.text((lo + hi) / 2, y, text, ha="center", va="center", fontsize=fontsize, color=colour)
            written += 1
    return written


def text_width_px(fig, text: str, fontsize: float) -> float:
    from matplotlib.font_manager import FontProperties

    renderer = fig.canvas.get_renderer()
    return renderer.get_text_width_height_descent(text, FontProperties(size=fontsize), ismath=False)[0]
