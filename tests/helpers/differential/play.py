"""One scenario played on one side: the steps in order, then the final view. The result is an
observation: an ordered dict of field -> value, the fields named as the difference lines name them
(``step 3.wait``, ``cp1.members``, ``member a.callbacks``, ``records``, ...)."""

from __future__ import annotations

import time

from helpers.differential.clients import start_driver
from helpers.differential.observe import Observer
from helpers.kafka_groups import WAIT_SLACK

# A value that means the play itself went wrong (a step raised, a wait ran out): reported even when
# both sides agree, as the scenario then checks less than it says.
PROBLEM = "PROBLEM: "


class Play:
    def __init__(self, scenario, side):
        self.scenario, self.side = scenario, side
        self.fields: dict = {}
        self.drivers: dict = {}          # member name -> its current client
        self.history: dict = {m.name: [] for m in scenario.members}   # every client it has had
        self.partitions = dict(scenario.topics)
        self.observer = None

    def run(self) -> dict:
        started = time.monotonic()
        try:
            for topic, count in self.scenario.topics.items():
                self.side.create_topic(self.scenario.topic(topic), count)
            self.observer = Observer(self.side.bootstrap, self.scenario)
            for i, step in enumerate(self.scenario.steps):
                label = step.label or f"{i}.{step.kind}" + (f".{step.member}" if step.member else "")
                try:
                    value = getattr(self, "_" + step.kind)(step)
                except Exception as exc:  # noqa: BLE001 - the runner broke: the play stops here
                    self.fields[f"step {label}"] = f"{PROBLEM}step failed: {type(exc).__name__}: {exc}"
                    break
                if value is not None:
                    self.fields[f"step {label}"] = value
            self._final()
        finally:
            for drivers in self.history.values():
                for driver in drivers:
                    try:
                        driver.discard()
                    except Exception:  # noqa: BLE001
                        pass
            if self.observer is not None:
                self.observer.close()
        self.fields["_seconds"] = round(time.monotonic() - started, 1)
        return self.fields

    # -- steps -------------------------------------------------------------------------------------
    def _start(self, step):
        member = self.scenario.member(step.member)
        driver = start_driver(member, self.scenario, self.side.bootstrap, self.side.java_classpath)
        self.drivers[member.name] = driver
        self.history[member.name].append(driver)

    def _close(self, step):
        self.drivers[step.member].close()

    def _kill(self, step):
        self.drivers[step.member].kill()

    def _pause(self, step):
        self.drivers[step.member].pause()

    def _resume(self, step):
        self.drivers[step.member].resume()

    def _commit(self, step):
        return self.drivers[step.member].commit(step.args["offset"])

    def _subscribe(self, step):
        return self.drivers[step.member].subscribe(step.args["topics"])

    def _create_topic(self, step):
        self.side.create_topic(self.scenario.topic(step.args["topic"]), step.args["partitions"])
        self.partitions[step.args["topic"]] = step.args["partitions"]

    def _add_partitions(self, step):
        self.side.add_partitions(self.scenario.topic(step.args["topic"]), step.args["count"])
        self.partitions[step.args["topic"]] = step.args["count"]

    def _remove_members(self, step):
        return self.observer.remove_members(step.args["instance_ids"], step.args["reason"])

    def _delete_group(self, step):
        return self.observer.delete_group()

    def _delete_offsets(self, step):
        return self.observer.delete_offsets(step.args["topic"])

    def _reset_offsets(self, step):
        return self.observer.reset_offsets(step.args["topic"], step.args["offset"])

    def _sleep(self, step):
        time.sleep(step.args["seconds"])

    def _checkpoint(self, step):
        view = self.observer.describe()
        for key, value in view.items():
            self.fields[f"{step.label}.{key}"] = value
        self.fields[f"{step.label}.committed"] = self.observer.committed()

    def _wait_errors(self, step):
        driver = self.drivers[step.member]
        deadline = time.monotonic() + step.args["timeout"] * WAIT_SLACK
        while time.monotonic() < deadline:
            if driver.errors:
                return "ok"
            time.sleep(0.1)
        return f"{PROBLEM}timed out: no error"

    def _wait(self, step):
        """Until the state and member count hold, every running client holds what the broker
        assigned it, and every subscribed partition is assigned — twice in a row 0.3 s apart (a
        cooperative rebalance is Stable for a moment between its two rounds)."""
        want_state, want_members = step.args["state"], step.args["members"]
        deadline = time.monotonic() + step.args["timeout"] * WAIT_SLACK
        held, view = 0, None
        while time.monotonic() < deadline:
            try:
                view = self.observer.describe()
            except Exception:  # noqa: BLE001 - a coordinator moving / loading: ask again
                view = None
            if view is not None and self._settled(view, want_state, want_members,
                                                  step.args.get("assigned", ()),
                                                  step.args.get("complete", True),
                                                  step.args.get("everyone_subscribes", ())):
                held += 1
                if held == 2:
                    return "ok"
                time.sleep(0.3)
                continue
            held = 0
            time.sleep(0.2)
        if view is None:
            return f"{PROBLEM}timed out"
        return (f"{PROBLEM}timed out: state {view.get('state')}, "
                f"{len(view.get('members', []))} members")

    def _settled(self, view, want_state, want_members, topics=(), complete=True, everyone=()) -> bool:
        members = view.get("members", [])
        if view.get("state") != want_state or len(members) != want_members:
            return False
        by_client = {m["client_id"]: m for m in members}
        for name, driver in self.drivers.items():
            if not driver.running:
                continue
            m = by_client.get(name)
            if m is None:
                return False
            holds = sorted(f"{self.scenario.short(t)}-{p}" for t, p in driver.assignment)
            if holds != m.get("assignment"):
                return False
        if any(not set(everyone) <= set(m.get("subscription") or ()) for m in members):
            return False
        if not complete:
            return True
        subscribed = {t for m in members for t in (m.get("subscription") or [])} | set(topics)
        assigned = {p for m in members for p in m.get("assignment") or []}
        wanted = {f"{t}-{p}" for t in subscribed for p in range(self.partitions.get(t, 0))}
        return wanted <= assigned

    # -- the end -------------------------------------------------------------------------------------
    def _final(self):
        for name, drivers in self.history.items():
            events, errors = [], []
            for n, driver in enumerate(drivers):
                if n:
                    events.append(("restart", None))
                events.extend(e for e in driver.events if e[0] != "error")
                errors.extend(driver.errors)
            self.fields[f"member {name}.callbacks"] = events
            self.fields[f"member {name}.errors"] = errors
            current = self.drivers.get(name)
            if current is not None:
                self.fields[f"member {name}.final"] = sorted(
                    f"{self.scenario.short(t)}-{p}" for t, p in current.assignment)
        self.fields["final.describe"] = self.observer.describe()
        self.fields["final.committed"] = self.observer.committed()
        self.fields["records"] = self.observer.records()
