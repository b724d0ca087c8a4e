"""Does a change to the simulation keep its results? Run a grid of scenarios and save, or check.

A speed-up of `kgroup simulate` must give the same runs: the same JSON document (figures, event
log, ownership intervals) for every scenario, membership, protocol, assignor and a spread of
timings. Save the documents before the change, check them after:

    .venv/bin/python benchmarks/simulate_same.py --save /tmp/before     # on the old code
    .venv/bin/python benchmarks/simulate_same.py --check /tmp/before    # on the new code

--large adds the 100-member dynamic bounces (a few seconds each). Prints one line per case and,
with --check, every case whose document differs (exit 1).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import os
import sys
import time

import orjson

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from kgroup.sim.model import ScenarioError, SimParams  # noqa: E402
from kgroup.sim.scenarios import run_scenario  # noqa: E402


def cases(large: bool):
    """(name, scenario, SimParams) for the grid."""
    assignors = ("range", "roundrobin", "sticky", "cooperative-sticky")
    timings = (dict(), dict(restart_ms=3_000, heartbeat_interval_ms=1_000, seed=7),
               dict(restart_ms=50_000, session_timeout_ms=10_000, concurrency=2, seed=3,
                    order="random"))
    for scenario, membership, assignor, (k, timing) in itertools.product(
            ("rolling-bounce", "leader-bounce", "crash", "scale-down", "scale-up", "upgrade",
             "downgrade"),
            ("dynamic", "static"), assignors, enumerate(timings)):
        if scenario in ("upgrade", "downgrade") and membership == "static":
            continue
        yield (f"{scenario}-{membership}-{assignor}-t{k}", scenario,
               SimParams(members=7, topics=(("t", 20), ("u", 3)), membership=membership,
                         assignor=assignor, **timing))
    for scenario, membership, (k, timing) in itertools.product(
            ("rolling-bounce", "crash", "scale-down", "upgrade-protocol", "downgrade-protocol"),
            ("dynamic", "static"), enumerate(timings)):
        for protocol in (("classic", "consumer") if scenario not in ("upgrade-protocol",
                                                                    "downgrade-protocol")
                         else ("classic",)):
            if protocol == "classic" and scenario in ("rolling-bounce", "crash", "scale-down"):
                continue          # the classic ones are in the grid above
            yield (f"{scenario}-{membership}-{protocol}-t{k}", scenario,
                   SimParams(members=6, topics=(("t", 12),), membership=membership,
                             protocol=protocol, broker_config=consumer_timing(timing), **timing))
    yield ("duplicate-instance", "duplicate-instance", SimParams(members=5))
    yield ("dynamic-30-wire", "rolling-bounce",
           SimParams(members=30, membership="dynamic", restart_ms=3_000, seed=4, wire_heartbeats=True))
    for assignor in assignors:
        yield (f"dynamic-40-{assignor}", "rolling-bounce",
               SimParams(members=40, topics=(("t", 120),), membership="dynamic", assignor=assignor,
                         seed=11))
    if large:
        for assignor in ("range", "cooperative-sticky"):
            yield (f"dynamic-100-{assignor}", "rolling-bounce",
                   SimParams(members=100, topics=(("t", 300),), membership="dynamic",
                             assignor=assignor))
        yield ("dynamic-100-consumer", "rolling-bounce",
               SimParams(members=100, topics=(("t", 300),), membership="dynamic", protocol="consumer"))
        yield ("dynamic-60-upgrade-protocol", "upgrade-protocol",
               SimParams(members=60, topics=(("t", 180),), membership="dynamic"))


def consumer_timing(timing: dict) -> tuple:
    """A timing's heartbeat interval and session timeout for the consumer-protocol members too: the
    broker's group.consumer.* settings, their minimums lowered to hold them."""
    pairs = []
    for option, key in (("heartbeat_interval_ms", "heartbeat.interval.ms"),
                        ("session_timeout_ms", "session.timeout.ms")):
        if option in timing:
            pairs += [(f"group.consumer.min.{key}", timing[option]), (f"group.consumer.{key}", timing[option])]
    return tuple(pairs)


def document(scenario: str, params: SimParams) -> bytes:
    try:
        return orjson.dumps(run_scenario(scenario, params).as_dict(), option=orjson.OPT_SORT_KEYS)
    except ScenarioError as e:
        return f"ScenarioError: {e}".encode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--save", metavar="DIR")
    mode.add_argument("--check", metavar="DIR")
    parser.add_argument("--large", action="store_true")
    args = parser.parse_args()
    directory = args.save or args.check
    os.makedirs(directory, exist_ok=True)
    different = 0
    total = 0.0
    for name, scenario, params in cases(args.large):
        start = time.perf_counter()
        doc = document(scenario, params)
        spent = time.perf_counter() - start
        total += spent
        path = os.path.join(directory, name + ".json")
        digest = hashlib.sha256(doc).hexdigest()[:12]
        if args.save:
            with open(path, "wb") as f:
                f.write(doc)
            verdict = "saved"
        elif not os.path.exists(path):
            verdict = "no saved document"
            different += 1
        else:
            with open(path, "rb") as f:
                same = f.read() == doc
            verdict = "same" if same else "DIFFERENT"
            different += not same
        print(f"{name:48s} {spent:7.2f} s  {digest}  {verdict}", flush=True)
    print(f"{total:.1f} s in all; {different} different")
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main())
