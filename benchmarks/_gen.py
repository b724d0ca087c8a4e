"""A realistic `__consumer_offsets` dump for the benchmarks, written with kgroup's writer.

Like a busy coordinator partition: many groups, each committing ~50 partitions per
OffsetCommit (one batch per commit, OffsetCommitValue v3), and every few rounds a
GroupMetadataValue v3 with a few static members (KIP-345 groupInstanceId set).
"""

from __future__ import annotations

import os
import random
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from kgroup.records import encode_key, encode_value  # noqa: E402
from kgroup.records.writer import LogWriter  # noqa: E402

BASE_TS = 1_700_000_000_000


def _subscription(topics):
    out = struct.pack(">hi", 1, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">ii", -1, 0)


def _assignment(topic, partitions):
    out = struct.pack(">hi", 1, 1) + struct.pack(">h", len(topic)) + topic.encode()
    out += struct.pack(">i", len(partitions)) + b"".join(struct.pack(">i", p) for p in partitions)
    return out + struct.pack(">i", -1)


def group_metadata(group: str, topic: str, generation: int, ts: int, members: int) -> bytes:
    parts = list(range(50))
    return encode_value(2, 3, {
        "protocolType": "consumer", "generation": generation, "protocol": "range",
        "leader": f"{group}-instance-0-{generation}", "currentStateTimestamp": ts,
        "members": [{
            "memberId": f"{group}-instance-{m}-{generation}", "groupInstanceId": f"{group}-instance-{m}",
            "clientId": f"client-{m}", "clientHost": f"/10.0.{m}.7", "rebalanceTimeout": 300000,
            "sessionTimeout": 45000, "subscription": _subscription([topic]),
            "assignment": _assignment(topic, parts[m::members]),
        } for m in range(members)],
    })


def write_dump(path: str, records: int = 1_000_000, groups: int = 400, partitions: int = 50,
               metadata_every: int = 10, compression: str = "none", seed: int = 7) -> dict:
    """Write the dump; returns counts of what was written."""
    rng = random.Random(seed)
    names = [(f"payments-consumer-{g:04d}", f"topic-{g % 37:02d}") for g in range(groups)]
    keys = {}
    offsets = {}
    meta = {}
    written = batches = metadata_records = 0
    ts = BASE_TS
    round_no = 0
    with open(path, "wb") as f:
        w = LogWriter(f)
        while written < records:
            for group, topic in names:
                if written >= records:
                    break
                ts += rng.randint(1, 20)
                if round_no % metadata_every == 0:
                    gen = round_no // metadata_every + 1
                    if group not in meta:
                        meta[group] = encode_key(2, {"group": group})
                    value = group_metadata(group, topic, gen, ts, members=3 + (hash(group) & 3))
                    w.append([(meta[group], value, ts)], compression=compression)
                    written += 1
                    metadata_records += 1
                    batches += 1
                rows = []
                for p in range(partitions):
                    k = keys.get((group, topic, p))
                    if k is None:
                        k = keys[(group, topic, p)] = encode_key(
                            1, {"group": group, "topic": topic, "partition": p})
                    off = offsets[(group, p)] = offsets.get((group, p), rng.randint(0, 10**6)) + \
                        rng.randint(0, 500)
                    rows.append((k, _offset_value(off, ts), ts))
                w.append(rows, compression=compression, base_sequence=0)
                written += len(rows)
                batches += 1
            round_no += 1
    return {"records": written, "batches": batches, "metadata_records": metadata_records,
            "bytes": os.path.getsize(path)}


_V3 = struct.Struct(">hqih")  # version, offset, leaderEpoch, metadata length (then commitTimestamp)


def _offset_value(offset: int, ts: int) -> bytes:
    """OffsetCommitValue v3 with empty metadata (what encode_value(1, 3, ...) produces)."""
    return _V3.pack(3, offset, 0, 0) + struct.pack(">q", ts)


def grow(path: str, target_bytes: int) -> int:
    """Append copies of the file to itself until it reaches target_bytes; returns the size."""
    with open(path, "rb") as f:
        blob = f.read()
    size = len(blob)
    with open(path, "ab") as f:
        while size < target_bytes:
            f.write(blob)
            size += len(blob)
    return size


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "dump.log"
    print(write_dump(out, int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000))
