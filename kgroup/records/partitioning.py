"""Which ``__consumer_offsets`` partition holds a group (``Utils.abs(groupId.hashCode()) % n``)."""

from __future__ import annotations


def java_string_hash(text: str) -> int:
    """Java ``String.hashCode``: over UTF-16 code units, int32 wraparound, signed result."""
    units = text.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def partition_for(group_id: str, partitions: int = 50) -> int:
    """Kafka's ``Utils.abs`` maps Integer.MIN_VALUE to 0, unlike ``Math.abs``."""
    if partitions <= 0:
        raise ValueError(f"partitions must be positive, got {partitions}")
    h = java_string_hash(group_id)
    return (0 if h == -0x80000000 else abs(h)) % partitions
