"""The differential scenarios as a report: each scenario played with the same real clients against a
real Kafka and against `kgroup serve`, every difference printed as one line
(scenario | where | field | kafka=... | kgroup=...), then a summary.

    .venv/bin/python benchmarks/differential.py [NAME ...] [--bootstrap-server HOST:PORT]
        [--serve-bootstrap HOST:PORT] [--workers 6] [--json FILE]

Without --bootstrap-server it starts the tests' Kafka 4.4 (one KRaft node, the tests' group settings);
with it, any cluster an operator has (its group.* settings should allow the scenarios' 500 ms-3 s
sessions: group.min.session.timeout.ms=500, group.initial.rebalance.delay.ms=0). Without
--serve-bootstrap it starts `kgroup serve` with the tests' group settings. NAME selects scenarios
(fnmatch patterns); the default is every classic and consumer-protocol scenario.
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import json
import os
import pathlib
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [os.path.join(ROOT, "tests"), ROOT]

from helpers.differential.run import run_all  # noqa: E402
from helpers.differential.scenarios import all_scenarios  # noqa: E402
from helpers.differential.sides import Side, java_compiler, serve_side  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="scenario names (fnmatch patterns); default all")
    parser.add_argument("--bootstrap-server", help="a real Kafka cluster (default: start the tests' Kafka 4.4)")
    parser.add_argument("--serve-bootstrap", help="a running kgroup serve (default: start one)")
    parser.add_argument("--self-check", action="store_true",
                        help="play every scenario twice on the real Kafka (no serve): the differences "
                             "are Kafka's own non-determinism (or the runner's)")
    parser.add_argument("--workers", type=int, default=6, help="scenarios played side by side")
    parser.add_argument("--json", help="write every observation and difference to this file")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    args = parser.parse_args(argv)

    scenarios = [s for s in all_scenarios()
                 if not args.names or any(fnmatch.fnmatchcase(s.name, n) for n in args.names)]
    if args.bootstrap_server and not args.list:
        # a cluster that stays: this run's groups and topics get their own names
        tag = f"{int(time.time()) % 100000:05d}"
        scenarios = [dataclasses.replace(s, name=f"{s.name}-{tag}") for s in scenarios]
    if args.list:
        for s in scenarios:
            print(f"{s.name:42} {s.protocol:9} {s.about}")
        return 0
    if not scenarios:
        print("no scenario matches", file=sys.stderr)
        return 2
    work = pathlib.Path(tempfile.mkdtemp(prefix="kgroup-differential-"))
    stops = []
    try:
        compile_java = java_compiler(work)
        if args.bootstrap_server:
            kafka = Side("kafka", args.bootstrap_server, compile_java)
        else:
            from helpers.kafka_cluster import KafkaCluster
            from helpers.kafka_jars import fetch

            cluster = KafkaCluster(fetch(), work / "kafka").start()
            stops.append(cluster.stop)
            kafka = Side("kafka", cluster.bootstrap, compile_java)
        if args.self_check:
            kgroup = Side("kafka-again", kafka.bootstrap, compile_java)
        elif args.serve_bootstrap:
            kgroup = Side("kgroup", args.serve_bootstrap, compile_java)
        else:
            kgroup = serve_side(work / "serve", compile_java)
            stops.append(kgroup.stop)
        started = time.monotonic()

        def progress(outcome):
            status = f"{len(outcome.lines)} differences" if outcome.lines else "same"
            print(f"# {outcome.scenario.name}: {status} ({outcome.seconds}s)", flush=True)
            for line in outcome.lines:
                print(line, flush=True)
        outcomes = run_all(scenarios, kafka, kgroup, workers=args.workers, progress=progress)
        wall = time.monotonic() - started
        differing = [o for o in outcomes.values() if o.lines]
        print(f"\n{len(outcomes)} scenarios in {wall:.0f}s: {len(outcomes) - len(differing)} the same, "
              f"{len(differing)} with differences ({sum(len(o.lines) for o in differing)} lines)")
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps(
                {name: {"lines": o.lines, "kafka": o.kafka, "kgroup": o.kgroup, "seconds": o.seconds}
                 for name, o in outcomes.items()}, indent=1, default=str))
        return 1 if differing else 0
    finally:
        for stop in reversed(stops):
            try:
                stop()
            except Exception:  # noqa: BLE001
                pass
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
