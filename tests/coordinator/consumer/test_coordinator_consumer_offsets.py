"""Offsets of consumer groups: the member epoch is the generation (STALE_MEMBER_EPOCH), admin
commits to an empty group, OffsetDelete refused for subscribed topics only, expiry of unsubscribed topics only."""

from __future__ import annotations

from helpers.consumer import heartbeat, new_coordinator
from helpers.offsets import commit_request, delete_request, errors, fetch_groups_request, txn_commit_request
from kafka.protocol.consumer.group import OffsetFetchRequest

from kgroup.kafka_errors import (GROUP_SUBSCRIBED_TO_TOPIC, ILLEGAL_GENERATION, STALE_MEMBER_EPOCH,
                                 UNKNOWN_MEMBER_ID, UNSUPPORTED_VERSION)


def _commit(coord, **fields):
    return errors(coord.handle(commit_request("g", {("foo", 0): 10}, **fields)).response)[("foo", 0)]


def test_commit_with_the_member_epoch():
    coord = new_coordinator()
    heartbeat(coord, member_id="a")
    assert _commit(coord, generation=2, member_id="a") == 0
    assert coord.committed_offsets("g")[("foo", 0)].offset == 10
    assert _commit(coord, generation=1, member_id="a") == STALE_MEMBER_EPOCH
    assert _commit(coord, generation=3, member_id="a") == STALE_MEMBER_EPOCH
    assert _commit(coord, generation=2, member_id="z") == UNKNOWN_MEMBER_ID
    assert _commit(coord, generation=-1, member_id="") == UNKNOWN_MEMBER_ID   # admin, but members are active
    assert _commit(coord, generation=2, member_id="a", version=8) == UNSUPPORTED_VERSION


def test_admin_commit_to_an_empty_consumer_group():
    coord = new_coordinator()
    heartbeat(coord, member_id="a")
    heartbeat(coord, member_id="a", epoch=-1)
    assert _commit(coord, generation=-1, member_id="") == 0


def test_transactional_commit_reports_a_stale_epoch_as_illegal_generation():
    coord = new_coordinator()
    heartbeat(coord, member_id="a")
    response = coord.handle(txn_commit_request("g", {("foo", 0): 5}, producer_id=7, generation=4,
                                               member_id="a")).response
    assert errors(response)[("foo", 0)] == ILLEGAL_GENERATION
    response = coord.handle(txn_commit_request("g", {("foo", 0): 5}, producer_id=7, generation=2,
                                               member_id="a")).response
    assert errors(response)[("foo", 0)] == 0


def test_fetch_checks_the_member_epoch_from_v9():
    coord = new_coordinator()
    heartbeat(coord, member_id="a")
    assert _commit(coord, generation=2, member_id="a") == 0

    def fetch(member_id, epoch):
        request = fetch_groups_request({"g": {"foo": [0]}}, version=9)
        request.groups[0].member_id, request.groups[0].member_epoch = member_id, epoch
        response = coord.handle(request).response
        response.encode(version=9)
        return response.groups[0]

    assert fetch("a", 2).error_code == 0 and fetch("a", 2).topics[0].partitions[0].committed_offset == 10
    assert fetch("a", 3).error_code == STALE_MEMBER_EPOCH
    assert fetch("z", 2).error_code == UNKNOWN_MEMBER_ID
    assert fetch(None, -1).error_code == 0
    assert OffsetFetchRequest.max_version >= 9


def test_offset_delete_on_an_active_consumer_group_refuses_only_subscribed_topics():
    # validateOffsetDelete allows any state; deleteOffsets refuses a topic the group subscribes
    # to (ConsumerGroup.isSubscribedToTopic), partition by partition, as for a classic group.
    coord = new_coordinator()
    heartbeat(coord, member_id="a")
    assert _commit(coord, generation=2, member_id="a") == 0
    response = coord.handle(delete_request("g", {"foo": [0]})).response
    assert response.error_code == 0 and errors(response) == {("foo", 0): GROUP_SUBSCRIBED_TO_TOPIC}
    assert set(coord.committed_offsets("g")) == {("foo", 0)}
    response = coord.handle(delete_request("g", {"gone": [0]})).response
    assert response.error_code == 0 and errors(response) == {("gone", 0): 0}


def test_only_unsubscribed_topics_expire():
    coord = new_coordinator(**{"offsets.retention.minutes": 1})
    heartbeat(coord, member_id="a")
    coord.handle(commit_request("g", {("foo", 0): 1, ("gone", 0): 2}, generation=2, member_id="a"))
    expired = coord.offsets.expire_offsets()
    assert expired == []
    coord.now_ms += 60_000
    assert coord.offsets.expire_offsets() == [("g", "gone", 0)]
    assert set(coord.committed_offsets("g")) == {("foo", 0)}
