"""The group.consumer.* coordinator settings: Kafka's names, defaults and min/max checks."""

from __future__ import annotations

import pytest

from kgroup.coordinator.config import CoordinatorConfig, CoordinatorConfigError


def test_defaults_are_kafkas():
    config = CoordinatorConfig()
    assert config.group_consumer_session_timeout_ms == 45_000
    assert config.group_consumer_min_session_timeout_ms == 45_000
    assert config.group_consumer_max_session_timeout_ms == 60_000
    assert config.group_consumer_heartbeat_interval_ms == 5000
    assert config.group_consumer_min_heartbeat_interval_ms == 5000
    assert config.group_consumer_max_heartbeat_interval_ms == 15_000
    assert config.group_consumer_max_size == 2**31 - 1
    assert config.group_consumer_assignors == ("uniform", "range")
    assert config.group_consumer_migration_policy == "bidirectional"


def test_lowered_minimums_allow_short_timeouts():
    config = CoordinatorConfig({
        "group.consumer.min.session.timeout.ms": "1000", "group.consumer.session.timeout.ms": "2000",
        "group.consumer.min.heartbeat.interval.ms": 100, "group.consumer.heartbeat.interval.ms": 500})
    assert (config.group_consumer_session_timeout_ms, config.group_consumer_heartbeat_interval_ms) == (2000, 500)


def test_assignors_accept_names_and_kafka_class_names():
    config = CoordinatorConfig({"group.consumer.assignors":
                                "org.apache.kafka.coordinator.group.assignor.RangeAssignor, uniform"})
    assert config.group_consumer_assignors == ("range", "uniform")


@pytest.mark.parametrize("values, message", [
    ({"group.consumer.session.timeout.ms": 30_000}, "group.consumer.min.session.timeout.ms (45000) must not exceed"),
    ({"group.consumer.session.timeout.ms": 61_000}, "must not exceed group.consumer.max.session.timeout.ms"),
    ({"group.consumer.max.session.timeout.ms": 40_000}, "must not exceed group.consumer.max.session.timeout.ms"),
    ({"group.consumer.heartbeat.interval.ms": 16_000}, "must not exceed group.consumer.max.heartbeat.interval.ms"),
    ({"group.consumer.heartbeat.interval.ms": 4000}, "group.consumer.min.heartbeat.interval.ms (5000)"),
    ({"group.consumer.min.session.timeout.ms": 1000, "group.consumer.session.timeout.ms": 5000},
     "group.consumer.heartbeat.interval.ms (5000) must be lower than group.consumer.session.timeout.ms"),
    ({"group.consumer.max.size": 0}, "group.consumer.max.size: 0 is out of range"),
    ({"group.consumer.migration.policy": "sideways"}, "is not one of bidirectional, upgrade"),
    ({"group.consumer.assignors": " , "}, "expected at least one assignor name"),
    ({"group.consumer.assignors": "range,range"}, "names an assignor twice"),
    ({"group.consumer.sesion.timeout.ms": 1}, "unknown coordinator setting"),
])
def test_bad_values_name_the_key(values, message):
    with pytest.raises(CoordinatorConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        CoordinatorConfig(values)


def test_a_number_for_the_assignor_list_is_a_config_error_not_a_crash():
    # serve parses numeric --config values to ints before the coordinator sees them
    with pytest.raises(CoordinatorConfigError, match="group.consumer.assignors"):
        CoordinatorConfig({"group.consumer.assignors": 5})


@pytest.mark.parametrize("raw, policy", [("DOWNGRADE", "downgrade"), (" Upgrade ", "upgrade")])
def test_the_migration_policy_is_case_insensitive_as_kafkas_validator(raw, policy):
    """Kafka's GroupCoordinatorConfig checks it with CaseInsensitiveValidString over the
    ConsumerGroupMigrationPolicy names (ConfigDef trims strings); any other value stops the broker."""
    assert CoordinatorConfig({"group.consumer.migration.policy": raw}).group_consumer_migration_policy == policy
