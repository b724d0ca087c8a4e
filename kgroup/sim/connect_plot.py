"""`kgroup simulate connect --plot`: the assignment over time, one row per worker.

``timeline`` reads a run's JSON document (``kgroup.sim.connect.run``) into what is drawn, so a test
can hold the picture to the run; ``plot_connect`` draws it with ``kgroup.sim.plot``'s file checks,
matplotlib loader and writer (matplotlib is imported only there, on use).
"""

from __future__ import annotations

from dataclasses import dataclass

from kgroup.sim.plot import natural_order, pyplot, save


@dataclass(frozen=True)
class ConnectTimeline:
    workers: list            # row order (natural: W2 before W10)
    bars: list               # (worker, start_ms, end_ms, items it runs: ("A", "A-1", ...))
    lifetimes: list          # (worker, from_ms, to_ms): while it is a member of the group
    revocations: list        # (at_ms, worker, items, cause): "revoked" or "abandoned"
    epoch_bumps: list        # (at_ms, new group epoch)
    end_ms: int


def _items(item_set: dict) -> tuple:
    return tuple(item_set["connectors"] + item_set["tasks"])


def seeded(params) -> dict:
    """What the seeded workers of ``params`` (ConnectParams) run at t=0: {W: items}. The document's
    steps start at the first event, so a seed is known only from the parameters."""
    from kgroup.coordinator.connect import item_set
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
                           revocations, bumps, end)


def plot_connect(document: dict, path: str, params=None) -> None:
    """Write the run's timeline to a PNG or SVG file (raises ``kgroup.sim.plot.PlotUnavailable``)."""
    plt = pyplot(path)
    data = timeline(document, params)
    rows = {w: i for i, w in enumerate(data.workers)}
    fig, ax = plt.subplots(figsize=(10, max(2.5, 1.4 + 0.45 * len(rows))))
    cmap = plt.get_cmap("viridis")
    most = max((len(items) for *_, items in data.bars), default=1) or 1
    for worker, start, stop in data.lifetimes:
        ax.plot([start / 1000, stop / 1000], [rows[worker] - 0.42] * 2, color="grey", linewidth=2)
    for worker, start, stop, items in data.bars:
        ax.broken_barh([(start / 1000, max(stop - start, 1) / 1000)], (rows[worker] - 0.32, 0.64),
                       facecolors=cmap(0.25 + 0.65 * len(items) / most), edgecolor="white")
        ax.text((start + stop) / 2000, rows[worker], " ".join(items), ha="center", va="center",
                fontsize=6, color="black", clip_on=True)
    for at, worker, items, cause in data.revocations:
        ax.plot(at / 1000, rows[worker] + 0.38, marker="v" if cause == "revoked" else "X",
                color="crimson", markersize=6)
    for at, epoch in data.epoch_bumps:
        ax.axvline(at / 1000, color="darkorange", linewidth=0.8, alpha=0.8)
        ax.text(at / 1000, len(rows) - 0.45, f" {epoch}", fontsize=6, color="darkorange")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(data.workers, fontsize=8)
    ax.set_ylim(-0.7, max(len(rows), 1) - 0.2)
    end = max(data.end_ms, 1) / 1000
    ax.set_xlim(-0.01 * end, 1.01 * end)
    ax.set_title(f"{document['scenario']} · connect · {document['assignor']}: group epoch "
                 f"{document['group_epoch_start']} → {document['group_epoch_end']}, "
                 f"{len(data.revocations)} revocation(s)", fontsize=9)
    ax.set_xlabel("virtual time (s)\nbar: the connectors and tasks a worker runs; grey line: a member of "
                  "the group;\norange line: group-epoch bump (new epoch on top); red ▼ revoked, ✕ abandoned",
                  fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    save(plt, fig, path)
