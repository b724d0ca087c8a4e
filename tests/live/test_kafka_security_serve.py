"""`kgroup serve`'s authorizer and SASL listener against a secured real Kafka 4.4, side by side: the
same users, the same ACLs (kafka-acls there, `--acl` here), the same requests, and the same
decisions, authorizer log lines and failed-authentication delay.

* ACLs match as Kafka's StandardAuthorizer matches them: a principal whose type or name differs in
  case matches nothing, resource names are case-sensitive, LITERAL / PREFIXED / wildcard patterns,
  the wildcard principal, Read implying Describe — a matrix of groups and topics, each decision
  compared.
* Each decision is logged as Kafka's `kafka.authorizer.logger` logs it (a denial at INFO, an allow at
  DEBUG naming the rule): serve's lines are Kafka's lines.
* After a wrong SCRAM password both brokers hold the refusal for
  `connection.failed.authentication.delay.ms`, then answer and close at once. Kafka's network
  thread polls at most every 300 ms, so its delay may run up to that much longer.
"""

from __future__ import annotations

import itertools
import logging
import re
import socket
import ssl
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from helpers.certificates import certificates_fixture
from helpers.kafka_cluster import GROUP_SETTINGS
from helpers.kafka_groups import wait_for
from helpers.secure_clients import client_settings
from helpers.secured_kafka import start_secured_kafka
from kgroup.kafka_errors import (GROUP_AUTHORIZATION_FAILED, MEMBER_ID_REQUIRED, NONE,
                                 SASL_AUTHENTICATION_FAILED, TOPIC_AUTHORIZATION_FAILED,
                                 UNKNOWN_TOPIC_OR_PARTITION)

USERS = {"admin": "r00t", "bob": "b0b", "carol": "c4rol"}
MECHANISM = "SCRAM-SHA-512"
DELAY_MS = 300      # connection.failed.authentication.delay.ms on both
TOPIC = "events"

# kafka-acls invocations, each a cross product: (principals, operations, resources, pattern type)
RULES = [
    (["user:bob", "User:Bob"], ["Describe"], [("group", "case-type")], "literal"),   # no User:bob
    (["User:bob", "User:*"], ["Describe"], [("group", "Case-Resource"), ("group", "everyone")], "literal"),
    (["User:carol"], ["Describe"], [("group", "lit"), ("topic", "*")], "literal"),
    (["User:carol"], ["Describe"], [("group", "pre-")], "prefixed"),
    (["User:carol"], ["Read"], [("group", "impl-")], "prefixed"),
]
SUPER_USERS = ["User:admin:All:*:*", "User:ANONYMOUS:All:*:*"]   # Kafka's super.users


def kafka_acls_args(rule) -> list[str]:
    principals, operations, resources, pattern = rule
    args = [arg for p in principals for arg in ("--allow-principal", p)]
    args += [arg for op in operations for arg in ("--operation", op)]
    args += [arg for kind, name in resources for arg in (f"--{kind}", name)]
    return [*args, "--resource-pattern-type", pattern]


def serve_acls(rule) -> list[str]:
    """The same rule as `--acl` values: a PREFIXED name ends in `*`."""
    principals, operations, resources, pattern = rule
    return [f"{p}:{op}:{kind.capitalize()}:{name}{'*' if pattern == 'prefixed' else ''}"
            for p, op, (kind, name) in itertools.product(principals, operations, resources)]


# Describe on each (DescribeGroups), Read on some (JoinGroup), Describe on topics (Metadata)
GROUPS = ["case-type", "Case-Resource", "case-resource", "Case-Resource-2", "everyone", "lit", "lit2", "li",
          "pre-", "pre-x", "pre", "PRE-x", "impl-1", "impl", "other"]
JOINS = ["impl-1", "pre-x", "everyone"]
TOPICS = [TOPIC, "EVENTS", "nope"]
DESCRIBABLE = {  # the groups each user may Describe: what Kafka's rules mean
    "bob": {"Case-Resource", "everyone"},
    "carol": {"Case-Resource", "everyone", "lit", "pre-", "pre-x", "impl-1"},   # User:* on Case-Resource
}


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return certificates_fixture(tmp_path_factory)


class AuthorizerLines(logging.Handler):
    """serve's authorizer log, kept: [(level, message)]."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        self.lines.append((record.levelname, record.getMessage()))


KAFKA_AUDIT = re.compile(r"^\[[^\]]+\] (INFO|DEBUG) (Principal = .*) \(kafka\.authorizer\.logger\)$")


class Side:
    """One broker of the pair: `sasl` bootstrap, `plain` (PLAINTEXT, a super user) and `audit()`,
    its authorizer log's (level, message) lines so far."""

    def __init__(self, name, sasl, plain, audit):
        self.name, self.sasl, self.plain, self.audit = name, sasl, plain, audit


@pytest.fixture(scope="module")
def sides(tmp_path_factory, certs):
    from kgroup.server.security.acl import parse_acl
    from kgroup.server.harness import ThreadedBroker
    from kgroup.server.security.listeners import parse_listener

    delay = {"connection.failed.authentication.delay.ms": str(DELAY_MS)}
    kafka = start_secured_kafka(tmp_path_factory.mktemp("secure-kafka"), certs, USERS, MECHANISM,
                                settings=delay, loggers={"kafka.authorizer.logger": "DEBUG"})
    serve, handler = None, AuthorizerLines()
    authorizer_log = logging.getLogger("kgroup.server.authorizer")
    authorizer_log.addHandler(handler)
    level = authorizer_log.level
    authorizer_log.setLevel(logging.DEBUG)
    try:
        with ThreadPoolExecutor(len(RULES)) as pool:     # a JVM each: at once
            runs = [pool.submit(kafka.tool, "kafka-acls", "--bootstrap-server", kafka.bootstrap, "--add",
                                *kafka_acls_args(rule)) for rule in RULES]
            serve = ThreadedBroker(tmp_path_factory.mktemp("secure-serve"), topics=[(TOPIC, 1)],
                                   listeners=[parse_listener("SASL_SSL://127.0.0.1:0"),
                                              parse_listener("PLAINTEXT://127.0.0.1:0")],
                                   users=USERS,
                                   acls=[parse_acl(a) for rule in RULES for a in serve_acls(rule)] +
                                        [parse_acl(a) for a in SUPER_USERS],
                                   config={**GROUP_SETTINGS, **delay, "ssl.keystore.location": certs.server,
                                           "sasl.enabled.mechanisms": MECHANISM})
            _prepare_kafka(kafka.bootstrap)
            for run in runs:
                run.result(120)
        yield {"kafka": Side("kafka", kafka.sasl, kafka.bootstrap, lambda: _kafka_audit(kafka.nodes[0].log)),
               "serve": Side("serve", serve.bootstraps[0], serve.bootstraps[1], lambda: list(handler.lines))}
    finally:
        authorizer_log.removeHandler(handler)
        authorizer_log.setLevel(level)
        if serve is not None:
            serve.stop()
        kafka.stop()


def _prepare_kafka(plain: str) -> None:
    """The topic, and the group coordinator up (Kafka creates __consumer_offsets on demand)."""
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.protocol.admin import DescribeGroupsRequest

    from kgroup.client.wire import ClusterClient

    admin = KafkaAdminClient(bootstrap_servers=plain)
    try:
        admin.create_topics([NewTopic(TOPIC, 1, 1)])
    finally:
        admin.close()
    with ClusterClient(plain, timeout_s=30) as client:
        client.find_coordinator("other")
        wait_for(lambda: client.send(DescribeGroupsRequest(version=5, groups=["other"],
                                                           include_authorized_operations=False))
                 .groups[0].error_code == NONE, 30, "the group coordinator")


def _kafka_audit(log) -> list[tuple[str, str]]:
    return [m.groups() for m in map(KAFKA_AUDIT.match, log.read_text(errors="replace").splitlines()) if m]


def _client(side: Side, user: str, certs):
    from kgroup.client.wire import ClusterClient

    return ClusterClient(side.sasl, client_settings("SASL_SSL", MECHANISM, certs.ca, user, USERS[user])[1],
                         timeout_s=20)


def _decisions(side: Side, user: str, certs) -> dict:
    """{(API, resource): error code} of one user's probes."""
    from kafka.protocol.admin import DescribeGroupsRequest
    from kafka.protocol.metadata import MetadataRequest

    from helpers.acl_broker import join

    with _client(side, user, certs) as client:
        described = client.send(DescribeGroupsRequest(version=5, groups=GROUPS,
                                                      include_authorized_operations=False))
        joined = {group: join(client, group).error_code for group in JOINS}
        metadata = client.send(MetadataRequest(version=12, topics=[
            MetadataRequest.MetadataRequestTopic(topic_id=None, name=t) for t in TOPICS],
            allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    return {**{("DescribeGroups", g.group_id): g.error_code for g in described.groups},
            **{("JoinGroup", group): code for group, code in joined.items()},
            **{("Metadata", t.name): t.error_code for t in metadata.topics}}


def _audited(lines, user: str) -> list[tuple[str, str]]:
    """The user's lines for the probed requests (not the clients' own bootstrap Metadata)."""
    probes = ("for request = DescribeGroups ", "for request = JoinGroup ")
    return sorted((level, text) for level, text in lines if text.startswith(f"Principal = User:{user} ")
                  and (any(p in text for p in probes) or level == "INFO"))


@pytest.mark.parametrize("user", sorted(DESCRIBABLE))
def test_the_same_decisions_and_authorizer_log_lines(sides, certs, user):
    kafka, serve = sides["kafka"], sides["serve"]
    before = {name: len(side.audit()) for name, side in sides.items()}
    decided = {name: _decisions(side, user, certs) for name, side in sides.items()}
    assert decided["serve"] == decided["kafka"]
    got = decided["kafka"]
    assert {g for g in GROUPS if got[("DescribeGroups", g)] == NONE} == DESCRIBABLE[user]
    assert {g for g in GROUPS if got[("DescribeGroups", g)] != NONE} == \
        {g for g in GROUPS if got[("DescribeGroups", g)] == GROUP_AUTHORIZATION_FAILED}
    assert {g: got[("JoinGroup", g)] for g in JOINS} == {
        "impl-1": MEMBER_ID_REQUIRED if user == "carol" else GROUP_AUTHORIZATION_FAILED,
        "pre-x": GROUP_AUTHORIZATION_FAILED, "everyone": GROUP_AUTHORIZATION_FAILED}
    topics = {t: got[("Metadata", t)] for t in TOPICS}
    assert topics == ({TOPIC: NONE, "EVENTS": UNKNOWN_TOPIC_OR_PARTITION, "nope": UNKNOWN_TOPIC_OR_PARTITION}
                      if user == "carol" else dict.fromkeys(TOPICS, TOPIC_AUTHORIZATION_FAILED))

    wait_for(lambda: len(_audited(kafka.audit()[before["kafka"]:], user)) >=
             len(_audited(serve.audit()[before["serve"]:], user)) > 0, 10, "Kafka's authorizer log lines")
    lines = {name: _audited(side.audit()[before[name]:], user) for name, side in sides.items()}
    assert lines["serve"] == lines["kafka"]
    denied = [text for level, text in lines["kafka"] if level == "INFO"]
    assert (f"Principal = User:{user} is Denied operation = DESCRIBE from host = 127.0.0.1 on resource = "
            f"Group:LITERAL:other for request = DescribeGroups with resourceRefCount = 1 based on rule "
            f"DefaultDeny") in denied


def _scram_refusal(bootstrap: str, ca: str, user: str, password: str) -> tuple[float, int, float]:
    """A SCRAM exchange over TLS ending in a wrong proof: (seconds from the final SaslAuthenticate
    to its answer, the answer's error code, seconds from the answer to the close)."""
    from kafka.net.sasl.scram import ScramClient
    from kafka.protocol.sasl import (SaslAuthenticateRequest, SaslAuthenticateResponse,
                                     SaslHandshakeRequest, SaslHandshakeResponse)

    from kgroup.server.harness import read_frame

    host, port = bootstrap.rsplit(":", 1)
    context = ssl.create_default_context(cafile=ca)
    with socket.create_connection((host, int(port)), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname=host) as sock:
        def exchange(request, response_class, correlation_id):
            request.with_header(correlation_id=correlation_id, client_id="delay-probe")
            sock.sendall(bytes(request.encode(header=True, framed=True)))
            frame = read_frame(sock)
            assert frame is not None, "closed without an answer"
            return response_class.decode(frame, version=request.version, header=True)

        scram = ScramClient(user, password, MECHANISM)
        assert exchange(SaslHandshakeRequest(version=1, mechanism=MECHANISM), SaslHandshakeResponse,
                        1).error_code == NONE
        first = exchange(SaslAuthenticateRequest(version=2, auth_bytes=scram.first_message()),
                         SaslAuthenticateResponse, 2)
        assert first.error_code == NONE
        scram.process_server_first_message(first.auth_bytes)
        started = time.monotonic()
        final = exchange(SaslAuthenticateRequest(version=2, auth_bytes=scram.final_message()),
                         SaslAuthenticateResponse, 3)
        answered = time.monotonic()
        assert read_frame(sock) is None
        closed = time.monotonic()
    return answered - started, final.error_code, closed - answered


def test_a_wrong_password_is_answered_and_closed_after_the_failed_authentication_delay(sides, certs):
    timings = {name: [_scram_refusal(side.sasl, certs.ca, "bob", "not-b0b") for _ in range(3)]
               for name, side in sides.items()}
    for name, runs in timings.items():
        for until_answer, code, answer_to_close in runs:
            assert code == SASL_AUTHENTICATION_FAILED, (name, runs)
            # the answer waits the delay (Kafka: up to one 300 ms network poll more), the close follows
            assert DELAY_MS / 1000 - 0.01 <= until_answer < DELAY_MS / 1000 + 0.6, (name, runs)
            assert answer_to_close < 0.2, (name, runs)
