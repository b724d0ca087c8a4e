"""Helpers shared by test modules, so that no test module imports another.

``coordinator``: the Harness that drives a GroupCoordinator, and groups set up in each state;
``offsets``: request builders and response readers for the offset APIs; ``fuzz``: seeds from the
Kafka vectors and the mutation strategy; ``rdkafka_groups``: librdkafka consumer-protocol
consumers against serve. The paths below are the data every room reads.
"""

import pathlib

TESTS = pathlib.Path(__file__).resolve().parent.parent
VECTORS = TESTS / "vectors"     # Kafka- and Burrow-produced vectors and real segment files
FIXTURES = TESTS / "fixtures"
