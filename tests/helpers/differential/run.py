"""Scenarios played on both sides at once (each scenario's two plays run concurrently), many
scenarios side by side in a bounded thread pool. ``run_all`` returns, per scenario, its difference
lines and both observations."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import time

from helpers.differential.compare import differences
from helpers.differential.play import Play


@dataclasses.dataclass
class Outcome:
    scenario: object
    lines: list
    kafka: dict
    kgroup: dict
    seconds: float
    first_lines: list = dataclasses.field(default_factory=list)   # a retried scenario's first play


def run_one(scenario, kafka_side, kgroup_side) -> Outcome:
    """Both plays at once. When both sides are one cluster (a self-check: how deterministic is Kafka
    itself?), the second play gets its own group and topics (the scenario renamed ``again-NAME``)."""
    started = time.monotonic()
    second = scenario
    if kgroup_side.bootstrap == kafka_side.bootstrap:
        second = dataclasses.replace(scenario, name=f"again-{scenario.name}")
    with concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix=f"play-{scenario.name}") as pool:
        a = pool.submit(Play(scenario, kafka_side).run)
        b = pool.submit(Play(second, kgroup_side).run)
        kafka, kgroup = _result(a), _result(b)
    return Outcome(scenario, differences(scenario, kafka, kgroup), kafka, kgroup,
                   round(time.monotonic() - started, 1))


def _result(future) -> dict:
    try:
        return future.result()
    except Exception as exc:  # noqa: BLE001 - a play that broke is a difference, not a crash
        return {"play": f"failed: {type(exc).__name__}: {exc}"}


def run_all(scenarios, kafka_side, kgroup_side, workers: int = 6, progress=None, retries: int = 0) -> dict:
    """{scenario name: Outcome}; ``progress(outcome)`` is called as each one ends. A scenario with
    differences is played again up to ``retries`` times, under a new name (``retry-NAME``: its own
    group and topics on both sides), and its last play counts: on a loaded machine a client can
    miss a deadline on one side only (a timing race, not a conformance difference), while a real
    difference shows on every play. The first play's lines stay in ``first_lines``."""
    out = {}

    def play(scenario):
        outcome = run_one(scenario, kafka_side, kgroup_side)
        for attempt in range(1, retries + 1):
            if not outcome.lines:
                break
            again = run_one(dataclasses.replace(scenario, name=f"retry{attempt}-{scenario.name}"),
                            kafka_side, kgroup_side)
            again.first_lines = outcome.first_lines or outcome.lines
            again.scenario = scenario
            outcome = again
        return outcome

    with concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="scenario") as pool:
        futures = {pool.submit(play, s): s for s in scenarios}
        for future in concurrent.futures.as_completed(futures):
            outcome = future.result()
            out[outcome.scenario.name] = outcome
            if progress is not None:
                progress(outcome)
    return out


WORKERS = 8
RETRIES = 1      # a scenario that differs is played once more (run_all: timing on a loaded machine)


def scenario_tests(scenarios):
    """A test module's ``outcomes`` fixture and ``test_scenario_observed_alike``: every scenario
    played once, side by side, in the module's fixture (the wall time is the slowest scenarios',
    not their sum), and a test per scenario that fails with its difference lines."""
    import pytest

    @pytest.fixture(scope="module")
    def outcomes(differential_sides):
        kafka, kgroup = differential_sides
        return run_all(scenarios, kafka, kgroup, workers=WORKERS, retries=RETRIES)

    @pytest.mark.parametrize("scenario", scenarios, ids=lambda s: s.name)
    def test_scenario_observed_alike(outcomes, scenario):
        outcome = outcomes[scenario.name]
        assert not outcome.lines, "\n" + "\n".join(outcome.lines)

    return outcomes, test_scenario_observed_alike
