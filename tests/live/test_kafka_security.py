"""kgroup's verbs with `--command-config` against a secured real Kafka 4.4 and a secured `kgroup serve`,
side by side: the same users, the same ACLs, the same groups, and the same answers.

The Kafka node (its own, not the shared one) has a SASL_SSL listener (SCRAM-SHA-512, users created by
the storage tool's ``--add-scram`` at format time, a PEM keystore) next to PLAINTEXT, Kafka's
StandardAuthorizer, ``super.users`` for the admin (and ANONYMOUS, the PLAINTEXT and controller
listeners' principal), and ACLs added with ``kafka-acls``. ``kgroup serve`` gets the same listeners,
users and rules (``--acl``; a super user is ``All`` on everything). Every case runs on both and must
give the same exit status and the same stderr line — Kafka's answer is the reference.
"""

from __future__ import annotations

import json
import pathlib
from concurrent.futures import ThreadPoolExecutor

import pytest
from click.testing import CliRunner

from helpers.certificates import certificates_fixture
from helpers.kafka_cluster import GROUP_SETTINGS, KafkaCluster
from helpers.kafka_groups import wait_for
from helpers.secure_clients import client_settings
from helpers.secured_kafka import Secured, client_configs, start_secured_kafka
from kgroup.client.fleet import FleetConsumer
from kgroup.commands.cli import cli

USERS = {"admin": "r00t", "ops": "s3cret", "alice": "wonder", "bob": "b0b"}
MECHANISM = "SCRAM-SHA-512"

# kafka-acls invocations (each a cross product of principals, operations and resources) ...
KAFKA_ACLS = [
    ["--allow-principal", "User:ops", "--operation", "Read", "--operation", "Delete",
     "--group", "orders-", "--resource-pattern-type", "prefixed"],
    ["--allow-principal", "User:ops", "--operation", "Read", "--topic", "events", "--topic", "hidden"],
    ["--allow-principal", "User:bob", "--operation", "Read", "--topic", "events"],
    ["--allow-principal", "User:alice", "--operation", "Describe", "--group", "orders-a", "--topic", "*"],
    ["--allow-principal", "User:bob", "--operation", "Delete", "--operation", "Describe",
     "--group", "orders-c", "--group", "orders-k", "--topic", "secret"],
]
# ... and the same rules as kgroup serve's --acl (a NAME ending in * is a prefix; super users: All)
SERVE_ACLS = [
    "User:ops:Read:Group:orders-*", "User:ops:Delete:Group:orders-*",
    "User:ops:Read:Topic:events", "User:ops:Read:Topic:hidden", "User:bob:Read:Topic:events",
    "User:alice:Describe:Group:orders-a", "User:alice:Describe:Topic:*",
    "User:bob:Delete:Group:orders-c", "User:bob:Describe:Group:orders-c",
    "User:bob:Delete:Group:orders-k", "User:bob:Describe:Group:orders-k",
    "User:bob:Delete:Topic:secret", "User:bob:Describe:Topic:secret",
    "User:admin:All:*:*", "User:ANONYMOUS:All:*:*",
]
TOPICS = {"events": 2, "secret": 1, "hidden": 1}


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return certificates_fixture(tmp_path_factory)


def _configs(where: pathlib.Path, ca: str) -> dict:
    return client_configs(where, ca, USERS, MECHANISM, strangers={"mallory": "guess"}, wrong_password_for="ops")


def _start_kafka(where: pathlib.Path, certs) -> KafkaCluster:
    return start_secured_kafka(where, certs, USERS, MECHANISM)


def _setup_groups(plain: str) -> None:
    """As a super user over PLAINTEXT: the topics, and committed offsets for orders-a (events) and
    orders-c (events and secret)."""
    from kafka.admin import KafkaAdminClient, NewTopic

    from helpers.acl_broker import commit
    from kgroup.client.wire import ClusterClient

    admin = KafkaAdminClient(bootstrap_servers=plain)
    try:
        missing = [NewTopic(t, n, 1) for t, n in TOPICS.items() if t not in set(admin.list_topics())]
        if missing:  # serve was started with them
            admin.create_topics(missing)
    finally:
        admin.close()
    with ClusterClient(plain, timeout_s=30) as client:
        for group in ("orders-a", "orders-c"):   # Kafka creates __consumer_offsets on the first FindCoordinator
            client.find_coordinator(group)
        wait_for(lambda: not any(commit(client, "orders-a", {"events": [0, 1]}).values()), 30,
                 "orders-a's offsets committed")
        wait_for(lambda: not any(commit(client, "orders-c", {"events": [0, 1], "secret": [0]}).values()), 30,
                 "orders-c's offsets committed")


@pytest.fixture(scope="module")
def brokers(tmp_path_factory, certs):
    """{"kafka": Secured, "serve": Secured}, set up alike."""
    from kgroup.server.security.acl import parse_acl
    from kgroup.server.harness import ThreadedBroker
    from kgroup.server.security.listeners import parse_listener

    configs = _configs(tmp_path_factory.mktemp("client-configs"), certs.ca)
    kafka = _start_kafka(tmp_path_factory.mktemp("secure-kafka"), certs)
    serve = None
    try:
        pool = ThreadPoolExecutor(len(KAFKA_ACLS))     # a JVM each: at once
        acl_runs = [pool.submit(kafka.tool, "kafka-acls", "--bootstrap-server", kafka.bootstrap, "--add", *rule)
                    for rule in KAFKA_ACLS]
        serve = ThreadedBroker(tmp_path_factory.mktemp("secure-serve"), topics=list(TOPICS.items()),
                               listeners=[parse_listener("SASL_SSL://127.0.0.1:0"),
                                          parse_listener("PLAINTEXT://127.0.0.1:0")],
                               users=USERS, acls=[parse_acl(rule) for rule in SERVE_ACLS],
                               config={**GROUP_SETTINGS, "ssl.keystore.location": certs.server,
                                       "sasl.enabled.mechanisms": MECHANISM})
        _setup_groups(serve.bootstraps[1])
        _setup_groups(kafka.bootstrap)
        for run in acl_runs:
            run.result(120)
        pool.shutdown()
        listed = kafka.tool("kafka-acls", "--bootstrap-server", kafka.bootstrap, "--list").stdout
        assert listed.count("principal=User:") == len(SERVE_ACLS) - 2, listed   # less the super users
        yield {"kafka": Secured("kafka", kafka.sasl, kafka.bootstrap, configs),
               "serve": Secured("serve", serve.bootstraps[0], serve.bootstraps[1], configs)}
    finally:
        if serve is not None:
            serve.stop()
        kafka.stop()


BROKERS = ["kafka", "serve"]


def kgroup(broker: Secured, user: str, *args):
    result = CliRunner().invoke(cli, [*args, "--bootstrap-server", broker.sasl,
                                      "--command-config", broker.configs[user], "--timeout", "20"])
    assert "Traceback" not in result.stderr, result.stderr
    return result


def outcome(result) -> tuple[int, str]:
    return result.exit_code, result.stderr


def listed(result) -> list[str]:
    assert result.exit_code == 0, result.stderr
    return sorted(row["group"] for row in json.loads(result.stdout))


# -- each case on both brokers ------------------------------------------------------------------------

@pytest.mark.parametrize("name", BROKERS)
def test_list_shows_the_groups_a_user_may_describe(brokers, name):
    broker = brokers[name]
    assert listed(kgroup(broker, "alice", "list", "-o", "json")) == ["orders-a"]
    assert listed(kgroup(broker, "bob", "list", "-o", "json")) == ["orders-c"]
    assert {"orders-a", "orders-c"} <= set(listed(kgroup(broker, "admin", "list", "-o", "json")))
    assert listed(kgroup(broker, "ops", "list", "-o", "json")) == ["orders-a", "orders-c"]


DENIALS = [  # (user, arguments, exit status, the stderr line)
    ("alice", ["describe", "orders-b"], 1, "kgroup describe: not authorized to Describe group orders-b"),
    ("alice", ["describe", "orders-a", "orders-b"], 3, "kgroup describe: not authorized to Describe group orders-b"),
    ("alice", ["wait", "orders-b", "--state", "Empty", "--timeout", "5"], 1,
     "kgroup wait: not authorized to Describe group orders-b"),
    ("alice", ["delete", "orders-a"], 1, "kgroup delete: not authorized to Delete group orders-a"),
    ("alice", ["delete-offsets", "orders-a", "--topic", "events"], 1,
     "kgroup delete-offsets: not authorized to Delete group orders-a"),
    ("bob", ["delete-offsets", "orders-c", "--topic", "events", "--topic", "secret"], 3,
     "kgroup delete-offsets: not authorized to Read topic secret"),
    # -o json: the default table's closing line on stderr (nothing committed) aside, the refusal alone
    ("alice", ["reset-offsets", "orders-a", "--topic", "events", "--to-earliest", "--execute", "-o", "json"], 1,
     "kgroup reset-offsets: not authorized to Read group orders-a"),
    ("bob", ["reset-offsets", "orders-a", "--topic", "events", "--to-earliest"], 1,
     "kgroup reset-offsets: not authorized to Describe group orders-a"),
]


@pytest.mark.parametrize("name", BROKERS)
@pytest.mark.parametrize("user, args, status, line", DENIALS, ids=[" ".join(d[1][:2]) + f" as {d[0]}"
                                                                   for d in DENIALS])
def test_refusals_name_the_operation_and_the_resource(brokers, name, user, args, status, line):
    assert outcome(kgroup(brokers[name], user, *args)) == (status, line + "\n")


DRY_RUNS = [  # (user, arguments, exit status, the last stderr line): each ends as its real run above
    ("alice", ["delete", "orders-a", "--dry-run"], 1,
     "kgroup delete: would be refused: not authorized to Delete group orders-a"),
    ("alice", ["delete-offsets", "orders-a", "--topic", "events", "--dry-run"], 1,
     "kgroup delete-offsets: would be refused: not authorized to Delete group orders-a"),
    ("bob", ["delete-offsets", "orders-c", "--topic", "events", "--topic", "secret", "--dry-run"], 3,
     "kgroup delete-offsets: would be refused: not authorized to Read topic secret"),
    ("alice", ["reset-offsets", "orders-a", "--topic", "events", "--to-earliest", "-o", "json"], 1,
     "kgroup reset-offsets: would be refused: not authorized to Read group orders-a"),
]


@pytest.mark.parametrize("name", BROKERS)
@pytest.mark.parametrize("user, args, status, line", DRY_RUNS, ids=[" ".join(d[1][:2]) + f" as {d[0]}"
                                                                    for d in DRY_RUNS])
def test_dry_runs_read_the_rights_the_broker_reports(brokers, name, user, args, status, line):
    """The dry run asks the broker for the principal's AuthorizedOperations (DescribeGroups v3+,
    Metadata v8+) and ends as the real run would, which Kafka's answer above is."""
    result = kgroup(brokers[name], user, *args)
    assert (result.exit_code, result.stderr.splitlines()[-1:]) == (status, [line]), result.stderr


@pytest.mark.parametrize("name", BROKERS)
def test_allowed_describe_and_reset_offsets(brokers, name):
    broker = brokers[name]
    described = kgroup(broker, "alice", "describe", "orders-a", "--offsets", "-o", "json")
    assert described.exit_code == 0, described.stderr
    (view,) = json.loads(described.stdout)
    assert (view["group"], view["state"], view["error"]) == ("orders-a", "Empty", None)
    assert [(o["topic"], o["partition"], o["committed"]) for o in view["offsets"]] == [
        ("events", 0, 0), ("events", 1, 0)]
    plan = kgroup(broker, "ops", "reset-offsets", "orders-a", "--topic", "events", "--to-latest", "--execute",
                  "-o", "json")
    assert plan.exit_code == 0, plan.stderr
    assert [(o["partition"], o.get("error")) for o in json.loads(plan.stdout)["offsets"]] == [(0, None), (1, None)]


@pytest.mark.parametrize("name", BROKERS)
def test_remove_members_needs_read_on_the_group(brokers, certs, name):
    """A static member of orders-a, joined as ops over SASL_SSL and stopped (it stays until removed):
    alice may describe the group but not remove it; ops removes it."""
    broker = brokers[name]
    group = "orders-a"
    settings = client_settings("SASL_SSL", MECHANISM, certs.ca, "ops", USERS["ops"])[1]
    member = FleetConsumer(broker.sasl, group, ["events"], f"static-{name}", session_timeout_ms=30000,
                           poll_timeout_ms=300, **settings)
    try:
        wait_for(lambda: len(member.assignment) == 2, 60, "the static member owning events")
    finally:
        member.stop()
    assert outcome(kgroup(broker, "alice", "remove-members", group, "--all")) == (
        1, f"kgroup remove-members: not authorized to Read group {group}\n")
    planned = kgroup(broker, "alice", "remove-members", group, "--all", "--dry-run", "-o", "json")
    assert (planned.exit_code, planned.stderr.splitlines()[-1:]) == (
        1, [f"kgroup remove-members: would be refused: not authorized to Read group {group}"])
    assert json.loads(planned.stdout)["results"][0]["status"] == "static"     # the plan, all the same
    allowed = kgroup(broker, "ops", "remove-members", group, "--all", "--dry-run", "-o", "json")
    assert allowed.exit_code == 0 and json.loads(allowed.stdout)["refused"] is None, allowed.stderr
    removed = kgroup(broker, "ops", "remove-members", group, "--instance-id", f"static-{name}", "-o", "json")
    assert removed.exit_code == 0, removed.stderr
    assert json.loads(removed.stdout)["removed"] == 1
    assert outcome(kgroup(broker, "ops", "wait", group, "--state", "Empty")) == (0, "")


@pytest.mark.parametrize("name", BROKERS)
def test_a_wrong_password_or_an_unknown_user(brokers, name):
    broker = brokers[name]
    assert outcome(kgroup(broker, "ops-wrong", "list")) == (
        1, f"kgroup list: cannot connect to {broker.sasl}: authentication failed for user ops ({MECHANISM})\n")
    assert outcome(kgroup(broker, "mallory", "list")) == (
        1, f"kgroup list: cannot connect to {broker.sasl}: authentication failed for user mallory ({MECHANISM})\n")


@pytest.mark.parametrize("name", BROKERS)
def test_a_consumer_group_described_by_a_user_who_may_not_describe_one_of_its_topics(brokers, certs, name):
    """A KIP-848 consumer group (librdkafka, as ops) on events and hidden; bob may Describe the group
    but not the topic hidden, and Kafka answers ConsumerGroupDescribe for it with
    TOPIC_AUTHORIZATION_FAILED and no members — serve does the same."""
    from helpers.kafka_groups import RdkafkaMember

    broker = brokers[name]
    member = RdkafkaMember(broker.sasl, "orders-k", ["events", "hidden"], f"k-{name}", protocol="consumer",
                           **{"security.protocol": "SASL_SSL", "sasl.mechanism": MECHANISM,
                              "sasl.username": "ops", "sasl.password": USERS["ops"], "ssl.ca.location": certs.ca})
    try:
        wait_for(lambda: len(member.assignment) == 3, 60, "the consumer owning events and hidden")
        # Kafka withholds the group: its assignments name a topic bob may not Describe
        assert outcome(kgroup(broker, "bob", "describe", "orders-k")) == (
            1, "kgroup describe: not authorized to Describe the topics of group orders-k\n")
        assert outcome(kgroup(broker, "bob", "describe", "orders-k", "orders-c")) == (
            3, "kgroup describe: not authorized to Describe the topics of group orders-k\n")
        described = kgroup(broker, "ops", "describe", "orders-k", "-o", "json")   # ops may read both
        assert described.exit_code == 0, described.stderr
        (view,) = json.loads(described.stdout)
        assert (view["type"], [m["group_instance_id"] for m in view["members"]]) == ("consumer", [f"k-{name}"])
    finally:
        member.close()
