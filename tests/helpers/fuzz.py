"""Fuzzing material shared by the record fuzz and codegen tests: seeds and one mutation strategy."""

import json

from hypothesis import strategies as st

from helpers import VECTORS


def kafka_vector_seeds() -> tuple[list[bytes], list[bytes]]:
    """The keys and values (not batches) of kafka_vectors.json, as raw bytes."""
    keys, values = [], []
    for v in json.loads((VECTORS / "kafka_vectors.json").read_text()):
        h = v.get("hex")
        if isinstance(h, dict):
            if h.get("key"):
                keys.append(bytes.fromhex(h["key"]))
            if h.get("value") and v["category"] != "batch":
                values.append(bytes.fromhex(h["value"]))
        elif isinstance(h, str) and v["kind"] == "value":
            values.append(bytes.fromhex(h))
    return keys, values


@st.composite
def mutated(draw, seeds):
    """A seed with up to four edits: bit flips, odd bytes, lengths made 0 or -1 (null), inserted,
    deleted, truncated or appended bytes."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(0, 4))):
        op = draw(st.sampled_from(["flip", "set", "zero2", "minus1", "insert", "delete", "truncate",
                                   "append"]))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "flip" and data:
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "set" and data:
            data[pos] = draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF]))
        elif op == "zero2":  # a length made 0
            data[pos:pos + 2] = b"\x00\x00"
        elif op == "minus1":  # a length made -1 (null)
            data[pos:pos + 2] = b"\xff\xff"
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=6))
        elif op == "delete" and data:
            del data[pos:pos + draw(st.integers(1, 4))]
        elif op == "truncate":
            del data[pos:]
        elif op == "append":
            data += draw(st.binary(min_size=1, max_size=8))
    return bytes(data)
