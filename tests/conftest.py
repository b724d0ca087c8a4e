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
