"""`simulate connect migration`: rolling Connect workers from the classic protocol to the draft's and back.

Every worker starts on the classic protocol (incremental cooperative, ``classic``);
``upgrade:W`` stops W as a classic worker (LeaveGroup) and starts it on the new protocol
(``cluster``, which sends the connector set before its join), ``downgrade:W`` the reverse.
Both kinds share one coordinator, whose group converts as ``kgroup.coordinator.connect.migration``
reads the draft: only once it is empty, the other protocol's workers being answered
GROUP_ID_NOT_FOUND meanwhile and trying again every heartbeat interval. The other worker actions
go to whichever protocol the worker runs now; ``join`` starts a classic worker.
"""

from __future__ import annotations

from kgroup.assignors.connect_classic import COOPERATIVE
from kgroup.coordinator import GroupCoordinator
from kgroup.coordinator.connect.protocol import connector_items, error_name, item_set
from kgroup.sim.connect.classic import ClassicCluster
from kgroup.sim.connect.cluster import GROUP, Cluster, due_times
from kgroup.sim.connect.params import ConnectParams
from kgroup.sim.connect.script import run_until_settled, schedule_events
from kgroup.sim.engine import counted_ids

CLASSIC, CONNECT = "classic", "connect"


class MigrationRun:
    def __init__(self, params: ConnectParams):
        timing = dict(delay_ms=params.scheduled_rebalance_max_delay_ms, session_timeout_ms=params.session_timeout_ms,
                      heartbeat_interval_ms=params.heartbeat_interval_ms,
                      rebalance_timeout_ms=params.rebalance_timeout_ms)
        self.coord = GroupCoordinator(config={"group.connect.session.timeout.ms": params.session_timeout_ms,
                                              "group.connect.heartbeat.interval.ms": params.heartbeat_interval_ms},
                                      uuid_source=counted_ids())
        self.classic = ClassicCluster(COOPERATIVE, dict(params.connectors), coord=self.coord, **timing)
        self.draft = Cluster(dict(params.connectors), versions=dict(params.assignor_versions), coord=self.coord,
                             **timing)
        # both kinds of worker log into this run's one list of steps, in the order things happen
        self.classic.step = self.draft.step = self.step
        self.protocol_of: dict = {}
        self.events: list = []
        self.steps: list = []      # (at, event, worker, group type, epoch, assignment epoch, members)
        self.now = 0

    # ---- the script ----------------------------------------------------------------------
    def at(self, ms: int, action: str, name: str | None = None, *args) -> None:
        self.events.append((ms, len(self.events), action, name, args))

    def _event(self, action: str, name: str | None, args) -> None:
        if action == "connectors":
            self.classic._event(action, None, args)
            self.draft._event(action, None, args)
        elif action in ("join", "upgrade", "downgrade"):
            if action != "join":
                self._cluster(name)._event("leave", name, ())
            self.protocol_of[name] = CONNECT if action == "upgrade" else CLASSIC
            self._cluster(name)._event("join", name, ())
        else:
            self._cluster(name)._event(action, name, args)

    def _cluster(self, name: str):
        return self.draft if self.protocol_of.get(name) == CONNECT else self.classic

    # ---- the clock -----------------------------------------------------------------------
    def next_time(self) -> int | None:
        times = [self.classic.next_time(), self.draft.next_time(), self.events[0][0] if self.events else None]
        return min((t for t in times if t is not None), default=None)

    def run(self, until: int) -> None:
        self.events.sort()
        for t in due_times(self, until):
            self.draft._advance(t)         # coordinator timers first: the draft side notices its removals
            self.now = t
            if self.events and self.events[0][0] <= t:
                _, _, action, name, args = self.events.pop(0)
                self._event(action, name, args)
                continue
            self.classic.run(t)
            self.draft.run(t)
        self.draft._advance(max(until, self.now))
        self.now = self.draft.now

    def settled(self) -> bool:
        group = self.coord.get_group(GROUP)
        if self.events or group is None:
            return False
        live_classic = any(w.state not in ("down", "hung") for w in self.classic.workers.values())
        live_new = any(w.state == "up" for w in self.draft.workers.values())
        if group.group_type == CLASSIC:
            return not live_new and self.classic.settled()
        return not live_classic and self.draft.settled()

    # ---- the log -------------------------------------------------------------------------
    def step(self, event: str, worker: str | None = None) -> None:
        group = self.coord.get_group(GROUP)
        kind = None if group is None else group.group_type
        if kind == CLASSIC:
            epoch = assignment_epoch = group.generation_id
        else:
            epoch, assignment_epoch = (None, None) if group is None else (group.group_epoch, group.assignment_epoch)
        self.steps.append((self.now, event, worker, kind, epoch, assignment_epoch, self._members(group)))

    def _members(self, group) -> dict:
        out = {}
        if group is not None and group.group_type == CLASSIC:
            for w in self.classic.workers.values():
                if w.member_id in group.members:
                    out[w.name] = {"protocol": CLASSIC, "member_epoch": w.generation, **item_set(w.running)}
        elif group is not None:
            for member_id, m in group.members.items():
                out[member_id] = {"protocol": CONNECT, "member_epoch": m.member_epoch,
                                  **item_set(self.draft.workers[member_id].running)}
        return dict(sorted(out.items()))


def run_migration(params: ConnectParams) -> dict:
    run = MigrationRun(params)
    settled_at = run_until_settled(run, params, schedule_events(run, params))
    return _document(params, run, settled_at)


def _document(params: ConnectParams, run: MigrationRun, settled_at: int | None) -> dict:
    steps = [{"at_ms": at, "event": event, "worker": worker, "group_type": kind, "group_epoch": epoch,
              "assignment_epoch": assignment_epoch, "members": members}
             for at, event, worker, kind, epoch, assignment_epoch, members in run.steps]
    conversions, bumps = [], 0
    for before, after in zip(steps, steps[1:]):
        if after["event"] == "converted":
            conversions.append({"at_ms": after["at_ms"], "worker": after["worker"], "from": before["group_type"],
                                "to": after["group_type"], "from_epoch": before["group_epoch"],
                                "group_epoch": after["group_epoch"]})
        if before["group_epoch"] is not None and after["group_epoch"] is not None:
            bumps += max(0, after["group_epoch"] - before["group_epoch"])
    final = steps[-1] if steps else {"group_type": None, "group_epoch": 0, "assignment_epoch": 0, "members": {}}
    members = {w: {k: v for k, v in m.items() if k != "protocol"} for w, m in final["members"].items()}
    running = frozenset(i for w in list(run.classic.workers.values()) + list(run.draft.workers.values())
                        for i in w.running)
    connectors = run.draft.connectors
    by_time = lambda entries: sorted(entries, key=lambda e: e[0])   # noqa: E731 - stable: equal times keep order
    return {
        "scenario": params.case, "protocol": "migration", "assignor": COOPERATIVE,
        "connectors": dict(params.connectors),
        "config": params.config(),
        "group_epoch_start": 0, "group_epoch_end": final["group_epoch"],
        "assignment_epoch_end": final["assignment_epoch"], "rebalances": bumps,
        "ended_at_ms": run.now, "settled_at_ms": settled_at,
        "conversions": conversions, "steps": steps,
        "revoked": [{"at_ms": at, "worker": w, **item_set(items), "cause": cause}
                    for at, w, items, cause in by_time(run.classic.revoked + run.draft.revoked)],
        "assigned": [{"at_ms": at, "worker": w, **item_set(items)}
                     for at, w, items in by_time(run.classic.assigned + run.draft.assigned)],
        "errors": [{"at_ms": at, "worker": w, "api": api, "error": error_name(code)}
                   for at, w, api, code in by_time(run.classic.errors + run.draft.errors)],
        "final": {"group_type": final["group_type"], "group_epoch": final["group_epoch"],
                  "assignment_epoch": final["assignment_epoch"], "members": members,
                  "target": {w: {"connectors": m["connectors"], "tasks": m["tasks"]} for w, m in members.items()},
                  "unassigned": item_set(connector_items(connectors) - running)},
    }
