"""Streams groups (KIP-1071) as kgroup reads them from a recorded StreamsGroupDescribe reply (built
from Kafka 4.4's schema, encoded and decoded): epochs, topology, members with process, endpoint and
active/standby/warm-up tasks beside their target; committed input-topic offsets owned by the
member running the active task."""

from __future__ import annotations

import json

from kgroup.client.streams_describe import group_from_streams_described
from kgroup.client.wire import Coordinator
from kgroup.protocol import StreamsGroupDescribeResponse
from kgroup.views.model import OffsetRow

Described = StreamsGroupDescribeResponse.DescribedGroup
Topology, Member = Described.Topology, Described.Member
Tasks = Member.Assignment.TaskIds
COORD = Coordinator(1, "broker-1", 9092)


def assignment(active, standby=(), warmup=()):
    def rows(tasks):
        return [Tasks(subtopology_id=sub, partitions=list(parts)) for sub, parts in tasks]
    return Member.Assignment(active_tasks=rows(active), standby_tasks=rows(standby), warmup_tasks=rows(warmup))


def member(member_id, epoch, owned, target, port):
    return Member(member_id=member_id, member_epoch=epoch, instance_id=None, rack_id="r1", client_id=f"{member_id}-c",
                  client_host="/10.0.0.1", topology_epoch=0, process_id=f"proc-{member_id}",
                  user_endpoint=Member.Endpoint(host="10.0.0.1", port=port),
                  client_tags=[Member.KeyValue(key="zone", value="a")], task_offsets=[], task_end_offsets=[],
                  assignment=owned, target_assignment=target, is_classic=False)


def recorded_group():
    info = Topology.Subtopology.TopicInfo
    subtopologies = [
        Topology.Subtopology(subtopology_id="0", source_topics=["words"], repartition_sink_topics=["wc-rep"],
                             state_changelog_topics=[], repartition_source_topics=[]),
        Topology.Subtopology(subtopology_id="1", source_topics=[], repartition_sink_topics=[],
                             state_changelog_topics=[info(name="wc-counts-changelog", partitions=0,
                                                          replication_factor=0, topic_configs=[])],
                             repartition_source_topics=[info(name="wc-rep", partitions=0, replication_factor=0,
                                                             topic_configs=[])])]
    response = StreamsGroupDescribeResponse(version=1, throttle_time_ms=0, groups=[Described(
        error_code=0, error_message=None, group_id="wc", group_state="Reconciling", group_epoch=5,
        assignment_epoch=5, topology=Topology(epoch=0, subtopologies=subtopologies),
        members=[member("b", 4, assignment([("0", [1])]), assignment([("0", [1])], standby=[("1", [0])]), 8081),
                 member("a", 5, assignment([("0", [0]), ("1", [0])]), assignment([("0", [0]), ("1", [0])]), 8080)],
        authorized_operations=-2147483648, topology_description=None, topology_description_status=0,
        assignor_name="sticky")])
    return StreamsGroupDescribeResponse.decode(response.encode(version=1), version=1).groups[0]


def test_a_streams_group_shows_its_topology_and_each_members_tasks_beside_its_target():
    view = group_from_streams_described(recorded_group(), COORD)
    assert (view.group_type, view.state, view.group_epoch, view.assignment_epoch, view.topology_epoch,
            view.assignor) == ("streams", "Reconciling", 5, 5, 0, "sticky")
    assert view.subtopologies[1] == {"subtopology": "1", "source_topics": [], "repartition_sink_topics": [],
                                     "state_changelog_topics": ["wc-counts-changelog"],
                                     "repartition_source_topics": ["wc-rep"]}
    a, b = view.members
    assert (a.member_id, a.process_id, a.endpoint, a.client_tags, a.rack_id) == (
        "a", "proc-a", "10.0.0.1:8080", {"zone": "a"}, "r1")
    assert a.tasks["active"] == {"0": [0], "1": [0]} and b.target_tasks["standby"] == {"1": [0]}
    assert [view.reconciling(m) for m in view.members] == [False, True]
    # an active task owns its subtopology's source partitions, repartition topics included
    assert {tp: m.member_id for tp, m in view.owners().items()} == {("words", 0): "a", ("wc-rep", 0): "a",
                                                                    ("words", 1): "b"}


def test_table_and_json(capsys):
    from kgroup.commands.describe import _render

    view = group_from_streams_described(recorded_group(), COORD)
    view.offsets = [OffsetRow("words", 0, 3, 10, "a", log_start=0), OffsetRow("words", 1, None, 4, "b", log_start=1)]
    _render([view], "table", True, False, [None])
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[1].split()[-7:] == ["Reconciling", "streams", "5", "5", "0", "sticky", "2"]
    assert "wc-counts-changelog" in out and "10.0.0.1:8080" in out and "proc-b" in out
    member_b = next(line for line in lines if line.startswith("b "))
    assert member_b.split()[-7:] == ["0:1", "0:1", "-", "1:0", "-", "-", "RECONCILING"]
    assert any(line.split() == ["words", "0", "3", "10", "7", "a"] for line in lines)
    _render([view], "json", True, False, [None])
    data = json.loads(capsys.readouterr().out)[0]
    assert (data["type"], data["topology_epoch"], data["assignor"]) == ("streams", 0, "sticky")
    b = data["members"][1]
    assert (b["process_id"], b["endpoint"], b["active_tasks"], b["target_standby_tasks"]) == (
        "proc-b", "10.0.0.1:8081", {"0": [1]}, {"1": [0]})
    assert data["offsets"][0]["lag"] == 7 and "start_offset" not in data["offsets"][0]
    # before its first commit a streams group's lag is its whole log, as kafka-streams-groups counts it
    assert (data["offsets"][1]["committed"], data["offsets"][1]["log_start"], data["offsets"][1]["lag"]) == (None, 1, 3)


def test_groups_listed_as_share_or_streams_are_asked_only_with_their_own_describe_api():
    """Kafka answers ConsumerGroupDescribe and DescribeGroups for a share or streams group with
    GROUP_ID_NOT_FOUND / Dead: the coordinator's ListGroups v5 type picks the API instead."""
    from kafka.protocol.admin import ListGroupsRequest, ListGroupsResponse

    from kgroup.client.groups import _describe_at
    from kgroup.protocol import ShareGroupDescribeRequest, ShareGroupDescribeResponse, StreamsGroupDescribeRequest

    share = ShareGroupDescribeResponse.DescribedGroup(
        error_code=0, error_message=None, group_id="sg", group_state="Empty", group_epoch=1, assignment_epoch=1,
        assignor_name="simple", members=[], authorized_operations=-2147483648)

    class Coordinator1:
        sent = []

        def max_version(self, cls, floor=0):
            return {ListGroupsRequest: 5, ShareGroupDescribeRequest: 1, StreamsGroupDescribeRequest: 1}.get(cls, -1)

        def send(self, request, node_id=None, what=""):
            self.sent.append(type(request).__name__)
            if isinstance(request, ListGroupsRequest):
                return ListGroupsResponse(version=5, throttle_time_ms=0, error_code=0, groups=[
                    ListGroupsResponse.ListedGroup(group_id=g, protocol_type=t, group_state="Stable", group_type=t)
                    for g, t in (("wc", "streams"), ("sg", "share"))])
            if isinstance(request, ShareGroupDescribeRequest):
                assert request.group_ids == ["sg"]
                return ShareGroupDescribeResponse(version=1, throttle_time_ms=0, groups=[share])
            assert request.group_ids == ["wc"]
            return StreamsGroupDescribeResponse(version=1, throttle_time_ms=0, groups=[recorded_group()])

    client = Coordinator1()
    views = _describe_at(client, COORD, ["wc", "sg"])
    assert {g: v.group_type for g, v in views.items()} == {"wc": "streams", "sg": "share"}
    assert client.sent == ["ListGroupsRequest", "ShareGroupDescribeRequest", "StreamsGroupDescribeRequest"]
