"""The classic-group scenarios (JoinGroup/SyncGroup/Heartbeat/LeaveGroup): data only. Each names
what it checks; where Kafka itself is not deterministic a Tolerance says which field and why."""

from __future__ import annotations

from helpers.differential.scenario import (Member, Scenario, Tolerance, add_partitions, checkpoint,
                                           close, commit, create_topic, delete_group, delete_offsets,
                                           kill, pause, remove_members, reset_offsets, resume, sleep,
                                           start, subscribe, wait_empty, wait_errors, wait_stable)

PY, RDK, JAVA = "kafka-python", "rdkafka-classic", "java-classic"

SCENARIOS = [
    Scenario(
        "dynamic-range-join-leave", {"t": 4},
        [Member("a"), Member("b")],
        [start("a"), wait_stable(1), checkpoint("one"), start("b"), wait_stable(2), checkpoint("two"),
         commit("a", 3), commit("b", 5), checkpoint("committed"), close("b"), wait_stable(1),
         checkpoint("after-leave"), close("a"), wait_empty(), checkpoint("empty")],
        about="two dynamic kafka-python range members join one by one, commit, leave gracefully"),
    Scenario(
        "static-bounce-within-session", {"t": 4},
        [Member("a", instance_id="ia", session_ms=6000), Member("b", instance_id="ib", session_ms=6000)],
        [start("a"), wait_stable(1), start("b"), wait_stable(2), checkpoint("two"), close("a"),
         start("a"), wait_stable(2), checkpoint("bounced")],
        about="KIP-345: a static member restarted within its session gets its partitions back, no rebalance"),
    Scenario(
        "rdkafka-cooperative-sticky", {"t": 6},
        [Member("a", RDK, assignor="cooperative-sticky"), Member("b", RDK, assignor="cooperative-sticky")],
        [start("a"), wait_stable(1), start("b"), wait_stable(2), checkpoint("two"), close("b"),
         wait_stable(1), checkpoint("one")],
        about="librdkafka cooperative-sticky: incremental assign/revoke, two rounds per rebalance"),
]
