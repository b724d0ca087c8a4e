"""Classic groups, differentially: every scenario of tests/helpers/differential/classic_scenarios.py
played with the same real clients against the real Kafka 4.4 and against `kgroup serve`; a test per
scenario fails with the difference lines (scenario | where | field | kafka=... | kgroup=...).

All scenarios run once, side by side, in one session fixture (the suite's wall time is the slowest
scenarios', not their sum); a test only reads its scenario's outcome.
"""

from __future__ import annotations

import pytest

from helpers.differential.classic_scenarios import SCENARIOS
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
