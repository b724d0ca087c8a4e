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

    .venv/bin/python benchmarks/decode.py [--records N] [--codec none|gzip|...] [--large]
"""

from __future__ import annotations

import argparse
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
    if rtype == 1:  # OffsetCommitValue v3
        (offset,) = _Q.unpack_from(buf, 2)
        (epoch,) = _I.unpack_from(buf, 10)
        metadata, pos = _string(buf, 14)
        (ts,) = _Q.unpack_from(buf, pos)
        return version, {"offset": offset, "leaderEpoch": epoch, "metadata": metadata,
                         "commitTimestamp": ts}
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


def warm_bytecode(tmp: str) -> None:
    """Run each timed command once on a small dump, so the timed runs find their bytecode cached."""
    COMMAND_ENV["PYTHONPYCACHEPREFIX"] = os.path.join(tmp, "pycache")
    path = os.path.join(tmp, "warm", "00000000000000000000.log")
    os.makedirs(os.path.dirname(path))
    _gen.write_dump(path, 1000)
    for _label, fmt in COMMAND_FORMATS:
        run_command(path, *fmt)


def run_command(path: str, *args: str) -> tuple[int, int]:
    """The whole `kgroup decode-offsets` command in a fresh process, output to /dev/null."""
    with open(os.devnull, "w") as sink:
        subprocess.run([sys.executable, "-m", "kgroup.commands.cli", "decode-offsets", *args, path],
                       stdout=sink, check=True, env=COMMAND_ENV)
    return 0, 0


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--codec", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"])
    ap.add_argument("--large", action="store_true", help="also measure peak RSS on a ~1 GB dump")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kgroup-bench-") as tmp:
        path = os.path.join(tmp, "00000000000000000000.log")
        t = time.perf_counter()
        info = _gen.write_dump(path, args.records, compression=args.codec)
        print(f"dump: {info['records']:,} records ({info['metadata_records']:,} GroupMetadata v3), "
              f"{info['batches']:,} batches, {info['bytes'] / 1e6:.1f} MB, codec {args.codec}, "
              f"generated in {time.perf_counter() - t:.1f} s")
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
        warm_bytecode(tmp)
        for label, fmt in COMMAND_FORMATS:
            _, _, cmd_s = timed(lambda p, fmt=fmt: run_command(p, *fmt), path)
            cmd_rate = info["records"] / cmd_s
            print(f"kgroup decode-offsets {label} > /dev/null (whole process): {cmd_s:.2f} s "
                  f"= {cmd_rate:,.0f} records/s" + (f", {cmd_rate / base:.2f}x baseline" if base else ""))
        if base is not None:
            if base_sum != kg_sum:
                raise SystemExit(f"checksums differ: baseline {base_sum}, kgroup {kg_sum}")
            print(f"ratio kgroup/baseline: {rate / base:.2f}x (same offsets checksum {kg_sum})")
        print(f"process peak RSS so far: "
              f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
        if args.large:
            small = child_rss(path)
            path_small = os.path.join(tmp, "small", "00000000000000000000.log")
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
