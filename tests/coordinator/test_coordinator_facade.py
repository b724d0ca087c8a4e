"""The GroupCoordinator facade: config, dispatch, replies and callbacks, contract hooks."""

import pytest
from kafka.protocol.consumer.group import JoinGroupRequest
from kafka.protocol.metadata import MetadataRequest

from kgroup.coordinator import (CoordinatorConfig, CoordinatorConfigError, GroupCoordinator,
                                UnsupportedRequest)

from helpers.coordinator import FENCED_INSTANCE_ID, NONE, UNKNOWN_MEMBER_ID, Harness, in_state


# ---- config --------------------------------------------------------------------------------
def test_config_defaults_are_kafkas():
    c = CoordinatorConfig()
    assert (c.group_min_session_timeout_ms, c.group_max_session_timeout_ms,
            c.group_initial_rebalance_delay_ms, c.group_max_size) == (6000, 1_800_000, 3000, 2**31 - 1)
    assert (c.offsets_retention_minutes, c.offsets_retention_check_interval_ms,
            c.offsets_topic_num_partitions, c.offset_metadata_max_bytes) == (10080, 600_000, 50, 4096)


def test_config_accepts_pass_through_keys_and_numeric_strings():
    c = CoordinatorConfig({"offsets.topic.num.partitions": "3", "group.max.size": 10})
    assert c.offsets_topic_num_partitions == 3 and c.group_max_size == 10
    assert c.as_dict()["offsets.topic.num.partitions"] == 3


@pytest.mark.parametrize("settings,name", [
    ({"group.max.sise": 1}, "group.max.sise"),
    ({"group.max.size": 0}, "group.max.size"),
    ({"group.max.size": "many"}, "group.max.size"),
    ({"group.initial.rebalance.delay.ms": -1}, "group.initial.rebalance.delay.ms"),
    ({"offsets.retention.minutes": True}, "offsets.retention.minutes"),
    ({"group.min.session.timeout.ms": 10, "group.max.session.timeout.ms": 5},
     "group.min.session.timeout.ms"),
])
def test_bad_config_names_the_key(settings, name):
    with pytest.raises(CoordinatorConfigError, match=name.replace(".", r"\.")) as err:
        GroupCoordinator(config=settings)
    assert isinstance(err.value, ValueError)


def test_default_session_bounds_apply():
    coord = GroupCoordinator()
    P = JoinGroupRequest.JoinGroupRequestProtocol
    r = coord.handle(JoinGroupRequest(version=5, group_id="g", session_timeout_ms=5999,
                                      rebalance_timeout_ms=1, member_id="", group_instance_id="s",
                                      protocol_type="consumer", protocols=[P(name="r", metadata=b"")]))
    assert r.response.error_code == 26


# ---- dispatch and replies --------------------------------------------------------------------
def test_unsupported_api_is_refused_by_name():
    with pytest.raises(UnsupportedRequest, match="Metadata"):
        GroupCoordinator().handle(MetadataRequest(version=1, topics=[]))
    with pytest.raises(ValueError):
        GroupCoordinator().handle(object())


def test_member_ids_come_from_the_uuid_source():
    h = Harness()
    assert h.join(client_id="app").response.member_id == "app-u0"
    assert h.join(instance="inst").done is False
    assert h.group().static_members == {"inst": "inst-u1"}


def test_callbacks_run_when_parked_reply_completes_and_immediately_when_done():
    h = Harness()
    seen = []
    parked = h.join(instance="a")
    parked.add_done_callback(lambda r: seen.append(("cb", r.response.error_code, h.coord.now_ms)))
    assert seen == []
    h.advance(5000)
    assert seen == [("cb", NONE, 3000)]
    parked.add_done_callback(lambda r: seen.append("late"))
    assert seen[-1] == "late"


def test_callback_may_reenter_the_coordinator():
    h = Harness()
    parked = h.join(instance="a")
    results = []
    parked.add_done_callback(lambda r: results.append(
        h.sync(r.response.member_id, r.response.generation_id, instance="a",
               assignments={r.response.member_id: b"x"})))
    h.advance(3000)
    assert results[0].response.assignment == b"x" and h.group().state == "Stable"


def test_fenced_reply_callbacks_run_during_handle():
    h, ids, parked = in_state("PreparingRebalance")
    seen = []
    parked["i0"].add_done_callback(lambda r: seen.append(r.response.error_code))
    h.join(instance="i0")
    assert seen == [FENCED_INSTANCE_ID]


# ---- hooks for the offsets manager -------------------------------------------------------------
def test_offsets_hooks():
    h, ids, _ = in_state("Stable")
    coord = h.coord
    g = coord.get_classic_group("g")
    assert (g.group_id, g.state, g.generation_id, g.protocol_type, g.is_empty()) == (
        "g", "Stable", 1, "consumer", False)
    assert g.validate_member(ids["i0"], "i0") == NONE
    assert g.validate_member("x", "i0") == FENCED_INSTANCE_ID
    assert g.validate_member("x", None) == UNKNOWN_MEMBER_ID
    h.advance(1000)
    coord.refresh_session(g, ids["i1"])
    assert coord.timer_deadline(f"heartbeat-g-{ids['i1']}") == 17_000
    simple = coord.get_or_create_classic_group("simple")
    assert simple.state == "Empty" and coord.get_or_create_classic_group("simple") is simple
    records = len(coord.records)
    coord.delete_group_metadata("simple")
    assert coord.get_classic_group("simple") is None and len(coord.records) == records + 1
    assert coord.records[-1][1] is None


def test_snapshot_is_immutable():
    h, _, _ = in_state("Stable")
    snap = h.group()
    with pytest.raises(Exception):
        snap.state = "Empty"
    assert h.coord.group("missing") is None and h.coord.groups() == ["g"]


def test_bad_bytes_field_is_a_clear_error_naming_the_field():
    from kafka.protocol.consumer.group import JoinGroupRequest
    coord = GroupCoordinator(config={"group.min.session.timeout.ms": 10})
    P = JoinGroupRequest.JoinGroupRequestProtocol
    request = JoinGroupRequest(version=5, group_id="g", session_timeout_ms=100, rebalance_timeout_ms=100,
                               member_id="", group_instance_id="s", protocol_type="consumer",
                               protocols=[P(name="r", metadata=12)])
    with pytest.raises(ValueError, match=r"protocols\[0\]\.metadata: expected bytes, got int"):
        coord.handle(request)


def test_on_group_transition_sees_every_state_change_as_it_happens():
    """Stable -> PreparingRebalance -> Empty happens inside one LeaveGroup call; the hook sees both,
    also for groups that existed before it was set and for groups rebuilt by from_records."""
    from kafka.protocol.consumer.group import LeaveGroupRequest

    from helpers.coordinator import Harness

    h = Harness()
    ids = h.stable(instances=(), dynamic=1)
    seen = []
    h.coord.on_group_transition = lambda g, prev, now: seen.append((g.group_id, prev, g.state, now))
    h.advance(5)
    reply = h.handle(LeaveGroupRequest(version=0, group_id="g", member_id=ids["d0"]))
    assert reply.response.error_code == 0
    now = h.coord.now_ms
    assert seen == [("g", "Stable", "PreparingRebalance", now), ("g", "PreparingRebalance", "Empty", now)]
    restored = type(h.coord).from_records(h.coord.records, config={"group.min.session.timeout.ms": 10})
    assert restored.on_group_transition is None
