"""A simulated consumer speaking the KIP-848 consumer group protocol on virtual time.

It behaves as Kafka's Java consumer (``group.protocol=consumer``) and librdkafka do: a process
makes its own member id and joins with epoch 0 and its subscription; it heartbeats every
``heartbeat_interval_ms`` the coordinator returns; when an answer carries an assignment it revokes
what it no longer owns, takes what is new (the coordinator never hands out a partition another
member still holds) and acknowledges at once with a heartbeat listing what it owns. Fenced
(FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID), it loses every partition and rejoins with epoch 0 and the
same member id. On close a static member leaves with epoch -2 (its partitions wait for it, for a
session timeout), a dynamic one with -1; a restarted process has a new member id, and a static one
its old instance id. UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID and the other errors are fatal, as
in the Java client. Revocation and assignment take no virtual time, as in the classic client.
"""

from __future__ import annotations

from functools import partial

from kgroup.kafka_errors import FENCED_MEMBER_EPOCH, NONE, UNKNOWN_MEMBER_ID, name_of
from kgroup.protocol import ConsumerGroupHeartbeatRequest, fast_constructor

from .client import RECONCILED, RETRIABLE, RETRY_BACKOFF_MS
from .process import SimProcess

HEARTBEAT_VERSION = 1
# Built without kafka-python's walk of the schema: a dynamic group's roll sends millions.
_heartbeat = fast_constructor(ConsumerGroupHeartbeatRequest)
_topic_partitions = fast_constructor(ConsumerGroupHeartbeatRequest.TopicPartitions)
LEAVE_EPOCH, STATIC_LEAVE_EPOCH = -1, -2


def session_from(coordinator, group_id: str, member_id: str, slot_ms: int) -> None:
    """Restart a consumer-group member's session as a heartbeat at ``slot_ms`` (now or a skipped
    slot in the past) would have."""
    timeout = coordinator.config.group_consumer_session_timeout_ms
    coordinator.set_session_deadline(group_id, member_id, slot_ms + timeout - coordinator.now_ms)


class ConsumerProtocolConsumer(SimProcess):
    """One consumer process; ``topics`` maps topic id -> name (the coordinator's image)."""

    def __init__(self, engine, ledger, name: str, config, topics: dict,
                 instance_id: str | None = None, group_id: str = "g", rng=None):
        self.engine = engine
        self.ledger = ledger
        self.name = name
        self.config = config                 # .assignor is the server-side assignor asked for
        self.topic_names = topics
        self.instance_id = instance_id
        self.group_id = group_id
        self.rng = rng
        self.member_id = ""
        self.epoch = 0
        self.owned: set = set()              # (topic, partition) held now
        self.state = "stopped"               # stopped | joining | stable | failed
        self.error: str | None = None
        self.error_name: str | None = None   # the fatal error's name (UNRELEASED_INSTANCE_ID, ...)
        self.incarnation = 0                 # bumps on start and stop: stale replies are dropped
        self.starts = 0
        self._unacknowledged = False         # owned changed since the last heartbeat said so
        self._spread = False                 # the first beat after a join: a random phase
        self._owned_listing = None           # (owned, its heartbeat listing): _owned_partitions
        self._init_slots()

    @property
    def running(self) -> bool:
        return self.state in ("joining", "stable")

    @property
    def acknowledged(self) -> bool:
        """The coordinator has heard what the member owns now."""
        return not self._unacknowledged

    @property
    def generation(self) -> int:
        """The member epoch: what the engine's sleepers are grouped by."""
        return self.epoch

    def _event(self, kind: str, **detail) -> None:
        self.ledger.log(self.engine.coordinator.now_ms, kind, self.name, detail)

    # ---- lifecycle ----------------------------------------------------------------------
    def start(self) -> None:
        """A fresh process: a new member id, epoch 0, no partitions."""
        self.incarnation += 1
        self.starts += 1
        self.member_id = f"{self.name}-{self.starts}"
        self.owned, self.error, self.error_name = set(), None, None
        self._event("start", static=self.instance_id is not None)
        self.ledger.consuming(self.engine.now, self.name, False)
        self._join()

    def _leave(self) -> None:
        """A leave heartbeat: epoch -2 for a static member (its partitions wait), -1 otherwise."""
        epoch = STATIC_LEAVE_EPOCH if self.instance_id is not None else LEAVE_EPOCH
        self._event("leave", member_id=self.member_id, epoch=epoch)
        self.engine.handle(self._request(epoch), self.name)

    def _move_session(self, last_slot_ms: int) -> bool:
        group = self.engine.group()
        if group is None or self.member_id not in group.members:
            return False
        session_from(self.engine.coordinator, self.group_id, self.member_id, last_slot_ms)
        return True

    def _fail(self, code: int) -> None:
        self.error = f"{self.name}: ConsumerGroupHeartbeat failed with {name_of(code)} ({code})"
        self.error_name = name_of(code)
        self.engine.unsleep(self)
        self._lose_all("failed", error=name_of(code))
        self.state = "failed"
        self.incarnation += 1
        self._heartbeat_token += 1

    # ---- requests -----------------------------------------------------------------------
    def _request(self, epoch: int) -> ConsumerGroupHeartbeatRequest:
        """A join (epoch 0) carries the subscription; later heartbeats what the member owns."""
        joining = epoch == 0
        config = self.config
        owned = None
        if joining:
            owned = []
        elif epoch > 0:
            owned = self._owned_partitions()
        return _heartbeat(
            HEARTBEAT_VERSION, self.group_id, self.member_id, epoch, self.instance_id, None,
            config.rebalance_timeout_ms if joining else -1,
            list(config.topics) if joining and not config.topic_regex else None,
            config.topic_regex if joining else None,
            config.assignor if joining else None, owned)

    def _owned_partitions(self) -> list:
        """A listing made once per ``owned`` (a new set on change): a request's TopicPartitions are
        only read, by the coordinator and by the wire encoder, so heartbeats share them."""
        owned = self.owned
        listing = self._owned_listing
        if listing is None or listing[0] is not owned:
            ids = {name: topic_id for topic_id, name in self.topic_names.items()}
            by_topic: dict = {}
            for topic, partition in owned:
                by_topic.setdefault(ids[topic], []).append(partition)
            listing = self._owned_listing = (owned, [
                _topic_partitions(None, t, sorted(ps))
                for t, ps in sorted(by_topic.items(), key=lambda item: item[0].bytes)])
        return list(listing[1])

    def _join(self) -> None:
        self._heartbeat_token += 1
        self.engine.unsleep(self)
        self.epoch = 0
        self.state = "joining"
        self._spread = self.rng is not None
        self._send_heartbeat()

    def _refresh_session(self) -> None:
        session_from(self.engine.coordinator, self.group_id, self.member_id, self.engine.now)

    def _send_heartbeat(self) -> None:
        self._unacknowledged = False
        on_response = partial(self._on_response, self.incarnation, self._heartbeat_token)
        self.engine.handle(self._request(self.epoch), self.name, on_response)

    # ---- heartbeat ----------------------------------------------------------------------
    def _quiet(self) -> bool:
        """At the group epoch, owning its target, and the coordinator has heard so."""
        group = self.engine.group()
        if group is None or self._unacknowledged or group.group_type != "consumer":
            return False
        member = group.members.get(self.member_id)
        return (member is not None and member.state == RECONCILED
                and member.member_epoch == self.epoch == group.group_epoch == group.assignment_epoch)

    def _on_response(self, incarnation: int, token: int, response) -> None:
        if incarnation != self.incarnation or token != self._heartbeat_token or not self.running:
            return
        code = response.error_code
        if code == NONE:
            joined = self.state == "joining"
            self.epoch = response.member_epoch
            self.state = "stable"
            if joined:
                self._event("joined", member_id=self.member_id, epoch=self.epoch)
            if response.assignment is not None:
                self._reconcile(response.assignment, first=joined)
            if self._unacknowledged:
                self._heartbeat_token += 1
                self._send_heartbeat()            # acknowledge at once, as the Java client does
                return
            delay = response.heartbeat_interval_ms
            if self._spread:
                self._spread = False
                delay = self.rng.randint(1, delay)
            self._schedule_heartbeat(delay)
        elif code in (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID):
            self._lose_all("lost", error=name_of(code))     # onPartitionsLost, then rejoin
            self._join()
        elif code in RETRIABLE:
            self.engine.after(RETRY_BACKOFF_MS, self._retry(incarnation))
        else:
            self._fail(code)

    def _retry(self, incarnation: int):
        def again():
            if incarnation == self.incarnation and self.running:
                self._heartbeat_token += 1
                self._send_heartbeat()
        return again

    def _reconcile(self, assignment, first: bool) -> None:
        """Revoke what the new assignment drops, then take what it adds."""
        names = self.topic_names
        target = {(names[tp.topic_id], p) for tp in assignment.topic_partitions for p in tp.partitions}
        revoked = self.owned - target
        added = target - self.owned
        now = self.engine.now
        if revoked:
            self.ledger.release(now, self.name, sorted(revoked), len(self.owned) - len(revoked))
        self.owned = target
        if added:
            self.ledger.acquire(now, self.name, sorted(added), len(target))
        if first:
            self.ledger.consuming(now, self.name, True)
        if revoked or added:
            self._unacknowledged = True
            self._event("assigned", epoch=self.epoch, partitions=len(target), added=len(added),
                        revoked=len(revoked), added_partitions=tuple(sorted(added)),
                        revoked_partitions=tuple(sorted(revoked)))
