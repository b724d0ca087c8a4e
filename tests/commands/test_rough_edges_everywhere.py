"""Issue 17's rough edges held for every cluster command, not only the one a first test used: the
usage errors past parsing exit 2 in one line, and a refused connection is said at once (except by
`wait`, which rides out a restarting broker)."""

import time

import pytest
from click.testing import CliRunner

from kgroup.commands.cli import cli

COMMANDS = {
    "list": [], "describe": ["g"], "remove-members": ["g", "--instance-id", "x"],
    "reset-offsets": ["g", "--all-topics", "--to-earliest"], "delete-offsets": ["g", "--topic", "t"],
    "delete": ["g"], "wait": ["g", "--state", "Empty"], "decode-offsets": [],
}
USAGE_ERRORS = [
    ([], "no bootstrap server"),
    (["--bootstrap-server", "nohost"], "bad bootstrap server 'nohost': expected HOST:PORT"),
    (["--bootstrap-server", "127.0.0.1:1", "--command-config", "/nonexistent.properties"],
     "/nonexistent.properties: no such file"),
]


def run(command, *args):
    return CliRunner().invoke(cli, [command, *COMMANDS[command], *args], env={"KGROUP_BOOTSTRAP_SERVER": ""})


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("args, message", USAGE_ERRORS)
def test_usage_errors_exit_2_in_one_line_everywhere(command, args, message):
    result = run(command, *args)
    assert result.exit_code == 2, result.output
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith(f"kgroup {command}: "), result.stderr
    if command == "decode-offsets" and not args:
        message = "give PATH... (segment files, partition or log directories, - for stdin) or --bootstrap-server"
    assert message in result.stderr


@pytest.mark.parametrize("command", sorted(set(COMMANDS) - {"wait"}))
@pytest.mark.parametrize("bootstrap", ["127.0.0.1:1", "127.0.0.1:1,", ",127.0.0.1:1,,"])
def test_a_refused_connection_is_said_at_once_everywhere(command, bootstrap):
    # empty entries of the list are dropped (as Kafka's clients drop them), not echoed as "…:1,:"
    started = time.monotonic()
    result = run(command, "--bootstrap-server", bootstrap, "--timeout", "30")
    assert result.exit_code == 1
    assert result.stderr == f"kgroup {command}: connection refused by 127.0.0.1:1: no Kafka broker listens there\n"
    assert time.monotonic() - started < 10   # not after --timeout


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("bootstrap, message", [
    (",", "bad bootstrap server ',': no HOST:PORT in it"),
    ("127.0.0.1:1,,nohost", "bad bootstrap server 'nohost': expected HOST:PORT[,HOST:PORT...]"),
    ("127.0.0.1:", "bad bootstrap server '127.0.0.1:': expected HOST:PORT[,HOST:PORT...]"),
    ("127.0.0.1:\u00b2", "bad bootstrap server '127.0.0.1:\u00b2': expected HOST:PORT[,HOST:PORT...]"),  # a digit, not decimal
])
def test_a_malformed_bootstrap_list_is_a_usage_error_naming_the_entry(command, bootstrap, message):
    result = run(command, "--bootstrap-server", bootstrap)
    assert result.exit_code == 2, result.output
    assert result.stderr == f"kgroup {command}: {message}\n"


@pytest.mark.parametrize("command, args", [("list", []), ("wait", ["g"])])
@pytest.mark.parametrize("state", ["bogus", "Bogus"])
def test_an_unknown_state_is_one_wording_listing_the_states(command, args, state):
    result = CliRunner().invoke(cli, [command, *args, "--state", state, "--bootstrap-server", "127.0.0.1:1"])
    assert result.exit_code == 2, result.output
    assert result.stderr == (f"kgroup {command}: Invalid value for '--state': '{state}' is not a group state; "
                             "choose from Stable, PreparingRebalance, CompletingRebalance, Empty, Dead, Assigning, "
                             "Reconciling, NotReady\n")


# An operator's client.properties, written for Kafka's tools and clients (issue 26 point 3).
OPERATORS_PROPERTIES = """# kafka-consumer-groups.sh --command-config
security.protocol=PLAINTEXT
retries=3
acks: all
auto.offset.reset earliest
key.deserializer=org.apache.kafka.common.serialization.StringDeserializer
ssl.truststore.password=changeit
retries=5
"""


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_operators_client_properties_is_read_and_the_keys_kgroup_does_not_use_are_warnings(command, tmp_path):
    """Each key kgroup does not use was an error stopping the command (`unsupported client property
    'retries'`, exit 1); Kafka's tools warn and go on: one line per key, then the command runs (here
    as far as the refused connection, or wait's timeout)."""
    props = tmp_path / "client.properties"
    props.write_text(OPERATORS_PROPERTIES)
    result = run(command, "--bootstrap-server", "127.0.0.1:1", "--command-config", str(props), "--timeout", "1")
    assert result.exit_code == 1, result.output
    lines = result.stderr.splitlines()
    assert lines[:5] == [f"kgroup {command}: ignoring client property {key!r} (not used by kgroup)"
                         for key in ("retries", "acks", "auto.offset.reset", "key.deserializer",
                                     "ssl.truststore.password")]
    assert len(lines) == 6 and ("connection refused by 127.0.0.1:1" in lines[5] or "within 1s" in lines[5])


@pytest.mark.parametrize("text, message", [
    ("security.protocol=TLS\n", "client.properties:1: security.protocol=TLS: not one of PLAINTEXT, SSL, "
                                "SASL_PLAINTEXT, SASL_SSL"),
    ("retries=3\nssl.truststore.location=/etc/kafka/truststore.jks\n",
     "client.properties:2: ssl.truststore.location=/etc/kafka/truststore.jks: looks like a Java keystore; kgroup "
     "needs PEM files (ssl.ca.location / ssl.certificate.location / ssl.key.location)"),
    ("# ok\n= orphan value\n", "client.properties:2: no key before '=' in '= orphan value': expected key=value"),
])
@pytest.mark.parametrize("command", ["describe", "decode-offsets"])
def test_a_value_kgroup_cannot_honour_and_a_malformed_line_are_usage_errors(command, text, message, tmp_path):
    props = tmp_path / "client.properties"
    props.write_text(text)
    result = run(command, "--bootstrap-server", "127.0.0.1:1", "--command-config", str(props))
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines()[-1] == f"kgroup {command}: {tmp_path}/{message}"


def test_reset_offsets_from_a_file_that_is_not_text_is_one_line(tmp_path):
    binary = tmp_path / "offsets.csv"
    binary.write_bytes(b"\xff\xfe\x00orders,0,5\n")
    result = CliRunner().invoke(cli, ["reset-offsets", "g", "--from-file", str(binary),
                                      "--bootstrap-server", "127.0.0.1:1"])
    assert result.exit_code == 2
    assert result.stderr == f"kgroup reset-offsets: cannot read --from-file {binary}: not UTF-8 text\n"


def test_a_reset_to_a_time_before_1970_asks_for_timestamp_0_not_a_special_value():
    from kgroup.commands.reset_offsets import _target

    # 1969-12-31T23:59:59.999Z is -1 ms: ListOffsets would read it as "latest"
    assert _target((), None, None, "1969-12-31T23:59:59.999Z", None, None).value == 0
    assert _target((), None, None, None, "P30000D", None).value == 0


CLICK_USAGE_ERRORS = {
    "no such option": (["--no-such-option"], "No such option '--no-such-option'"),
    "bad choice": (["-o", "yaml"], "Invalid value for '-o' / '--output': 'yaml' is not one of"),
}


@pytest.mark.parametrize("command", sorted(COMMANDS) + ["simulate", "serve", "demo", "simulate connect"])
@pytest.mark.parametrize("case", sorted(CLICK_USAGE_ERRORS))
def test_errors_click_finds_while_parsing_are_one_line_too(command, case):
    """Not click's usage block, help hint and `Error:`: `kgroup COMMAND: message`, exit 2."""
    args, message = CLICK_USAGE_ERRORS[case]
    result = CliRunner().invoke(cli, [*command.split(), *args])
    assert result.exit_code == 2, result.output
    assert result.stderr == f"kgroup {command}: {result.stderr.split(': ', 1)[1]}" and message in result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr


def test_a_missing_choice_argument_and_an_unknown_command_are_one_line():
    missing = CliRunner().invoke(cli, ["simulate"])
    assert missing.exit_code == 2
    assert missing.stderr.startswith("kgroup simulate: Missing argument 'SCENARIO'. Choose from: rolling-bounce, ")
    assert len(missing.stderr.splitlines()) == 1
    unknown = CliRunner().invoke(cli, ["describ"])
    assert unknown.exit_code == 2 and unknown.stderr.startswith("kgroup: No such command 'describ'.")


@pytest.mark.parametrize("scope", [["--topic", "orders"], ["--all-topics"]])
def test_reset_offsets_from_a_file_with_a_topic_scope_is_a_usage_error_not_a_traceback(tmp_path, scope):
    """The file's partitions are the selection: a --topic partition without a line in the file has
    no new offset (it used to end in a TypeError)."""
    plan = tmp_path / "plan.csv"
    plan.write_text("orders,0,5\n")
    result = CliRunner().invoke(cli, ["reset-offsets", "g", "--from-file", str(plan), *scope,
                                      "--bootstrap-server", "127.0.0.1:1"])
    assert result.exit_code == 2, result.output
    assert "--from-file selects the file's partitions: it cannot be combined with --topic or --all-topics" \
        in result.stderr
    assert "Traceback" not in result.stderr


def test_reset_offsets_from_another_groups_export_is_a_usage_error(tmp_path):
    plan = tmp_path / "plan.csv"
    plan.write_text("other-app,orders,0,5\n")
    result = CliRunner().invoke(cli, ["reset-offsets", "g", "--from-file", str(plan),
                                      "--bootstrap-server", "127.0.0.1:1"])
    assert result.exit_code == 2
    assert result.stderr == (f"kgroup reset-offsets: --from-file {plan}: no line for group 'g' "
                             "(the file has lines for other-app)\n")


@pytest.mark.parametrize("command, option", [(c, "--timeout") for c in sorted(COMMANDS)]
                         + [("wait", "--interval"), ("remove-members", "--wait-timeout")])
@pytest.mark.parametrize("value", ["nan", "inf"])
def test_a_duration_that_is_not_finite_is_a_usage_error_not_a_traceback(command, option, value):
    """`nan` and `inf` parse as floats and passed the lower bound, then failed in a socket or a sleep."""
    result = run(command, "--bootstrap-server", "127.0.0.1:1", option, value)
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}': '{value}' is not a finite number of seconds\n" in result.stderr


def test_remove_members_wait_timeout_without_wait_is_a_usage_error():
    """It was accepted and ignored: a runbook that meant to wait went on before the group settled."""
    result = run("remove-members", "--bootstrap-server", "127.0.0.1:1", "--wait-timeout", "120")
    assert result.exit_code == 2
    assert result.stderr == "kgroup remove-members: --wait-timeout needs --wait\n"
