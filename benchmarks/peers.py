"""kgroup against Kafka's own tools, in one run, on the same broker and the same files.

1. `describe --offsets` of a 100-member static classic group on a real Kafka 4.4 broker: whole-process
   wall time of `kgroup describe --offsets G -o json` against `kafka-consumer-groups --describe
   --offsets --group G` (median of --repeat runs each, after one warm-up run of each).
2. `decode-offsets` of a 1 M-record `__consumer_offsets` segment: `kgroup decode-offsets -o dump-log`
   and `--view state -o json` against `kafka-dump-log --offsets-decoder --print-data-log` (whose
   output `-o dump-log` reproduces byte for byte: the run checks the SHA-256 of both).
3. Heartbeats of a 1,000-static-member group, closed loop (benchmarks/serve.py's load generator): on
   `kgroup serve` and on the real broker, the same frames, the same group settings.

Kafka 4.4 comes from Maven Central into the tests' cache (tests/helpers/kafka_jars.py); its tools run
with the JVM options of Kafka's bin/kafka-run-class.sh.

    .venv/bin/python benchmarks/peers.py [--members 100] [--records 1000000] [--heartbeat-members 1000]
                                         [--seconds 5] [--repeat 5] [--skip describe,decode,heartbeat]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import pathlib
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, os.path.join(ROOT, "tests"), ROOT]

import _gen  # noqa: E402
import serve as serve_bench  # noqa: E402
from helpers.kafka_cluster import TOOLS, KafkaCluster  # noqa: E402
from helpers.kafka_jars import KAFKA_VERSION, classpath, fetch  # noqa: E402

# bin/kafka-run-class.sh's defaults for a tool (KAFKA_HEAP_OPTS, KAFKA_JVM_PERFORMANCE_OPTS).
TOOL_JVM = ["-Xmx256M", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
            "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
            "-Djava.awt.headless=true"]
KGROUP = [sys.executable, "-m", "kgroup.commands.cli"]


def kafka_tool(cp: str, name: str, *args: str) -> list[str]:
    return ["java", *TOOL_JVM, "-cp", cp, TOOLS[name], *args]


def timed_run(cmd: list[str], sha: bool = False) -> tuple[float, str | None]:
    """Wall time of the whole process, its stdout hashed (or discarded) as it streams."""
    digest = hashlib.sha256() if sha else None
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    while chunk := proc.stdout.read(1 << 20):
        if digest:
            digest.update(chunk)
    err = proc.stderr.read()
    proc.wait()
    elapsed = time.perf_counter() - t0
    if proc.returncode not in (0,):
        raise SystemExit(f"{' '.join(cmd[:6])} ... exited {proc.returncode}: {err.decode()[-500:]}")
    return elapsed, digest.hexdigest() if digest else None


def median_of(cmd, repeat):
    timed_run(cmd)                                            # warm-up: page cache, bytecode
    return statistics.median(timed_run(cmd)[0] for _ in range(repeat))


def wait_coordinator(bootstrap: str, group: str, timeout: float = 60) -> None:
    """Until FindCoordinator answers for the group (__consumer_offsets created, its leader up): the
    raw members below send JoinGroup straight to the single broker."""
    from kgroup.client.wire import ClusterClient

    deadline = time.monotonic() + timeout
    with ClusterClient(bootstrap) as client:
        while True:
            try:
                client.find_coordinator(group)
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)


# --- 1. describe --offsets of a 100-member group -------------------------------------------------

async def static_group(bootstrap_port: int, group: str, topic: str, members: int, partitions: int):
    """`members` static classic members (ConsumerProtocol subscriptions and range-like assignments)
    joined and synced in one generation, offsets committed; their sockets stay open."""
    from kafka.protocol.consumer import (JoinGroupRequest, JoinGroupResponse, OffsetCommitRequest,
                                         SyncGroupRequest, SyncGroupResponse)

    conns = []
    for i in range(members):
        conns.append(await asyncio.open_connection("127.0.0.1", bootstrap_port))

    async def call(conn, request, response_class, version):
        reader, writer = conn
        writer.write(serve_bench.frame(request, 1, "peers"))
        await writer.drain()
        (size,) = struct.unpack(">i", await reader.readexactly(4))
        return response_class.decode(await reader.readexactly(size), version=version, header=True)

    state = [{"member_id": "", "generation": -1} for _ in range(members)]

    async def join(i):
        while True:
            req = JoinGroupRequest(version=9, group_id=group, session_timeout_ms=300000,
                                   rebalance_timeout_ms=60000, member_id=state[i]["member_id"],
                                   group_instance_id=f"node-{i:03d}", protocol_type="consumer",
                                   protocols=[JoinGroupRequest.JoinGroupRequestProtocol(
                                       name="range", metadata=_gen._subscription([topic]))], reason=None)
            resp = await call(conns[i], req, JoinGroupResponse, 9)
            if resp.error_code in (14, 15, 16):    # the coordinator is still loading its partition
                await asyncio.sleep(0.2)
                continue
            if resp.error_code:
                raise SystemExit(f"JoinGroup error {resp.error_code}")
            state[i].update(member_id=resp.member_id, generation=resp.generation_id)
            assignments = []
            if resp.leader == resp.member_id:
                ids = sorted(m.member_id for m in resp.members)
                assignments = [SyncGroupRequest.SyncGroupRequestAssignment(
                    member_id=m, assignment=_gen._assignment(topic, list(range(partitions))[n::len(ids)]))
                    for n, m in enumerate(ids)]
            sync = SyncGroupRequest(version=5, group_id=group, generation_id=resp.generation_id,
                                    member_id=resp.member_id, group_instance_id=f"node-{i:03d}",
                                    protocol_type="consumer", protocol_name="range", assignments=assignments)
            sresp = await call(conns[i], sync, SyncGroupResponse, 5)
            if sresp.error_code == 0:
                return
            if sresp.error_code != 27:
                raise SystemExit(f"SyncGroup error {sresp.error_code}")

    await asyncio.gather(*(join(i) for i in range(members)))
    first = state[0]
    commit = OffsetCommitRequest(
        version=8, group_id=group, generation_id_or_member_epoch=first["generation"],
        member_id=first["member_id"], group_instance_id="node-000",
        topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[
            OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                partition_index=p, committed_offset=5, committed_leader_epoch=-1, committed_metadata="")
            for p in range(partitions)])])
    from kafka.protocol.consumer import OffsetCommitResponse
    await call(conns[0], commit, OffsetCommitResponse, 8)
    return conns


def bench_describe(kafka, cp, opts):
    from kafka.admin import KafkaAdminClient, NewTopic

    topic, group = "peers-describe", "peers-describe"
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap)
    admin.create_topics([NewTopic(topic, opts.members, 1)])
    admin.close()
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": kafka.bootstrap, "linger.ms": 5, "log_level": 0})
    for p in range(opts.members):
        for i in range(10):
            producer.produce(topic, value=b"x", partition=p)
    producer.flush(30)
    wait_coordinator(kafka.bootstrap, group)
    loop = asyncio.new_event_loop()
    conns = loop.run_until_complete(static_group(kafka.nodes[0].port, group, topic, opts.members, opts.members))
    try:
        k = median_of([*KGROUP, "describe", "--offsets", group, "--bootstrap-server", kafka.bootstrap,
                       "-o", "json"], opts.repeat)
        j = median_of(kafka_tool(cp, "kafka-consumer-groups", "--bootstrap-server", kafka.bootstrap,
                                 "--describe", "--offsets", "--group", group), opts.repeat)
    finally:
        for _, writer in conns:
            writer.close()
        loop.close()
    print(f"\n1. describe --offsets, {opts.members}-member static classic group, {opts.members} partitions "
          f"(median of {opts.repeat}, whole process)")
    print(f"   {'kgroup describe --offsets -o json':<48}{k:8.2f} s")
    print(f"   {'kafka-consumer-groups --describe --offsets':<48}{j:8.2f} s")
    print(f"   ratio kafka-consumer-groups / kgroup: {j / k:.2f}")


# --- 2. decode-offsets of a 1 M-record dump ------------------------------------------------------

def bench_decode(cp, opts, tmp):
    path = os.path.join(tmp, "__consumer_offsets-0", "00000000000000000000.log")
    os.makedirs(os.path.dirname(path))
    _gen.write_dump(path, opts.records)
    size = os.path.getsize(path) / 1e6
    timed_run([*KGROUP, "decode-offsets", "-o", "dump-log", path])          # warm bytecode, page cache
    k_text, k_sha = timed_run([*KGROUP, "decode-offsets", "-o", "dump-log", path], sha=True)
    k_state, _ = timed_run([*KGROUP, "decode-offsets", "--view", "state", "-o", "json", path])
    j_text, j_sha = timed_run(kafka_tool(cp, "kafka-dump-log", "--offsets-decoder", "--print-data-log",
                                         "--files", path), sha=True)
    print(f"\n2. decode-offsets, {opts.records:,} records ({size:.0f} MB segment)")
    print(f"   {'kgroup decode-offsets -o dump-log':<48}{k_text:8.2f} s  {opts.records / k_text:>10,.0f} records/s")
    print(f"   {'kgroup decode-offsets --view state -o json':<48}{k_state:8.2f} s  {opts.records / k_state:>10,.0f} records/s")
    print(f"   {'kafka-dump-log --offsets-decoder --print-data-log':<48}{j_text:8.2f} s  {opts.records / j_text:>10,.0f} records/s")
    print(f"   ratio kafka-dump-log / kgroup dump-log: {j_text / k_text:.2f}; "
          f"/ kgroup --view state: {j_text / k_state:.2f}")
    print(f"   same text byte for byte: {'yes' if k_sha == j_sha else 'NO'} (sha256 {k_sha[:16]}…)")


# --- 3. heartbeats of 1,000 static members --------------------------------------------------------

def bench_heartbeats(kafka_port, opts, tmp):
    server, port = serve_bench.start([*KGROUP, "serve", "--listen", "127.0.0.1:0", "--log-dir",
                                      os.path.join(tmp, "serve"),
                                      "--config", "group.initial.rebalance.delay.ms=1000"])
    try:
        s_storm, s_gens, s_rate, s_lat, s_err = asyncio.run(
            serve_bench.bench_kgroup(port, opts.heartbeat_members, opts.seconds))
    finally:
        server.terminate()
        server.wait(10)
    wait_coordinator(f"127.0.0.1:{kafka_port}", serve_bench.GROUP)
    k_storm, k_gens, k_rate, k_lat, k_err = asyncio.run(
        serve_bench.bench_kgroup(kafka_port, opts.heartbeat_members, opts.seconds))
    pct = serve_bench.pct
    print(f"\n3. heartbeats, {opts.heartbeat_members:,} static members, {opts.seconds:.0f} s closed loop "
          f"(one request in flight per connection; load generator on the same machine)")
    print(f"   {'broker':<24}{'join storm s':>13}{'generations':>12}{'heartbeats/s':>14}{'p50 ms':>9}"
          f"{'p99 ms':>9}{'errors':>8}")
    for name, storm, gens, rate, lat, err in (("kgroup serve", s_storm, s_gens, s_rate, s_lat, s_err),
                                              (f"Kafka {KAFKA_VERSION}", k_storm, k_gens, k_rate, k_lat, k_err)):
        print(f"   {name:<24}{storm:>13.2f}{len(gens):>12}{rate:>14,.0f}{pct(lat, 0.5):>9.1f}"
              f"{pct(lat, 0.99):>9.1f}{err:>8}")
    print(f"   ratio kgroup serve / Kafka: throughput {s_rate / k_rate:.2f}, "
          f"p99 {pct(s_lat, 0.99) / pct(k_lat, 0.99):.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=100, help="members of the described group")
    parser.add_argument("--records", type=int, default=1_000_000, help="records of the decoded dump")
    parser.add_argument("--heartbeat-members", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=5.0, help="heartbeat load duration")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each describe")
    parser.add_argument("--skip", default="", help="comma-separated: describe, decode, heartbeat")
    opts = parser.parse_args()
    skip = set(filter(None, opts.skip.split(",")))
    lib = fetch()
    cp = classpath(lib)
    with tempfile.TemporaryDirectory(prefix="kgroup-peers-") as tmp:
        print(f"kgroup vs Apache Kafka {KAFKA_VERSION} ({os.cpu_count()} cores, load average "
              f"{os.getloadavg()[0]:.1f} at the start)")
        if "decode" not in skip:
            bench_decode(cp, opts, tmp)
        if skip >= {"describe", "heartbeat"}:
            return
        kafka = KafkaCluster(lib, pathlib.Path(tmp) / "kafka",
                             settings={"group.initial.rebalance.delay.ms": "1000"}, log_level="INFO")
        kafka.start()

        try:
            if "describe" not in skip:
                bench_describe(kafka, cp, opts)
            if "heartbeat" not in skip:
                bench_heartbeats(kafka.nodes[0].port, opts, tmp)
        finally:
            kafka.stop()


if __name__ == "__main__":
    main()
