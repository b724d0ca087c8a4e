"""Decode throughput: kgroup's segment reader + record decoder against a kafka-python baseline.

Both sides read the same generated dump in this run, on one core:
  baseline  kafka.record.MemoryRecords over the whole file, keys/values decoded by hand
            with struct (types 1 and 2 only, which is all the dump holds);
  kgroup    iter_segment + kgroup.records.decode_key/decode_value for every record;
  and the whole `kgroup decode-offsets` process (start-up included, bytecode cached as installed,
  output to /dev/null) for
  `--view state -o json`, `-o jsonl` and `-o dump-log`, each against the same baseline.
--large also decodes a ~1 GB copy in a child process and prints its peak RSS next to the
small file's, to show memory stays flat in input size.

--commits chooses how the dump's offset commits are laid out (benchmarks/_gen.py): `kafka-4.4`
(the default: OffsetCommitValue v4 with the topicId tagged field, as Kafka 4.4 writes every commit),
`v3` (Kafka 2.1-3.x), or `both` (the whole benchmark on each, one after the other).
--before DIR also times each `decode-offsets` command with another checkout's kgroup (DIR holds
its `kgroup/` package: `git archive COMMIT kgroup | tar -x -C DIR`), interleaved with this one's
on the same file, and prints the ratio; --repeat N times every command N times each way and keeps
the best (the machine's load average is printed with each layout's figures).

    .venv/bin/python benchmarks/decode.py [--records N] [--codec none|gzip|...] [--large]
        [--commits kafka-4.4|v3|both] [--before DIR] [--repeat N]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

import _gen  # noqa: E402

_H = struct.Struct(">h")
_I = struct.Struct(">i")
_Q = struct.Struct(">q")


def _string(buf, pos):
    (n,) = _H.unpack_from(buf, pos)
    pos += 2
    if n < 0:
        return None, pos
    return buf[pos:pos + n].decode(), pos + n


def _bytes(buf, pos):
    (n,) = _I.unpack_from(buf, pos)
    pos += 4
    if n < 0:
        return None, pos
    return buf[pos:pos + n], pos + n


def hand_decode_key(buf):
    (rtype,) = _H.unpack_from(buf, 0)
    group, pos = _string(buf, 2)
    if rtype == 2:
        return rtype, {"group": group}
    topic, pos = _string(buf, pos)
    (partition,) = _I.unpack_from(buf, pos)
    return rtype, {"group": group, "topic": topic, "partition": partition}


def hand_decode_value(rtype, buf):
    if buf is None:
        return None
    (version,) = _H.unpack_from(buf, 0)
    if rtype == 1:  # OffsetCommitValue v3, or v4 (compact metadata, tagged fields: topicId)
        (offset,) = _Q.unpack_from(buf, 2)
        (epoch,) = _I.unpack_from(buf, 10)
        if version < 4:
            metadata, pos = _string(buf, 14)
        else:  # one-byte compact length, as the generated dump has it
            pos = 15 + buf[14] - 1
            metadata = buf[15:pos].decode()
        (ts,) = _Q.unpack_from(buf, pos)
        data = {"offset": offset, "leaderEpoch": epoch, "metadata": metadata, "commitTimestamp": ts}
        if version >= 4:
            pos += 8
            for _ in range(buf[pos]):  # one-byte tags and sizes
                tag, size = buf[pos + 1], buf[pos + 2]
                if tag == 0:
                    data["topicId"] = buf[pos + 3:pos + 3 + size]
                pos += 2 + size
        return version, data
    protocol_type, pos = _string(buf, 2)  # GroupMetadataValue v3
    (generation,) = _I.unpack_from(buf, pos)
    protocol, pos = _string(buf, pos + 4)
    leader, pos = _string(buf, pos)
    (state_ts,) = _Q.unpack_from(buf, pos)
    (count,) = _I.unpack_from(buf, pos + 8)
    pos += 12
    members = []
    for _ in range(count):
        member_id, pos = _string(buf, pos)
        instance_id, pos = _string(buf, pos)
        client_id, pos = _string(buf, pos)
        client_host, pos = _string(buf, pos)
        (rebalance,) = _I.unpack_from(buf, pos)
        (session,) = _I.unpack_from(buf, pos + 4)
        subscription, pos = _bytes(buf, pos + 8)
        assignment, pos = _bytes(buf, pos)
        members.append({"memberId": member_id, "groupInstanceId": instance_id,
                        "clientId": client_id, "clientHost": client_host,
                        "rebalanceTimeout": rebalance, "sessionTimeout": session,
                        "subscription": subscription, "assignment": assignment})
    return version, {"protocolType": protocol_type, "generation": generation,
                     "protocol": protocol, "leader": leader,
                     "currentStateTimestamp": state_ts, "members": members}


def run_baseline(path: str) -> tuple[int, int]:
    from kafka.record import MemoryRecords

    with open(path, "rb") as f:
        records = MemoryRecords(f.read())
    count = checksum = 0
    while records.has_next():
        batch = records.next_batch()
        for rec in batch:
            rtype, key = hand_decode_key(rec.key)
            value = hand_decode_value(rtype, rec.value)
            count += 1
            if rtype == 1:
                checksum += value[1]["offset"]
    return count, checksum


def run_kgroup(path: str) -> tuple[int, int]:
    from kgroup.records import decode_key, decode_value
    from kgroup.records.segment import iter_segment

    count = checksum = 0
    errors = []
    for batch in iter_segment(path, on_error=errors.append):
        for rec in batch.records:
            key = decode_key(rec.key)
            value = decode_value(key.record_type, rec.value)
            count += 1
            if key.record_type == 1:
                checksum += value.data["offset"]
    if errors:
        raise SystemExit(f"unexpected decode errors: {errors[:3]}")
    return count, checksum


def run_pipeline(path: str) -> tuple[int, int]:
    """What `decode-offsets --view state` does before rendering: the undecoded records collapsed by
    key bytes, the survivors decoded and replayed with Kafka's rules into the latest state."""
    from kgroup.decode.decoder import ProblemLog, RowDecoder, iter_decoded
    from kgroup.decode.state import PartitionState
    from kgroup.decode.state_replay import CompactingReplay
    from kgroup.records.segment import segment_file

    problems = ProblemLog()
    state = PartitionState()
    segment = segment_file(path)
    replay = CompactingReplay(state, RowDecoder(segment, "consumer", problems), problems)
    count = 0
    for batch, records in iter_decoded(segment, "consumer", problems, decode=False):
        count += len(records)
        replay.batch(batch, records)
    replay.flush()
    if problems.problems:
        raise SystemExit(f"unexpected problems: {problems.problems[:3]}")
    return count, sum(r.value.data["offset"] for r in state.committed_rows())


#: The commands run with bytecode cached, as an installed kgroup has it (pip compiles on install);
#: a PYTHONDONTWRITEBYTECODE environment would otherwise compile every module on each start.
COMMAND_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

COMMAND_FORMATS = (("--view state -o json", ("--view", "state", "-o", "json")),
                   ("-o jsonl", ("-o", "jsonl")), ("-o dump-log", ("-o", "dump-log")))


def warm_bytecode(tmp: str, kgroup_dir: str | None = None) -> None:
    """Run each timed command once on a small dump, so the timed runs find their bytecode cached
    (kgroup_dir's too, when given)."""
    COMMAND_ENV["PYTHONPYCACHEPREFIX"] = os.path.join(tmp, "pycache")
    path = os.path.join(tmp, "warm", "00000000000000000000.log")
    os.makedirs(os.path.dirname(path))
    _gen.write_dump(path, 1000)
    for _label, fmt in COMMAND_FORMATS:
        run_command(path, *fmt)
        if kgroup_dir:
            run_command(path, *fmt, kgroup_dir=kgroup_dir)


def _command_env(kgroup_dir: str | None) -> dict:
    if kgroup_dir is None:
        return COMMAND_ENV
    return dict(COMMAND_ENV, PYTHONPATH=os.pathsep.join(
        [kgroup_dir] + [p for p in [COMMAND_ENV.get("PYTHONPATH")] if p]))


def run_command(path: str, *args: str, kgroup_dir: str | None = None) -> tuple[int, float]:
    """The whole `kgroup decode-offsets` command in a fresh process, output to /dev/null;
    kgroup_dir: another checkout's kgroup (first on PYTHONPATH) instead of this one. Returns
    (0, the process's CPU seconds, user + system). It runs in the dump's directory: `python -m`
    puts the working directory first on sys.path, and a checkout's own kgroup there would win."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(os.devnull, "w") as sink:
        subprocess.run([sys.executable, "-m", "kgroup.commands.cli", "decode-offsets", *args, path],
                       stdout=sink, check=True, env=_command_env(kgroup_dir), cwd=os.path.dirname(path))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return 0, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def same_output(path: str, kgroup_dir: str, *args: str) -> bool:
    """Whether this checkout's command and kgroup_dir's write the same bytes for the file."""
    digests = []
    for where in (None, kgroup_dir):
        digest = hashlib.sha256()
        with subprocess.Popen([sys.executable, "-m", "kgroup.commands.cli", "decode-offsets", *args, path],
                              stdout=subprocess.PIPE, env=_command_env(where), cwd=os.path.dirname(path)) as proc:
            for chunk in iter(lambda: proc.stdout.read(1 << 20), b""):
                digest.update(chunk)
        if proc.returncode:
            raise SystemExit(f"decode-offsets {' '.join(args)} exited {proc.returncode}")
        digests.append(digest.digest())
    return digests[0] == digests[1]


_COMMAND_HWM = """
import atexit, runpy, sys

def report():
    with open("/proc/self/status") as status:
        hwm = next((line.split()[1] for line in status if line.startswith("VmHWM:")), "0")
    sys.stderr.write(f"VmHWM-kB {hwm}\\n")

atexit.register(report)
sys.argv = ["kgroup", *sys.argv[1:]]
runpy.run_module("kgroup.commands.cli", run_name="__main__")
"""


def command_peak(path: str, *args: str) -> tuple[float, float]:
    """(seconds, peak RSS in MB from VmHWM) of the whole `kgroup decode-offsets` process."""
    start = time.perf_counter()
    with open(os.devnull, "w") as sink:
        done = subprocess.run([sys.executable, "-c", _COMMAND_HWM, "decode-offsets", *args, path],
                              stdout=sink, stderr=subprocess.PIPE, text=True, check=True, env=COMMAND_ENV)
    seconds = time.perf_counter() - start
    hwm = [line.split()[1] for line in done.stderr.splitlines() if line.startswith("VmHWM-kB ")]
    return seconds, int(hwm[-1]) / 1024 if hwm else float("nan")


def run_reader_only(path: str) -> tuple[int, int]:
    """kgroup's batch reader alone (no key/value decoding), to show where the time goes."""
    from kgroup.records.segment import iter_segment

    count = 0
    for batch in iter_segment(path, on_error=None):
        count += len(batch.records)
    return count, 0


def timed(fn, path):
    start = time.perf_counter()
    count, checksum = fn(path)
    return count, checksum, time.perf_counter() - start


_CHILD = """
import json, resource, sys, time
sys.path.insert(0, {here!r})
import decode
start = time.perf_counter()
count, _ = decode.run_kgroup({path!r})
seconds = time.perf_counter() - start
hwm = None
try:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) / 1024
except OSError:
    pass
print(json.dumps({{"records": count, "seconds": seconds, "vm_hwm_mb": hwm,
                  "ru_maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def child_rss(path: str) -> dict:
    """Decode in a fresh process so its peak RSS is kgroup's alone.

    Linux carries ru_maxrss across fork+exec (the child starts with the parent's peak), so
    the clean figure is VmHWM from /proc, which is per address space; both are reported.
    """
    code = _CHILD.format(here=HERE, path=path)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def _rss(info: dict) -> str:
    hwm = info["vm_hwm_mb"]
    clean = f"{hwm:.0f} MB (VmHWM)" if hwm is not None else "n/a"
    return f"{clean}, getrusage ru_maxrss {info['ru_maxrss_mb']:.0f} MB"


def _load() -> str:
    return "load average %.2f %.2f %.2f" % os.getloadavg()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--codec", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"])
    ap.add_argument("--large", action="store_true", help="also measure peak RSS on a ~1 GB dump")
    ap.add_argument("--commits", default="kafka-4.4", choices=[*_gen.COMMIT_LAYOUTS, "both"],
                    help="how offset commits are laid out (default: as Kafka 4.4 writes them)")
    ap.add_argument("--before", metavar="DIR", help="also time the commands with DIR's kgroup package")
    ap.add_argument("--repeat", type=int, default=1, help="time each command N times, keep the best")
    args = ap.parse_args()
    layouts = _gen.COMMIT_LAYOUTS if args.commits == "both" else (args.commits,)
    with tempfile.TemporaryDirectory(prefix="kgroup-bench-") as tmp:
        warm_bytecode(tmp, args.before)
        for commits in layouts:
            bench(args, tmp, commits)


def bench(args, tmp: str, commits: str) -> None:
    """The whole benchmark on one dump whose commits are laid out as `commits` says."""
    path = os.path.join(tmp, commits, "00000000000000000000.log")
    os.makedirs(os.path.dirname(path))
    t = time.perf_counter()
    info = _gen.write_dump(path, args.records, compression=args.codec, commits=commits)
    print(f"dump: {info['records']:,} records ({info['metadata_records']:,} GroupMetadata v3), "
          f"commits {commits}, "
          f"{info['batches']:,} batches, {info['bytes'] / 1e6:.1f} MB, codec {args.codec}, "
          f"generated in {time.perf_counter() - t:.1f} s; {_load()}")
    mb = info["bytes"] / 1e6
    if args.codec == "snappy":
        print("baseline: skipped (kafka-python needs python-snappy, not installed)")
        base = None
    else:
        n, base_sum, base_s = timed(run_baseline, path)
        base = n / base_s
        print(f"baseline kafka-python MemoryRecords + struct: {n:,} records in {base_s:.2f} s "
              f"= {base:,.0f} records/s, {mb / base_s:.1f} MB/s")
    n, kg_sum, kg_s = timed(run_kgroup, path)
    rate = n / kg_s
    print(f"kgroup iter_segment + decode_key/decode_value: {n:,} records in {kg_s:.2f} s "
          f"= {rate:,.0f} records/s, {mb / kg_s:.1f} MB/s")
    n, _, rd_s = timed(run_reader_only, path)
    print(f"  of which the reader alone (iter_segment, no key/value decoding): {rd_s:.2f} s "
          f"= {n / rd_s:,.0f} records/s, {mb / rd_s:.1f} MB/s")
    n, _, pl_s = timed(run_pipeline, path)
    print(f"kgroup state replay, survivors decoded (decode-offsets --view state before output): "
          f"{pl_s:.2f} s = {n / pl_s:,.0f} records/s"
          + (f", {n / pl_s / base:.2f}x baseline" if base else ""))
    for label, fmt in COMMAND_FORMATS:
        cmd_s = before_s = cmd_cpu = before_cpu = float("inf")
        for _ in range(max(1, args.repeat)):  # interleaved: both ways see the same load
            _, cpu, wall = timed(lambda p, fmt=fmt: run_command(p, *fmt), path)
            cmd_s, cmd_cpu = min(cmd_s, wall), min(cmd_cpu, cpu)
            if args.before:
                _, cpu, wall = timed(lambda p, fmt=fmt: run_command(p, *fmt, kgroup_dir=args.before), path)
                before_s, before_cpu = min(before_s, wall), min(before_cpu, cpu)
        cmd_rate = info["records"] / cmd_s
        print(f"kgroup decode-offsets {label} > /dev/null (whole process): {cmd_s:.2f} s "
              f"= {cmd_rate:,.0f} records/s" + (f", {cmd_rate / base:.2f}x baseline" if base else "")
              + f" (CPU {cmd_cpu:.2f} s)")
        if args.before:
            same = same_output(path, args.before, *fmt)
            print(f"  before ({args.before}): {before_s:.2f} s = {info['records'] / before_s:,.0f} "
                  f"records/s (CPU {before_cpu:.2f} s); after/before speed {before_s / cmd_s:.2f}x, "
                  f"by CPU {before_cpu / cmd_cpu:.2f}x{'' if same else ' -- OUTPUT DIFFERS'}")
    print(f"  ({_load()})")
    if base is not None:
        if base_sum != kg_sum:
            raise SystemExit(f"checksums differ: baseline {base_sum}, kgroup {kg_sum}")
        print(f"ratio kgroup/baseline: {rate / base:.2f}x (same offsets checksum {kg_sum})")
    print(f"process peak RSS so far: "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    if args.large:
        small = child_rss(path)
        path_small = os.path.join(tmp, commits + "-small", "00000000000000000000.log")
        os.makedirs(os.path.dirname(path_small))
        shutil.copyfile(path, path_small)
        size = _gen.grow(path, 1 << 30)
        large = child_rss(path)
        print(f"peak RSS kgroup alone on {mb:.0f} MB: {_rss(small)}")
        print(f"peak RSS kgroup alone on {size / 1e6:.0f} MB: {_rss(large)} "
              f"({large['records']:,} records at {large['records'] / large['seconds']:,.0f}/s)")
        for label, where, size_mb in (("small", path_small, mb), ("large", path, size / 1e6)):
            seconds, peak = command_peak(where, "--view", "state", "-o", "json")
            print(f"kgroup decode-offsets --view state -o json on {size_mb:.0f} MB (whole process): "
                  f"{seconds:.2f} s, peak RSS {peak:.0f} MB (VmHWM)")


if __name__ == "__main__":
    main()
