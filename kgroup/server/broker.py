"""The asyncio front end: accept connections, frame requests, dispatch by API key, write responses.

Each connection is served one request at a time, in order, as Kafka does by muting a channel while
its request is in flight; so a parked JoinGroup holds only its own connection. A connection that
sends something that is not a valid request (bad size, unknown API key or version, undecodable
body) is closed after logging one line naming the peer and the problem; other clients are not
affected. An ApiVersions request with an unsupported version is answered at v0 with
UNSUPPORTED_VERSION and ApiVersions' own supported range.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import struct

from kgroup.errors import KgroupError
from kgroup.kafka_errors import UNSUPPORTED_VERSION
from kgroup.server.config import ServerConfig
from kgroup.server.handlers.meta import api_versions_response
from kgroup.server.storage.log_dir import OFFSETS_TOPIC, LogDir, validate_user_topic
from kgroup.server.wire import (FrameError, check_required_fields, decode_request,
                                encode_response, peek_header)

log = logging.getLogger("kgroup.server")

_SIZE = struct.Struct(">i")
_TLS_HANDSHAKE = 0x1603  # a TLS record's first bytes: handshake (22), version 3.x
_DRAIN_ABOVE = 1 << 16
API_VERSIONS = 18


class RequestContext:
    __slots__ = ("client_id", "client_host", "peer", "advertised", "principal", "api_table")

    def __init__(self, client_id, client_host, peer, advertised=None, principal="User:ANONYMOUS",
                 api_table=None):
        self.client_id = client_id
        self.client_host = client_host
        self.peer = peer
        self.advertised = advertised  # the (host, port) of the listener the client came in on
        self.principal = principal
        self.api_table = api_table  # what ApiVersions advertises on this listener


class ListenError(KgroupError):
    """A listener's address cannot be bound (in use, not local): exit 1, nothing created."""


def _shown(listener) -> str:
    return f"[{listener.host}]:{listener.port}" if ":" in listener.host else f"{listener.host}:{listener.port}"


class Broker:
    """A single-node Kafka endpoint over `LogDir`, with the group APIs bridged to the coordinator."""

    def __init__(self, log_dir: str, config: ServerConfig | None = None,
                 host: str = "127.0.0.1", port: int = 0, topics=(), advertised_host=None,
                 listeners=None, users=None, acls=()):
        from kgroup.server.security.listeners import Listener
        from kgroup.server.security.admission import SecuredListeners

        self.config = config or ServerConfig()
        self.listeners = list(listeners or [Listener("PLAINTEXT", host, port)])
        # validated (TLS files loaded, passwords salted and dropped) before anything is on disk
        self.security = SecuredListeners(self.config.security, users or {}, self.listeners,
                                         self.config.failed_authentication_delay_ms)
        self.bound = []  # (listener, advertised (host, port)) per listener, in order
        # --acl rules; none: no authorizer, nothing checked (Kafka without authorizer.class.name)
        self.authorizer = None
        if acls:
            from kgroup.server.security.acl import Authorizer

            self.authorizer = Authorizer(acls)
        self.node_id = self.config.node_id
        self.advertised_host = advertised_host
        self.log_dir = log_dir
        self.initial_topics = list(topics)
        self.logdir: LogDir | None = None
        self.groups = None  # GroupBridge
        self.api_table = {}
        self.stopping = False
        self._servers = []
        self._connections: set[asyncio.Task] = set()
        self._started = asyncio.Event()
        self._append_future: asyncio.Future | None = None
        self._producers = {}
        self.producer_ids = None

    # -- lifecycle -----------------------------------------------------------------------
    async def start(self):
        """Bind every listener first (not yet serving), so an address in use or not local is one
        error naming it before anything is created in the log dir; then open the log and serve."""
        from kgroup.server.handlers.apis import build_api_table
        from kgroup.server.security.authorization import guarded_api_table
        from kgroup.server.handlers.group_bridge import GroupBridge

        for listener in self.listeners:
            await self._bind(listener)
        for listener, server in zip(self.listeners, self._servers):
            try:
                await server.start_serving()   # listen(): where two listeners on one address collide
            except OSError as exc:
                self._close_servers()
                raise ListenError(f"cannot listen on {_shown(listener)}: {exc.strerror or exc}") from None
        self.logdir = LogDir(self.log_dir, self.config.log_segment_bytes,
                             self.config.offsets_topic_segment_bytes)
        if OFFSETS_TOPIC not in self.logdir.topics:
            self.logdir.create_topic(OFFSETS_TOPIC, self.config.offsets_topic_num_partitions,
                                     internal=True)
        for name, partitions in self.initial_topics:
            validate_user_topic(name)
            if name not in self.logdir.topics:
                self.create_topic(name, partitions)
        from kgroup.server.storage.producers import ProducerIdBlocks

        self.producer_ids = ProducerIdBlocks(self.log_dir)
        self.groups = GroupBridge(self)
        self.groups.start()
        self.api_table = guarded_api_table(build_api_table(), self.authorizer)
        self._started.set()
        return self.bound[0][1]

    async def _bind(self, listener) -> None:
        try:
            server = await asyncio.start_server(
                functools.partial(self._on_connect, listener), listener.host, listener.port,
                limit=2 ** 16, backlog=1024, ssl=self.security.ssl_context(listener), start_serving=False)
        except OSError as exc:
            self._close_servers()
            raise ListenError(f"cannot listen on {_shown(listener)}: {exc.strerror or exc}") from None
        self._servers.append(server)
        bound_host, bound_port = server.sockets[0].getsockname()[:2]
        address = (self.advertised_host or self.advertised_for(listener, bound_host), bound_port)
        self.bound.append((listener, address))

    @staticmethod
    def advertised_for(listener, bound_host: str) -> str:
        """The host a listener advertises without --advertised-host: the bound address, or for a
        listener on every interface (0.0.0.0, ::), which no client can connect to, the machine's name."""
        from kgroup.server.security.listeners import is_wildcard, machine_host_name

        return machine_host_name() if is_wildcard(listener.host) else bound_host

    def _close_servers(self):
        for server in self._servers:
            server.close()

    async def stop(self):
        self.stopping = True
        self.notify_append()
        for server in self._servers:
            server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        for server in self._servers:
            await server.wait_closed()
        if self.groups is not None:
            await self.groups.stop()
        if self.logdir is not None:
            self.logdir.close()

    def create_topic(self, name, partitions):
        topic = self.logdir.create_topic(name, partitions)
        if self.groups is not None:
            self.groups.publish_topics()
        return topic

    def add_partitions(self, name, count):
        topic = self.logdir.add_partitions(name, count)
        if self.groups is not None:
            self.groups.publish_topics()
        return topic

    def partition_producers(self, topic: str, partition: int):
        """Idempotent-producer state of a partition, rebuilt from its log on first use."""
        key = (topic, partition)
        state = self._producers.get(key)
        if state is None:
            from kgroup.server.storage.producers import PartitionProducers

            state = self._producers[key] = PartitionProducers.from_log(
                self.logdir.partition(topic, partition))
        return state

    # -- long-poll fetch support ----------------------------------------------------------
    def append_waiter(self) -> asyncio.Future:
        if self._append_future is None or self._append_future.done():
            self._append_future = asyncio.get_running_loop().create_future()
        return self._append_future

    def notify_append(self):
        if self._append_future is not None and not self._append_future.done():
            self._append_future.set_result(None)

    # -- connections ---------------------------------------------------------------------
    async def _on_connect(self, listener, reader, writer):
        task = asyncio.current_task()
        self._connections.add(task)
        peer = writer.get_extra_info("peername")
        peer_text = f"{peer[0]}:{peer[1]}" if peer else "?"
        log.info("connection from %s", peer_text)
        try:
            await self._started.wait()      # a client quick enough to come in while start() runs
            api_table, principal = await self.security.admit(
                listener, reader, writer, peer_text, self.api_table)
            advertised = next(address for bound, address in self.bound if bound is listener)
            await self._serve(reader, writer, peer_text, peer[0] if peer else "", api_table,
                              advertised, principal)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except FrameError as exc:
            log.warning("closing connection from %s: %s", peer_text, exc)
        except asyncio.CancelledError:
            pass
        except Exception:  # a bug must cost one connection, never the server
            log.exception("closing connection from %s after an internal error", peer_text)
        finally:
            self._connections.discard(task)
            writer.close()
            log.info("connection from %s closed", peer_text)

    async def _serve(self, reader, writer, peer_text, peer_host, api_table, advertised, principal):
        max_bytes = self.config.socket_request_max_bytes
        client_host = "/" + peer_host
        debug = log.isEnabledFor(logging.DEBUG)
        while True:
            (size,) = _SIZE.unpack(await reader.readexactly(4))
            if size < 0 or size > max_bytes:
                if size >> 16 == _TLS_HANDSHAKE:
                    raise FrameError("a TLS handshake on this plaintext listener: the client's "
                                     "security.protocol is SSL or SASL_SSL (a protocol mismatch)")
                raise FrameError(f"request size {size} is outside 0..{max_bytes} "
                                 f"(socket.request.max.bytes)")
            frame = peek_header(await reader.readexactly(size))
            entry = api_table.get(frame.api_key)
            if entry is None:
                raise FrameError(f"unknown API key {frame.api_key}")
            request_class, lo, hi, handler = entry
            if not lo <= frame.api_version <= hi:
                if frame.api_key == API_VERSIONS:
                    response = api_versions_response(api_table, 0, UNSUPPORTED_VERSION)
                    writer.write(encode_response(response, 0, frame.correlation_id))
                    await writer.drain()
                    continue
                raise FrameError(f"{request_class.__name__} version {frame.api_version} is not "
                                 f"supported (supported: {lo}-{hi})")
            request = decode_request(request_class, frame)
            check_required_fields(request)
            ctx = RequestContext(request.header.client_id or "", client_host, peer_text,
                                 advertised, principal, api_table)
            if debug:
                log.debug("%s %s: %r", peer_text, ctx.client_id, request)
            result = handler(self, request, ctx)
            if inspect.isawaitable(result):
                result = await result
            if debug:
                log.debug("%s %s: -> %r", peer_text, ctx.client_id, result)
            if result is None:  # Produce with acks=0
                continue
            writer.write(encode_response(result, frame.api_version, frame.correlation_id))
            if writer.transport.get_write_buffer_size() > _DRAIN_ABOVE:
                await writer.drain()  # a client that does not read only stalls itself


async def serve_until_signalled(broker: Broker, on_ready=None):
    """Run `broker` until SIGTERM/SIGINT, then stop it cleanly."""
    import signal

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        address = await broker.start()
        if on_ready is not None:
            on_ready(address)
        await stop.wait()
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
        await broker.stop()
