"""The simulation's shortcuts give the very answers of the slow ways they replace."""

from __future__ import annotations

import pytest

from kgroup.sim import consumer_group, scenarios
from kgroup.sim.model import SimParams
from kgroup.sim.scenarios import run_scenario
from kgroup.sim.wire_memo import WireMemo

CASES = [
    ("rolling-bounce", dict(membership="dynamic", assignor="cooperative-sticky")),
    ("rolling-bounce", dict(membership="dynamic", assignor="sticky", order="random", concurrency=2)),
    ("rolling-bounce", dict(membership="static", assignor="range")),
    ("rolling-bounce", dict(membership="dynamic", protocol="consumer")),
    ("crash", dict(membership="dynamic", assignor="roundrobin", count=2)),
    ("scale-down", dict(membership="static", count=2)),
    ("upgrade", dict(membership="dynamic")),
    ("upgrade-protocol", dict(membership="dynamic")),
    ("downgrade-protocol", dict(membership="static")),
]


def _params(**overrides) -> SimParams:
    return SimParams(members=8, topics=(("t", 20), ("u", 3)), restart_ms=5000, **overrides)


def _settled_by_scan(run) -> bool:
    """Run.settled as it was: every live process examined at every call."""
    group = run.engine.group()
    if group is not None and group.group_type == "consumer":
        live = run.live()
        if live and len(run.ledger.owner) != len(run.ledger.partitions):
            return False
        if len(group.members) != len(live) or group.group_epoch != group.assignment_epoch:
            return False
        return not any(consumer_group.holds_back(c, group) for c in live)
    if group is None or group.state != "Stable":
        return False
    live = run.live()
    if any(c.state != "stable" or c.generation != group.generation_id for c in live):
        return False
    if set(group.members) != {c.member_id for c in live}:
        return False
    return not live or len(run.ledger.owner) == len(run.ledger.partitions)


@pytest.mark.parametrize("scenario,overrides", CASES)
def test_settled_answers_as_a_scan_of_every_process(monkeypatch, scenario, overrides):
    calls = []
    fast = scenarios.Run.settled

    def both(run):
        answer = fast(run)
        assert answer == _settled_by_scan(run)
        calls.append(answer)
        return answer

    monkeypatch.setattr(scenarios.Run, "settled", both)
    run_scenario(scenario, _params(**overrides))
    assert True in calls and False in calls


@pytest.mark.parametrize("scenario,overrides", CASES)
def test_remembered_encodings_are_the_decoded_values(monkeypatch, scenario, overrides):
    monkeypatch.setattr(WireMemo, "check", True)       # asserts at every remembered decode
    remembered = run_scenario(scenario, _params(**overrides)).as_dict()
    monkeypatch.setattr(WireMemo, "member_info", _always_decoded_member_info)
    monkeypatch.setattr(WireMemo, "assigned", _always_decoded_assignment)
    assert run_scenario(scenario, _params(**overrides)).as_dict() == remembered


def _always_decoded_member_info(self, member_id, instance_id, metadata):
    from kgroup.assignors import MemberInfo
    return MemberInfo.from_bytes(member_id, instance_id, metadata)


def _always_decoded_assignment(self, member_id, assignment):
    from kgroup.sim.wire_memo import _decoded_assignment
    return _decoded_assignment(assignment)


@pytest.mark.parametrize("scenario,overrides", [
    ("upgrade-protocol", dict(membership="dynamic")),
    # a static upgrade no longer makes classic members rejoin (Kafka 4.4's conversion hashes the
    # topics, so the group epoch stays): a static downgrade's classic joins take its place
    ("downgrade-protocol", dict(membership="static", order="reverse")),
    ("downgrade-protocol", dict(membership="dynamic")),
])
def test_classic_protocol_counts_answer_as_a_walk_over_the_members(monkeypatch, scenario, overrides):
    """A classic JoinGroup into a consumer group: the group's counts of the protocols its classic
    members offer give Kafka's supportsClassicProtocols answer that a walk over them gives."""
    from kgroup.coordinator.consumer import classic_members as classic_in_consumer
    counted = classic_in_consumer._supports
    answers = []

    def both(group, protocol_type, names):
        classic = [m.classic.protocol_names() for m in group.members.values() if m.classic is not None]
        walked = protocol_type == "consumer" and (
            bool(names) if not group.members
            else any(all(name in offered for offered in classic) for name in names))
        answers.append(counted(group, protocol_type, names))
        assert answers[-1] == walked
        assert group.classic_members == len(classic)
        return answers[-1]

    monkeypatch.setattr(classic_in_consumer, "_supports", both)
    run_scenario(scenario, _params(**overrides))
    assert answers
