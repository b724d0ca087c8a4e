"""kgroup against three real Kafka 4.4 brokers: groups whose coordinators live on different brokers,
and a coordinator that moves because its broker stops — while `wait` polls, and in the middle of
`describe` and `remove-members` (the broker is stopped just before the request reaches it).

``__consumer_offsets`` has three replicas in the ``kafka3`` cluster, so when a broker stops (SIGTERM:
a controlled shutdown) its coordinators move to the others, which load the groups from the log.
Node 1 is the controller and is never stopped. Every node stopped here is started again before the
module ends.
"""

from __future__ import annotations

import json
import threading

import pytest
from click.testing import CliRunner

from helpers.kafka_groups import PythonMember, RdkafkaMember, close_all, create_topic, produce, wait_for
from kgroup.client.wire import ClusterClient
from kgroup.commands.cli import cli

LEAVE_GROUP, DESCRIBE_GROUPS, CONSUMER_GROUP_DESCRIBE = 13, 15, 69


_restarts: list[threading.Thread] = []


@pytest.fixture(scope="module")
def cluster(kafka3):
    """The three brokers; on the way out every stopped node is started again and registered."""
    yield kafka3
    all_brokers_back(kafka3)


def restart_later(cluster, node_id: int) -> None:
    """Start a stopped node again in the background (a JVM takes seconds); all_brokers_back waits."""
    def start():
        node = cluster.node(node_id)
        node.start()
        node.wait_listening()
    thread = threading.Thread(target=start, daemon=True)
    thread.start()
    _restarts.append(thread)


def all_brokers_back(cluster) -> None:
    while _restarts:
        _restarts.pop().join(120)
    stopped = [n for n in cluster.nodes if n.process is None]
    for node in stopped:
        node.start()
    for node in stopped:
        node.wait_listening()
    cluster.wait_brokers(len(cluster.nodes))


def create_replicated_topic(bootstrap: str, topic: str, partitions: int) -> None:
    """A topic on all three brokers, readable whichever of them stops."""
    create_topic(bootstrap, topic, partitions, replicas=3)


def coordinator_of(cluster, group: str) -> int:
    with ClusterClient(cluster.bootstrap, timeout_s=30) as client:
        return client.find_coordinator(group).node_id


def groups_on(cluster, prefix: str, nodes, count: int = 1) -> dict[int, list[str]]:
    """node id -> `count` group ids (`prefix-N`) whose coordinator that broker is now: FindCoordinator
    asked for candidates until every node in `nodes` has them."""
    found: dict[int, list[str]] = {n: [] for n in nodes}
    with ClusterClient(cluster.bootstrap, timeout_s=30) as client:
        for i in range(300):
            group = f"{prefix}-{i}"
            node = client.find_coordinator(group).node_id
            if node in found and len(found[node]) < count:
                found[node].append(group)
            if all(len(groups) == count for groups in found.values()):
                return found
    raise AssertionError(f"not {count} group id(s) {prefix}-N led by each of {sorted(nodes)}: {found}")


def kgroup(cluster, *args, status=0):
    result = CliRunner().invoke(cli, [*args, "--bootstrap-server", cluster.bootstrap, "--timeout", "40"])
    assert "Traceback" not in result.stderr, result.stderr
    assert result.exit_code == status, (args, result.exit_code, result.stdout, result.stderr)
    return result


def kgroup_json(cluster, *args, status=0):
    return json.loads(kgroup(cluster, *args, "-o", "json", status=status).stdout)


def stop_before(monkeypatch, cluster, node_id: int, api_keys) -> list:
    """Stop broker `node_id` (a controlled shutdown, waited for) the first time kgroup is about to
    send it a request of one of `api_keys` — after FindCoordinator named it the coordinator, before
    the request reaches it. The intercepted request is appended to the list returned."""
    real_send = ClusterClient.send
    hit: list = []

    def send(self, request, node_id=None, what="request"):
        if not hit and node_id == target and request.API_KEY in api_keys:
            hit.append(request)
            cluster.node(target).stop()
        return real_send(self, request, node_id=node_id, what=what)

    target = node_id
    monkeypatch.setattr(ClusterClient, "send", send)
    return hit


# -- groups on every coordinator ------------------------------------------------------------------

def test_list_describe_and_remove_members_across_every_coordinator(cluster):
    """One group per broker — a kafka-python classic group, a librdkafka KIP-848 consumer group and a
    librdkafka classic group — listed, described and emptied by kgroup, each from its own
    coordinator, as Kafka's kafka-consumer-groups.sh names them."""
    topic = "c3-spread"
    create_replicated_topic(cluster.bootstrap, topic, 3)
    produce(cluster.bootstrap, topic, {0: 4, 1: 4, 2: 4})
    on = {node: groups[0] for node, groups in sorted(groups_on(cluster, "c3-spread", {1, 2, 3}).items())}
    kinds = {on[1]: ("classic", "py-1"), on[2]: ("consumer", "rdk-1"), on[3]: ("classic", "rdk-2")}
    members = [PythonMember(cluster.bootstrap, on[1], [topic], "py-1"),
               RdkafkaMember(cluster.bootstrap, on[2], [topic], "rdk-1", protocol="consumer"),
               RdkafkaMember(cluster.bootstrap, on[3], [topic], "rdk-2", protocol="classic")]
    everything = {(topic, p) for p in range(3)}
    try:
        for member in members:
            wait_for(lambda: member.assignment == everything, 60, f"{member.instance_id} owning {topic}")
        listed = {row["group"]: row for row in kgroup_json(cluster, "list")}
        for node, group in on.items():
            assert listed[group]["coordinator"]["id"] == node
            assert listed[group]["type"] == kinds[group][0]
            assert listed[group]["state"] == "Stable"

        described = kgroup_json(cluster, "describe", *on.values(), "--offsets")
        assert [view["group"] for view in described] == list(on.values())
        for node, view in zip(on, described):
            assert view["error"] is None
            assert view["coordinator"]["id"] == node
            assert view["coordinator"]["port"] == cluster.node(node).port
            assert view["type"] == kinds[view["group"]][0]
            assert [m["group_instance_id"] for m in view["members"]] == [kinds[view["group"]][1]]
            assert view["members"][0]["assignment"] == [{"topic": topic, "partitions": [0, 1, 2]}]

        # Kafka's own tool names the same coordinators: "127.0.0.1:PORT  (ID)"
        state = cluster.tool("kafka-consumer-groups", "--bootstrap-server", cluster.bootstrap, "--describe",
                             "--state", *(arg for g in on.values() for arg in ("--group", g))).stdout
        rows = {line.split()[0]: line.split() for line in state.splitlines()
                if line.split() and line.split()[0] in kinds}
        for node, group in on.items():
            assert f"127.0.0.1:{cluster.node(node).port}" in rows[group] and f"({node})" in rows[group]

        for node, group in on.items():
            removed = kgroup_json(cluster, "remove-members", group, "--instance-id", kinds[group][1])
            assert (removed["removed"], removed["failed"]) == (1, 0)
            assert removed["results"] == [{"group_instance_id": kinds[group][1], "member_id": None,
                                           "error": None}]
    finally:
        close_all(members)
    for group in on.values():
        kgroup(cluster, "wait", group, "--state", "Empty")


# -- a coordinator moving --------------------------------------------------------------------------

def test_wait_keeps_polling_while_the_coordinator_moves_to_another_broker(cluster):
    """`wait --state Stable` on an Empty group whose coordinator's broker stops: the wait rides out
    NOT_COORDINATOR, the vanished broker and the new coordinator loading the group, and succeeds when
    a member joins on the new coordinator."""
    from kgroup.client.waiting import wait_for_state

    topic = "c3-wait"
    create_replicated_topic(cluster.bootstrap, topic, 2)
    (group,) = groups_on(cluster, "c3-wait", {2})[2]
    # An Empty group that never had a member (its offsets committed): a group emptied by a leave could
    # come back Stable with the departed member for a moment, because the new coordinator serves
    # reads at its high watermark, which trails the old leader's until the followers fetch again.
    kgroup(cluster, "reset-offsets", group, "--topic", topic, "--to-earliest", "--execute")
    kgroup(cluster, "wait", group, "--state", "Empty")

    polls, outcome = [], {}

    def run():
        try:
            with ClusterClient(cluster.bootstrap, timeout_s=60, refused_at_once=False) as client:
                outcome["view"] = wait_for_state(client, group, "Stable", 60, interval_s=0.2,
                                                 on_poll=lambda view, _elapsed: polls.append(view))
        except Exception as exc:  # noqa: BLE001 - the test asserts there was none
            outcome["error"] = exc

    waiter = threading.Thread(target=run, daemon=True)
    waiter.start()
    wait_for(lambda: len(polls) >= 2, 30, "the wait polling")
    cluster.node(2).stop()
    try:
        polled_before = len(polls)
        moved = coordinator_of(cluster, group)
        assert moved in (1, 3)
        wait_for(lambda: len(polls) > polled_before + 2 or not waiter.is_alive(), 30, "polls after the stop")
        assert waiter.is_alive(), (outcome, [(v.state, v.coordinator and v.coordinator.node_id, [m.member_id for m in v.members]) for v in polls])
        second = RdkafkaMember(cluster.bootstrap, group, [topic], "w-2", protocol="classic")
        try:
            waiter.join(60)
        finally:
            second.close()
    finally:
        restart_later(cluster, 2)
    assert "error" not in outcome, outcome["error"]
    view = outcome["view"]
    assert (view.state, view.coordinator.node_id) == ("Stable", moved)
    assert [m.group_instance_id for m in view.members] == ["w-2"]


def test_describe_while_the_coordinator_moves(cluster, monkeypatch):
    """The coordinator's broker stops after FindCoordinator named it and before ConsumerGroupDescribe
    reaches it: describe finds the new coordinator for both of its groups (a KIP-848 consumer group
    and a classic one) and describes them there, members and all."""
    topic = "c3-mid-describe"
    create_replicated_topic(cluster.bootstrap, topic, 2)
    consumer_group, classic_group = groups_on(cluster, "c3-mid-describe", {3}, count=2)[3]
    members = [RdkafkaMember(cluster.bootstrap, consumer_group, [topic], "d-1", protocol="consumer"),
               # a session that outlasts a slow controlled shutdown and the group's load elsewhere
               PythonMember(cluster.bootstrap, classic_group, [topic], "d-2", session_timeout_ms=30000)]
    try:
        for member in members:
            wait_for(lambda: len(member.assignment) == 2, 60, f"{member.instance_id} owning {topic}")
        hit = stop_before(monkeypatch, cluster, 3, {CONSUMER_GROUP_DESCRIBE, DESCRIBE_GROUPS})
        try:
            # the describe requests alone, as before describe fetched offsets by default: the move is the point
            described = kgroup_json(cluster, "describe", consumer_group, classic_group, "--no-offsets")
        finally:
            restart_later(cluster, 3)
        assert hit, "the broker was not stopped in the middle of the describe"
        assert [(v["group"], v["type"], v["error"]) for v in described] == [
            (consumer_group, "consumer", None), (classic_group, "classic", None)]
        for view, instance in zip(described, ("d-1", "d-2")):
            assert view["coordinator"]["id"] != 3
            if not view["members"] and view["type"] == "classic":
                # Seen once in CI: the classic group answered at its new coordinator without its
                # member (cause not found). A describe a moment later must show it.
                def again(group=view["group"], instance=instance):
                    (later,) = kgroup_json(cluster, "describe", group, "--no-offsets")
                    return [m["group_instance_id"] for m in later["members"]] == [instance]
                wait_for(again, 30, f"{instance} in {view['group']} at its new coordinator")
                continue
            assert [m["group_instance_id"] for m in view["members"]] == [instance]
    finally:
        close_all(members)


def test_remove_members_while_the_coordinator_moves(cluster, monkeypatch):
    """The coordinator's broker stops just before LeaveGroup reaches it: remove-members finds the new
    coordinator, which loaded the group with its static member, and removes it there."""
    all_brokers_back(cluster)
    topic = "c3-mid-leave"
    create_replicated_topic(cluster.bootstrap, topic, 2)
    # restarted brokers lead nothing until the preferred leader election gives their partitions back
    on = wait_for(lambda: _some_group_off_the_controller(cluster, "c3-mid-leave"), 60,
                  "a coordinator on broker 2 or 3 again")
    node, group = on
    member = PythonMember(cluster.bootstrap, group, [topic], "l-1")
    try:
        wait_for(lambda: len(member.assignment) == 2, 60, "l-1 owning the topic")
        hit = stop_before(monkeypatch, cluster, node, {LEAVE_GROUP})
        try:
            removed = kgroup_json(cluster, "remove-members", group, "--instance-id", "l-1")
        finally:
            restart_later(cluster, node)
        assert hit, "the broker was not stopped before LeaveGroup"
        assert removed["results"] == [{"group_instance_id": "l-1", "member_id": None, "error": None}]
        assert (removed["removed"], removed["failed"]) == (1, 0)
        assert coordinator_of(cluster, group) != node
    finally:
        member.close()


def _some_group_off_the_controller(cluster, prefix):
    with ClusterClient(cluster.bootstrap, timeout_s=30) as client:
        for i in range(100):
            node = client.find_coordinator(f"{prefix}-{i}").node_id
            if node != 1:
                return node, f"{prefix}-{i}"
    return None
