"""ConsumerGroupHeartbeat on the embedded coordinator: joins, reconciliation, static members, errors."""

from __future__ import annotations

import uuid

import pytest
from helpers.consumer import BAR, FOO, TOPICS, assignment_of, classic_join, heartbeat, new_coordinator

from kgroup.coordinator import GroupCoordinator
from kgroup.kafka_errors import (FENCED_INSTANCE_ID, FENCED_MEMBER_EPOCH, GROUP_ID_NOT_FOUND,
                                 GROUP_MAX_SIZE_REACHED, INVALID_REQUEST, UNKNOWN_MEMBER_ID,
                                 UNKNOWN_SERVER_ERROR, UNRELEASED_INSTANCE_ID, UNSUPPORTED_ASSIGNOR)


def _stable(coord, member_id, response, group_id="g"):
    """Heartbeat until the member's answer stops changing; the last response."""
    assigned = assignment_of(response)
    for _ in range(5):
        response = heartbeat(coord, group_id, member_id, response.member_epoch, owned_partitions=assigned or {})
        assert response.error_code == 0
        if response.assignment is None:
            return response, assigned
        assigned = assignment_of(response)
    return response, assigned


def test_first_member_gets_every_partition_and_the_interval():
    coord = new_coordinator()
    response = heartbeat(coord, member_id="a")
    assert (response.error_code, response.member_id, response.member_epoch) == (0, "a", 2)
    assert response.heartbeat_interval_ms == 5000
    assert assignment_of(response) == {FOO: frozenset(range(6))}
    group = coord.group("g")
    assert (group.state, group.group_epoch, group.assignment_epoch) == ("Stable", 2, 2)


def test_steady_heartbeat_sends_no_assignment_and_writes_nothing():
    coord = new_coordinator()
    first = heartbeat(coord, member_id="a")
    before = len(coord.records)
    again = heartbeat(coord, member_id="a", epoch=2, owned_partitions=assignment_of(first))
    assert (again.error_code, again.member_epoch, again.assignment) == (0, 2, None)
    assert len(coord.records) == before


def test_v0_join_gets_a_member_id_from_the_coordinator():
    coord = new_coordinator()
    response = heartbeat(coord, version=0, member_id="")
    assert response.error_code == 0
    assert len(response.member_id) == 22 and "=" not in response.member_id
    assert heartbeat(coord, version=1, member_id="").error_code == INVALID_REQUEST


def test_new_member_waits_until_the_old_owner_revoked():
    coord = new_coordinator()
    a = heartbeat(coord, member_id="a")
    b = heartbeat(coord, member_id="b")
    # b's target is half of foo, still owned by a: b gets nothing yet but reaches epoch 3
    assert (b.member_epoch, assignment_of(b)) == (3, {})
    # a must revoke first: its answer keeps epoch 2 and shrinks its assignment
    a = heartbeat(coord, member_id="a", epoch=2, owned_partitions={FOO: frozenset(range(6))})
    kept = assignment_of(a)
    assert a.member_epoch == 2 and len(kept[FOO]) == 3
    assert coord.group("g").state == "Reconciling"
    # while a still reports the revoked partitions, nothing moves
    still = heartbeat(coord, member_id="a", epoch=2, owned_partitions={FOO: frozenset(range(6))})
    assert (still.member_epoch, still.assignment) == (2, None)
    assert heartbeat(coord, member_id="b", epoch=3, owned_partitions={}).assignment is None
    # a released them: its epoch advances, then b receives the freed partitions
    a = heartbeat(coord, member_id="a", epoch=2, owned_partitions=kept)
    assert a.member_epoch == 3
    b = heartbeat(coord, member_id="b", epoch=3, owned_partitions={})
    assert assignment_of(b) == {FOO: frozenset(range(6)) - kept[FOO]}
    heartbeat(coord, member_id="b", epoch=3, owned_partitions=assignment_of(b))
    assert coord.group("g").state == "Stable"


def test_subscription_change_bumps_the_group_epoch():
    coord = new_coordinator()
    a = heartbeat(coord, member_id="a")
    changed = heartbeat(coord, member_id="a", epoch=2, topics=["foo", "bar"], owned_partitions=assignment_of(a))
    assert changed.member_epoch == 3
    assert assignment_of(changed) == {FOO: frozenset(range(6)), BAR: frozenset(range(3))}
    # a rack or rebalance timeout change writes the member but keeps the epoch
    same = heartbeat(coord, member_id="a", epoch=3, rack_id="r1", rebalance_timeout_ms=1000)
    assert same.member_epoch == 3 and coord.group("g").group_epoch == 3


def test_partition_count_change_bumps_the_group_epoch():
    coord = new_coordinator()
    a = heartbeat(coord, member_id="a")
    coord.set_topics({"foo": (FOO, 8), "bar": (BAR, 3)})
    grown = heartbeat(coord, member_id="a", epoch=2, owned_partitions=assignment_of(a))
    assert grown.member_epoch == 3 and assignment_of(grown) == {FOO: frozenset(range(8))}


def test_leave_bumps_the_epoch_and_frees_the_partitions():
    coord = new_coordinator()
    a = heartbeat(coord, member_id="a")
    b = heartbeat(coord, member_id="b")
    _stable(coord, "a", a)
    left = heartbeat(coord, member_id="a", epoch=-1)
    assert (left.error_code, left.member_id, left.member_epoch, left.heartbeat_interval_ms) == (0, "a", -1, 0)
    group = coord.group("g")
    assert [m.member_id for m in group.members] == ["b"] and group.state == "Assigning"
    b = heartbeat(coord, member_id="b", epoch=b.member_epoch, owned_partitions={})
    assert assignment_of(b) == {FOO: frozenset(range(6))}
    assert coord.timer_deadline("session-timeout-g-a") is None


def test_static_member_bounce_gets_its_partitions_back_without_an_epoch_bump():
    coord = new_coordinator()
    a = heartbeat(coord, member_id="a1", instance_id="i-a")
    b = heartbeat(coord, member_id="b1", instance_id="i-b")
    _, a_assigned = _stable(coord, "a1", a)
    _, b_assigned = _stable(coord, "b1", heartbeat(coord, member_id="b1", epoch=b.member_epoch, owned_partitions={}))
    epoch = coord.group("g").group_epoch
    parked = heartbeat(coord, member_id="a1", epoch=-2, instance_id="i-a")
    assert (parked.error_code, parked.member_epoch, parked.heartbeat_interval_ms) == (0, -2, 0)
    # the instance id is not released yet for a second live member ... until this one parked
    back = heartbeat(coord, member_id="a2", instance_id="i-a")
    assert back.error_code == 0 and back.member_epoch == epoch
    assert assignment_of(back) == a_assigned
    group = coord.group("g")
    assert group.group_epoch == epoch and group.static_members == {"i-a": "a2", "i-b": "b1"}
    assert sorted(m.member_id for m in group.members) == ["a2", "b1"]


def test_second_live_member_with_an_instance_id_is_refused():
    coord = new_coordinator()
    heartbeat(coord, member_id="a1", instance_id="i-a")
    dup = heartbeat(coord, member_id="a2", instance_id="i-a")
    assert dup.error_code == UNRELEASED_INSTANCE_ID and dup.member_id is None
    assert heartbeat(coord, member_id="a2", epoch=1, instance_id="i-a").error_code == FENCED_INSTANCE_ID
    assert heartbeat(coord, member_id="a2", epoch=1, instance_id="i-x").error_code == UNKNOWN_MEMBER_ID


def test_session_timeout_fences_the_member():
    coord = new_coordinator()
    heartbeat(coord, member_id="a")
    b = heartbeat(coord, member_id="b")
    coord.advance(40_000)
    heartbeat(coord, member_id="b", epoch=b.member_epoch, owned_partitions={})
    coord.advance(6_000)      # a's 45 s session ran out; b's did not
    group = coord.group("g")
    assert [m.member_id for m in group.members] == ["b"] and group.group_epoch == 4
    assert heartbeat(coord, member_id="a", epoch=2).error_code == UNKNOWN_MEMBER_ID


def test_parked_static_member_is_fenced_when_its_session_expires():
    coord = new_coordinator()
    heartbeat(coord, member_id="a1", instance_id="i-a")
    heartbeat(coord, member_id="a1", epoch=-2, instance_id="i-a")
    coord.advance(45_000)
    assert coord.group("g").members == ()


def test_rebalance_timeout_fences_a_member_that_does_not_revoke():
    coord = new_coordinator()
    heartbeat(coord, member_id="a", rebalance_timeout_ms=10_000)
    heartbeat(coord, member_id="b")
    revoking = heartbeat(coord, member_id="a", epoch=2, owned_partitions={FOO: frozenset(range(6))})
    assert revoking.member_epoch == 2
    assert coord.timer_deadline("rebalance-timeout-g-a") == 10_000
    coord.advance(10_000)
    assert [m.member_id for m in coord.group("g").members] == ["b"]


def test_fenced_member_epoch():
    coord = new_coordinator()
    a = heartbeat(coord, member_id="a")
    assert heartbeat(coord, member_id="a", epoch=5).error_code == FENCED_MEMBER_EPOCH
    heartbeat(coord, member_id="a", epoch=2, topics=["foo", "bar"], owned_partitions=assignment_of(a))
    # one epoch behind with owned partitions inside the assignment: a lost response, accepted
    assert heartbeat(coord, member_id="a", epoch=2, owned_partitions=assignment_of(a)).error_code == 0
    assert heartbeat(coord, member_id="a", epoch=2).error_code == FENCED_MEMBER_EPOCH


def test_a_member_rejoins_under_its_member_id_with_epoch_zero():
    """Kafka 4.3+ (KAFKA-19233): epoch 0 is a rejoin, never fenced — the member keeps its epoch and
    gets its whole assignment again, and nothing changes in the group (4.0 answered FENCED_MEMBER_EPOCH)."""
    coord = new_coordinator()
    a = heartbeat(coord, member_id="a")
    epoch = a.member_epoch
    written = len(coord.records)
    again = heartbeat(coord, member_id="a", epoch=0)
    assert again.error_code == 0 and again.member_epoch == epoch
    assert assignment_of(again) == assignment_of(a)
    assert coord.group("g").group_epoch == epoch
    assert {m.member_id for m in coord.group("g").members} == {"a"}
    assert len(coord.records) - written <= 1     # at most the member's metadata (client details)


def test_unknown_group_and_member():
    coord = new_coordinator()
    assert heartbeat(coord, member_id="a", epoch=1).error_code == GROUP_ID_NOT_FOUND
    assert heartbeat(coord, member_id="a", epoch=-1).error_code == GROUP_ID_NOT_FOUND
    heartbeat(coord, member_id="a")
    assert heartbeat(coord, member_id="z", epoch=1).error_code == UNKNOWN_MEMBER_ID
    assert heartbeat(coord, member_id="z", epoch=-1).error_code == UNKNOWN_MEMBER_ID


def test_a_classic_group_with_members_is_not_a_consumer_group():
    coord = new_coordinator(**{"group.consumer.migration.policy": "downgrade"})     # no online upgrade
    classic_join(coord, "g")
    response = heartbeat(coord, member_id="a")
    assert response.error_code == GROUP_ID_NOT_FOUND and "not a consumer group" in response.error_message


def test_group_max_size():
    coord = new_coordinator(**{"group.consumer.max.size": 1})
    heartbeat(coord, member_id="a")
    assert heartbeat(coord, member_id="b").error_code == GROUP_MAX_SIZE_REACHED
    assert heartbeat(coord, member_id="a", epoch=2).error_code == 0


def test_server_assignor_choice_and_failure(caplog):
    coord = new_coordinator()
    assert heartbeat(coord, member_id="a", server_assignor="uniform").error_code == UNSUPPORTED_ASSIGNOR
    failed = heartbeat(coord, member_id="a", server_assignor="test-failing")
    # Kafka's handleOperationException answers UNKNOWN_SERVER_ERROR without a message and logs it
    assert (failed.error_code, failed.error_message) == (UNKNOWN_SERVER_ERROR, None)
    assert "Failed to compute a new target assignment for epoch 2" in caplog.text
    assert coord.group("g") is None      # nothing was written


@pytest.mark.parametrize("fields, message", [
    (dict(version=1, member_id=" "), "MemberId can't be empty."),
    (dict(version=0, member_id="", epoch=1), "MemberId can't be empty."),
    (dict(version=0, member_id="", epoch=-1), "MemberId can't be empty."),
    (dict(version=1, member_id="", group_id=" "), "MemberId can't be empty."),     # the rules' order
    (dict(group_id=" ", member_id="a"), "GroupId can't be empty."),
    (dict(member_id="a", instance_id=""), "InstanceId can't be empty."),
    (dict(member_id="a", rack_id=" "), "RackId can't be empty."),
    (dict(member_id="a", rebalance_timeout_ms=-1), "RebalanceTimeoutMs must be provided in first request."),
    (dict(member_id="a", owned_partitions={FOO: frozenset({0})}), "TopicPartitions must be empty when"),
    (dict(member_id="a", topics=[], owned_partitions=None), None),
    (dict(member_id="a", epoch=-2), "InstanceId can't be null."),
    (dict(member_id="a", epoch=-3), "MemberEpoch is invalid."),
])
def test_invalid_requests(fields, message):
    coord = new_coordinator()
    response = heartbeat(coord, **fields)
    if message is None:      # an empty subscription is accepted
        assert response.error_code == 0
        return
    assert (response.error_code, response.member_id, response.member_epoch) == (INVALID_REQUEST, None, 0)
    assert response.error_message.startswith(message)


def test_null_topic_partitions_on_join_is_invalid():
    coord = new_coordinator()
    from kgroup.protocol import ConsumerGroupHeartbeatRequest
    request = ConsumerGroupHeartbeatRequest[1](group_id="g", member_id="a", member_epoch=0,
                                               rebalance_timeout_ms=1000, subscribed_topic_names=["foo"])
    assert coord.handle(request).response.error_code == INVALID_REQUEST
    request = ConsumerGroupHeartbeatRequest[1](group_id="g", member_id="a", member_epoch=0,
                                               rebalance_timeout_ms=1000, topic_partitions=[])
    assert "Either SubscribedTopicNames" in coord.handle(request).response.error_message


def test_records_rebuild_the_same_groups():
    coord = new_coordinator()
    a = heartbeat(coord, member_id="a", instance_id="i-a")
    b = heartbeat(coord, member_id="b", topics=["foo", "bar"])
    heartbeat(coord, member_id="a", epoch=2, owned_partitions=assignment_of(a))
    heartbeat(coord, group_id="h", member_id="c")
    heartbeat(coord, group_id="h", member_id="c", epoch=-1)
    rebuilt = GroupCoordinator.from_records(coord.records, config=dict(coord.config.as_dict()))
    for group_id in ("g", "h"):
        assert rebuilt.group(group_id) == coord.group(group_id)
    assert rebuilt.timer_deadline("session-timeout-g-b") == 45_000
    assert b.error_code == 0


def test_failed_append_reverts_the_heartbeat():
    coord = new_coordinator()
    a = heartbeat(coord, member_id="a")
    before, records = coord.group("g"), list(coord.records)

    def refuse(entries):
        raise OSError("disk full")

    coord.log_writer = refuse
    reply = coord.handle(heartbeat.__globals__["ConsumerGroupHeartbeatRequest"][1](
        group_id="g", member_id="b", member_epoch=0, rebalance_timeout_ms=1000,
        subscribed_topic_names=["foo"], topic_partitions=[]))
    assert reply.response is None and isinstance(reply.error, OSError)
    assert coord.group("g") == before and coord.records == records
    assert coord.timer_deadline("session-timeout-g-b") is None
    coord.log_writer = None
    again = heartbeat(coord, member_id="a", epoch=2, owned_partitions=assignment_of(a))
    assert (again.error_code, again.assignment) == (0, None)


def test_a_join_writes_kafkas_records_in_one_batch():
    coord = new_coordinator()
    from kgroup.protocol import ConsumerGroupHeartbeatRequest
    reply = coord.handle(ConsumerGroupHeartbeatRequest[1](
        group_id="g", member_id="a", member_epoch=0, rebalance_timeout_ms=1000,
        subscribed_topic_names=["foo"], topic_partitions=[]))
    assert len(reply.records) == 1
    types = [int.from_bytes(key[:2], "big") for key, _ in reply.records[0].records]
    # member metadata, group epoch (with the metadata hash: Kafka 4.1+ writes no partition
    # metadata record), target row, target epoch, current assignment
    assert types == [5, 3, 7, 6, 8]
    left = coord.handle(ConsumerGroupHeartbeatRequest[1](group_id="g", member_id="a", member_epoch=-1))
    # the last member's leave: its tombstones, the group epoch, and (Kafka 4.4) the target epoch
    # catching up with it, so the empty group is not left Assigning
    assert [(int.from_bytes(k[:2], "big"), v is None) for k, v in left.records[0].records] == [
        (8, True), (7, True), (5, True), (3, False), (6, False)]


def test_an_empty_classic_group_gives_way_to_a_consumer_group():
    coord = new_coordinator()
    from helpers.offsets import commit_request
    coord.handle(commit_request("g", {("foo", 0): 3}))        # a "simple" classic group, no members
    failed = heartbeat(coord, member_id="a", server_assignor="test-failing")
    assert failed.error_code == UNKNOWN_SERVER_ERROR and coord.get_group("g").group_type == "classic"
    joined = heartbeat(coord, member_id="a")
    assert joined.error_code == 0 and coord.get_group("g").group_type == "consumer"
    assert coord.committed_offsets("g")[("foo", 0)].offset == 3


def test_the_target_assignment_is_written_as_a_diff():
    coord = new_coordinator()
    heartbeat(coord, member_id="a", topics=["foo"])
    heartbeat(coord, member_id="b", topics=["bar"])
    from kgroup.records import decode_key
    before = len(coord.records)
    heartbeat(coord, member_id="c", topics=["bar"])       # a's row does not change: not rewritten
    batch = [(int.from_bytes(k[:2], "big"), decode_key(k).data.get("memberId")) for k, _ in coord.records[before:]]
    assert batch == [(5, "c"), (3, None), (7, "b"), (7, "c"), (6, None), (8, "c")]


@pytest.mark.parametrize("epoch", [-2, -1])
def test_a_refused_leave_puts_the_partition_owners_back(epoch):
    """Who owns which partition at which epoch is not in a snapshot: a refused static leave
    (owners' epoch -2) or leave (owners released) must put it back all the same."""
    from kgroup.protocol import ConsumerGroupHeartbeatRequest
    coord = new_coordinator()
    a = heartbeat(coord, member_id="a", instance_id="i")
    group = coord.get_group("g")
    owners = {(t, p): group.partition_epoch(t, p) for t, parts in assignment_of(a).items() for p in parts}
    assert set(owners.values()) == {2}

    def refuse(entries):
        raise OSError("disk full")

    coord.log_writer = refuse
    reply = coord.handle(ConsumerGroupHeartbeatRequest[1](
        group_id="g", member_id="a", member_epoch=epoch, instance_id="i", rebalance_timeout_ms=-1,
        subscribed_topic_names=None, topic_partitions=None))
    coord.log_writer = None
    assert isinstance(reply.error, OSError)
    group = coord.get_group("g")
    assert {key: group.partition_epoch(*key) for key in owners} == owners


# ---- details pinned against Kafka 4.0's GroupMetadataManager --------------------------------
def test_leave_names_a_missing_or_classic_group_like_kafka():
    """consumerGroupLeave looks the group up with consumerGroup(groupId): group() says "Group g not
    found.", a classic group "is not a consumer group" (not the join path's "Consumer group g not found.")."""
    coord = new_coordinator(**{"group.consumer.migration.policy": "downgrade"})
    missing = heartbeat(coord, member_id="a", epoch=-1)
    assert (missing.error_code, missing.error_message) == (GROUP_ID_NOT_FOUND, "Group g not found.")
    classic_join(coord, "g")
    classic = heartbeat(coord, member_id="a", epoch=-1)
    assert (classic.error_code, classic.error_message) == (GROUP_ID_NOT_FOUND, "Group g is not a consumer group.")
    parked = heartbeat(coord, member_id="a", epoch=-2, instance_id="i-a")
    assert (parked.error_code, parked.error_message) == (GROUP_ID_NOT_FOUND, "Group g is not a consumer group.")

def test_fenced_instance_id_message():
    """throwIfInstanceIdIsFenced: "Static member <id> with instance id <i> was fenced by member <owner>."."""
    coord = new_coordinator()
    heartbeat(coord, member_id="a1", instance_id="i-a")
    for epoch in (2, -1, -2):
        fenced = heartbeat(coord, member_id="a2", epoch=epoch, instance_id="i-a")
        assert (fenced.error_code, fenced.error_message) == (
            FENCED_INSTANCE_ID, "Static member a2 with instance id i-a was fenced by member a1.")

def test_static_join_with_a_new_instance_id_skips_the_epoch_check():
    """getOrMaybeSubscribeStaticConsumerGroupMember: an epoch-0 join whose instance id maps to no
    member takes getOrMaybeCreateMember(memberId, true) as it is — no epoch check — so a known
    member id at epoch 3 is not fenced; it keeps its epoch and assignment. (Since Kafka 4.3,
    KAFKA-19233, the dynamic path's check lets epoch 0 through as well.)"""
    coord = new_coordinator()
    a = heartbeat(coord, member_id="a")
    a = heartbeat(coord, member_id="a", epoch=2, topics=["foo", "bar"], owned_partitions=assignment_of(a))
    assert a.member_epoch == 3
    rejoined = heartbeat(coord, member_id="a", epoch=0, topics=["foo", "bar"])     # dynamic: a rejoin (4.3+)
    assert (rejoined.error_code, rejoined.member_epoch) == (0, 3)
    joined = heartbeat(coord, member_id="a", epoch=0, instance_id="i-a", topics=["foo", "bar"])
    assert (joined.error_code, joined.member_epoch) == (0, 3)
    assert assignment_of(joined) == assignment_of(a)
    assert coord.group("g").static_members == {"i-a": "a"}

def test_lost_response_tolerance_counts_every_topic_the_member_lists():
    """isSubset: a listed topic the member is not assigned fails the subset test even with no
    partitions (``target.get(topicId) == null``), so the previous epoch is FENCED_MEMBER_EPOCH."""
    coord = new_coordinator()
    a = heartbeat(coord, member_id="a")
    heartbeat(coord, member_id="a", epoch=2, topics=["foo", "bar"], owned_partitions=assignment_of(a))
    unassigned = uuid.UUID(int=7)
    assert heartbeat(coord, member_id="a", epoch=2, owned_partitions=assignment_of(a)).error_code == 0
    stale = heartbeat(coord, member_id="a", epoch=2, owned_partitions={**assignment_of(a), unassigned: frozenset()})
    assert stale.error_code == FENCED_MEMBER_EPOCH


def test_a_full_heartbeat_gets_the_unchanged_assignment_again():
    """consumerGroupHeartbeat's isFullRequest: RebalanceTimeoutMs, SubscribedTopicNames and
    TopicPartitions all set (what a client sends after an error) returns the assignment even when it
    did not change; lacking any one of them, an unchanged assignment is not sent."""
    coord = new_coordinator()
    a = heartbeat(coord, member_id="a")
    held = assignment_of(a)
    full = heartbeat(coord, member_id="a", epoch=2, rebalance_timeout_ms=1000, topics=["foo"], owned_partitions=held)
    assert assignment_of(full) == held
    for partial in (dict(topics=["foo"], owned_partitions=held), dict(rebalance_timeout_ms=1000, owned_partitions=held),
                    dict(rebalance_timeout_ms=1000, topics=["foo"])):
        assert heartbeat(coord, member_id="a", epoch=2, **partial).assignment is None


def test_a_server_assignor_change_bumps_the_epoch_when_the_preferred_assignor_changes():
    """Kafka 4.4 (KAFKA-20434, hasPreferredServerAssignorChanged): a new ServerAssignor bumps the
    group epoch when it changes the assignor most members prefer — the target is recomputed with
    it (before, it waited for the next bump); one that leaves the preference as it was only writes
    the member record."""
    coord = new_coordinator(**{"group.consumer.assignors": "test-sticky,range"})
    for member_id in "abc":
        heartbeat(coord, member_id=member_id, server_assignor="test-sticky")
    members = coord.get_group("g").members
    for _ in range(2):      # every member reconciled to the last epoch
        for m in "abc":
            heartbeat(coord, member_id=m, epoch=members[m].member_epoch, owned_partitions=dict(members[m].assigned))
    epoch = coord.group("g").group_epoch
    assert coord.group("g").state == "Stable" and all(members[m].member_epoch == epoch for m in "abc")
    owned = {m: dict(members[m].assigned) for m in "abc"}
    # a asks for range: 1 vote against 2 — the preference stays, only the member record is written
    before = len(coord.records)
    a = heartbeat(coord, member_id="a", epoch=epoch, server_assignor="range", owned_partitions=owned["a"])
    assert (a.error_code, coord.group("g").group_epoch) == (0, epoch)
    assert len(coord.records) == before + 1
    # b too: range is preferred now, the epoch bumps
    b = heartbeat(coord, member_id="b", epoch=epoch, server_assignor="range", owned_partitions=owned["b"])
    assert b.error_code == 0 and coord.group("g").group_epoch == epoch + 1


def test_a_member_state_this_coordinator_does_not_know_is_unknown():
    """MemberState.fromValue reads a state byte it does not know (a newer coordinator's) as UNKNOWN
    (127); CurrentAssignmentBuilder then fences the member unless it owns nothing, with Kafka's text."""
    from kgroup.coordinator.consumer import records as rec

    coord = new_coordinator()
    heartbeat(coord, member_id="a")
    member = coord.get_group("g").members["a"]
    future = rec.encoded([rec.current_assignment_record("g", member.evolve(state=3))])
    loaded = GroupCoordinator.from_records(coord.records + future, config=dict(coord.config.as_dict()))
    loaded.set_topics(TOPICS)
    assert loaded.get_group("g").members["a"].state == 127
    fenced = heartbeat(loaded, member_id="a", epoch=2, owned_partitions={FOO: frozenset({0})})
    assert (fenced.error_code, fenced.error_message) == (
        FENCED_MEMBER_EPOCH, "The consumer group member is in a unknown state. "
                             "The member must abandon all its partitions and rejoin.")
    assert heartbeat(loaded, member_id="a", epoch=2, owned_partitions={}).error_code == 0


def test_a_tie_between_preferred_assignors_goes_to_the_first_name_kafkas_maps_iterate():
    """Kafka's Stream.max keeps the first of equal counts, in its map's order: with one member
    each for range and uniform it is uniform (checked with Kafka 4.4's TimelineHashMap and a
    HashMap copy of it), not the first name in alphabetical order."""
    from kgroup.coordinator.consumer.target import preferred_assignor

    coord = new_coordinator(**{"group.consumer.assignors": "range,uniform"})
    heartbeat(coord, member_id="a", server_assignor="range")
    heartbeat(coord, member_id="b", server_assignor="uniform")
    group = coord.get_group("g")
    assert preferred_assignor(group, None, None, "range", as_described=True) == "uniform"
    assert preferred_assignor(group, None, None, "range") == "uniform"
    from kgroup.protocol import ConsumerGroupDescribeRequest

    described = coord.handle(ConsumerGroupDescribeRequest[1](
        group_ids=["g"], include_authorized_operations=False)).response.groups[0]
    assert described.assignor_name == "uniform"
