"""A realistic `__consumer_offsets` dump for the benchmarks, written with kgroup's writer.

Like a busy coordinator partition: many groups, each committing ~50 partitions per
OffsetCommit (one batch per commit), and every few rounds a GroupMetadataValue v3 with a few
static members (KIP-345 groupInstanceId set).

Commits are written as Kafka 4.4 writes them by default (``commits="kafka-4.4"``): OffsetCommitValue
v4 with the topic's id in tagged field 0 (topicId), what the real 4.4 broker wrote for the classic,
the consumer and the transactional group's commits alike in tests/vectors/kafka-4.4/ (leader epoch
0, empty metadata, 42-byte values). ``commits="v3"`` writes the layout of Kafka 2.1-3.x
(OffsetCommitValue v3, 24 bytes), which the benchmark figures before Kafka 4.4 were measured on.
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


COMMIT_LAYOUTS = ("kafka-4.4", "v3")


def write_dump(path: str, records: int = 1_000_000, groups: int = 400, partitions: int = 50,
               metadata_every: int = 10, compression: str = "none", seed: int = 7,
               commits: str = "kafka-4.4") -> dict:
    """Write the dump; returns counts of what was written. commits: one of COMMIT_LAYOUTS."""
    if commits not in COMMIT_LAYOUTS:
        raise ValueError(f"commits: one of {COMMIT_LAYOUTS}, not {commits!r}")
    offset_value = _v4_topic_id_value if commits == "kafka-4.4" else _v3_value
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
                    rows.append((k, offset_value(off, ts, topic), ts))
                w.append(rows, compression=compression, base_sequence=0)
                written += len(rows)
                batches += 1
            round_no += 1
    return {"records": written, "batches": batches, "metadata_records": metadata_records,
            "bytes": os.path.getsize(path), "commits": commits}


_V3 = struct.Struct(">hqihq")  # version, offset, leaderEpoch, metadata length, commitTimestamp
#: version, offset, leaderEpoch, compact metadata length (1: empty), commitTimestamp, one tagged
#: field (count 1), tag 0 (topicId), its size (16), the uuid
_V4_TOPIC_ID = struct.Struct(">hqiBqBBB16s")


def _v3_value(offset: int, ts: int, topic: str) -> bytes:
    """OffsetCommitValue v3 with empty metadata (what encode_value(1, 3, ...) produces)."""
    return _V3.pack(3, offset, 0, 0, ts)


def topic_id(topic: str) -> bytes:
    """A stable made-up topic id per topic name (Kafka's are random v4 uuids)."""
    return random.Random(topic).randbytes(16)


def _v4_topic_id_value(offset: int, ts: int, topic: str) -> bytes:
    """OffsetCommitValue v4 as Kafka 4.4 writes it: empty metadata, the topic's id in tag 0
    (what encode_value(1, 4, {..., "topicId": ...}) produces)."""
    return _V4_TOPIC_ID.pack(4, offset, 0, 1, ts, 1, 0, 16, topic_id(topic))


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
    print(write_dump(out, int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000,
                     commits=sys.argv[3] if len(sys.argv) > 3 else "kafka-4.4"))
