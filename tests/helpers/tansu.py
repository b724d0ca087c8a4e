"""Tansu (tansu-io/tansu), a Kafka-compatible broker that is not Kafka, for the tests that hold kgroup
to brokers whose answers differ from Kafka's.

Tansu ships as a Rust crate; the tests build it once with cargo (a debug build of
``tansu`` 0.6.0 with its in-memory storage, ``--features dynostore``, its own Cargo.lock) into the
tests' cache outside the clone. The build takes several CPU-minutes, so the root conftest starts it
in the background (niced) when the session begins and the Tansu tests run last, waiting for it.
Without cargo or the network these tests skip — or fail under KGROUP_REQUIRE_KAFKA.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from helpers.kafka_cluster import wait_listening
from helpers.kafka_jars import cache_root, unavailable

import pytest

TANSU_VERSION = "0.6.0"
BUILD = pytest.StashKey()       # the background build the root conftest started, in config.stash
BUILD_TIMEOUT_S = 45 * 60


def home():
    return cache_root() / f"tansu-{TANSU_VERSION}"


def binary():
    return home() / "bin" / "tansu"


def build_log():
    return cache_root() / f"tansu-{TANSU_VERSION}.build.log"


_BUILD = r"""
set -e
exec 9>"$LOCK"
flock 9
if [ -x "$HOME_DIR/bin/tansu" ]; then exit 0; fi
rm -rf "$HOME_DIR.partial"
CARGO_TARGET_DIR="$HOME_DIR.target" nice -n 19 cargo install tansu --version "$VERSION" \
    --features dynostore --debug --locked --root "$HOME_DIR.partial"
rm -rf "$HOME_DIR.target"
mv "$HOME_DIR.partial" "$HOME_DIR"
"""


def start_build() -> subprocess.Popen | None:
    """Start building Tansu in the background unless it is built or cargo is missing."""
    if binary().is_file() or shutil.which("cargo") is None:
        return None
    cache_root().mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, LOCK=str(cache_root() / f".tansu-{TANSU_VERSION}.lock"),
               HOME_DIR=str(home()), VERSION=TANSU_VERSION)
    with open(build_log(), "w") as log:
        return subprocess.Popen(["bash", "-c", _BUILD], env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)


def wait_built(build: subprocess.Popen | None) -> str:
    """The Tansu binary, once the background build (or another process's) has made it."""
    if binary().is_file():
        return str(binary())
    if shutil.which("cargo") is None:
        unavailable("the Tansu tests need cargo (Rust) on PATH to build Tansu from crates.io")
    if build is None:
        build = start_build()
    try:
        build.wait(BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        build.kill()
        unavailable(f"building Tansu took over {BUILD_TIMEOUT_S // 60} minutes; see {build_log()}")
    if not binary().is_file():
        tail = build_log().read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
        unavailable(f"cargo could not build Tansu {TANSU_VERSION}: {tail[0]} (log: {build_log()})")
    return str(binary())


class TansuBroker:
    """One Tansu broker on a free loopback port, in-memory storage."""

    def __init__(self, tansu: str, port: int):
        self.port = port
        self.bootstrap = f"127.0.0.1:{port}"
        url = f"tcp://{self.bootstrap}"
        self.process = subprocess.Popen(
            [tansu, "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "memory://tansu/", "--silent"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            start_new_session=True)
        wait_listening(self.process, port, 30, "Tansu",
                       lambda: self.process.stderr.read().decode(errors="replace")[-500:] if
                       self.process.poll() is not None else "")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)

