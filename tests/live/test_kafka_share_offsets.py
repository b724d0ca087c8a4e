"""kgroup's offset and group verbs on a share group (KIP-932) of the real Kafka 4.4 broker, whose
members are Kafka's own KafkaShareConsumer 4.4: refused while the members run (Kafka's rule: the
group must be Empty), then reset-offsets (plan, then --execute: AlterShareGroupOffsets),
delete-offsets (DeleteShareGroupOffsets, per topic), wait and delete once they have stopped — each
checked with kgroup describe and with Kafka's kafka-share-groups, whose --reset-offsets --dry-run
plans the same offsets as kgroup's plan.

The tests run in file order on one module-scoped group: the members acknowledge every record, the
refusals are checked while they run, then the members close (a share consumer leaves at once).
"""

from __future__ import annotations

import pytest

from helpers.kafka_apps import ShareMember, close_all, share_from_earliest, tool_table
from helpers.kafka_groups import create_topic, java_classpath, kgroup, produce, wait_for

GROUP, TOPIC, OTHER = "sho-g", "sho-t", "sho-u"
RECORDS = {0: 5, 1: 7}


def kg(kafka, *args):
    return kgroup(*args, "--bootstrap-server", kafka.bootstrap)


def share_groups(kafka, *args, check=True):
    return kafka.tool("kafka-share-groups", "--bootstrap-server", kafka.bootstrap, *args, check=check)


@pytest.fixture(scope="module")
def members(kafka, tmp_path_factory):
    root = tmp_path_factory.mktemp("share-offsets")
    cp = java_classpath(tmp_path_factory.getbasetemp())
    create_topic(kafka.bootstrap, TOPIC, 2)
    create_topic(kafka.bootstrap, OTHER, 1)
    share_from_earliest(kafka, GROUP)
    apps = [ShareMember(cp, kafka.bootstrap, GROUP, [TOPIC], f"sho-{i}", log=root / f"sho-{i}.log") for i in range(2)]
    try:
        for app in apps:
            app.wait_ready(60)
        produce(kafka.bootstrap, TOPIC, RECORDS)
        produce(kafka.bootstrap, OTHER, {0: 3})
        wait_for(lambda: sum(m.acked for m in apps) >= sum(RECORDS.values()), 60, "every record acknowledged")
        yield apps
    finally:
        close_all(apps)


def start_offsets(kafka) -> dict:
    """(topic, partition) -> start offset, as kgroup describe shows them."""
    view = kg(kafka, "describe", GROUP, "-o", "json").json[0]
    return {(r["topic"], r["partition"]): r["start_offset"] for r in view["offsets"]}


def kafka_start_offsets(kafka) -> dict:
    """The same, as kafka-share-groups --describe --offsets prints them."""
    text = share_groups(kafka, "--describe", "--group", GROUP, "--offsets").stdout
    return {(r["TOPIC"], int(r["PARTITION"])): int(r["START-OFFSET"]) for r in tool_table(text)
            if r["START-OFFSET"] != "-"}


def test_wait_sees_the_share_group_stable_and_caught_up(kafka, members):
    done = kg(kafka, "wait", GROUP, "--state", "Stable", "--timeout", "30", "-o", "json")
    assert done.exit_code == 0, done.stderr
    assert (done.json["state"], done.json["members"], done.json["type"]) == ("Stable", 2, "share")
    assert (done.json["static"], done.json["dynamic"]) == (0, 2)
    caught_up = kg(kafka, "wait", GROUP, "--caught-up", "--timeout", "30", "-o", "json")
    assert caught_up.exit_code == 0, caught_up.stderr
    assert caught_up.json["caught_up"] is True and caught_up.json["group_epoch"] >= 1
    table = kg(kafka, "wait", GROUP, "--timeout", "30")
    assert f"group {GROUP} is Stable at group epoch" in table.stdout and "2 member(s)" in table.stdout


def test_every_verb_that_needs_an_empty_group_is_refused_while_members_run(kafka, members):
    before = wait_for(lambda: start_offsets(kafka) if len(start_offsets(kafka)) == 2 else None, 30,
                      "both share partitions initialized")
    refused = kg(kafka, "reset-offsets", GROUP, "--topic", TOPIC, "--to-earliest", "--execute")
    assert refused.exit_code == 1
    (line,) = refused.stderr.splitlines()
    assert f"group {GROUP!r} is a share group with 2 member(s) (Stable)" in line and "only while it is Empty" in line
    # Kafka's tool refuses it too, even its dry run
    theirs = share_groups(kafka, "--reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-earliest",
                          "--execute", check=False)
    assert f"Share group '{GROUP}' is not empty." in theirs.stdout + theirs.stderr
    assert start_offsets(kafka) == before == kafka_start_offsets(kafka)     # nothing changed

    plan = kg(kafka, "reset-offsets", GROUP, "--topic", TOPIC, "--to-earliest")   # a plan is shown, with the refusal to come
    assert plan.exit_code == 0, plan.stderr
    assert "--execute is refused until the group is Empty" in plan.stderr and "sho-0, sho-1" in plan.stderr

    offsets = kg(kafka, "delete-offsets", GROUP, "--topic", TOPIC)
    assert offsets.exit_code == 1 and "share group with 2 member(s)" in offsets.stderr
    assert "NON_EMPTY_GROUP" in offsets.stderr and len(offsets.stderr.splitlines()) == 1
    dry = kg(kafka, "delete-offsets", GROUP, "--topic", TOPIC, "--dry-run")
    assert dry.exit_code == 1 and "share group with 2 member(s)" in dry.stderr

    deleted = kg(kafka, "delete", GROUP, "-o", "json")
    assert deleted.exit_code == 1 and deleted.json == [
        {"group": GROUP, "state": None, "error": "NON_EMPTY_GROUP", "deleted": False}]

    member_id = kg(kafka, "describe", GROUP, "-o", "json").json[0]["members"][0]["member_id"]
    for args in (["--all"], ["--member-id", member_id], ["--all", "--dry-run"]):
        removal = kg(kafka, "remove-members", GROUP, *args)
        assert removal.exit_code == 1, args
        (line,) = removal.stderr.splitlines()
        assert "is a share group: Kafka 4.4 has no request that removes a share group's member" in line
    assert len(kg(kafka, "describe", GROUP, "-o", "json").json[0]["members"]) == 2


def test_members_stop_and_wait_sees_the_group_empty(kafka, members):
    close_all(members)
    done = kg(kafka, "wait", GROUP, "--state", "Empty", "--timeout", "30", "-o", "json")
    assert done.exit_code == 0, done.stderr
    assert (done.json["state"], done.json["members"], done.json["type"]) == ("Empty", 0, "share")


@pytest.mark.parametrize("spec", [["--to-earliest", "--all-topics"], ["--to-offset", "3", "--topic", TOPIC],
                                  ["--to-offset", "99", "--topic", f"{TOPIC}:1"], ["--to-current", "--all-topics"],
                                  ["--to-latest", "--topic", TOPIC],
                                  ["--to-datetime", "2000-01-01T00:00:00.000", "--topic", TOPIC]])
def test_the_plan_is_what_kafka_share_groups_dry_run_plans(kafka, members, spec):
    ours = kg(kafka, "reset-offsets", GROUP, *spec, "-o", "json")
    assert ours.exit_code == 0, ours.stderr
    assert ours.json["executed"] is False and ours.json["state"] == "Empty"
    theirs = tool_table(share_groups(kafka, "--reset-offsets", "--group", GROUP, *spec, "--dry-run").stdout)
    assert sorted((r["topic"], r["partition"], r["new"]) for r in ours.json["offsets"]) == sorted(
        (r["TOPIC"], int(r["PARTITION"]), int(r["NEW-OFFSET"])) for r in theirs)
    before = start_offsets(kafka)
    assert {(r["topic"], r["partition"]): r["current"] for r in ours.json["offsets"]}.items() <= before.items()
    assert start_offsets(kafka) == before == kafka_start_offsets(kafka)     # a plan changes nothing


def test_export_and_from_file_are_kafka_share_groups_csv(kafka, members, tmp_path):
    spec = ["--topic", TOPIC, "--to-offset", "1"]
    ours = kg(kafka, "reset-offsets", GROUP, *spec, "--export")
    assert ours.exit_code == 0, ours.stderr
    theirs = share_groups(kafka, "--reset-offsets", "--group", GROUP, *spec, "--dry-run", "--export").stdout
    assert sorted(ours.stdout.split()) == sorted(theirs.split()) == [f"{TOPIC},0,1", f"{TOPIC},1,1"]

    plan = tmp_path / "plan.csv"
    plan.write_text(f"{TOPIC},0,2\n{TOPIC},1,99\n")
    ours = kg(kafka, "reset-offsets", GROUP, "--from-file", plan, "-o", "json")
    assert ours.exit_code == 0, ours.stderr
    theirs = tool_table(share_groups(kafka, "--reset-offsets", "--group", GROUP, "--from-file", str(plan),
                                     "--dry-run").stdout)
    assert sorted((r["topic"], r["partition"], r["new"]) for r in ours.json["offsets"]) == sorted(
        (r["TOPIC"], int(r["PARTITION"]), int(r["NEW-OFFSET"])) for r in theirs) == [(TOPIC, 0, 2), (TOPIC, 1, 7)]


def test_reset_offsets_execute_moves_the_start_offsets(kafka, members):
    before = start_offsets(kafka)
    done = kg(kafka, "reset-offsets", GROUP, "--topic", TOPIC, "--to-offset", "3", "--execute", "-o", "json")
    assert done.exit_code == 0, done.stderr
    assert done.json["executed"] is True
    assert [(r["partition"], r["current"], r["new"], r["error"]) for r in done.json["offsets"]] == [
        (0, before[(TOPIC, 0)], 3, None), (1, before[(TOPIC, 1)], 3, None)]
    assert start_offsets(kafka) == {(TOPIC, 0): 3, (TOPIC, 1): 3}
    assert kafka_start_offsets(kafka) == {(TOPIC, 0): 3, (TOPIC, 1): 3}

    # a topic the group never read: AlterShareGroupOffsets initializes its share partition
    table = kg(kafka, "reset-offsets", GROUP, "--topic", OTHER, "--to-earliest", "--execute")
    assert table.exit_code == 0, table.stderr
    assert f"group {GROUP} (Empty): committed 1 partition(s)" in table.stderr
    assert kafka_start_offsets(kafka) == {(TOPIC, 0): 3, (TOPIC, 1): 3, (OTHER, 0): 0}
    assert start_offsets(kafka) == kafka_start_offsets(kafka)


def test_reset_offsets_refuses_what_share_groups_do_not_have(kafka, members):
    shift = kg(kafka, "reset-offsets", GROUP, "--topic", TOPIC, "--shift-by", "-1")
    assert shift.exit_code == 2 and "is a share group: --shift-by is not a reset" in shift.stderr
    instance = kg(kafka, "reset-offsets", GROUP, "--instance-id", "i-1", "--to-earliest")
    assert instance.exit_code == 2 and "a share group has none" in instance.stderr


def test_delete_offsets_deletes_a_topic_s_start_offsets(kafka, members):
    per_partition = kg(kafka, "delete-offsets", GROUP, "--topic", f"{OTHER}:0")
    assert per_partition.exit_code == 2 and "deleted per topic" in per_partition.stderr

    dry = kg(kafka, "delete-offsets", GROUP, "--topic", OTHER, "--topic", "sho-none", "--dry-run", "-o", "json")
    assert dry.exit_code == 3, dry.stderr
    assert dry.json == [{"topic": "sho-none", "partition": None, "error": "UNKNOWN_TOPIC_OR_PARTITION"},
                        {"topic": OTHER, "partition": None, "error": None}]
    assert (OTHER, 0) in kafka_start_offsets(kafka)                          # a dry run deletes nothing

    done = kg(kafka, "delete-offsets", GROUP, "--topic", OTHER, "--topic", "sho-none", "-o", "json")
    assert done.exit_code == 3 and done.json == dry.json                    # the dry run's prediction held
    assert "sho-none: UNKNOWN_TOPIC_OR_PARTITION" in done.stderr
    wait_for(lambda: kafka_start_offsets(kafka) == {(TOPIC, 0): 3, (TOPIC, 1): 3}, 30,
             f"{OTHER}'s share partition gone from kafka-share-groups --describe --offsets")
    assert start_offsets(kafka) == {(TOPIC, 0): 3, (TOPIC, 1): 3}

    again = kg(kafka, "delete-offsets", GROUP, "--topic", OTHER, "-o", "json")   # no offsets left to delete
    assert again.exit_code == 1 and again.json == [
        {"topic": OTHER, "partition": None, "error": "UNKNOWN_TOPIC_OR_PARTITION"}]


def test_delete_deletes_the_empty_share_group(kafka, members):
    dry = kg(kafka, "delete", GROUP, "--dry-run", "-o", "json")
    assert dry.exit_code == 0 and dry.json[0]["would_delete"] is True and dry.json[0]["state"] == "Empty"
    done = kg(kafka, "delete", GROUP, "-o", "json")
    assert done.exit_code == 0, done.stderr
    assert done.json == [{"group": GROUP, "state": None, "error": None, "deleted": True}]
    gone = kg(kafka, "wait", GROUP, "--state", "Dead", "--timeout", "30")
    assert gone.exit_code == 0, gone.stderr
    assert GROUP not in share_groups(kafka, "--list").stdout.split()
