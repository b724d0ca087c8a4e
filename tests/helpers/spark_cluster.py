"""A real Spark standalone cluster for the tests: a master and workers started from the installed
pyspark's own jars (``org.apache.spark.deploy.master.Master`` and ``...worker.Worker``).

Everything listens on loopback (127.0.0.1) on free ports; each worker offers one core and
``WORKER_MEMORY`` to executors and keeps its work directory (executors' stdout/stderr, the
application's files) under the cluster's root, with each JVM's own log beside it. ``SPARK_HOME`` is
the pyspark package directory, as a pip-installed pyspark has no other: the workers build the
executors' classpath from its ``jars/``. The master's web UI is on (its ``/json`` is where a test
sees the running applications); the workers' UIs are on free ports too. Stopped with SIGTERM, then
SIGKILL, by the PIDs started here.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import socket
import subprocess
import time
import urllib.request

from helpers.kafka_cluster import LOG4J2, free_port
from kgroup.decode.spark.session import find_java

#: What each worker offers executors (an executor asks for spark.executor.memory, 1g by default:
#: a test gives --spark-conf spark.executor.memory=EXECUTOR_MEMORY).
WORKER_MEMORY = "512m"
EXECUTOR_MEMORY = "512m"
DAEMON_JVM = ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]

def log4j2(log) -> str:
    """A daemon's log4j2 file: Kafka's test node's, at INFO, into ``log``."""
    return LOG4J2.format(log=log, level="info")


def spark_home() -> pathlib.Path:
    import pyspark

    return pathlib.Path(pyspark.__file__).resolve().parent


def scala_version(home: pathlib.Path) -> str:
    """The Scala version of the jars (2.13 for Spark 4, 2.12 or 2.13 for 3.5): without it in
    SPARK_SCALA_VERSION a worker cannot build an executor's command outside a Spark build tree
    ("Cannot find any build directories"); Spark's bin/ scripts set it the same way."""
    for jar in (home / "jars").glob("scala-library-*.jar"):
        return ".".join(jar.name.removeprefix("scala-library-").split(".")[:2])
    raise RuntimeError(f"no scala-library jar in {home / 'jars'}")


class SparkStandalone:
    """``start()``, then ``master_url`` and ``submit_args()`` for decode-offsets; ``state()`` is the
    master's view (workers, applications); ``stop()`` ends the JVMs started here."""

    def __init__(self, root: pathlib.Path, workers: int = 2):
        self.root = root
        self.workers = workers
        self.port = free_port()
        self.ui_port = free_port()
        self.processes: list[subprocess.Popen] = []

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _java(self, name: str, main: str, args: list[str]) -> subprocess.Popen:
        log = self.root / f"{name}.log"
        config = self.root / f"{name}-log4j2.properties"
        config.write_text(log4j2(log))
        home = spark_home()
        env = {**os.environ, "SPARK_HOME": str(home), "SPARK_SCALA_VERSION": scala_version(home),
               "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOCAL_DIRS": str(self.root / "local")}
        command = [find_java() or "java", *DAEMON_JVM, f"-Dlog4j2.configurationFile=file:{config}",
                   "-cp", f"{home / 'jars'}/*", main, *args]
        with open(self.root / f"{name}.out", "ab") as sink:
            process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=sink,
                                       stderr=subprocess.STDOUT, cwd=self.root)
        self.processes.append(process)
        return process

    def start(self, timeout: float = 90.0) -> None:
        """The master, then (once it listens: a worker that finds no master retries only after 5-15 s)
        the workers; returns when the master has every worker ALIVE."""
        self.root.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + timeout
        self._java("master", "org.apache.spark.deploy.master.Master",
                   ["--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.ui_port)])
        self._wait(self._listening, "the Spark master did not start", deadline)
        for n in range(1, self.workers + 1):
            work = self.root / f"worker{n}"
            work.mkdir(exist_ok=True)
            self._java(f"worker{n}", "org.apache.spark.deploy.worker.Worker",
                       ["--host", "127.0.0.1", "--port", str(free_port()), "--webui-port", str(free_port()),
                        "--cores", "1", "--memory", WORKER_MEMORY, "--work-dir", str(work), self.master_url])
        self._wait(lambda: sum(w.get("state") == "ALIVE" for w in self.state()["workers"]) == self.workers,
                   f"the Spark master did not see {self.workers} workers", deadline)

    def _listening(self) -> bool:
        with socket.create_connection(("127.0.0.1", self.port), timeout=1):
            return True

    def _wait(self, ready, failure: str, deadline: float) -> None:
        while True:
            for process in self.processes:
                if process.poll() is not None:
                    raise RuntimeError(f"a Spark JVM exited with {process.returncode}: see {self.root}")
            try:
                if ready():
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{failure} in time: see {self.root}")
            time.sleep(0.2)

    def state(self) -> dict:
        """The master's JSON state (its web UI's /json): workers, activeapps, completedapps."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as response:
            return json.load(response)

    def active_applications(self) -> list[dict]:
        return self.state()["activeapps"]

    def stop(self) -> None:
        for process in reversed(self.processes):  # workers first: they end their executors
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        for process in reversed(self.processes):
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes.clear()

    def workers_idle(self) -> bool:
        """No core of any worker in use: every executor of every application has ended."""
        return all(worker.get("coresused", 0) == 0 for worker in self.state()["workers"])

    def executor_logs(self) -> list[pathlib.Path]:
        """Every executor's stderr (Spark's INFO log) under the workers' work directories."""
        return sorted(self.root.glob("worker*/app-*/*/stderr"))

    def spark_conf(self) -> dict:
        """What a driver needs for this cluster: executors that fit a worker, and JVMs that start
        fast (C1 only, serial GC) on a small machine."""
        fast = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
        return {"spark.executor.memory": EXECUTOR_MEMORY, "spark.executor.extraJavaOptions": fast,
                "spark.driver.extraJavaOptions": fast}

    def submit_args(self) -> list[str]:
        """decode-offsets options for this cluster: --master and --spark-conf."""
        args = ["--master", self.master_url]
        for key, value in self.spark_conf().items():
            args += ["--spark-conf", f"{key}={value}"]
        return args


def standalone_cluster(root: pathlib.Path, workers: int = 2):
    """Start a cluster under root, yield it, stop it (for a fixture); a cluster that does not come up
    fails the test with where its logs are."""
    import pytest

    cluster = SparkStandalone(root, workers)
    try:
        cluster.start()
    except RuntimeError as exc:
        cluster.stop()
        pytest.fail(f"the Spark standalone cluster did not start: {exc}", pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()
