"""kgroup serve under load: a 1,000-static-member JoinGroup storm, then sustained heartbeats.

Runs `kgroup serve` in a child process and drives it from this process with raw asyncio sockets
(frames encoded once with kafka-python). In the same run, a trivial asyncio server that answers
every frame with a canned response of the right correlation id is driven by the same client: its
figures are the ceiling for this design (one Python process, asyncio streams, one request in
flight per connection), so the ratio shows what decoding + the coordinator + encoding cost.

    .venv/bin/python benchmarks/serve.py [--members 1000] [--seconds 5] [--acl RULE ...]

`--acl` passes serve's rules (the benchmark connects as User:ANONYMOUS, e.g.
`--acl User:ANONYMOUS:Read:Group:bench`), to see what authorization costs per request.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import struct
import subprocess
import sys
import tempfile
import time

from kafka.protocol.consumer import (HeartbeatRequest, HeartbeatResponse, JoinGroupRequest,
                                     JoinGroupResponse, SyncGroupRequest, SyncGroupResponse)

from kgroup.kafka_errors import NONE, REBALANCE_IN_PROGRESS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GROUP = "bench"

TRIVIAL_SERVER = r'''
import asyncio, struct, sys
CANNED = bytes.fromhex(sys.argv[1])
async def serve(reader, writer):
    try:
        while True:
            size = struct.unpack(">i", await reader.readexactly(4))[0]
            payload = await reader.readexactly(size)
            writer.write(struct.pack(">i", 4 + len(CANNED)) + payload[4:8] + CANNED)
            if writer.transport.get_write_buffer_size() > 65536:
                await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()
async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", 0, backlog=2048)
    print("listening on 127.0.0.1:%d" % server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()
asyncio.run(main())
'''


def frame(request, correlation_id, client_id):
    request.with_header(correlation_id=correlation_id, client_id=client_id)
    return bytes(request.encode(header=True, framed=True))


class Member:
    def __init__(self, index):
        self.index = index
        self.instance = f"static-{index:04d}"
        self.member_id = ""
        self.generation = -1
        self.reader = self.writer = None

    async def connect(self, port):
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", port)

    async def call(self, data):
        self.writer.write(data)
        await self.writer.drain()
        (size,) = struct.unpack(">i", await self.reader.readexactly(4))
        return await self.reader.readexactly(size)

    async def join_and_sync(self):
        """Join and sync until this member is in a completed generation."""
        while True:
            join = JoinGroupRequest(
                version=9, group_id=GROUP, session_timeout_ms=60000, rebalance_timeout_ms=60000,
                member_id=self.member_id, group_instance_id=self.instance,
                protocol_type="consumer",
                protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")],
                reason=None)
            resp = JoinGroupResponse.decode(await self.call(frame(join, 1, self.instance)),
                                            version=9, header=True)
            if resp.error_code:
                raise RuntimeError(f"{self.instance}: JoinGroup error {resp.error_code}")
            self.member_id, self.generation = resp.member_id, resp.generation_id
            assignments = []
            if resp.leader == self.member_id:
                A = SyncGroupRequest.SyncGroupRequestAssignment
                assignments = [A(member_id=m.member_id, assignment=b"") for m in resp.members]
            sync = SyncGroupRequest(
                version=5, group_id=GROUP, generation_id=self.generation, member_id=self.member_id,
                group_instance_id=self.instance, protocol_type="consumer", protocol_name="range",
                assignments=assignments)
            sresp = SyncGroupResponse.decode(await self.call(frame(sync, 2, self.instance)),
                                             version=5, header=True)
            if sresp.error_code == NONE:
                return
            if sresp.error_code != REBALANCE_IN_PROGRESS:  # join again
                raise RuntimeError(f"{self.instance}: SyncGroup error {sresp.error_code}")

    def heartbeat_frame(self):
        return frame(HeartbeatRequest(version=4, group_id=GROUP, generation_id=self.generation,
                                      member_id=self.member_id, group_instance_id=self.instance),
                     3, self.instance)


async def heartbeat_load(members, seconds, check=True):
    """Closed loop: every member keeps one heartbeat in flight. Returns (count, latencies)."""
    frames = [m.heartbeat_frame() for m in members]
    latencies = []
    errors = 0
    stop_at = time.perf_counter() + seconds

    async def run(member, data):
        nonlocal errors
        while time.perf_counter() < stop_at:
            t0 = time.perf_counter()
            raw = await member.call(data)
            latencies.append(time.perf_counter() - t0)
            if check and HeartbeatResponse.decode(raw, version=4, header=True).error_code:
                errors += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(run(m, f) for m, f in zip(members, frames)))
    elapsed = time.perf_counter() - t0
    return len(latencies) / elapsed, latencies, errors


def start(args):
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    line = proc.stdout.readline()
    if not line.startswith("listening on "):
        proc.kill()
        raise SystemExit(f"server did not start: {line!r}")
    return proc, int(line.rsplit(":", 1)[1])


def pct(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000.0


async def bench_kgroup(port, count, seconds):
    members = [Member(i) for i in range(count)]
    await asyncio.gather(*(m.connect(port) for m in members))
    t0 = time.perf_counter()
    await asyncio.gather(*(m.join_and_sync() for m in members))
    storm = time.perf_counter() - t0
    generations = {m.generation for m in members}
    rate, lat, errors = await heartbeat_load(members, seconds)
    for m in members:
        m.writer.close()
    return storm, generations, rate, lat, errors


async def bench_trivial(port, template_members, seconds):
    members = []
    for template in template_members:
        m = Member(template.index)
        m.member_id, m.generation = template.member_id, template.generation
        members.append(m)
    await asyncio.gather(*(m.connect(port) for m in members))
    rate, lat, _ = await heartbeat_load(members, seconds, check=False)
    for m in members:
        m.writer.close()
    return rate, lat


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--acl", action="append", default=[], help="serve --acl RULE (repeatable)")
    opts = parser.parse_args()
    log_dir = tempfile.mkdtemp(prefix="kgroup-bench-")
    server, port = start([sys.executable, "-m", "kgroup.commands.cli", "serve", "--listen",
                          "127.0.0.1:0", "--log-dir", log_dir,
                          "--config", "group.initial.rebalance.delay.ms=1000",
                          *(arg for rule in opts.acl for arg in ("--acl", rule))])
    try:
        storm, gens, rate, lat, errors = asyncio.run(
            bench_kgroup(port, opts.members, opts.seconds))
    finally:
        server.terminate()
        server.wait(10)
    canned = HeartbeatResponse(version=4, throttle_time_ms=0, error_code=0)
    canned_body = bytes(canned.encode(version=4))
    trivial, tport = start([sys.executable, "-c", TRIVIAL_SERVER, (b"\x00" + canned_body).hex()])
    try:
        members = [Member(i) for i in range(opts.members)]
        for m in members:
            m.member_id, m.generation = f"{m.instance}-x", 1
        t_rate, t_lat = asyncio.run(bench_trivial(tport, members, opts.seconds))
    finally:
        trivial.terminate()
        trivial.wait(10)
    print(f"members: {opts.members}, heartbeat load: {opts.seconds:.0f} s closed loop, "
          f"one request in flight per connection")
    print(f"join storm (kgroup serve): {storm:.2f} s until all {opts.members} static members "
          f"joined and synced (generations seen: {sorted(gens)}; includes "
          f"group.initial.rebalance.delay.ms=1000)")
    print(f"{'server':<22}{'heartbeats/s':>14}{'p50 ms':>10}{'p99 ms':>10}")
    print(f"{'kgroup serve':<22}{rate:>14.0f}{pct(lat, 0.5):>10.2f}{pct(lat, 0.99):>10.2f}")
    print(f"{'trivial asyncio':<22}{t_rate:>14.0f}{pct(t_lat, 0.5):>10.2f}{pct(t_lat, 0.99):>10.2f}")
    print(f"kgroup serve / trivial throughput ratio: {rate / t_rate:.2f}; heartbeat errors: {errors}")


if __name__ == "__main__":
    main()
