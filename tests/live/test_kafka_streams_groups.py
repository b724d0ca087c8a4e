"""`kgroup list` and `kgroup describe` of a streams group (KIP-1071) on the real Kafka 4.4 broker,
whose member is a Kafka Streams 4.4 word count with group.protocol=streams (its source is below,
compiled on first use); what kgroup shows is compared with Kafka's kafka-streams-groups.
(streams.version is a production feature of Kafka 4.4, on by default.)
"""

from __future__ import annotations

import subprocess

import pytest

from helpers.kafka_groups import create_topic, kgroup, produce, tool_rows, wait_for
from helpers.kafka_jars import compile_java, fetch

GROUP = "st-wc"
WORD_COUNT = """\
import java.util.Arrays;
import java.util.Properties;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Produced;

/** A word count (WordCountDemo's topology) in a streams group: bootstrap, application id, state dir. */
public class StreamsWordCount {
  public static void main(String[] args) throws Exception {
    Properties p = new Properties();
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
    p.put(StreamsConfig.STATE_DIR_CONFIG, args[2]);
    p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
    p.put(StreamsConfig.CLIENT_ID_CONFIG, "st-client");
    p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
    p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    StreamsBuilder builder = new StreamsBuilder();
    builder.<String, String>stream("st-in").flatMapValues(v -> Arrays.asList(v.split(" ")))
        .groupBy((k, v) -> v).count().toStream().to("st-out", Produced.with(Serdes.String(), Serdes.Long()));
    KafkaStreams streams = new KafkaStreams(builder.build(), p);
    Runtime.getRuntime().addShutdownHook(new Thread(streams::close));
    streams.start();
    Thread.sleep(Long.MAX_VALUE);
  }
}
"""


def kg(kafka, *args):
    return kgroup(*args, "--bootstrap-server", kafka.bootstrap)


@pytest.fixture(scope="module")
def word_count(kafka, tmp_path_factory):
    root = tmp_path_factory.mktemp("streams")
    (root / "StreamsWordCount.java").write_text(WORD_COUNT)
    (root / "classes").mkdir()
    cp = compile_java([root / "StreamsWordCount.java"], root / "classes", fetch("kafka"))
    create_topic(kafka.bootstrap, "st-in", 2)
    create_topic(kafka.bootstrap, "st-out", 1)
    with open(root / "word-count.log", "w") as out:
        process = subprocess.Popen(["java", "-Xmx256m", "-cp", cp, "StreamsWordCount", kafka.bootstrap, GROUP,
                                    str(root / "state")], stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL)
    try:
        wait_for(lambda: _described(kafka, "Stable"), timeout=120, interval=1, what="streams group Stable")
        produce(kafka.bootstrap, "st-in", {0: 3, 1: 4})
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def _described(kafka, state):
    result = kg(kafka, "describe", GROUP, "-o", "json")
    view = result.json[0] if result.exit_code == 0 and result.json else None
    return view if view and view["state"] == state and view["members"] else None


def test_list_shows_the_streams_group_with_its_type_and_state(kafka, word_count):
    rows = kg(kafka, "list", "--type", "streams", "-o", "json").json
    assert all(r["type"] == "streams" for r in rows)          # other tests' streams groups may be listed too
    assert [(r["group"], r["state"]) for r in rows if r["group"] == GROUP] == [(GROUP, "Stable")]


def test_describe_shows_topology_members_tasks_and_input_lag(kafka, word_count):
    def committed_to_the_end():
        view = _described(kafka, "Stable")
        rows = {(r["topic"], r["partition"]): r for r in view["offsets"]} if view else {}
        done = rows.get(("st-in", 0), {}).get("committed") == 3 and rows.get(("st-in", 1), {}).get("committed") == 4
        return view if done else None

    view = wait_for(committed_to_the_end, timeout=60, interval=0.5, what="the input committed to its end")
    assert (view["type"], view["protocol_type"], view["topology_epoch"]) == ("streams", "streams", 0)
    assert view["group_epoch"] >= 1 and view["assignment_epoch"] >= 1 and view["assignor"]
    first, second = view["subtopologies"]
    assert (first["subtopology"], first["source_topics"]) == ("0", ["st-in"])
    repartition = first["repartition_sink_topics"]
    assert len(repartition) == 1 and repartition[0].endswith("-repartition")
    assert second["repartition_source_topics"] == repartition
    assert len(second["state_changelog_topics"]) == 1 and second["state_changelog_topics"][0].endswith("-changelog")
    (member,) = view["members"]
    assert member["client_id"].startswith("st-client") and member["process_id"]
    assert member["active_tasks"] == member["target_active_tasks"] == {"0": [0, 1], "1": [0, 1]}
    assert {(r["topic"], r["partition"]) for r in view["offsets"] if r["member_id"] == member["member_id"]} >= {
        ("st-in", 0), ("st-in", 1)}
    assert [r["lag"] for r in view["offsets"] if r["topic"] == "st-in"] == [0, 0]

    theirs = tool_rows(kafka.tool("kafka-streams-groups", "--bootstrap-server", kafka.bootstrap, "--describe",
                                  "--group", GROUP, "--members", "--verbose").stdout)
    assert [(r["MEMBER"], r["PROCESS"], r["MEMBER-EPOCH"]) for r in theirs] == [
        (member["member_id"], member["process_id"], str(member["member_epoch"]))]

    table = kg(kafka, "describe", GROUP).stdout
    assert "SUBTOPOLOGY" in table and "0:0,1 1:0,1" in table and "caught-up" in table


def test_offsets_beside_kafka_streams_groups(kafka, word_count):
    """Every input partition's committed offset, log end and lag as kafka-streams-groups --offsets
    --verbose shows them (the repartition topic too: Streams commits and purges it). Read again while
    a commit in between makes the two reads differ."""
    def differences():
        theirs = {(r["TOPIC"], int(r["PARTITION"])): (r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["OFFSET-LAG"])
                  for r in tool_rows(kafka.tool("kafka-streams-groups", "--bootstrap-server", kafka.bootstrap,
                                                "--describe", "--group", GROUP, "--offsets", "--verbose").stdout)}
        rows = kg(kafka, "describe", GROUP, "--offsets", "-o", "json").json[0]["offsets"]
        ours = {(r["topic"], r["partition"]): ("-" if r["committed"] is None else str(r["committed"]),
                                              str(r["log_end"]), str(r["lag"])) for r in rows}
        if not theirs:
            return "kafka-streams-groups showed no offsets"
        return {tp: (theirs[tp], ours.get(tp)) for tp in theirs if theirs[tp] != ours.get(tp)}

    problems = differences()
    for _ in range(5):
        if not problems:
            break
        problems = differences()
    assert not problems
