"""Coordinator throughput: 1,000 static members join, sync, then a full rolling bounce.

Everything runs in virtual time on one core: the initial rebalance delay passes with
``coord.advance``; each bounced member rejoins with an empty member id and its instance id
(a static restart in Stable: no rebalance, one GroupMetadata record), then syncs and
heartbeats. The same-run baseline builds and encodes the very same kafka-python requests,
so the ratio shows what the coordinator adds on top of merely handling request objects.
Each run is reported twice: wall time including building the request objects, and the time
spent inside the coordinator's handle/advance/take_log alone (requests arrive already built: from
the wire in `serve`, from the simulated clients in `simulate`).
A second figure hands the records over and forgets them (``keep_log=False``: taken with
``take_log()``, so the ~170 KB records of a 1,000-member group do not pile up in memory); a
third runs it as `kgroup serve` does, handing each operation's records to a ``log_writer``
(one that writes nothing here), so every operation keeps the undo journal that reverts it if
the write fails; a fourth leaves out the rolling bounce's GroupMetadata writes, which Kafka also
performs (one full-group record per static restart) and which are O(members) each.
The same members then run the consumer protocol (KIP-848) beside these figures:
``coordinator_consumer.py`` says how.

    .venv/bin/python benchmarks/coordinator.py [--members N] [--repeat R]
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from kafka.protocol.consumer.group import (HeartbeatRequest, JoinGroupRequest,  # noqa: E402
                                           SyncGroupRequest)

from benchmarks.coordinator_consumer import report as report_consumer_protocol  # noqa: E402
from kgroup.coordinator import GroupCoordinator  # noqa: E402

Protocol = JoinGroupRequest.JoinGroupRequestProtocol
Assignment = SyncGroupRequest.SyncGroupRequestAssignment
METADATA = b"\x00\x01\x00\x00\x00\x01\x00\x06orders\xff\xff\xff\xff\x00\x00\x00\x00"
CONFIG = {"group.initial.rebalance.delay.ms": 3000}


def join_request(instance: str, member_id: str = "") -> JoinGroupRequest:
    return JoinGroupRequest(version=9, group_id="bench", session_timeout_ms=45_000,
                            rebalance_timeout_ms=300_000, member_id=member_id,
                            group_instance_id=instance, protocol_type="consumer",
                            protocols=[Protocol(name="range", metadata=METADATA)], reason=None)


def sync_request(member_id: str, instance: str, generation: int, assignments=()) -> SyncGroupRequest:
    return SyncGroupRequest(version=5, group_id="bench", generation_id=generation,
                            member_id=member_id, group_instance_id=instance,
                            protocol_type="consumer", protocol_name="range",
                            assignments=list(assignments))


def heartbeat_request(member_id: str, instance: str, generation: int) -> HeartbeatRequest:
    return HeartbeatRequest(version=4, group_id="bench", generation_id=generation,
                            member_id=member_id, group_instance_id=instance)


class _Timed:
    """The coordinator with the time spent inside handle/advance/take_log added up, so the
    figure can leave out building the request objects (the caller's work, not the coordinator's)."""

    def __init__(self, coord):
        self.coord = coord
        self.inside = 0.0

    def _timed(self, fn, *args):
        t = time.perf_counter()
        try:
            return fn(*args)
        finally:
            self.inside += time.perf_counter() - t

    def handle(self, request):
        return self._timed(self.coord.handle, request)

    def advance(self, ms):
        return self._timed(self.coord.advance, ms)

    def take_log(self):
        return self._timed(self.coord.take_log)

    def __getattr__(self, name):
        return getattr(self.coord, name)


def run_coordinator(n: int, keep_log: bool = True, log_writer=None
                    ) -> tuple[int, float, GroupCoordinator]:
    """keep_log=False: each request's records are taken (to be written to disk) and not kept in
    memory; the records are still built and encoded. A ``log_writer`` (here one that writes
    nothing) is how `kgroup serve` hands them over: every operation then keeps an undo journal,
    to be reverted if the write fails.
    Returns (requests, wall time including building the requests, the timed coordinator)."""
    counter = itertools.count()
    coord = _Timed(GroupCoordinator(config=CONFIG, uuid_source=lambda: f"{next(counter):032x}",
                                    keep_log=keep_log, log_writer=log_writer))
    take = (lambda: None) if keep_log else coord.take_log
    instances = [f"instance-{k}" for k in range(n)]
    handled = 0
    start = time.perf_counter()
    joins = [coord.handle(join_request(i)) for i in instances]
    handled += n
    while not all(r.done for r in joins):
        coord.advance(coord.next_deadline_ms() - coord.now_ms)
    ids = [r.response.member_id for r in joins]
    generation = joins[0].response.generation_id
    leader = joins[0].response.leader
    syncs = []
    for member_id, instance in zip(ids, instances):
        if member_id != leader:
            syncs.append(coord.handle(sync_request(member_id, instance, generation)))
    leader_instance = instances[ids.index(leader)]
    syncs.append(coord.handle(sync_request(
        leader, leader_instance, generation,
        [Assignment(member_id=m, assignment=b"p" + m.encode()) for m in ids])))
    handled += n
    assert all(s.done and s.response.error_code == 0 for s in syncs)
    # rolling bounce: each member restarts with an empty member id and its instance id
    for k, instance in enumerate(instances):
        reply = coord.handle(join_request(instance))
        response = reply.response
        assert response.error_code == 0 and response.generation_id == generation, response
        ids[k] = response.member_id
        sync = coord.handle(sync_request(ids[k], instance, generation)).response
        assert sync.error_code == 0
        beat = coord.handle(heartbeat_request(ids[k], instance, generation)).response
        assert beat.error_code == 0
        take()
        coord.advance(1)
        handled += 3
    elapsed = time.perf_counter() - start
    group = coord.group("bench")
    assert group.state == "Stable" and group.generation == generation
    return handled, elapsed, coord


def run_baseline(n: int) -> tuple[int, float]:
    """Build and encode the same requests, nothing else."""
    instances = [f"instance-{k}" for k in range(n)]
    ids = [f"{i}-{k:032x}" for k, i in enumerate(instances)]
    built = 0
    start = time.perf_counter()
    for i in instances:
        join_request(i).encode()
        built += 1
    for k, (m, i) in enumerate(zip(ids, instances)):
        assignments = [Assignment(member_id=x, assignment=b"p" + x.encode()) for x in ids] if k == 0 else ()
        sync_request(m, i, 1, assignments).encode()
        built += 1
    for m, i in zip(ids, instances):
        join_request(i).encode()
        sync_request(m, i, 1).encode()
        heartbeat_request(m, i, 1).encode()
        built += 3
    return built, time.perf_counter() - start


class _RecordEncodingLeftOut:
    """Replaces the GroupMetadata record builder with a constant, to attribute time only.

    Not a mode of the coordinator: used by this benchmark alone, to show how much of the
    wall time is the O(members) record encoding Kafka also does on every static restart.
    """

    MODULES = ("join", "sync", "rebalance")

    def __enter__(self):
        import importlib
        self.saved = []
        fixed = (b"\x00\x02\x00\x05bench", b"")
        for name in self.MODULES:
            module = importlib.import_module(f"kgroup.coordinator.classic.{name}")
            self.saved.append((module, module.group_metadata_record))
            module.group_metadata_record = lambda group, assignments=None: fixed
        return self

    def __exit__(self, *exc):
        for module, original in self.saved:
            module.group_metadata_record = original


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="best of R runs")
    parser.add_argument("--partitions", type=int, default=3000,
                        help="partitions of the consumer-protocol run's topic")
    args = parser.parse_args(argv)
    n = args.members

    best = None
    for _ in range(args.repeat):
        handled, elapsed, coord = run_coordinator(n)
        if best is None or elapsed < best[1]:
            best = (handled, elapsed, coord)
    handled, elapsed, coord = best
    handed = min((run_coordinator(n, keep_log=False) for _ in range(args.repeat)), key=lambda r: r[1])
    written = min((run_coordinator(n, keep_log=False, log_writer=lambda entries: None)
                   for _ in range(args.repeat)), key=lambda r: r[1])
    base = min((run_baseline(n) for _ in range(args.repeat)), key=lambda r: r[1])
    with _RecordEncodingLeftOut():
        logic = min((run_coordinator(n)[:2] for _ in range(args.repeat)), key=lambda r: r[1])

    records = len(coord.records)
    print(f"members                         {n}")
    print(f"requests handled                {handled}")
    print(f"records appended                {records}")
    print("records kept in coord.records (the embedding API's default):")
    print(f"  wall time, requests built too {elapsed * 1000:.1f} ms = {handled / elapsed:,.0f} requests/s")
    print(f"  inside the coordinator        {coord.inside * 1000:.1f} ms = {handled / coord.inside:,.0f} requests/s")
    print("records handed over, not kept in memory (keep_log=False, take_log()):")
    print(f"  wall time, requests built too {handed[1] * 1000:.1f} ms = {handed[0] / handed[1]:,.0f} requests/s")
    print(f"  inside the coordinator        {handed[2].inside * 1000:.1f} ms = "
          f"{handed[0] / handed[2].inside:,.0f} requests/s")
    print("records handed to a log_writer (as kgroup serve runs it: revertible operations):")
    print(f"  inside the coordinator        {written[2].inside * 1000:.1f} ms = "
          f"{written[0] / written[2].inside:,.0f} requests/s")
    print(f"baseline (build+encode) time    {base[1] * 1000:.1f} ms for {base[0]} requests")
    print(f"baseline requests/s             {base[0] / base[1]:,.0f}")
    print(f"ratio coordinator/baseline time {elapsed / base[1]:.2f}x")
    print("without GroupMetadata record encoding (attribution only):")
    print(f"  coordinator wall time         {logic[1] * 1000:.1f} ms")
    print(f"  coordinator requests/s        {logic[0] / logic[1]:,.0f}")
    print(f"  ratio coordinator/baseline    {logic[1] / base[1]:.2f}x")
    print(f"  record encoding share         {(elapsed - logic[1]) / elapsed:.0%} of the full run")
    report_consumer_protocol(n, args.partitions, args.repeat)


if __name__ == "__main__":
    main()
