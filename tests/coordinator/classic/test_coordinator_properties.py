"""Property tests: random joins, rejoins, bounces, leaves, heartbeats and time advances of
static and dynamic members must keep the coordinator's invariants, and whenever every group
is Stable or Empty a coordinator rebuilt from the records must describe the same groups."""

import itertools

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from kafka.protocol.consumer.group import (HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest,
                                           SyncGroupRequest)

from kgroup.coordinator import GroupCoordinator
from kgroup.coordinator.classic.records import group_metadata_record

CONFIG = {"group.min.session.timeout.ms": 10, "group.initial.rebalance.delay.ms": 300}
GROUPS = ("g1", "g2")
PROTOCOLS = {"range": [("range", b"r")], "both": [("sticky", b"s"), ("range", b"r2")]}
Protocol = JoinGroupRequest.JoinGroupRequestProtocol


class Client:
    """A consumer's view: the id and generation it believes it has."""

    def __init__(self, name, group, static):
        self.name, self.group, self.static = name, group, static
        self.member_id = ""
        self.generation = -1
        self.protocols = "range"

    @property
    def instance(self):
        return self.name if self.static else None

    def on_join(self, reply):
        r = reply.response
        if r is None:       # the operation's append failed: nothing happened
            return
        if r.error_code in (0, 79):
            self.member_id = r.member_id
            self.generation = r.generation_id
        elif r.error_code in (25, 82):
            self.member_id, self.generation = "", -1


def make_clients():
    clients = []
    for k in range(6):
        clients.append(Client(f"c{k}", GROUPS[k % 2], static=k < 4))
    return clients


operation = st.one_of(
    st.tuples(st.just("round"), st.integers(0, 1), st.lists(st.booleans(), min_size=3, max_size=3),
              st.sampled_from([5, 9])),
    st.tuples(st.just("join"), st.integers(0, 5), st.sampled_from([3, 5, 8, 9])),
    st.tuples(st.just("sync"), st.integers(0, 5), st.sampled_from([b"x", b"y"])),
    st.tuples(st.just("heartbeat"), st.integers(0, 5)),
    st.tuples(st.just("bounce"), st.integers(0, 5)),
    st.tuples(st.just("leave"), st.integers(0, 5), st.booleans()),
    st.tuples(st.just("protocols"), st.integers(0, 5), st.sampled_from(sorted(PROTOCOLS))),
    st.tuples(st.just("advance"), st.sampled_from([0, 1, 150, 300, 1000, 5000, 20_000])),
)


def run(coord, clients, op):
    kind = op[0]
    if kind == "advance":
        coord.advance(op[1])
        return
    if kind == "round":
        play_round(coord, clients, GROUPS[op[1]], op[2], op[3])
        return
    c = clients[op[1]]
    if kind == "join":
        version = op[2] if c.static else min(op[2], 9)
        if c.static and version < 5:
            version = 5
        request = JoinGroupRequest(
            version=version, group_id=c.group, session_timeout_ms=6000, rebalance_timeout_ms=4000,
            member_id=c.member_id, group_instance_id=c.instance, protocol_type="consumer",
            protocols=[Protocol(name=n, metadata=m) for n, m in PROTOCOLS[c.protocols]])
        coord.handle(request, client_id=c.name).add_done_callback(c.on_join)
    elif kind == "sync":
        group = coord.get_classic_group(c.group)
        assignments = []
        if group is not None and group.leader_id == c.member_id:
            assignments = [SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=op[2] + m.encode())
                           for m in group.members]
        reply = coord.handle(SyncGroupRequest(
            version=5, group_id=c.group, generation_id=c.generation, member_id=c.member_id,
            group_instance_id=c.instance, protocol_type="consumer",
            protocol_name=group.protocol_name if group is not None and group.protocol_name else "range",
            assignments=assignments))
        reply.add_done_callback(lambda r: r.response is None or r.response.encode())
    elif kind == "heartbeat":
        coord.handle(HeartbeatRequest(version=4, group_id=c.group, generation_id=c.generation,
                                      member_id=c.member_id, group_instance_id=c.instance))
    elif kind == "bounce":
        c.member_id, c.generation = "", -1      # restart: the id is forgotten
    elif kind == "leave":
        by_instance = op[2] and c.static
        member_id = "" if by_instance else c.member_id
        coord.handle(LeaveGroupRequest(version=5, group_id=c.group, members=[
            LeaveGroupRequest.MemberIdentity(member_id=member_id, group_instance_id=c.instance)]))
        c.member_id, c.generation = "", -1
    elif kind == "protocols":
        c.protocols = op[2]


def play_round(coord, clients, group_id, participates, version):
    """Chosen clients of a group (re)join, time passes until the round completes, all sync."""
    members = [c for c in clients if c.group == group_id]
    chosen = [c for c, yes in zip(members, participates) if yes]
    for c in chosen:
        run(coord, clients, ("join", clients.index(c), version))
        if c.member_id and not c.static and c.generation == -1:
            run(coord, clients, ("join", clients.index(c), version))   # KIP-394 second join
    coord.advance(4500)
    group = coord.get_classic_group(group_id)
    leader = group.leader_id if group is not None else None
    for c in sorted(chosen, key=lambda c: c.member_id == leader):
        run(coord, clients, ("sync", clients.index(c), b"r"))


def check_invariants(coord, max_generation):
    for group_id in coord.groups():
        g = coord.get_classic_group(group_id)
        assert g.generation_id >= max_generation.get(group_id, 0), group_id
        max_generation[group_id] = g.generation_id
        instances = [m.group_instance_id for m in g.members.values() if m.group_instance_id is not None]
        assert len(instances) == len(set(instances))
        assert len(set(g.static_members.values())) == len(g.static_members)
        for instance, member_id in g.static_members.items():
            assert g.members[member_id].group_instance_id == instance
        assert sorted(instances) == sorted(g.static_members)
        if g.members:
            assert g.leader_id in g.members
        else:
            assert g.leader_id is None
        assert g.num_awaiting_join == sum(m.join_reply is not None for m in g.members.values())
        # the GroupMetadata record cache never serves a stale member encoding
        assert group_metadata_record(g) == group_metadata_record(g, cached=False)


def described(snapshot):
    return (snapshot.state, snapshot.generation, snapshot.leader, snapshot.protocol_type,
            snapshot.protocol, snapshot.members, snapshot.static_members)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(operation, min_size=10, max_size=80))
def test_random_operations_keep_invariants_and_replay(ops):
    counter = itertools.count()
    coord = GroupCoordinator(config=CONFIG, uuid_source=lambda: f"u{next(counter)}")
    clients = make_clients()
    max_generation = {}
    compared = 0
    for op in ops:
        run(coord, clients, op)
        check_invariants(coord, max_generation)
        states = {coord.get_classic_group(g).state for g in coord.groups()}
        if states <= {"Stable", "Empty"} and (op[0] != "advance" or compared == 0):
            restored = GroupCoordinator.from_records(coord.records, config=CONFIG, now_ms=coord.now_ms)
            assert sorted(restored.groups()) == sorted(coord.groups())
            for group_id in coord.groups():
                assert described(restored.group(group_id)) == described(coord.group(group_id))
            compared += 1
            event(f"stable groups compared: {sum(coord.get_classic_group(g).state == 'Stable' for g in coord.groups())}")


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from([0, 1, 2, 3]), min_size=1, max_size=12))
def test_rolling_bounces_of_static_members_never_rebalance(order):
    counter = itertools.count()
    coord = GroupCoordinator(config=CONFIG, uuid_source=lambda: f"u{next(counter)}")
    clients = [Client(f"s{k}", "g", static=True) for k in range(4)]
    for c in clients:
        run(coord, clients, ("join", clients.index(c), 9))
    coord.advance(2000)
    for k, c in enumerate(clients):
        run(coord, clients, ("sync", k, b"a"))
    assert coord.group("g").state == "Stable" and coord.group("g").generation == 1
    for k in order:
        run(coord, clients, ("bounce", k))
        run(coord, clients, ("join", k, 9))
        run(coord, clients, ("sync", k, b"a"))
        run(coord, clients, ("heartbeat", k))
    g = coord.group("g")
    assert (g.state, g.generation) == ("Stable", 1)
    assert {m.group_instance_id: m.assignment for m in g.members} == {
        f"s{k}": b"a" + f"s{k}-u{k}".encode() for k in range(4)}
    restored = GroupCoordinator.from_records(coord.records, config=CONFIG)
    assert described(restored.group("g")) == described(g)


def fingerprint(coord):
    """Everything a later request can observe of the groups, their timers and their offsets."""
    out = {"now": coord.now_ms, "log_end": coord.log_end_offset, "records": len(coord.records)}
    for group_id in coord.groups():
        g = coord.get_classic_group(group_id)
        members = [(m.member_id, m.protocols, m.assignment, m.is_new, m.rebalance_timeout_ms,
                    m.session_timeout_ms, id(m.join_reply), m.join_version, id(m.sync_reply),
                    m.sync_version) for m in g.members.values()]
        out[group_id] = (coord.group(group_id), members, sorted(g.pending_sync), g.previous_state,
                         g.num_awaiting_join, g.new_member_added, dict(g.protocol_counts),
                         {key: coord.timer_deadline(key) for key in g.timer_keys()},
                         coord.committed_offsets(group_id))
    return out


class FailingDisk:
    def __init__(self):
        self.full = False
        self.calls = 0

    def __call__(self, entries):
        self.calls += 1
        if self.full:
            raise OSError(28, "No space left on device")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(operation, st.booleans()), min_size=10, max_size=60))
def test_a_request_whose_append_fails_changes_nothing(ops):
    counter = itertools.count()
    disk = FailingDisk()
    coord = GroupCoordinator(config=CONFIG, uuid_source=lambda: f"u{next(counter)}", log_writer=disk)
    clients = make_clients()
    reverted = 0
    for op, fail in ops:
        disk.full = fail
        before, calls = fingerprint(coord), disk.calls
        try:
            run(coord, clients, op)
        except OSError:
            assert fail and op[0] in ("advance", "round")     # a timer's append failed
        if fail and disk.calls > calls and op[0] not in ("advance", "round"):
            assert fingerprint(coord) == before
            reverted += 1
        check_invariants(coord, {})
    disk.full = False
    event(f"requests reverted: {min(reverted, 3)}+")
    # what was written is what memory holds
    states = {coord.get_classic_group(g).state for g in coord.groups()}
    if states <= {"Stable", "Empty"}:
        restored = GroupCoordinator.from_records(coord.records, config=CONFIG, now_ms=coord.now_ms)
        for group_id in coord.groups():
            assert described(restored.group(group_id)) == described(coord.group(group_id))
