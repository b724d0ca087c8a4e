"""A mixed group on ``kgroup serve`` (an online migration half done): kafka-python classic static
members and a librdkafka ``group.protocol=consumer`` member in one consumer group. ``kgroup describe``
shows both kinds with their ``member_type``; ``kgroup remove-members`` removes one of each and the
partitions go to the member that stays."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from helpers.rdkafka_groups import PARTITIONS, new_consumer, owned, start_broker, start_classic_fleet

ROOT = Path(__file__).resolve().parents[2]


def _kgroup(*args):
    return subprocess.run([sys.executable, "-m", "kgroup.commands.cli", *args], capture_output=True, text=True,
                          timeout=90, cwd=str(ROOT))


def _until(condition, what, timeout=60, poll=()):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for consumer in poll:
            consumer.poll(0.05)
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"not reached in {timeout}s: {what() if callable(what) else what}")


def test_describe_and_remove_members_on_a_mixed_group(tmp_path):
    broker = start_broker(tmp_path)
    classic: dict = {}
    modern = None
    try:
        start_classic_fleet(broker, classic, ("k0", "k1"), session_timeout_ms=6000)
        modern = new_consumer(broker, "c0")
        _until(lambda: hasattr(broker.group("cg"), "group_epoch") and owned(modern)
               and sum(len(c.assignment) for c in classic.values()) + len(owned(modern)) == PARTITIONS,
               "the group converted with every partition owned", poll=[modern])

        result = _kgroup("describe", "cg", "--bootstrap-server", broker.bootstrap, "-o", "json")
        assert result.returncode == 0, result.stderr
        [view] = json.loads(result.stdout)
        assert view["type"] == "consumer"
        assert {m["group_instance_id"]: m["member_type"] for m in view["members"]} == {
            "k0": "classic", "k1": "classic", "c0": "consumer"}
        table = _kgroup("describe", "cg", "--bootstrap-server", broker.bootstrap).stdout
        assert "classic" in table and "consumer" in table

        classic.pop("k0").stop()        # static members stopped: they stay in the group until removed
        modern.close()
        modern = None
        result = _kgroup("remove-members", "cg", "--instance-id", "k0,c0", "--bootstrap-server",
                         broker.bootstrap, "-o", "json")
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout)
        assert [(r["group_instance_id"], r["error"]) for r in report["results"]] == [("k0", None), ("c0", None)]
        # k0 and c0 are gone: k1 (classic) gets every partition
        _until(lambda: len(classic["k1"].assignment) == PARTITIONS, "k1 owning every partition")
        [view] = json.loads(_kgroup("describe", "cg", "--bootstrap-server", broker.bootstrap, "-o", "json").stdout)
        assert [m["group_instance_id"] for m in view["members"]] == ["k1"]
    finally:
        if modern is not None:
            modern.close()
        for consumer in classic.values():
            consumer.stop()
        broker.stop()
