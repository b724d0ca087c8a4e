"""Topics on disk under --log-dir: `<topic>-<partition>/` directories, one PartitionLog each.

A topic's id lives in each partition directory's `partition.metadata` file, written the way Kafka
writes it (`version: 0` / `topic_id: <base64url>`), so ids survive a restart.

As Kafka does with its `.lock` file, the directory is locked (flock on `<dir>/.lock`) before anything
in it is read, truncated or written: a second server on the same directory would replay, expire
and append to the same segments at the same byte positions as the first.
"""

from __future__ import annotations

import base64
import fcntl
import os
import shutil
import uuid

from kgroup.kafka_errors import (INVALID_PARTITIONS, INVALID_TOPIC_EXCEPTION, KAFKA_STORAGE_ERROR,
                                 TOPIC_ALREADY_EXISTS)
from kgroup.server.storage.partition_log import PartitionLog
from kgroup.topic_names import TopicError, validate_topic_name  # noqa: F401 - the server's callers import them here

OFFSETS_TOPIC = "__consumer_offsets"
WORKER_OFFSETS_TOPIC = "__worker_offsets"      # the Connect draft's worker groups (experimental)
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, WORKER_OFFSETS_TOPIC})   # written by the coordinator only
LOCK_FILE = ".lock"


class LogDirLockedError(OSError):
    """Another process (or another LogDir in this one) holds the directory's lock."""


def validate_user_topic(name: str) -> None:
    """A topic a user asks the server to create at start-up: a legal name, and not an internal
    topic, which the server creates itself with offsets.topic.num.partitions."""
    if name in INTERNAL_TOPICS:
        raise TopicError(f"{name} is created by the server; size it with "
                         f"--config offsets.topic.num.partitions=N", INVALID_TOPIC_EXCEPTION)
    validate_topic_name(name)


def _encode_topic_id(topic_id: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")


def _decode_topic_id(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


class Topic:
    def __init__(self, name: str, topic_id: uuid.UUID, partitions: list[PartitionLog],
                 internal: bool = False):
        self.name = name
        self.topic_id = topic_id
        self.partitions = partitions
        self.internal = internal


class LogDir:
    def __init__(self, root: str, segment_bytes: int = 1073741824,
                 offsets_segment_bytes: int = 104857600):
        self.root = root
        self.segment_bytes = segment_bytes
        self.offsets_segment_bytes = offsets_segment_bytes
        self.topics: dict[str, Topic] = {}
        os.makedirs(root, exist_ok=True)
        self._lock_fd = self._lock(root)
        try:
            self._load()
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _lock(root: str) -> int:
        path = os.path.join(root, LOCK_FILE)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LogDirLockedError(f"{root} is in use by another kgroup serve (cannot lock {path}); "
                                    f"stop that one first") from None
        except OSError:
            os.close(fd)
            raise
        return fd

    def _load(self):
        found: dict[str, dict[int, str]] = {}
        for name in os.listdir(self.root):
            path = os.path.join(self.root, name)
            topic, sep, part = name.rpartition("-")
            if not sep or not part.isdigit() or not os.path.isdir(path):
                continue
            found.setdefault(topic, {})[int(part)] = path
        for topic, parts in sorted(found.items()):
            count = max(parts) + 1
            missing = sorted(set(range(count)) - set(parts))
            if missing:
                raise TopicError(f"{self.root}: topic {topic} has partition directories up to "
                                 f"{count - 1} but is missing {missing}", INVALID_PARTITIONS)
            topic_id = self._read_topic_id(parts[0]) or uuid.uuid4()
            logs = [PartitionLog(parts[i], self._segment_bytes(topic)) for i in range(count)]
            self.topics[topic] = Topic(topic, topic_id, logs, internal=topic in INTERNAL_TOPICS)
            for path in parts.values():
                self._write_topic_id(path, topic_id)

    def _segment_bytes(self, topic: str) -> int:
        return self.offsets_segment_bytes if topic in INTERNAL_TOPICS else self.segment_bytes

    @staticmethod
    def _read_topic_id(path):
        try:
            with open(os.path.join(path, "partition.metadata")) as fh:
                for line in fh:
                    key, _, value = line.partition(":")
                    if key.strip() == "topic_id":
                        return _decode_topic_id(value.strip())
        except (OSError, ValueError):
            return None
        return None

    @staticmethod
    def _write_topic_id(path, topic_id):
        target = os.path.join(path, "partition.metadata")
        text = f"version: 0\ntopic_id: {_encode_topic_id(topic_id)}\n"
        try:
            with open(target) as fh:
                if fh.read() == text:
                    return
        except OSError:
            pass
        tmp = target + ".tmp"
        with open(tmp, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)

    def create_topic(self, name: str, partitions: int, internal: bool = False) -> Topic:
        if name in self.topics:
            raise TopicError(f"topic {name} already exists", TOPIC_ALREADY_EXISTS)
        if name not in INTERNAL_TOPICS:
            validate_topic_name(name)
        if partitions < 1:
            raise TopicError(f"topic {name}: number of partitions must be at least 1, "
                             f"got {partitions}", INVALID_PARTITIONS)
        topic_id = uuid.uuid4()
        logs = []
        try:
            for i in range(partitions):
                path = os.path.join(self.root, f"{name}-{i}")
                logs.append(PartitionLog(path, self._segment_bytes(name)))
                self._write_topic_id(path, topic_id)
            dir_fd = os.open(self.root, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except OSError as exc:
            # Out of file descriptors or disk space: leave no half-created topic behind (a restart
            # would load it with fewer partitions, or not start at all).
            for log in logs:
                log.close()
            for i in range(partitions):
                shutil.rmtree(os.path.join(self.root, f"{name}-{i}"), ignore_errors=True)
            raise TopicError(f"topic {name}: could not create its partitions: {exc}",
                             KAFKA_STORAGE_ERROR) from None
        topic = Topic(name, topic_id, logs, internal=internal)
        self.topics[name] = topic
        return topic

    def add_partitions(self, name: str, count: int) -> Topic:
        """Grow topic ``name`` to ``count`` partitions (CreatePartitions): the new partitions'
        directories get the topic's id, as the first ones have it."""
        topic = self.topics[name]
        old = len(topic.partitions)
        added = []
        try:
            for i in range(old, count):
                path = os.path.join(self.root, f"{name}-{i}")
                added.append(PartitionLog(path, self._segment_bytes(name)))
                self._write_topic_id(path, topic.topic_id)
        except OSError as exc:
            for log in added:
                log.close()
            for i in range(old, count):
                shutil.rmtree(os.path.join(self.root, f"{name}-{i}"), ignore_errors=True)
            raise TopicError(f"topic {name}: could not create its new partitions: {exc}",
                             KAFKA_STORAGE_ERROR) from None
        topic.partitions.extend(added)
        return topic

    def partition(self, topic: str, partition: int) -> PartitionLog | None:
        t = self.topics.get(topic)
        if t is None or not 0 <= partition < len(t.partitions):
            return None
        return t.partitions[partition]

    def close(self):
        for topic in self.topics.values():
            for log in topic.partitions:
                log.close()
        fd, self._lock_fd = getattr(self, "_lock_fd", None), None
        if fd is not None:
            os.close(fd)  # releases the flock
