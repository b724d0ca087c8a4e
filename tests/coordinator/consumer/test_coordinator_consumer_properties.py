"""Property tests of the KIP-848 consumer group over random client behaviour.

Random sequences of joins (dynamic and static), heartbeats reporting what each client owns,
static bounces (epoch -2, then a new process with the same instance id), leaves, subscription
changes, time, and heartbeats whose records the host fails to write (reverted: nothing changed).
After every step: no partition is owned by two members (coordinator side, and
among the clients still in the group); group, assignment and member epochs never decrease. At the
end, quiet heartbeats bring every member to the target assignment, and ``from_records`` describes
the same group.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from helpers.consumer import assignment_of, heartbeat, new_coordinator, owned

from kgroup.coordinator import GroupCoordinator
from kgroup.protocol import ConsumerGroupHeartbeatRequest

SUBSCRIPTIONS = (["foo"], ["foo", "bar"], ["bar"])
CLIENTS = 5

steps = st.lists(st.one_of(
    st.tuples(st.just("join"), st.integers(0, CLIENTS - 1), st.sampled_from(range(len(SUBSCRIPTIONS)))),
    st.tuples(st.just("heartbeat"), st.integers(0, CLIENTS - 1), st.booleans()),
    st.tuples(st.just("heartbeat"), st.integers(0, CLIENTS - 1), st.booleans()),
    st.tuples(st.just("leave"), st.integers(0, CLIENTS - 1), st.just(0)),
    st.tuples(st.just("bounce"), st.integers(0, CLIENTS - 1), st.just(0)),
    st.tuples(st.just("subscribe"), st.integers(0, CLIENTS - 1), st.sampled_from(range(len(SUBSCRIPTIONS)))),
    st.tuples(st.just("time"), st.sampled_from([1000, 20_000, 46_000]), st.just(0)),
    st.tuples(st.just("refused"), st.integers(0, CLIENTS - 1), st.booleans()),
), max_size=40)


class Client:
    """What a consumer process knows: its member id, epoch and the partitions it holds."""

    def __init__(self, index: int, generation: int, topics: list):
        self.member_id = f"c{index}-{generation}"
        self.instance_id = f"i{index}" if index % 2 == 0 else None
        self.epoch = 0
        self.owned: dict = {}
        self.topics = topics
        self.joined = False


class Run:
    def __init__(self):
        self.coord = new_coordinator()
        self.clients: dict[int, Client] = {}
        self.generation = 0
        self.member_epochs: dict[str, int] = {}
        self.group_epochs = (0, 0)

    def join(self, index: int, subscription: int) -> None:
        if index in self.clients:
            return
        self.generation += 1
        client = Client(index, self.generation, SUBSCRIPTIONS[subscription])
        response = heartbeat(self.coord, member_id=client.member_id, instance_id=client.instance_id,
                             topics=client.topics)
        if response.error_code == 0:
            client.joined = True
            self.clients[index] = client
            self._answered(client, response)

    def heartbeat(self, index: int, full: bool, topics=None) -> None:
        client = self.clients.get(index)
        if client is None:
            return
        response = heartbeat(self.coord, member_id=client.member_id, epoch=client.epoch,
                             instance_id=client.instance_id if full else None,
                             rebalance_timeout_ms=60_000 if full else None,
                             topics=topics if topics is not None else (client.topics if full else None),
                             owned_partitions=client.owned)
        if response.error_code != 0:     # fenced or unknown: the process drops its partitions
            del self.clients[index]
            return
        self._answered(client, response)

    def _answered(self, client: Client, response) -> None:
        client.epoch = response.member_epoch
        if response.assignment is not None:
            client.owned = assignment_of(response)

    def leave(self, index: int) -> None:
        client = self.clients.pop(index, None)
        if client is not None:
            heartbeat(self.coord, member_id=client.member_id, epoch=-1, instance_id=client.instance_id)

    def bounce(self, index: int) -> None:
        client = self.clients.get(index)
        if client is None or client.instance_id is None:
            return
        del self.clients[index]
        heartbeat(self.coord, member_id=client.member_id, epoch=-2, instance_id=client.instance_id)

    def subscribe(self, index: int, subscription: int) -> None:
        client = self.clients.get(index)
        if client is not None:
            client.topics = SUBSCRIPTIONS[subscription]
            self.heartbeat(index, True, client.topics)

    def refused(self, index: int, leave: bool) -> None:
        """The host cannot write: the client's next heartbeat (or leave, or join) changes nothing."""
        client = self.clients.get(index)
        if client is None:
            member_id, epoch, owned_now = f"new-{index}", 0, []
        else:
            member_id, epoch = client.member_id, (-1 if leave else client.epoch)
            owned_now = owned(client.owned)
        request = ConsumerGroupHeartbeatRequest[1](
            group_id="g", member_id=member_id, member_epoch=epoch, rebalance_timeout_ms=60_000,
            subscribed_topic_names=["foo"] if epoch == 0 else None, topic_partitions=owned_now)
        before = self.coord.group("g"), list(self.coord.records), self._deadlines(), self._owners()

        def refuse(entries):
            raise OSError("disk full")

        self.coord.log_writer = refuse
        reply = self.coord.handle(request)
        self.coord.log_writer = None
        if reply.error is not None:
            assert (self.coord.group("g"), self.coord.records, self._deadlines(), self._owners()) == before

    def _owners(self) -> dict:
        """The group's partition epochs (who owns what, at which epoch): not in a snapshot, reverted too."""
        group = self.coord.get_group("g")
        epochs = getattr(group, "partition_epochs", {})
        return {(topic_id, p): epoch for topic_id, owners in epochs.items() for p, epoch in owners.items()}

    def _deadlines(self) -> dict:
        group = self.coord.group("g")
        members = [] if group is None else [m.member_id for m in group.members]
        return {key: self.coord.timer_deadline(key)
                for member_id in members + ["new-%d" % i for i in range(CLIENTS)]
                for key in (f"session-timeout-g-{member_id}", f"rebalance-timeout-g-{member_id}")}

    def time(self, ms: int) -> None:
        self.coord.advance(ms)

    # ---- invariants -----------------------------------------------------------------------
    def check(self) -> None:
        group = self.coord.group("g")
        if group is None:
            return
        owners: dict = {}
        for member in group.members:
            for partitions in (member.assigned, member.pending_revocation):
                for topic_id, parts in partitions.items():
                    for partition in parts:
                        assert (topic_id, partition) not in owners, "partition owned twice"
                        owners[(topic_id, partition)] = member.member_id
            if member.member_epoch >= 0:
                assert member.member_epoch >= self.member_epochs.get(member.member_id, 0)
                self.member_epochs[member.member_id] = member.member_epoch
        live = {m.member_id for m in group.members}
        held: dict = {}
        for client in self.clients.values():
            if client.member_id not in live:
                continue
            for topic_id, parts in client.owned.items():
                for partition in parts:
                    assert (topic_id, partition) not in held, "two clients hold one partition"
                    held[(topic_id, partition)] = client.member_id
        epochs = (group.group_epoch, group.assignment_epoch)
        assert epochs[0] >= self.group_epochs[0] and epochs[1] >= self.group_epochs[1]
        assert group.assignment_epoch <= group.group_epoch
        self.group_epochs = epochs


ASSIGNMENT_INTERVAL_MS = 1000


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps)
def test_consumer_group_invariants(sequence):
    run = Run()
    for op, a, b in sequence:
        if op == "time":
            run.time(a)
        elif op in ("join", "subscribe"):
            getattr(run, op)(a, b)
        elif op in ("heartbeat", "refused"):
            getattr(run, op)(a, b)
        else:
            getattr(run, op)(a)
        run.check()
    # every process comes back (a bounced static one rejoins), then quiet heartbeats: every
    # member reaches its target
    for index in range(CLIENTS):
        run.join(index, 0)
        run.check()
    for _ in range(6):
        run.time(ASSIGNMENT_INTERVAL_MS)     # a new target at most once per interval (KIP-1263)
        for index in list(run.clients):
            run.heartbeat(index, False)
            run.check()
    group = run.coord.group("g")
    assert sorted(m.member_id for m in group.members) == sorted(c.member_id for c in run.clients.values())
    assert group.state == "Stable", group
    for member in group.members:
        assert member.assigned == group.target.get(member.member_id, {})
        assert member.member_epoch == group.assignment_epoch
    rebuilt = GroupCoordinator.from_records(run.coord.records, config=run.coord.config.as_dict())
    assert rebuilt.group("g") == run.coord.group("g")
