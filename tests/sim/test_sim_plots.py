"""What a reader of `kgroup simulate --plot` and `kgroup simulate connect --plot` meets, held to
structure rather than pixels: every text inside the figure and clear of its neighbours, row labels a
readable subset at 200 members, a legend that says how the shades run (darker: more), the protocol
strip of the Connect migration, a member that never rejoined, and bars drawn as one collection (a
200-member plot in seconds, not minutes). Above 50 members `kgroup simulate --plot` draws the group
as a whole (``fleet_series``, ``fleet_plot``): its series are the run's data, its work grows with the
run's length, not with its square."""

import sys
import time

import pytest

pytest.importorskip("matplotlib")

from kgroup.sim.connect.simulation import run as connect_run                       # noqa: E402
from kgroup.sim.connect.params import resolve                          # noqa: E402
from kgroup.sim.connect.plot import connect_figure, timeline           # noqa: E402
from kgroup.sim.fleet_plot import stairs                               # noqa: E402
from kgroup.sim.fleet_series import (AGGREGATE_ABOVE_MEMBERS, fleet_series, members_down,  # noqa: E402
                                     steps, uses_aggregate)
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
    assert_no_text_overlaps(fig)
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


def assert_no_text_overlaps(fig):
    """No two texts drawn in the figure overlap (ticks, lane names, titles, legend, bar labels)."""
    boxes = [(t.get_text(), e) for t, e in texts(fig)]
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1:]:
            assert not box_a.overlaps(box_b), (a, b)


def test_the_rows_view_at_200_members_draws_every_row_and_labels_a_readable_subset(plt, close):
    """The rows view (the aggregate one is the default at 200 members; Connect's plot uses these
    rules at 200 workers)."""
    result = run_scenario("rolling-bounce", SimParams(members=200, topics=(("t", 600),)))
    fig = timeline_figure(plt, [result], view="rows")
    close(fig)
    [ax] = fig.axes
    labels = tick_labels(ax)
    assert 10 <= len(labels) <= MAX_TICK_LABELS
    assert [text for text, _ in labels][:3] == ["c0", "c5", "c10"]   # every k-th row, k a round number
    assert_apart(labels)
    assert_inside_the_figure(fig)
    assert ax.get_ylim()[1] > 199                                     # all 200 rows, none sampled away
    assert fig.get_figheight() < 20
    assert "row names: every 5th row" in legend_texts(fig)            # the thinning is said


def test_at_50_members_every_row_is_named_and_no_text_overlaps(plt, close):
    result = run_scenario("upgrade-protocol", SimParams(members=AGGREGATE_ABOVE_MEMBERS, topics=(("t", 150),)))
    fig = timeline_figure(plt, [result])
    close(fig)
    [ax] = fig.axes                                                   # the rows view: one panel
    assert [text for text, _ in tick_labels(ax)] == [f"c{i}" for i in range(AGGREGATE_ABOVE_MEMBERS)]
    assert not any(text.startswith("row names") for text in legend_texts(fig))
    assert_no_text_overlaps(fig)
    assert_inside_the_figure(fig)
    assert_bar_labels_clear_of_markers(ax)


def assert_bar_labels_clear_of_markers(ax):
    """A partition count written on a bar keeps clear of the start and stop markers at its ends."""
    renderer = ax.figure.canvas.get_renderer()
    labels = [t.get_window_extent(renderer) for t in ax.texts if t.get_text().isdigit()]
    assert labels
    for line in ax.lines:
        if line.get_marker() in ("None", None, ""):
            continue
        half = line.get_markersize() * ax.figure.dpi / 72 / 2
        for x, y in ax.transData.transform(line.get_xydata()):
            for box in labels:
                assert not (box.x0 - half < x < box.x1 + half and box.y0 < y < box.y1), (line.get_marker(), x, y)

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
    fig = timeline_figure(plt, [result], view="rows")
    fig.savefig(tmp_path / "big.png", dpi="figure")
    elapsed = time.perf_counter() - started
    close(fig)
    [ax] = fig.axes
    assert len(ax.patches) == 0 and len(ax.collections) <= 6        # not a collection per bar
    assert len(tick_labels(ax)) <= MAX_TICK_LABELS
    assert elapsed < 30, elapsed                  # some 3 s on one core; a call per bar took minutes


# ---- the aggregate view: above 50 members -------------------------------------------------------
def _fleet(members: int, restoring: bool = False, noise: int = 3) -> SimResult:
    """A rolling bounce's shape, built by hand: member k stops at k s (its 3 partitions unowned
    until 0.7 s later), starts again 0.6 s after its stop; ``noise`` other events per member (what a
    real log holds most of: "joined", "synced")."""
    intervals, events = Intervals(), EventLog()
    unowned, restoring_steps = [(0, 0)], []
    for m in range(members):
        t = m * 1000
        intervals.append(f"c{m}", 0, t, 3)
        events.append(t, "stop", f"c{m}", {})
        events.append(t + 1, "group-state", None, {"state": "PreparingRebalance", "generation": m + 2})
        for k in range(noise):
            events.append(t + 2 + k, "joined", f"c{(m + k) % members}", {"generation": m + 2})
        events.append(t + 600, "start", f"c{m}", {"static": False})
        unowned += [(t, 3), (t + 700, 0)]
        if restoring:
            restoring_steps += [(t + 700, 3), (t + 900, 0)]
    return SimResult(scenario="rolling-bounce", membership="dynamic", assignor="range", members=members,
                     partitions=3 * members, rebalances=members, generation_start=1,
                     generation_end=members + 1, partitions_moved=3 * members, unowned_partition_seconds=2.1,
                     time_to_stable_ms=members * 1000, longest_stop_ms=600, settled=True, events=events,
                     intervals=intervals, rebalance_times=[m * 1000 + 1 for m in range(members)],
                     duration_ms=members * 1000, members_start=members, unowned_steps=steps(unowned),
                     restoring_steps=restoring_steps)


def test_the_aggregate_view_is_chosen_above_50_members(plt, close):
    assert not uses_aggregate([3, AGGREGATE_ABOVE_MEMBERS]) and uses_aggregate([3, AGGREGATE_ABOVE_MEMBERS + 1])
    rows = timeline_figure(plt, [_fleet(AGGREGATE_ABOVE_MEMBERS)])
    fleet = timeline_figure(plt, [_fleet(AGGREGATE_ABOVE_MEMBERS + 1)])
    compared = timeline_figure(plt, [_fleet(3), _fleet(AGGREGATE_ABOVE_MEMBERS + 1)])
    for fig in (rows, fleet, compared):
        close(fig)
    assert len(rows.axes) == 1                                   # a row per member
    assert len(fleet.axes) == 3                                  # partitions, members down, rebalances
    assert len(compared.axes) == 6                               # both variants in the aggregate view
    assert [ax.get_ylabel().split("\npeak")[0] for ax in fleet.axes] == [
        "partitions\nwithout an owner", "members down", "rebalances"]


def test_the_fleet_series_are_the_runs_data():
    result = _fleet(60, restoring=True)
    data = fleet_series(result)
    assert data.unowned == result.unowned_steps                  # as the ledger recorded them
    assert data.restoring == result.restoring_steps
    # from 0 at the start; member 0's stop at 0 ms is the first value
    assert data.down == [p for m in range(60) for p in ((m * 1000, 1), (m * 1000 + 600, 0))]
    assert data.rebalances == [("classic", m * 1000 + 1) for m in range(60)]
    assert data.duration_ms == 60_000 and data.partitions == 180


def test_members_down_counts_overlapping_stops_and_fatal_errors():
    events = EventLog()
    for t, kind, member in [(0, "stop", "a"), (5, "crash", "b"), (5, "joined", "c"), (9, "start", "a"),
                            (12, "start", "b"), (12, "failed", "b"), (20, "stop", "c"), (20, "start", "c"),
                            (30, "fenced", "a")]:
        events.append(t, kind, member, {})
    # b restarts and fails at once (down at 12 still), c's stop and restart share a time: no step
    assert members_down(events) == [(0, 1), (5, 2), (9, 1), (30, 2)]


def test_steps_keep_the_last_value_at_a_time_and_drop_repeats():
    assert steps([(0, 3), (4, 0), (6, 3), (9, 3), (9, 6), (9, 3), (12, 0)]) == [(0, 3), (4, 0), (6, 3), (12, 0)]


def test_the_drawn_series_are_the_fleet_series(plt, close):
    result = _fleet(60, restoring=True)
    fig = timeline_figure(plt, [result])
    close(fig)
    data = fleet_series(result)
    drawn = {patch.get_gid(): patch.get_data() for ax in fig.axes for patch in ax.patches}
    for gid, series in (("unowned", data.unowned), ("restoring", data.restoring), ("down", data.down)):
        values, edges = stairs(series, data.end_ms)
        assert list(drawn[gid].values) == values and list(drawn[gid].edges) == edges
    [ticks] = [c for ax in fig.axes for c in ax.collections if c.get_gid() == "classic"]
    assert [seg[0][0] for seg in ticks.get_segments()] == [t / 1000 for _, t in data.rebalances]
    assert "partitions owned, still restoring state" in legend_texts(fig)
    without = timeline_figure(plt, [_fleet(60)])
    close(without)
    assert "restoring" not in {p.get_gid() for ax in without.axes for p in ax.patches}
    assert not any("restoring" in text for text in legend_texts(without))


def test_a_restore_that_outlasts_the_run_extends_the_time_axis(plt, close):
    from dataclasses import replace

    result = _fleet(60, restoring=True)
    result = replace(result, restoring_steps=result.restoring_steps + [(65_000, 2), (70_000, 0)])
    data = fleet_series(result)
    assert data.duration_ms == 60_000 and data.end_ms == 70_000
    fig = timeline_figure(plt, [result])
    close(fig)
    assert fig.axes[0].get_xlim()[1] >= 70
    [restoring] = [p for ax in fig.axes for p in ax.patches if p.get_gid() == "restoring"]
    assert restoring.get_data().edges[-1] == 70
    assert [ax.get_ylabel() for ax in fig.axes][:2] == ["partitions\nwithout an owner\npeak 3",
                                                        "partitions\nstill restoring\npeak 3"]


def test_a_fleet_compare_shares_time_and_scale_and_keeps_its_texts_apart(plt, close):
    small, large = _fleet(60), _fleet(80)
    fig = timeline_figure(plt, [small, large])
    close(fig)
    assert_inside_the_figure(fig)
    assert_no_text_overlaps(fig)
    top = [ax for ax in fig.axes if ax.get_ylabel().startswith("partitions\nwithout")]
    assert len(top) == 2 and top[0].get_ylim() == top[1].get_ylim()     # one scale: variants compare
    assert {ax.get_xlim() for ax in fig.axes} == {fig.axes[0].get_xlim()}
    assert fig.axes[0].get_xlim()[1] >= 80                               # the longer run's end
    assert all("members" in ax.get_title() for ax in top)


def test_the_fleet_svg_names_every_series(tmp_path):
    from kgroup.sim.plot import plot_timeline

    target = tmp_path / "fleet.svg"
    plot_timeline([_fleet(60, restoring=True)], str(target))
    import re

    written = " | ".join(re.findall(r"<!-- (.*?) -->", target.read_text()))   # each text, as drawn
    for label in ("partitions without an owner (of 180)", "partitions owned, still restoring state",
                  "members down (stopped, crashed, fenced or failed)", "rebalance begins (classic)",
                  "rebalances", "without an owner", "still restoring", "peak 3", "a row per consumer up to 50",
                  "virtual time since the scenario started (s)"):
        assert label in written, label


def test_help_man_page_and_docs_state_where_the_aggregate_view_begins():
    from pathlib import Path

    from click.testing import CliRunner

    from kgroup.commands.cli import cli

    root = Path(__file__).resolve().parents[2]
    help_text = " ".join(CliRunner().invoke(cli, ["simulate", "--help"]).output.split())
    threshold = str(AGGREGATE_ABOVE_MEMBERS)
    assert f"up to {threshold} consumers a row each" in help_text and f"above {threshold} the group" in help_text
    page = " ".join((root / "man" / "kgroup-simulate.1").read_text().split())
    assert f"Above {threshold} consumers" in page and f"Up to {threshold} consumers" in page
    docs = " ".join((root / "docs" / "simulate.md").read_text().split())
    assert f"Above {threshold} consumers" in docs and f"Up to {threshold} consumers" in docs


def _lines_run(work, *args) -> int:
    """Lines of kgroup.sim executed by ``work(*args)``: its work, counted, not timed."""
    count = 0

    def local(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
        return local

    def calls(frame, event, arg):
        return local if "kgroup" in frame.f_code.co_filename and "sim" in frame.f_code.co_filename else None

    sys.settrace(calls)
    try:
        work(*args)
    finally:
        sys.settrace(None)
    return count


def test_building_a_fleets_series_grows_with_the_run_not_its_square():
    from kgroup.sim.plot import _names

    def build(result):
        fleet_series(result)
        _names(result)

    small, large = _fleet(60, noise=10), _fleet(240, noise=10)     # four times the members and events
    ratio = _lines_run(build, large) / _lines_run(build, small)
    assert ratio < 4.5, ratio                                      # linear: 4; quadratic: 16


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
