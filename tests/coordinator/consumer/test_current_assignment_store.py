"""``records.store_current_assignment``: a heartbeat stores its member's new current assignment
without replaying the record, and joins the record's bytes from kept encodings. Both must be what
the generic path gives: the same bytes as ``encode_value`` of the record, and a stored member equal
(field by field, dict orders too) to the one the record's replay makes."""

from __future__ import annotations

import uuid

import pytest

from kgroup.coordinator import GroupCoordinator
from kgroup.coordinator.consumer import records as rec
from kgroup.coordinator.consumer.group import ConsumerGroup, ConsumerGroupMember

A, B = uuid.UUID(int=0xA0 << 120), uuid.UUID(int=0x0B << 120)   # B sorts first by its bytes


def _coordinator_with(member):
    coord = GroupCoordinator()
    group = coord.add_group(ConsumerGroup("g", coord.undo))
    group.put_member(member)
    return coord


def _generic(member):
    """(record bytes, stored member) through current_assignment_record and its replay."""
    coord = _coordinator_with(ConsumerGroupMember(member.member_id))
    record = rec.current_assignment_record("g", member)
    rec.apply(coord, record.record_type, record.key, record.value)
    return rec.encoded([record])[0], coord.get_group("g").members[member.member_id]


def _fields(member):
    return {name: (list(value.items()) if isinstance(value, dict) else value)
            for name in member.__slots__ for value in [getattr(member, name)]}


MEMBERS = [
    ConsumerGroupMember("m", member_epoch=5, previous_member_epoch=4),
    ConsumerGroupMember("m", member_epoch=5, previous_member_epoch=4, assigned={A: frozenset({2, 0, 1})},
                        assignment_epochs={A: {0: 3, 1: 5, 2: 3}}),
    ConsumerGroupMember("m", member_epoch=7, previous_member_epoch=5, state=1,
                        assigned={B: frozenset({1}), A: frozenset({4, 300})},
                        pending_revocation={A: frozenset({9})},
                        assignment_epochs={B: {1: 7}, A: {4: 2, 300: 6, 9: 1}}),
    # a topic without partitions, topics out of the record's order, a missing epoch, an extra one
    ConsumerGroupMember("m", member_epoch=3, assigned={A: frozenset({1}), B: frozenset()},
                        assignment_epochs={A: {1: 3}}),
    ConsumerGroupMember("m", member_epoch=3, assigned={A: frozenset({1}), B: frozenset({2})},
                        assignment_epochs={A: {1: 3}, B: {2: 1}}),
    ConsumerGroupMember("m", member_epoch=3, assigned={A: frozenset({1, 2})}, assignment_epochs={A: {1: 3}}),
    ConsumerGroupMember("m", member_epoch=3, assigned={A: frozenset({1})}, assignment_epochs={A: {1: 3, 8: 1}}),
    ConsumerGroupMember("m", member_epoch=3, assigned={A: frozenset({1})}, assignment_epochs={A: {1: 3}, B: {}}),
]


@pytest.mark.parametrize("member", MEMBERS)
def test_stored_member_and_bytes_are_the_generic_paths(member):
    expected_bytes, expected_member = _generic(member)
    coord = _coordinator_with(ConsumerGroupMember("m"))
    for _ in range(2):       # the second time from the kept row encodings
        assert rec.store_current_assignment(coord, "g", member) == expected_bytes
        assert _fields(coord.get_group("g").members["m"]) == _fields(expected_member)


def test_a_kept_encoding_is_not_reused_for_other_epochs():
    row = {A: frozenset({0, 1})}
    first = ConsumerGroupMember("m", member_epoch=5, assigned=row, assignment_epochs={A: {0: 5, 1: 5}})
    second = first.evolve(member_epoch=6, assignment_epochs={A: {0: 5, 1: 6}})
    coord = _coordinator_with(ConsumerGroupMember("m"))
    rec.store_current_assignment(coord, "g", first)
    assert rec.store_current_assignment(coord, "g", second) == _generic(second)[0]


def test_a_classic_members_kept_assignment_bytes_follow_the_topic_image_and_version():
    """``migration.classic_assignment`` keeps its bytes for the same row: a new image (a renamed
    topic) or another subscription version is encoded again."""
    from kgroup.coordinator.consumer.migration import classic_assignment
    from kgroup.records import decode_assignment

    coord = GroupCoordinator()
    coord.set_topics({"foo": (A, 4)})
    row = {A: frozenset({3, 1})}
    first = classic_assignment(coord, row, b"\x00\x03")
    assert classic_assignment(coord, row, b"\x00\x03") is first
    assert decode_assignment(first)["assignedPartitions"] == [{"topic": "foo", "partitions": [1, 3]}]
    coord.set_topics({"bar": (A, 4)})
    renamed = classic_assignment(coord, row, b"\x00\x03")
    assert decode_assignment(renamed)["assignedPartitions"] == [{"topic": "bar", "partitions": [1, 3]}]
    assert classic_assignment(coord, row, b"\x00\x00")[:2] == b"\x00\x00"
