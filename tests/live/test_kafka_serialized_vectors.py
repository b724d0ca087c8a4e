"""The Kafka-serialized vectors of tests/vectors/kafka-4.4/serialized, made by Kafka 4.4's own code.

``CoordinatorRecordSegment.java`` reads each record of a spec (``group-records.json``: every record
type of Kafka 4.4's ``__consumer_offsets``, share and streams groups among them; ``share-state-records.json``: the share
coordinator's ShareSnapshot / ShareUpdate) with Kafka's generated JSON converters, serializes it with
GroupCoordinatorRecordSerde / ShareCoordinatorRecordSerde into a segment file, and kafka-dump-log
(``kafka.tools.DumpLogSegments`` of the kafka-tools jar, ``--offsets-decoder`` /
``--share-group-state-decoder``) prints it. The test checks that the committed segments and texts are
what Kafka makes today; ``KGROUP_SAVE_KAFKA44_VECTORS=1`` rewrites them. Java only, no broker.
"""

import os
import shutil
import subprocess

import pytest

from helpers import VECTORS
from helpers.kafka_groups import java_classpath

DIR = VECTORS / "kafka-4.4" / "serialized"
SEGMENT = "00000000000000000000.log"
CASES = [("offsets", "group-records.json", "__consumer_offsets-0", "--offsets-decoder"),
         ("share-state", "share-state-records.json", "__share_group_state-0", "--share-group-state-decoder")]


@pytest.mark.parametrize("family,spec,partition,decoder", CASES, ids=[c[0] for c in CASES])
def test_kafka_serializes_and_dumps_the_vectors(tmp_path, tmp_path_factory, family, spec, partition, decoder):
    cp = java_classpath(tmp_path_factory.mktemp("serialized-vectors"))
    (tmp_path / partition).mkdir()
    segment = f"{partition}/{SEGMENT}"
    subprocess.run(["java", "-cp", cp, "CoordinatorRecordSegment", family, str(DIR / spec), str(tmp_path / segment)],
                   check=True, timeout=120, stdin=subprocess.DEVNULL)
    dumped = subprocess.run(["java", "-cp", cp, "org.apache.kafka.tools.DumpLogSegments", "--files", segment,
                             decoder, "--print-data-log"], cwd=tmp_path, check=True, timeout=120,
                            capture_output=True, text=True, stdin=subprocess.DEVNULL).stdout
    assert "Unknown record type" not in dumped and "Error at offset" not in dumped
    if os.environ.get("KGROUP_SAVE_KAFKA44_VECTORS"):
        (DIR / partition).mkdir(exist_ok=True)
        shutil.copyfile(tmp_path / segment, DIR / segment)
        (DIR / f"{partition}.dump-log.txt").write_text(dumped)
    assert (tmp_path / segment).read_bytes() == (DIR / segment).read_bytes()
    assert dumped == (DIR / f"{partition}.dump-log.txt").read_text()
