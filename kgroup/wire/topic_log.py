"""Reading one topic's partitions from a cluster as raw record-batch bytes: leaders, offsets, Fetch.

`decode-offsets --bootstrap-server` decodes `__consumer_offsets` with the same batch reader as files,
so it needs the bytes exactly as the broker stores them, not kafka-python's consumer (which would
parse, decompress and hide control records). Fetch responses carry those bytes; this module sends
Metadata, ListOffsets and sessionless Fetch requests through a ClusterClient and hands back what
each partition answered. Errors a read can outlive (a moved leader) are the caller's to retry.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from kgroup.errors import KgroupError

from .cluster import ClusterClient, error_name

EARLIEST, LATEST = -2, -1  # ListOffsets timestamps (Kafka's ListOffsetsRequest.EARLIEST/LATEST_TIMESTAMP)
PARTITION_MAX_BYTES = 1 << 20  # per partition and Fetch; Kafka returns a larger first batch whole (KIP-74)
MAX_FETCH_VERSION = 12  # v13 names topics by id; v4-12 by name, which every broker kgroup talks to takes


@dataclass
class FetchedPartition:
    partition: int
    error_code: int
    high_watermark: int
    log_start_offset: int
    records: bytes


class TopicLog:
    """One topic on a cluster: its partitions' leaders, their offsets, and Fetch from an offset."""

    def __init__(self, client: ClusterClient, topic: str):
        self.client = client
        self.topic = topic
        self.leaders: dict[int, int] = {}
        self.refresh_leaders()

    def refresh_leaders(self) -> None:
        """Partition -> leader id from Metadata; an unknown topic is the user's one-line error."""
        from kafka.protocol.metadata import MetadataRequest

        from kgroup.kafka_errors import UNKNOWN_TOPIC_OR_PARTITION

        request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=self.topic)],
                                  allow_auto_topic_creation=False, version=max(1, min(
                                      self.client.max_version(MetadataRequest), 8)))
        response = self.client.send(request, what=f"Metadata for {self.topic}")
        for topic in response.topics:
            if topic.name != self.topic:
                continue
            if topic.error_code:
                name = error_name(topic.error_code)
                raise KgroupError(f"the cluster has no topic {self.topic} ({name})"
                                  if topic.error_code == UNKNOWN_TOPIC_OR_PARTITION
                                  else f"topic {self.topic}: {name}")
            self.leaders = {p.partition_index: p.leader_id for p in topic.partitions}
        if not self.leaders:
            raise KgroupError(f"topic {self.topic}: the cluster has no such topic")

    @property
    def partition_count(self) -> int:
        return len(self.leaders)

    def _by_leader(self, partitions) -> dict[int, list[int]]:
        grouped: dict[int, list[int]] = defaultdict(list)
        for p in partitions:
            leader = self.leaders.get(p, -1)
            if leader < 0:
                raise KgroupError(f"{self.topic}-{p}: no leader (LEADER_NOT_AVAILABLE)")
            grouped[leader].append(p)
        return grouped

    def offsets(self, partitions, timestamp: int) -> dict[int, int]:
        """partition -> the EARLIEST or LATEST offset (LATEST: the high watermark, what a read sees)."""
        from kafka.protocol.consumer import ListOffsetsRequest

        T = ListOffsetsRequest.ListOffsetsTopic
        version = max(1, min(self.client.max_version(ListOffsetsRequest), 7))
        result = {}
        for leader, parts in self._by_leader(partitions).items():
            request = ListOffsetsRequest(replica_id=-1, isolation_level=0, version=version, topics=[T(
                name=self.topic, partitions=[T.ListOffsetsPartition(partition_index=p, timestamp=timestamp)
                                             for p in parts])])
            response = self.client.send(request, node_id=leader, what=f"ListOffsets on broker {leader}")
            for topic in response.topics:
                for part in topic.partitions:
                    if part.error_code:
                        raise KgroupError(f"{self.topic}-{part.partition_index}: ListOffsets failed: "
                                          f"{error_name(part.error_code)}")
                    result[part.partition_index] = part.offset
        return result

    def fetch(self, positions: dict[int, int], max_wait_ms: int = 0) -> list[FetchedPartition]:
        """One sessionless READ_UNCOMMITTED Fetch per leader from partition -> offset: every record,
        aborted ones and transaction markers included, as the log holds them."""
        from kafka.protocol.consumer import FetchRequest

        version = min(self.client.max_version(FetchRequest, floor=4), MAX_FETCH_VERSION)
        if version < 4:
            raise KgroupError("the broker does not support Fetch v4 or later")
        FT = FetchRequest.FetchTopic
        out = []
        for leader, parts in self._by_leader(positions).items():
            request = FetchRequest(
                version=version, replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1,
                max_bytes=64 * PARTITION_MAX_BYTES, isolation_level=0, session_id=0, session_epoch=-1,
                topics=[FT(topic=self.topic, partitions=[FT.FetchPartition(
                    partition=p, current_leader_epoch=-1, fetch_offset=positions[p], log_start_offset=-1,
                    partition_max_bytes=PARTITION_MAX_BYTES) for p in parts])],
                forgotten_topics_data=[], rack_id="")
            response = self.client.send(request, node_id=leader, what=f"Fetch from broker {leader}")
            if response.error_code:
                raise KgroupError(f"Fetch from broker {leader} failed: {error_name(response.error_code)}")
            for topic in response.responses:
                for part in topic.partitions:
                    out.append(FetchedPartition(part.partition_index, part.error_code, part.high_watermark,
                                                part.log_start_offset, bytes(part.records or b"")))
        return out
