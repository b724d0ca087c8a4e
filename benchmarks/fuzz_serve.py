"""kgroup serve under a long frame-fuzzing run: mutated frames of every API and version it lists
(and SASL exchanges) on a PLAINTEXT and a SASL_PLAINTEXT listener, as tests/server/test_serve_fuzz.py
does in CI with 20,000 frames.

Prints frames tried, per-API and per-mutation counts, problems found (a connection neither
answered nor closed within the bound, a dead server, a traceback or ERROR line in serve's stderr)
and frames/s. Exits 1 if any problem was found.

    .venv/bin/python benchmarks/fuzz_serve.py --frames 200000 [--seed 7] [--bound 5]
"""

from __future__ import annotations

import argparse
import sys
import tempfile

from kgroup.server.frame_fuzz_run import run_fuzz
from kgroup.server.harness import FuzzTarget


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bound", type=float, default=5.0,
                        help="seconds a connection may stay unanswered and open (default 5)")
    parser.add_argument("--connections", type=int, default=32,
                        help="connections open at once (default 32)")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kgroup-fuzz-bench-") as workdir:
        with FuzzTarget(workdir) as target:
            report = run_fuzz(target.plain, target.sasl, opts.frames, opts.seed, opts.bound,
                              opts.connections)
        report.problems += target.problems()
        print(f"seed: {opts.seed}, bound: {opts.bound:g} s, {opts.connections} connections at once")
        print("\n".join(report.lines()))
    sys.exit(1 if report.problems else 0)


if __name__ == "__main__":
    main()
