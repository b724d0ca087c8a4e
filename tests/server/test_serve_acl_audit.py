"""`kgroup serve --acl`'s authorizer log: each denial at INFO and each allow at DEBUG, in the shape of
Kafka's `kafka.authorizer.logger`, and no denial for the checks Kafka makes as filters (an
all-topics Metadata, ListGroups, the cluster checks that only pick a path)."""

from __future__ import annotations

import logging

import pytest
from kafka.protocol.admin import DescribeGroupsRequest, ListGroupsRequest
from kafka.protocol.metadata import MetadataRequest

from helpers.acl_broker import acl_broker as broker, client_of, fetch_offsets  # noqa: F401
from kgroup.kafka_errors import GROUP_AUTHORIZATION_FAILED, NONE, TOPIC_AUTHORIZATION_FAILED
from kgroup.protocol import ConsumerGroupHeartbeatRequest
from kgroup.server.harness import ThreadedBroker

AUTHORIZER = "kgroup.server.authorizer"


@pytest.fixture
def audit(caplog):
    """The authorizer log's lines of one test, at the level asked: `audit(level)` → [(level, line)]."""
    def lines(level=logging.INFO):
        return [(r.levelname, r.getMessage()) for r in caplog.records
                if r.name == AUTHORIZER and r.levelno >= level]
    caplog.set_level(logging.DEBUG, logger=AUTHORIZER)
    return lines


def _denied(principal, operation, resource, api):
    return ("INFO", f"Principal = {principal} is Denied operation = {operation} from host = 127.0.0.1 on "
                    f"resource = {resource} for request = {api} with resourceRefCount = 1 based on rule "
                    f"DefaultDeny")


def _metadata(topics):
    return MetadataRequest(version=12, topics=None if topics is None else [
        MetadataRequest.MetadataRequestTopic(topic_id=None, name=t) for t in topics],
        allow_auto_topic_creation=False, include_topic_authorized_operations=False)


def test_a_denial_is_logged_at_info_in_kafkas_shape(broker, audit):
    with client_of(broker, "alice") as alice:   # Describe on orders-a only
        response = alice.send(DescribeGroupsRequest(version=5, groups=["orders-a", "orders-b"],
                                                    include_authorized_operations=False))
    assert [g.error_code for g in response.groups] == [NONE, GROUP_AUTHORIZATION_FAILED]
    assert audit() == [_denied("User:alice", "DESCRIBE", "Group:LITERAL:orders-b", "DescribeGroups")]


def test_an_allow_is_logged_at_debug_naming_the_rule(broker, audit):
    """ops has Read and Delete on orders-*: Kafka names the one its scan meets last (Delete)."""
    with client_of(broker, "ops") as ops:
        ops.send(DescribeGroupsRequest(version=5, groups=["orders-a"], include_authorized_operations=True))
    assert audit(logging.DEBUG) == [(
        "DEBUG", "Principal = User:ops is Allowed operation = DESCRIBE from host = 127.0.0.1 on resource = "
                 "Group:LITERAL:orders-a for request = DescribeGroups with resourceRefCount = 1 based on rule "
                 "MatchingAcl(acl=StandardAcl[resourceType=GROUP, resourceName=orders-, patternType=PREFIXED, "
                 "principal=User:ops, host=*, operation=DELETE, permissionType=ALLOW])")]


def test_filters_log_no_denial_a_resource_asked_for_does(broker, audit):
    with client_of(broker) as anonymous:   # PLAINTEXT, User:ANONYMOUS: Describe on topic events only
        every = anonymous.send(_metadata(None))
        assert {t.name for t in every.topics} == {"events"}
        anonymous.send(ListGroupsRequest(version=4))
        assert audit() == []
        named = anonymous.send(_metadata(["events", "secret"]))
        assert {t.name: t.error_code for t in named.topics} == {"events": NONE,
                                                                 "secret": TOPIC_AUTHORIZATION_FAILED}
    assert audit() == [_denied("User:ANONYMOUS", "DESCRIBE", "Topic:LITERAL:secret", "Metadata")]


def test_each_resource_once_per_request_every_one_asked(broker, audit):
    """A topic asked twice while one request is answered is logged once; every subscribed topic a
    consumer may not describe is logged, not only the first."""
    with client_of(broker, "ops") as ops:    # ops may not Describe topic secret
        fetch_offsets(ops, "orders-c", ["secret", "events"], version=7)
        ops.send(ConsumerGroupHeartbeatRequest(
            version=0, group_id="orders-q", member_id="", member_epoch=0, rebalance_timeout_ms=5000,
            subscribed_topic_names=["secret", "hidden", "events"], topic_partitions=[]))
    assert audit() == [
        _denied("User:ops", "DESCRIBE", "Topic:LITERAL:secret", "OffsetFetch"),
        _denied("User:ops", "DESCRIBE", "Topic:LITERAL:secret", "ConsumerGroupHeartbeat"),
        _denied("User:ops", "DESCRIBE", "Topic:LITERAL:hidden", "ConsumerGroupHeartbeat")]


def test_without_acls_no_decision_is_logged(tmp_path, audit):
    b = ThreadedBroker(tmp_path, topics=[("events", 1)])
    try:
        from kgroup.client.wire import ClusterClient

        with ClusterClient(b.bootstrap, timeout_s=10) as client:
            client.send(DescribeGroupsRequest(version=5, groups=["g"], include_authorized_operations=True))
    finally:
        b.stop()
    assert audit(logging.DEBUG) == []


def _serve_stderr(tmp_path, *args) -> str:
    """A `kgroup serve --acl` (SASL_PLAINTEXT, users ops and alice) asked one DescribeGroups by
    alice for a group she may not describe; its stderr once stopped."""
    from helpers.acl_broker import settings_of
    from kgroup.client.wire import ClusterClient
    from kgroup.server.harness import SubprocessBroker

    server = SubprocessBroker(tmp_path, users={"ops": "s3cret", "alice": "wonder"},
                              listens=("SASL_PLAINTEXT://127.0.0.1:0",),
                              acls=("User:alice:Describe:Group:mine",), args=args)
    try:
        with ClusterClient(server.bootstrap, settings_of("alice"), timeout_s=10) as alice:
            alice.send(DescribeGroupsRequest(version=5, groups=["mine", "theirs"],
                                             include_authorized_operations=False))
    finally:
        server.terminate()
    return server.proc.stderr.read()


@pytest.mark.parametrize("verbosity", [(), ("-vv",)])
def test_serve_logs_denials_on_stderr_by_default_and_allows_with_vv(tmp_path, verbosity):
    stderr = _serve_stderr(tmp_path, *verbosity)
    denied = [line for line in stderr.splitlines() if f" {AUTHORIZER} INFO " in line]
    allowed = [line for line in stderr.splitlines() if f" {AUTHORIZER} DEBUG " in line]
    assert [line.split(" INFO ", 1)[1] for line in denied] == [
        _denied("User:alice", "DESCRIBE", "Group:LITERAL:theirs", "DescribeGroups")[1]], stderr
    assert len(allowed) == (1 if verbosity else 0), stderr
    assert all("User:alice is Allowed operation = DESCRIBE" in line and "Group:LITERAL:mine" in line
               for line in allowed), stderr
