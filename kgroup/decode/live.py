"""decode-offsets from a running cluster: `__consumer_offsets` (or `__worker_offsets`) read with Fetch.

The bytes of each Fetch response are the partition's record batches as the broker stores them, so
they go through the same batch reader (`kgroup.records.batch.scan`) and `RowDecoder` as a segment
file, and into the same sinks as the local engine: every codec, transaction, control record and
problem behaves as with files. Rows and problems name `<topic>-<partition>` and the offset where a
file would name the path and byte position (a fetch has no file positions).

Without --follow the read stops at the end offsets taken at the start: `--view state` is the state
of what the topic holds now. Partitions are read one after the other in partition order, as the
partition directories of a log directory are. With --follow every partition is long-polled from
there on and each batch is written and flushed as it arrives, until SIGINT (exit 0).
"""

from __future__ import annotations

import contextlib
import signal
import struct
import sys
import threading
import time

from kgroup.errors import KgroupError
from kgroup.records.batch import scan
from kgroup.records.batch_model import Batch, CrcMismatch, TrailingBytes
from kgroup.records.partitioning import partition_for
from kgroup.records.segment import FAMILIES, SegmentFile
from kgroup.wire.cluster import TransportError, error_name
from kgroup.wire.topic_log import EARLIEST, LATEST, TopicLog

from .decoder import ProblemLog, RowDecoder
from .inputs import Input, RowFilter, apply_cutoffs, normalize_types
from .outcome import note, run_decode
from .run import make_sink

TOPIC_OF_FAMILY = {family: topic for topic, family in FAMILIES.items()}
FOLLOW_WAIT_MS = 200  # a Fetch's long poll while following: new records show within about this
GLOB_CHARS = frozenset("*?[")
# Partition errors that a fresh Metadata answer (a new leader) cures; Kafka marks them retriable.
LEADER_ERRORS = frozenset({"NOT_LEADER_OR_FOLLOWER", "NOT_LEADER_FOR_PARTITION", "LEADER_NOT_AVAILABLE",
                           "FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH", "UNKNOWN_TOPIC_OR_PARTITION",
                           "REPLICA_NOT_AVAILABLE", "KAFKA_STORAGE_ERROR"})


class LiveProblemLog(ProblemLog):
    """Problems of a fetched partition: its name and the offset, never a byte position (a Fetch
    response's byte positions mean nothing to the user)."""

    def add(self, file, position, offset, message):
        super().add(file, None, offset, message)


def partitions_to_read(partition_count: int, groups) -> list[int]:
    """Only the partitions holding the --group ids when every one is a literal id (Kafka's
    `abs(groupId.hashCode()) % partitions`); all of them when there is none or any is a glob."""
    if groups and not any(GLOB_CHARS & set(g) for g in groups):
        return sorted({partition_for(g, partition_count) for g in groups})
    return list(range(partition_count))


class PartitionReader:
    """Fetches and decodes partitions of one topic from given offsets, batch by batch."""

    def __init__(self, log, family: str | None, problems: ProblemLog, partitions, timeout_s: float,
                 decode: bool = True):
        self.log = log
        self.decode = decode      # False: undecoded records, for a sink that decodes what it keeps
        self.problems = problems
        self.timeout_s = timeout_s
        self.positions: dict[int, int] = {}
        self.inputs: dict[int, Input] = {}
        self.decoders: dict[int, RowDecoder] = {}
        self.stuck: set[int] = set()  # partitions whose next batch cannot be read
        for p in partitions:
            seg = SegmentFile(path=f"{log.topic}-{p}", topic=log.topic, partition=p, base_offset=0)
            self.inputs[p] = Input(seg, seg.path, family, 0)
            self.decoders[p] = RowDecoder(seg, family, problems)

    def read_to(self, partition: int, end: int):
        """(batch, rows) from the partition's position up to `end` (exclusive)."""
        while self.positions[partition] < end and partition not in self.stuck:
            before = self.positions[partition]
            for fetched in self._fetch({partition: before}, 0):
                for batch, rows in self._decode(fetched):
                    if batch.base_offset >= end:
                        return
                    yield batch, rows
            if self.positions[partition] == before and partition not in self.stuck:
                raise KgroupError(f"{self.inputs[partition].shown_path}: the broker returned no complete "
                                  f"batch at offset {before}")

    def poll(self, max_wait_ms: int):
        """(partition, batch, rows) of whatever arrived on any partition, waiting up to max_wait_ms."""
        positions = {p: o for p, o in self.positions.items() if p not in self.stuck}
        for fetched in self._fetch(positions, max_wait_ms):
            for batch, rows in self._decode(fetched):
                yield fetched.partition, batch, rows

    def _fetch(self, positions: dict[int, int], max_wait_ms: int):
        """Fetch, refreshing leaders on the errors a new leader cures, until the client's timeout."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            answered, retry = [], False
            for fetched in self.log.fetch(positions, max_wait_ms):
                name = error_name(fetched.error_code) if fetched.error_code else None
                if name is None:
                    answered.append(fetched)
                elif name == "OFFSET_OUT_OF_RANGE" and fetched.log_start_offset > positions[fetched.partition]:
                    note(f"note: {self.inputs[fetched.partition].shown_path}: offsets "
                         f"{positions[fetched.partition]}-{fetched.log_start_offset - 1} were deleted; "
                         f"reading on from {fetched.log_start_offset}")
                    self.positions[fetched.partition] = fetched.log_start_offset
                    retry = True
                elif name in LEADER_ERRORS and time.monotonic() < deadline:
                    retry = True
                else:
                    raise KgroupError(f"{self.inputs[fetched.partition].shown_path}: Fetch failed: {name}")
            if retry and answered:
                self.log.refresh_leaders()  # the partitions that failed go to their new leader next time
            if answered or not retry:
                return answered
            time.sleep(0.1)
            self.log.refresh_leaders()
            positions = {p: self.positions[p] for p in positions}

    def _decode(self, fetched):
        """The complete batches of one partition's Fetch bytes; the position moves past each."""
        p, data = fetched.partition, fetched.records
        start = self.positions[p]
        name = self.inputs[p].shown_path
        decoder = self.decoders[p]
        for event in scan(data, name):
            if isinstance(event, Batch):
                self.positions[p] = max(self.positions[p], event.last_offset + 1)
                rows = decoder.rows(event) if self.decode else event.records
                if event.base_offset < start:  # a Fetch answers with the whole batch holding the offset
                    rows = [r for r in rows if r.offset >= start]
                yield event, rows
            elif isinstance(event, TrailingBytes):
                return  # the broker cut the last batch at the size limit: fetched again next time
            else:
                offset = struct.unpack_from(">q", data, event.position)[0] if len(data) >= event.position + 8 \
                    else None
                self.problems.add(name, None, offset, event.message)
                if not isinstance(event, CrcMismatch):
                    self.stuck.add(p)  # the batch's extent is unknown: no next offset to fetch from
                    note(f"note: {name}: cannot read past offset {self.positions[p]}; "
                         f"this partition is not read further")
                    return


def decode_cluster(connect, *, output, view, family, groups, topics, types, until_offset, until_time, strict,
                   follow=False, stream=None) -> int:
    """Decode a cluster's coordinator topic; `connect()` opens a ClusterClient. Returns the exit status."""
    stream = stream or sys.stdout
    family = family or "consumer"
    topic = TOPIC_OF_FAMILY[family]
    row_filter = RowFilter(groups, topics, normalize_types(types, family))
    problems = LiveProblemLog(strict=strict, report=lambda problem: note(str(problem)))
    sink = make_sink(view, output, row_filter, stream, problems)
    for t in topics:
        if t in FAMILIES:
            note(f"note: --topic {t} keeps offset commits for topic {t}; the topic read is {topic} "
                 f"(--family {FAMILIES[t]} reads {t})")

    def body() -> int:
        batches_read = 0
        with connect() as client:
            log = TopicLog(client, topic)
            partitions = partitions_to_read(log.partition_count, groups)
            reader = PartitionReader(log, family, problems, partitions, client.timeout_s,
                                     decode=sink.decode)
            ends = log.offsets(partitions, LATEST)
            reader.positions.update(log.offsets(partitions, EARLIEST))
            for p in partitions:
                sink.begin(reader.inputs[p])
                for batch, rows in apply_cutoffs(reader.read_to(p, ends[p]), until_offset, until_time):
                    batches_read += 1
                    sink.batch(batch, rows)
                sink.end(reader.inputs[p], problems)
            stream.flush()
            if follow:
                batches_read += _follow(reader, sink, stream, problems)
        sink.close()
        return batches_read

    return run_decode(problems, body)


def _follow(reader: PartitionReader, sink, stream, problems) -> int:
    """Long-poll every partition, writing and flushing each batch, until SIGINT. A lost connection
    (a restarting broker) is retried for up to the client's timeout before it ends the command."""
    stop = threading.Event()
    batches = 0
    lost_since = None
    with _stop_on_sigint(stop):
        try:
            while not stop.is_set():
                try:
                    for partition, batch, rows in reader.poll(FOLLOW_WAIT_MS):
                        sink.begin(reader.inputs[partition])
                        sink.batch(batch, rows)
                        sink.end(reader.inputs[partition], problems)
                        stream.flush()
                        batches += 1
                    lost_since = None
                except TransportError as exc:
                    if lost_since is None:
                        lost_since = time.monotonic()
                        note(f"note: {exc}; retrying for up to {reader.timeout_s:g}s")
                    elif time.monotonic() - lost_since > reader.timeout_s:
                        raise
                    stop.wait(0.5)
        except KeyboardInterrupt:  # a second Ctrl-C while a Fetch waits
            pass
    return batches


@contextlib.contextmanager
def _stop_on_sigint(stop: threading.Event):
    """The first SIGINT asks the follow loop to stop after the current Fetch; a second one interrupts."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
