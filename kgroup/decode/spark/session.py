"""Getting a SparkSession that is quiet and correct by default, or a clear reason why there is none.

Quiet: kgroup's log4j2 file (errors only), no console progress bar, no UI for local masters,
the driver pinned to loopback for local masters and for a cluster whose master is on loopback (no
"hostname resolves to a loopback address" warning, and a driver that executors on this machine reach
without listening on the network). Correct: PYSPARK_PYTHON is the running interpreter, so Python
workers import this very kgroup. Light: a local master's JVM runs with the C1 compiler alone and the
serial collector (`LOCAL_JVM_OPTIONS`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys

LOG4J_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")


class SparkUnavailable(Exception):
    """pyspark or Java is missing; the message names the fix."""


def find_java() -> str | None:
    """The java the Spark launcher will run: $JAVA_HOME/bin/java, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "java")
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("java")


def java_version(java: str) -> str | None:
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stderr or out.stdout).strip()
    return text.splitlines()[0] if out.returncode == 0 and text else None


def unavailable_reason() -> str | None:
    """None when Spark can run here; else what is missing and how to fix it."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return ("the Spark engine needs pyspark, which is not installed: "
                "pip install 'kgroup[spark]' (or pip install pyspark), or use --engine local")
    java = find_java()
    if java is None:
        return ("the Spark engine needs Java (17 or 21), which was not found: install it (for example "
                "apt-get install openjdk-17-jre-headless) or set JAVA_HOME, or use --engine local")
    if java_version(java) is None:
        return f"the Spark engine needs a working Java; {java} -version failed: fix JAVA_HOME/PATH, " \
               "or use --engine local"
    return None


def is_local_master(master: str) -> bool:
    return master == "local" or master.startswith("local[") or master.startswith("local-cluster[")


#: JVM options for a local master, whose one JVM only schedules tasks and moves a little data (the
#: Python workers decode): the C1 compiler alone and the serial collector. Measured with
#: benchmarks/spark.py's dump (2 cores): the session starts in about half the CPU seconds and the JVM
#: spends about half as many during a job.
LOCAL_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

LOOPBACK_HOSTS = ("localhost", "::1", "[::1]")


def is_loopback_master(master: str) -> bool:
    """A standalone master on this machine's loopback (spark://127.0.0.1:7077, spark://localhost:7077;
    every master of an HA list): its workers, and so the executors, can only be on this machine."""
    if not master.startswith("spark://"):
        return False
    hosts = [address.rsplit(":", 1)[0] for address in master.removeprefix("spark://").split(",")]
    return all(host in LOOPBACK_HOSTS or host.startswith("127.") for host in hosts)


def driver_on_loopback(master: str) -> bool:
    """Where the driver must listen on 127.0.0.1: by default Spark takes the hostname's address, or
    the first interface's when the hostname resolves to loopback, which loopback executors may not
    reach and which exposes the driver's unauthenticated port to the network."""
    return is_local_master(master) or is_loopback_master(master)


def quiet_conf(master: str, conf: dict) -> dict:
    """kgroup's defaults under the user's --spark-conf (the user's values win; its JVM options come
    after kgroup's, so the JVM takes the user's where they differ)."""
    java_opts = f"-Dlog4j2.configurationFile=file:{LOG4J_FILE}"
    if is_local_master(master):
        java_opts += f" {LOCAL_JVM_OPTIONS}"
    out = {
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.extraJavaOptions": java_opts,
        "spark.python.worker.reuse": "true",
        "spark.executorEnv.PYTHONHASHSEED": "0",
    }
    if is_local_master(master):
        out["spark.ui.enabled"] = "false"
    if driver_on_loopback(master):
        out["spark.driver.host"] = "127.0.0.1"
        out["spark.driver.bindAddress"] = "127.0.0.1"
    for key, value in conf.items():
        if key == "spark.driver.extraJavaOptions":
            value = f"{java_opts} {value}"
        out[key] = value
    return out


def prepare_environment(master: str) -> None:
    """Environment the Spark launcher and Python workers read; set only what the user has not set."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("PYTHONHASHSEED", "0")
    if driver_on_loopback(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def get_session(master: str = "local[*]", conf: dict | None = None, app_name: str = "kgroup decode-offsets"):
    """(session, created): an already running session is reused (its master and conf win)."""
    reason = unavailable_reason()
    if reason:
        raise SparkUnavailable(reason)
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if SparkContext._active_spark_context is not None:  # noqa: SLF001 - the documented way to ask
        return SparkSession.builder.getOrCreate(), False
    from pyspark import SparkConf
    from pyspark.java_gateway import launch_gateway

    prepare_environment(master)
    spark_conf = SparkConf(loadDefaults=False).setMaster(master).setAppName(app_name)
    for key, value in quiet_conf(master, conf or {}).items():
        spark_conf.set(key, value)
    log = jvm_log_file()
    try:
        with open(log, "ab") as sink:  # the JVM's own stdout/stderr (e.g. module warnings) go here
            gateway = _launch_gateway(launch_gateway, spark_conf, sink)
        context = SparkContext(conf=spark_conf, gateway=gateway)
        session = SparkSession(context)
    except Exception as exc:  # noqa: BLE001 - py4j/launcher errors: say what failed, not a traceback
        raise SparkUnavailable(f"could not start Spark (master {master}): {_first_line(exc)} "
                               f"(Spark's log: {log})") from None
    context.setLogLevel("ERROR")
    _quiet_accumulator_server(context)
    return session, True


def _quiet_accumulator_server(context) -> None:
    """pyspark's accumulator server (a socketserver in this process that the JVM sends task updates
    to) prints a traceback on stderr when the JVM drops its connection mid-update, as it does when
    an interrupted run stops the JVM: the run says "interrupted" and nothing else."""
    server = getattr(context, "_accumulatorServer", None)
    if server is not None:
        server.handle_error = lambda request, client_address: None


def _launch_gateway(launch_gateway, spark_conf, sink):
    """pyspark's launch_gateway, and if an interrupt (SIGINT, SIGTERM) cuts it short, the JVM it was
    starting ended too: a JVM stops when its parent's stdin pipe closes only once its gateway is up,
    and pyspark's launcher makes it ignore SIGINT, so one cut off while starting would run on with
    no parent, holding its memory, after kgroup has exited."""
    before = _children()
    try:
        return launch_gateway(spark_conf, popen_kwargs={"stdout": sink, "stderr": sink})
    except BaseException:
        _end(_children() - before)
        raise


def _children() -> set[int]:
    """The processes this one started that are running now (read from /proc; elsewhere none)."""
    me, found = os.getpid(), set()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()   # after the command name: state, ppid, ...
        if len(fields) > 1 and fields[1] == str(me):
            found.add(int(entry))
    return found


def _end(pids: set[int]) -> None:
    """SIGTERM, then SIGKILL to what is still there a second later."""
    import signal
    import time

    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 1.0
    while pids and time.monotonic() < deadline:
        for pid in list(pids):
            with contextlib.suppress(OSError):
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    pids.discard(pid)
        time.sleep(0.05)
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def jvm_log_file() -> str:
    """Where the Spark JVM's console output goes, so it never mixes with kgroup's output."""
    import tempfile

    return os.path.join(tempfile.gettempdir(), f"kgroup-spark-{os.getpid()}.log")


def _first_line(exc) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
