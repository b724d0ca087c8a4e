"""The classic-group scenarios (JoinGroup/SyncGroup/Heartbeat/LeaveGroup, admin requests): data only.
Each says what it checks; where Kafka itself is not deterministic a Tolerance names the field and why.

Members start one at a time with a wait in between (members joining at once make the number of
generations depend on arrival order, on Kafka as on kgroup). Sessions are short (3 s; 500 ms is the
brokers' minimum) so expiries happen within seconds; a static member that must survive a bounce gets
a longer one.
"""

from __future__ import annotations

from helpers.differential.scenario import (Member, Scenario, Tolerance, add_partitions, checkpoint,
                                           close, commit, create_topic, delete_group, delete_offsets,
                                           kill, pause, remove_members, reset_offsets, sleep,
                                           start, subscribe, wait_empty, wait_errors, wait_stable)

PY, RDK, JAVA = "kafka-python", "rdkafka-classic", "java-classic"
FAST_METADATA = {"metadata_max_age_ms": 1000}          # kafka-python sees new partitions within 1 s
# The member that must outlive another's short session: kafka-python heartbeats from a thread of the
# test's process, so a busy moment of the full suite could expire it too (seen in CI: the survivor
# "lost" its partitions on Kafka, rejoining as a#2, while kgroup's run kept a#1).
SURVIVOR_MS = 10000


# Each librdkafka member finds a new topic matching its regex on its own metadata refresh
# (topic.metadata.refresh.interval.ms=1000): whether both rejoin in one rebalance or one after the
# other (an extra generation giving the whole new topic to the first) is a race, on Kafka as on kgroup.
TWO_DISCOVERIES = ("two members discover a new topic on their own metadata refreshes: one rebalance "
                   "or two is a race between the clients; the final assignment and group are compared")


def one_by_one(*names):
    """start each member and wait until the group is stable with it."""
    steps = []
    for n, name in enumerate(names, 1):
        steps += [start(name), wait_stable(n)]
    return steps


SCENARIOS = [
    # -- dynamic members, eager assignors ------------------------------------------------------------
    Scenario(
        "dynamic-range-join-leave", {"t": 4},
        [Member("a"), Member("b")],
        [start("a"), wait_stable(1), checkpoint("one"), start("b"), wait_stable(2), checkpoint("two"),
         commit("a", 3), commit("b", 5), checkpoint("committed"), close("b"), wait_stable(1),
         checkpoint("after-leave"), close("a"), wait_empty(), checkpoint("empty")],
        about="two dynamic range members join one by one, commit, leave gracefully (KIP-394 member id)"),
    Scenario(
        "dynamic-roundrobin-three", {"t": 3, "u": 2},
        [Member("a", assignor="roundrobin"), Member("b", assignor="roundrobin"),
         Member("c", assignor="roundrobin")],
        [*one_by_one("a", "b", "c"), checkpoint("three"), close("a"), wait_stable(2),
         checkpoint("leader-left")],
        tolerances={"records/leader": Tolerance(
            "ignore", "when the leader leaves, Kafka picks the next leader as the first key of "
                      "ClassicGroup.members, a HashMap of random member ids: random by design")},
        about="roundrobin over two topics; the leader leaves and another member leads"),
    Scenario(
        "rdkafka-eager-range", {"t": 5},
        [Member("a", RDK), Member("b", RDK)],
        [*one_by_one("a", "b"), checkpoint("two"), commit("b", 2), close("a"), wait_stable(1),
         checkpoint("one")],
        about="librdkafka classic eager range: join, commit, leave"),
    # -- cooperative-sticky ----------------------------------------------------------------------------
    Scenario(
        "rdkafka-cooperative-sticky", {"t": 6},
        [Member("a", RDK, assignor="cooperative-sticky"), Member("b", RDK, assignor="cooperative-sticky")],
        [*one_by_one("a", "b"), checkpoint("two"), close("b"), wait_stable(1), checkpoint("one")],
        about="librdkafka cooperative-sticky: incremental assign/revoke, two rounds per rebalance"),
    Scenario(
        "kafka-python-cooperative-sticky", {"t": 6},
        [Member("a", assignor="cooperative-sticky"), Member("b", assignor="cooperative-sticky"),
         Member("c", assignor="cooperative-sticky")],
        [*one_by_one("a", "b", "c"), checkpoint("three"), close("b"), wait_stable(2),
         checkpoint("two")],
        about="kafka-python cooperative-sticky: owned partitions in the subscription, follow-up rebalance"),
    # -- KIP-345 static membership ---------------------------------------------------------------------
    Scenario(
        "static-bounce-within-session", {"t": 4},
        [Member("a", instance_id="ia", session_ms=6000), Member("b", instance_id="ib", session_ms=6000)],
        [*one_by_one("a", "b"), checkpoint("two"), close("a"), start("a"), wait_stable(2),
         checkpoint("bounced")],
        about="KIP-345: a static member restarted within its session gets its partitions back, no rebalance"),
    Scenario(
        "static-bounce-past-session", {"t": 4},
        [Member("a", instance_id="ia", session_ms=2000), Member("b", instance_id="ib", session_ms=2000)],
        [*one_by_one("a", "b"), close("a"), wait_stable(1), checkpoint("expired"), start("a"),
         wait_stable(2), checkpoint("back")],
        about="a static member away longer than its session is removed (rebalance), then rejoins as new"),
    Scenario(
        "static-bounce-several", {"t": 6},
        [Member("a", instance_id="ia", session_ms=8000), Member("b", instance_id="ib", session_ms=8000),
         Member("c", instance_id="ic", session_ms=8000)],
        [*one_by_one("a", "b", "c"), checkpoint("three"), close("a"), close("c"), start("c"),
         wait_stable(3), start("a"), wait_stable(3), checkpoint("bounced")],
        about="two static members (the leader among them) down at once, back within their sessions "
              "(one after the other: which of two rejoins first is a race on Kafka as on kgroup)"),
    Scenario(
        "static-close-vs-dynamic-close", {"t": 4},
        [Member("s", instance_id="is", session_ms=2500), Member("d", session_ms=2500)],
        [*one_by_one("s", "d"), close("d"), wait_stable(1), checkpoint("dynamic-left"),
         close("s"), sleep(0.5), checkpoint("static-closed"), wait_empty(), checkpoint("static-expired")],
        about="graceful close: a dynamic member sends LeaveGroup, a static one does not (KIP-345)"),
    # -- KIP-814: a static member rejoining with another subscription -----------------------------------
    Scenario(
        "kip814-static-leader-changes-subscription", {"t": 4, "u": 2},
        [Member("a1", JAVA, topics=("t",), instance_id="ia", session_ms=15000),
         Member("a2", JAVA, topics=("t", "u"), instance_id="ia", session_ms=15000),
         Member("b", JAVA, topics=("t",), instance_id="ib", session_ms=15000)],
        [start("a1"), wait_stable(1), start("b"), wait_stable(2), checkpoint("two"), close("a1"),
         start("a2"), sleep(12), checkpoint("resubscribed")],
        about="KIP-814: the static leader rejoins with a changed subscription (JoinGroup v9, skip assignment); "
              "15 s sessions: a JVM starting under load must not outlast the old incarnation's session"),
    Scenario(
        "kip814-static-follower-changes-subscription", {"t": 4, "u": 2},
        [Member("a", JAVA, topics=("t",), instance_id="ia", session_ms=15000),
         Member("b1", JAVA, topics=("t",), instance_id="ib", session_ms=15000),
         Member("b2", JAVA, topics=("t", "u"), instance_id="ib", session_ms=15000)],
        [start("a"), wait_stable(1), start("b1"), wait_stable(2), checkpoint("two"), close("b1"),
         start("b2"), sleep(12), checkpoint("resubscribed")],
        about="KIP-814: a static follower rejoins with a changed subscription in a Stable group: no "
              "rebalance (only a change of the selected protocol makes one), the new topic stays "
              "unassigned"),
    # -- failures: kill -9, session expiry, a paused member --------------------------------------------
    Scenario(
        "kill-dynamic-session-expiry", {"t": 4},
        [Member("a", session_ms=SURVIVOR_MS), Member("b", session_ms=1500)],
        [*one_by_one("a", "b"), kill("b"), wait_stable(1), checkpoint("expired")],
        about="a dynamic member killed (no LeaveGroup) is removed when its session expires"),
    Scenario(
        "java-kill-static", {"t": 4},
        [Member("a", JAVA, instance_id="ia", session_ms=5000),
         Member("b", JAVA, instance_id="ib", session_ms=5000)],
        [*one_by_one("a", "b"), kill("a"), wait_stable(1), checkpoint("expired")],
        about="kill -9 of a static Java member (the leader): its session expires, the follower leads"),
    Scenario(
        "paused-member-session-expiry", {"t": 4},
        [Member("a", session_ms=SURVIVOR_MS), Member("b", session_ms=1500)],
        [*one_by_one("a", "b"), pause("b"), wait_stable(1), checkpoint("expired")],
        about="a hung member (no heartbeat, no leave) is removed when its session expires"),
    Scenario(
        "paused-member-rebalance-timeout", {"t": 4},
        [Member("a", session_ms=20000, rebalance_ms=6000), Member("b", session_ms=20000, rebalance_ms=6000),
         Member("c", session_ms=20000, rebalance_ms=6000)],
        [*one_by_one("a", "b"), pause("b"), start("c"), wait_stable(2), checkpoint("b-removed")],
        about="a member that does not rejoin within the rebalance timeout (6 s) is removed, long before "
              "its session (20 s) ends (a rebalance timeout above kafka-python's 3 s poll)"),
    Scenario(
        "rdkafka-poll-timeout-leave", {"t": 4},
        [Member("a", RDK, session_ms=2000, rebalance_ms=2000),
         Member("b", RDK, session_ms=2000, rebalance_ms=2000)],
        [*one_by_one("a", "b"), pause("b"), wait_stable(1), checkpoint("left")],
        about="librdkafka stops being polled: after max.poll.interval.ms it leaves the group itself"),
    # -- admin requests ----------------------------------------------------------------------------------
    Scenario(
        "remove-static-members", {"t": 6},
        [Member("a", instance_id="ia", session_ms=20000), Member("b", instance_id="ib", session_ms=20000),
         Member("c", instance_id="ic", session_ms=20000)],
        [*one_by_one("a", "b", "c"), close("a"), close("b"), sleep(0.3), checkpoint("closed"),
         remove_members("ia", "ib", "iz", reason="scaling down", label="remove"), wait_stable(1),
         checkpoint("removed"), remove_members("ia", label="remove-again")],
        about="KIP-345 batch removal by instance id (one unknown): the rest rebalances at once"),
    Scenario(
        "delete-group-empty-vs-not", {"t": 2},
        [Member("a")],
        [start("a"), wait_stable(1), commit("a", 4), delete_group(label="delete-running"),
         checkpoint("running"), close("a"), wait_empty(), delete_group(label="delete-empty"),
         checkpoint("deleted"), delete_group(label="delete-again")],
        about="DeleteGroups: NON_EMPTY_GROUP while members run; an empty group's offsets and group go"),
    Scenario(
        "offset-delete-subscribed-or-not", {"t": 2, "u": 2},
        [Member("a", topics=("t", "u"))],
        [start("a"), wait_stable(1), commit("a", 7), subscribe("a", ["t"]), wait_stable(1),
         delete_offsets("t", label="delete-subscribed"), delete_offsets("u", label="delete-unsubscribed"),
         checkpoint("after")],
        about="OffsetDelete: GROUP_SUBSCRIBED_TO_TOPIC for a subscribed topic, deleted otherwise"),
    Scenario(
        "reset-while-running", {"t": 3},
        [Member("a"), Member("b")],
        [*one_by_one("a", "b"), commit("a", 1), reset_offsets("t", 0, label="reset-running"),
         checkpoint("running"), close("a"), wait_stable(1), close("b"), wait_empty(),
         reset_offsets("t", 0, label="reset-empty"), checkpoint("reset")],
        about="an admin OffsetCommit (generation -1) while members run is refused; on Empty it commits"),
    Scenario(
        "duplicate-instance-id", {"t": 4},
        [Member("a1", instance_id="same", session_ms=6000), Member("a2", instance_id="same", session_ms=6000)],
        [start("a1"), wait_stable(1), start("a2"), sleep(4), checkpoint("fenced")],
        about="a second client with the same group.instance.id fences the first (FENCED_INSTANCE_ID)"),
    Scenario(
        "java-duplicate-instance-id", {"t": 4},
        [Member("a1", JAVA, instance_id="same", session_ms=6000),
         Member("a2", JAVA, instance_id="same", session_ms=6000)],
        [start("a1"), wait_stable(1), start("a2"), wait_errors("a1"), sleep(2), checkpoint("fenced")],
        about="the Java client fenced by a duplicate instance id (FencedInstanceIdException)"),
    # -- topology changes ---------------------------------------------------------------------------------
    Scenario(
        "subscribe-change", {"t": 4, "u": 2},
        [Member("a", RDK, topics=("t",)), Member("b", RDK, topics=("t",))],
        [*one_by_one("a", "b"), subscribe("b", ["t", "u"]), wait_stable(2, assigned=["u"]),
         checkpoint("changed")],
        about="a follower changes its subscription: the group rebalances with the new topic"),
    Scenario(
        "partition-increase", {"t": 2},
        [Member("a", settings=FAST_METADATA), Member("b", settings=FAST_METADATA)],
        [*one_by_one("a", "b"), add_partitions("t", 5), wait_stable(2), checkpoint("grown")],
        about="CreatePartitions: the leader sees the new partitions and the group rebalances"),
    Scenario(
        "topic-created-matching-pattern", {"t": 2},
        [Member("a", RDK, pattern=True), Member("b", RDK, pattern=True)],
        [*one_by_one("a", "b"), create_topic("u", 3), wait_stable(2, everyone_subscribes=["u"]),
         checkpoint("created")],
        tolerances={
            "member *.callbacks": Tolerance("final", TWO_DISCOVERIES),
            "records": Tolerance("final", TWO_DISCOVERIES),
            "records/generation": Tolerance("ignore", TWO_DISCOVERIES)},
        about="a topic created that matches the members' regex subscription joins the assignment"),
    # -- mixed clients ---------------------------------------------------------------------------------
    Scenario(
        "mixed-clients-range", {"t": 6},
        [Member("java", JAVA, instance_id="ijava"), Member("py", instance_id="ipy"), Member("rdk", RDK)],
        [*one_by_one("java", "py", "rdk"), checkpoint("three"), commit("java", 9), commit("rdk", 8),
         close("rdk"), wait_stable(2), checkpoint("two")],
        about="the Java client (leader), kafka-python and librdkafka, static and dynamic, in one range "
              "group (not kafka-python as leader: its range assignor drops static members listed "
              "before a dynamic one — itertools.groupby — and Kafka lists members in random order)"),
]
