"""SubscribedTopicRegex in ConsumerGroupHeartbeat: resolution, record 16, epochs, errors, replay."""

from __future__ import annotations

import uuid

from helpers.consumer import BAR, FOO, TOPICS, assignment_of, heartbeat, new_coordinator

from kgroup.coordinator import GroupCoordinator
from kgroup.kafka_errors import INVALID_REGULAR_EXPRESSION, NAMES

FOO2 = uuid.UUID("00000000-0000-0000-0000-00000000f002")
REGULAR_EXPRESSION = 16


def _types(reply) -> list:
    return [(int.from_bytes(k[:2], "big"), v is None) for k, v in reply.records[0].records]


def _join(coord, member_id, regex, group_id="g"):
    return heartbeat(coord, group_id, member_id, topics=[], regex=regex)


def test_invalid_regular_expression_is_code_128_with_kafkas_message():
    coord = new_coordinator()
    response = _join(coord, "a", "[")
    assert (response.error_code, NAMES[128]) == (INVALID_REGULAR_EXPRESSION, "INVALID_REGULAR_EXPRESSION")
    assert response.error_message.startswith("SubscribedTopicRegex `[` is not a valid regular expression: ")
    assert coord.get_group("g") is None and coord.records == []


def test_a_regex_join_is_assigned_the_topics_it_fully_matches():
    coord = new_coordinator(topics={**TOPICS, "foo2": (FOO2, 2), "xfoo": (uuid.uuid4(), 1)})
    response = _join(coord, "a", "foo.*")
    assert response.error_code == 0 and response.member_epoch == 2
    assert assignment_of(response) == {FOO: frozenset(range(6)), FOO2: frozenset(range(2))}
    group = coord.group("g")
    assert group.resolved_regexes == {"foo.*": frozenset({"foo", "foo2"})}
    assert set(group.subscribed_topics) == {"foo", "foo2"}
    assert group.members[0].subscribed_topic_regex == "foo.*"


def test_the_join_writes_the_regex_record_in_its_batch():
    coord = new_coordinator()
    from kgroup.protocol import ConsumerGroupHeartbeatRequest
    reply = coord.handle(ConsumerGroupHeartbeatRequest[1](
        group_id="g", member_id="a", member_epoch=0, rebalance_timeout_ms=1000,
        subscribed_topic_names=None, subscribed_topic_regex="ba.", topic_partitions=[]))
    assert reply.response.error_code == 0
    assert [t for t, _ in _types(reply)] == [5, REGULAR_EXPRESSION, 3, 7, 6, 8]   # no type 4 since Kafka 4.1
    from kgroup.records import decode_value
    value = dict(reply.records[0].records)[next(k for k, _ in reply.records[0].records
                                              if int.from_bytes(k[:2], "big") == REGULAR_EXPRESSION)]
    assert decode_value(REGULAR_EXPRESSION, value).data["topics"] == ["bar"]


def test_v0_has_no_regex_field():
    coord = new_coordinator()
    response = heartbeat(coord, member_id="", version=0, topics=["foo"], regex="[")
    assert response.error_code == 0 and coord.group("g").resolved_regexes == {}


def test_a_second_member_with_the_same_regex_bumps_once_and_writes_no_second_record():
    coord = new_coordinator()
    a = _join(coord, "a", "foo|bar")
    b = _join(coord, "b", "foo|bar")
    assert (a.member_epoch, b.member_epoch) == (2, 3)
    types = [int.from_bytes(key[:2], "big") for key, _ in coord.records]
    assert types.count(REGULAR_EXPRESSION) == 1


def test_a_new_matching_topic_bumps_the_epoch_at_a_heartbeat_10s_after_the_last_resolution():
    coord = new_coordinator()
    a = _join(coord, "a", "foo.*")
    owned = assignment_of(a)
    coord.set_topics({**TOPICS, "foo2": (FOO2, 2)})
    coord.advance(9_999)      # Kafka resolves a group's regexes at most every 10 s
    early = heartbeat(coord, member_id="a", epoch=a.member_epoch, owned_partitions=owned)
    assert (early.member_epoch, early.assignment) == (2, None)
    coord.advance(1)
    before = len(coord.records)
    response = heartbeat(coord, member_id="a", epoch=a.member_epoch, owned_partitions=owned)
    assert response.member_epoch == 3
    assert assignment_of(response) == {FOO: frozenset(range(6)), FOO2: frozenset(range(2))}
    assert coord.group("g").resolved_regexes == {"foo.*": frozenset({"foo", "foo2"})}
    assert [t for t, _ in _types_of(coord.records[before:])][:1] == [REGULAR_EXPRESSION]
    coord.set_topics({**TOPICS, "foo2": (FOO2, 2), "other": (uuid.uuid4(), 1)})
    coord.advance(10_000)
    before = len(coord.records)
    quiet = heartbeat(coord, member_id="a", epoch=3, owned_partitions=assignment_of(response))
    assert quiet.member_epoch == 3 and quiet.assignment is None
    # the refresh found nothing new: one record 16 (Kafka writes every regex it resolved), no bump
    assert _types_of(coord.records[before:]) == [(REGULAR_EXPRESSION, False)]


def test_a_new_regex_resolves_every_regex_of_the_group_when_the_image_moved():
    coord = new_coordinator()
    _join(coord, "a", "foo.*")
    coord.set_topics({**TOPICS, "foo2": (FOO2, 2)})
    _join(coord, "b", "ba.")        # resolved at once, and "foo.*" with it: one batch
    assert coord.group("g").resolved_regexes == {"foo.*": frozenset({"foo", "foo2"}), "ba.": frozenset({"bar"})}


def test_after_a_restart_the_regexes_are_resolved_again_10s_after_their_last_record():
    coord = new_coordinator()
    a = _join(coord, "a", "foo.*")
    coord.advance(3_000)
    rebuilt = GroupCoordinator.from_records(coord.records, config=dict(coord.config.as_dict()),
                                            now_ms=coord.now_ms)
    rebuilt.set_topics({**TOPICS, "foo2": (FOO2, 2)})
    owned = assignment_of(a)
    assert heartbeat(rebuilt, member_id="a", epoch=2, owned_partitions=owned).member_epoch == 2
    rebuilt.advance(7_000)
    assert heartbeat(rebuilt, member_id="a", epoch=2, owned_partitions=owned).member_epoch == 3


def _types_of(records) -> list:
    return [(int.from_bytes(k[:2], "big"), v is None) for k, v in records]


def test_changing_the_regex_tombstones_the_unused_one():
    coord = new_coordinator()
    a = _join(coord, "a", "foo")
    reply = coord.handle(heartbeat.__globals__["ConsumerGroupHeartbeatRequest"][1](
        group_id="g", member_id="a", member_epoch=a.member_epoch, rebalance_timeout_ms=-1,
        subscribed_topic_names=None, subscribed_topic_regex="bar", topic_partitions=None))
    assert reply.response.error_code == 0 and coord.group("g").group_epoch == 3
    assert assignment_of(reply.response) == {}      # foo revoked first, bar once released
    assert (REGULAR_EXPRESSION, True) in _types(reply) and (REGULAR_EXPRESSION, False) in _types(reply)
    assert coord.group("g").resolved_regexes == {"bar": frozenset({"bar"})}


def test_a_leaving_member_tombstones_its_regex_unless_another_uses_it():
    coord = new_coordinator()
    _join(coord, "a", "foo")
    _join(coord, "b", "foo")
    _join(coord, "c", "bar")
    heartbeat(coord, member_id="a", epoch=-1)
    assert set(coord.group("g").resolved_regexes) == {"foo", "bar"}
    heartbeat(coord, member_id="c", epoch=-1)
    group = coord.group("g")
    assert group.resolved_regexes == {"foo": frozenset({"foo"})} and set(group.subscribed_topics) == {"foo"}


def test_names_and_regex_subscriptions_share_the_topics():
    coord = new_coordinator()
    heartbeat(coord, member_id="a", topics=["bar"])
    b = _join(coord, "b", "b.*")
    group = coord.group("g")
    assert b.error_code == 0 and set(group.subscribed_topics) == {"bar"}
    assert set(group.target["a"]) | set(group.target["b"]) == {BAR} and group.target["b"]


def test_from_records_rebuilds_the_resolutions():
    coord = new_coordinator()
    _join(coord, "a", "foo")
    _join(coord, "b", "ba.")
    heartbeat(coord, member_id="b", epoch=-1)
    _join(coord, "c", "f.o|bar")
    rebuilt = GroupCoordinator.from_records(coord.records, config=dict(coord.config.as_dict()))
    assert rebuilt.group("g") == coord.group("g")
    assert rebuilt.group("g").resolved_regexes == {"foo": frozenset({"foo"}),
                                                   "f.o|bar": frozenset({"foo", "bar"})}
