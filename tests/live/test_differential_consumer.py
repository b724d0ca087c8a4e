"""Consumer groups (KIP-848) and online migration, differentially: every scenario of
tests/helpers/differential/consumer_scenarios.py played with the same real clients (librdkafka with
group.protocol=consumer, the Java client 4.4, classic clients for the migrations) against the real
Kafka 4.4 and against `kgroup serve`; a test per scenario fails with the difference lines
(scenario | where | field | kafka=... | kgroup=...).

All scenarios run once, side by side, in one module fixture (the wall time is the slowest
scenarios', not their sum); a test only reads its scenario's outcome. The serve and the Kafka are
the session's, shared with the classic scenarios.
"""

from __future__ import annotations

import pytest

from helpers.differential.consumer_scenarios import SCENARIOS
from helpers.differential.run import run_all

WORKERS = 8
RETRIES = 1      # a scenario that differs is played once more (run.run_all: timing on a loaded machine)


@pytest.fixture(scope="module")
def outcomes(differential_sides):
    kafka, kgroup = differential_sides
    return run_all(SCENARIOS, kafka, kgroup, workers=WORKERS, retries=RETRIES)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_scenario_observed_alike(outcomes, scenario):
    outcome = outcomes[scenario.name]
    assert not outcome.lines, "\n" + "\n".join(outcome.lines)
