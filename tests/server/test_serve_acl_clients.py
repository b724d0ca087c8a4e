"""`kgroup serve --acl` with real clients: kafka-python and confluent-kafka consumers and producers
allowed and refused, and kgroup's commands naming what they were not authorized to do."""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from kafka.protocol.consumer import JoinGroupRequest

from helpers.acl_broker import USERS, acl_broker as broker, client_of, commit, settings_of  # noqa: F401
from helpers.secure_clients import rdkafka_static_member_consumes
from kgroup.kafka_errors import NONE
from kgroup.server.harness import PYTHON, ROOT


def test_kafka_python_producer_is_refused_a_topic_it_may_not_write(broker):
    from kafka import KafkaProducer
    from kafka.errors import TopicAuthorizationFailedError

    producer = KafkaProducer(bootstrap_servers=broker.sasl, max_block_ms=5000, **settings_of("ops"))
    try:
        producer.send("events", b"ok").get(10)
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send("secret", b"no").get(10)
    finally:
        producer.close()


# -- real consumers -------------------------------------------------------------------------------

def test_kafka_python_consumer_allowed_and_denied(broker):
    from kafka import KafkaConsumer
    from kafka.errors import GroupAuthorizationFailedError

    ok = KafkaConsumer("events", group_id="orders-kp", group_instance_id="kp-1",
                       bootstrap_servers=broker.sasl, auto_offset_reset="earliest",
                       session_timeout_ms=6000, heartbeat_interval_ms=500, **settings_of("ops"))
    try:
        deadline = time.monotonic() + 30
        while broker.group("orders-kp") is None or broker.group("orders-kp").state != "Stable":
            ok.poll(300)
            assert time.monotonic() < deadline
    finally:
        ok.close()
    denied = KafkaConsumer("events", group_id="orders-b", bootstrap_servers=broker.sasl,
                           **settings_of("alice"))
    try:
        with pytest.raises(GroupAuthorizationFailedError):
            for _ in range(20):
                denied.poll(300)
    finally:
        denied.close()


def _rdkafka(broker, user):
    return {"bootstrap.servers": broker.sasl, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": USERS[user]}


def test_confluent_kafka_consumer_allowed_and_denied(broker):
    from confluent_kafka import Consumer, KafkaError

    rdkafka_static_member_consumes(broker, _rdkafka(broker, "ops"), "events", "orders-rdk", 6)
    consumer = Consumer({**_rdkafka(broker, "alice"), "group.id": "orders-b",
                         "session.timeout.ms": 6000})
    try:
        consumer.subscribe(["events"])
        codes = set()
        deadline = time.monotonic() + 20
        while KafkaError.GROUP_AUTHORIZATION_FAILED not in codes and time.monotonic() < deadline:
            msg = consumer.poll(0.3)
            if msg is not None and msg.error() is not None:
                codes.add(msg.error().code())
        assert KafkaError.GROUP_AUTHORIZATION_FAILED in codes
    finally:
        consumer.close()


# -- kgroup's client --------------------------------------------------------------------------------

def _kgroup(broker, tmp_path, user, *args):
    config = tmp_path / f"{user}.properties"
    config.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
                      f"sasl.username={user}\nsasl.password={USERS[user]}\n")
    return subprocess.run([PYTHON, "-m", "kgroup.commands.cli", *args, "--bootstrap-server", broker.sasl,
                           "--command-config", str(config)], capture_output=True, text=True,
                          cwd=str(ROOT), timeout=60)


def _one_line(result, status, line):
    assert (result.returncode, result.stderr) == (status, f"{line}\n")


def test_kgroup_describe_wait_and_list_as_a_describe_only_user(broker, tmp_path):
    with client_of(broker, "admin") as admin:
        commit(admin, "orders-a", {"events": [0]})
    _one_line(_kgroup(broker, tmp_path, "alice", "describe", "orders-b"), 1,
              "kgroup describe: not authorized to Describe group orders-b")
    _one_line(_kgroup(broker, tmp_path, "alice", "describe", "orders-a", "orders-b"), 3,
              "kgroup describe: not authorized to Describe group orders-b")
    assert _kgroup(broker, tmp_path, "alice", "describe", "orders-a", "--offsets").returncode == 0
    _one_line(_kgroup(broker, tmp_path, "alice", "wait", "orders-b", "--state", "Empty",
                      "--timeout", "5"), 1, "kgroup wait: not authorized to Describe group orders-b")
    listed = _kgroup(broker, tmp_path, "alice", "list", "-o", "json")
    assert listed.returncode == 0 and '"orders-a"' in listed.stdout and "billing" not in listed.stdout


def test_kgroup_writes_name_the_operation_refused(broker, tmp_path):
    _one_line(_kgroup(broker, tmp_path, "alice", "delete", "orders-a"), 1,
              "kgroup delete: not authorized to Delete group orders-a")
    refused = _kgroup(broker, tmp_path, "alice", "reset-offsets", "orders-a", "--topic", "events", "--to-earliest",
                      "--execute")
    assert (refused.returncode, refused.stderr.splitlines()) == (1, [      # the table's closing line, then why
        "group orders-a (Empty): nothing committed: every partition failed",
        "kgroup reset-offsets: not authorized to Read group orders-a"])
    _one_line(_kgroup(broker, tmp_path, "alice", "reset-offsets", "orders-a", "--topic", "events",
                      "--to-earliest", "--execute", "-o", "json"), 1,
              "kgroup reset-offsets: not authorized to Read group orders-a")
    _one_line(_kgroup(broker, tmp_path, "alice", "delete-offsets", "orders-a", "--topic", "events"), 1,
              "kgroup delete-offsets: not authorized to Delete group orders-a")
    _one_line(_kgroup(broker, tmp_path, "bob", "delete-offsets", "orders-c", "--topic", "events",
                      "--topic", "secret"), 3,
              "kgroup delete-offsets: not authorized to Read topic secret")


def _static_member_of_orders_a(broker, instance_id):
    """A static member joined by ops (its session 30 s): it stays until removed."""
    with client_of(broker, "ops") as ops:
        joined = ops.send(JoinGroupRequest(version=5, group_id="orders-a", session_timeout_ms=30000,
                                           rebalance_timeout_ms=10000, member_id="",
                                           group_instance_id=instance_id, protocol_type="consumer",
                                           protocols=[("range", b"")]))
        assert joined.error_code == NONE


def test_kgroup_remove_members_needs_read_on_the_group(broker, tmp_path):
    _static_member_of_orders_a(broker, "i-1")
    _one_line(_kgroup(broker, tmp_path, "alice", "remove-members", "orders-a", "--all"), 1,
              "kgroup remove-members: not authorized to Read group orders-a")
    removed = _kgroup(broker, tmp_path, "ops", "remove-members", "orders-a", "--instance-id", "i-1")
    assert removed.returncode == 0, removed.stderr


def test_dry_runs_know_the_rights_the_real_runs_need(broker, tmp_path):
    """Each dry run ends as its real run would for want of a right: the same exit status and the same
    line, said as a prediction; a user with the rights gets a clean plan."""
    _static_member_of_orders_a(broker, "i-2")
    cases = [
        ("alice", ["delete", "orders-a"], 1, "kgroup delete: {}not authorized to Delete group orders-a"),
        ("alice", ["reset-offsets", "orders-a", "--topic", "events", "--to-earliest"], 1,
         "kgroup reset-offsets: {}not authorized to Read group orders-a"),
        ("alice", ["delete-offsets", "orders-a", "--topic", "events"], 1,
         "kgroup delete-offsets: {}not authorized to Delete group orders-a"),
        ("bob", ["delete-offsets", "orders-c", "--topic", "events", "--topic", "secret"], 3,
         "kgroup delete-offsets: {}not authorized to Read topic secret"),
        ("alice", ["remove-members", "orders-a", "--all"], 1,
         "kgroup remove-members: {}not authorized to Read group orders-a"),
    ]
    for user, args, status, line in cases:
        dry = _kgroup(broker, tmp_path, user, *args, "--dry-run")
        assert (dry.returncode, dry.stderr.splitlines()[-1:]) == (status, [line.format("would be refused: ")]), \
            (args, dry.stderr)
        if args[0] in ("delete", "remove-members"):       # the real run, for the same answer
            real = _kgroup(broker, tmp_path, user, *args)
            assert (real.returncode, real.stderr.splitlines()[-1:]) == (status, [line.format("")]), args
    shown = _kgroup(broker, tmp_path, "alice", "remove-members", "orders-a", "--all", "--dry-run", "-o", "json")
    assert json.loads(shown.stdout)["refused"] == "not authorized to Read group orders-a"
    planned = _kgroup(broker, tmp_path, "ops", "remove-members", "orders-a", "--instance-id", "i-2", "--dry-run",
                      "-o", "json")
    assert planned.returncode == 0 and json.loads(planned.stdout)["refused"] is None, planned.stderr
    offsets = _kgroup(broker, tmp_path, "bob", "delete-offsets", "orders-c", "--topic", "events", "--dry-run",
                      "-o", "json")
    assert offsets.returncode == 0 and [r["error"] for r in json.loads(offsets.stdout)] == [None, None]


def test_serve_refuses_a_bad_acl_with_usage_status(tmp_path):
    result = subprocess.run([PYTHON, "-m", "kgroup.commands.cli", "serve", "--log-dir", str(tmp_path),
                             "--acl", "User:ops:Reed:Group:x"], capture_output=True, text=True,
                            cwd=str(ROOT), timeout=60)
    assert result.returncode == 2
    assert "unknown operation 'Reed'" in result.stderr and not list(tmp_path.iterdir())
