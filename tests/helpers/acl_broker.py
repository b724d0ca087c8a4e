"""An ACL-guarded `kgroup serve` for the authorization tests: SASL_PLAINTEXT users and rules, and
raw-request helpers through kgroup's ClusterClient."""

from __future__ import annotations

import pytest
from kafka.protocol.consumer import JoinGroupRequest, OffsetCommitRequest, OffsetFetchRequest

from kgroup.client.wire import ClusterClient
from kgroup.kafka_errors import NONE
from kgroup.server.security.acl import OPERATIONS, parse_acl
from kgroup.server.harness import ThreadedBroker
from kgroup.server.security.listeners import parse_listener

USERS = {"ops": "s3cret", "alice": "wonder", "bob": "b0b", "admin": "r00t"}
ACLS = ["User:ops:Read:Group:orders-*", "User:ops:Delete:Group:orders-*",
        "User:ops:Read:Topic:events", "User:ops:Write:Topic:events", "User:ops:All:Topic:auto-*",
        "User:alice:Describe:Group:orders-a", "User:alice:Describe:Topic:*",
        "User:bob:Delete:Group:orders-c", "User:bob:Read:Topic:events",
        "User:bob:Describe:Topic:secret", "User:admin:All:*:*", "User:ANONYMOUS:Describe:Topic:events"]
GROUP_OPS = {"ops": {OPERATIONS[op] for op in ("Read", "Describe", "Delete")},
             "alice": {OPERATIONS["Describe"]}}


def start_acl_broker(log_dir):
    """Topics events (2) and secret (1); a SASL_PLAINTEXT listener for USERS and a PLAINTEXT one
    (User:ANONYMOUS); admin's offsets for orders-c on both topics."""
    b = ThreadedBroker(log_dir, topics=[("events", 2), ("secret", 1)],
                       listeners=[parse_listener("SASL_PLAINTEXT://127.0.0.1:0"),
                                  parse_listener("PLAINTEXT://127.0.0.1:0")],
                       users=USERS, acls=[parse_acl(rule) for rule in ACLS])
    b.sasl, b.plain = b.bootstraps
    with client_of(b, "admin") as admin:
        assert commit(admin, "orders-c", {"events": [0, 1], "secret": [0]}) == {
            ("events", 0): NONE, ("events", 1): NONE, ("secret", 0): NONE}
    return b


@pytest.fixture(scope="module")
def acl_broker(tmp_path_factory):
    """One guarded server per test module (import it as `broker`)."""
    b = start_acl_broker(tmp_path_factory.mktemp("logs"))
    yield b
    b.stop()


def settings_of(user):
    return {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
            "sasl_plain_username": user, "sasl_plain_password": USERS[user]}


def client_of(broker, user=None):
    if user is None:
        return ClusterClient(broker.plain, timeout_s=10)
    return ClusterClient(broker.sasl, settings_of(user), timeout_s=10)


def commit(client, group, partitions):
    T = OffsetCommitRequest.OffsetCommitRequestTopic
    request = OffsetCommitRequest(version=8, group_id=group, topics=[
        T(name=topic, partitions=[T.OffsetCommitRequestPartition(partition_index=p, committed_offset=0)
                                  for p in parts]) for topic, parts in partitions.items()])
    response = client.send(request)
    return {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}


def join(client, group):
    return client.send(JoinGroupRequest(version=5, group_id=group, session_timeout_ms=10000,
                                        rebalance_timeout_ms=10000, member_id="",
                                        protocol_type="consumer", protocols=[("range", b"")]))


def fetch_offsets(client, group, topics=None, version=7):
    T = OffsetFetchRequest.OffsetFetchRequestTopic
    wanted = None if topics is None else [T(name=t, partition_indexes=[0]) for t in topics]
    return client.send(OffsetFetchRequest(version=version, group_id=group, topics=wanted))
