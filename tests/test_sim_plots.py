"""What a reader of `kgroup simulate --plot` and `kgroup simulate connect --plot` meets, held to
structure rather than pixels: every text inside the figure and clear of its neighbours, row labels a
readable subset at 200 members, a legend that says how the shades run (darker: more), the protocol
strip of the Connect migration, a member that never rejoined, and bars drawn as one collection (a
200-member plot in seconds, not minutes)."""

import time

import pytest

pytest.importorskip("matplotlib")

from kgroup.sim.connect import run as connect_run                       # noqa: E402
from kgroup.sim.connect_params import resolve                          # noqa: E402
from kgroup.sim.connect_plot import connect_figure, timeline           # noqa: E402
from kgroup.sim.model import SimParams, SimResult, variants            # noqa: E402
from kgroup.sim.plot import pyplot, timeline_figure                    # noqa: E402
from kgroup.sim.run_log import EventLog, Intervals                     # noqa: E402
from kgroup.sim.scenarios import run_scenario                          # noqa: E402

MAX_TICK_LABELS = 45


@pytest.fixture(scope="module")
def plt():
    return pyplot("x.png")


@pytest.fixture
def close(plt):
    figures = []
    yield figures.append
    for fig in figures:
        plt.close(fig)


def texts(fig):
    """Every text drawn, with its extent (a tick outside the axis' view is not drawn)."""
    from matplotlib.text import Text

    fig.canvas.draw()                  # the legend places its texts as it draws
    undrawn = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks():
                if not low - 1e-9 <= tick.get_loc() <= high + 1e-9:
                    undrawn |= {id(tick.label1), id(tick.label2)}
    renderer = fig.canvas.get_renderer()
    return [(t, t.get_window_extent(renderer)) for t in fig.findobj(Text)
            if t.get_visible() and t.get_text().strip() and id(t) not in undrawn]


def assert_inside_the_figure(fig):
    box = fig.bbox
    outside = [t.get_text() for t, e in texts(fig)
               if e.x0 < box.x0 - 1 or e.x1 > box.x1 + 1 or e.y0 < box.y0 - 1 or e.y1 > box.y1 + 1]
    assert outside == []


def tick_labels(ax):
    renderer = ax.figure.canvas.get_renderer()
    return [(t.get_text(), t.get_window_extent(renderer)) for t in ax.get_yticklabels() if t.get_text()]


def assert_apart(extents):
    """No two of these boxes overlap."""
    ordered = sorted(extents, key=lambda e: (e[1].y0, e[1].x0))
    for (a, box_a), (b, box_b) in zip(ordered, ordered[1:]):
        assert not box_a.overlaps(box_b), (a, b)


def legend_texts(fig):
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


def luminance(rgba):
    r, g, b = rgba[:3]
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def assert_darker_means_more(fig):
    """The swatches ("N partitions held", "N items run") get darker as N grows."""
    swatches = []
    for legend in fig.legends:
        for handle, text in zip(legend.legend_handles, legend.get_texts()):
            head = text.get_text().split(" ", 1)[0]
            if head.isdigit() and hasattr(handle, "get_facecolor"):
                swatches.append((int(head), luminance(handle.get_facecolor())))
    assert len(swatches) >= 2
    counts = [lum for _, lum in sorted(swatches)]
    assert counts == sorted(counts, reverse=True)


# ---- kgroup simulate --plot ---------------------------------------------------------------------
def test_a_compare_plot_at_3_members_keeps_every_text_inside_and_the_legend_reads_darker_more(plt, close):
    results = [run_scenario("rolling-bounce", p)
               for p in variants("rolling-bounce", SimParams(members=3, membership="dynamic"), "protocol")]
    fig = timeline_figure(plt, results)
    close(fig)
    assert_inside_the_figure(fig)
    legend = legend_texts(fig)
    assert not any("darker: fewer" in text for text in legend)
    assert {"rebalance begins (classic)", "group-epoch bump (consumer)"} <= set(legend)
    assert_darker_means_more(fig)
    for ax in fig.axes:
        assert "\n" in ax.get_title()               # what ran, then what it cost: no title runs off
        bar_labels = [t for t in ax.texts if t.get_text().isdigit()]
        assert bar_labels                            # the partition counts, where they fit
        box = ax.get_window_extent()
        renderer = fig.canvas.get_renderer()
        assert all(box.contains(*t.get_window_extent(renderer).min) and box.contains(*t.get_window_extent(renderer).max)
                   for t in bar_labels)


def test_at_200_members_every_row_is_drawn_and_a_readable_subset_labelled(plt, close):
    result = run_scenario("rolling-bounce", SimParams(members=200, topics=(("t", 600),)))
    fig = timeline_figure(plt, [result])
    close(fig)
    [ax] = fig.axes
    labels = tick_labels(ax)
    assert 10 <= len(labels) <= MAX_TICK_LABELS
    assert [text for text, _ in labels][:3] == ["c0", "c5", "c10"]   # every k-th row, k a round number
    assert_apart(labels)
    assert_inside_the_figure(fig)
    assert ax.get_ylim()[1] > 199                                     # all 200 rows, none sampled away
    assert fig.get_figheight() < 20


def test_a_member_that_never_rejoined_is_drawn_and_named(plt, close):
    result = run_scenario("crash", SimParams(protocol="consumer"))
    fig = timeline_figure(plt, [result])
    close(fig)
    assert "never rejoined: c0" in fig.axes[0].get_title()
    assert "never rejoined" in legend_texts(fig)
    assert "fenced or failed (fatal)" in legend_texts(fig)
    assert "rebalance begins (classic)" not in legend_texts(fig)     # only what is drawn


def test_the_protocol_roll_plot_keeps_its_strip_apart_from_the_bars(plt, close):
    result = run_scenario("upgrade-protocol", SimParams(members=3))
    fig = timeline_figure(plt, [result])
    close(fig)
    assert {"strip: speaks classic", "strip: speaks consumer"} <= set(legend_texts(fig))
    assert_inside_the_figure(fig)


def _many_intervals(members: int, per_member: int) -> SimResult:
    """A dynamic bounce's shape without its minutes of simulation: many short holdings per member."""
    intervals, events = Intervals(), EventLog()
    for m in range(members):
        for k in range(per_member):
            intervals.append(f"c{m}", k * 1000, k * 1000 + 800, 1 + (m + k) % 4)
        events.append(m * 100, "stop", f"c{m}", {})
        events.append(m * 100 + 50, "start", f"c{m}", {})
    return SimResult(scenario="rolling-bounce", membership="dynamic", assignor="range", members=members,
                     partitions=3 * members, rebalances=per_member, generation_start=1,
                     generation_end=per_member + 1, partitions_moved=3 * members, unowned_partition_seconds=1.0,
                     time_to_stable_ms=per_member * 1000, longest_stop_ms=1000, settled=True, events=events,
                     intervals=intervals, rebalance_times=[k * 1000 for k in range(per_member)],
                     duration_ms=per_member * 1000, members_start=members)


def test_a_200_member_plot_with_80000_bars_draws_them_as_one_collection_in_seconds(plt, close, tmp_path):
    result = _many_intervals(200, 400)
    started = time.perf_counter()
    fig = timeline_figure(plt, [result])
    fig.savefig(tmp_path / "big.png", dpi="figure")
    elapsed = time.perf_counter() - started
    close(fig)
    [ax] = fig.axes
    assert len(ax.patches) == 0 and len(ax.collections) <= 6        # not a collection per bar
    assert len(tick_labels(ax)) <= MAX_TICK_LABELS
    assert elapsed < 30, elapsed                  # some 3 s on one core; a call per bar took minutes


# ---- kgroup simulate connect --plot -------------------------------------------------------------
def test_connect_migration_shows_each_workers_protocol():
    params = resolve("migration")
    data = timeline(connect_run(params), params)
    assert [p for p in data.protocols if p[0] == "W1"] == [
        ("W1", 0, 30_000, "classic"), ("W1", 30_000, 150_000, "connect"), ("W1", 150_000, data.end_ms, "classic")]
    assert {w for w, *_ in data.protocols} == {"W1", "W2", "W3"}
    assert timeline(connect_run(resolve("worker-joins")), resolve("worker-joins")).protocols == []


def test_connect_migration_plot_labels_fit_and_epochs_do_not_overlap(plt, close):
    params = resolve("migration")
    document = connect_run(params)
    fig = connect_figure(plt, document, params)
    close(fig)
    [ax] = fig.axes
    assert_inside_the_figure(fig)
    renderer = fig.canvas.get_renderer()
    epochs = [(t.get_text(), t.get_window_extent(renderer)) for t in ax.texts if t.get_color() == "darkorange"]
    assert epochs and epochs[-1][0].endswith("11")          # the last epoch is shown
    assert_apart(epochs)
    # a bar's names sit inside that bar, never across its neighbours or the panel's edge
    data = timeline(document, params)
    rows = {w: i for i, w in enumerate(data.workers)}
    to_px = ax.transData.transform
    for t in ax.texts:
        text = t.get_text()
        y = t.get_position()[1]
        bars = [(a, b) for w, a, b, items in data.bars if " ".join(items) == text and abs(rows[w] + 0.03 - y) < 1e-9]
        if not bars or t.get_transform() != ax.transData:
            continue
        box = t.get_window_extent(renderer)
        assert any(to_px((a / 1000, 0))[0] <= box.x0 and box.x1 <= to_px((b / 1000, 0))[0] for a, b in bars), text
    legend = legend_texts(fig)
    assert {"strip: classic worker", "strip: new-protocol worker"} <= set(legend)
    assert "abandoned (hung worker)" not in legend                 # none happened
    assert_darker_means_more(fig)


def _synthetic_connect(workers: int) -> dict:
    """A settled document with ``workers`` members (a real 200-worker run takes half a minute)."""
    names = [f"W{i}" for i in range(1, workers + 1)]
    members = {w: {"connectors": [f"C{i}"] if i % 2 else [], "tasks": [f"C{i}-1"], "member_epoch": 1}
               for i, w in enumerate(names, 1)}
    step = {"at_ms": 1_000, "event": "install", "worker": "W1", "group_epoch": 1, "assignment_epoch": 1,
            "members": members}
    return {"scenario": "custom", "protocol": "connect", "assignor": "incremental-cooperative",
            "group_epoch_start": 0, "group_epoch_end": 1, "ended_at_ms": 60_000, "revoked": [],
            "steps": [dict(step, at_ms=0, group_epoch=0, members={}), step]}


@pytest.mark.parametrize("workers", [40, 200])
def test_connect_rows_stay_readable_with_many_workers(plt, close, workers):
    fig = connect_figure(plt, _synthetic_connect(workers))
    close(fig)
    [ax] = fig.axes
    labels = tick_labels(ax)
    assert len(labels) <= MAX_TICK_LABELS
    assert_apart(labels)
    assert_inside_the_figure(fig)
    assert fig.get_figheight() < 20
