"""`kgroup list` and `kgroup describe` of a share group (KIP-932) on the real Kafka 4.4 broker,
whose member is Kafka's own kafka-console-share-consumer; what kgroup shows is compared with
Kafka's kafka-share-groups. (share.version is a production feature of Kafka 4.4, on by default.)
"""

from __future__ import annotations

import subprocess

import pytest

from helpers.kafka_apps import share_from_earliest
from helpers.kafka_groups import create_topic, kgroup, produce, tool_rows, wait_for

TOPIC = "sh-t"
GROUP = "sh-g"


def kg(kafka, *args):
    return kgroup(*args, "--bootstrap-server", kafka.bootstrap)


@pytest.fixture(scope="module")
def share_consumer(kafka, tmp_path_factory):
    create_topic(kafka.bootstrap, TOPIC, 2)
    # from the earliest record: with the default (latest) whether the records produced below are
    # delivered, and so acknowledged, races the share partitions' initialisation
    share_from_earliest(kafka, GROUP)
    log = tmp_path_factory.mktemp("share") / "console-share-consumer.log"
    with open(log, "w") as out:
        process = subprocess.Popen(
            ["java", "-Xmx256m", "-cp", kafka.classpath, "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
             "--bootstrap-server", kafka.bootstrap, "--topic", TOPIC, "--group", GROUP,
             "--command-property", "client.id=sh-console"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        wait_for(lambda: _stable_with_member(kafka), timeout=90, what="share group Stable with its member")
        produce(kafka.bootstrap, TOPIC, {0: 3, 1: 4})
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


def _stable_with_member(kafka):
    result = kg(kafka, "describe", GROUP, "--no-offsets", "-o", "json")
    if result.exit_code or not result.json:
        return False
    view = result.json[0]
    return view["state"] == "Stable" and view["members"] and all(m["assignment"] for m in view["members"])


def test_list_shows_the_share_group_with_its_type_and_state(kafka, share_consumer):
    rows = kg(kafka, "list", "--type", "share", "-o", "json").json
    assert [(r["group"], r["type"], r["state"]) for r in rows] == [(GROUP, "share", "Stable")]
    assert GROUP not in [r["group"] for r in kg(kafka, "list", "--type", "consumer", "-o", "json").json]


def test_describe_shows_members_and_share_partitions_as_kafka_share_groups_does(kafka, share_consumer):
    view = wait_for(lambda: _with_both_partitions(kafka), timeout=60, what="both share partitions initialized (start offset, lag)")
    assert (view["type"], view["protocol_type"], view["state"]) == ("share", "share", "Stable")
    assert view["group_epoch"] >= 1 and view["assignment_epoch"] >= 1 and view["assignor"] == "simple"
    (member,) = view["members"]
    assert (member["client_id"], member["member_type"], member["subscribed_topics"]) == (
        "sh-console", "share", [TOPIC])
    assert member["assignment"] == [{"topic": TOPIC, "partitions": [0, 1]}]
    assert all(r["committed"] is None and r["member_id"] is None for r in view["offsets"])

    tool = kafka.tool("kafka-share-groups", "--bootstrap-server", kafka.bootstrap, "--describe", "--group", GROUP,
                      "--members", "--verbose").stdout
    (theirs,) = tool_rows(tool)
    assert theirs["CONSUMER-ID"] == member["member_id"] and theirs["CLIENT-ID"] == "sh-console"
    assert theirs["MEMBER-EPOCH"] == str(member["member_epoch"])
    wait_for(lambda: _offsets_agree_with_kafka_share_groups(kafka), timeout=30,
             what="kgroup's START-OFFSET and LAG equal to kafka-share-groups --offsets")

    table = kg(kafka, "describe", GROUP).stdout
    assert "START-OFFSET" in table and "sh-console" in table and "simple" in table


def _with_both_partitions(kafka):
    view = kg(kafka, "describe", GROUP, "-o", "json").json[0]
    initialized = [r["partition"] for r in view["offsets"] if r["start_offset"] >= 0 and r["lag"] is not None]
    return view if sorted(initialized) == [0, 1] else None


def _offsets_agree_with_kafka_share_groups(kafka):
    theirs = tool_rows(kafka.tool("kafka-share-groups", "--bootstrap-server", kafka.bootstrap, "--describe",
                                  "--group", GROUP, "--offsets").stdout)
    ours = kg(kafka, "describe", GROUP, "-o", "json").json[0]["offsets"]
    return sorted((r["TOPIC"], int(r["PARTITION"]), int(r["START-OFFSET"]), int(r["LAG"])) for r in theirs) == [
        (r["topic"], r["partition"], r["start_offset"], r["lag"]) for r in ours]
