"""`kgroup simulate` runs on the broker's own settings: `--config` as `kgroup serve --config` takes it,
Kafka's defaults and bounds (a consumer-protocol member heartbeats every 5 s, the broker's
group.consumer.heartbeat.interval.ms), a session timeout the broker would refuse refused up front,
and every setting the run assumed in the JSON document's `config`."""

import json

import pytest
from click.testing import CliRunner
from kafka.protocol.consumer.group import JoinGroupRequest

from kgroup.commands.cli import cli
from kgroup.coordinator import GroupCoordinator
from kgroup.coordinator.config import CoordinatorConfig
from kgroup.kafka_errors import INVALID_SESSION_TIMEOUT
from kgroup.sim import group_config
from kgroup.sim.model import ParameterError, SimParams
from kgroup.sim.scenarios import Run, run_scenario


def invoke(*args):
    return CliRunner().invoke(cli, ["simulate", *args], catch_exceptions=False)


def refusal(*args) -> str:
    """The one line a usage error prints (exit 2, nothing on stdout)."""
    result = invoke(*args, "-o", "json")
    assert result.exit_code == 2 and result.stdout == "", result.output
    [line] = result.stderr.splitlines()
    assert line.startswith("kgroup simulate: ") and "Traceback" not in result.output
    return line.removeprefix("kgroup simulate: ")


def document(*args) -> dict:
    result = invoke(*args, "-o", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# ---- the consumer protocol on the broker's settings -------------------------------------------
def test_a_consumer_protocol_member_heartbeats_at_the_brokers_default_5000_a_classic_one_at_3000():
    consumer = Run(SimParams(protocol="consumer"), "rolling-bounce")
    classic = Run(SimParams(protocol="classic"), "rolling-bounce")
    assert (consumer.config().heartbeat_interval_ms, consumer.config().session_timeout_ms) == (5000, 45000)
    assert (classic.config().heartbeat_interval_ms, classic.config().session_timeout_ms) == (3000, 45000)
    roll = Run(SimParams(), "upgrade-protocol")        # both: each its own
    assert roll.config("classic").heartbeat_interval_ms == 3000
    assert roll.config("consumer").heartbeat_interval_ms == 5000
    assert document("rolling-bounce", "--protocol", "consumer")["config"]["broker"][
        "group.consumer.heartbeat.interval.ms"] == 5000


def test_a_restart_that_outlasts_a_session_counted_from_the_last_5_s_heartbeat_bumps_epochs():
    """A static member's session runs from its last heartbeat: with heartbeats every 5 s a 41 s restart
    outlasts some 45 s sessions (issue 27: 200 members over state:600 showed no bump at 3 s)."""
    fleet = ("rolling-bounce", "--members", "20", "--topic", "state:60", "--protocol", "consumer",
             "--restart-ms", "41000")
    default = document(*fleet)
    assert (default["rebalances"], default["partitions_moved"]) == (14, 15)
    every_3_s = document(*fleet, "--config", "group.consumer.min.heartbeat.interval.ms=3000",
                         "--config", "group.consumer.heartbeat.interval.ms=3000")
    assert (every_3_s["rebalances"], every_3_s["partitions_moved"]) == (0, 0)
    assert every_3_s["config"]["broker"]["group.consumer.heartbeat.interval.ms"] == 3000


def test_config_heartbeat_interval_takes_effect_in_the_coordinators_answers():
    r = Run(SimParams(protocol="consumer",
                      broker_config=(("group.consumer.heartbeat.interval.ms", 12_000),)), "rolling-bounce")
    assert r.coordinator.config.group_consumer_heartbeat_interval_ms == 12_000
    assert r.config().heartbeat_interval_ms == 12_000


@pytest.mark.parametrize("args, expected", [
    (["--session-timeout-ms", "10000"],
     "--session-timeout-ms 10000: consumer-protocol members take it as the broker's "
     "group.consumer.session.timeout.ms, which must be at least group.consumer.min.session.timeout.ms "
     "(45000), as a broker requires; lower that with --config group.consumer.min.session.timeout.ms=10000"),
    (["--heartbeat-interval-ms", "3000"],
     "--heartbeat-interval-ms 3000: consumer-protocol members take it as the broker's "
     "group.consumer.heartbeat.interval.ms, which must be at least group.consumer.min.heartbeat.interval.ms "
     "(5000), as a broker requires; lower that with --config group.consumer.min.heartbeat.interval.ms=3000"),
    (["--session-timeout-ms", "70000"],
     "--session-timeout-ms 70000: consumer-protocol members take it as the broker's "
     "group.consumer.session.timeout.ms, which must be at most group.consumer.max.session.timeout.ms "
     "(60000), as a broker requires; raise that with --config group.consumer.max.session.timeout.ms=70000"),
])
def test_a_consumer_protocol_value_outside_the_brokers_bounds_is_refused_naming_the_bound(args, expected):
    assert refusal("rolling-bounce", "--protocol", "consumer", *args) == expected


def test_a_value_beyond_kafkas_int_is_named_as_such_not_as_out_of_the_brokers_bounds():
    assert refusal("rolling-bounce", "--protocol", "consumer", "--session-timeout-ms", "99999999999") == (
        "--session-timeout-ms must be at most 2147483647 (got 99999999999)")


def test_a_consumer_protocol_value_within_the_bounds_is_the_brokers():
    doc = document("rolling-bounce", "--protocol", "consumer", "--session-timeout-ms", "10000",
                   "--heartbeat-interval-ms", "2000", "--config", "group.consumer.min.session.timeout.ms=10000",
                   "--config", "group.consumer.min.heartbeat.interval.ms=1000")
    broker = doc["config"]["broker"]
    assert (broker["group.consumer.session.timeout.ms"], broker["group.consumer.heartbeat.interval.ms"]) == (10000, 2000)
    assert doc["config"]["classic"] is None


def test_the_option_and_config_for_the_same_broker_setting_must_agree():
    assert refusal("rolling-bounce", "--protocol", "consumer", "--session-timeout-ms", "50000",
                   "--config", "group.consumer.session.timeout.ms=45000").startswith(
        "--session-timeout-ms 50000 and --config group.consumer.session.timeout.ms=45000 disagree")
    assert refusal("rolling-bounce", "--initial-rebalance-delay-ms", "0", "--config",
                   "group.initial.rebalance.delay.ms=100").startswith(
        "--initial-rebalance-delay-ms 0 and --config group.initial.rebalance.delay.ms=100 disagree")
    assert refusal("upgrade-protocol", "--migration-policy", "upgrade", "--config",
                   "group.consumer.migration.policy=disabled").startswith("--migration-policy upgrade and --config")
    agreed = document("rolling-bounce", "--initial-rebalance-delay-ms", "0", "--config",
                      "group.initial.rebalance.delay.ms=0")
    assert agreed["config"]["broker"]["group.initial.rebalance.delay.ms"] == 0


def test_a_protocol_roll_takes_the_classic_session_from_the_option_and_the_consumer_one_from_config():
    """Classic consumers restart from 8 s sessions to the broker's 45 s: --config keeps the option the
    classic consumers' alone; without it, 8 s would be the consumer-protocol members' too, below the
    broker's minimum."""
    assert "group.consumer.min.session.timeout.ms (45000)" in refusal(
        "upgrade-protocol", "--session-timeout-ms", "8000")
    doc = document("upgrade-protocol", "--session-timeout-ms", "8000",
                   "--config", "group.consumer.session.timeout.ms=45000")
    assert doc["config"]["classic"]["session.timeout.ms"] == 8000
    assert doc["config"]["broker"]["group.consumer.session.timeout.ms"] == 45000
    assert doc["settled"] and doc["errors"] == []


def test_a_migration_policy_given_by_config_governs_the_roll():
    result = invoke("upgrade-protocol", "--config", "group.consumer.migration.policy=disabled")
    assert result.exit_code == 1 and "group.consumer.migration.policy=disabled" in result.stderr


def test_a_server_assignor_the_broker_does_not_offer_is_refused():
    assert refusal("rolling-bounce", "--protocol", "consumer", "--server-assignor", "range", "--config",
                   "group.consumer.assignors=uniform") == (
        "--server-assignor range is not among the broker's group.consumer.assignors (uniform): a heartbeat "
        "asking for it would fail with UNSUPPORTED_ASSIGNOR (choose one with --server-assignor)")


# ---- the classic protocol: the JoinGroup's own rule, up front -------------------------------------
def test_a_classic_session_timeout_below_the_brokers_minimum_is_refused_before_the_run():
    assert refusal("rolling-bounce", "--session-timeout-ms", "5000") == (
        "--session-timeout-ms 5000 is below the broker's group.min.session.timeout.ms (6000): a classic "
        "consumer's JoinGroup would fail with INVALID_SESSION_TIMEOUT; lower that with --config "
        "group.min.session.timeout.ms=5000")
    assert "above the broker's group.max.session.timeout.ms (1800000)" in refusal(
        "crash", "--session-timeout-ms", "1800001")
    assert refusal("rolling-bounce", "--compare", "protocol", "--session-timeout-ms", "5000",   # its classic run
                   "--heartbeat-interval-ms", "1000", "--config", "group.consumer.min.session.timeout.ms=5000",
                   "--config", "group.consumer.min.heartbeat.interval.ms=1000").startswith(
        "--session-timeout-ms 5000 is below the broker's group.min.session.timeout.ms (6000)")
    lowered = document("rolling-bounce", "--session-timeout-ms", "5000", "--heartbeat-interval-ms", "1000",
                       "--config", "group.min.session.timeout.ms=5000")
    assert lowered["settled"] and lowered["config"]["classic"]["session.timeout.ms"] == 5000


@pytest.mark.parametrize("bounds", [{}, {"group.min.session.timeout.ms": 1000, "group.max.session.timeout.ms": 9000}])
@pytest.mark.parametrize("session_ms", [999, 1000, 5999, 6000, 9000, 9001, 1_800_000, 1_800_001])
def test_the_up_front_check_is_the_join_groups_rule(bounds, session_ms):
    """Refused before the run exactly when the coordinator answers the JoinGroup INVALID_SESSION_TIMEOUT."""
    config = CoordinatorConfig(bounds)
    coordinator = GroupCoordinator(config=bounds)
    join = JoinGroupRequest(version=5, group_id="g", session_timeout_ms=session_ms, rebalance_timeout_ms=300_000,
                            member_id="", group_instance_id="i0", protocol_type="consumer",
                            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")])
    answer = coordinator.handle(join, client_id="c0", client_host="/127.0.0.1").response  # None: parked, accepted
    params = SimParams(session_timeout_ms=session_ms, heartbeat_interval_ms=500)
    try:
        group_config.check(params, config, {"classic"})
        refused = False
    except ParameterError:
        refused = True
    assert refused == (answer is not None and answer.error_code == INVALID_SESSION_TIMEOUT)


# ---- --config: serve's parsing and refusals -----------------------------------------------------
@pytest.mark.parametrize("entry", [
    "group.no.such.setting=1",
    "group.consumer.heartbeat.interval.ms=abc",
    "group.consumer.session.timeout.ms=10000",         # below group.consumer.min.session.timeout.ms
    "group.max.size=0",
    "group.consumer.migration.policy=sideways",
    "group.consumer.assignors=nosuch",
    "no-equals-sign",
])
def test_a_config_entry_is_refused_exactly_as_serve_refuses_it(entry, tmp_path):
    served = CliRunner().invoke(cli, ["serve", "--log-dir", str(tmp_path / "logs"), "--config", entry])
    assert served.exit_code == 2
    [serve_line] = served.stderr.splitlines()
    assert refusal("rolling-bounce", "--config", entry) == serve_line.removeprefix("kgroup serve: ")


@pytest.mark.parametrize("entry", ["num.partitions=3", "offsets.retention.minutes=10", "ssl.client.auth=none"])
def test_a_setting_serve_takes_that_no_simulation_reads_is_refused(entry):
    key = entry.split("=")[0]
    assert refusal("rolling-bounce", "--config", entry) == (
        f"config {key}: not a setting kgroup simulate uses (the simulated broker takes the group "
        f"coordinator's group.* settings)")


# ---- the `config` field -----------------------------------------------------------------------
def test_the_json_document_prints_every_setting_the_run_assumed():
    classic = document("rolling-bounce", "--assignor", "cooperative-sticky", "--rebalance-timeout-ms", "60000",
                       "--config", "group.max.size=100")["config"]
    assert set(classic) == {"broker", "classic", "consumer"}
    assert classic["classic"] == {"session.timeout.ms": 45000, "heartbeat.interval.ms": 3000,
                                  "max.poll.interval.ms": 60000,
                                  "partition.assignment.strategy": "cooperative-sticky"}
    assert classic["consumer"] is None
    broker = classic["broker"]
    assert all(key.startswith("group.") for key in broker)
    assert broker["group.max.size"] == 100
    assert {k: broker[k] for k in ("group.min.session.timeout.ms", "group.max.session.timeout.ms",
                                   "group.initial.rebalance.delay.ms", "group.consumer.session.timeout.ms",
                                   "group.consumer.min.session.timeout.ms",
                                   "group.consumer.max.session.timeout.ms",
                                   "group.consumer.heartbeat.interval.ms",
                                   "group.consumer.min.heartbeat.interval.ms",
                                   "group.consumer.max.heartbeat.interval.ms",
                                   "group.consumer.assignors", "group.consumer.migration.policy")} == {
        "group.min.session.timeout.ms": 6000, "group.max.session.timeout.ms": 1_800_000,
        "group.initial.rebalance.delay.ms": 3000, "group.consumer.session.timeout.ms": 45000,
        "group.consumer.min.session.timeout.ms": 45000, "group.consumer.max.session.timeout.ms": 60000,
        "group.consumer.heartbeat.interval.ms": 5000, "group.consumer.min.heartbeat.interval.ms": 5000,
        "group.consumer.max.heartbeat.interval.ms": 15000, "group.consumer.assignors": ["uniform", "range"],
        "group.consumer.migration.policy": "bidirectional"}
    consumer = document("scale-up", "--protocol", "consumer", "--server-assignor", "range")["config"]
    assert consumer["classic"] is None
    assert consumer["consumer"] == {"max.poll.interval.ms": 300000, "group.remote.assignor": "range"}
    roll = document("downgrade-protocol", "--migration-policy", "downgrade")["config"]
    assert roll["classic"] is not None and roll["consumer"] is not None
    assert roll["broker"]["group.consumer.migration.policy"] == "downgrade"
    compared = json.loads(invoke("rolling-bounce", "--compare", "protocol", "-o", "json").stdout)
    assert [(v["config"]["classic"] is None, v["config"]["consumer"] is None) for v in compared] == [
        (False, True), (True, False)]


def test_the_library_result_carries_the_config_too():
    r = run_scenario("scale-up", SimParams(broker_config=(("group.initial.rebalance.delay.ms", 0),)))
    assert r.config["broker"]["group.initial.rebalance.delay.ms"] == 0
    assert r.as_dict()["config"] == r.config


def test_a_bad_broker_config_given_to_the_library_is_a_parameter_error():
    with pytest.raises(ParameterError, match="--config: group.consumer.min.heartbeat.interval.ms"):
        run_scenario("rolling-bounce", SimParams(protocol="consumer",
                                                 broker_config=(("group.consumer.heartbeat.interval.ms", 1000),)))
