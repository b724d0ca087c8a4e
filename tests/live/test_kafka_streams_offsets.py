"""kgroup's offset and group verbs on a streams group (KIP-1071) of the real Kafka 4.4 broker, whose
member is a real Kafka Streams 4.4 application (helpers.kafka_apps.StreamsInstance: input ->
repartition -> count with a changelogged store), compared with Kafka's kafka-streams-groups:
wait, the refusals while the application runs (reset --execute, delete, delete-offsets,
remove-members), reset-offsets (the plan equal to kafka-streams-groups --dry-run, then --execute seen
by both tools and by the application re-reading), delete-offsets, and delete with and without
--internal-topics.

The tests run in file order on one application (module-scoped): each leaves it as the next expects.
"""

from __future__ import annotations

import pytest

from helpers.kafka_apps import StreamsInstance, tool_table
from helpers.kafka_groups import create_topic, java_classpath, kgroup, produce, wait_for

APP = "so-app"
SOURCE, SINK = "so-in", "so-out"
REPARTITION, CHANGELOG = f"{APP}-by-value-repartition", f"{APP}-counts-changelog"
ENDS = {0: 5, 1: 7}                 # records per input partition


def kg(kafka, *args):
    return kgroup(*args, "--bootstrap-server", kafka.bootstrap)


class App:
    """The Streams application, started again after each stop with the same state directory."""

    def __init__(self, kafka, cp, root):
        self.kafka, self.cp, self.root, self.runs, self.instance = kafka, cp, root, 0, None

    def start(self) -> StreamsInstance:
        self.runs += 1
        self.instance = StreamsInstance(self.cp, self.kafka.bootstrap, APP, SOURCE, SINK, self.root / "state",
                                        log=self.root / f"run-{self.runs}.log")
        self.instance.wait_ready(90)
        return self.instance

    def stop(self) -> None:
        """A dynamic member's close leaves the group: it is Empty at once."""
        self.instance.close()
        assert self.instance.process.returncode == 0, self.instance.lines[-10:]
        done = kg(self.kafka, "wait", APP, "--state", "Empty", "--timeout", "60", "-o", "json")
        assert done.exit_code == 0, done.stderr
        assert (done.json["state"], done.json["members"]) == ("Empty", 0)


def committed(kafka) -> dict:
    view = kg(kafka, "describe", APP, "--offsets", "-o", "json").json[0]
    return {(r["topic"], r["partition"]): r["committed"] for r in view["offsets"] if r["committed"] is not None}


def streams_tool(kafka, *args, check=True):
    return kafka.tool("kafka-streams-groups", "--bootstrap-server", kafka.bootstrap, "--group", APP, *args,
                      check=check)


def tool_plan(kafka, *spec) -> dict:
    """kafka-streams-groups --reset-offsets --dry-run: (topic, partition) -> new offset."""
    rows = tool_table(streams_tool(kafka, "--reset-offsets", "--dry-run", *spec).stdout)
    return {(r["TOPIC"], int(r["PARTITION"])): int(r["NEW-OFFSET"]) for r in rows}


def topics(kafka) -> set[str]:
    return set(kafka.tool("kafka-topics", "--bootstrap-server", kafka.bootstrap, "--list").stdout.split())


@pytest.fixture(scope="module")
def app(kafka, tmp_path_factory):
    root = tmp_path_factory.mktemp("streams-offsets")
    create_topic(kafka.bootstrap, SOURCE, len(ENDS))
    create_topic(kafka.bootstrap, SINK, 1)
    runner = App(kafka, java_classpath(tmp_path_factory.getbasetemp()), root)
    instance = runner.start()
    try:
        produce(kafka.bootstrap, SOURCE, ENDS)
        wait_for(lambda: instance.counted >= sum(ENDS.values()), 60, "every record counted")
        wait_for(lambda: {k: v for k, v in committed(kafka).items() if k[0] == SOURCE} ==
                 {(SOURCE, p): end for p, end in ENDS.items()}, 60, "the input committed to its end", interval=0.5)
        yield runner
    finally:
        if runner.instance is not None:
            runner.instance.close()


def test_wait_for_a_streams_group_caught_up_and_for_its_state(kafka, app):
    caught_up = kg(kafka, "wait", APP, "--caught-up", "--timeout", "60", "-o", "json")
    assert caught_up.exit_code == 0, caught_up.stderr
    data = caught_up.json
    assert (data["state"], data["type"], data["caught_up"], data["members"], data["dynamic"]) == (
        "Stable", "streams", True, 1, 1)
    assert data["group_epoch"] >= 1
    table = kg(kafka, "wait", APP, "--state", "Stable")
    assert table.exit_code == 0 and f"group {APP} is Stable at group epoch" in table.stdout
    assert "all caught up" in table.stdout
    timed_out = kg(kafka, "wait", APP, "--state", "NotReady", "--timeout", "1")
    assert timed_out.exit_code == 1 and "last state: Stable" in timed_out.stderr


def test_while_the_application_runs_the_writes_are_refused(kafka, app):
    refused = kg(kafka, "reset-offsets", APP, "--all-topics", "--to-earliest", "--execute")
    assert refused.exit_code == 1 and refused.stdout == ""
    (line,) = refused.stderr.splitlines()
    assert line.startswith(f"kgroup reset-offsets: streams group '{APP}' is Stable, not Empty")
    assert "stop the application's instances" in line and f"kgroup wait {APP} --state Empty" in line
    # Kafka's tool refuses it too, and commits nothing
    theirs = streams_tool(kafka, "--reset-offsets", "--all-input-topics", "--to-earliest", "--execute")
    assert "can only be reset if the group 'so-app' is inactive" in theirs.stdout

    plan = kg(kafka, "reset-offsets", APP, "--all-topics", "--to-earliest", "-o", "json")
    assert plan.exit_code == 0 and plan.json["executed"] is False
    assert {(r["topic"], r["partition"]): r["new"] for r in plan.json["offsets"]} == {(SOURCE, 0): 0, (SOURCE, 1): 0}

    delete = kg(kafka, "delete", APP, "-o", "json")
    assert delete.exit_code == 1 and delete.json[0]["error"] == "NON_EMPTY_GROUP"
    assert {e["action"] for e in delete.json[0]["internal_topics"]} == {"kept"}

    for dry in ((), ("--dry-run",)):
        subscribed = kg(kafka, "delete-offsets", APP, "--topic", SOURCE, "-o", "json", *dry)
        assert subscribed.exit_code == 1
        assert {r["error"] for r in subscribed.json} == {"GROUP_SUBSCRIBED_TO_TOPIC"}

    remove = kg(kafka, "remove-members", APP, "--all")
    assert remove.exit_code == 1 and remove.stdout == ""
    (line,) = remove.stderr.splitlines()
    assert "is a streams group: Kafka 4.4 cannot remove its members" in line
    assert committed(kafka)[(SOURCE, 0)] == ENDS[0]


SPECS = [("--to-earliest",), ("--to-latest",), ("--to-offset", "3"), ("--shift-by", "-2"), ("--to-current",),
         ("--to-datetime", "2000-01-01T00:00:00.000")]


def test_reset_offsets_plans_as_kafka_streams_groups_then_executes(kafka, app):
    app.stop()
    for spec in SPECS:
        ours = kg(kafka, "reset-offsets", APP, "--all-topics", *spec, "-o", "json")
        assert ours.exit_code == 0, ours.stderr
        plan = {(r["topic"], r["partition"]): r["new"] for r in ours.json["offsets"]}
        assert plan == tool_plan(kafka, "--all-input-topics", *spec), spec
        assert set(plan) == {(SOURCE, p) for p in ENDS}        # the input topic only, not the repartition topic
    ours = kg(kafka, "reset-offsets", APP, "--topic", f"{SOURCE}:1", "--shift-by", "-3", "-o", "json").json
    assert {(r["topic"], r["partition"]): r["new"] for r in ours["offsets"]} == \
        tool_plan(kafka, "--input-topic", f"{SOURCE}:1", "--shift-by", "-3") == {(SOURCE, 1): 4}
    exported = kg(kafka, "reset-offsets", APP, "--all-topics", "--to-offset", "4", "--export")
    assert exported.stdout == f"{SOURCE},0,4\n{SOURCE},1,4\n"
    plan_file = app.root / "plan.csv"
    plan_file.write_text(f"{SOURCE},1,6\n")
    ours = kg(kafka, "reset-offsets", APP, "--from-file", plan_file, "-o", "json").json
    assert {(r["topic"], r["partition"]): r["new"] for r in ours["offsets"]} == \
        tool_plan(kafka, "--from-file", str(plan_file)) == {(SOURCE, 1): 6}
    foreign = kg(kafka, "reset-offsets", APP, "--topic", SINK, "--to-earliest")
    assert foreign.exit_code == 1 and f"has no committed offset for {SINK}:0" in foreign.stderr

    internal = sorted((REPARTITION, CHANGELOG))
    planned = kg(kafka, "reset-offsets", APP, "--all-topics", "--to-offset", "2", "--internal-topics", "-o", "json")
    assert planned.json["internal_topics"] == [{"topic": t, "action": "would-delete", "error": None} for t in internal]
    assert set(internal) <= topics(kafka)
    classic = kg(kafka, "reset-offsets", "no-such-group", "--all-topics", "--to-earliest", "--internal-topics")
    assert classic.exit_code == 2 and "is not a streams group" in classic.stderr

    before = committed(kafka)
    assert {tp for tp in before if tp[0] == REPARTITION}        # the repartition topic's offsets are committed too
    done = kg(kafka, "reset-offsets", APP, "--all-topics", "--to-offset", "2", "--execute")
    assert done.exit_code == 0, done.stderr
    assert "committed 2 partition(s)" in done.stderr and "internal topics" not in done.stderr
    after = committed(kafka)
    assert after == {**before, (SOURCE, 0): 2, (SOURCE, 1): 2}     # the repartition topic's offsets untouched
    assert set(internal) <= topics(kafka)
    # as Kafka's --delete-all-internal-topics: the internal topics go too (the application's state
    # is rebuilt from the reset input; the broker creates them again when the application returns)
    done = kg(kafka, "reset-offsets", APP, "--all-topics", "--to-offset", "2", "--execute", "--internal-topics")
    assert done.exit_code == 0, done.stderr
    assert f"kgroup reset-offsets: group '{APP}': deleted its internal topics {', '.join(internal)}" in done.stderr
    wait_for(lambda: not set(internal) & topics(kafka), 30, "the internal topics deleted", interval=0.5)
    # Kafka's view of the committed input offsets (its --describe shows none of an Empty group)
    assert tool_plan(kafka, "--all-input-topics", "--to-current") == {(SOURCE, 0): 2, (SOURCE, 1): 2}

    # the application re-reads from there: one count update per re-read record
    instance = app.start()
    reread = sum(end - 2 for end in ENDS.values())
    wait_for(lambda: instance.counted >= reread, 60, "the re-read records counted")

    def both_at_the_end():
        theirs = tool_table(streams_tool(kafka, "--describe", "--offsets", "--verbose").stdout)
        theirs = {(r["TOPIC"], int(r["PARTITION"])): int(r["CURRENT-OFFSET"]) for r in theirs
                  if r["CURRENT-OFFSET"] != "-"}
        ours = committed(kafka)
        at_end = all(ours.get((SOURCE, p)) == end for p, end in ENDS.items()) and (REPARTITION, 0) in ours
        return theirs if at_end and theirs == ours else None
    wait_for(both_at_the_end, 60, "kgroup and kafka-streams-groups at the input's end", interval=0.5)
    assert instance.counted == reread
    app.stop()


def test_delete_offsets_of_an_empty_streams_group(kafka, app):
    plan = kg(kafka, "delete-offsets", APP, "--topic", f"{SOURCE}:0", "--dry-run", "-o", "json")
    assert plan.exit_code == 0 and plan.json == [{"topic": SOURCE, "partition": 0, "error": None}]
    done = kg(kafka, "delete-offsets", APP, "--topic", f"{SOURCE}:0", "-o", "json")
    assert done.exit_code == 0 and done.json == [{"topic": SOURCE, "partition": 0, "error": None}]
    assert (SOURCE, 0) not in committed(kafka) and committed(kafka)[(SOURCE, 1)] == ENDS[1]
    assert tool_plan(kafka, "--all-input-topics", "--to-current") == {(SOURCE, 1): ENDS[1]}

    usage = kg(kafka, "delete-offsets", APP)
    assert usage.exit_code == 2 and "give --topic or (for a streams group) --all-input-topics" in usage.stderr
    rest = kg(kafka, "delete-offsets", APP, "--all-input-topics", "-o", "json")    # Kafka's --all-input-topics
    assert rest.exit_code == 0 and rest.json == [{"topic": SOURCE, "partition": 1, "error": None}]
    left = committed(kafka)
    assert not {tp for tp in left if tp[0] == SOURCE} and {tp for tp in left if tp[0] == REPARTITION}
    none = kg(kafka, "delete-offsets", APP, "--all-input-topics")
    assert none.exit_code == 1 and "has no committed offset of an input topic (so-in)" in none.stderr


def test_delete_keeps_the_internal_topics_unless_asked(kafka, app):
    assert {REPARTITION, CHANGELOG} <= topics(kafka)
    plan = kg(kafka, "delete", APP, "--dry-run", "--internal-topics", "-o", "json").json
    assert plan[0]["would_delete"] is True
    assert plan[0]["internal_topics"] == [{"topic": t, "action": "would-delete", "error": None}
                                          for t in sorted((REPARTITION, CHANGELOG))]

    kept = kg(kafka, "delete", APP)
    assert kept.exit_code == 0, kept.stderr
    assert f"group '{APP}': internal topics kept: {', '.join(sorted((REPARTITION, CHANGELOG)))}" in kept.stderr
    assert kg(kafka, "describe", APP, "-o", "json").exit_code == 1        # gone
    assert {REPARTITION, CHANGELOG} <= topics(kafka)

    app.start()                       # the same application: a new group on the same internal topics
    app.stop()
    deleted = kg(kafka, "delete", APP, "--internal-topics", "-o", "json")
    assert deleted.exit_code == 0, deleted.stderr
    assert deleted.json[0]["deleted"] is True
    assert deleted.json[0]["internal_topics"] == [{"topic": t, "action": "deleted", "error": None}
                                                  for t in sorted((REPARTITION, CHANGELOG))]
    wait_for(lambda: not {REPARTITION, CHANGELOG} & topics(kafka), 30, "the internal topics deleted", interval=0.5)
    assert {SOURCE, SINK} <= topics(kafka)
