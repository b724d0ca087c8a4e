"""The consumer-protocol (KIP-848) and online-migration scenarios: data only. Members are librdkafka
(``group.protocol=consumer``) where it shows the behaviour, the Java client 4.4 where only it does
(kill -9, SIGSTOP, ``subscribe(Pattern)``, the -2 leave of a static member, UNRELEASED_INSTANCE_ID
as an exception), and classic clients for the migrations. Where Kafka itself is not deterministic a
Tolerance names the field and why.

The groups use the broker's consumer settings from GROUP_SETTINGS (sessions 6 s, heartbeats 500 ms)
and its ``group.consumer.migration.policy`` default (bidirectional), which serve shares.
"""

from __future__ import annotations

from helpers.differential.scenario import (Member, Scenario, Tolerance, add_partitions, checkpoint,
                                           close, commit, create_topic, delete_group, delete_offsets,
                                           kill, pause, remove_members, reset_offsets, resume, sleep,
                                           start, subscribe, wait_empty, wait_errors, wait_stable)

R, J = "rdkafka-consumer", "java-consumer"
JVM = 90    # the first wait on a Java member also waits for GroupMember's one compile and its JVM
PY, RC, JC = "kafka-python", "rdkafka-classic", "java-classic"

SETTLED = Tolerance("settled", "a member writes an in-between reconciliation state (unrevoked or "
                    "unreleased partitions) only when its heartbeat reaches the coordinator before "
                    "another member's revocation does — client timing, on Kafka too; and Kafka writes "
                    "one batch's target rows in the hash order of the members' random ids")
RANDOM_IDS = ("which member takes a partition several could take follows the Java hash order of the "
              "members' random ids (Kafka's assignors walk its TimelineHashMap; with equal ids kgroup "
              "walks them alike: tests/live/test_kafka_assignor_oracle.py)")
SIZES = {"records": Tolerance("sizes", RANDOM_IDS), "*.members": Tolerance("sizes", RANDOM_IDS),
         "final.describe": Tolerance("sizes", RANDOM_IDS),
         "member *.final": Tolerance("ignore", RANDOM_IDS + " (the members' shares are compared in "
                                     "the describes)"),
         "member *.callbacks": Tolerance("ignore", RANDOM_IDS + "; the partitions a member gives up "
                                         "follow from it")}

def scenario(name, topics, members, steps, *, protocol, about, tolerances=None) -> Scenario:
    """A consumer-group (or migration) scenario: its records compared once settled (SETTLED) unless
    it names its own tolerances."""
    return Scenario(name, topics, members, steps, {"records": SETTLED} if tolerances is None else tolerances,
                    protocol, about)


SCENARIOS = [
    scenario(
        "consumer-uniform-join-leave", {"t": 6},
        [Member("a", R, assignor="uniform"), Member("b", R, assignor="uniform")],
        [start("a"), wait_stable(1), checkpoint("one"), start("b"), wait_stable(2), checkpoint("two"),
         commit("a", 3), commit("b", 5), checkpoint("committed"), close("b"), wait_stable(1),
         checkpoint("after-leave"), close("a"), wait_empty(), checkpoint("empty")],
        protocol="consumer",
        about="two dynamic librdkafka members, uniform: joins and -1 leaves with their group, "
              "assignment and member epochs, commits"),
    scenario(
        "consumer-range-three", {"t": 3, "u": 2},
        [Member("a", R, assignor="range"), Member("b", R, assignor="range"),
         Member("c", R, assignor="range")],
        [start("a"), wait_stable(1), start("b"), wait_stable(2), start("c"), wait_stable(3),
         checkpoint("three"), close("b"), wait_stable(2), checkpoint("two")],
        tolerances=SIZES,
        protocol="consumer",
        about="the range server assignor over two topics, three members, the middle one leaving"),
    scenario(
        "consumer-java-dynamic-close", {"t": 4},
        [Member("a", J, assignor="uniform"), Member("b", R, assignor="uniform")],
        [start("a"), wait_stable(1, timeout=JVM), start("b"), wait_stable(2), checkpoint("two"), commit("a", 7),
         close("a"), wait_stable(1), checkpoint("one")],
        protocol="consumer",
        about="a dynamic Java 4.4 member beside librdkafka commits and closes gracefully (epoch -1 leave)"),
    scenario(
        "consumer-static-temporary-leave", {"t": 4},
        [Member("a", J, instance_id="ia", assignor="uniform"), Member("b", R, assignor="uniform")],
        [start("a"), wait_stable(1, timeout=JVM), start("b"), wait_stable(2), checkpoint("two"), close("a"),
         sleep(1.5), checkpoint("left"), start("a"), wait_stable(2, timeout=JVM), checkpoint("back")],
        protocol="consumer",
        about="a static Java member's close is a temporary leave (epoch -2, its partitions kept), and "
              "its rejoin with the same instance id within the session gets them back"),
    scenario(
        "consumer-static-leave-expires", {"t": 4},
        [Member("a", R, instance_id="ia", assignor="uniform"), Member("b", R, assignor="uniform")],
        [start("a"), wait_stable(1), start("b"), wait_stable(2), checkpoint("two"), close("a"),
         sleep(1.5), checkpoint("left"), wait_stable(1), checkpoint("expired")],
        protocol="consumer",
        about="a static librdkafka member that closes and never comes back: removed when its session "
              "(6 s) expires, its partitions go to the other member"),
    scenario(
        "consumer-kill-session-expiry", {"t": 4},
        [Member("a", J, assignor="uniform"), Member("b", R, assignor="uniform")],
        [start("a"), wait_stable(1, timeout=JVM), start("b"), wait_stable(2), checkpoint("two"), kill("a"),
         wait_stable(1), checkpoint("expired")],
        protocol="consumer",
        about="kill -9 of a dynamic Java member: fenced when its session expires"),
    scenario(
        "consumer-poll-timeout", {"t": 4},
        [Member("a", R, assignor="uniform", rebalance_ms=3000), Member("b", R, assignor="uniform")],
        [start("a"), wait_stable(1), start("b"), wait_stable(2), checkpoint("two"), pause("a"),
         wait_stable(1), checkpoint("one"), resume("a"), wait_stable(2), checkpoint("again")],
        protocol="consumer",
        about="a librdkafka member that stops polling leaves after max.poll.interval.ms (its rebalance "
              "timeout) and rejoins with a new epoch when it polls again"),
    scenario(
        "consumer-pause-session-expiry", {"t": 4},
        [Member("a", J, instance_id="ia", assignor="range"), Member("b", R, assignor="range")],
        [start("a"), wait_stable(1, timeout=JVM), start("b"), wait_stable(2), checkpoint("two"), pause("a"),
         wait_stable(1), checkpoint("one"), resume("a"), wait_stable(2), checkpoint("again")],
        protocol="consumer",
        about="a static Java member SIGSTOPped: no heartbeat, fenced when its session expires; SIGCONT "
              "makes it rejoin with its instance id"),
    scenario(
        "consumer-regex-new-topic", {"r1": 2},
        [Member("a", J, pattern=True, assignor="uniform")],
        [start("a"), sleep(3), wait_stable(1, timeout=JVM), checkpoint("one-topic"), create_topic("r2", 2), sleep(12),
         wait_stable(1), checkpoint("two-topics")],
        protocol="consumer",
        about="a Java subscribe(Pattern) member: the regex resolved to the matching topics, and a topic "
              "created later that matches it joins the assignment"),
    scenario(
        "consumer-subscribe-change", {"t": 2, "u": 2},
        [Member("a", R, topics=("t",), assignor="uniform"), Member("b", R, topics=("t",), assignor="uniform")],
        [start("a"), wait_stable(1), start("b"), wait_stable(2), checkpoint("t-only"), subscribe("a", ["t", "u"]),
         wait_stable(2), checkpoint("a-both"), subscribe("b", ["u"]), wait_stable(2), checkpoint("b-u")],
        protocol="consumer",
        about="running members change their subscriptions (the group epoch bumps, topics left are revoked)"),
    scenario(
        "consumer-partition-increase", {"t": 2},
        [Member("a", R, assignor="uniform"), Member("b", R, assignor="uniform")],
        [start("a"), wait_stable(1), start("b"), wait_stable(2), checkpoint("two"), add_partitions("t", 5),
         wait_stable(2), checkpoint("grown")],
        tolerances=SIZES,
        protocol="consumer",
        about="CreatePartitions on a subscribed topic: the metadata hash changes, the epoch bumps, the "
              "new partitions are assigned"),
    scenario(
        "consumer-remove-static-members", {"t": 4},
        # a is stopped (SIGSTOP) while it is removed: a running member learns of its removal on its
        # next heartbeat and rejoins at once, racing b's heartbeat to the next target assignment —
        # which of them wins is timing on either side, so a comes back only once b owns everything
        [Member("a", J, instance_id="ia", assignor="uniform"), Member("b", R, instance_id="ib", assignor="uniform")],
        [start("a"), wait_stable(1, timeout=JVM), start("b"), wait_stable(2), checkpoint("two"),
         remove_members("zz", label="remove-unknown"), pause("a"),
         remove_members("ia", reason="admin", label="remove-a"), wait_stable(1), checkpoint("removed"),
         resume("a"), wait_stable(2, timeout=JVM), checkpoint("after")],
        protocol="consumer",
        about="an admin LeaveGroup removes a static consumer member by instance id (it rejoins as new); "
              "an unknown instance id is UNKNOWN_MEMBER_ID"),
    scenario(
        "consumer-delete-group", {"t": 2},
        [Member("a", R, assignor="uniform")],
        [start("a"), wait_stable(1), commit("a", 4), delete_group(label="delete-non-empty"),
         checkpoint("running"), close("a"), wait_empty(), delete_group(label="delete-empty"),
         checkpoint("deleted")],
        protocol="consumer",
        about="DeleteGroups of a consumer group with a member (NON_EMPTY_GROUP) and once empty"),
    scenario(
        "consumer-offset-delete", {"t": 2, "u": 2},
        [Member("a", R, assignor="uniform")],
        [start("a"), wait_stable(1), commit("a", 2), delete_offsets("t", label="delete-subscribed"),
         subscribe("a", ["u"]), wait_stable(1), delete_offsets("t", label="delete-unsubscribed"),
         checkpoint("after")],
        protocol="consumer",
        about="OffsetDelete of a subscribed topic (GROUP_SUBSCRIBED_TO_TOPIC) and of one no longer subscribed"),
    scenario(
        "consumer-reset-while-running", {"t": 2},
        [Member("a", R, assignor="uniform")],
        [start("a"), wait_stable(1), reset_offsets("t", 1, label="reset-running"), close("a"),
         wait_empty(), reset_offsets("t", 1, label="reset-empty"), checkpoint("reset")],
        protocol="consumer",
        about="an admin offset reset (OffsetCommit without a member) of a running consumer group is "
              "refused, of an empty one accepted"),
    scenario(
        "consumer-duplicate-instance-id", {"t": 2},
        [Member("a", R, instance_id="ia", assignor="uniform"), Member("b", J, instance_id="ia", assignor="uniform")],
        [start("a"), wait_stable(1), start("b"), wait_errors("b", timeout=JVM), sleep(1), checkpoint("after")],
        protocol="consumer",
        about="a second member with a static instance id in use: UNRELEASED_INSTANCE_ID, the first keeps it"),
    scenario(
        "migration-upgrade", {"t": 4},
        [Member("a", PY, assignor="range"), Member("b", R, assignor="uniform")],
        [start("a"), wait_stable(1), checkpoint("classic"), commit("a", 3), start("b"), wait_stable(2),
         checkpoint("mixed"), close("a"), wait_stable(1), checkpoint("consumer")],
        protocol="migration",
        about="online upgrade: a consumer-protocol member joins a classic group, which converts to a "
              "consumer group; the classic member leaves"),
    scenario(
        "migration-downgrade", {"t": 4},
        [Member("a", R, assignor="uniform"), Member("b", RC, assignor="range")],
        [start("a"), wait_stable(1), checkpoint("consumer"), start("b"), wait_stable(2), checkpoint("mixed"),
         commit("b", 6), close("a"), wait_stable(1), checkpoint("classic")],
        protocol="migration",
        about="online downgrade: a classic member joins a consumer group; the last consumer-protocol "
              "member leaves and the group converts back to classic"),
    scenario(
        "migration-rolling-upgrade-static", {"t": 4},
        [Member("a", JC, instance_id="ia", assignor="range", session_ms=6000),
         Member("b", RC, instance_id="ib", assignor="range", session_ms=6000),
         Member("a2", J, instance_id="ia", assignor="uniform")],
        [start("a"), wait_stable(1, timeout=JVM), start("b"), wait_stable(2), checkpoint("classic"), close("a"), start("a2"),
         wait_stable(2, timeout=JVM), checkpoint("upgraded")],
        protocol="migration",
        about="a rolling upgrade of a static classic group: instance ia restarts as a consumer-protocol "
              "Java member within its session"),
]
