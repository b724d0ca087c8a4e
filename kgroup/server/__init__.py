"""kgroup.server: `kgroup serve`, a single-node Kafka-protocol endpoint around the group coordinator.

Modules: `broker` (asyncio front end, one request in flight per connection), `wire` (framing and
header handling with kafka-python's classes), `apis` (the advertised API table), `handlers_meta`
(ApiVersions, Metadata, FindCoordinator, CreateTopics), `handlers_data` (Produce, Fetch,
ListOffsets, OffsetForLeaderEpoch), `group_bridge` (group APIs -> kgroup.coordinator, virtual time
from the loop clock, persistence), `storage` / `partition_log` / `batches` (segments on disk),
`producers` (idempotent-producer ids and sequence checks), `config` (broker settings), `harness`
(running a server from tests and benchmarks).

Durability policy: every `__consumer_offsets` append (group metadata, offset commits, tombstones)
is fsynced before any response that depends on it is sent, so an acknowledged OffsetCommit survives
kill -9 and power loss; produced batches are fsynced before the Produce response; a torn batch at
the end of the last segment is truncated on start-up.
"""

from kgroup.server.broker import Broker, serve_until_signalled
from kgroup.server.config import ServerConfig, ServerConfigError

__all__ = ["Broker", "ServerConfig", "ServerConfigError", "serve_until_signalled"]
