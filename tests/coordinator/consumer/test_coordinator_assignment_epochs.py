"""KIP-1251 (Kafka 4.3+): per-partition assignment epochs in the member's current assignment, and
OffsetCommit fencing relaxed to assignment epoch <= commit epoch <= member epoch."""

from __future__ import annotations

from helpers.consumer import FOO, assignment_of, heartbeat, new_coordinator
from helpers.offsets import commit_request, errors

from kgroup.coordinator import GroupCoordinator
from kgroup.coordinator.consumer import records as rec
from kgroup.kafka_errors import ILLEGAL_GENERATION, STALE_MEMBER_EPOCH
from kgroup.records import decode_value, encode_value


def _commit(coord, partitions, generation, member_id="a"):
    response = coord.handle(commit_request("g", {("foo", p): 10 for p in partitions},
                                           generation=generation, member_id=member_id)).response
    return set(errors(response).values())


def _current_assignments(coord):
    out = []
    for key, value in coord.records:
        if int.from_bytes(key[:2], "big") == rec.CURRENT_MEMBER_ASSIGNMENT and value is not None:
            out.append(decode_value(rec.CURRENT_MEMBER_ASSIGNMENT, value).data)
    return out


def _two_members():
    """a joins (epoch 2, foo 0-5), b joins (epoch 3): a revokes 3-5, then b gets them at epoch 3."""
    coord = new_coordinator()
    a = heartbeat(coord, member_id="a")
    heartbeat(coord, member_id="b")
    a2 = heartbeat(coord, member_id="a", epoch=2, owned_partitions=assignment_of(a))
    kept = assignment_of(a2)
    a3 = heartbeat(coord, member_id="a", epoch=2, owned_partitions=kept)
    b = heartbeat(coord, member_id="b", epoch=3, owned_partitions={})
    return coord, kept, a3, b


def test_kept_partitions_keep_their_epoch_new_ones_get_the_target_epoch():
    coord, kept, a3, b = _two_members()
    assert a3.member_epoch == 3 and b.member_epoch == 3
    group = coord.get_group("g")
    a = group.members["a"]
    assert {a.assignment_epoch(FOO, p) for p in kept[FOO]} == {2}     # a has had them since epoch 2
    b_member = group.members["b"]
    assert {b_member.assignment_epoch(FOO, p) for p in b_member.assigned[FOO]} == {3}
    last = _current_assignments(coord)[-1]
    assert last["assignedPartitions"][0]["assignmentEpochs"] == [3] * len(b_member.assigned[FOO])


def test_revoking_keeps_the_epoch_of_the_partitions_pending_revocation():
    coord = new_coordinator()
    a = heartbeat(coord, member_id="a")
    heartbeat(coord, member_id="b")
    heartbeat(coord, member_id="a", epoch=2, owned_partitions=assignment_of(a))
    record = _current_assignments(coord)[-1]
    assert record["state"] == 1 and record["partitionsPendingRevocation"][0]["assignmentEpochs"] == [2, 2, 2]


def test_an_older_epoch_commits_partitions_held_since_then():
    coord, kept, a3, b = _two_members()
    # a is at epoch 3 and has held `kept` since epoch 2: a commit at epoch 2 is a late one, accepted
    assert _commit(coord, kept[FOO], generation=2) == {0}
    # b got its partitions at epoch 3: epoch 2 is older than their assignment epoch
    b_parts = coord.get_group("g").members["b"].assigned[FOO]
    assert _commit(coord, b_parts, generation=2, member_id="b") == {STALE_MEMBER_EPOCH}
    # a partition a does not hold, at an older epoch, fails the whole commit
    assert _commit(coord, set(kept[FOO]) | {min(b_parts)}, generation=2) == {STALE_MEMBER_EPOCH}
    # a newer epoch than the member's is refused, as before
    assert _commit(coord, kept[FOO], generation=4) == {STALE_MEMBER_EPOCH}
    assert _commit(coord, kept[FOO], generation=3) == {0}


def test_a_classic_member_gets_illegal_generation_for_the_same_checks():
    from kgroup.coordinator.consumer.group import ClassicMemberMetadata
    from kgroup.coordinator.consumer.offsets import validate_commit
    coord, kept, a3, b = _two_members()
    group = coord.get_group("g")
    member = group.members["a"].evolve(classic=ClassicMemberMetadata(10_000, (("range", b""),)))
    group.members["a"] = member
    assert validate_commit(group, "a", 2, 9, False, [(FOO, p) for p in kept[FOO]]) == 0
    assert validate_commit(group, "a", 2, 9, False, [(FOO, 99)]) == ILLEGAL_GENERATION
    assert validate_commit(group, "a", 4, 9, False, [(FOO, p) for p in kept[FOO]]) == ILLEGAL_GENERATION


def test_epochs_survive_replay_and_a_record_without_them_reads_as_the_member_epoch():
    coord, kept, a3, b = _two_members()
    loaded = GroupCoordinator.from_records(coord.records, config=dict(coord.config.as_dict()))
    assert loaded.group("g") == coord.group("g")
    assert loaded.get_group("g").members["a"].assignment_epoch(FOO, min(kept[FOO])) == 2
    # a Kafka 4.0-4.2 record (no AssignmentEpochs): every partition at max(member epoch, 0)
    old_record = encode_value(rec.CURRENT_MEMBER_ASSIGNMENT, 0, {
        "memberEpoch": 4, "previousMemberEpoch": 3, "state": 0,
        "assignedPartitions": [{"topicId": FOO, "partitions": [0, 1]}], "partitionsPendingRevocation": []})
    rec.apply(loaded, rec.CURRENT_MEMBER_ASSIGNMENT, {"groupId": "g", "memberId": "a"},
              decode_value(rec.CURRENT_MEMBER_ASSIGNMENT, old_record).data)
    assert loaded.get_group("g").members["a"].assignment_epoch(FOO, 0) == 4


def test_a_static_members_temporary_leave_resets_its_epochs_to_zero():
    coord = new_coordinator()
    a = heartbeat(coord, member_id="a", instance_id="i")
    heartbeat(coord, member_id="a", instance_id="i", epoch=-2)
    record = _current_assignments(coord)[-1]
    assert record["memberEpoch"] == -2
    assert record["assignedPartitions"][0]["assignmentEpochs"] == [0] * len(assignment_of(a)[FOO])
    # its successor takes the partitions over, assigned "since epoch 0"
    successor = heartbeat(coord, member_id="a2", instance_id="i")
    assert successor.error_code == 0
    member = coord.get_group("g").members["a2"]
    assert {member.assignment_epoch(FOO, p) for p in member.assigned[FOO]} == {0}
