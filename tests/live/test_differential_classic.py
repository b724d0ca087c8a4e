"""Classic groups, differentially: every scenario of tests/helpers/differential/classic_scenarios.py
played with the same real clients against the real Kafka 4.4 and against `kgroup serve`; a test per
scenario fails with the difference lines (scenario | where | field | kafka=... | kgroup=...).

All scenarios run once, side by side, in one module fixture (the wall time is the slowest
scenarios', not their sum); a test only reads its scenario's outcome.
"""

from __future__ import annotations

from helpers.differential.classic_scenarios import SCENARIOS
from helpers.differential.run import scenario_tests

outcomes, test_scenario_observed_alike = scenario_tests(SCENARIOS)
