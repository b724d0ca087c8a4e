"""kgroup.server: `kgroup serve`, a single-node Kafka-protocol endpoint around the group coordinator.

Modules: `broker` (asyncio front end, one request in flight per connection), `wire` (framing and
header handling with kafka-python's classes), `config` (broker settings), `harness` (running a
server from tests and benchmarks), `frame_fuzz` / `frame_fuzz_run` (hostile frames against a
running server). Packages: `handlers` (the advertised API table and what answers each API: metadata,
data, the group APIs through `group_bridge` -> kgroup.coordinator, Connect's), `security`
(listeners, TLS, SASL, `--acl` and its checks), `storage` (the topic logs on disk and idempotent
producers).

Durability policy: every `__consumer_offsets` append (group metadata, offset commits, tombstones)
is fsynced before any response that depends on it is sent, so an acknowledged OffsetCommit survives
kill -9 and power loss; produced batches are fsynced before the Produce response; a torn batch at
the end of the last segment is truncated on start-up.
"""

from kgroup.server.broker import Broker, serve_until_signalled
from kgroup.server.config import ServerConfig, ServerConfigError

__all__ = ["Broker", "ServerConfig", "ServerConfigError", "serve_until_signalled"]
