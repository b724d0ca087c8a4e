"""Apache Kafka's jars from Maven Central, fetched once into a cache outside the clone.

The live tests run Kafka itself — the broker, its command-line tools, the Java client — from the
jars Maven resolves for the poms in tests/live/maven/. A fetch is done once per kind and version
(``~/.cache/kgroup-tests/kafka-4.4.0/``, or under ``KGROUP_TEST_CACHE``) and reused by later runs;
a lock keeps two pytest processes from fetching the same one at once.

Where Java, Maven or the network is missing these tests skip with one line naming what is
missing — unless ``KGROUP_REQUIRE_KAFKA`` is set (``.ci/run`` sets it): then the same line fails the
test, so CI never passes by skipping the real-Kafka tests.
"""

from __future__ import annotations

import fcntl
import os
import pathlib
import shutil
import subprocess

import pytest

from helpers import TESTS

KAFKA_VERSION = "4.4.0"             # the reference: broker, tools, Java client, Kafka Streams
OLD_CLIENT_VERSION = "3.9.1"        # the last Java client that speaks ConsumerGroupHeartbeat v0
REQUIRE_ENV = "KGROUP_REQUIRE_KAFKA"
POMS = TESTS / "live" / "maven"


def unavailable(what: str):
    """Skip (or, under KGROUP_REQUIRE_KAFKA, fail) the test with one line naming what is missing."""
    if os.environ.get(REQUIRE_ENV):
        pytest.fail(f"{what} ({REQUIRE_ENV} is set, so this is not skipped)", pytrace=False)
    pytest.skip(what)


def require_java(javac: bool = False) -> None:
    for tool in ("java", "javac") if javac else ("java",):
        if shutil.which(tool) is None:
            unavailable(f"the real-Kafka tests need {tool} (Java 17 or newer) on PATH")


def cache_root() -> pathlib.Path:
    if os.environ.get("KGROUP_TEST_CACHE"):
        return pathlib.Path(os.environ["KGROUP_TEST_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache"
    return pathlib.Path(base) / "kgroup-tests"


def fetch(kind: str = "kafka", version: str = KAFKA_VERSION) -> pathlib.Path:
    """The directory of jars for ``tests/live/maven/<kind>.pom.xml`` at ``version``, fetched if needed."""
    lib = cache_root() / f"{kind}-{version}"
    if (lib / ".complete").is_file():
        return lib
    require_java()
    if shutil.which("mvn") is None:
        unavailable("the real-Kafka tests need Maven (mvn) on PATH to fetch Kafka's jars")
    lib.parent.mkdir(parents=True, exist_ok=True)
    with open(lib.parent / f".{kind}-{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (lib / ".complete").is_file():       # another process fetched it while we waited
            return lib
        partial = lib.with_name(lib.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        shutil.rmtree(lib, ignore_errors=True)
        done = subprocess.run(
            ["mvn", "-q", "-B", "-Dstyle.color=never", "-f", str(POMS / f"{kind}.pom.xml"),
             "dependency:copy-dependencies", f"-Dkafka.version={version}",
             f"-DoutputDirectory={partial}"],
            capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            last = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["no output"]
            unavailable(f"Maven could not fetch Kafka {version} ({kind}) from Maven Central: {last[0]}")
        (partial / ".complete").touch()
        partial.rename(lib)
    return lib


def classpath(*libs: pathlib.Path) -> str:
    return os.pathsep.join(str(jar) for lib in libs for jar in sorted(lib.glob("*.jar")))


def compile_java(sources, out: pathlib.Path, *libs: pathlib.Path) -> str:
    """Compile ``sources`` against ``libs`` into ``out``; the classpath to run them with."""
    require_java(javac=True)
    cp = classpath(*libs)
    done = subprocess.run(["javac", "-nowarn", "-d", str(out), "-cp", cp, *map(str, sources)],
                          capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise RuntimeError(f"javac failed:\n{done.stderr}")
    return os.pathsep.join([str(out), cp])
