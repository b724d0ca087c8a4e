"""Drives a GroupCoordinator with kafka-python request objects on a mock clock.

Shared by the coordinator test modules. Every response the
coordinator produces is encoded at its version, so each test also proves the response
is valid on the wire.
"""

from __future__ import annotations

import itertools

from kafka.protocol.admin.groups import DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest
from kafka.protocol.consumer.group import (HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest,
                                           SyncGroupRequest)

from kgroup.coordinator import GroupCoordinator

Protocol = JoinGroupRequest.JoinGroupRequestProtocol
Assignment = SyncGroupRequest.SyncGroupRequestAssignment
Identity = LeaveGroupRequest.MemberIdentity
RANGE = (("range", b"range-meta"),)

NONE = 0
UNKNOWN_SERVER_ERROR = -1
COORDINATOR_NOT_AVAILABLE = 15
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
MEMBER_ID_REQUIRED = 79
GROUP_MAX_SIZE_REACHED = 81
FENCED_INSTANCE_ID = 82


class Harness:
    def __init__(self, **config):
        settings = {"group.min.session.timeout.ms": 10, "group.initial.rebalance.delay.ms": 3000}
        settings.update({k.replace("_", "."): v for k, v in config.items()})
        counter = itertools.count()
        self.coord = GroupCoordinator(config=settings, now_ms=0,
                                      uuid_source=lambda: f"u{next(counter)}")
        self.encoded = 0

    # ---- plumbing ------------------------------------------------------------------------
    def handle(self, request, client_id="client", client_host="/127.0.0.1"):
        reply = self.coord.handle(request, client_id=client_id, client_host=client_host)
        reply.add_done_callback(self._encode)
        return reply

    def _encode(self, reply):
        assert reply.response.API_VERSION is not None
        reply.response.encode()   # raises if a field is invalid at this version
        self.encoded += 1

    def advance(self, ms):
        self.coord.advance(ms)

    def group(self, group_id="g"):
        return self.coord.group(group_id)

    # ---- requests ------------------------------------------------------------------------
    def join(self, member_id="", instance=None, group="g", version=9, session=10_000,
             rebalance=30_000, protocols=RANGE, protocol_type="consumer", client_id="client",
             client_host="/127.0.0.1", reason=None):
        request = JoinGroupRequest(
            version=version, group_id=group, session_timeout_ms=session,
            rebalance_timeout_ms=rebalance, member_id=member_id, group_instance_id=instance,
            protocol_type=protocol_type,
            protocols=[Protocol(name=n, metadata=m) for n, m in protocols], reason=reason)
        return self.handle(request, client_id=client_id, client_host=client_host)

    def sync(self, member_id, generation, instance=None, group="g", version=5, assignments=None,
             protocol_type="consumer", protocol_name="range"):
        request = SyncGroupRequest(
            version=version, group_id=group, generation_id=generation, member_id=member_id,
            group_instance_id=instance, protocol_type=protocol_type, protocol_name=protocol_name,
            assignments=[Assignment(member_id=m, assignment=a)
                         for m, a in (assignments or {}).items()])
        return self.handle(request)

    def heartbeat(self, member_id, generation, instance=None, group="g", version=4):
        return self.handle(HeartbeatRequest(version=version, group_id=group,
                                            generation_id=generation, member_id=member_id,
                                            group_instance_id=instance))

    def leave(self, members, group="g", version=5):
        """members: [(member_id, instance_id)] (v3+), or a single member id string (v0-2)."""
        if version < 3:
            return self.handle(LeaveGroupRequest(version=version, group_id=group, member_id=members))
        return self.handle(LeaveGroupRequest(
            version=version, group_id=group,
            members=[Identity(member_id=m, group_instance_id=i, reason="test") for m, i in members]))

    def describe(self, *groups, version=5):
        return self.handle(DescribeGroupsRequest(version=version, groups=list(groups)))

    def list_groups(self, version=5, states=(), types=()):
        return self.handle(ListGroupsRequest(version=version, states_filter=list(states),
                                             types_filter=list(types)))

    def delete(self, *groups, version=2):
        return self.handle(DeleteGroupsRequest(version=version, groups_names=list(groups)))

    # ---- scenarios -----------------------------------------------------------------------
    def static_join_round(self, instances, version=9, **kw):
        """Initial round: every instance joins with an empty id; the delay runs out."""
        replies = [self.join(instance=i, version=version, **kw) for i in instances]
        while not all(r.done for r in replies):
            self.advance(self.coord.next_deadline_ms() - self.coord.now_ms)
        return replies

    def dynamic_join(self, version=9, **kw):
        """KIP-394 two-step join; returns the parked reply of the second JoinGroup."""
        first = self.join(version=version, **kw)
        assert first.response.error_code == MEMBER_ID_REQUIRED
        return self.join(member_id=first.response.member_id, version=version, **kw)

    def stable(self, instances=("i0", "i1"), dynamic=0, assign=None, version=9):
        """A Stable generation-1 group; returns {name: member_id} for instances then d0, d1, ..."""
        replies = [self.join(instance=i, version=version) for i in instances]
        replies += [self.dynamic_join(version=version) for _ in range(dynamic)]
        while not all(r.done for r in replies):
            self.advance(self.coord.next_deadline_ms() - self.coord.now_ms)
        names = list(instances) + [f"d{k}" for k in range(dynamic)]
        ids = {name: r.response.member_id for name, r in zip(names, replies)}
        leader = replies[0].response.leader
        generation = replies[0].response.generation_id
        assignments = assign or {mid: f"A-{name}".encode() for name, mid in ids.items()}
        syncs = []
        for name, mid in ids.items():
            if mid == leader:
                continue
            syncs.append(self.sync(mid, generation, instance=name if name in instances else None))
        leader_name = next(n for n, m in ids.items() if m == leader)
        syncs.append(self.sync(leader, generation, assignments=assignments,
                               instance=leader_name if leader_name in instances else None))
        assert all(s.done and s.response.error_code == NONE for s in syncs)
        assert self.group().state == "Stable"
        return ids


def in_state(state):
    """A harness whose group "g" is in `state`, plus its static members (name -> id) and parked replies."""
    h = Harness()
    parked = {}
    if state == "CompletingRebalance":
        replies = h.static_join_round(["i0", "i1"])
        ids = {"i0": replies[0].response.member_id, "i1": replies[1].response.member_id}
    else:
        ids = h.stable()
        if state == "PreparingRebalance":
            parked["i0"] = h.join(member_id=ids["i0"], instance="i0")   # the leader forces a rebalance
        elif state == "Empty":
            h.leave([(ids["i0"], "i0"), (ids["i1"], "i1")])
            ids = {}
    assert h.group().state == state
    return h, ids, parked


def java_order(items, key=lambda item: item, capacity: int = 16):
    """``items``, listed in join order, in the order Kafka's ClassicGroup.members (a java.util.HashMap
    keyed by member id) iterates them: by bucket at ``capacity`` (16 holds up to 12 members), join
    order within a bucket (the sort is stable). ``key`` gives an item's member id."""
    from kgroup.coordinator.classic.group import _java_bucket

    return sorted(items, key=lambda item: _java_bucket(key(item), capacity))
