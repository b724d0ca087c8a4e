"""A secured real Kafka 4.4 node for the side-by-side tests with a secured `kgroup serve`
(tests/live/test_kafka_security*.py): a SASL_SSL listener (SCRAM users created by the storage tool's
``--add-scram`` at format time, a PEM keystore) next to PLAINTEXT, Kafka's StandardAuthorizer and
``super.users``; and the client properties file of each user."""

from __future__ import annotations

import pathlib

import pytest

from helpers.kafka_cluster import KafkaCluster, free_port
from helpers.secure_clients import client_settings


class Secured:
    """One secured broker: `sasl` (the SASL_SSL bootstrap), `plain` (PLAINTEXT, a super user),
    `name` (kafka or serve) and the properties file of each user."""

    def __init__(self, name, sasl, plain, configs):
        self.name, self.sasl, self.plain, self.configs = name, sasl, plain, configs


def client_configs(where: pathlib.Path, ca: str, users: dict, mechanism: str,
                   strangers: dict | None = None, wrong_password_for: str | None = None) -> dict:
    """{user: path of its SASL_SSL properties file} for `users` and `strangers` (no such user on
    the broker); with `wrong_password_for`, also `<user>-wrong` with a wrong password."""
    configs = {}
    for user, password in {**users, **(strangers or {})}.items():
        path = where / f"{user}.properties"
        path.write_text(client_settings("SASL_SSL", mechanism, ca, user, password)[0])
        configs[user] = str(path)
    if wrong_password_for is not None:
        wrong = where / f"{wrong_password_for}-wrong-password.properties"
        wrong.write_text(client_settings("SASL_SSL", mechanism, ca, wrong_password_for, "not-it")[0])
        configs[f"{wrong_password_for}-wrong"] = str(wrong)
    return configs


def start_secured_kafka(where: pathlib.Path, certs, users: dict, mechanism: str,
                        super_users: str = "User:admin;User:ANONYMOUS", settings: dict | None = None,
                        loggers: dict | None = None) -> KafkaCluster:
    """One KRaft node with a SASL_SSL listener (`cluster.sasl`) beside PLAINTEXT (`cluster.bootstrap`),
    `users` as SCRAM credentials of `mechanism`, the StandardAuthorizer and `super_users`; more
    broker `settings` and log4j `loggers` levels if given. Fails the test if it does not start."""
    from helpers.kafka_jars import fetch, require_java

    require_java()
    port = free_port()
    settings = {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": super_users,
        "sasl.enabled.mechanisms": mechanism,
        f"listener.name.sasl_ssl.{mechanism.lower()}.sasl.jaas.config":
            "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": certs.server,
        **(settings or {}),
    }
    scram = [arg for user, password in users.items()
             for arg in ("--add-scram", f"{mechanism}=[name={user},password={password}]")]
    cluster = KafkaCluster(fetch(), where, brokers=1, settings=settings,
                           listeners={"SASL_SSL": lambda node: f"127.0.0.1:{port}"},
                           security_protocols={"SASL_SSL": "SASL_SSL"}, format_args=scram, loggers=loggers)
    try:
        cluster.start()
    except Exception as exc:  # noqa: BLE001 - said in the failure
        cluster.stop()
        pytest.fail(f"the secured Kafka did not start ({str(exc)[-800:]}); its logs are in {where}",
                    pytrace=False)
    cluster.sasl = f"127.0.0.1:{port}"
    return cluster
