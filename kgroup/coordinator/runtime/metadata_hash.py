"""A consumer group's metadata hash (KIP-1101, Kafka 4.1+): ``Utils.computeTopicHash`` and
``Utils.computeGroupHash``, byte for byte.

Since Kafka 4.1 a consumer group no longer keeps its subscribed topics' metadata in a
ConsumerGroupPartitionMetadata record: ConsumerGroupMetadataValue carries one 64-bit hash of them
(tagged field MetadataHash), and a heartbeat that computes a different hash bumps the group epoch —
partitions added, a topic created or deleted, a replica's rack changed. The value is the same as
the real broker's for the same topics, so kgroup's records and Kafka's can be compared field by field.

Kafka streams its input into hash4j's ``Hashing.xxh3_64().hashStream()`` (XXH3-64, seed 0), which
lays values out little-endian and writes a string as its UTF-16LE code units followed by its length
in code units (an int). A stream's hash is the hash of the bytes it was fed, so the bytes are built
here and hashed once.
"""

from __future__ import annotations

import struct
import uuid
from typing import Iterable, Mapping, Sequence

import xxhash

TOPIC_HASH_MAGIC_BYTE = b"\x00"    # Kafka's Utils.TOPIC_HASH_MAGIC_BYTE: the version of the topic hash

_int = struct.Struct("<i").pack
_long = struct.Struct("<q").pack
_two_longs = struct.Struct("<qq").pack


def _signed(value: int) -> int:
    """XXH3's unsigned 64 bits as Java's long."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _string(text: str) -> bytes:
    """hash4j's putString: the UTF-16 code units, then their count."""
    units = text.encode("utf-16-le")
    return units + _int(len(units) // 2)


def topic_hash(topic_id: uuid.UUID, name: str, partitions: int,
               racks: Sequence[Iterable[str]] | None = None) -> int:
    """Kafka's computeTopicHash: magic byte, topic id (most, then least significant long), name,
    partition count, then each partition's index and its replicas' racks, sorted, each as its
    length and itself. ``racks[i]``: the racks of partition i's replicas (none when not given)."""
    msb, lsb = _signed(topic_id.int >> 64), _signed(topic_id.int & ((1 << 64) - 1))
    parts = [TOPIC_HASH_MAGIC_BYTE, _two_longs(msb, lsb), _string(name), _int(partitions)]
    for index in range(partitions):
        parts.append(_int(index))
        if racks is not None and index < len(racks):
            for rack in sorted(racks[index], key=_java_order):
                parts.append(_int(len(rack.encode("utf-16-le")) // 2))
                parts.append(_string(rack))
    return _signed(xxhash.xxh3_64_intdigest(b"".join(parts)))


def _java_order(text: str) -> bytes:
    """Java's String.compareTo order: by UTF-16 code units."""
    return text.encode("utf-16-be")


def group_hash(topic_hashes: Mapping[str, int]) -> int:
    """Kafka's computeGroupHash: 0 without topics, else the hash of the topic hashes in topic-name order."""
    if not topic_hashes:
        return 0
    data = b"".join(_long(topic_hashes[name]) for name in sorted(topic_hashes, key=_java_order))
    return _signed(xxhash.xxh3_64_intdigest(data))
