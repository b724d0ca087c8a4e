"""Migration between Connect's classic protocol and the connect worker group: an empty classic group of
protocol type "connect" converts when the first new-protocol worker joins (group epoch = generation),
an empty worker group converts back on a classic JoinGroup (generation = group epoch), the other
protocol is refused while the group has members, and both logs replay to the migrated group."""

from kafka.protocol.consumer.group import HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest

from kgroup.coordinator import GroupCoordinator
from kgroup.coordinator.connect.protocol import (
    COMPUTE_ASSIGNMENT, GROUP_ID_NOT_FOUND, NONE, Assignor, ConnectGroupHeartbeatRequest, ConnectGroupSetConnectors,
    ConnectorsAndTasks)
from kgroup.kafka_errors import MEMBER_ID_REQUIRED, UNKNOWN_MEMBER_ID
from kgroup.records import decode_key

CONFIG = {"group.connect.session.timeout.ms": 10000, "group.connect.heartbeat.interval.ms": 3000,
          "group.initial.rebalance.delay.ms": 0}


def classic_join(coord, member_id="", protocol_type="connect"):
    return coord.handle(JoinGroupRequest(
        version=9, group_id="cc", session_timeout_ms=10000, rebalance_timeout_ms=60000, member_id=member_id,
        group_instance_id=None, protocol_type=protocol_type,
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="sessioned", metadata=b"{}")], reason=None))


def classic_member(coord, protocol_type="connect"):
    """One classic worker through the two-step join and its SyncGroup: (member id, generation)."""
    member_id = classic_join(coord, protocol_type=protocol_type).response.member_id
    reply = classic_join(coord, member_id, protocol_type)
    coord.advance(0)
    join = reply.response
    assert join.error_code == NONE, join
    coord.handle(SyncGroupRequest(version=5, group_id="cc", generation_id=join.generation_id, member_id=member_id,
                                  group_instance_id=None, protocol_type=protocol_type, protocol_name="sessioned",
                                  assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id, b"{}")]))
    return member_id, join.generation_id


def classic_leave(coord, member_id):
    coord.handle(LeaveGroupRequest(version=5, group_id="cc", members=[
        LeaveGroupRequest.MemberIdentity(member_id=member_id, group_instance_id=None, reason="roll")]))


def worker_join(coord, member="N1", epoch=0):
    return coord.handle(ConnectGroupHeartbeatRequest(
        group_id="cc", member_id=member, member_epoch=epoch, rebalance_timeout_ms=60000,
        client_assignors=[Assignor("incremental-cooperative", 0, 2, 0, 2, b"")],
        connectors_and_tasks=ConnectorsAndTasks())).response


def empty_classic_group(generations=3):
    """A classic Connect group that went through ``generations`` rebalances and is empty now."""
    coord = GroupCoordinator(config=CONFIG, now_ms=0)
    for _ in range(generations):
        member_id, generation = classic_member(coord)
        classic_leave(coord, member_id)
    group = coord.get_group("cc")
    assert group.group_type == "classic" and group.is_empty()
    return coord, group.generation_id


def test_first_new_protocol_worker_converts_the_empty_classic_group_at_its_generation():
    coord, generation = empty_classic_group()
    classic_log = len(coord.records)
    response = worker_join(coord)
    assert response.error_code == COMPUTE_ASSIGNMENT and response.member_epoch == generation
    group = coord.connect_group("cc")
    assert (group.group_epoch, group.assignment_epoch) == (generation + 1, generation)
    assert coord.get_classic_group("cc") is None
    key, value = coord.records[classic_log]
    assert value is None            # the classic GroupMetadata tombstone
    assert [decode_key(k, "connect").record_type for k, _ in coord.worker_records[:2]] == [6, 3]


def test_set_connectors_converts_with_the_connector_set_and_no_bump():
    coord, generation = empty_classic_group(2)
    response = coord.handle(ConnectGroupSetConnectors("cc", {"A": 2, "B": 1})).response
    assert response.error_code == NONE
    group = coord.connect_group("cc")
    assert (group.group_epoch, group.connectors) == (generation, {"A": 2, "B": 1})
    assert worker_join(coord).member_epoch == generation
    assert coord.connect_group("cc").group_epoch == generation + 1


def test_the_other_protocol_is_refused_while_the_group_has_members():
    coord = GroupCoordinator(config=CONFIG, now_ms=0)
    member_id, _ = classic_member(coord)
    assert worker_join(coord).error_code == GROUP_ID_NOT_FOUND
    assert coord.handle(ConnectGroupSetConnectors("cc", {"A": 1})).response.error_code == GROUP_ID_NOT_FOUND
    assert coord.get_group("cc").group_type == "classic" and coord.worker_records == []
    classic_leave(coord, member_id)
    assert worker_join(coord).error_code == COMPUTE_ASSIGNMENT
    assert classic_join(coord).response.error_code == GROUP_ID_NOT_FOUND      # N1 is a member now
    # a classic worker's SyncGroup and Heartbeat find no classic member there (found by serve's frame fuzzing:
    # they reached the classic group's code with a worker group)
    assert coord.handle(SyncGroupRequest(
        version=5, group_id="cc", generation_id=1, member_id=member_id, group_instance_id=None,
        protocol_type="connect", protocol_name="sessioned", assignments=[])).response.error_code == UNKNOWN_MEMBER_ID
    assert coord.handle(HeartbeatRequest(version=4, group_id="cc", generation_id=1, member_id=member_id,
                                         group_instance_id=None)).response.error_code == UNKNOWN_MEMBER_ID


def test_a_classic_consumer_group_is_not_converted():
    coord = GroupCoordinator(config=CONFIG, now_ms=0)
    member_id, _ = classic_member(coord, protocol_type="consumer")
    classic_leave(coord, member_id)
    assert worker_join(coord).error_code == GROUP_ID_NOT_FOUND


def test_a_classic_join_converts_the_empty_worker_group_back_at_its_group_epoch():
    coord, generation = empty_classic_group()
    worker_join(coord)
    epoch = coord.connect_group("cc").group_epoch
    worker_join(coord, epoch=-1)                  # the last new-protocol worker leaves
    left = coord.connect_group("cc")
    assert left.group_epoch == epoch + 1 and not left.members
    worker_log = len(coord.worker_records)
    first = classic_join(coord).response
    assert first.error_code == MEMBER_ID_REQUIRED
    assert coord.connect_group("cc") is None
    classic = coord.get_classic_group("cc")
    assert (classic.generation_id, classic.protocol_type) == (epoch + 1, "connect")
    tombstones = coord.worker_records[worker_log:]
    assert [(decode_key(k, "connect").record_type, v) for k, v in tombstones] == [(6, None), (4, None), (3, None)]
    member_id, rejoined = classic_member(coord)
    assert rejoined == epoch + 2


def test_from_records_rebuilds_the_group_after_each_conversion():
    coord, generation = empty_classic_group()
    coord.handle(ConnectGroupSetConnectors("cc", {"A": 2}))
    worker_join(coord)
    upgraded = GroupCoordinator.from_records(coord.records, config=CONFIG, worker_records=coord.worker_records)
    live, replayed = coord.connect_group("cc"), upgraded.connect_group("cc")
    assert replayed is not None and upgraded.get_classic_group("cc") is None
    assert (replayed.group_epoch, replayed.assignment_epoch, replayed.connectors) \
        == (live.group_epoch, live.assignment_epoch, live.connectors)
    assert [m.member_id for m in replayed.members] == ["N1"]
    worker_join(coord, epoch=-1)
    classic_member(coord)
    downgraded = GroupCoordinator.from_records(coord.records, config=CONFIG, worker_records=coord.worker_records)
    assert downgraded.connect_group("cc") is None
    classic = downgraded.get_classic_group("cc")
    assert classic.generation_id == coord.get_classic_group("cc").generation_id
    assert len(classic.members) == 1
