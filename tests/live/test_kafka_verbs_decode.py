"""`kgroup decode-offsets --bootstrap-server` on the real Kafka 4.4 broker's own __consumer_offsets:
records, `--view state` against what kafka-consumer-groups shows, and `--follow` (a subprocess of
the installed `kgroup`, stopped with SIGINT: exit 0)."""

from __future__ import annotations

import json
import pathlib
import signal
import subprocess
import sys
import threading

from helpers.kafka_groups import RdkafkaMember, create_topic, kgroup, produce, tool_rows, wait_for

TOPIC = "vx-t"


def commit(kafka, group, offset):
    kafka.tool("kafka-consumer-groups", "--bootstrap-server", kafka.bootstrap, "--reset-offsets", "--group", group,
               "--topic", TOPIC, "--to-offset", str(offset), "--execute")


def test_decode_offsets_live_records_and_state(kafka):
    create_topic(kafka.bootstrap, TOPIC, 2)
    produce(kafka.bootstrap, TOPIC, {0: 5, 1: 5})
    commit(kafka, "vx-g", 2)
    commit(kafka, "vx-g", 3)
    member = RdkafkaMember(kafka.bootstrap, "vx-k", [TOPIC], "k-0")
    try:
        wait_for(lambda: len(member.assignment) == 2, 60, "k-0 assigned")
    finally:
        member.close()

    rows = kgroup("decode-offsets", "--bootstrap-server", kafka.bootstrap, "--group", "vx-g", "--group", "vx-k",
                  "-o", "jsonl")
    assert rows.exit_code == 0, rows.stderr
    records = [json.loads(line) for line in rows.stdout.splitlines()]
    commits = [(r["key"]["partition"], r["value"]["offset"]) for r in records
               if r["type"] == "offset_commit" and r["key"]["group"] == "vx-g"]
    assert commits == [(0, 2), (1, 2), (0, 3), (1, 3)]
    assert all(r["file"].startswith("__consumer_offsets-") for r in records)
    types = {r["type"] for r in records if r["key"].get("groupId") == "vx-k"}
    assert {"consumer_group_metadata", "consumer_group_member_metadata",
            "consumer_group_target_assignment_member", "consumer_group_current_member_assignment"} <= types

    state = kgroup("decode-offsets", "--bootstrap-server", kafka.bootstrap, "--view", "state", "--group", "vx-g",
                   "-o", "json")
    assert state.exit_code == 0, state.stderr
    latest = {(c["topic"], c["partition"]): c["offset"] for c in state.json["committed_offsets"]}
    truth = tool_rows(kafka.tool("kafka-consumer-groups", "--bootstrap-server", kafka.bootstrap, "--describe",
                                 "--offsets", "--group", "vx-g").stdout)
    assert latest == {(r["TOPIC"], int(r["PARTITION"])): int(r["CURRENT-OFFSET"]) for r in truth} == \
        {(TOPIC, 0): 3, (TOPIC, 1): 3}

    missing = kgroup("decode-offsets", "--bootstrap-server", "127.0.0.1:1", "--timeout", "2")
    assert missing.exit_code == 1 and len(missing.stderr.splitlines()) == 1


def test_decode_offsets_follow_until_sigint(kafka):
    create_topic(kafka.bootstrap, "vx-f-t", 1)
    kgroup_bin = pathlib.Path(sys.executable).parent / "kgroup"
    follow = subprocess.Popen([str(kgroup_bin), "decode-offsets", "--bootstrap-server", kafka.bootstrap, "--follow",
                               "--group", "vx-f", "-o", "jsonl"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(follow.stdout), daemon=True)
    reader.start()
    try:
        kafka.tool("kafka-consumer-groups", "--bootstrap-server", kafka.bootstrap, "--reset-offsets", "--group",
                   "vx-f", "--topic", "vx-f-t", "--to-offset", "0", "--execute")
        wait_for(lambda: any('"offset_commit"' in line for line in list(lines)), 30, "the commit followed")
        assert follow.poll() is None                       # still following
        follow.send_signal(signal.SIGINT)
        assert follow.wait(15) == 0
    finally:
        if follow.poll() is None:
            follow.kill()
            follow.wait(10)
    reader.join(5)
    stderr = follow.stderr.read()
    assert "Traceback" not in stderr, stderr
    row = json.loads(next(line for line in lines if '"offset_commit"' in line))
    assert (row["key"]["group"], row["key"]["topic"], row["value"]["offset"]) == ("vx-f", "vx-f-t", 0)
