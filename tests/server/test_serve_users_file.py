"""`kgroup serve --users FILE`: SASL users from a file next to repeatable `--user`."""

from __future__ import annotations

import subprocess

import pytest

from kgroup.server.harness import PYTHON, ROOT
from kgroup.server.security.listeners import ListenerError
from kgroup.server.security.admission import read_users_file


def _kgroup(*args, timeout=60):
    return subprocess.run([PYTHON, "-m", "kgroup.commands.cli", *args], capture_output=True,
                          text=True, cwd=str(ROOT), timeout=timeout)


def test_users_file_skips_comments_and_blank_lines_and_keeps_colons_in_passwords(tmp_path):
    path = tmp_path / "users"
    path.write_text("# operators\n\nops:s3cret\n  app:pa:ss  \n")
    assert read_users_file(str(path)) == {"ops": "s3cret", "app": "pa:ss"}


@pytest.mark.parametrize("text, message", [
    ("ops:s3cret\nbroken\n", "users:2: expected NAME:PASSWORD"),
    ("ops:a\n# x\nops:b\n", "users:3: user 'ops' is already defined on line 1"),
    (":nameless\n", "users:1: expected NAME:PASSWORD"),
])
def test_a_bad_line_names_file_and_line(tmp_path, text, message):
    path = tmp_path / "users"
    path.write_text(text)
    with pytest.raises(ListenerError, match=message):
        read_users_file(str(path))


def test_serve_exits_2_on_a_bad_or_missing_users_file(tmp_path):
    path = tmp_path / "users"
    path.write_text("ops\n")
    bad = _kgroup("serve", "--log-dir", str(tmp_path / "l"), "--listen",
                  "SASL_PLAINTEXT://127.0.0.1:0", "--users", str(path))
    assert bad.returncode == 2
    assert bad.stderr == f"kgroup serve: {path}:1: expected NAME:PASSWORD\n"
    missing = _kgroup("serve", "--log-dir", str(tmp_path / "l"), "--users", str(tmp_path / "no"))
    assert missing.returncode == 2
    assert missing.stderr.startswith(f"kgroup serve: --users {tmp_path / 'no'}: cannot read")
    assert not (tmp_path / "l").exists()


def test_serve_authenticates_users_of_the_file_and_of_user(tmp_path):
    from kafka import KafkaConsumer

    path = tmp_path / "users"
    path.write_text("ops:s3cret\n")
    proc = subprocess.Popen([PYTHON, "-m", "kgroup.commands.cli", "serve", "--log-dir",
                             str(tmp_path / "l"), "--listen", "SASL_PLAINTEXT://127.0.0.1:0",
                             "--users", str(path), "--user", "app:other"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
    try:
        bootstrap = proc.stdout.readline().split()[-1]
        for user, password in (("ops", "s3cret"), ("app", "other")):
            consumer = KafkaConsumer(bootstrap_servers=bootstrap, security_protocol="SASL_PLAINTEXT",
                                     sasl_mechanism="SCRAM-SHA-256", sasl_plain_username=user,
                                     sasl_plain_password=password)
            try:
                consumer.topics()
            finally:
                consumer.close()
    finally:
        proc.terminate()
        proc.wait(10)
