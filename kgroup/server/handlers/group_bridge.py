"""The group APIs: the pure coordinator driven by the event loop, its log made durable on disk.

Virtual time is the wall clock at start-up advanced by the loop's monotonic clock; a timer task
sleeps until `coord.next_deadline_ms()` and advances the coordinator. The bridge is the
coordinator's ``log_writer``: at the end of every coordinator operation its entries are appended
to their groups' `__consumer_offsets` partitions (written with kgroup's record writer) and
fsynced, and only then are the responses that operation completed sent. So an acknowledged
OffsetCommit or group change is on disk before the client hears about it. If the write fails
the coordinator reverts the operation (memory stays as it was on disk), the request fails, and a
timer that fired stays due and is retried after a pause.
On start the `__consumer_offsets` partitions are replayed with `GroupCoordinator.from_records`.

Connect worker groups (the draft's experimental `connect` type) keep their records in a topic of
their own, `__worker_offsets` (never mixed into `__consumer_offsets`, whose record types 3-8 are
the consumer group's): the bridge is also the coordinator's ``worker_log_writer``, placing each
record on the partition of its group id as `__consumer_offsets` does, with as many partitions
(offsets.topic.num.partitions). The topic is created with the first Connect record, and replayed
on start with ``from_records(..., worker_records=...)``.
"""

from __future__ import annotations

import asyncio
import logging
import time

from kgroup.kafka_errors import UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION
from kgroup.server.storage.log_dir import OFFSETS_TOPIC, WORKER_OFFSETS_TOPIC

log = logging.getLogger("kgroup.server.groups")

OFFSET_COMMIT = 8
OFFSET_DELETE = 47
WRITE_RETRY_S = 0.5     # the pause before a timer whose write failed fires again


def _empty_commit_response(version):
    from kafka.protocol.consumer import OffsetCommitResponse

    return OffsetCommitResponse(version=version, throttle_time_ms=0, topics=[])


def _add_unknown_partitions(response, unknown):
    if not unknown:
        return response
    if response.API_KEY == OFFSET_DELETE:
        from kgroup.coordinator.offsets.wire import delete_response

        if not response.error_code:   # a group error is answered alone, as Kafka does
            response.topics.extend(delete_response(response, 0, [
                (name, [(i, error) for i in partitions])
                for name, partitions, error in unknown]).topics)
        return response
    from kafka.protocol.consumer import OffsetCommitResponse

    T = OffsetCommitResponse.OffsetCommitResponseTopic
    P = T.OffsetCommitResponsePartition
    for ident, partitions, error in unknown:
        named = dict(topic_id=ident) if response.version >= 10 else dict(name=ident)
        response.topics.append(T(version=response.version, **named, partitions=[
            P(version=response.version, partition_index=i, error_code=error) for i in partitions]))
    return response


def handle_group_request(broker, request, ctx):
    return broker.groups.handle(request, ctx)


class GroupBridge:
    def __init__(self, broker):
        self.broker = broker
        self.partitions = broker.logdir.topics[OFFSETS_TOPIC].partitions
        self.coord = None
        self._ready: list = []
        self._write_failed = False
        self._timer_task: asyncio.Task | None = None
        self._wake: asyncio.Future | None = None
        self._sleep_until: float | None = None
        self._stopped = False
        self._wall0 = time.time() * 1000.0
        self._mono0 = time.monotonic()

    # -- clock -----------------------------------------------------------------------------
    def now_ms(self) -> int:
        return int(self._wall0 + (time.monotonic() - self._mono0) * 1000.0)

    def _advance(self):
        delta = self.now_ms() - self.coord.now_ms
        if delta > 0:
            self.coord.advance(delta)

    # -- lifecycle -------------------------------------------------------------------------
    def start(self):
        from kgroup.coordinator import GroupCoordinator

        config = dict(self.broker.config.coordinator)
        entries = self._load_entries(self.partitions)
        worker = self.broker.logdir.topics.get(WORKER_OFFSETS_TOPIC)
        worker_records = [r for e in self._load_entries(worker.partitions) for r in e.records] if worker else []
        now = self.now_ms()
        # keep_log=False: each entry is forgotten once written, so a long-running server's memory
        # does not grow with every commit and rebalance.
        writers = dict(keep_log=False, log_writer=self._write_logged,
                       worker_log_writer=self._write_worker_records)
        if entries or worker_records:
            self.coord = GroupCoordinator.from_records(entries, config=config, now_ms=now,
                                                       worker_records=worker_records, **writers)
        else:
            self.coord = GroupCoordinator(config=config, now_ms=now, **writers)
        self.publish_topics()
        self._timer_task = asyncio.get_running_loop().create_task(self._timer_loop())

    def publish_topics(self):
        """Give the coordinator the topic image consumer groups assign from (it is not in the
        group log): at start-up and whenever a topic is created."""
        self.coord.set_topics({name: (topic.topic_id, len(topic.partitions))
                               for name, topic in self.broker.logdir.topics.items()})

    async def stop(self):
        self._stopped = True
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)
        task, self._timer_task = self._timer_task, None
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)

    @staticmethod
    def _load_entries(partitions):
        from kgroup.coordinator import LogEntry
        from kgroup.records.batch import read_batches

        entries = []
        for plog in partitions:
            for index_entry, raw in plog.iter_batches():
                where = f"{plog.directory} offset {index_entry.base_offset}"
                for batch in read_batches(raw, path=where):
                    if batch.is_control:
                        marker = batch.records[0] if batch.records else None
                        if marker is None or marker.control not in ("COMMIT", "ABORT"):
                            continue
                        entries.append(LogEntry(
                            records=[], producer_id=batch.producer_id,
                            producer_epoch=batch.producer_epoch, transactional=True,
                            control=marker.control,
                            coordinator_epoch=marker.coordinator_epoch or 0,
                            timestamp_ms=batch.max_timestamp))
                        continue
                    entries.append(LogEntry(
                        records=[(r.key, r.value) for r in batch.records if r.key is not None],
                        producer_id=batch.producer_id, producer_epoch=batch.producer_epoch,
                        transactional=batch.is_transactional, timestamp_ms=batch.max_timestamp))
        return entries

    # -- requests --------------------------------------------------------------------------
    def handle(self, request, ctx):
        """The response, or a future of it while the request is parked in the coordinator."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        unknown = (self._take_unknown_partitions(request)
                   if request.API_KEY in (OFFSET_COMMIT, OFFSET_DELETE) else [])
        # OffsetDelete asks the coordinator even then: its group errors come first
        if unknown and not request.topics and request.API_KEY == OFFSET_COMMIT:
            future.set_result(_add_unknown_partitions(
                _empty_commit_response(request.version), unknown))
            return future
        try:
            self._advance()
        except OSError as exc:   # a due timer's write failed (logged): this request waits too
            self._write_failed = True
            self._release()      # what the timers before it completed
            future.set_exception(exc)
            return future
        reply = self.coord.handle(request, client_id=ctx.client_id, client_host=ctx.client_host)
        reply.add_done_callback(lambda r, f=future, u=unknown: self._ready.append((f, r, u)))
        self._release()
        self._maybe_wake_timer()
        if future.done() and future.exception() is None:
            return future.result()  # answered (and persisted) already: no need to await
        return future

    def _take_unknown_partitions(self, request):
        """Remove partitions of topics this node does not have from an OffsetCommit or an
        OffsetDelete.

        Kafka answers them UNKNOWN_TOPIC_OR_PARTITION without asking the coordinator
        (KafkaApis checks its metadata cache first). An OffsetCommit v10+ names topics by id: an
        unknown id is UNKNOWN_TOPIC_ID for all its partitions, and the answer echoes the id
        (KafkaApis.handleOffsetCommitRequest resolves ids the same way). Entries are
        (name or id, partitions, error)."""
        unknown = []
        kept = []
        by_id = request.API_KEY == OFFSET_COMMIT and request.version >= 10
        names = {t.topic_id: n for n, t in self.broker.logdir.topics.items()} if by_id else {}
        for topic in request.topics or ():
            if by_id and topic.topic_id not in names:
                unknown.append((topic.topic_id, [p.partition_index for p in topic.partitions], UNKNOWN_TOPIC_ID))
                continue
            known = self.broker.logdir.topics.get(names[topic.topic_id] if by_id else topic.name)
            count = len(known.partitions) if known is not None else 0
            good = [p for p in topic.partitions if 0 <= p.partition_index < count]
            bad = [p.partition_index for p in topic.partitions if not 0 <= p.partition_index < count]
            if bad:
                unknown.append((topic.topic_id if by_id else topic.name, bad, UNKNOWN_TOPIC_OR_PARTITION))
            if good:
                topic.partitions = good
                kept.append(topic)
        if unknown:
            request.topics = kept
        return unknown

    def _release(self):
        """Send the replies completed so far: their operations' records are on disk already, or
        the operation was reverted and the reply carries the write's error."""
        ready, self._ready = self._ready, []
        for future, reply, unknown in ready:
            if future.done():
                continue
            if reply.error is not None:
                future.set_exception(reply.error)
            else:
                future.set_result(_add_unknown_partitions(reply.response, unknown))

    def _write_logged(self, entries, partitions=None, topic=OFFSETS_TOPIC):
        """The coordinator's log_writer: a failure is logged here, once, and raised to it."""
        try:
            self._write(entries, self.partitions if partitions is None else partitions)
        except OSError as exc:   # disk trouble: the coordinator reverts, the clients are told
            log.error("writing %s failed: %s", topic, exc)
            raise

    def _write_worker_records(self, records):
        """The coordinator's worker_log_writer: `__worker_offsets`, created on first use."""
        from kgroup.coordinator import LogEntry

        logdir = self.broker.logdir
        if WORKER_OFFSETS_TOPIC not in logdir.topics:
            logdir.create_topic(WORKER_OFFSETS_TOPIC, len(self.partitions), internal=True)
        self._write_logged([LogEntry(records=list(records), timestamp_ms=self.coord.now_ms)],
                           logdir.topics[WORKER_OFFSETS_TOPIC].partitions, WORKER_OFFSETS_TOPIC)

    def _write(self, entries, partitions):
        from kgroup.records import group_id_of_key, partition_for
        from kgroup.records.writer import encode_batch, encode_control_batch

        touched = {}
        n = len(partitions)
        pending_markers = []
        for entry in entries:
            if entry.control is not None:
                pending_markers.append(entry)
                continue
            by_partition = {}
            for key, value in entry.records:
                by_partition.setdefault(partition_for(group_id_of_key(key), n), []).append((key, value))
            for number, records in by_partition.items():
                plog = partitions[number]
                raw = encode_batch(records, base_offset=plog.next_offset,
                                   timestamp=entry.timestamp_ms, producer_id=entry.producer_id,
                                   producer_epoch=entry.producer_epoch,
                                   transactional=entry.transactional)
                self._append(plog, raw)
                touched[number] = plog
        for entry in pending_markers:
            # A marker ends the producer's transaction on every partition it wrote to; with no
            # transaction coordinator here it can only come from coord.end_transaction.
            for number, plog in enumerate(partitions):
                raw = encode_control_batch(entry.control, producer_id=entry.producer_id,
                                           producer_epoch=entry.producer_epoch,
                                           coordinator_epoch=entry.coordinator_epoch,
                                           base_offset=plog.next_offset,
                                           timestamp=entry.timestamp_ms)
                self._append(plog, raw)
                touched[number] = plog
        for plog in touched.values():
            plog.flush()
        if touched:
            self.broker.notify_append()

    @staticmethod
    def _append(plog, raw: bytes):
        from kgroup.server.storage.batches import parse_header

        plog.append(raw, [parse_header(raw, 0)])

    # -- timers ----------------------------------------------------------------------------
    def _maybe_wake_timer(self):
        deadline = self.coord.next_deadline_ms()
        if deadline is None or self._wake is None or self._wake.done():
            return
        if self._sleep_until is None or deadline < self._sleep_until:
            self._wake.set_result(None)

    async def _timer_loop(self):
        loop = asyncio.get_running_loop()
        while not self._stopped:
            deadline = self.coord.next_deadline_ms()
            self._sleep_until = deadline
            self._wake = loop.create_future()
            delay = None if deadline is None else max(0.0, (deadline - self.now_ms() + 1) / 1000.0)
            if self._write_failed:      # the failed timer is still due: do not spin on the disk
                self._write_failed = False
                delay = WRITE_RETRY_S if delay is None else max(delay, WRITE_RETRY_S)
            # asyncio.wait, not wait_for: 3.11's wait_for can swallow a cancellation.
            await asyncio.wait((self._wake,), timeout=delay)
            if self._stopped:
                return
            try:
                self._advance()
            except OSError:     # logged by _write_logged; the timer fires again after a pause
                self._write_failed = True
            except Exception:  # keep the clock running whatever one timer did
                log.exception("advancing the group coordinator failed")
            self._release()
