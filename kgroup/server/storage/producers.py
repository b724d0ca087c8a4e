"""Idempotent producers (KIP-98 without transactions): producer ids and per-partition sequences.

Producer ids come from blocks reserved in `<log-dir>/kgroup-producer-ids` (the next free id,
fsynced before any id of the block is handed out), so ids are never reused across restarts. Each
partition remembers, per producer, its epoch and its last five batches (first/last sequence and
offsets), rebuilt from the batch headers in the log on start-up, as Kafka's producer state is:
a retried batch is acknowledged with its original offset instead of being written twice, a gap
in sequence numbers is OUT_OF_ORDER_SEQUENCE_NUMBER, an older epoch INVALID_PRODUCER_EPOCH.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field

from kgroup.kafka_errors import INVALID_PRODUCER_EPOCH, NONE, OUT_OF_ORDER_SEQUENCE_NUMBER

BLOCK = 1000
CACHED_BATCHES = 5  # Kafka keeps the metadata of the last 5 batches per producer
INT32_MAX = 2 ** 31 - 1


class ProducerIdBlocks:
    def __init__(self, log_dir: str):
        self.path = os.path.join(log_dir, "kgroup-producer-ids")
        self._next = self._read()
        self._limit = self._next  # nothing reserved yet

    def _read(self) -> int:
        try:
            with open(self.path) as fh:
                return int(fh.read().strip() or 0)
        except FileNotFoundError:
            return 0
        except ValueError as exc:
            raise ValueError(f"{self.path}: not a producer id counter: {exc}") from None

    def _reserve(self):
        limit = self._next + BLOCK
        tmp = self.path + ".tmp"
        with open(tmp, "w") as fh:
            fh.write(f"{limit}\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        dir_fd = os.open(os.path.dirname(self.path) or ".", os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        self._limit = limit

    def allocate(self) -> int:
        if self._next >= self._limit:
            self._reserve()
        pid = self._next
        self._next += 1
        return pid


@dataclass
class _Producer:
    epoch: int
    batches: deque = field(default_factory=lambda: deque(maxlen=CACHED_BATCHES))
    # each: (first_seq, last_seq, first_offset)


def _last_sequence(base_sequence: int, last_offset_delta: int) -> int:
    return (base_sequence + last_offset_delta) % (INT32_MAX + 1)


class PartitionProducers:
    """Sequence bookkeeping of one partition."""

    def __init__(self):
        self.producers: dict[int, _Producer] = {}

    @classmethod
    def from_log(cls, plog):
        state = cls()
        for entry in plog.index:
            if entry.producer_id >= 0 and entry.base_sequence >= 0:
                state.record(entry.producer_id, entry.producer_epoch, entry.base_sequence,
                             entry.last_offset - entry.base_offset, entry.base_offset)
        return state

    def check(self, header):
        """(error code, original base offset of a duplicate or None) for an incoming batch."""
        if header.producer_id < 0 or header.base_sequence < 0:
            return NONE, None
        producer = self.producers.get(header.producer_id)
        first = header.base_sequence
        last = _last_sequence(first, header.last_offset_delta)
        if producer is None or header.producer_epoch > producer.epoch:
            return (NONE, None) if first == 0 else (OUT_OF_ORDER_SEQUENCE_NUMBER, None)
        if header.producer_epoch < producer.epoch:
            return INVALID_PRODUCER_EPOCH, None
        for cached_first, cached_last, offset in producer.batches:
            if cached_first == first and cached_last == last:
                return NONE, offset
        expected = (producer.batches[-1][1] + 1) % (INT32_MAX + 1) if producer.batches else 0
        if first != expected:
            return OUT_OF_ORDER_SEQUENCE_NUMBER, None
        return NONE, None

    def record(self, producer_id, epoch, base_sequence, last_offset_delta, base_offset):
        producer = self.producers.get(producer_id)
        if producer is None or epoch > producer.epoch:
            producer = self.producers[producer_id] = _Producer(epoch)
        producer.batches.append((base_sequence, _last_sequence(base_sequence, last_offset_delta),
                                 base_offset))
