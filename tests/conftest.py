"""Fixtures: the Kafka- and Burrow-produced vectors and real segment files in tests/vectors/."""

import json

import pytest

from helpers import VECTORS


@pytest.fixture(scope="session")
def kafka_vectors():
    return json.loads((VECTORS / "kafka_vectors.json").read_text())


@pytest.fixture(scope="session")
def burrow_vectors():
    return json.loads((VECTORS / "burrow_vectors.json").read_text())


@pytest.fixture(scope="session")
def segments_dir():
    return VECTORS / "segments"


def pytest_sessionfinish(session, exitstatus):
    """Under KGROUP_REQUIRE_KAFKA (.ci/run) a skipped test fails the run: CI never passes by
    skipping a test whose Java, Maven, Spark or broker was missing."""
    import os

    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    if os.environ.get("KGROUP_REQUIRE_KAFKA") and skipped and exitstatus == 0:
        reporter.write_line(f"KGROUP_REQUIRE_KAFKA is set and {len(skipped)} test(s) were skipped: "
                            "failing the run", red=True)
        session.exitstatus = 1


def pytest_collection_modifyitems(session, config, items):
    """Tests marked ``tansu`` run last, and Tansu's cargo build starts now in the background (it
    takes minutes): by the time the rest of the suite has run it is built."""
    tansu = [item for item in items if item.get_closest_marker("tansu")]
    if not tansu:
        return
    items[:] = [item for item in items if not item.get_closest_marker("tansu")] + tansu
    from helpers.tansu import BUILD, start_build

    config.stash[BUILD] = start_build()
