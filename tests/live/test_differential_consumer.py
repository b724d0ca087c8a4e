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

from helpers.differential.consumer_scenarios import SCENARIOS
from helpers.differential.run import scenario_tests

outcomes, test_scenario_observed_alike = scenario_tests(SCENARIOS)
