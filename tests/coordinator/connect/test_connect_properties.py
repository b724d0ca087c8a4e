"""Properties of Connect worker groups under random joins, departures and connector changes:
no task ever runs on two workers at once, and every task eventually runs."""

from kgroup.sim.connect.cluster import Cluster
from hypothesis import given, settings, strategies as st

from kgroup.coordinator.connect.protocol import connector_items

WORKERS = ["W1", "W2", "W3", "W4"]
DELAY = 20_000

events = st.lists(st.tuples(st.integers(0, 120_000),
                            st.sampled_from(["join", "leave", "crash", "connectors"]),
                            st.sampled_from(WORKERS),
                            st.dictionaries(st.sampled_from("ABC"), st.integers(0, 3), min_size=1)),
                  max_size=12)


@settings(max_examples=40, deadline=None)
@given(events=events)
def test_no_task_on_two_workers_and_every_task_eventually_runs(events):
    cluster = Cluster({"A": 2, "B": 1}, delay_ms=DELAY)
    cluster.at(0, "join", "W1")
    up = {"W1"}
    connectors = {"A": 2, "B": 1}
    for at, action, worker, new_connectors in sorted(events, key=lambda e: e[0]):
        if action == "connectors":
            cluster.at(at, "connectors", None, new_connectors)
            connectors = new_connectors
        elif action == "join" and worker not in up:
            cluster.at(at, "join", worker)
            up.add(worker)
        elif action in ("leave", "crash") and worker in up and len(up) > 1:
            cluster.at(at, action, worker)
            up.discard(worker)
    cluster.run(120_000 + DELAY + 60_000)       # checks both invariants at every heartbeat
    running = set()
    for worker in cluster.workers.values():
        running |= worker.running
    assert running == connector_items(connectors)
    group = cluster.group()
    assert group.state == "Stable" and group.assignment_epoch == group.group_epoch
