"""The one table of Kafka error codes: read from kafka-python, named as kgroup prints them."""

import subprocess
import sys

import kafka.errors as Errors

from kgroup import kafka_errors as codes


def test_constants_are_kafka_pythons_codes():
    assert (codes.NONE, codes.NOT_COORDINATOR, codes.FENCED_INSTANCE_ID, codes.UNKNOWN_TOPIC_ID) == (
        0, Errors.NotCoordinatorError.errno, Errors.FencedInstanceIdError.errno, 100)
    assert (codes.UNKNOWN_LEADER_EPOCH, codes.FENCED_LEADER_EPOCH) == (75, 74)
    # Kafka's Errors enum spelling where kafka-python's differs; constants only
    assert (codes.UNKNOWN_SERVER_ERROR, codes.INVALID_TOPIC_EXCEPTION) == (codes.UNKNOWN, codes.INVALID_TOPIC)


def test_every_name_is_its_codes_name():
    for name, code in codes.CODES.items():
        assert codes.name_of(code) == name or name in codes.KAFKA_SPELLINGS
        assert getattr(codes, name) == code


def test_name_of():
    assert [codes.name_of(c) for c in (0, 16, 87, -1, 9999)] == [
        "NONE", "NOT_COORDINATOR", "INVALID_RECORD", "UNKNOWN", "UNKNOWN_ERROR_CODE_9999"]


def test_the_cli_and_the_client_do_not_import_kafka_python_to_start():
    """kafka.errors imports all of kafka-python: `kgroup --help` and the client modules stay without it."""
    script = ("import sys; from click.testing import CliRunner; from kgroup.commands.cli import cli; "
              "import kgroup.client.removal, kgroup.assignors; "
              "assert CliRunner().invoke(cli, ['--help']).exit_code == 0; "
              "assert 'kafka' not in sys.modules, 'kafka imported'")
    subprocess.run([sys.executable, "-c", script], check=True)
