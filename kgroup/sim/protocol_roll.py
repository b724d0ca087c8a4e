"""The online migrations ``upgrade-protocol`` and ``downgrade-protocol``: every process of one group
restarted, one wave at a time, on the other group protocol (classic -> consumer, or back), with the
same name and, static, the same group.instance.id.

The group is mixed in between. Kafka's coordinator converts a classic group to a consumer group at
the first ConsumerGroupHeartbeat join (``GroupMetadataManager.validateOnlineUpgrade``) and back when
the last consumer-protocol member leaves or is replaced by a classic static joiner
(``validateOnlineDowngradeWithFencedMember`` / ``...WithReplacedMemberId``), each as
``group.consumer.migration.policy`` allows. The roll reports at which step each conversion happened,
what each wave cost, and how often each classic process had to rejoin.

A policy that forbids the upgrade makes the coordinator refuse the first consumer-protocol join
(GROUP_ID_NOT_FOUND): the roll stops there with a message naming the policy, rather than carrying on
into a group that can never take the new processes. A policy that forbids the downgrade leaves a
consumer group of classic members only: the roll finishes and says so (``blocked``).

Two subscription rules bite during a downgrade, and the roll can rehearse both. ``add_topic``: the
restarted processes come back subscribed to one more topic (a deploy that changes the subscription
with the protocol); the classic process that replaces the last consumer-protocol member then
subscribes differently and the coordinator converts back with a rebalance (KAFKA-19546).
``topic_regex``: the consumer-protocol processes subscribe by regex; any of them keeps the group a
consumer group, and a classic process, which subscribes by names, changes the subscription of the
member it replaces (KAFKA-19720), so the last replacement converts back with a rebalance too. The
report says whether the conversion back rebalanced (``downgrade_rebalanced``) and why (``notes``).
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from kgroup.coordinator.consumer.topic_regex import InvalidTopicRegex, matching_topics

from .consumer_group import topic_image
from .model import PROTOCOL_ROLLS, ParameterError, ScenarioError

ALLOWS = {"upgrade": ("bidirectional", "upgrade"), "downgrade": ("bidirectional", "downgrade")}


class ProtocolRoll:
    """Counts conversions and epoch bumps as they happen (the engine's callbacks)."""

    def __init__(self, run, scenario: str):
        self.run = run
        self.scenario = scenario
        self.source, self.target = PROTOCOL_ROLLS[scenario]
        self.step = 0                  # the wave being rolled (1-based; 0: before the roll)
        self.conversions: list = []    # {"step", "to", "t_ms"}
        self.group_epoch_bumps = 0
        self.steps: list = []
        self.retired: list = []        # the processes replaced (their errors still count)
        self.added: list = []          # the partitions of add_topic (no owner at the start)
        self._added_counted = False    # ... in the ledger since the first process subscribed
        self._epoch_seen = None
        self._rebalances = (0, 0)      # (events scanned, classic rebalances among them)
        run.engine.on_conversion = self._converted
        self._ledger_bump = run.engine.on_epoch_bump
        run.engine.on_epoch_bump = self._bumped
        self._check_subscriptions()

    def _check_subscriptions(self) -> None:
        """add_topic joins the topic image (no one subscribes to it yet); topic_regex must match
        every topic, so the classic processes' names and the regex subscribe to the same topics."""
        run, params = self.run, self.run.params
        names = [name for name, _ in params.topics]
        if params.add_topic and params.topic_regex:
            raise ParameterError("--add-topic and --topic-regex cannot be combined: a consumer-protocol "
                                 "member subscribes by names or by regex")
        if params.topic_regex:
            try:
                matched = matching_topics(params.topic_regex, names)
            except InvalidTopicRegex as exc:
                raise ParameterError(f"--topic-regex: {exc}") from None
            if len(matched) != len(names):
                raise ParameterError(f"--topic-regex {params.topic_regex!r} must match every --topic "
                                     f"(it matches {', '.join(matched) or 'none'} of {', '.join(names)})")
        if params.add_topic:
            name, count = params.add_topic
            if name in names:
                raise ParameterError(f"--add-topic {name}: the group already subscribes to it")
            image = topic_image(params.topics + (params.add_topic,))
            run.coordinator.set_topics(image)
            run.topic_names = {topic_id: n for n, (topic_id, _) in image.items()}
            self.added = [(name, p) for p in range(count)]

    # ---- engine callbacks -----------------------------------------------------------------
    def _converted(self, group_type: str, now: int, previous_epoch) -> None:
        if group_type == "consumer":
            self._epoch_seen = previous_epoch     # the classic generation becomes the group epoch
        ledger = self.run.ledger
        if ledger.recording:
            conversion = {"step": self.step, "to": group_type, "t_ms": now - ledger.start_ms}
            if group_type == "classic":    # did the classic group it became start a rebalance?
                conversion["rebalance"] = self.run.engine.group().state == "PreparingRebalance"
            self.conversions.append(conversion)
            ledger.event(now, "converted", to=group_type, step=self.step)

    def _bumped(self, group, now: int) -> None:
        previous, self._epoch_seen = self._epoch_seen, group.group_epoch
        if previous is not None and self.run.ledger.recording:
            self.group_epoch_bumps += max(group.group_epoch - previous, 0)
        self._ledger_bump(group, now)

    # ---- the roll -------------------------------------------------------------------------
    def play(self) -> None:
        run = self.run
        ledger = run.ledger
        for consumer in run.consumers:
            ledger.event(run.engine.now, "protocol", consumer.name, protocol=self.source)
        order = run.bounce_order()
        size = run.params.concurrency
        for start in range(0, len(order), size):
            run.progress("step", self.step, -(-len(order) // size))
            self.step += 1
            before = (self._moved(), ledger.unowned_ms, self.group_epoch_bumps,
                      self.classic_rebalances())
            started: list = []
            for consumer in order[start:start + size]:
                self._switch(consumer, started)
            wave = len(order[start:start + size])
            limit = run.engine.now + run.cap_ms()
            run.engine.step(run.engine.now)
            ok = run.engine.run_until(limit, partial(self._step_done, started, wave))
            refused = [c for c in started if c.state in ("fenced", "failed")]
            if refused:
                raise ScenarioError(self._refusal(refused[0]))
            if not ok:
                raise ScenarioError(run._stuck(f"step {self.step}: a restarted member did not "
                                               "come back", limit))
            self._note_step([c.name for c in started], before)

    def _step_done(self, started: list, size: int) -> bool:
        """The step's ``size`` processes all restarted and back (or stopped for good), the group
        settled: asked after every step of the engine."""
        return len(started) == size and self.run.wave_done(started)

    def _switch(self, old, started: list) -> None:
        """Stop ``old``; after its restart time (``Run.restart_duration``) the same process comes back
        on the target protocol."""
        run = self.run
        old.stop()
        run.note_session_left(old)
        self.retired.append(old)

        def back():
            new = run.add_consumer(old.instance_id is not None, name=old.name,
                                   instance_id=old.instance_id, protocol=self.target, replacing=old)
            if self.added:
                self._subscribe_added(new)
            run.ledger.event(run.engine.now, "protocol", new.name, protocol=self.target)
            started.append(new)
            new.start()
        run.engine.after(run.restart_duration(), back)

    def _subscribe_added(self, consumer) -> None:
        name, count = self.run.params.add_topic
        config = consumer.config
        consumer.config = replace(config, topics=tuple(sorted(config.topics + (name,))),
                                  partitions_per_topic=tuple(sorted(config.partitions_per_topic
                                                                    + ((name, count),))))
        if not self._added_counted:
            self._added_counted = True
            self.run.ledger.add_partitions(self.run.engine.now, self.added)

    def _moved(self) -> int:
        """Partitions moved, not counting add_topic's: they had no owner to move from."""
        moved = self.run.ledger.moved
        return len(moved) - sum(1 for tp in self.added if tp in moved)

    def _refusal(self, consumer) -> str:
        policy = self.run.broker.group_consumer_migration_policy
        direction = "upgrade" if self.target == "consumer" else "downgrade"
        if policy not in ALLOWS[direction]:
            return (f"step {self.step}: {consumer.error}: "
                    f"group.consumer.migration.policy={policy} does not allow the online {direction} "
                    f"(use {' or '.join(ALLOWS[direction])}); the roll stops with "
                    f"{sum(len(s['members']) for s in self.steps)} of {len(self.run.consumers)} "
                    "processes switched")
        return f"step {self.step}: {consumer.error}"

    def _note_step(self, names: list, before: tuple) -> None:
        ledger = self.run.ledger
        group = self.run.engine.group()
        moved, unowned, bumps, rebalances = before
        self.steps.append({
            "step": self.step, "members": names,
            "group_type": None if group is None else group.group_type,
            "partitions_moved": self._moved() - moved,
            "unowned_partition_seconds": round((ledger.unowned_ms - unowned) / 1000, 3),
            "group_epoch_bumps": self.group_epoch_bumps - bumps,
            "classic_rebalances": self.classic_rebalances() - rebalances})

    # ---- the report -----------------------------------------------------------------------
    def classic_rebalances(self) -> int:
        """Entries into PreparingRebalance so far (the log is scanned once, as it grows)."""
        events = self.run.ledger.events
        scanned, count = self._rebalances
        count += sum(1 for e in events.of_kind("group-state", start=scanned)
                     if e["state"] == "PreparingRebalance")
        self._rebalances = (len(events), count)
        return count

    def result_fields(self, group, epoch_start: int) -> dict:
        """SimResult's protocol, epoch and rebalance fields: a rebalance is an entry into
        PreparingRebalance while classic, a group-epoch bump while a consumer group."""
        self.run.ledger.moved.difference_update(self.added)     # the run's partitions moved, too
        summary = self.summary(group)
        classic_start = self.source == "classic"
        consumer_end = summary["group_type_end"] == "consumer"
        return {"protocol": f"{self.source}->{self.target}",
                "generation_start": epoch_start if classic_start else None,
                "group_epoch_start": None if classic_start else epoch_start,
                "generation_end": None if consumer_end else group.generation_id,
                "group_epoch_end": group.group_epoch if consumer_end else None,
                "rebalances": summary["classic_rebalances"] + summary["group_epoch_bumps"],
                "migration": summary}

    def summary(self, group) -> dict:
        events = self.run.ledger.events
        group_type = None if group is None else group.group_type
        blocked = None
        if self.target == "classic" and group_type == "consumer":
            policy = self.run.broker.group_consumer_migration_policy
            blocked = (f"group.consumer.migration.policy={policy} does not allow the online downgrade: "
                       f"the group stays a consumer group of classic members")
        step_of = {c["to"]: c["step"] for c in reversed(self.conversions)}
        back = next((c for c in reversed(self.conversions) if c["to"] == "classic"), None)
        params = self.run.params
        return {"from": self.source, "to": self.target,
                "policy": self.run.broker.group_consumer_migration_policy,
                "server_assignor": self.run.params.server_assignor,
                "steps": self.step,
                "converted_at_step": step_of.get("consumer"),
                "converted_back_at_step": step_of.get("classic"),
                "conversions": self.conversions,
                "group_type_end": group_type,
                "classic_rebalances": self.classic_rebalances(),
                "group_epoch_bumps": self.group_epoch_bumps,
                "classic_rejoins": classic_rejoins(events.of_kind("protocol", "start", "joined")),
                "blocked": blocked,
                "added_topic": (None if params.add_topic is None else
                                {"topic": params.add_topic[0], "partitions": params.add_topic[1]}),
                "topic_regex": params.topic_regex,
                "downgrade_rebalanced": None if back is None else back["rebalance"],
                "notes": self._notes(back),
                "per_step": self.steps}

    def _notes(self, back) -> list:
        """The subscription rules that bit, in words (the CLI prints them on stderr)."""
        params = self.run.params
        notes = []
        if params.topic_regex:
            notes.append(f"the consumer-protocol processes subscribe by regex {params.topic_regex!r}: "
                         "while any of them remains the group stays a consumer group; a classic "
                         "process subscribes by topic names, so every process that switches changes "
                         "its member's subscription and bumps the group epoch (a classic process "
                         "replacing a regex subscriber: KAFKA-19720)")
        if back is not None and back["rebalance"] and params.membership == "static" and (
                params.add_topic or params.topic_regex):
            why = (f"subscribes to {params.add_topic[0]} too" if params.add_topic
                   else "subscribes by topic names, not by the regex")
            notes.append(f"step {back['step']}: the classic process that replaced the last "
                         f"consumer-protocol member {why}: the group went back to classic with a "
                         "rebalance (KAFKA-19546), every classic member rejoined")
        return notes


def classic_rejoins(events) -> dict:
    """JoinGroup rounds each process made while on the classic protocol, beyond the first after
    each start: the rebalances it saw."""
    protocol: dict = {}
    first: dict = {}
    rejoins: dict = {}
    for e in events:
        name, kind = e.get("member"), e["event"]
        if kind == "protocol":
            protocol[name] = e["protocol"]
            if e["protocol"] == "classic":
                rejoins.setdefault(name, 0)
        elif kind == "start":
            first[name] = True
        elif kind == "joined" and protocol.get(name) == "classic":
            if first.get(name):
                first[name] = False
            else:
                rejoins[name] = rejoins.get(name, 0) + 1
    return rejoins
