"""Reading on past damage (`kgroup.records.framing`): what it costs on clean files, and on damaged ones.

On one generated dump (benchmarks/_gen.py, Kafka 4.4's commits by default), in this process, best of
--repeat runs each:
  clean     the batch reader alone (iter_segment, no key/value decoding) with and without resync,
            and the Spark planner (`split_file`, 4 MB ranges) with and without it (with it, each cut
            is checked to be a whole batch: one batch's checksum per range);
  damaged   the reader with resync on copies of the dump: the first batch's length overwritten
            (issue 26's case), 1 MB of random bytes in the middle, 16 MB of zeros in the middle, and a
            64 MB zero-filled tail (a preallocated segment), each with the problems it reports.

    .venv/bin/python benchmarks/resync.py [--records N] [--commits kafka-4.4|v3] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

import _gen  # noqa: E402

from kgroup.decode.spark.plan import split_file  # noqa: E402
from kgroup.records.segment import iter_segment  # noqa: E402


def read(path: str, resync: bool) -> tuple[int, list]:
    problems: list = []
    records = 0
    for batch in iter_segment(path, on_error=problems.append, resync=resync):
        records += len(batch.records)
    return records, [str(p).replace(path, "FILE") for p in problems]


def best(repeat: int, fn, *args):
    seconds, result = float("inf"), None
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        result = fn(*args)
        seconds = min(seconds, time.perf_counter() - start)
    return seconds, result


def damaged_copy(path: str, name: str, damage) -> str:
    out = os.path.join(os.path.dirname(os.path.dirname(path)), name, "00000000000000000000.log")
    os.makedirs(os.path.dirname(out))
    shutil.copyfile(path, out)
    with open(out, "r+b") as f:
        damage(f, os.path.getsize(out))
    return out


def _first_length(f, size):
    f.seek(8)
    f.write(b"test")


def _random_middle(f, size):
    f.seek(size // 2)
    f.write(random.Random(1).randbytes(1 << 20))


def _zeros_middle(f, size):
    f.seek(size // 3)
    f.write(bytes(16 << 20))


def _zero_tail(f, size):
    f.seek(size)
    f.write(bytes(64 << 20))


DAMAGES = [("first batch's length overwritten", _first_length), ("1 MB of random bytes in the middle", _random_middle),
           ("16 MB of zeros in the middle", _zeros_middle), ("64 MB zero-filled tail", _zero_tail)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--commits", default="kafka-4.4", choices=_gen.COMMIT_LAYOUTS)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kgroup-bench-resync-") as tmp:
        path = os.path.join(tmp, "clean", "00000000000000000000.log")
        os.makedirs(os.path.dirname(path))
        info = _gen.write_dump(path, args.records, commits=args.commits)
        mb = info["bytes"] / 1e6
        print(f"dump: {info['records']:,} records, {info['batches']:,} batches, {mb:.1f} MB; "
              f"load average {os.getloadavg()[0]:.2f}")
        for resync in (False, True, False, True):  # twice each, interleaved
            seconds, (records, problems) = best(args.repeat, read, path, resync)
            print(f"clean, reader {'with' if resync else 'without'} resync: {seconds:.3f} s "
                  f"= {records / seconds:,.0f} records/s, {mb / seconds:.0f} MB/s ({len(problems)} problems)")
        for resync in (False, True):
            seconds, ranges = best(args.repeat, split_file, path, 4 << 20, None, resync)
            print(f"clean, Spark plan (4 MB ranges) {'with' if resync else 'without'} resync: "
                  f"{seconds * 1000:.1f} ms for {len(ranges)} ranges")
        for label, damage in DAMAGES:
            copy = damaged_copy(path, label.split()[0] + str(DAMAGES.index((label, damage))), damage)
            seconds, (records, problems) = best(args.repeat, read, copy, True)
            size = os.path.getsize(copy) / 1e6
            print(f"{label}: {seconds:.3f} s for {size:.1f} MB, {records:,} records "
                  f"({info['records'] - records:,} lost)")
            for text in problems:
                print(f"  {text}")
            plan_s, ranges = best(1, split_file, copy, 4 << 20, None, True)
            print(f"  Spark plan: {plan_s * 1000:.1f} ms, {len(ranges)} ranges")
        print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
