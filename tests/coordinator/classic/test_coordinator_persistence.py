"""Persistence : the GroupMetadata records written, tombstones, and from_records."""

import pytest

from kgroup.coordinator import CoordinatorReplayError, GroupCoordinator, LogEntry
from kgroup.records import decode_key, decode_value, encode_key

from helpers.coordinator import (java_order, FENCED_INSTANCE_ID, NONE, REBALANCE_IN_PROGRESS,
                                 UNKNOWN_MEMBER_ID, Harness, in_state)

CONFIG = {"group.min.session.timeout.ms": 10}


def decoded(records):
    out = []
    for key, value in records:
        k = decode_key(key)
        out.append((k.record_type, k.data, None if value is None else decode_value(k.record_type, value)))
    return out


def without_timestamp(snapshot):
    return snapshot.__class__(**{**{f: getattr(snapshot, f) for f in snapshot.__dataclass_fields__},
                                 "current_state_timestamp": None})


def test_new_group_writes_an_empty_group_record_first():
    h = Harness()
    h.advance(123)
    h.join(instance="i0")
    [(rtype, key, value)] = decoded(h.coord.records)
    assert (rtype, key, value.version) == (2, {"group": "g"}, 3)
    assert value.data == {"protocolType": "", "generation": 0, "protocol": None, "leader": None,
                          "currentStateTimestamp": 123, "members": []}


def test_pending_only_join_still_creates_the_group_record():
    h = Harness()
    h.advance(123)
    h.join()
    assert len(h.coord.records) == 1 and h.group().state == "Empty"
    # no state transition happened: Kafka's ClassicGroup constructor stamps the creation time
    [(_, _, value)] = decoded(h.coord.records)
    assert value.data["currentStateTimestamp"] == 123
    assert h.group().current_state_timestamp == 123


@pytest.mark.parametrize("kwargs", [{"protocol_type": ""}, {"protocols": ()}])
def test_join_refused_on_a_new_group_still_persists_it(kwargs):
    h = Harness()
    h.advance(77)
    r = h.join(**kwargs)
    assert r.response.error_code == 23
    [(rtype, key, value)] = decoded(h.coord.records)
    assert (rtype, key, value.data["members"], value.data["currentStateTimestamp"]) == (
        2, {"group": "g"}, [], 77)


def test_record_without_leader_replays_with_the_first_member_leading():
    from kgroup.coordinator.classic.records import group_metadata_record
    h, ids, _ = in_state("Stable")
    group = h.coord.get_classic_group("g")
    group.leader_id = None
    record = group_metadata_record(group)
    assert decode_value(2, record[1]).data["leader"] is None
    restored = GroupCoordinator.from_records([record], config=CONFIG)
    assert restored.group("g").leader == ids["i0"]


def test_nothing_written_on_entering_preparing_or_completing_rebalance():
    h = Harness()
    h.join(instance="i0")
    h.join(instance="i1")
    h.advance(6000)
    assert h.group().state == "CompletingRebalance"
    assert len(h.coord.records) == 1


def test_leader_sync_writes_the_generation_with_assignments():
    h = Harness()
    a = h.join(instance="i0", client_id="ca", client_host="/10.0.0.1", session=11_000,
               rebalance=22_000, protocols=(("range", b"r0"), ("sticky", b"s0")))
    d = h.dynamic_join(client_id="cd", protocols=(("range", b"r1"),), rebalance=22_000)
    h.advance(6000)
    ia, idd = a.response.member_id, d.response.member_id
    h.sync(idd, 1)
    h.sync(ia, 1, instance="i0", assignments={ia: b"AA", idd: b"DD"})
    [(rtype, key, value)] = decoded(h.coord.records[-1:])
    assert value.data == {
        "protocolType": "consumer", "generation": 1, "protocol": "range", "leader": ia,
        "currentStateTimestamp": 6000,
        "members": java_order([
            {"memberId": ia, "groupInstanceId": "i0", "clientId": "ca", "clientHost": "/10.0.0.1",
             "rebalanceTimeout": 22_000, "sessionTimeout": 11_000, "subscription": b"r0",
             "assignment": b"AA"},
            {"memberId": idd, "groupInstanceId": None, "clientId": "cd", "clientHost": "/127.0.0.1",
             "rebalanceTimeout": 22_000, "sessionTimeout": 10_000, "subscription": b"r1",
             "assignment": b"DD"}], key=lambda m: m["memberId"])}


def test_static_restart_in_stable_writes_new_member_id_with_current_assignments():
    h, ids, _ = in_state("Stable")
    h.join(instance="i1", session=15_000)
    value = decoded(h.coord.records[-1:])[0][2].data
    assert [(m["memberId"], m["groupInstanceId"], m["assignment"], m["sessionTimeout"])
            for m in value["members"]] == java_order([(ids["i0"], "i0", b"A-i0", 10_000),
                                                      ("i1-u2", "i1", b"A-i1", 15_000)], key=lambda m: m[0])
    assert value["generation"] == 1 and value["leader"] == ids["i0"]


def test_replacement_during_rebalance_writes_nothing():
    h, ids, parked = in_state("PreparingRebalance")
    before = len(h.coord.records)
    h.join(instance="i1")
    assert len(h.coord.records) == before


def test_log_entries_carry_records_and_time():
    h, ids, _ = in_state("Stable")
    assert [len(e.records) for e in h.coord.log] == [1, 1]
    assert [e.timestamp_ms for e in h.coord.log] == [0, 6000]
    assert all(e.producer_id == -1 and e.control is None for e in h.coord.log)
    assert [r for e in h.coord.log for r in e.records] == h.coord.records


# ---- from_records ---------------------------------------------------------------------------------
@pytest.mark.parametrize("source", ["records", "log"])
def test_failover_rebuilds_groups_and_static_map(source):
    h = Harness()
    ids = h.stable(dynamic=1)
    h.join(instance="i1", client_id="x")           # restart: new id persisted
    h.join(group="empty-group")                    # pending only: an Empty group record
    restored = GroupCoordinator.from_records(getattr(h.coord, source), config=CONFIG,
                                             now_ms=h.coord.now_ms)
    assert sorted(restored.groups()) == ["empty-group", "g"]
    assert without_timestamp(restored.group("g")) == without_timestamp(h.group())
    assert restored.group("g").static_members == {"i0": ids["i0"], "i1": "i1-u3"}
    assert restored.group("empty-group").state == "Empty"
    assert restored.log == [] and restored.records == []


def test_restored_members_heartbeat_with_persisted_ids_and_sessions_restart_at_load():
    h = Harness()
    ids = h.stable()
    restored = GroupCoordinator.from_records(h.coord.records, config=CONFIG, now_ms=50_000)
    assert restored.timer_deadline(f"heartbeat-g-{ids['i1']}") == 60_000
    restored.advance(5000)
    hb = restored.handle
    from kafka.protocol.consumer.group import HeartbeatRequest
    ok = hb(HeartbeatRequest(version=4, group_id="g", generation_id=1, member_id=ids["i0"],
                             group_instance_id="i0"))
    assert ok.response.error_code == NONE
    restored.advance(5000)                         # i1 never heartbeats: expires at 60000
    g = restored.group("g")
    assert g.state == "PreparingRebalance" and g.static_members == {"i0": ids["i0"]}


def test_id_from_unsynced_rebalance_is_unknown_after_failover():
    h, ids, parked = in_state("PreparingRebalance")
    h.join(instance="i1")                          # replacement during the rebalance: not durable
    new_id = h.group().static_members["i1"]
    restored = Harness()
    restored.coord = GroupCoordinator.from_records(h.coord.records, config=CONFIG, now_ms=0)
    assert restored.heartbeat(new_id, 1, instance="i1").response.error_code == FENCED_INSTANCE_ID
    assert restored.heartbeat(new_id, 1).response.error_code == UNKNOWN_MEMBER_ID
    assert restored.heartbeat(ids["i1"], 1, instance="i1").response.error_code == NONE


def test_follower_rejoining_with_full_protocol_list_after_failover_rebalances():
    h = Harness()
    protocols = (("range", b"r"), ("sticky", b"s"))
    a = h.join(instance="i0", protocols=protocols)
    b = h.join(instance="i1", protocols=protocols)
    h.advance(6000)
    h.sync(b.response.member_id, 1, instance="i1")
    h.sync(a.response.member_id, 1, instance="i0", assignments={})
    # before failover the unchanged rejoin is answered at once
    assert h.join(member_id=b.response.member_id, instance="i1", protocols=protocols).done
    restored = Harness()
    restored.coord = GroupCoordinator.from_records(h.coord.records, config=CONFIG, now_ms=6000)
    r = restored.join(member_id=b.response.member_id, instance="i1", protocols=protocols)
    assert not r.done and restored.group().state == "PreparingRebalance"


def test_tombstone_removes_group_on_replay():
    h, _, _ = in_state("Empty")
    h.delete("g")
    restored = GroupCoordinator.from_records(h.coord.records, config=CONFIG)
    assert restored.groups() == [] and restored.group("g") is None


def test_group_larger_than_max_size_rebalances_on_load():
    h = Harness()
    h.stable(instances=("a", "b", "c"))
    restored = GroupCoordinator.from_records(h.coord.records,
                                             config={**CONFIG, "group.max.size": 2})
    assert restored.group("g").state == "PreparingRebalance"


def test_unknown_record_types_are_skipped():
    h, ids, _ = in_state("Stable")
    unknown = ((99).to_bytes(2, "big") + b"\x00\x01x", b"whatever")
    restored = GroupCoordinator.from_records([unknown] + h.coord.records, config=CONFIG)
    assert restored.group("g").generation == 1


def test_undecodable_record_names_its_log_offset():
    h, ids, _ = in_state("Stable")
    bad = (encode_key(2, {"group": "g"}), b"\x00\x03\xff")
    with pytest.raises(CoordinatorReplayError, match="log offset 2"):
        GroupCoordinator.from_records(h.coord.records + [bad], config=CONFIG)
    with pytest.raises(CoordinatorReplayError, match="log offset 0"):
        GroupCoordinator.from_records([(b"\x00", b"")], config=CONFIG)


def test_offsets_are_replayed_through_the_offsets_manager():
    from kafka.protocol.consumer.group import OffsetCommitRequest
    h, ids, _ = in_state("Stable")
    T = OffsetCommitRequest.OffsetCommitRequestTopic
    P = T.OffsetCommitRequestPartition
    commit = OffsetCommitRequest(version=8, group_id="g", generation_id_or_member_epoch=1,
                                 member_id=ids["i0"], group_instance_id="i0", topics=[
                                     T(name="t", partitions=[P(partition_index=p, committed_offset=10 + p,
                                                              committed_leader_epoch=-1,
                                                              committed_metadata="m")
                                                            for p in range(3)])])
    assert all(p.error_code == NONE for p in h.handle(commit).response.topics[0].partitions)
    restored = GroupCoordinator.from_records(h.coord.log, config=CONFIG, now_ms=h.coord.now_ms)
    assert restored.committed_offsets("g") == h.coord.committed_offsets("g")
    assert {tp: o.offset for tp, o in restored.committed_offsets("g").items()} == {
        ("t", 0): 10, ("t", 1): 11, ("t", 2): 12}


def test_replay_of_log_entries_with_markers_counts_offsets():
    h, ids, _ = in_state("Stable")
    entries = list(h.coord.log) + [LogEntry(records=[], producer_id=5, producer_epoch=0,
                                            transactional=True, control="ABORT")]
    restored = GroupCoordinator.from_records(entries, config=CONFIG)
    assert restored.group("g").generation == 1


def test_chained_failover_is_stable():
    h = Harness()
    h.stable(dynamic=2)
    once = GroupCoordinator.from_records(h.coord.records, config=CONFIG)
    # a restored coordinator writes new records only; feed the old plus new ones again
    r = once.handle(__import__("kafka.protocol.consumer.group", fromlist=["x"]).LeaveGroupRequest(
        version=3, group_id="g", members=[]))
    assert r.response.error_code == NONE
    twice = GroupCoordinator.from_records(h.coord.records + once.records, config=CONFIG)
    assert without_timestamp(twice.group("g")) == without_timestamp(once.group("g"))


def test_group_record_from_cached_member_bytes_equals_the_schema_encoding():
    from hypothesis import given, settings, strategies as st

    from kgroup.coordinator.classic.group import ClassicGroup, Member
    from kgroup.coordinator.classic.records import group_metadata_record
    from kgroup.records import decode_value, encode_value

    text = st.text(max_size=12)
    member = st.tuples(text, st.none() | text, text, text, st.integers(-1, 2**31 - 1),
                       st.integers(0, 2**31 - 1), st.binary(max_size=20), st.binary(max_size=20))

    @settings(max_examples=60, deadline=None)
    @given(st.lists(member, max_size=5, unique_by=lambda m: m[0]), st.integers(0, 1000), st.none() | text)
    def check(members, generation, leader):
        group = ClassicGroup("g")
        for mid, iid, cid, host, rebalance, session, sub, assignment in members:
            if iid is not None and iid in group.static_members:
                iid = None
            group.add(Member(member_id=mid, group_instance_id=iid, client_id=cid, client_host=host,
                             rebalance_timeout_ms=rebalance, session_timeout_ms=session,
                             protocol_type="consumer", protocols=[("range", sub)], assignment=assignment))
        group.protocol_name = "range" if members else None
        group.generation_id = generation
        key, value = group_metadata_record(group)
        data = decode_value(2, value).data
        assert encode_value(2, 3, data) == value
        ordered = java_order(members, key=lambda m: m[0], capacity=group.java_capacity)
        assert [m["memberId"] for m in data["members"]] == [m[0] for m in ordered]
        assert [m["assignment"] for m in data["members"]] == [m[7] for m in ordered]

    check()


def test_record_cache_follows_every_member_change():
    """The cached member encodings (one re-encoded member per static restart) never go stale."""
    from kgroup.coordinator.classic.records import group_metadata_record
    h, ids, _ = in_state("Stable")
    g = h.coord.get_classic_group("g")

    def same():
        assert group_metadata_record(g) == group_metadata_record(g, cached=False)

    same()                                                  # warm the cache
    h.join(instance="i1")                                   # static restart in Stable: record written
    same()
    h.join(member_id=ids["i0"], instance="i0", protocols=(("range", b"new"),), session=20_000)
    same()                                                  # update_member during the rebalance
    h.join(instance="i0", protocols=(("range", b"again"),))  # replacement in PreparingRebalance
    same()
    h.leave([("", "i1")])                                   # everybody left has joined: completes
    assert g.state == "CompletingRebalance"
    same()
    h.join(instance="late")                                 # a new member: CompletingRebalance -> rebalance
    same()


def test_keep_log_false_hands_entries_over_once_and_holds_nothing():
    """What `serve` relies on: take_log() returns each entry once, memory holds none of them,
    and the taken entries still replay to the same groups and offsets."""
    from kafka.protocol.consumer.group import OffsetCommitRequest

    counter = iter(range(10**6))
    coord = GroupCoordinator(config=CONFIG, now_ms=0, uuid_source=lambda: f"u{next(counter)}",
                             keep_log=False)
    h = Harness()
    h.coord = coord
    member = h.stable(instances=("i0",))["i0"]
    taken = coord.take_log()
    T = OffsetCommitRequest.OffsetCommitRequestTopic
    P = T.OffsetCommitRequestPartition
    for n in range(5):
        commit = OffsetCommitRequest(version=8, group_id="g", generation_id_or_member_epoch=1,
                                     member_id=member, group_instance_id="i0", topics=[
                                         T(name="t", partitions=[P(partition_index=0, committed_offset=n,
                                                                  committed_leader_epoch=-1,
                                                                  committed_metadata="")])])
        assert h.handle(commit).response.topics[0].partitions[0].error_code == NONE
        assert coord.log == [] or len(coord.log) == 1
        taken += coord.take_log()
    assert coord.records == [] and coord.log == [] and coord.take_log() == []
    assert coord.entries_appended == len(taken) and coord.log_end_offset == sum(len(e.records) for e in taken)
    restored = GroupCoordinator.from_records(taken, config=CONFIG, now_ms=coord.now_ms)
    assert restored.committed_offsets("g") == coord.committed_offsets("g")
    assert restored.group("g").static_members == coord.group("g").static_members == {"i0": member}
    assert restored.log_end_offset == coord.log_end_offset


def test_keep_log_true_take_log_returns_only_new_entries():
    h = Harness()
    h.stable(dynamic=2)
    first = h.coord.take_log()
    assert first == h.coord.log and h.coord.take_log() == []
    h.advance(60_000)  # sessions expire: the group record changes
    new = h.coord.take_log()
    assert new and h.coord.log == first + new and len(h.coord.records) == sum(len(e.records) for e in h.coord.log)


def test_consumer_record_keys_are_written_as_their_encoder_writes_them():
    """consumer_records remembers key bytes: a hit gives exactly what encode_key gives."""
    import random

    from kgroup.coordinator.consumer import records as rec

    rnd = random.Random(7)
    for _ in range(200):
        group_id = "".join(rnd.choice("gé-1") for _ in range(rnd.randint(1, 6)))
        member_id = "".join(rnd.choice("mü_2") for _ in range(rnd.randint(0, 6)))
        for record in (rec.tombstone(rec.METADATA, group_id),
                       rec.tombstone(rec.CURRENT_MEMBER_ASSIGNMENT, group_id, member_id),
                       rec.tombstone(rec.TARGET_ASSIGNMENT_MEMBER, group_id, member_id),
                       rec.regular_expression_tombstone(group_id, member_id)):
            expected = encode_key(record.record_type, record.key)
            assert rec._encoded_key(record.record_type, record.key) == expected
            assert rec._encoded_key(record.record_type, dict(reversed(record.key.items()))) == \
                encode_key(record.record_type, dict(reversed(record.key.items())))
