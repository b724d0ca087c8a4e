"""Share and streams groups offline: `decode-offsets --view state`, `describe --from-dump` and `list
--from-dump` rebuild them from their records (`views.dump_share_streams`, Kafka 4.4's
GroupMetadataManager.replay), and a `__share_group_state` partition's share-partition state from
every ShareSnapshot and ShareUpdate (`views.share_state`, ShareCoordinatorShard.replay with
PersisterStateBatchCombiner)."""

from __future__ import annotations

import json
import uuid

import pytest
from click.testing import CliRunner

from decode.test_decode_state_groups import sections
from kgroup.commands.cli import cli
from kgroup.records import encode_key, encode_value
from kgroup.records.writer import encode_batch
from kgroup.views.dump_share_streams import ModernGroup, ModernMember
from kgroup.views.share_state import StateBatch, combine_state_batches

T1 = uuid.UUID(int=0x1234)       # the share group's topic "t"
T1_TEXT = "AAAAAAAAAAAAAAAAAAASNA"
TS = 1_800_000_000_000


def run(*args, code=0):
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.stderr
    return result.stdout


def write_partition(path, records, family="consumer"):
    """records: (type, key, value version or None, value or None) in log order, one batch each."""
    path.mkdir(parents=True)
    batches = []
    for i, (rtype, key, version, value) in enumerate(records):
        k = encode_key(rtype, key, family)
        v = None if value is None else encode_value(rtype, version, value, family)
        batches.append(encode_batch([(k, v, TS + i)], base_offset=i))
    (path / "00000000000000000000.log").write_bytes(b"".join(batches))


def batch(first, last, state, count):
    return {"firstOffset": first, "lastOffset": last, "deliveryState": state, "deliveryCount": count}


def tasks(**by_sub):
    return [{"subtopologyId": sub, "partitions": parts} for sub, parts in by_sub.items()]


SHARE = [
    (11, {"groupId": "sg"}, 0, {"epoch": 3, "metadataHash": 9}),
    (10, {"groupId": "sg", "memberId": "m1"}, 0,
     {"rackId": "r1", "clientId": "c1", "clientHost": "/10.0.0.1", "subscribedTopicNames": ["t"]}),
    (10, {"groupId": "sg", "memberId": "m2"}, 0,
     {"rackId": None, "clientId": "c2", "clientHost": "/10.0.0.2", "subscribedTopicNames": ["t"]}),
    (12, {"groupId": "sg"}, 0, {"assignmentEpoch": 3, "assignmentTimestamp": TS}),
    (13, {"groupId": "sg", "memberId": "m1"}, 0, {"topicPartitions": [{"topicId": T1.bytes, "partitions": [0]}]}),
    (13, {"groupId": "sg", "memberId": "m2"}, 0, {"topicPartitions": [{"topicId": T1.bytes, "partitions": [1]}]}),
    (14, {"groupId": "sg", "memberId": "m1"}, 0, {"memberEpoch": 3, "previousMemberEpoch": 2, "state": 0,
                                                  "assignedPartitions": [{"topicId": T1.bytes, "partitions": [0]}]}),
    (14, {"groupId": "sg", "memberId": "m2"}, 0, {"memberEpoch": 3, "previousMemberEpoch": 2, "state": 0,
                                                  "assignedPartitions": [{"topicId": T1.bytes, "partitions": [1]}]}),
    (15, {"groupId": "sg"}, 0, {"initializingTopics": [], "deletingTopics": [],
                                "initializedTopics": [{"topicId": T1.bytes, "topicName": "t", "partitions": [0, 1]}]}),
    # m2 leaves: its current assignment, target and metadata are deleted
    (14, {"groupId": "sg", "memberId": "m2"}, None, None),
    (13, {"groupId": "sg", "memberId": "m2"}, None, None),
    (10, {"groupId": "sg", "memberId": "m2"}, None, None),
]
TOPOLOGY = {"epoch": 1, "subtopologies": [
    {"subtopologyId": "1", "sourceTopics": [], "sourceTopicRegex": [], "repartitionSinkTopics": [],
     "repartitionSourceTopics": [{"name": "st-rep", "partitions": 2, "replicationFactor": 1, "topicConfigs": []}],
     "stateChangelogTopics": [{"name": "st-changelog", "partitions": 2, "replicationFactor": 1, "topicConfigs": []}],
     "copartitionGroups": []},
    {"subtopologyId": "0", "sourceTopics": ["in-b", "in-a"], "sourceTopicRegex": [],
     "repartitionSinkTopics": ["st-rep"], "repartitionSourceTopics": [], "stateChangelogTopics": [],
     "copartitionGroups": []}]}
STREAMS = [
    (17, {"groupId": "st"}, 0, {"epoch": 5, "metadataHash": 1, "validatedTopologyEpoch": 1,
                                "lastAssignmentConfigs": [], "storedDescriptionTopologyEpoch": -1,
                                "failedDescriptionTopologyEpoch": -1}),
    (23, {"groupId": "st"}, 0, TOPOLOGY),
    (19, {"groupId": "st", "memberId": "x"}, 0,
     {"instanceId": "i-x", "rackId": None, "clientId": "app-x", "clientHost": "/10.0.0.3", "rebalanceTimeoutMs": 1000,
      "topologyEpoch": 1, "processId": "p-x", "userEndpoint": {"host": "h", "port": 8080},
      "clientTags": [{"key": "zone", "value": "a"}]}),
    (20, {"groupId": "st"}, 0, {"assignmentEpoch": 5, "assignmentTimestamp": TS}),
    (21, {"groupId": "st", "memberId": "x"}, 0, {"activeTasks": tasks(**{"0": [0, 1], "1": [0, 1]}),
                                                 "standbyTasks": [], "warmupTasks": []}),
    (22, {"groupId": "st", "memberId": "x"}, 0, {"memberEpoch": 5, "previousMemberEpoch": 4, "state": 1,
                                                 "activeTasks": tasks(**{"0": [0, 1], "1": [0, 1]}),
                                                 "standbyTasks": [], "warmupTasks": [], "activeTasksPendingRevocation": []}),
    (1, {"group": "st", "topic": "in-a", "partition": 1}, 3,
     {"offset": 7, "leaderEpoch": 0, "metadata": "", "commitTimestamp": TS}),
]
SHARE_STATE = [
    (0, {"groupId": "sg", "topicId": T1.bytes, "partition": 0}, 0,
     {"snapshotEpoch": 1, "stateEpoch": 1, "leaderEpoch": 2, "startOffset": 10, "deliveryCompleteCount": 0,
      "createTimestamp": TS, "writeTimestamp": TS, "stateBatches": [batch(10, 14, 0, 1)]}),
    (1, {"groupId": "sg", "topicId": T1.bytes, "partition": 0}, 0,
     {"snapshotEpoch": 1, "leaderEpoch": 2, "startOffset": 12, "deliveryCompleteCount": 2,
      "stateBatches": [batch(12, 13, 2, 1)]}),
    (1, {"groupId": "sg", "topicId": T1.bytes, "partition": 0}, 0,
     {"snapshotEpoch": 1, "leaderEpoch": -1, "startOffset": -1, "deliveryCompleteCount": 3,
      "stateBatches": [batch(14, 14, 2, 1)]}),
    (0, {"groupId": "sg", "topicId": T1.bytes, "partition": 1}, 0,
     {"snapshotEpoch": 1, "stateEpoch": 1, "leaderEpoch": 0, "startOffset": 0, "deliveryCompleteCount": 0,
      "createTimestamp": TS, "writeTimestamp": TS, "stateBatches": []}),
    (0, {"groupId": "sg", "topicId": T1.bytes, "partition": 1}, 0,
     {"snapshotEpoch": 2, "stateEpoch": 1, "leaderEpoch": 0, "startOffset": 4, "deliveryCompleteCount": 0,
      "createTimestamp": TS, "writeTimestamp": TS + 5, "stateBatches": []}),
]


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("share-streams") / "logs"
    write_partition(root / "__consumer_offsets-0", SHARE + STREAMS)
    write_partition(root / "__share_group_state-0", SHARE_STATE, family="share-state")
    return root


def test_the_batch_combiner_is_kafkas():
    b = StateBatch
    # an update's batch over part of the snapshot's: the higher delivery state wins where they overlap
    assert combine_state_batches([b(10, 14, 0, 1)], [b(12, 13, 2, 1)], 12) == [b(12, 13, 2, 1), b(14, 14, 0, 1)]
    # then the higher delivery count, whatever the state; equal neighbours are joined
    assert combine_state_batches([b(0, 9, 2, 1)], [b(5, 9, 0, 2), b(10, 12, 2, 1)], -1) == [
        b(0, 4, 2, 1), b(5, 9, 0, 2), b(10, 12, 2, 1)]
    assert combine_state_batches([b(0, 4, 2, 1)], [b(5, 9, 2, 1)], 0) == [b(0, 9, 2, 1)]
    # below the start offset: dropped or clipped
    assert combine_state_batches([b(0, 4, 2, 1), b(5, 9, 0, 1)], [], 7) == [b(7, 9, 0, 1)]


def test_streams_group_states_are_derived_as_kafkas():
    group = ModernGroup("g", "streams", group_epoch=5, assignment_epoch=5, metadata={"validatedTopologyEpoch": 1},
                        topology={"epoch": 1})
    assert group.state == "Empty"
    group.members["a"] = ModernMember("a", member_epoch=5, state=1)   # the streams MemberState's STABLE is 1
    assert group.state == "Stable"
    group.members["a"].state = 2                     # UNREVOKED_TASKS
    assert group.state == "Reconciling"
    group.members["a"].state = 0                     # not STABLE for a streams member (0 is share's STABLE)
    assert group.state == "Reconciling"
    group.members["a"].state = 1
    group.group_epoch = 6
    assert group.state == "Assigning"
    group.topology = {"epoch": 2}                    # not the validated topology
    assert group.state == "NotReady"
    assert ModernGroup("s", "share", members={"a": ModernMember("a")}).state == "Stable"


def test_state_view_replays_share_state_in_full(log_dir):
    """Every ShareUpdate counts (the topic is not compacted): the latest record per key would lose
    the first update's acknowledgements."""
    doc = json.loads(run("decode-offsets", "--view", "state", "-o", "json", str(log_dir / "__share_group_state-0")))
    [p0, p1] = doc["share_partitions"]
    assert (p0["group"], p0["topic_id"], p0["partition"], p0["start_offset"], p0["state_epoch"], p0["leader_epoch"],
            p0["delivery_complete_count"], p0["updates_since_snapshot"]) == ("sg", T1_TEXT, 0, 12, 1, 2, 3, 2)
    assert p0["batches"] == [{"first_offset": 12, "last_offset": 14, "delivery_state": 2, "delivery_count": 1}]
    assert p0["topic"] is None                       # no record of this input names the topic id
    assert (p1["partition"], p1["start_offset"], p1["snapshot_epoch"], p1["write_timestamp"]) == (1, 4, 2, TS + 5)


def test_state_view_shows_share_and_streams_groups_as_describe_from_dump(log_dir):
    parts = [str(log_dir / "__consumer_offsets-0"), str(log_dir / "__share_group_state-0")]
    doc = json.loads(run("decode-offsets", "--view", "state", "-o", "json", *parts))
    described = {v["group"]: v for v in json.loads(run("describe", "--all-groups", "--from-dump", str(log_dir),
                                                       "-o", "json"))}
    [share] = doc["share_groups"]
    [streams] = doc["streams_groups"]
    assert share == described["sg"] and streams == described["st"]
    assert [p["topic"] for p in doc["share_partitions"]] == ["t", "t"]   # named by the share group's record

    table = sections(run("decode-offsets", "--view", "state", "-o", "table", *parts))
    assert [(g["GROUP"], g["TYPE"], g["STATE"], g["GENERATION/EPOCH"], g["MEMBERS"]) for g in table["GROUPS"]] == [
        ("sg", "share", "Stable", "3", "1"), ("st", "streams", "Stable", "5", "1")]
    assert [(m["GROUP"], m["MEMBER ID"], m["ASSIGNMENT"]) for m in table["MEMBERS"]] == [
        ("sg", "m1", "t:0"), ("st", "x", "active=0:0,1 1:0,1")]
    assert [(p["TOPIC"], p["PARTITION"], p["START OFFSET"], p["IN FLIGHT (first-last:state/deliveries)"])
            for p in table["SHARE PARTITIONS"]] == [("t", "0", "12", "12-14:2/1"), ("t", "1", "4", "-")]
    assert "OTHER RECORDS (latest per key)" not in table   # the groups and share partitions stand for them
    lines = [json.loads(line) for line in run("decode-offsets", "--view", "state", "-o", "jsonl", *parts).splitlines()]
    assert {line["kind"] for line in lines} >= {"share_group", "streams_group", "share_partition"}


def test_describe_from_dump_shows_a_share_group_with_its_share_partitions(log_dir):
    [sg] = json.loads(run("describe", "sg", "--from-dump", str(log_dir), "-o", "json"))
    assert (sg["type"], sg["protocol_type"], sg["state"], sg["group_epoch"], sg["assignment_epoch"], sg["assignor"]) == (
        "share", "share", "Stable", 3, 3, None)
    [m1] = sg["members"]                             # m2 left
    assert (m1["member_id"], m1["client_id"], m1["client_host"], m1["rack_id"], m1["member_epoch"],
            m1["subscribed_topics"], m1["assignment"]) == ("m1", "c1", "/10.0.0.1", "r1", 3, ["t"],
                                                           [{"topic": "t", "partitions": [0]}])
    assert [(o["topic"], o["partition"], o["start_offset"], o["leader_epoch"], o["lag"]) for o in sg["offsets"]] == [
        ("t", 0, 12, 2, None), ("t", 1, 4, 0, None)]
    # without the __share_group_state partition: no offsets
    [alone] = json.loads(run("describe", "sg", "--from-dump", str(log_dir / "__consumer_offsets-0"), "-o", "json"))
    assert alone["offsets"] == [] and alone["members"] == sg["members"]
    text = run("describe", "sg", "--from-dump", str(log_dir))
    assert "START-OFFSET" in text and "(offline)" in text


def test_describe_from_dump_shows_a_streams_group_with_its_topology_and_tasks(log_dir):
    [st] = json.loads(run("describe", "st", "--from-dump", str(log_dir), "-o", "json"))
    assert (st["type"], st["state"], st["group_epoch"], st["assignment_epoch"], st["topology_epoch"]) == (
        "streams", "Stable", 5, 5, 1)
    assert st["subtopologies"] == [
        {"subtopology": "0", "source_topics": ["in-a", "in-b"], "repartition_sink_topics": ["st-rep"],
         "state_changelog_topics": [], "repartition_source_topics": []},
        {"subtopology": "1", "source_topics": [], "repartition_sink_topics": [],
         "state_changelog_topics": ["st-changelog"], "repartition_source_topics": ["st-rep"]}]
    [x] = st["members"]
    assert (x["member_id"], x["group_instance_id"], x["process_id"], x["endpoint"], x["client_tags"],
            x["member_epoch"], x["active_tasks"], x["target_active_tasks"]) == (
        "x", "i-x", "p-x", "h:8080", {"zone": "a"}, 5, {"0": [0, 1], "1": [0, 1]}, {"0": [0, 1], "1": [0, 1]})
    # the committed offset, and every partition an active task reads (as the live describe lists them)
    assert [(o["topic"], o["partition"], o["committed"], o["member_id"]) for o in st["offsets"]] == [
        ("in-a", 0, None, "x"), ("in-a", 1, 7, "x"), ("in-b", 0, None, "x"), ("in-b", 1, None, "x"),
        ("st-rep", 0, None, "x"), ("st-rep", 1, None, "x")]
    assert "TOPOLOGY-EPOCH" in run("describe", "st", "--from-dump", str(log_dir))


def test_list_from_dump_lists_share_and_streams_groups(log_dir):
    listed = json.loads(run("list", "--from-dump", str(log_dir), "-o", "json"))
    assert [(g["group"], g["state"], g["protocol_type"], g["type"]) for g in listed] == [
        ("sg", "Stable", "share", "share"), ("st", "Stable", "streams", "streams")]
    assert [g["group"] for g in json.loads(run("list", "--from-dump", str(log_dir), "--type", "streams",
                                               "-o", "json"))] == ["st"]


def test_filters_choose_the_share_partitions_and_groups_shown(log_dir):
    parts = [str(log_dir / "__consumer_offsets-0"), str(log_dir / "__share_group_state-0")]
    doc = json.loads(run("decode-offsets", "--view", "state", "-o", "json", "--group", "st", *parts))
    assert ([g["group"] for g in doc["streams_groups"]], doc["share_groups"], doc["share_partitions"]) == (["st"], [], [])
    doc = json.loads(run("decode-offsets", "--view", "state", "-o", "json", "--type", "share_update", *parts))
    assert (doc["share_groups"], doc["streams_groups"], len(doc["share_partitions"])) == ([], [], 2)


def test_a_share_group_state_path_given_as_a_group_is_a_usage_error(log_dir):
    result = CliRunner().invoke(cli, ["describe", "--from-dump", str(log_dir / "__consumer_offsets-0"),
                                      str(log_dir / "__share_group_state-0")])
    assert result.exit_code == 2 and "is a dump path" in result.stderr


def test_the_state_view_and_the_replay_name_the_same_record_types():
    """`state_groups` keeps its own copy (so that a state without such groups does not import the views)."""
    from kgroup.decode.state_groups import SHARE_STREAMS_TYPES as in_state
    from kgroup.views.dump_share_streams import SHARE_STREAMS_TYPES as replayed

    assert in_state == replayed
