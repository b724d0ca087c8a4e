"""`decode-offsets --view state -o table` lists every group the replay rebuilds — classic, KIP-848
consumer and Connect worker groups — in GROUPS and MEMBERS as `describe --from-dump` shows them (one
replay, `client.from_dump.ReplayBuilder`), and keeps under OTHER RECORDS only what no group shown
stands for."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from helpers import VECTORS
from helpers.consumer import assignment_of, heartbeat, new_coordinator

from kgroup.commands.cli import cli
from kgroup.records import encode_key, encode_value
from kgroup.records.writer import encode_batch

KAFKA44 = VECTORS / "kafka-4.4"
WHILE_RUNNING = "2026-11-28T03:51:03Z"  # the Kafka 4.4 vectors' consumers were members then


def run(*args):
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def sections(text: str) -> dict[str, list[dict[str, str]]]:
    """{TITLE: rows as {COLUMN: value}}: a title line, a header whose columns are two spaces apart (a
    column name may hold one), rows cut at the header's column starts."""
    out: dict = {}
    for block in text.strip("\n").split("\n\n"):
        lines = block.splitlines()
        title, header, body = lines[0], lines[1] if len(lines) > 1 else "", lines[2:]
        if header == "(none)":
            out[title] = []
            continue
        columns = [(m.group(0), m.start()) for m in re.finditer(r"\S+(?: \S+)*", header)]
        out[title] = [{name: line[start:columns[i + 1][1] if i + 1 < len(columns) else None].strip()
                       for i, (name, start) in enumerate(columns)} for line in body]
    return out


def test_kip848_and_classic_groups_are_listed_as_describe_from_dump_shows_them():
    dump = [str(KAFKA44)]
    table = sections(run("decode-offsets", "--view", "state", "-o", "table", "--until-time", WHILE_RUNNING, *dump))
    described = {g["group"]: g for g in json.loads(run("describe", "--all-groups", "--until-time", WHILE_RUNNING,
                                                       *[a for d in dump for a in ("--from-dump", d)], "-o", "json"))}
    groups = {row["GROUP"]: row for row in table["GROUPS"]}
    assert sorted(groups) == ["dl-classic", "dl-consumer", "dl-deleted"]  # dl-txn has only offsets
    for name, row in groups.items():
        view = described[name]
        assert (row["TYPE"], row["STATE"], row["MEMBERS"]) == (view["type"], view["state"], str(len(view["members"])))
        shown = sorted((m["MEMBER ID"], m["GROUP.INSTANCE.ID"], m["MEMBER EPOCH"])
                       for m in table["MEMBERS"] if m["GROUP"] == name)
        assert shown == sorted((m["member_id"], m["group_instance_id"] or "",
                                "-" if m["member_epoch"] is None else str(m["member_epoch"])) for m in view["members"])
    assert groups["dl-consumer"]["PROTOCOL"] == described["dl-consumer"]["assignor"] == "uniform"
    assert groups["dl-consumer"]["GENERATION/EPOCH"] == str(described["dl-consumer"]["group_epoch"])
    consumer_members = [m for m in table["MEMBERS"] if m["GROUP"] == "dl-consumer"]
    assert {m["ASSIGNMENT"] for m in consumer_members} == {"dl-t:0,1", "dl-t:2"}  # topic ids named
    # what the groups stand for is not repeated as raw records
    assert not [r for r in table.get("OTHER RECORDS (latest per key)", []) if r["TYPE"].startswith(("consumer_group",
                                                                                                     "group_metadata"))]


def test_filters_choose_the_groups_shown():
    out = sections(run("decode-offsets", "--view", "state", "-o", "table", "--until-time", WHILE_RUNNING,
                       "--group", "dl-consumer", str(KAFKA44)))
    assert [row["GROUP"] for row in out["GROUPS"]] == ["dl-consumer"]
    assert {m["GROUP"] for m in out["MEMBERS"]} == {"dl-consumer"}
    only_classic = sections(run("decode-offsets", "--view", "state", "-o", "table", "--until-time", WHILE_RUNNING,
                                "--type", "group_metadata", str(KAFKA44)))
    assert sorted(row["GROUP"] for row in only_classic["GROUPS"]) == ["dl-classic", "dl-deleted"]


def test_a_consumer_group_from_the_coordinator_and_a_share_groups_records(tmp_path):
    coord = new_coordinator()
    a = heartbeat(coord, member_id="a", instance_id="i-a", topics=["foo", "bar"])
    heartbeat(coord, member_id="b", topics=["foo"])
    heartbeat(coord, member_id="a", epoch=a.member_epoch, owned_partitions=assignment_of(a))
    share = [(encode_key(11, {"groupId": "s"}), encode_value(11, 0, {"epoch": 4, "metadataHash": 0}))]
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    path.parent.mkdir()
    path.write_bytes(b"".join(encode_batch([(k, v, 1_800_000_000_000)], base_offset=i)
                              for i, (k, v) in enumerate(coord.records + share)))
    out = sections(run("decode-offsets", "--view", "state", "-o", "table", str(path.parent)))
    g, s = out["GROUPS"]
    snapshot = coord.group("g")
    assert (g["GROUP"], g["TYPE"], g["STATE"], g["GENERATION/EPOCH"], g["MEMBERS"], g["STATIC"]) == (
        "g", "consumer", snapshot.state, str(snapshot.group_epoch), "2", "1")
    assert sorted((m["MEMBER ID"], m["KIND"], m["SESSION MS"]) for m in out["MEMBERS"]) == [
        ("a", "STATIC", "-"), ("b", "DYNAMIC", "-")]
    # the share group is rebuilt beside it (`views.dump_share_streams`): its record is the group
    assert (s["GROUP"], s["TYPE"], s["STATE"], s["GENERATION/EPOCH"], s["MEMBERS"]) == ("s", "share", "Empty", "4", "0")
    assert "OTHER RECORDS (latest per key)" not in out


@pytest.fixture(scope="module")
def worker_dump(tmp_path_factory):
    """A serve log dir with a Connect worker group "cc"."""
    from helpers.connect_wire import worker_group_log

    return worker_group_log(tmp_path_factory.mktemp("dump") / "logs")


def test_a_connect_worker_group_is_listed_with_what_each_worker_runs(worker_dump):
    out = sections(run("decode-offsets", "--view", "state", "-o", "table", str(worker_dump)))
    [cc] = [row for row in out["GROUPS"] if row["GROUP"] == "cc"]
    assert (cc["TYPE"], cc["STATE"], cc["PROTOCOL"], cc["MEMBERS"]) == ("connect", "Stable", "incremental-cooperative",
                                                                        "1")
    [w1] = [m for m in out["MEMBERS"] if m["GROUP"] == "cc"]
    assert (w1["MEMBER ID"], w1["MEMBER EPOCH"]) == ("W1", "1") and "A-1" in w1["ASSIGNMENT"]
    assert not [r for r in out.get("OTHER RECORDS (latest per key)", []) if r["TYPE"].startswith("connect_worker")]
