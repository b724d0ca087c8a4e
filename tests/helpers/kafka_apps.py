"""Real Kafka 4.4 applications on the newer group types, each in its own JVM: a Kafka Streams
application on a streams group (KIP-1071; tests/live/java/StreamsApp.java) and KafkaShareConsumer
members of a share group (KIP-932; tests/live/java/ShareMember.java) — the clients kgroup's share- and
streams-group verbs are tested against. Both are compiled with the other live Java members
(``helpers.kafka_groups.java_classpath``).

Each prints ``READY`` when it has joined (a Streams application: RUNNING; a share member: its first
ShareGroupHeartbeat answered); ``wait_ready()`` waits for it, failing at once with the application's
output if it exits first. ``close()`` closes gracefully (a static Streams member stays in its group
until its session expires, as Kafka Streams' default close does; ``leave()`` leaves), ``terminate()``
sends SIGTERM (the same graceful close, from a shutdown hook), ``kill()`` leaves no trace but an
expiring session. The tool helpers below read ``kafka-streams-groups`` and ``kafka-share-groups``.
"""

from __future__ import annotations

import pathlib
import re
import signal
import subprocess
import threading

from helpers.kafka_groups import wait_for

JVM = ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]


class JavaApp:
    """One JVM running ``main`` with ``args``; its stdout lines in ``lines``, its stderr (client logs)
    in ``log`` when given (else discarded)."""

    name = "java application"

    def __init__(self, classpath: str, main: str, args, log: pathlib.Path | None = None):
        self.log = log
        stderr = open(log, "ab") if log is not None else subprocess.DEVNULL
        self.lines: list[str] = []
        self.process = subprocess.Popen([*JVM, "-cp", classpath, main, *map(str, args)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                        text=True)
        if log is not None:
            stderr.close()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def ready(self) -> bool:
        return "READY" in self.lines

    @property
    def errors(self) -> list[str]:
        return [line for line in list(self.lines) if line.startswith("error")]

    def wait_ready(self, timeout: float = 60) -> None:
        def ready():
            if self.process.poll() is not None and not self.ready:
                raise AssertionError(f"{self.name} exited with {self.process.returncode} before READY; "
                                     f"output: {self.lines[-20:]}" + (f"; log {self.log}" if self.log else ""))
            return self.ready
        wait_for(ready, timeout, f"{self.name} READY")

    def _send(self, line: str) -> None:
        try:
            self.process.stdin.write(line + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass

    def _finish(self, timeout: float) -> None:
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        self._reader.join(5)

    def close(self, timeout: float = 60) -> None:
        """A graceful close (``close`` on stdin); killed if it has not exited in ``timeout`` s."""
        if self.process.poll() is None:
            self._send("close")
        self._finish(timeout)

    def terminate(self, timeout: float = 60) -> None:
        """SIGTERM: the application closes from its shutdown hook, as under a service manager."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        self._finish(timeout)

    def kill(self) -> None:
        """SIGKILL: no leave; the member's session must expire."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self._reader.join(5)


class StreamsInstance(JavaApp):
    """One instance (one stream thread) of the Kafka Streams application ``application_id``: input ->
    selectKey -> repartition -> count (store "counts") -> output. ``instance_id`` makes it a static
    member: Kafka Streams gives its thread the group.instance.id ``{instance_id}-1``
    (``member_instance_id``). ``settings`` are more Streams settings (key=value)."""

    name = "Kafka Streams instance"

    def __init__(self, classpath: str, bootstrap: str, application_id: str, input_topic: str,
                 output_topic: str, state_dir: pathlib.Path, instance_id: str | None = None,
                 log: pathlib.Path | None = None, **settings):
        self.application_id, self.instance_id = application_id, instance_id
        pathlib.Path(state_dir).mkdir(parents=True, exist_ok=True)
        super().__init__(classpath, "StreamsApp",
                         [bootstrap, application_id, input_topic, output_topic, instance_id or "-",
                          state_dir, *(f"{k}={v}" for k, v in settings.items())], log)

    @property
    def member_instance_id(self) -> str | None:
        return f"{self.instance_id}-1" if self.instance_id else None

    @property
    def client_id(self) -> str:
        """The application's client.id; Kafka Streams names its main consumer ``{client_id}-StreamThread-1-consumer``."""
        return f"streams-{self.instance_id or 'dynamic'}"

    @property
    def counted(self) -> int:
        """How many count updates the instance has emitted (its store's changes)."""
        counts = [int(line.split()[1]) for line in list(self.lines) if line.startswith("counted ")]
        return counts[-1] if counts else 0

    def leave(self, timeout: float = 60) -> None:
        """Close leaving the group (CloseOptions LEAVE_GROUP): a static member leaves at once too."""
        if self.process.poll() is None:
            self._send("leave")
        self._finish(timeout)


class ShareMember(JavaApp):
    """A KafkaShareConsumer 4.4 on share group ``group``, subscribed to ``topics``, acknowledging every
    record (explicit mode, ACCEPT). ``settings`` are more client settings (key=value)."""

    name = "share consumer"

    def __init__(self, classpath: str, bootstrap: str, group: str, topics, client_id: str,
                 log: pathlib.Path | None = None, **settings):
        self.group, self.client_id = group, client_id
        super().__init__(classpath, "ShareMember",
                         [bootstrap, group, ",".join(topics), client_id,
                          *(f"{k}={v}" for k, v in settings.items())], log)

    @property
    def acked(self) -> int:
        """How many records the member has acknowledged (and committed the acknowledgements of)."""
        counts = [int(line.split()[1]) for line in list(self.lines) if line.startswith("acked ")]
        return counts[-1] if counts else 0


def share_from_earliest(kafka, group: str) -> None:
    """share.auto.offset.reset=earliest for ``group`` (a group config; the default, latest, would skip
    records produced before the share partitions are initialised)."""
    from helpers.kafka_groups import group_config

    group_config(kafka, group, share_auto_offset_reset="earliest")


def close_all(apps, timeout: float = 60, terminate: bool = False) -> None:
    """Close several applications at once (each close may take seconds): ``close`` on their stdin,
    or SIGTERM with ``terminate``."""
    for app in apps:
        if app.process.poll() is None:
            if terminate:
                app.process.send_signal(signal.SIGTERM)
            else:
                app._send("close")
    for app in apps:
        app._finish(timeout)


# --- Kafka's own tools on these groups ------------------------------------------------------------

def streams_group_members(classpath: str, bootstrap: str, group: str) -> tuple[str, list[dict]]:
    """The group's state and members as Kafka's Admin describes them (tests/live/java/
    StreamsGroupMembers.java): dicts with member, instance (None for a dynamic member), process,
    client, epoch — the instance ids kafka-streams-groups does not print."""
    done = subprocess.run([*JVM, "-cp", classpath, "StreamsGroupMembers", bootstrap, group],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise RuntimeError(f"StreamsGroupMembers {group} exited {done.returncode}: {done.stdout}{done.stderr}")
    state, members = None, []
    for line in done.stdout.splitlines():
        words = line.split()
        if words[:1] == ["state"]:
            state = words[1]
        elif words[:1] == ["member"]:
            member = dict(zip(words[0::2], words[1::2]))
            member["instance"] = None if member["instance"] == "-" else member["instance"]
            member["epoch"] = int(member["epoch"])
            members.append(member)
    return state, members


def tool_table(text: str, first: str = "GROUP") -> list[dict]:
    """The rows of the tables ``kafka-share-groups`` / ``kafka-streams-groups`` print, as dicts by
    header. Their columns are padded with spaces, and the last (ASSIGNMENTS, ...) may hold spaces
    itself, so each header's start column slices every row; a header line begins with ``first``."""
    rows, starts, names = [], None, None
    for line in text.splitlines():
        if line.startswith(first + " "):
            names = line.split()
            starts = [m.start() for m in re.finditer(r"\S+", line)]
            continue
        if starts is None or not line.strip():
            continue
        cells = [line[a:b].strip() for a, b in zip(starts, starts[1:] + [None])]
        rows.append(dict(zip(names, cells)))
    return rows


def streams_tasks(assignments: str) -> dict[str, dict[str, list[int]]]:
    """``ACTIVE: 0:[0,1]; 1:[2]; STANDBY: 0:[2]; TARGET-ACTIVE: ...`` (kafka-streams-groups'
    ASSIGNMENTS cell) as {"ACTIVE": {"0": [0, 1], "1": [2]}, "STANDBY": {...}, ...}."""
    tasks: dict[str, dict[str, list[int]]] = {}
    kind = None
    for token in re.findall(r"[A-Z-]+:|\S+:\[[\d,]*\];?", assignments):
        if token.endswith(":") and not token[:-1].isdigit() and "[" not in token:
            kind = token[:-1]
            tasks[kind] = {}
            continue
        subtopology, partitions = token.rstrip(";").split(":", 1)
        tasks[kind][subtopology] = [int(p) for p in partitions.strip("[]").split(",") if p]
    return tasks
