"""The real Apache Kafka 4.4 the live tests run against, started once per test session.

``kafka``: one combined broker+controller node. ``kafka3``: three brokers (node 1 also the
controller), for groups whose coordinators live on different brokers and a broker restarted in the
middle of a command: ``__consumer_offsets`` (and auto-created topics) have three replicas there, so
a stopped broker's coordinators move to another. Both are started on first use and stopped at the
end; when a test failed their directories (``server.log`` of each node) are kept and their path
printed.
"""

from __future__ import annotations

import pathlib
import shutil
import tempfile

import pytest

from helpers.kafka_cluster import KafkaCluster
from helpers.kafka_jars import fetch, require_java

_kept: list[str] = []


# The three-broker cluster replicates __consumer_offsets on every broker, so a group's coordinator
# moves to another broker when its own stops (with one replica the partition would just go offline);
# a restarted broker gets its preferred leaderships (and coordinators) back within seconds, not 5 min.
# A write is acknowledged once two replicas have it (min.insync.replicas=2, as production clusters
# run): with one, a follower that had fallen behind could lead after a stop, and the new coordinator
# would load a group as it was before its last write (a member that had left, back as Stable).
REPLICATED = {"offsets.topic.replication.factor": "3", "default.replication.factor": "3",
              "min.insync.replicas": "2", "leader.imbalance.check.interval.seconds": "5"}


def _cluster(request, name: str, brokers: int, settings: dict | None = None):
    require_java()
    lib = fetch()
    root = tempfile.mkdtemp(prefix=f"kgroup-{name}-")
    cluster = KafkaCluster(lib, pathlib.Path(root), brokers=brokers, settings=settings)
    try:
        cluster.start()
    except Exception:
        cluster.stop()
        pytest.fail(f"the real Kafka ({name}) did not start; its logs are in {root}", pytrace=False)
    yield cluster
    cluster.stop()
    if request.session.testsfailed:
        _kept.append(f"{name}: {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(autouse=True)
def _close_killed_consumers():
    """A librdkafka consumer a test killed (stopped without a leave) is closed once the test ends."""
    from helpers.kafka_groups import discard_killed

    yield
    discard_killed()


@pytest.fixture(scope="session")
def kafka(request):
    yield from _cluster(request, "kafka", 1)


@pytest.fixture(scope="session")
def kafka3(request):
    yield from _cluster(request, "kafka3", 3, REPLICATED)


@pytest.fixture(scope="session")
def tansu(request):
    """A Tansu broker (a Kafka-compatible broker that is not Kafka), built by cargo on first use."""
    from helpers.kafka_cluster import free_port
    from helpers.tansu import BUILD, TansuBroker, wait_built

    binary = wait_built(request.config.stash.get(BUILD, None))
    broker = TansuBroker(binary, free_port())
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def differential_sides(kafka, tmp_path_factory):
    """The differential runner's two sides (tests/helpers/differential): the session's real Kafka and
    one `kgroup serve` subprocess with the same group settings, Java members compiled on first use."""
    from helpers.differential.sides import Side, java_compiler, serve_side

    root = tmp_path_factory.mktemp("differential")
    compile_java = java_compiler(root)
    kgroup = serve_side(root / "serve", compile_java)
    yield Side("kafka", kafka.bootstrap, compile_java), kgroup
    kgroup.stop()


def pytest_terminal_summary(terminalreporter):
    for line in _kept:
        terminalreporter.write_line(f"real Kafka logs kept (a test failed) — {line}")
