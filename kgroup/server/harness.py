"""Running kgroup serve from Python: an in-process broker on its own loop thread, a subprocess one,
and a raw one-request client. Used by the tests and benchmarks/serve.py."""

from __future__ import annotations

import asyncio
import pathlib
import signal
import socket
import struct
import subprocess
import sys
import threading

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
PYTHON = sys.executable

# Settings that make group tests fast: short sessions allowed, no initial rebalance delay.
FAST_GROUPS = {
    "group.min.session.timeout.ms": "500",
    "group.initial.rebalance.delay.ms": "0",
}


class ThreadedBroker:
    """A Broker running on a private event loop in a daemon thread."""

    def __init__(self, log_dir, topics=(), config=None, port=0, listeners=None, users=None):
        from kgroup.server.broker import Broker
        from kgroup.server.config import ServerConfig

        pairs = dict(FAST_GROUPS)
        pairs.update(config or {})
        self.broker = Broker(str(log_dir), ServerConfig.from_pairs(pairs.items()),
                             host="127.0.0.1", port=port, topics=topics, listeners=listeners,
                             users=users)
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
    """`kgroup serve` in a child process (for SIGKILL and signal tests)."""

    def __init__(self, log_dir, topics=(), config=None, listens=("127.0.0.1:0",), users=None,
                 stderr=subprocess.PIPE):
        pairs = dict(FAST_GROUPS)
        pairs.update(config or {})
        args = [PYTHON, "-m", "kgroup.commands.cli", "serve", "--log-dir", str(log_dir)]
        for listen in listens:
            args += ["--listen", listen]
        for name, password in (users or {}).items():
            args += ["--user", f"{name}:{password}"]
        for name, count in topics:
            args += ["--topic", f"{name}:{count}"]
        for key, value in pairs.items():
            args += ["--config", f"{key}={value}"]
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
    request.with_header(correlation_id=correlation_id, client_id=client_id)
    data = bytes(request.encode(header=True, framed=True))
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
