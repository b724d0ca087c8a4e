"""Online downgrade of a consumer group to a classic group (Kafka's
validateOnlineDowngradeWithFencedMember(s), validateOnlineDowngradeWithReplacedMemberId,
convertToClassicGroup, ClassicGroup.fromConsumerGroup) and the replay of migrated groups."""

from __future__ import annotations

import uuid

import pytest

from helpers.migration import FOO, Mixed, assignment, partitions_of
from kgroup.coordinator import GroupCoordinator
from kgroup.kafka_errors import REBALANCE_IN_PROGRESS
from kgroup.protocol import ConsumerGroupHeartbeatRequest
from kgroup.records import decode_value


def _upgraded(**config):
    mixed = Mixed(**config)
    ids = mixed.classic_group()
    assert mixed.consumer(member_id="c").member_epoch == 2
    return mixed, ids


def _types(mixed, start):
    return [(int.from_bytes(k[:2], "big"), v is None) for k, v in mixed.coord.records[start:]]


def test_the_last_consumer_protocol_member_leaving_downgrades_the_group():
    mixed, ids = _upgraded()
    start = len(mixed.coord.records)
    response = mixed.consumer(member_id="c", epoch=-1, topics=None)
    assert response.error_code == 0 and response.member_epoch == -1
    assert _types(mixed, start) == (
        [(8, True)] * 3 + [(7, True)] * 3 + [(6, True)] + [(5, True)] * 3 + [(4, True), (3, True)] + [(2, False)])
    metadata = decode_value(2, mixed.coord.records[-1][1]).data
    assert (metadata["protocolType"], metadata["generation"], metadata["protocol"]) == ("consumer", 2, "range")
    members = {m["memberId"]: m for m in metadata["members"]}
    assert set(members) == {ids["a"], ids["b"]} and members[ids["a"]]["groupInstanceId"] == "a"
    assert partitions_of(members[ids["a"]]["assignment"]) == {0, 1}
    assert members[ids["a"]]["sessionTimeout"] == 10_000
    group = mixed.coord.get_group("g")
    assert group.group_type == "classic" and group.state == "PreparingRebalance" and group.generation_id == 2
    # the classic members rejoin the rebalance Kafka triggers, and a new generation follows
    assert mixed.heartbeat(ids["a"], 2, "a") == REBALANCE_IN_PROGRESS
    joins = [mixed.join(member_id=ids[i], instance=i) for i in ("a", "b")]
    assert all(j.done and j.response.generation_id == 3 for j in joins)


def test_session_timeout_of_the_last_consumer_member_downgrades_too():
    mixed, ids = _upgraded(**{"group.consumer.session.timeout.ms": 6_000,
                              "group.consumer.min.session.timeout.ms": 6_000})
    mixed.coord.advance(5_000)
    for i in ("a", "b"):             # the classic members stay alive; c stops heartbeating
        mixed.heartbeat(ids[i], 1, i)
    mixed.coord.advance(2_000)
    group = mixed.coord.get_group("g")
    assert group.group_type == "classic" and set(group.members) == {ids["a"], ids["b"]}


@pytest.mark.parametrize("policy, downgrades", [("upgrade", False), ("disabled", False),
                                                ("downgrade", True), ("bidirectional", True)])
def test_the_policy_decides_the_downgrade(policy, downgrades):
    mixed = Mixed(**{"group.consumer.migration.policy": policy})
    mixed.consumer(member_id="c")
    mixed.join(instance="x")                     # a classic member inside the consumer group
    mixed.consumer(member_id="c", epoch=-1, topics=None)
    group = mixed.coord.get_group("g")
    assert group.group_type == ("classic" if downgrades else "consumer") and len(group.members) == 1


def test_more_members_than_the_classic_max_size_keep_the_consumer_group():
    mixed = Mixed(**{"group.max.size": 1})
    mixed.consumer(member_id="c")
    mixed.join(instance="x")
    mixed.join(instance="y")
    mixed.consumer(member_id="c", epoch=-1, topics=None)
    group = mixed.coord.get_group("g")
    assert group.group_type == "consumer" and len(group.members) == 2


def test_another_consumer_protocol_member_keeps_the_consumer_group():
    mixed, ids = _upgraded()
    mixed.consumer(member_id="d", regex="fo.*", topics=[])       # a regex subscriber speaks the consumer protocol
    mixed.consumer(member_id="c", epoch=-1, topics=None)
    assert mixed.coord.get_group("g").group_type == "consumer"


def test_a_classic_member_leaving_never_downgrades():
    mixed, ids = _upgraded()
    mixed.leave(ids["a"], "a")
    assert mixed.coord.get_group("g").group_type == "consumer"


def test_a_classic_joiner_replacing_the_last_consumer_member_downgrades_without_rebalance():
    mixed, ids = _upgraded()
    mixed.consumer(member_id="c", epoch=-1, topics=None)      # back to classic, rebalance
    joins = [mixed.join(member_id=ids[i], instance=i, owned=()) for i in ("a", "b")]
    assert all(j.done for j in joins)
    leader = joins[0].response.leader
    generation = joins[0].response.generation_id
    plan = {ids["a"]: assignment((0, 1)), ids["b"]: assignment((2, 3))}
    for i in ("a", "b"):
        mixed.sync(ids[i], generation, instance=i, assignments=plan if ids[i] == leader else None)
    # the static member a moves to the consumer protocol (upgrade by replacement) ...
    response = mixed.consumer(member_id="ca", instance_id="a")
    assert response.error_code == 0 and mixed.coord.get_group("g").group_type == "consumer"
    owned = {FOO: {tp for t in response.assignment.topic_partitions for tp in t.partitions}}
    epoch = response.member_epoch
    mixed.consumer(member_id="ca", instance_id="a", epoch=-2, topics=None)     # ... and back: it stops
    start = len(mixed.coord.records)
    joined = mixed.join(instance="a", owned=()).response                     # a classic "a" replaces it
    assert joined.error_code == 0 and joined.generation_id == epoch
    group = mixed.coord.get_group("g")
    assert group.group_type == "classic" and group.state == "Stable"
    assert _types(mixed, start)[-1] == (2, False)
    assert partitions_of(group.members[joined.member_id].assignment) == owned[FOO]
    assert mixed.heartbeat(joined.member_id, epoch, "a") == 0


def _same_consumer_group(live, replayed):
    assert replayed.group_type == live.group_type == "consumer"
    assert (replayed.group_epoch, replayed.assignment_epoch) == (live.group_epoch, live.assignment_epoch)
    assert replayed.members == live.members and replayed.target == live.target
    assert replayed.static_members == live.static_members


def test_replay_rebuilds_a_mixed_group():
    mixed, ids = _upgraded()
    mixed.join(member_id=ids["a"], instance="a", owned=(0, 1))
    replayed = GroupCoordinator.from_records(mixed.coord.records, config=mixed.coord.config)
    _same_consumer_group(mixed.coord.get_group("g"), replayed.get_group("g"))
    member = replayed.get_group("g").members[ids["a"]]
    assert member.classic.session_timeout_ms == 10_000 and member.classic.protocol_names() == ("range",)
    # Kafka's GroupMetadataManager.onLoaded restarts every member's session with the group's consumer
    # session timeout (scheduleConsumerGroupSessionTimeout(groupId, memberId)), a classic member's too;
    # its own 10 s session timeout is back from its next JoinGroup/SyncGroup/Heartbeat
    assert replayed.timer_deadline(f"session-timeout-g-{ids['a']}") == 45_000


def test_replay_rebuilds_a_downgraded_group():
    mixed, ids = _upgraded()
    mixed.consumer(member_id="c", epoch=-1, topics=None)
    replayed = GroupCoordinator.from_records(mixed.coord.records, config=mixed.coord.config).get_group("g")
    live = mixed.coord.get_group("g")
    assert replayed.group_type == "classic" and replayed.generation_id == live.generation_id
    assert replayed.protocol_name == live.protocol_name == "range"
    assert {m: (x.group_instance_id, x.assignment) for m, x in replayed.members.items()} == \
        {m: (x.group_instance_id, x.assignment) for m, x in live.members.items()}


@pytest.mark.parametrize("step", ["upgrade", "downgrade"])
def test_a_refused_append_reverts_the_conversion(step):
    """The host's log writer fails: the group is as it was before the operation (one unit)."""
    failing = []

    def writer(entries):
        if failing:
            raise OSError("disk full")

    mixed = Mixed()
    mixed.coord.log_writer = writer
    ids = mixed.classic_group()
    if step == "downgrade":
        mixed.consumer(member_id="c")
    before = mixed.coord.group("g")
    failing.append(True)
    reply = mixed.coord.handle(ConsumerGroupHeartbeatRequest[1](
        group_id="g", member_id="c", member_epoch=0 if step == "upgrade" else -1, instance_id=None, rack_id=None,
        rebalance_timeout_ms=60_000 if step == "upgrade" else -1,
        subscribed_topic_names=["foo"] if step == "upgrade" else None, server_assignor=None,
        topic_partitions=[] if step == "upgrade" else None, subscribed_topic_regex=None))
    assert reply.error is not None
    assert mixed.coord.group("g") == before and ids


def test_describe_from_dump_shows_the_classic_members_of_a_mixed_group():
    from kgroup.client.from_dump import consumer_group_view
    mixed, ids = _upgraded()
    replayed = GroupCoordinator.from_records(mixed.coord.records, config=mixed.coord.config)
    view = consumer_group_view(replayed, "g")
    assert {m.member_id: m.member_type for m in view.members} == {ids["a"]: "classic", ids["b"]: "classic",
                                                                  "c": "consumer"}


def test_a_classic_joiner_with_another_subscription_downgrades_with_a_rebalance():
    """KAFKA-19546: the replacing member subscribes to other topics than the member it replaced, so the
    classic group rebalances at once instead of leaving the new subscription to the next rebalance."""
    mixed, ids = _upgraded()
    mixed.coord.set_topics({"foo": mixed.coord.topic_image["foo"], "bar": (uuid.uuid4(), 2)})
    mixed.consumer(member_id="c", epoch=-1, topics=None)
    mixed.classic_again_with_a_stopped_on_the_consumer_protocol(ids)
    joined = mixed.join(instance="a", owned=(), topics=("foo", "bar"))
    group = mixed.coord.get_group("g")
    assert group.group_type == "classic" and group.state == "PreparingRebalance"
    assert not joined.done or joined.response.error_code == 0
