"""Frame fuzzing of `kgroup serve`, bounded for CI: 20,000 mutated frames of every API and version
it lists (and SASL exchanges) over thousands of connections, while a static librdkafka consumer on
another connection keeps its group Stable with its partitions."""

from __future__ import annotations

import random
import socket
import threading
import time

from kafka.protocol.admin import DescribeGroupsRequest, DescribeGroupsResponse

from kgroup.server.handlers.apis import build_api_table
from kgroup.server.frame_fuzz import FUZZ_GROUP, Send, extreme_seeds, mutate, seeds
from kgroup.server.frame_fuzz_run import run_fuzz
from kgroup.server.harness import FuzzTarget, raw_request, read_frame
from kgroup.server.security.sasl import sasl_api_entries

FRAMES, SEED = 20_000, 20261125
STEADY_TOPIC, STEADY_GROUP = "steady", "steady-group"


def test_every_seed_is_a_frame_the_server_answers(tmp_path):
    """The unmutated frames are valid: each API and version is answered on a plaintext listener
    (the SASL ones before authentication on a SASL listener)."""
    api_table = build_api_table()
    with FuzzTarget(tmp_path) as target:
        for i, seed in enumerate(seeds({**api_table, **sasl_api_entries()})):
            address = target.sasl if seed.api_key not in api_table else target.plain
            with socket.create_connection(address, timeout=10) as sock:
                if seed.api_key == 36:  # SaslAuthenticate needs a SaslHandshake v1 first
                    handshake = [s for s in seeds(sasl_api_entries()) if s.api_key == 17][-1]
                    sock.sendall(handshake.frame)
                    assert read_frame(sock) is not None
                sock.sendall(seed.in_group(f"fz{i:04d}").frame)  # no JoinGroup waits for another
                assert read_frame(sock) is not None, (seed.api_key, seed.version)
        assert target.problems() == []


def test_mutations_are_deterministic_and_cover_every_kind():
    api_table = {**build_api_table(), **sasl_api_entries()}
    pool = seeds(api_table)

    def run(seed):
        rng = random.Random(seed)
        return [mutate(rng.choice(pool), rng, set(api_table)) for _ in range(2000)]
    first, again = run(1), run(1)
    assert [s.data for s in first] == [s.data for s in again]
    assert {s.mutation for s in first} >= {"valid", "bitflip", "truncate", "huge_count",
                                          "wrong_version", "unknown_key", "tagged_garbage",
                                          "size_short", "size_long", "size_bad"}
    assert any(len(s.chunks) > 1 for s in first)  # frames split across writes
    assert all(FUZZ_GROUP.encode() not in s.seed.in_group("fz0001").frame for s in first[:50])
    assert Send(pool[0], "valid", [pool[0].frame]).may_park() is (pool[0].api_key in (1, 11, 14))


def test_extreme_value_frames_are_well_formed():
    """They must decode, or they would test the framing again instead of the handlers."""
    api_table = build_api_table()
    frames = extreme_seeds(api_table)
    assert len(frames) > 1000
    for seed in frames:
        request_class = api_table[seed.api_key][0]
        request_class.decode(seed.frame[4:], version=seed.version, header=True)


def _steady_consumer(bootstrap, stop: threading.Event):
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": STEADY_GROUP,
                         "group.instance.id": "steady-1", "session.timeout.ms": 10000,
                         "heartbeat.interval.ms": 500, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe([STEADY_TOPIC])

    def loop():
        while not stop.is_set():
            consumer.poll(0.2)
        consumer.close()
    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


def _describe(address):
    """(state, [member assignment bytes]) of the steady group, from DescribeGroups v5."""
    request = DescribeGroupsRequest(version=5, groups=[STEADY_GROUP],
                                    include_authorized_operations=False)
    group = DescribeGroupsResponse.decode(raw_request(address, request, timeout=10), version=5,
                                          header=True).groups[0]
    return group.group_state, [bytes(m.member_assignment) for m in group.members]


def _watch(address, stop: threading.Event, seen: list):
    while not stop.wait(0.5):
        try:
            seen.append(_describe(address))
        except OSError as exc:
            seen.append((f"describe failed: {exc}", []))


def test_fuzzed_serve_survives_and_a_static_consumer_stays_stable(tmp_path):
    with FuzzTarget(tmp_path, topics=[(STEADY_TOPIC, 2)]) as target:
        stop_consumer, stop_watch, seen = threading.Event(), threading.Event(), []
        consumer = _steady_consumer(target.bootstraps[0], stop_consumer)
        deadline = time.monotonic() + 30
        while _describe(target.plain)[0] != "Stable" and time.monotonic() < deadline:
            time.sleep(0.2)
        watcher = threading.Thread(target=_watch, args=(target.plain, stop_watch, seen))
        watcher.start()
        try:
            report = run_fuzz(target.plain, target.sasl, FRAMES, SEED)
        finally:
            stop_watch.set()
            watcher.join(15)
            stop_consumer.set()
            consumer.join(15)
        problems = report.problems + target.problems()
    summary = "\n".join(report.lines())
    print(summary)  # frames, connections, per-API counts and the time (pytest -s)
    assert problems == [], summary + "\n" + "\n".join(target.problems())
    assert report.frames >= FRAMES and report.connections >= 50, summary
    assert report.seconds < 60, summary
    assert len(seen) >= 5 and all(
        state == "Stable" and len(assignments) == 1 and STEADY_TOPIC.encode() in assignments[0]
        for state, assignments in seen), seen
