"""The order Java's ``HashMap`` and ``HashSet`` iterate in, for the keys Kafka's assignors walk.

Kafka's server-side assignors walk hash maps where they do not sort: the uniform assignor takes
members in the order of the ``HashMap`` its ``TargetAssignmentBuilder`` fills, topics in the order
of a ``HashSet<Uuid>``, a member's partitions in the order of a ``HashSet<Integer>``. Which member
gets a freed partition, or keeps an extra one, follows from that order, so kgroup reproduces it:
a key's bucket is its Java ``hashCode`` spread as ``HashMap.hash`` does (``h ^ (h >>> 16)``) and
masked by the table's capacity; the table iterates bucket by bucket, and a bucket in the order its
keys were put (a resize splits buckets without reordering them). Callers pass keys in the order
Kafka would put them, so the result is exact wherever that order is known; where it is not (the
coordinator's own member table is a ``TimelineHashMap``), only keys sharing a bucket can differ.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, Iterable

from .topic_ids import uuid_bytes

_MASK32 = 0xFFFFFFFF
DEFAULT_CAPACITY = 16
LOAD_FACTOR = 0.75


def _int32(value: int) -> int:
    value &= _MASK32
    return value - (1 << 32) if value & 0x80000000 else value


@lru_cache(maxsize=1 << 16)
def string_hash(text: str) -> int:
    """Java's ``String.hashCode``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units, in 32 bits.
    Cached: the coordinator orders the same member ids at every epoch bump."""
    h = 0
    if text.isascii():
        for char in text.encode():
            h = (31 * h + char) & _MASK32
    else:
        data = text.encode("utf-16-be", "surrogatepass")
        for i in range(0, len(data), 2):
            h = (31 * h + (data[i] << 8 | data[i + 1])) & _MASK32
    return _int32(h)


def uuid_hash(topic_id: object) -> int:
    """Kafka's ``Uuid.hashCode``: the two 64-bit halves xor-ed, then the two 32-bit halves of that.
    A topic id that is not a Uuid (kgroup's tests name topics) hashes as its text."""
    raw = uuid_bytes(topic_id)
    if raw is None:
        return string_hash(str(topic_id))
    hilo = int.from_bytes(raw[:8], "big") ^ int.from_bytes(raw[8:], "big")
    return _int32((hilo >> 32) ^ hilo)


def int_hash(value: int) -> int:
    """``Integer.hashCode``: the value itself."""
    return value


def _spread(h: int) -> int:
    """``HashMap.hash``: the high half folded into the low one (of the 32-bit hash code)."""
    h &= _MASK32
    return h ^ (h >> 16)


def table_size_for(capacity: int) -> int:
    """``HashMap.tableSizeFor``: the least power of two at or above ``capacity`` (at least 1)."""
    n = 1
    while n < capacity:
        n <<= 1
    return n


def grown_capacity(size: int, capacity: int = DEFAULT_CAPACITY) -> int:
    """The table size of a map that started at ``capacity`` after ``size`` puts: it doubles each
    time its size passes three quarters of it."""
    while size > capacity * LOAD_FACTOR:
        capacity <<= 1
    return capacity


def copy_capacity(size: int) -> int:
    """The table size of ``new HashSet<>(collection)``: ``max(size / .75 + 1, 16)`` rounded up to a
    power of two."""
    return grown_capacity(size, table_size_for(max(int(size / LOAD_FACTOR) + 1, DEFAULT_CAPACITY)))


def map_copy_capacity(size: int) -> int:
    """The table size of ``new HashMap<>(map)`` for a map of ``size`` entries (``putMapEntries``:
    ``size / .75 + 1`` rounded up to a power of two)."""
    return grown_capacity(size, table_size_for(int(size / LOAD_FACTOR + 1)))


def hash_order(keys: Iterable, hash_code: Callable[[object], int], capacity: int | None = None) -> list:
    """``keys`` (in the order they were put) in the order a Java hash table of ``capacity`` (by
    default: a ``new HashMap<>()`` after these puts) iterates them."""
    keys = list(keys)
    mask = (grown_capacity(len(keys)) if capacity is None else capacity) - 1
    buckets = []
    for key in keys:
        buckets.append(_spread(hash_code(key)) & mask)
    # sorted is stable: keys sharing a bucket stay in the order they were put
    return [key for _, key in sorted(zip(buckets, keys), key=_first)]


def _first(pair):
    return pair[0]


_FIBONACCI = 0x9E3779B97F4A7C15            # Knuth's multiplier, as BaseHashTable.findSlot uses it


def timeline_capacity(high_water: int) -> int:
    """The slot count of a ``TimelineHashMap`` created empty (2 slots) that once held ``high_water``
    entries: it doubles before a put would pass three quarters full, and never shrinks."""
    capacity = 2
    while high_water * LOAD_FACTOR > capacity:
        capacity <<= 1
    return capacity


def timeline_order(keys: Iterable[str], capacity: int) -> list:
    """String keys (in the order they were put) as Kafka's ``TimelineHashMap`` iterates them: slot by
    slot, a slot being the top bits of the key's hash times the Fibonacci multiplier
    (``BaseHashTable.findSlot``), and a slot's keys last put first (its ``CurrentIterator`` takes
    them from the end of the slot's list)."""
    shift = 64 - (capacity.bit_length() - 1)
    mask64 = (1 << 64) - 1
    keys = list(keys)
    return [key for _, _, key in sorted(
        (((string_hash(key) * _FIBONACCI) & mask64) >> shift, -index, key) for index, key in enumerate(keys))]


def member_order(member_ids: Iterable[str], added: Iterable[str] = (), high_water: int | None = None) -> list:
    """Members as the assignor's ``groupSpec.memberIds()`` gives them. ``member_ids``: the group's
    member table in the order members joined; ``added``: members the operation adds, which Kafka's
    overlay view (``UpdatedMembersAndTargetAssignmentView``) walks after the table; ``high_water``:
    the most members the table ever held (its size now by default). ``TargetAssignmentBuilder``
    puts them, in that order, into a ``new HashMap<>()``, which the assignor walks."""
    member_ids = list(member_ids)
    added = set(added)
    table = [m for m in member_ids if m not in added]
    capacity = timeline_capacity(max(len(table), high_water or 0))
    return hash_order(timeline_order(table, capacity) + [m for m in member_ids if m in added], string_hash)


def topic_set_order(topic_ids: Iterable) -> list:
    """Topic ids as a ``new HashSet<>(ids)`` iterates them."""
    topic_ids = list(topic_ids)
    return hash_order(topic_ids, uuid_hash, copy_capacity(len(topic_ids)))


def topic_map_order(topic_ids: Iterable) -> list:
    """Topic ids as a member's assignment map (``Collectors.toMap``: a ``new HashMap<>()``) iterates them."""
    return hash_order(topic_ids, uuid_hash)


def partition_set_order(partitions: Iterable[int]) -> list:
    """Partitions as ``new HashSet<>(partitions)`` iterates them (a record's list, ascending, put in)."""
    partitions = sorted(partitions)
    return hash_order(partitions, int_hash, copy_capacity(len(partitions)))
