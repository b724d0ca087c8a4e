"""The Connect draft's case studies on the coordinator, with their exact assignments and epochs."""

from kgroup.sim.connect.cluster import Cluster

from kgroup.coordinator.connect.protocol import TaskId

A, B = "A", "B"
A1, A2, B1 = TaskId("A", 1), TaskId("A", 2), TaskId("B", 1)
ALL = frozenset({A, A1, A2, B, B1})


def items(*xs):
    return frozenset(xs)


def test_worker_joins():
    cluster = Cluster({"A": 2, "B": 1})
    assert cluster.group().group_epoch == 0
    cluster.at(0, "join", "W1")
    cluster.at(20_000, "join", "W2")
    cluster.run(20_000)
    group = cluster.group()
    assert cluster.targets[0][1:] == (1, "W1", {"W1": ALL})
    cluster.run(60_000)
    group = cluster.group()
    assert [t[1:3] for t in cluster.targets] == [(1, "W1"), (2, "W1")]
    assert cluster.targets[1][3] == {"W1": items(A, A1, A2), "W2": items(B, B1)}
    assert [(w, i) for _, w, i, _ in cluster.revoked] == [("W1", items(B, B1))]
    assert (group.group_epoch, group.assignment_epoch) == (2, 2)
    assert cluster.owned() == {"W1": (2, items(A, A1, A2)), "W2": (2, items(B, B1))}


def _seeded():
    cluster = Cluster({"A": 2, "B": 1})
    cluster.seed(35, {"W1": {A, A1}, "W2": {B, B1}, "W3": {A2}}, assigner="W3")
    return cluster


def test_worker_leaves():
    cluster = _seeded()
    cluster.at(1_000, "crash", "W2")
    cluster.run(100_000)
    group = cluster.group()
    assert group.group_epoch == 36
    at, epoch, assigner, target = cluster.targets[0]
    assert (epoch, assigner, target) == (36, "W3", {"W1": items(A, A1), "W3": items(A2)})
    assert cluster.owned() == {"W1": (36, items(A, A1)), "W3": (36, items(A2))}
    assert at == 12_000                    # W3's first heartbeat after W2's session expired at 10 000
    expired_at = 10_000
    cluster.run(expired_at + 300_000 - 1)
    assert len(cluster.targets) == 1 and not any(B in w.running for w in cluster.workers.values())
    cluster.run(expired_at + 300_000 + 3 * 3_000)
    at37, epoch, assigner, target = cluster.targets[1]
    assert (epoch, assigner) == (37, "W3") and at37 >= expired_at + 300_000
    assert target["W1"] >= items(A, A1) and target["W3"] >= items(A2)
    assert len(target["W1"] & items(B, B1)) == 1 and len(target["W3"] & items(B, B1)) == 1
    assert target == {"W1": items(A, A1, B1), "W3": items(A2, B)}     # the assignor's choice
    assert cluster.owned() == {"W1": (37, items(A, A1, B1)), "W3": (37, items(A2, B))}
    assert [r for r in cluster.revoked if r[3] == "revoked"] == []
    assert cluster.group().group_epoch == 37 and len(cluster.targets) == 2


def _bounce(variant):
    cluster = _seeded()
    cluster.at(1_000, "hang" if variant == "resume" else "crash", "W2")
    cluster.at(60_000, "resume" if variant == "resume" else "restart", "W2")
    cluster.run(59_999)
    assert cluster.group().group_epoch == 36
    assert cluster.targets[0][1:] == (36, "W3", {"W1": items(A, A1), "W3": items(A2)})
    assert cluster.group().unassigned.connectors == ("B",)
    cluster.run(60_000 + 3 * 3_000)
    assert cluster.workers["W2"].running == items(B, B1)
    cluster.run(400_000)
    assert [t[1:] for t in cluster.targets[1:]] == [
        (37, "W3", {"W1": items(A, A1), "W2": items(B, B1), "W3": items(A2)})]
    assert cluster.targets[1][0] == 60_000
    assert cluster.owned() == {"W1": (37, items(A, A1)), "W2": (37, items(B, B1)), "W3": (37, items(A2))}
    assert cluster.group().group_epoch == 37
    assert not [r for r in cluster.revoked if r[1] != "W2"]
    return cluster


def test_worker_bounce_resume():
    cluster = _bounce("resume")
    assert [(at, w, api, code) for at, w, api, code in cluster.errors] == [
        (60_000, "W2", "ConnectGroupHeartbeat", 25)]


def test_worker_bounce_epoch_zero():
    cluster = _bounce("restart")
    assert cluster.errors == []


def test_assigner_selection():
    from kgroup.coordinator.connect.protocol import ConnectGroupHeartbeatRequest, Assignor
    cluster = Cluster({"A": 2, "B": 1}, versions={"W1": (1, 5), "W2": (3, 4), "W3": (2, 4), "W4": (6, 7)})
    cluster.at(0, "join", "W2")
    cluster.at(10_000, "join", "W3")
    cluster.at(20_000, "join", "W1")
    cluster.run(29_999)
    reply = cluster.coord.handle(ConnectGroupHeartbeatRequest(
        "cc", "W4", 0, None, 60_000, None, [Assignor("incremental-cooperative", 6, 7, 0, 7)])).response
    assert reply.error_code == 112
    cluster.run(60_000)
    assert [t[1:3] for t in cluster.targets] == [(1, "W2"), (2, "W3"), (3, "W1")]
    assert cluster.targets[2][3] == {"W1": items(A2), "W2": items(A, A1), "W3": items(B, B1)}
    group = cluster.group()
    assert group.group_epoch == 3 and [m.member_id for m in group.members] == ["W2", "W3", "W1"]
    assert {w: e for w, (e, _) in cluster.owned().items()} == {"W1": 3, "W2": 3, "W3": 3}


def test_connector_change():
    cluster = Cluster({"A": 2, "B": 1})
    cluster.at(0, "join", "W1")
    cluster.at(5_000, "join", "W2")
    cluster.at(30_000, "connectors", None, {"A": 2, "B": 1, "C": 1})
    cluster.at(60_000, "connectors", None, {"A": 2, "C": 1})
    cluster.run(29_999)
    assert cluster.owned() == {"W1": (2, items(A, A1, A2)), "W2": (2, items(B, B1))}
    revoked_before = len(cluster.revoked)
    cluster.run(59_999)
    C, C1 = "C", TaskId("C", 1)
    assert cluster.group().group_epoch == 3
    assert len(cluster.revoked) == revoked_before
    assert cluster.owned() == {"W1": (3, items(A, A1, A2)), "W2": (3, items(B, B1, C, C1))}
    cluster.run(100_000)
    assert [(w, i) for _, w, i, _ in cluster.revoked[revoked_before:]] == [("W2", items(B, B1))]
    assert cluster.owned() == {"W1": (4, items(A, A1, A2)), "W2": (4, items(C, C1))}
    assert cluster.group().group_epoch == 4 and cluster.group().state == "Stable"
