"""Response-level tests: brokers that omit fields, other protocols, unknown ACL bits, odd LeaveGroup echoes."""

from __future__ import annotations

import pytest
from kafka.protocol.admin import DescribeGroupsResponse
from kafka.protocol.consumer import LeaveGroupResponse

from kgroup.views.model import GroupView, MemberView, OffsetRow, group_from_described
from kgroup.client.removal import (RemovalReport, MemberResult, Target, before_after, build_targets,
                                   match_results, send_leave, split_ids, read_id_file, SelectionError)
from kgroup.client.wire import ClusterClient, Coordinator, error_name
from kgroup.errors import KgroupError
from kgroup.records import encode_assignment, encode_subscription

Group = DescribeGroupsResponse.DescribedGroup
Member = Group.DescribedGroupMember
COORD = Coordinator(1, "broker-1", 9092)


def wire_roundtrip(response, version):
    """Encode at `version` and decode again, so fields the version lacks are really absent."""
    return DescribeGroupsResponse.decode(response.encode(version=version), version=version)


def consumer_member(member_id, instance, partitions, topic="orders"):
    return Member(member_id=member_id, group_instance_id=instance, client_id=f"c-{member_id}", client_host="/10.0.0.1",
                  member_metadata=encode_subscription({"topics": [topic], "userData": None}, 0),
                  member_assignment=encode_assignment(
                      {"assignedPartitions": [{"topic": topic, "partitions": partitions}], "userData": None}, 0))


def test_describe_v0_has_no_instance_ids_and_still_decodes():
    response = DescribeGroupsResponse(throttle_time_ms=0, groups=[Group(
        error_code=0, group_id="g", group_state="Stable", protocol_type="consumer", protocol_data="range",
        members=[consumer_member("m-1", "i-1", [2, 0]), consumer_member("m-2", None, [1])],
        authorized_operations=set())], version=5)
    old = wire_roundtrip(response, 0)
    view = group_from_described(old.groups[0], COORD)
    assert [(m.member_id, m.group_instance_id, m.static) for m in view.members] == [
        ("m-1", None, False), ("m-2", None, False)]
    assert view.members[0].assignment == [{"topic": "orders", "partitions": [0, 2]}]
    assert view.members[0].subscription == ["orders"]
    new = group_from_described(wire_roundtrip(response, 4).groups[0], COORD)
    assert [m.group_instance_id for m in new.members] == ["i-1", None]
    assert (new.static_count, new.dynamic_count) == (1, 1)


def test_assignment_topics_sorted_and_merged_whatever_order_the_client_sent():
    # librdkafka's range assignor with a regex subscription sends u3, u2, u1; a topic may even repeat.
    member = Member(member_id="m", group_instance_id="i", client_id="c", client_host="/h",
                    member_metadata=encode_subscription({"topics": ["u1", "u2", "u3"], "userData": None}, 0),
                    member_assignment=encode_assignment({"assignedPartitions": [
                        {"topic": "u3", "partitions": [2, 0]}, {"topic": "u1", "partitions": [1]},
                        {"topic": "u3", "partitions": [1]}], "userData": None}, 0))
    response = DescribeGroupsResponse(throttle_time_ms=0, groups=[Group(
        error_code=0, group_id="g", group_state="Stable", protocol_type="consumer", protocol_data="range",
        members=[member], authorized_operations=set())], version=5)
    view = group_from_described(wire_roundtrip(response, 5).groups[0], COORD)
    assert view.members[0].assignment == [{"topic": "u1", "partitions": [1]}, {"topic": "u3", "partitions": [0, 1, 2]}]
    assert view.members[0].assignment_text("consumer") == "u1:1 u3:0,1,2"


def test_unknown_acl_bits_are_ignored():
    response = DescribeGroupsResponse(throttle_time_ms=0, groups=[Group(
        error_code=0, group_id="g", group_state="Stable", protocol_type="consumer", protocol_data="range",
        members=[consumer_member("m-1", "i-1", [0])], authorized_operations={3, 4, 25, 30})], version=5)
    view = group_from_described(wire_roundtrip(response, 5).groups[0], COORD)
    assert view.to_json()["members"][0]["assignment"] == [{"topic": "orders", "partitions": [0]}]
    assert view.error is None


def test_other_protocol_types_show_sizes_not_decoded():
    response = DescribeGroupsResponse(throttle_time_ms=0, groups=[Group(
        error_code=0, group_id="connect-cluster", group_state="Stable", protocol_type="connect",
        protocol_data="sessioned", members=[Member(member_id="w-1", group_instance_id=None, client_id="worker",
                                                   client_host="/10.0.0.2", member_metadata=b"\x00\x01abc",
                                                   member_assignment=b"\x00" * 11)],
        authorized_operations=set())], version=5)
    view = group_from_described(wire_roundtrip(response, 5).groups[0], COORD)
    member = view.members[0]
    assert (member.metadata_size, member.assignment_size, member.assignment, member.subscription) == (5, 11, [], None)
    assert member.assignment_text("connect") == "metadata 5 B, assignment 11 B"
    assert view.to_json()["members"][0] == {
        "member_id": "w-1", "group_instance_id": None, "static": False, "client_id": "worker",
        "client_host": "/10.0.0.2", "assignment": [], "metadata_bytes": 5, "assignment_bytes": 11,
        "member_epoch": None, "member_type": "classic", "target_assignment": None, "subscribed_topics": None,
        "subscribed_topic_regex": None, "rack_id": None}


def test_undecodable_consumer_assignment_is_reported_not_raised():
    response = DescribeGroupsResponse(throttle_time_ms=0, groups=[Group(
        error_code=0, group_id="g", group_state="Stable", protocol_type="consumer", protocol_data="range",
        members=[Member(member_id="m", group_instance_id="i", client_id="c", client_host="/h",
                        member_metadata=b"\x00", member_assignment=b"\x00\x00\x00\x00\x00\x05")],
        authorized_operations=set())], version=5)
    member = group_from_described(wire_roundtrip(response, 5).groups[0], COORD).members[0]
    assert member.assignment == []
    assert member.decode_error.startswith("assignment: ") and "subscription: " in member.decode_error


def test_group_error_and_empty_fields():
    response = DescribeGroupsResponse(throttle_time_ms=0, groups=[Group(
        error_code=30, group_id="secret", group_state="", protocol_type="", protocol_data="", members=[],
        authorized_operations=set())], version=5)
    view = group_from_described(wire_roundtrip(response, 5).groups[0], COORD)
    assert view.error == "GROUP_AUTHORIZATION_FAILED"
    assert view.to_json()["coordinator"] == {"id": 1, "host": "broker-1", "port": 9092}


def test_transport_failures_become_one_sentence():
    import kafka.errors as Errors
    from kgroup.client.wire import ClusterClient

    describe = ClusterClient.describe_failure
    assert describe(Errors.SaslAuthenticationFailedError("bad password"), "cannot connect to k:9092") == \
        "cannot connect to k:9092: authentication failed: [Error 58] SaslAuthenticationFailedError: bad password"
    assert describe(Errors.GroupAuthorizationFailedError(), "DescribeGroups") == \
        "DescribeGroups: not authorized (GROUP_AUTHORIZATION_FAILED)"
    assert describe(Errors.KafkaTimeoutError(), "ListGroups on broker 1") == "ListGroups on broker 1: timed out"
    assert describe(ConnectionRefusedError(111, "refused"), "x") == "x: connection failed ([Errno 111] refused)"


def test_error_names():
    assert [error_name(c) for c in (0, 25, 82, 15, 35)] == [
        "NONE", "UNKNOWN_MEMBER_ID", "FENCED_INSTANCE_ID", "COORDINATOR_NOT_AVAILABLE", "UNSUPPORTED_VERSION"]
    # kafka-python names -1 UNKNOWN; codes it does not know keep their number
    assert (error_name(-1), error_name(9999)) == ("UNKNOWN", "UNKNOWN_ERROR_CODE_9999")


Echo = LeaveGroupResponse.MemberResponse


def echo(member_id, instance, code):
    return Echo(member_id=member_id, group_instance_id=instance, error_code=code)


def test_leave_results_by_position_keyed_by_supplied_identity():
    targets = [Target("a"), Target("ghost"), Target(None, "m-9")]
    rows = [echo("", "a", 0), echo("", "ghost", 25), echo("m-9", None, 0)]
    assert match_results(targets, rows) == [None, "UNKNOWN_MEMBER_ID", None]


def test_leave_results_when_broker_reorders_resolves_or_drops():
    targets = [Target("a"), Target("b"), Target("c")]
    # reordered, one echoed with the resolved member id instead of "", one missing
    rows = [echo("b-123", "b", 82), echo("", "a", 0)]
    assert match_results(targets, rows) == [None, "FENCED_INSTANCE_ID", "MISSING_FROM_RESPONSE"]


class FakeClient:
    """Just enough of ClusterClient for send_leave: a broker with a given LeaveGroup max version."""

    def __init__(self, max_version, responses):
        self.timeout_s = 1.0
        self._max = max_version
        self.responses = list(responses)
        self.sent = []

    def max_version(self, request_class, floor=0):
        return self._max

    def find_coordinator(self, group, deadline=None):
        return COORD

    def send(self, request, node_id=None, what=""):
        self.sent.append(request)
        return self.responses.pop(0)

    to_coordinator = ClusterClient.to_coordinator    # the real retry loop around the fake send


def leave_response(version, members, error=0):
    return LeaveGroupResponse.decode(LeaveGroupResponse(throttle_time_ms=0, error_code=error, members=members,
                                                        version=version).encode(version=version), version=version)


def test_old_broker_refuses_instance_ids_before_sending():
    client = FakeClient(2, [])
    with pytest.raises(KgroupError, match=r"LeaveGroup up to v2; removing members by group.instance.id needs v3\+"):
        send_leave(client, "g", [Target(None, "m-1"), Target("i-1")])
    assert client.sent == []


def test_old_broker_member_ids_one_request_each():
    client = FakeClient(1, [leave_response(1, [], 0), leave_response(1, [], 25)])
    errors, version = send_leave(client, "g", [Target(None, "m-1"), Target(None, "m-2")])
    assert (errors, version) == ([None, "UNKNOWN_MEMBER_ID"], 1)
    assert [(r.API_VERSION, r.member_id) for r in client.sent] == [(1, "m-1"), (1, "m-2")]


def test_batch_uses_v5_reason_and_v3_without():
    ok = [echo("", "i-1", 0)]
    client = FakeClient(5, [leave_response(5, ok)])
    assert send_leave(client, "g", [Target("i-1")], reason="scale down") == ([None], 5)
    request = client.sent[0]
    assert (request.API_VERSION, request.members[0].reason, request.members[0].member_id) == (5, "scale down", "")
    client = FakeClient(3, [leave_response(3, ok)])
    assert send_leave(client, "g", [Target("i-1")], reason="ignored") == ([None], 3)
    assert client.sent[0].API_VERSION == 3


def test_top_level_error_means_nothing_removed():
    client = FakeClient(4, [leave_response(4, [], 24)])
    with pytest.raises(KgroupError, match="LeaveGroup failed: INVALID_GROUP_ID; no member was removed"):
        send_leave(client, "g", [Target("i-1")])


def test_an_authorization_failure_names_the_operation_and_the_group():
    client = FakeClient(4, [leave_response(4, [], 30)])
    with pytest.raises(KgroupError, match="^not authorized to Read group g$"):
        send_leave(client, "g", [Target("i-1")])


def test_coordinator_moving_is_retried():
    client = FakeClient(4, [leave_response(4, [], 16), leave_response(4, [echo("", "i-1", 0)])])
    assert send_leave(client, "g", [Target("i-1")]) == ([None], 4)
    assert len(client.sent) == 2


def test_selection_helpers(tmp_path):
    assert split_ids(["a,b", " c ", ",,", "d,"]) == ["a", "b", "c", "d"]
    path = tmp_path / "ids"
    path.write_text("host-1\n# comment\nhost-2, host-3  # trailing\n\n")
    assert read_id_file(str(path)) == ["host-1", "host-2", "host-3"]
    with pytest.raises(SelectionError, match="no such file"):
        read_id_file(str(tmp_path / "missing"))
    assert build_targets(["a", "a", "b"], ["m", "m"]) == [Target("a"), Target("b"), Target(None, "m")]


def test_report_json_and_counts():
    report = RemovalReport("g", False, [MemberResult(Target("a"), None), MemberResult(Target("b"), "UNKNOWN_MEMBER_ID"),
                                        MemberResult(Target(None, "m-1"), None)])
    assert report.to_json() == {"group": "g", "dry_run": False, "removed": 2, "failed": 1, "results": [
        {"group_instance_id": "a", "member_id": None, "error": None},
        {"group_instance_id": "b", "member_id": None, "error": "UNKNOWN_MEMBER_ID"},
        {"group_instance_id": None, "member_id": "m-1", "error": None}]}


def test_before_after_and_lag_by_instance():
    def view(members, offsets=None):
        return GroupView("g", "Stable", "consumer", "range", COORD, members, offsets)
    a = MemberView("m-a", "a", "c", "h", [{"topic": "t", "partitions": [0, 1]}])
    b = MemberView("m-b", "b", "c", "h", [{"topic": "t", "partitions": [2]}])
    a2 = MemberView("m-a", "a", "c", "h", [{"topic": "t", "partitions": [0, 1, 2]}])
    diff = before_after(view([a, b]), view([a2]))
    assert diff["partitions_moved"] == [{"topic": "t", "partition": 2, "from": "b", "to": "a"}]
    assert diff["after"] == {"state": "Stable", "members": ["a"]}
    rows = [OffsetRow("t", 0, 5, 9, "m-a", "a"), OffsetRow("t", 1, 1, 4, "m-a", "a"), OffsetRow("t", 2, None, 7, "m-b", "b"),
            OffsetRow("t", 3, 10, 8, None, None)]
    assert [r.lag for r in rows] == [4, 3, None, -2]  # committed past the log end shows negative
    assert view([a, b], rows).lag_by_owner() == [("-", -2), ("a", 7), ("b", None)]


def test_coordinator_shown_as_a_usable_bootstrap_address():
    assert str(Coordinator(1, "broker-1", 9092)) == "broker-1:9092 (id: 1)"
    assert str(Coordinator(0, "::1", 9092)) == "[::1]:9092 (id: 0)"
    assert Coordinator(0, "::1", 9092).to_json() == {"id": 0, "host": "::1", "port": 9092}


def test_wait_after_removal_waits_for_the_assignment_to_hold(monkeypatch):
    """The first Stable view after a removal may be a leader's premature assignment that is
    replaced at once; --wait reports the one that held for the settle time."""
    from kgroup.client import waiting

    def view(state, owned):
        members = [MemberView(mid, mid, "c", "h", [{"topic": "t", "partitions": ps}]) for mid, ps in owned.items()]
        return GroupView("g", state, "consumer", "range", COORD, members)

    views = iter([view("PreparingRebalance", {"a": [0]}),
                  view("Stable", {"a": [0], "b": []}),          # premature: partition 1 owned by nobody
                  view("PreparingRebalance", {"a": [0], "b": []}),
                  view("Stable", {"a": [0], "b": [1]}), view("Stable", {"a": [0], "b": [1]}),
                  view("Stable", {"a": [0], "b": [1]}), view("Stable", {"a": [0], "b": [1]})])
    now = [0.0]
    monkeypatch.setattr(waiting, "describe_groups", lambda client, groups, **kw: [next(views)])
    settled = waiting.wait_after_removal(None, "g", ["gone"], timeout_s=30, settle_s=1.0, rejoin_window_s=0,
                                         clock=lambda: now[0],
                                         sleep=lambda s: now.__setitem__(0, now[0] + 0.5))
    assert {m.member_id: m.partitions() for m in settled.members} == {"a": [("t", 0)], "b": [("t", 1)]}
    assert now[0] == 2.5  # the held view was first seen at 1.5 s and accepted 1 s later


def test_wait_after_removal_settles_with_a_consumer_that_rejoined_and_watches_for_it(monkeypatch):
    """A running KIP-848 consumer that is fenced rejoins under its own member id: the wait settles
    with it back (the removal's report marks it rejoined) instead of waiting for its id to go, and
    not before the rejoin window has passed, in which a running consumer's heartbeat brings it back."""
    from kgroup.client import waiting

    back = MemberView("m-c0", "c0", "c", "h", [{"topic": "t", "partitions": [0]}], member_epoch=7,
                      target_assignment=[{"topic": "t", "partitions": [0]}])
    monkeypatch.setattr(waiting, "describe_groups", lambda client, groups, **kw: [
        GroupView("g", "Stable", "consumer", "uniform", COORD, [back], group_type="consumer", group_epoch=7,
                  assignment_epoch=7)])
    now = [0.0]
    settled = waiting.wait_after_removal(None, "g", ["m-c0"], timeout_s=30, before_epoch=5, clock=lambda: now[0],
                                         sleep=lambda s: now.__setitem__(0, now[0] + s))
    assert [m.member_id for m in settled.members] == ["m-c0"]
    assert now[0] == pytest.approx(waiting.REJOIN_WINDOW_S)  # held for 1 s long before; watched for 5 s
    report = RemovalReport("g", False, [MemberResult(Target("c0"), None), MemberResult(Target("x"), None),
                                        MemberResult(Target("y"), "UNKNOWN_MEMBER_ID")])
    report.waited = True
    report.mark_rejoined(settled)
    assert [r["rejoined"] for r in report.to_json()["results"]] == [True, False, None]
    assert report.to_json()["rejoined"] == 1


def test_wait_after_removal_settles_when_the_emptied_group_is_deleted(monkeypatch):
    """Removing everyone from a consumer group without offsets: Kafka may delete the emptied group
    (its cleanup, or a classic join of its id) before the wait looks. Nobody is left: settled, and
    the report says Dead."""
    from kgroup.client import waiting

    gone = GroupView("g", "Dead", "", "", COORD, [])
    monkeypatch.setattr(waiting, "describe_groups", lambda client, groups, **kw: [gone])
    now = [0.0]
    settled = waiting.wait_after_removal(None, "g", ["m-a"], timeout_s=30, before_epoch=5, clock=lambda: now[0],
                                         sleep=lambda s: now.__setitem__(0, now[0] + s))
    assert settled is gone and now[0] == pytest.approx(waiting.REJOIN_WINDOW_S)
    before = GroupView("g", "Stable", "consumer", "uniform", COORD,
                       [MemberView("m-a", "a", "c", "h", [{"topic": "t", "partitions": [0]}])],
                       group_type="consumer", group_epoch=5)
    diff = before_after(before, settled)
    assert diff["after"] == {"state": "Dead", "members": []}
    assert diff["partitions_moved"] == [{"topic": "t", "partition": 0, "from": "a", "to": None}]


def test_a_wait_timeout_names_static_members_that_left(monkeypatch):
    from kgroup.client import waiting

    stopped = MemberView("m-k0", "k0", "c", "h", member_epoch=-2)
    running = MemberView("m-k1", "k1", "c", "h", member_epoch=4)
    monkeypatch.setattr(waiting, "describe_groups", lambda client, groups, **kw: [
        GroupView("g", "Reconciling", "consumer", "uniform", COORD, [stopped, running], group_type="consumer",
                  group_epoch=4)])
    now = [0.0]
    with pytest.raises(waiting.WaitTimeout) as info:
        waiting.wait_caught_up(None, "g", 1, clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s))
    assert str(info.value).endswith("(last state: Reconciling, 2 member(s); k0 left (static, member epoch -2): "
                                    "the group stays Reconciling until they rejoin or their session times out)")


def test_wait_status_line_only_on_a_terminal_and_cleared(monkeypatch, capsys):
    from kgroup.client import waiting
    from kgroup.commands.output import WaitStatus

    views = iter([GroupView("g", "PreparingRebalance", "consumer", "range", COORD, []),
                  GroupView("g", "Stable", "consumer", "range", COORD, [])])
    monkeypatch.setattr(waiting, "describe_groups", lambda client, groups, **kw: [next(views)])
    status = WaitStatus("g", enabled=True)
    now = [0.0]
    waiting.wait_for_state(None, "g", "Stable", 10, clock=lambda: now[0],
                           sleep=lambda s: now.__setitem__(0, now[0] + s), on_poll=status)
    status.clear()
    err = capsys.readouterr().err
    assert "waiting for g: PreparingRebalance, 0 member(s), 0.0s" in err
    assert "waiting for g: Stable" in err and err.endswith("\r\x1b[K")
    quiet = WaitStatus("g", enabled=False)
    quiet(None, 1.0)
    quiet.clear()
    assert capsys.readouterr().err == ""


# -- a coordinator that moves (Kafka: NOT_COORDINATOR, then a broker gone from the metadata) ----------

class MovingCoordinatorClient:
    """FindCoordinator answers `coordinators` in turn; DescribeGroups on each node answers from
    `answers[node]` (an exception instance is raised, as ClusterClient.send raises it)."""

    def __init__(self, coordinators, answers):
        self.timeout_s = 5.0
        self.coordinators = list(coordinators)
        self.answers = {node: list(rows) for node, rows in answers.items()}
        self.sent = []

    def max_version(self, request_class, floor=0):
        from kafka.protocol.admin import DescribeGroupsRequest
        return 5 if request_class is DescribeGroupsRequest else -1

    def find_coordinator(self, group, deadline=None):
        return self.coordinators.pop(0) if len(self.coordinators) > 1 else self.coordinators[0]

    def send(self, request, node_id=None, what=""):
        self.sent.append(node_id)
        answer = self.answers[node_id].pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def described(error=0, state="Stable"):
    return DescribeGroupsResponse(throttle_time_ms=0, groups=[Group(
        error_code=error, group_id="g", group_state=state, protocol_type="consumer", protocol_data="range",
        members=[], authorized_operations=set())], version=5)


def test_describe_follows_a_coordinator_that_moves(monkeypatch):
    from kgroup.client import groups
    from kgroup.client.wire import TransportError

    monkeypatch.setattr(groups, "RETRY_BACKOFF_S", 0)
    old, new = Coordinator(2, "b2", 9092), Coordinator(3, "b3", 9092)
    client = MovingCoordinatorClient([old, old, new], {
        2: [described(error=16), TransportError("request: UnknownBrokerIdError: 2")],
        3: [described(error=14), described(state="Empty")]})
    (view,) = groups.describe_groups(client, ["g"])
    assert (view.error, view.state, view.coordinator) == (None, "Empty", new)
    assert client.sent == [2, 2, 3, 3]     # NOT_COORDINATOR, gone, COORDINATOR_LOAD_IN_PROGRESS, answered


def test_describe_keeps_the_last_coordinator_error_at_the_deadline(monkeypatch):
    from kgroup.client import groups

    monkeypatch.setattr(groups, "RETRY_BACKOFF_S", 0)
    client = MovingCoordinatorClient([COORD], {1: [described(error=15)] * 3})
    (view,) = groups.describe_groups(client, ["g"], deadline=0)   # already past: one attempt
    assert view.error == "COORDINATOR_NOT_AVAILABLE"


def test_wait_polls_on_through_not_coordinator(monkeypatch):
    from kgroup.client import waiting

    views = iter([GroupView("g", "", "", "", COORD, error="NOT_COORDINATOR"),
                  GroupView("g", "Stable", "consumer", "range", COORD, [MemberView("m", None, "c", "h")])])
    monkeypatch.setattr(waiting, "describe_groups", lambda client, groups, **kw: [next(views)])
    now = [0.0]
    view = waiting.wait_for_state(None, "g", "Stable", 10, clock=lambda: now[0],
                                  sleep=lambda s: now.__setitem__(0, now[0] + s))
    assert view.state == "Stable"


def test_list_asks_every_broker_again_when_one_stops_in_the_middle(monkeypatch):
    from kafka.protocol.admin import ListGroupsResponse

    from kgroup.client import groups
    from kgroup.client.wire import TransportError

    monkeypatch.setattr(groups, "RETRY_BACKOFF_S", 0)
    brokers = {n: Coordinator(n, f"b{n}", 9092) for n in (1, 2, 3)}

    def listing(*names):
        return ListGroupsResponse(version=5, throttle_time_ms=0, error_code=0, groups=[
            ListGroupsResponse.ListedGroup(group_id=g, protocol_type="consumer", group_state="Stable",
                                           group_type="classic") for g in names])

    class Client(MovingCoordinatorClient):
        timeout_s = 5.0
        sent = []
        answers = {1: [listing("a"), listing("a", "b")], 2: [TransportError("gone")], 3: [listing("c")]}

        def __init__(self):
            pass

        def max_version(self, request_class, floor=0):
            return 5

        def brokers(self, fresh=False):
            return [brokers[1], brokers[3]] if fresh else list(brokers.values())

    client = Client()
    listed = groups.list_groups(client)
    assert [(g.group, g.coordinator.node_id) for g in listed] == [("a", 1), ("b", 1), ("c", 3)]
    assert client.sent == [1, 2, 1, 3]   # b moved from broker 2 to broker 1, already asked once


def test_an_unlisted_group_called_an_empty_consumer_group_is_asked_as_classic_too(monkeypatch):
    """Tansu answers ConsumerGroupDescribe for a classic group with an empty consumer group; when
    ListGroups does not (yet) type the group, the classic describe is asked too and wins if it
    shows members — and an empty consumer group that is one stays one."""
    from kgroup.client import connect_describe, consumer_describe, groups, share_describe, streams_describe

    members = [MemberView("m-a", None, "c", "h", [{"topic": "t", "partitions": [0]}])]
    classic = {"g": GroupView("g", "Stable", "consumer", "range", COORD, members),
               "e": GroupView("e", "Dead", "", "", COORD, [])}
    monkeypatch.setattr(groups, "listed_types", lambda client, coordinator: {})
    monkeypatch.setattr(consumer_describe, "describe_consumer_groups", lambda client, coordinator, ids: {
        g: GroupView(g, "Stable", "consumer", "", COORD, [], group_type="consumer") for g in ids})
    for module, name in ((connect_describe, "describe_connect_groups"), (share_describe, "describe_share_groups"),
                         (streams_describe, "describe_streams_groups")):
        monkeypatch.setattr(module, name, lambda client, coordinator, ids: {})
    monkeypatch.setattr(groups, "_describe_classic", lambda client, coordinator, ids: {g: classic[g] for g in ids})
    views = groups._describe_at(None, COORD, ["g", "e"])
    assert views["g"] is classic["g"]
    assert views["e"].group_type == "consumer" and views["e"].state == "Stable"
