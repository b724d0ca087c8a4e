"""Running kgroup serve from Python: an in-process broker on its own loop thread, a subprocess one,
a raw one-request client, and the frame fuzzer's target. Used by the tests and benchmarks."""

from __future__ import annotations

import asyncio
import os
import pathlib
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading

from kgroup.server.frame_fuzz import FUZZ_PASSWORD, FUZZ_TOPIC, FUZZ_USER, encode_frame

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
PYTHON = sys.executable

# Settings that make group tests fast: short sessions allowed, no initial rebalance delay.
FAST_GROUPS = {
    "group.min.session.timeout.ms": "500",
    "group.initial.rebalance.delay.ms": "0",
}


class ThreadedBroker:
    """A Broker running on a private event loop in a daemon thread."""

    def __init__(self, log_dir, topics=(), config=None, port=0, listeners=None, users=None,
                 acls=()):
        from kgroup.server.broker import Broker
        from kgroup.server.config import ServerConfig

        pairs = dict(FAST_GROUPS)
        pairs.update(config or {})
        self.broker = Broker(str(log_dir), ServerConfig.from_pairs(pairs.items()),
                             host="127.0.0.1", port=port, topics=topics, listeners=listeners,
                             users=users, acls=acls)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        host, port = self.call(self.broker.start())
        self.bootstrap = f"{host}:{port}"
        self.address = (host, port)
        self.bootstraps = [f"{h}:{p}" for _listener, (h, p) in self.broker.bound]  # per listener

    def call(self, coro, timeout=30):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def run(self, fn, timeout=30):
        """Run a plain function on the broker's loop (to read its state safely)."""
        async def wrapper():
            return fn()
        return self.call(wrapper(), timeout)

    def group(self, group_id):
        """The group coordinator's snapshot of a group (None if it has none), read on the loop."""
        return self.run(lambda: self.broker.groups.coord.group(group_id))

    def committed_offsets(self, group_id) -> dict:
        """The group's committed offsets as the group coordinator holds them, read on the loop."""
        return self.run(lambda: self.broker.groups.coord.committed_offsets(group_id))

    def stop(self):
        try:
            self.call(self.broker.stop())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            self.loop.close()


class SubprocessBroker:
    """`kgroup serve` in a child process (for SIGKILL and signal tests, and the frame fuzzer's
    target): one `--listen` per entry of `listens`, `--user` per entry of `users`, `--acl` per
    entry of `acls`, then `args` (e.g. `-vv`); its stderr piped unless a file is given (a long
    run's warnings would fill an unread pipe)."""

    def __init__(self, log_dir, topics=(), config=None, listens=("127.0.0.1:0",), users=None,
                 stderr=subprocess.PIPE, acls=(), args=()):
        pairs = dict(FAST_GROUPS)
        pairs.update(config or {})
        extra = args
        args = [PYTHON, "-m", "kgroup.commands.cli", "serve", "--log-dir", str(log_dir)]
        for listen in listens:
            args += ["--listen", listen]
        for name, password in (users or {}).items():
            args += ["--user", f"{name}:{password}"]
        for name, count in topics:
            args += ["--topic", f"{name}:{count}"]
        for key, value in pairs.items():
            args += ["--config", f"{key}={value}"]
        for rule in acls:
            args += ["--acl", rule]
        args += list(extra)
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=stderr,
                                     text=True, cwd=str(ROOT))
        self.bootstraps = []  # per listener
        for _listen in listens:
            line = self.proc.stdout.readline()
            if not line.startswith("listening on "):
                self.proc.kill()
                detail = self.proc.stderr.read() if self.proc.stderr else ""
                raise RuntimeError(f"kgroup serve did not start: {line!r} {detail}")
            self.bootstraps.append(line.split()[-1])
        self.bootstrap = self.bootstraps[0]
        host, port = self.bootstrap.rsplit(":", 1)
        self.address = (host.strip("[]"), int(port))

    def kill(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def terminate(self, timeout=10):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)


def raw_request(address, request, correlation_id=1, client_id="raw-test", timeout=5):
    """Send one kafka-python request object over a fresh socket; returns the response bytes."""
    data = encode_frame(request, correlation_id, client_id)
    with socket.create_connection(address, timeout=timeout) as sock:
        sock.sendall(data)
        return read_frame(sock)


def read_frame(sock):
    """One response frame's payload, or None if the server closed the connection."""
    head = recv_exact(sock, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">i", head)
    return recv_exact(sock, size)


def recv_exact(sock, n):
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


class FuzzTarget:
    """`kgroup serve` in a child process with a PLAINTEXT and a SASL_PLAINTEXT listener (user
    FUZZ_USER) and topic FUZZ_TOPIC, its log directory in memory when /dev/shm exists (the fuzz
    is about frames, not fsync latency), its stderr in `workdir`. `problems()` lists a dead server
    and any traceback or ERROR line in its stderr."""

    def __init__(self, workdir, topics=()):
        self.workdir = pathlib.Path(workdir)
        self.topics = [(FUZZ_TOPIC, 2), *topics]
        self.alive_at_end = None

    def __enter__(self):
        shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
        self._logs = tempfile.TemporaryDirectory(prefix="kgroup-fuzz-", dir=shm)
        self.stderr_path = self.workdir / "serve-stderr.txt"
        self._stderr = open(self.stderr_path, "w")
        self.server = SubprocessBroker(
            self._logs.name, topics=self.topics, users={FUZZ_USER: FUZZ_PASSWORD},
            listens=("PLAINTEXT://127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0"),
            stderr=self._stderr)
        self.bootstraps = self.server.bootstraps
        self.plain, self.sasl = ((host.strip("[]"), int(port)) for host, port in
                                 (b.rsplit(":", 1) for b in self.bootstraps))
        return self

    def __exit__(self, *exc):
        self.alive_at_end = self.server.proc.poll() is None
        try:
            self.server.terminate()
        finally:
            self._stderr.close()
            self._logs.cleanup()

    def problems(self) -> list[str]:
        alive = self.server.proc.poll() is None if self.alive_at_end is None else self.alive_at_end
        out = [] if alive else [f"kgroup serve died (exit {self.server.proc.returncode})"]
        lines = self.stderr_path.read_text(errors="replace").splitlines()
        i = 0
        while i < len(lines):
            if any(mark in lines[i] for mark in ("Traceback", "Task exception", " ERROR ")):
                out.append("serve stderr: " + " | ".join(lines[i:i + 30]))
                i += 30
            else:
                i += 1
        return out
