"""A simulated consumer: the client side of the classic group protocol on virtual time.

It behaves like Kafka's Java consumer where that matters for rebalances: the KIP-394
two-step join, the leader running the assignor, heartbeats every ``heartbeat.interval.ms``
that discover rebalances, rejoin on REBALANCE_IN_PROGRESS (to any request) / ILLEGAL_GENERATION, a fresh
member id after UNKNOWN_MEMBER_ID, a stop with an error on FENCED_INSTANCE_ID, LeaveGroup
on close only for dynamic members, and eager (revoke everything before joining) or
cooperative (revoke only what moves, then rejoin) partition handover.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from kafka.protocol.consumer.group import (HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest,
                                           SyncGroupRequest)

from kgroup.assignors import get_assignor
from kgroup.coordinator.classic.group import PREPARING_REBALANCE, STABLE
from kgroup.kafka_errors import (COORDINATOR_NOT_AVAILABLE, FENCED_INSTANCE_ID, ILLEGAL_GENERATION,
                                 MEMBER_ID_REQUIRED, NONE, NOT_COORDINATOR, REBALANCE_IN_PROGRESS,
                                 UNKNOWN_MEMBER_ID, name_of)
from kgroup.protocol import fast_constructor

from .process import SimProcess

RECONCILED = 0              # a consumer-group member at its target (Kafka's MemberState.STABLE)

RETRIABLE = (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR)
RETRY_BACKOFF_MS = 100

Identity = LeaveGroupRequest.MemberIdentity
# A dynamic member sends these once per rebalance, and every rebalance of a dynamic group is one
# of each from every member: built without kafka-python's walk of the schema.
_join_request = fast_constructor(JoinGroupRequest)
_protocol = fast_constructor(JoinGroupRequest.JoinGroupRequestProtocol)
_sync_request = fast_constructor(SyncGroupRequest)
_assignment = fast_constructor(SyncGroupRequest.SyncGroupRequestAssignment)
_heartbeat_request = fast_constructor(HeartbeatRequest)
# The events logged at every rebalance by every member: (kind, *detail names), for Ledger.log_values.
_REVOKED = ("revoked", "partitions")
_JOINED = ("joined", "member_id", "generation", "leader", "skip_assignment")
_SYNCED = ("synced", "generation", "partitions", "added", "revoked", "added_partitions",
           "revoked_partitions")


@dataclass(frozen=True, slots=True)
class ConsumerConfig:
    """Consumer settings under the Java client's meaning (times in ms)."""

    topics: tuple[str, ...]
    partitions_per_topic: tuple[tuple[str, int], ...]
    assignor: str = "range"
    session_timeout_ms: int = 45_000
    rebalance_timeout_ms: int = 300_000        # max.poll.interval.ms
    heartbeat_interval_ms: int = 3_000
    by_instance_id: bool = True                # assignor sort key (KIP-345)
    wire_heartbeats: bool = False              # True: every heartbeat is a HeartbeatRequest
    topic_regex: str | None = None             # consumer protocol: SubscribedTopicRegex, not names


class SimConsumer(SimProcess):
    """One consumer process. ``name`` identifies the process (its client.id) across restarts."""

    def __init__(self, engine, ledger, name: str, config: ConsumerConfig,
                 instance_id: str | None = None, group_id: str = "g", rng=None):
        self.engine = engine
        self.ledger = ledger
        self.name = name
        self.config = config
        self.instance_id = instance_id
        self.group_id = group_id
        self.assignor = get_assignor(config.assignor, by_instance_id=config.by_instance_id)
        self.member_id = ""
        self.generation = -1
        self.owned: list = []            # partitions held now
        self.previous: list = []         # last generation's assignment (sticky's memory)
        self.rng = rng                   # spreads heartbeat phases; None: first beat one interval after sync
        self.state = "stopped"           # stopped | joining | syncing | stable | fenced | failed
        self.error: str | None = None
        self.error_name: str | None = None   # the fatal error's name (UNRELEASED_INSTANCE_ID, ...)
        self.incarnation = 0             # bumps on stop: replies to an old process are dropped
        self._init_slots()

    # ---- lifecycle ----------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.state in ("joining", "syncing", "stable")

    def start(self) -> None:
        """A fresh process: no member id, no generation, no partitions."""
        self.incarnation += 1
        self.member_id, self.generation, self.owned, self.previous = "", -1, [], []
        self.error = self.error_name = None
        self._event("start", static=self.instance_id is not None)
        # Not consuming until the first SyncGroup, whatever the protocol (eager members mark
        # this in _join too; a cooperative newcomer must not count as consuming meanwhile).
        self.ledger.consuming(self.engine.now, self.name, False)
        self._join()

    def _leave(self) -> None:
        """LeaveGroup on close, only for a dynamic member."""
        if self.instance_id is None and self.member_id:
            request = LeaveGroupRequest(version=5, group_id=self.group_id, members=[
                Identity(member_id=self.member_id, group_instance_id=None, reason="consumer close")])
            self._event("leave", member_id=self.member_id)
            self.engine.handle(request, self.name)

    def _move_session(self, last_slot_ms: int) -> bool:
        coordinator = self.engine.coordinator
        return coordinator.set_session_deadline(
            self.engine.group_id, self.member_id,
            last_slot_ms + self.config.session_timeout_ms - coordinator.now_ms)

    def _fail(self, code: int, during: str) -> None:
        self.error = f"{self.name}: {during} failed with {name_of(code)} ({code})"
        self.error_name = name_of(code)
        self.state = "fenced" if code == FENCED_INSTANCE_ID else "failed"
        self.engine.unsleep(self)
        now = self.engine.now
        if self.owned:
            self.ledger.release(now, self.name, self.owned, 0)
            self.owned = []
        self.ledger.consuming(now, self.name, False)
        self._event("fenced" if code == FENCED_INSTANCE_ID else "failed", error=name_of(code),
                    during=during)
        self.incarnation += 1
        self._heartbeat_token += 1

    def _event(self, kind: str, **detail) -> None:
        self.ledger.log(self.engine.coordinator.now_ms, kind, self.name, detail)

    # ---- join ---------------------------------------------------------------------------
    def _metadata(self) -> bytes:
        # Cooperative members report what they hold; eager ones have revoked everything, and
        # sticky remembers the last assignment (Java keeps it in the user data; here it rides
        # in ownedPartitions, which the other assignors ignore).
        return self.engine.wire_memo.encode_subscription(
            self.member_id, self.config.topics,
            self.owned if self.assignor.cooperative else self.previous, self.generation)

    def _join(self) -> None:
        """onJoinPrepare, then JoinGroup: eager protocols give up every partition first."""
        self._heartbeat_token += 1
        engine = self.engine
        engine.unsleep(self)
        if not self.assignor.cooperative:
            now = engine.coordinator.now_ms
            if self.owned:
                # everything it held (its last "synced" lists them): the count says how much stopped
                self.ledger.log_values(now, _REVOKED, self.name, (len(self.owned),))
                self.ledger.release(now, self.name, self.owned, 0)
                self.owned = []
            self.ledger.consuming(now, self.name, False)
        self.state = "joining"
        config = self.config
        request = _join_request(
            9, self.group_id, config.session_timeout_ms, config.rebalance_timeout_ms,
            self.member_id, self.instance_id, "consumer",
            [_protocol(None, self.assignor.name, self._metadata())], None)
        engine.handle(request, self.name, partial(self._on_join, self.incarnation))

    def _on_join(self, incarnation: int, response) -> None:
        if incarnation != self.incarnation or self.state != "joining":
            return
        code = response.error_code
        if code == MEMBER_ID_REQUIRED:
            self.member_id = response.member_id
            self._join()
            return
        if code == REBALANCE_IN_PROGRESS:     # e.g. a parked join the group's online upgrade answered:
            self._join()                      # the Java client rejoins at once
            return
        if self._rejoin_or_fail(code, incarnation, "JoinGroup"):
            return
        self.member_id = response.member_id
        self.generation = response.generation_id
        leader = response.leader == self.member_id
        self.ledger.log_values(self.engine.coordinator.now_ms, _JOINED, self.name,
                               (self.member_id, self.generation, leader,
                                bool(response.skip_assignment)))
        assignments = []
        if leader and not response.skip_assignment:
            assignments = self._run_assignor(response.members)
        self.state = "syncing"
        request = _sync_request(5, self.group_id, self.generation, self.member_id,
                                self.instance_id, "consumer", response.protocol_name, assignments)
        self.engine.handle(request, self.name, partial(self._on_sync, incarnation))

    def _rejoin_or_fail(self, code: int, incarnation: int, api: str) -> bool:
        """The client's answer to a JoinGroup/SyncGroup error; False for NONE (go on)."""
        if code == NONE:
            return False
        if code == UNKNOWN_MEMBER_ID:
            self.member_id, self.generation = "", -1
            self._join()
        elif code in RETRIABLE:
            self.engine.after(RETRY_BACKOFF_MS, self._retry(incarnation, self._join))
        else:
            self._fail(code, api)
        return True

    def _retry(self, incarnation, fn):
        def again():
            if incarnation == self.incarnation and self.running:
                fn()
        return again

    def _run_assignor(self, members) -> list:
        memo = self.engine.wire_memo
        infos = [memo.member_info(m.member_id, m.group_instance_id, m.metadata) for m in members]
        plan = self.assignor.assign(infos, dict(self.config.partitions_per_topic), check_owned=False)
        return [_assignment(None, member_id, memo.encode_assignment(member_id, parts))
                for member_id, parts in plan.items()]

    # ---- sync ---------------------------------------------------------------------------
    def _on_sync(self, incarnation: int, response) -> None:
        if incarnation != self.incarnation or self.state != "syncing":
            return
        code = response.error_code
        if code in (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION):
            self._join()
            return
        if self._rejoin_or_fail(code, incarnation, "SyncGroup"):
            return
        assigned = []
        if response.assignment:
            assigned = self.engine.wire_memo.assigned(self.member_id, response.assignment)
        now = self.engine.coordinator.now_ms
        if self.owned and assigned == self.owned:   # cooperative, keeping just what it holds
            revoked, added, gained, lost = [], [], [], []
        elif self.owned:
            new = set(assigned)
            revoked = [tp for tp in self.owned if tp not in new]
            kept = set(self.owned)
            added = [tp for tp in assigned if tp not in kept]
            gained, lost = added, revoked
        elif assigned == self.previous:       # eager, given back the very partitions it gave up
            revoked, added, gained, lost = [], assigned, (), ()
        else:                     # an eager member has given up everything before joining
            revoked, added = [], assigned
            # what changed against its last assignment (the revocation itself: its "revoked" event)
            before = set(self.previous)
            gained = [tp for tp in assigned if tp not in before]
            after = set(assigned)
            lost = [tp for tp in self.previous if tp not in after]
        if revoked:
            self.ledger.release(now, self.name, revoked, len(self.owned) - len(revoked))
        self.owned = sorted(assigned)
        self.previous = self.owned
        self.ledger.acquire(now, self.name, added, len(self.owned))
        self.ledger.consuming(now, self.name, True)
        self.ledger.log_values(now, _SYNCED, self.name,
                               (self.generation, len(self.owned), len(gained), len(lost),
                                tuple(gained), tuple(lost)))
        if revoked and self.assignor.cooperative:
            self._join()          # KIP-429: give the revoked partitions a second round
            return
        self.state = "stable"
        first = None
        if self.rng is not None:
            first = self.rng.randint(1, self.config.heartbeat_interval_ms)
        self._schedule_heartbeat(first)

    # ---- heartbeat ----------------------------------------------------------------------
    def _quiet(self) -> bool:
        """The coordinator can only answer NONE and refresh the session: Stable, this generation,
        and the member (and its instance id) still its own."""
        group = self.engine.group()
        if group is not None and group.group_type == "consumer":      # inside a consumer group
            member = group.members.get(self.member_id)
            return (member is not None and member.state == RECONCILED
                    and member.member_epoch == self.generation == group.group_epoch
                    == group.assignment_epoch)
        return group is not None and group.state == STABLE and self._validated(group)

    def _validated(self, group) -> bool:
        """The classic group's heartbeat handler passes this member on to its state's answer: this
        generation, and the member (and its instance id) still its own."""
        return (group.generation_id == self.generation
                and group.validate_member(self.member_id, self.instance_id) == NONE)

    def _rebalance_under_way(self):
        """The classic group, when the coordinator can only answer REBALANCE_IN_PROGRESS and refresh
        the session (it is preparing a rebalance this member has not joined yet); else None."""
        group = self.engine.group()
        if (group is not None and group.group_type == "classic"
                and group.state == PREPARING_REBALANCE and self._validated(group)):
            return group
        return None

    def _refresh_session(self) -> None:
        group = self.engine.group()
        if group.group_type == "consumer":
            self._move_session(self.engine.now)
        else:
            self.engine.coordinator.refresh_session(group, self.member_id)

    def _send_heartbeat(self) -> None:
        incarnation, token = self.incarnation, self._heartbeat_token
        if not self.config.wire_heartbeats:
            group = self._rebalance_under_way()
            if group is not None:
                # The heartbeat that discovers a rebalance: refresh the session and answer it
                # where the coordinator's answer would have come (see process.py).
                self.engine.coordinator.refresh_session(group, self.member_id)
                self.engine.answered(partial(self._on_heartbeat, incarnation, token,
                                             REBALANCE_IN_PROGRESS))
                return
        request = _heartbeat_request(4, self.group_id, self.generation, self.member_id,
                                     self.instance_id)
        self.engine.handle(request, self.name,
                           lambda r: self._on_heartbeat(incarnation, token, r.error_code))

    def _on_heartbeat(self, incarnation: int, token: int, code: int) -> None:
        if incarnation != self.incarnation or token != self._heartbeat_token or self.state != "stable":
            return
        if code == NONE:
            self._schedule_heartbeat()
        elif code == REBALANCE_IN_PROGRESS:
            self._join()
        elif code in (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID):
            # The generation is gone: the partitions are lost, not revoked (onPartitionsLost).
            if self.owned:
                self.ledger.release(self.engine.now, self.name, self.owned, 0)
                self.owned = []
            self.ledger.consuming(self.engine.now, self.name, False)
            if code == UNKNOWN_MEMBER_ID:
                self.member_id = ""
            self.generation = -1
            self._event("lost", error=name_of(code))
            self._join()
        elif code in RETRIABLE:
            self._schedule_heartbeat()
        else:
            self._fail(code, "Heartbeat")
