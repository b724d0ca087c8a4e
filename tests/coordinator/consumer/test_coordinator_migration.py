"""Online upgrade of a classic group to a consumer group (Kafka's validateOnlineUpgrade,
convertToConsumerGroup, ConsumerGroup.fromClassicGroup)."""

from __future__ import annotations

import pytest

from helpers.migration import FOO, Mixed
from kgroup.kafka_errors import GROUP_ID_NOT_FOUND, GROUP_MAX_SIZE_REACHED, REBALANCE_IN_PROGRESS, UNSUPPORTED_VERSION
from kgroup.records import decode_key, decode_value, encode_assignment


def _records(mixed, start):
    out = []
    for key, value in mixed.coord.records[start:]:
        record_type = int.from_bytes(key[:2], "big")
        data = decode_key(key).data
        out.append((record_type, data.get("memberId") or data.get("group"),
                    None if value is None else decode_value(record_type, value).data))
    return out


def test_the_first_consumer_protocol_join_converts_a_stable_classic_group():
    mixed = Mixed()
    ids = mixed.classic_group()
    start = len(mixed.coord.records)
    response = mixed.consumer(member_id="c", topics=["foo"])
    assert response.error_code == 0 and response.member_epoch == 2
    records = _records(mixed, start)
    a, b = ids["a"], ids["b"]
    assert [(t, m) for t, m, _ in records] == [
        (2, "g"),                                    # the classic group's tombstone
        (5, a), (5, b), (3, None), (7, a), (7, b), (6, None), (8, a), (8, b),    # the conversion
        (5, "c"), (3, None), (7, b), (7, "c"), (6, None), (8, "c")]    # the join (a keeps 0-1)
    assert records[0][2] is None
    # Kafka 4.4's fromClassicGroup hashes the members' topics (KIP-1101) into the converted epoch record
    foo_hash = mixed.coord.metadata_hash({"foo"})
    assert foo_hash != 0 and records[3][2] == {"epoch": 1, "metadataHash": foo_hash}
    assert records[6][2] == {"assignmentEpoch": 1, "assignmentTimestamp": 0}   # 4.3+, likewise
    metadata_a = records[1][2]
    assert metadata_a["instanceId"] == "a" and metadata_a["subscribedTopicNames"] == ["foo"]
    assert metadata_a["classicMemberMetadata"]["sessionTimeoutMs"] == 10_000
    assert metadata_a["classicMemberMetadata"]["supportedProtocols"][0]["name"] == "range"
    assert records[7][2]["memberEpoch"] == 1 and records[7][2]["state"] == 0
    # KIP-1251 (4.3+): the converted partitions' assignment epoch is the classic generation
    assert records[7][2]["assignedPartitions"] == [{"topicId": FOO.bytes, "partitions": [0, 1],
                                                    "assignmentEpochs": [1, 1]}]
    assert records[4][2]["topicPartitions"] == [{"topicId": FOO.bytes, "partitions": [0, 1]}]
    group = mixed.coord.group("g")
    assert group.group_epoch == 2 and group.assignment_epoch == 2
    members = {m.member_id: m for m in group.members}
    assert members[a].instance_id == "a" and members[a].classic is not None
    assert dict(members[a].assigned) == {FOO: frozenset({0, 1})}
    assert group.static_members == {"a": a, "b": b}


@pytest.mark.parametrize("policy, converts", [("bidirectional", True), ("upgrade", True),
                                              ("downgrade", False), ("disabled", False)])
def test_the_migration_policy_decides_the_upgrade(policy, converts):
    mixed = Mixed(**{"group.consumer.migration.policy": policy})
    mixed.classic_group()
    response = mixed.consumer(member_id="c")
    if converts:
        assert response.error_code == 0 and mixed.coord.get_group("g").group_type == "consumer"
    else:
        assert response.error_code == GROUP_ID_NOT_FOUND
        assert response.error_message == "Group g is not a consumer group."
        assert mixed.coord.get_group("g").group_type == "classic"


def test_an_empty_classic_group_gives_way_whatever_the_policy():
    mixed = Mixed(**{"group.consumer.migration.policy": "disabled"})
    ids = mixed.classic_group(instances=("a",), split=((0, 1, 2, 3),))
    mixed.leave(ids["a"], "a")
    assert mixed.coord.group("g").state == "Empty"
    assert mixed.consumer(member_id="c").error_code == 0


def test_a_classic_group_larger_than_the_consumer_max_size_stays_classic():
    mixed = Mixed(**{"group.consumer.max.size": 1})
    mixed.classic_group()
    assert mixed.consumer(member_id="c").error_code == GROUP_ID_NOT_FOUND
    assert mixed.coord.get_group("g").group_type == "classic"


def test_a_full_group_refuses_the_joiner_and_stays_classic():
    mixed = Mixed(**{"group.consumer.max.size": 2})
    mixed.classic_group()
    start = len(mixed.coord.records)
    assert mixed.consumer(member_id="c").error_code == GROUP_MAX_SIZE_REACHED
    assert mixed.coord.get_group("g").group_type == "classic" and mixed.coord.records[start:] == []


def test_a_group_of_another_protocol_type_is_not_upgraded():
    mixed = Mixed()
    mixed.join(instance="a", protocol_type="connect")
    mixed.coord.advance(1)
    assert mixed.consumer(member_id="c").error_code == GROUP_ID_NOT_FOUND


def test_a_malformed_embedded_subscription_stops_the_upgrade():
    mixed = Mixed()
    ids = mixed.classic_group()
    member = mixed.coord.get_group("g").members[ids["b"]]
    member.protocols = [("range", b"\x00")]
    response = mixed.consumer(member_id="c")
    assert response.error_code == GROUP_ID_NOT_FOUND
    assert response.error_message == ("Cannot upgrade the classic group g to consumer group because the "
                                      "embedded consumer protocol is malformed.")
    assert mixed.coord.get_group("g").group_type == "classic"


def test_assignor_user_data_would_be_lost():
    mixed = Mixed()
    ids = mixed.classic_group()
    member = mixed.coord.get_group("g").members[ids["a"]]
    member.assignment = encode_assignment({"assignedPartitions": [], "userData": b"sticky"}, 1)
    assert mixed.consumer(member_id="c").error_code == UNSUPPORTED_VERSION


def test_parked_joins_are_answered_rebalance_in_progress():
    mixed = Mixed()
    ids = mixed.classic_group()
    parked = mixed.join(member_id=ids["a"], instance="a", topics=("foo", "bar"))     # a rebalance starts
    assert not parked.done
    assert mixed.consumer(member_id="c").error_code == 0
    assert parked.done and parked.response.error_code == REBALANCE_IN_PROGRESS


def test_a_member_that_never_synced_converts_with_no_partitions():
    mixed = Mixed()
    ids = mixed.classic_group()
    mixed.coord.get_group("g").members[ids["b"]].assignment = b""
    assert mixed.consumer(member_id="c").error_code == 0
    members = {m.member_id: m for m in mixed.coord.group("g").members}
    assert dict(members[ids["b"]].assigned) == {}


def test_converted_members_keep_their_classic_session_timeout():
    mixed = Mixed()
    ids = mixed.classic_group()
    mixed.consumer(member_id="c")
    deadline = mixed.coord.timer_deadline(f"session-timeout-g-{ids['a']}")
    assert deadline == mixed.coord.now_ms + 10_000
    mixed.coord.advance(10_000)
    assert ids["a"] not in {m.member_id for m in mixed.coord.group("g").members}


def test_a_consumer_protocol_member_takes_over_a_classic_static_member_at_once():
    """A consumer-protocol joiner with a classic member's instance id replaces it (no
    UNRELEASED_INSTANCE_ID: the classic member cannot have left with epoch -2) and keeps its partitions."""
    mixed = Mixed()
    ids = mixed.classic_group()
    start = len(mixed.coord.records)
    response = mixed.consumer(member_id="c", instance_id="a")
    # the epoch stays: the conversion already hashed the subscribed topics (Kafka 4.1+; 4.0 bumped it
    # here, reading their metadata for the first time) and the successor subscribes to the same ones
    assert response.error_code == 0 and response.member_epoch == 1
    assert {tp.topic_id: set(tp.partitions) for tp in response.assignment.topic_partitions} == {FOO: {0, 1}}
    group = mixed.coord.group("g")
    assert group.group_epoch == 1 and group.static_members == {"a": "c", "b": ids["b"]}
    member = next(m for m in group.members if m.member_id == "c")
    assert member.classic is None
    assert ids["a"] in [m for t, m, v in _records(mixed, start) if t == 5 and v is None]


def test_an_empty_rack_in_a_classic_subscription_converts_to_no_rack(monkeypatch):
    """librdkafka's classic members send rackId "" in their embedded subscription; Kafka's
    fromClassicGroup reads it through Utils.toOptional, so the converted member has no rack
    (null in ConsumerGroupMemberMetadata and ConsumerGroupDescribe), not "" (found by the
    differential scenario migration-rolling-upgrade-static)."""
    import helpers.migration as migration

    def with_empty_rack(topics=("foo",), owned=()):
        return migration.encode_subscription({"topics": list(topics), "userData": None, "ownedPartitions": [],
                                              "generationId": -1, "rackId": ""}, 3)
    monkeypatch.setattr(migration, "subscription", with_empty_rack)
    mixed = Mixed()
    ids = mixed.classic_group()
    start = len(mixed.coord.records)
    assert mixed.consumer(member_id="c", topics=["foo"]).error_code == 0
    metadata = [value for t, m, value in _records(mixed, start) if t == 5 and m == ids["a"]]
    assert metadata and metadata[0]["rackId"] is None
    members = {m.member_id: m for m in mixed.coord.group("g").members}
    assert members[ids["a"]].rack_id is None
