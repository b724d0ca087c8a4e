"""Classic members inside a consumer group (Kafka's classicGroupJoinToConsumerGroup,
classicGroupSyncToConsumerGroup, classicGroupHeartbeatToConsumerGroup): their assignment from the
server-side assignor through SyncGroup, REBALANCE_IN_PROGRESS when they must rejoin."""

from __future__ import annotations

from helpers.migration import FOO, Mixed, partitions_of
from helpers.offsets import commit_request, errors

from kgroup.kafka_errors import (FENCED_INSTANCE_ID, ILLEGAL_GENERATION, INCONSISTENT_GROUP_PROTOCOL,
                                 MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID)
from kgroup.protocol import ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse


def _upgraded():
    """Classic a (0-1) and b (2-3) at generation 1, then consumer member c joins: group epoch 2,
    range target a 0-1, b 2, c 3."""
    mixed = Mixed()
    ids = mixed.classic_group()
    assert mixed.consumer(member_id="c").member_epoch == 2
    return mixed, ids


def _member(mixed, member_id):
    return next(m for m in mixed.coord.group("g").members if m.member_id == member_id)


def test_classic_members_rejoin_and_get_their_target_through_sync_group():
    mixed, ids = _upgraded()
    a, b = ids["a"], ids["b"]
    assert mixed.heartbeat(a, 1, "a") == REBALANCE_IN_PROGRESS        # epoch 1 < group epoch 2
    joined = mixed.join(member_id=a, instance="a", owned=(0, 1)).response
    assert (joined.error_code, joined.generation_id, joined.protocol_type, joined.protocol_name,
            joined.leader, joined.members) == (0, 2, "consumer", "range", "", [])
    synced = mixed.sync(a, 2, instance="a").response
    assert synced.error_code == 0 and partitions_of(synced.assignment) == {0, 1}
    assert mixed.heartbeat(a, 2, "a") == 0

    # b must give up 3 first: it stays at epoch 1 (UNREVOKED) and syncs what it keeps
    assert mixed.heartbeat(b, 1, "b") == REBALANCE_IN_PROGRESS
    assert mixed.join(member_id=b, instance="b", owned=(2, 3)).response.generation_id == 1
    assert partitions_of(mixed.sync(b, 1, instance="b").response.assignment) == {2}
    assert mixed.heartbeat(b, 1, "b") == REBALANCE_IN_PROGRESS        # revoke, then rejoin
    assert mixed.join(member_id=b, instance="b", owned=(2,)).response.generation_id == 2
    assert partitions_of(mixed.sync(b, 2, instance="b").response.assignment) == {2}
    assert mixed.heartbeat(b, 2, "b") == 0

    response = mixed.consumer(member_id="c", epoch=2, topics=None, rebalance_timeout_ms=None,
                              owned_partitions=None)
    assert {tp.topic_id: set(tp.partitions) for tp in response.assignment.topic_partitions} == {FOO: {3}}
    assert mixed.coord.group("g").state == "Stable"


def test_a_dynamic_classic_member_gets_its_member_id_first():
    mixed, ids = _upgraded()
    first = mixed.join().response
    assert first.error_code == MEMBER_ID_REQUIRED
    joined = mixed.join(member_id=first.member_id).response
    member = _member(mixed, first.member_id)
    assert joined.generation_id == member.member_epoch and member.classic.session_timeout_ms == 10_000


def test_a_classic_member_waiting_for_a_released_partition_is_told_to_rejoin():
    mixed = Mixed()
    mixed.consumer(member_id="c")                               # c owns 0-3 at epoch 2
    joined = mixed.join(instance="x").response                  # x's target: two of c's partitions
    x = joined.member_id
    assert joined.generation_id == 3 and _member(mixed, x).state == 2     # UNRELEASED_PARTITIONS
    assert partitions_of(mixed.sync(x, 3, instance="x").response.assignment) == set()
    assert mixed.heartbeat(x, 3, "x") == 0                      # still waiting: nothing to rejoin for
    mixed.consumer(member_id="c", epoch=2, topics=None, rebalance_timeout_ms=None,
                   owned_partitions=[])                          # c learns it must revoke 2-3
    target_x = set(mixed.coord.group("g").target[x][FOO])
    mixed.consumer(member_id="c", epoch=2, topics=None, rebalance_timeout_ms=None,
                   owned_partitions={FOO: {0, 1, 2, 3} - target_x})     # c revoked them
    assert mixed.heartbeat(x, 3, "x") == REBALANCE_IN_PROGRESS
    assert mixed.join(member_id=x, instance="x").response.generation_id == 3
    assert partitions_of(mixed.sync(x, 3, instance="x").response.assignment) == target_x


def test_sync_and_heartbeat_checks():
    mixed, ids = _upgraded()
    a = ids["a"]
    assert mixed.sync("nobody", 2).response.error_code == UNKNOWN_MEMBER_ID
    assert mixed.sync("c", 2).response.error_code == UNKNOWN_MEMBER_ID             # not a classic member
    assert mixed.sync(a, 7, instance="a").response.error_code == ILLEGAL_GENERATION
    assert mixed.sync("other", 1, instance="a").response.error_code == FENCED_INSTANCE_ID
    assert mixed.sync(a, 1, instance="a").response.error_code == REBALANCE_IN_PROGRESS
    assert mixed.heartbeat(a, 5, "a") == ILLEGAL_GENERATION
    assert mixed.heartbeat("c", 2) == UNKNOWN_MEMBER_ID
    refused = mixed.join(member_id=a, instance="a", protocol_type="connect").response
    assert refused.error_code == INCONSISTENT_GROUP_PROTOCOL


def test_a_classic_member_that_does_not_rejoin_in_its_rebalance_timeout_is_fenced():
    mixed, ids = _upgraded()
    a = ids["a"]
    assert mixed.heartbeat(a, 1, "a") == REBALANCE_IN_PROGRESS
    for _ in range(5):           # alive (heartbeats within its 10 s session) but never rejoins
        mixed.coord.advance(6_000)
        mixed.heartbeat(a, 1, "a")
    assert a not in {m.member_id for m in mixed.coord.group("g").members}


def test_a_classic_member_that_joins_but_never_syncs_is_fenced():
    mixed, ids = _upgraded()
    a = ids["a"]
    mixed.join(member_id=a, instance="a", owned=(0, 1))
    for _ in range(5):
        mixed.coord.advance(6_000)
        mixed.heartbeat(a, 2, "a")
    assert a not in {m.member_id for m in mixed.coord.group("g").members}


def test_a_classic_static_member_is_replaced_by_instance_id():
    mixed, ids = _upgraded()
    joined = mixed.join(instance="a", owned=()).response        # a restarted: empty member id
    assert joined.error_code == 0 and joined.member_id != ids["a"]
    group = mixed.coord.group("g")
    assert group.static_members["a"] == joined.member_id and ids["a"] not in {m.member_id for m in group.members}
    assert dict(_member(mixed, joined.member_id).assigned) == {FOO: frozenset({0, 1})}
    assert partitions_of(mixed.sync(joined.member_id, 2, instance="a").response.assignment) == {0, 1}


def test_a_joining_member_changes_its_subscription_and_bumps_the_epoch():
    mixed, ids = _upgraded()
    mixed.coord.set_topics({"foo": (FOO, 4)})
    joined = mixed.join(member_id=ids["a"], instance="a", owned=(0, 1), topics=("foo", "none")).response
    assert mixed.coord.group("g").group_epoch == 3 and joined.error_code == 0
    assert _member(mixed, ids["a"]).subscribed_topic_names == frozenset({"foo", "none"})


def test_describe_shows_classic_members_with_member_type_0():
    mixed, ids = _upgraded()
    response = mixed.coord.handle(ConsumerGroupDescribeRequest[1](group_ids=["g"],
                                                                  include_authorized_operations=False)).response
    group = ConsumerGroupDescribeResponse.decode(response.encode(version=1), version=1).groups[0]
    types = {m.member_id: m.member_type for m in group.members}
    assert types == {ids["a"]: 0, ids["b"]: 0, "c": 1}


def test_offset_commit_from_a_classic_member_uses_its_generation():
    mixed, ids = _upgraded()
    a = ids["a"]

    def commit(generation, version):
        request = commit_request("g", {("foo", 0): 5}, version=version, generation=generation, member_id=a)
        return errors(mixed.coord.handle(request).response)[("foo", 0)]

    assert commit(1, 8) == 0                       # any OffsetCommit version: a classic client
    assert commit(2, 9) == ILLEGAL_GENERATION      # not STALE_MEMBER_EPOCH: it speaks classic


def test_leave_group_from_a_classic_member_fences_it():
    mixed, ids = _upgraded()
    response = mixed.leave(ids["b"], "b")
    assert response.error_code == 0 and response.members[0].error_code == 0
    group = mixed.coord.group("g")
    assert group.group_epoch == 3 and ids["b"] not in {m.member_id for m in group.members}


def test_a_classic_join_to_an_empty_consumer_group_makes_it_classic_again():
    mixed = Mixed()
    mixed.consumer(member_id="c")
    mixed.consumer(member_id="c", epoch=-1)
    start = len(mixed.coord.records)
    joined = mixed.join(instance="x")
    assert mixed.coord.get_group("g").group_type == "classic"
    types = [int.from_bytes(k[:2], "big") for k, v in mixed.coord.records[start:] if v is None]
    assert types == [6, 4, 3]          # the empty consumer group's tombstones
    mixed.coord.advance(1)
    assert joined.done and joined.response.error_code == 0 and joined.response.generation_id == 1
