"""`kgroup describe --from-dump`: the group view rebuilt offline, plus what only the log knows."""

from __future__ import annotations

import json

from click.testing import CliRunner
from helpers.consumer import BAR, FOO, assignment_of, heartbeat, new_coordinator
from helpers.offsets import commit_request

from kgroup.commands.cli import cli
from kgroup.records import encode_assignment, encode_key, encode_subscription, encode_value
from kgroup.records.writer import encode_batch

SEGMENT_A = "A__consumer_offsets-7__00000000000000000000.log"
SEGMENT_B = "B__consumer_offsets-12__00000000000000000000.log"


def describe(*args):
    return CliRunner().invoke(cli, ["describe", *args], catch_exceptions=False)


def by_group(result):
    return {g["group"]: g for g in json.loads(result.stdout)}


def test_segment_a_latest_state(segments_dir):
    result = describe("--from-dump", str(segments_dir / SEGMENT_A), "--all-groups", "-o", "json")
    assert result.exit_code == 0, result.stderr
    groups = by_group(result)
    assert sorted(groups) == ["gzip-group", "hdr-group", "lat-group", "lz4-group", "my-group", "snappy-group",
                              "txn-group", "zstd-group"]
    my = groups["my-group"]
    assert (my["state"], my["generation"], my["protocol_type"], my["protocol"]) == ("Stable", 1, "consumer", "range")
    assert my["members"] == [{"member_id": "m1", "group_instance_id": None, "static": False, "client_id": "c1",
                              "client_host": "/127.0.0.1", "assignment": [{"topic": "orders", "partitions": [0, 1]}],
                              "member_epoch": None, "member_type": "classic", "target_assignment": None,
                              "subscribed_topics": ["orders"], "subscribed_topic_regex": None, "rack_id": None,
                              "session_timeout_ms": 45000, "last_seen_ms": 1700000000002, "session_ended_ms": None}]
    assert (my["type"], my["group_epoch"], my["assignment_epoch"], my["assignor"]) == ("classic", None, None, None)
    # partition 1's commit was deleted at offset 21; the member still owns it
    assert [(o["partition"], o["committed"], o["member_id"], o["log_end"], o["lag"]) for o in my["offsets"]] == [
        (0, 100, "m1", None, None), (1, None, "m1", None, None)]
    # txn 4000 committed p0=500 (p1's 600 lost to the later plain commit 650); txn 4001 (p0=999) aborted
    assert [(o["partition"], o["committed"]) for o in groups["txn-group"]["offsets"]] == [(0, 500), (1, 650)]
    # the GroupMetadata tombstone at offset 22 deleted the group, not its offsets
    assert [(o["partition"], o["committed"]) for o in groups["gzip-group"]["offsets"]] == [(0, 10), (1, 11), (2, 12)]
    assert groups["gzip-group"]["state"] == "Empty" and groups["gzip-group"]["members"] == []


def test_segment_b_legacy_and_unknown_group(segments_dir):
    result = describe("--from-dump", str(segments_dir / SEGMENT_B), "legacy-group", "nobody", "-o", "json")
    assert result.exit_code == 3
    groups = by_group(result)
    offsets = {o["partition"]: o["committed"] for o in groups["legacy-group"]["offsets"]}
    assert offsets[0] == 4242 and offsets[5] == 55 and offsets[9] == 99
    assert groups["nobody"]["error"] == "group 'nobody' is not in the dump"
    assert "kgroup describe: group 'nobody' is not in the dump" in result.stderr


def test_missing_dump_path_is_one_line(tmp_path):
    missing = tmp_path / "nothing-here"
    result = describe("--from-dump", str(missing), "g")
    assert result.exit_code == 1
    assert result.stderr == (f"kgroup describe: no __consumer_offsets segment found in {missing} "
                             f"({missing}: no such file or directory)\n")


def test_a_dump_with_no_record_is_one_line_naming_the_file_and_why(tmp_path):
    text = tmp_path / "notes.log"
    text.write_text("hello\n")
    for command in ("describe", "list"):
        result = CliRunner().invoke(cli, [command, "--from-dump", str(text), *(["g"] if command == "describe" else [])])
        assert result.exit_code == 1
        [line] = result.stderr.splitlines()
        assert line.startswith(f"kgroup {command}: no records could be read from {text} ({text}: byte 0: not a "
                               "__consumer_offsets or __worker_offsets partition"), line


def group_metadata(generation, members, ts):
    value = {"protocolType": "consumer", "generation": generation, "protocol": "range",
             "leader": members[0][0] if members else None, "currentStateTimestamp": ts, "members": [
                 {"memberId": mid, "groupInstanceId": iid, "clientId": "app", "clientHost": host,
                  "rebalanceTimeout": 60000, "sessionTimeout": session,
                  "subscription": encode_subscription({"topics": ["orders"], "userData": None}, 0),
                  "assignment": encode_assignment({"assignedPartitions": [{"topic": "orders", "partitions": parts}],
                                                   "userData": None}, 0)}
                 for mid, iid, host, session, parts in members]}
    return encode_key(2, {"group": "fleet"}), encode_value(2, 3, value)


def test_static_history_last_seen_and_moves(tmp_path):
    """a-1 restarts twice on one host; b-1 comes back on another host (a duplicate or a moved instance)."""
    T = 1_800_000_000_000
    records = [
        group_metadata(1, [("a-1-x", "a-1", "/10.0.0.1", 10000, [0, 1]), ("b-1-x", "b-1", "/10.0.0.2", 30000, [2])], T),
        group_metadata(1, [("a-1-y", "a-1", "/10.0.0.1", 10000, [0, 1]), ("b-1-x", "b-1", "/10.0.0.2", 30000, [2])],
                       T + 5000),
        group_metadata(1, [("a-1-z", "a-1", "/10.0.0.1", 10000, [0, 1]), ("b-1-y", "b-1", "/10.0.0.9", 30000, [2])],
                       T + 9000),
    ]
    path = tmp_path / "__consumer_offsets-3" / "00000000000000000000.log"
    path.parent.mkdir()
    path.write_bytes(b"".join(encode_batch([(k, v, T + i * 4500 if i < 2 else T + 9000)], base_offset=i)
                              for i, (k, v) in enumerate(records)))
    result = describe("--from-dump", str(path.parent), "fleet", "-o", "json")
    assert result.exit_code == 0, result.stderr
    [g] = json.loads(result.stdout)
    assert (g["generation"], g["state"]) == (1, "Stable")
    assert [(m["group_instance_id"], m["member_id"], m["session_timeout_ms"], m["last_seen_ms"], m["session_ended_ms"])
            for m in g["members"]] == [("a-1", "a-1-z", 10000, T + 9000, None), ("b-1", "b-1-y", 30000, T + 9000, None)]
    assert all("expires_at_ms" not in m for m in g["members"])
    assert g["instance_moves"] == [
        {"group_instance_id": "a-1", "member_ids": ["a-1-x", "a-1-y", "a-1-z"], "hosts": ["/10.0.0.1"],
         "member_id_changes": 2, "moved_host": False},
        {"group_instance_id": "b-1", "member_ids": ["b-1-x", "b-1-y"], "hosts": ["/10.0.0.2", "/10.0.0.9"],
         "member_id_changes": 1, "moved_host": True}]
    table = describe("--from-dump", str(path.parent), "fleet", "-o", "table").stdout
    assert "Instance ids that changed member id or host:" in table
    assert "SESSION-TIMEOUT-MS" in table and "LAST-SEEN" in table and "2027-01-15T08:00:09.000Z" in table
    assert "EXPIRES-AT" not in table and "SESSION-ENDED" not in table  # nothing after the replayed time


def test_a_kip848_consumer_group_is_described_from_its_records(tmp_path):
    """Records 3-8 replayed: members, instance ids, assignments named through the topic ids the
    group's commits carry (OffsetCommitValue v4: Kafka 4.1+ writes no partition metadata record)."""
    coord = new_coordinator()
    a = heartbeat(coord, member_id="a", instance_id="i-a", topics=["foo", "bar"])
    heartbeat(coord, member_id="b", topics=["foo"])
    heartbeat(coord, member_id="a", epoch=a.member_epoch, owned_partitions=assignment_of(a))
    coord.handle(commit_request("g", {("foo", 0): 1, ("bar", 0): 1}, generation=a.member_epoch, member_id="a"))
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    path.parent.mkdir()
    path.write_bytes(b"".join(encode_batch([(k, v, 1_800_000_000_000)], base_offset=i)
                              for i, (k, v) in enumerate(coord.records)))
    result = describe("--from-dump", str(path.parent), "g", "-o", "json")
    assert result.exit_code == 0, result.stderr
    [g] = json.loads(result.stdout)
    snapshot = coord.group("g")
    assert (g["state"], g["type"], g["group_epoch"], g["protocol_type"]) == (
        snapshot.state, "consumer", snapshot.group_epoch, "consumer")
    assert [(m["group_instance_id"], m["member_id"]) for m in g["members"]] == [("i-a", "a"), (None, "b")]
    owned = {(a["topic"], p) for m in g["members"] for a in m["assignment"] for p in a["partitions"]}
    named = {FOO: "foo", BAR: "bar"}
    assert owned == {(named[t], p) for m in snapshot.members for t, parts in m.assigned.items() for p in parts}
    assert {t for t, _ in owned} == {"foo", "bar"}
    table = describe("--from-dump", str(path.parent), "g", "-o", "table").stdout
    assert "None" not in table and "consumer/uniform" in table


def test_offline_csv_is_one_row_per_partition_unless_no_offsets_and_the_table_never_says_none(segments_dir):
    dump = str(segments_dir / SEGMENT_A)
    members = describe("--from-dump", dump, "my-group", "gzip-group", "--no-offsets", "-o", "csv")
    assert members.exit_code == 0, members.stderr
    assert members.stdout.splitlines() == [
        "group,state,protocol_type,protocol,coordinator,member_id,group_instance_id,static,client_id,"
        "client_host,assignment",
        'my-group,Stable,consumer,range,,m1,,false,c1,/127.0.0.1,"orders:0,1"']
    offsets = describe("--from-dump", dump, "my-group", "-o", "csv")
    assert offsets.stdout.splitlines() == ["group,topic,partition,committed,log_end,lag,member_id,group_instance_id",
                                           "my-group,orders,0,100,,,m1,", "my-group,orders,1,,,,m1,"]
    assert describe("--from-dump", dump, "my-group", "--offsets", "-o", "csv").stdout == offsets.stdout
    # gzip-group's GroupMetadata was deleted (offset 22): no generation, shown as "-", as every unknown cell is
    table = describe("--from-dump", dump, "gzip-group", "-o", "table").stdout
    assert "None" not in table
    assert table.splitlines()[1].split()[:4] == ["gzip-group", "(offline)", "Empty", "-"]
    # offline, the committed offsets the log holds; no log end offsets there, so no LOG-END, LAG or lag per owner
    header = next(line for line in table.splitlines() if line.startswith("TOPIC"))
    assert header.split() == ["TOPIC", "PARTITION", "COMMITTED", "INSTANCE-ID", "MEMBER-ID"]
    assert "TOTAL-LAG" not in table
    bare = describe("--from-dump", dump, "gzip-group", "--no-offsets", "-o", "table").stdout
    assert "COMMITTED" not in bare and bare.splitlines()[1].split()[:3] == ["gzip-group", "(offline)", "Empty"]
    doc = json.loads(describe("--from-dump", dump, "gzip-group", "--no-offsets", "-o", "json").stdout)
    assert doc[0]["offsets"] == []


def test_until_time_before_the_first_record_says_so_not_that_nothing_could_be_read(segments_dir):
    result = describe("--from-dump", str(segments_dir / SEGMENT_A), "--all-groups", "--until-time",
                      "2020-01-01T00:00:00Z", "-o", "json")
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr == (f"kgroup describe: no record of {segments_dir / SEGMENT_A} was written at or before "
                             "--until-time 2020-01-01T00:00:00.000Z (the dump starts later)\n")


def test_a_reader_that_goes_away_ends_the_output_not_the_command(segments_dir):
    """`kgroup describe --from-dump ... | head -1`: exit 0 and nothing on stderr, in every format."""
    import subprocess
    import sys

    for command in (["describe", "--all-groups"], ["list"]):
        for output in ("table", "csv", "json"):
            proc = subprocess.Popen([sys.executable, "-m", "kgroup.commands.cli", *command, "--from-dump",
                                     str(segments_dir / SEGMENT_A), "-o", output],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            proc.stdout.close()             # gone before the first line is written
            err = proc.stderr.read()
            assert (proc.wait(timeout=60), err) == (0, b""), (command, output)


def test_a_batch_whose_crc_does_not_match_is_reported_and_not_replayed(segments_dir, tmp_path):
    """The rule of decode-offsets --view state: corrupt bytes never change the state."""
    data = bytearray((segments_dir / SEGMENT_A).read_bytes())
    data[18] ^= 0xFF      # the first batch's stored CRC-32C: my-group's commits of orders-0 and orders-1
    part = tmp_path / "__consumer_offsets-7"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(bytes(data))
    result = describe("--from-dump", str(part), "my-group", "-o", "json")
    assert result.exit_code == 3     # partial: the rest of the dump was described
    assert "CRC-32C mismatch" in result.stderr and result.stderr.startswith("kgroup describe: warning: ")
    listed = CliRunner().invoke(cli, ["list", "--from-dump", str(part), "-o", "json"])
    assert listed.exit_code == 3 and "my-group" in listed.stdout
    assert listed.stderr.startswith("kgroup list: warning: ")
    assert [(o["partition"], o["committed"]) for o in by_group(result)["my-group"]["offsets"]] == [(0, None), (1, None)]
    state = CliRunner().invoke(cli, ["decode-offsets", "--view", "state", "--group", "my-group", "-o", "json",
                                     str(part)])
    assert json.loads(state.stdout)["committed_offsets"] == []


def test_a_cluster_option_given_with_from_dump_is_a_usage_error_not_ignored(segments_dir, monkeypatch):
    dump = str(segments_dir / SEGMENT_A)
    for command in (["describe", "--all-groups"], ["list"]):
        for option in (["--bootstrap-server", "kafka-1:9092"], ["--command-config", "admin.properties"]):
            result = CliRunner().invoke(cli, [*command, "--from-dump", dump, *option])
            assert result.exit_code == 2, (command, option)
            assert f"--from-dump reads a dump offline; {option[0]} is for a live cluster" in result.stderr
    monkeypatch.setenv("KGROUP_BOOTSTRAP_SERVER", "kafka-1:9092")     # only a default: the dump is read
    assert CliRunner().invoke(cli, ["list", "--from-dump", dump, "-o", "json"]).exit_code == 0


def test_a_broken_pipe_that_is_not_stdouts_is_still_a_failure(segments_dir, monkeypatch):
    import kgroup.client.from_dump as from_dump

    def socket_gone(*args, **kwargs):
        raise BrokenPipeError(32, "Broken pipe")      # e.g. a socket's: stdout is still there

    monkeypatch.setattr(from_dump, "replay_dump", socket_gone)
    result = CliRunner().invoke(cli, ["describe", "--from-dump", str(segments_dir / SEGMENT_A), "--all-groups"])
    assert (result.exit_code, result.stderr) == (1, "kgroup describe: [Errno 32] Broken pipe\n")


def test_an_interrupt_is_one_line_and_exit_130(segments_dir, monkeypatch):
    """Ctrl-C during a long replay: `kgroup describe: interrupted`, 130, as decode-offsets says it
    (click alone printed "Aborted!" and exited 1)."""
    import kgroup.client.from_dump as from_dump

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(from_dump, "replay_dump", interrupted)
    for command in (["describe", "--all-groups"], ["list"]):
        result = CliRunner().invoke(cli, [*command, "--from-dump", str(segments_dir / SEGMENT_A)])
        assert (result.exit_code, result.stderr) == (130, f"kgroup {command[0]}: interrupted\n")


def test_a_member_filter_keeps_the_groups_counts_and_says_how_many_are_shown(segments_dir):
    """--static-only on a group of one dynamic member: the group still has that member (not
    "0 (static 0, dynamic 0)"); the rows are the filtered ones."""
    dump = str(segments_dir / SEGMENT_A)
    static = describe("--from-dump", dump, "my-group", "--static-only", "-o", "table")
    assert static.exit_code == 0, static.output
    assert "1 (static 0, dynamic 1), 0 shown" in static.stdout
    unfiltered = describe("--from-dump", dump, "my-group", "-o", "table")
    assert "1 (static 0, dynamic 1)" in unfiltered.stdout and "shown" not in unfiltered.stdout


def test_topic_ids_are_named_by_the_log_dirs_partition_metadata(tmp_path):
    """Kafka 4.1+ writes no record naming a consumer group's topic ids: the log dir's
    partition.metadata files (Kafka's and serve's) do, wherever in the log dir the dump points."""
    import base64
    import uuid

    from kgroup.client.from_dump import log_dir_topic_names

    topic_id = uuid.UUID(int=42)
    for name in ("events-0", "events-1", "__consumer_offsets-0"):
        (tmp_path / name).mkdir()
    encoded = base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")
    (tmp_path / "events-0" / "partition.metadata").write_text(f"version: 0\ntopic_id: {encoded}\n")
    (tmp_path / "events-1" / "partition.metadata").write_text("garbage")
    segment = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    segment.write_bytes(b"")
    for path in (tmp_path, tmp_path / "__consumer_offsets-0", segment):
        assert log_dir_topic_names([path]) == {topic_id: "events"}


def _write_dump(tmp_path, batches) -> str:
    """[(timestamp, [(key, value), ...]), ...] as one segment of __consumer_offsets-3, a batch each."""
    path = tmp_path / "__consumer_offsets-3" / "00000000000000000000.log"
    path.parent.mkdir()
    offset, blobs = 0, []
    for ts, records in batches:
        blobs.append(encode_batch([(k, v, ts) for k, v in records], base_offset=offset))
        offset += len(records)
    path.write_bytes(b"".join(blobs))
    return str(path.parent)


def test_last_seen_is_the_last_record_and_a_session_ends_only_where_a_later_record_shows_it(tmp_path):
    """Issue 26: no expiry computed from the last GroupMetadata record (heartbeats are never logged, so
    it lay in the past for live members); replayed up to a time, a later record proves a session ended."""
    T = 1_800_000_000_000
    a, b = ("a-x", "a", "/10.0.0.1", 10000, [0]), ("b-x", "b", "/10.0.0.2", 10000, [1])
    dump = _write_dump(tmp_path, [(T, [group_metadata(1, [a, b], T)]), (T + 5000, [group_metadata(2, [a, b], T)]),
                                  (T + 60000, [group_metadata(3, [b], T)]),
                                  (T + 120000, [(encode_key(2, {"group": "fleet"}), None)])])
    now = describe("--from-dump", dump, "--until-time", str(T + 10000), "fleet", "-o", "json")
    assert now.exit_code == 0, now.stderr
    [g] = json.loads(now.stdout)
    assert [(m["member_id"], m["last_seen_ms"], m["session_ended_ms"]) for m in g["members"]] == [
        ("a-x", T + 5000, T + 60000), ("b-x", T + 5000, T + 120000)]
    table = describe("--from-dump", dump, "--until-time", str(T + 10000), "fleet", "-o", "table").stdout
    header = next(line for line in table.splitlines() if "MEMBER-ID" in line).split()
    assert header[-3:] == ["SESSION-TIMEOUT-MS", "LAST-SEEN", "SESSION-ENDED"]
    assert "2027-01-15T08:01:00.000Z" in table and "2027-01-15T08:02:00.000Z" in table
    # at T + 70 s: a is gone from the group; b was last seen at T + 60 s, and is still there an hour on
    later = by_group(describe("--from-dump", dump, "--until-time", str(T + 70000), "fleet", "-o", "json"))["fleet"]
    assert [(m["member_id"], m["last_seen_ms"], m["session_ended_ms"]) for m in later["members"]] == [
        ("b-x", T + 60000, T + 120000)]


def _coordinator_dump(tmp_path, coord, start_ms: int, step_ms: int = 1000) -> str:
    """Every batch the coordinator appended, timed start_ms + i * step_ms."""
    return _write_dump(tmp_path, [(start_ms + i * step_ms, entry.records)
                                  for i, entry in enumerate(e for e in coord.log if e.control is None)])


def test_a_kip848_members_last_seen_and_ended_session(tmp_path):
    """A consumer-group member is seen in its own metadata and current-assignment records; its
    tombstones after the replayed time end its session; a member with none after it has no end."""
    T = 1_800_000_000_000
    coord = new_coordinator()
    a = heartbeat(coord, member_id="a", instance_id="i-a", topics=["foo"])
    heartbeat(coord, member_id="b", topics=["foo"])
    heartbeat(coord, member_id="a", epoch=a.member_epoch, owned_partitions=assignment_of(a))
    seen_a = len([e for e in coord.log if e.control is None]) - 1
    heartbeat(coord, member_id="a", epoch=-1)           # a leaves: its tombstones
    left = len([e for e in coord.log if e.control is None]) - 1
    dump = _coordinator_dump(tmp_path, coord, T)
    whole = by_group(describe("--from-dump", dump, "g", "-o", "json"))["g"]
    assert [m["member_id"] for m in whole["members"]] == ["b"]
    assert whole["members"][0]["last_seen_ms"] is not None and whole["members"][0]["session_ended_ms"] is None
    then = by_group(describe("--from-dump", dump, "--until-time", str(T + seen_a * 1000), "g", "-o", "json"))["g"]
    members = {m["member_id"]: m for m in then["members"]}
    assert sorted(members) == ["a", "b"]
    assert members["a"]["last_seen_ms"] <= T + seen_a * 1000 and members["a"]["session_ended_ms"] == T + left * 1000
    assert members["b"]["session_ended_ms"] is None and members["a"]["session_timeout_ms"] is None
    table = describe("--from-dump", dump, "--until-time", str(T + seen_a * 1000), "g", "-o", "table").stdout
    header = next(line for line in table.splitlines() if "MEMBER-ID" in line).split()
    assert header[-2:] == ["LAST-SEEN", "SESSION-ENDED"] and "SESSION-TIMEOUT-MS" not in header


def test_an_online_upgrade_does_not_end_the_members_sessions(tmp_path):
    """Classic to consumer group in one batch (the classic group's tombstone, its members' consumer
    records): the members go on, no session ended."""
    from helpers.migration import Mixed

    T = 1_800_000_000_000
    mixed = Mixed()
    ids = mixed.classic_group()
    before = len([e for e in mixed.coord.log if e.control is None]) - 1
    assert mixed.consumer(member_id="c", topics=["foo"]).error_code == 0   # the upgrade
    assert hasattr(mixed.coord.group("g"), "group_epoch")                 # a consumer group now
    dump = _coordinator_dump(tmp_path, mixed.coord, T)
    then = by_group(describe("--from-dump", dump, "--until-time", str(T + before * 1000), "g", "-o", "json"))["g"]
    assert sorted(m["member_id"] for m in then["members"]) == sorted(ids.values())
    assert [m["session_ended_ms"] for m in then["members"]] == [None, None]
