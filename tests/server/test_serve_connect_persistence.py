"""kgroup serve writes Connect worker groups' records to `__worker_offsets` in its log dir (never to
`__consumer_offsets`) and rebuilds the groups from them on restart; decode-offsets reads them."""

from __future__ import annotations

import json

from click.testing import CliRunner
from helpers.connect_wire import heartbeat, settle_one_worker

from kgroup.commands.cli import cli
from kgroup.coordinator.connect.protocol import ConnectGroupSetConnectors, TaskId
from kgroup.records import partition_for
from kgroup.server.harness import ThreadedBroker


def test_a_worker_group_survives_a_restart(tmp_path):
    broker = ThreadedBroker(tmp_path / "logs")
    try:
        epoch = settle_one_worker(broker)
    finally:
        broker.stop()
    restarted = ThreadedBroker(tmp_path / "logs")
    try:
        group = restarted.run(lambda: restarted.broker.groups.coord.connect_group("cc"))
        assert (group.group_epoch, group.assignment_epoch, group.state) == (epoch, epoch, "Stable")
        assert group.connectors == {"A": 1}
        [member] = group.members
        assert (member.member_id, member.member_epoch) == ("W1", epoch)
        assert set(member.owned.connectors) | set(member.owned.tasks) == {"A", TaskId("A", 1)}
        assert {m: set(c.connectors) | set(c.tasks) for m, c in group.target.items()} == {"W1": {"A", TaskId("A", 1)}}
        beat = heartbeat(restarted, "W1", epoch, (["A"], [("A", 1)]))
        assert (beat.error_code, beat.member_epoch) == (0, epoch)
    finally:
        restarted.stop()


def test_the_records_sit_on_the_group_s_worker_offsets_partition(tmp_path):
    logs = tmp_path / "logs"
    broker = ThreadedBroker(logs, config={"offsets.topic.num.partitions": "3"})
    try:
        settle_one_worker(broker)
    finally:
        broker.stop()
    assert sorted(p.name for p in logs.glob("__worker_offsets-*")) == [f"__worker_offsets-{i}" for i in range(3)]
    holding = sorted(p.name for p in logs.glob("__worker_offsets-*") if any(
        f.stat().st_size for f in p.glob("*.log")))
    assert holding == [f"__worker_offsets-{partition_for('cc', 3)}"]
    assert not any(f.stat().st_size for f in logs.glob("__consumer_offsets-*/*.log"))
    result = CliRunner().invoke(cli, ["decode-offsets", str(logs), "--family", "connect", "-o", "json"])
    assert result.exit_code == 0, result.output
    assert [(r["type"], r.get("key", {}).get("memberId")) for r in json.loads(result.stdout)] == [
        ("connect_worker_group_connectors_tasks_metadata", None), ("connect_worker_group_metadata", None),
        ("connect_worker_group_member_metadata", "W1"), ("connect_worker_group_current_member_assignment", "W1"),
        ("connect_worker_group_metadata", None), ("connect_worker_group_target_assignment", None),
        ("connect_worker_group_current_member_assignment", "W1")]


def test_a_worker_record_that_cannot_be_written_reverts_the_operation():
    from kgroup.coordinator import GroupCoordinator

    written = []

    def writer(records):
        if fail:
            raise OSError(28, "No space left on device")
        written.extend(records)

    coord = GroupCoordinator(keep_log=False, worker_log_writer=writer)
    fail = False
    coord.handle(ConnectGroupSetConnectors("cc", {"A": 1}))
    fail = True
    reply = coord.handle(ConnectGroupSetConnectors("cc", {"A": 2}))
    assert isinstance(reply.error, OSError)
    assert (coord.connect_group("cc").group_epoch, coord.connect_group("cc").connectors) == (0, {"A": 1})
    assert coord.worker_records == [] and len(written) == 2
    rebuilt = GroupCoordinator.from_records([], worker_records=written)
    assert rebuilt.connect_group("cc").connectors == {"A": 1}
