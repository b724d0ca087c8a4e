"""A coordinator with classic consumers (JoinGroup/SyncGroup with real embedded consumer-protocol
bytes) and KIP-848 consumers side by side: the online migration tests' driver."""

from __future__ import annotations

import itertools
import uuid

from kafka.protocol.consumer.group import HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest

from kgroup.coordinator import GroupCoordinator
from kgroup.records import decode_assignment, encode_assignment, encode_subscription

from .consumer import heartbeat as consumer_heartbeat

FOO = uuid.UUID("00000000-0000-0000-0000-00000000f001")
TOPICS = {"foo": (FOO, 4)}
_Protocol = JoinGroupRequest.JoinGroupRequestProtocol
_Assignment = SyncGroupRequest.SyncGroupRequestAssignment


def subscription(topics=("foo",), owned=()) -> bytes:
    return encode_subscription({"topics": list(topics), "userData": None,
                                "ownedPartitions": [{"topic": "foo", "partitions": sorted(owned)}] if owned else [],
                                "generationId": -1, "rackId": None}, 1)


def assignment(partitions) -> bytes:
    return encode_assignment({"assignedPartitions": [{"topic": "foo", "partitions": sorted(partitions)}],
                              "userData": None}, 1)


def partitions_of(raw: bytes) -> set:
    return {p for tp in decode_assignment(raw)["assignedPartitions"] for p in tp["partitions"]}


class Mixed:
    def __init__(self, **config):
        settings = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 10,
                    "group.consumer.assignors": "range"}
        settings.update(config)
        counter = itertools.count(1)
        self.coord = GroupCoordinator(config=settings, uuid_source=lambda: str(uuid.UUID(int=next(counter))))
        self.coord.set_topics(TOPICS)

    def handle(self, request):
        reply = self.coord.handle(request, client_id="client", client_host="/127.0.0.1")
        if reply.done:
            reply.response.encode()
        return reply

    def join(self, member_id="", instance=None, owned=(), topics=("foo",), version=9, session=10_000,
             rebalance=30_000, protocol_type="consumer"):
        return self.handle(JoinGroupRequest(
            version=version, group_id="g", session_timeout_ms=session, rebalance_timeout_ms=rebalance,
            member_id=member_id, group_instance_id=instance, protocol_type=protocol_type,
            protocols=[_Protocol(name="range", metadata=subscription(topics, owned))], reason=None))

    def sync(self, member_id, generation, instance=None, assignments=None, version=5):
        return self.handle(SyncGroupRequest(
            version=version, group_id="g", generation_id=generation, member_id=member_id,
            group_instance_id=instance, protocol_type="consumer", protocol_name="range",
            assignments=[_Assignment(member_id=m, assignment=a) for m, a in (assignments or {}).items()]))

    def heartbeat(self, member_id, generation, instance=None):
        return self.handle(HeartbeatRequest(version=4, group_id="g", generation_id=generation,
                                            member_id=member_id, group_instance_id=instance)).response.error_code

    def leave(self, member_id, instance=None):
        identity = LeaveGroupRequest.MemberIdentity(member_id=member_id, group_instance_id=instance, reason=None)
        return self.handle(LeaveGroupRequest(version=5, group_id="g", members=[identity])).response

    def consumer(self, **kw):
        return consumer_heartbeat(self.coord, **kw)

    def classic_group(self, instances=("a", "b"), split=((0, 1), (2, 3))):
        """A Stable classic group of static members, generation 1; returns {instance: member id}."""
        replies = [self.join(instance=i) for i in instances]
        while not all(r.done for r in replies):
            self.coord.advance(self.coord.next_deadline_ms() - self.coord.now_ms)
        ids = {i: r.response.member_id for i, r in zip(instances, replies)}
        leader = replies[0].response.leader
        plan = {ids[i]: assignment(parts) for i, parts in zip(instances, split)}
        for instance, member_id in ids.items():
            if member_id != leader:
                self.sync(member_id, 1, instance=instance)
        leader_instance = next(i for i, m in ids.items() if m == leader)
        assert self.sync(leader, 1, instance=leader_instance, assignments=plan).response.error_code == 0
        assert self.coord.group("g").state == "Stable"
        return ids

    def classic_again_with_a_stopped_on_the_consumer_protocol(self, ids) -> None:
        """From a downgraded group (PreparingRebalance): the classic members rejoin and sync, then
        the static member "a" moves to the consumer protocol (member "ca") and stops with epoch -2,
        so a classic joiner with instance id "a" replaces the last consumer-protocol member."""
        joins = [self.join(member_id=ids[i], instance=i) for i in ("a", "b")]
        leader, generation = joins[0].response.leader, joins[0].response.generation_id
        plan = {ids["a"]: assignment((0, 1)), ids["b"]: assignment((2, 3))}
        for i in ("a", "b"):
            self.sync(ids[i], generation, instance=i, assignments=plan if ids[i] == leader else None)
        assert self.consumer(member_id="ca", instance_id="a").error_code == 0
        self.consumer(member_id="ca", instance_id="a", epoch=-2, topics=None)
