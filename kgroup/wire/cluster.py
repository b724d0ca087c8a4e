"""One connection to a Kafka cluster for kgroup's admin calls, on top of kafka-python 3.

kafka-python's KafkaAdminClient does the hard parts (bootstrap, SASL/SSL, ApiVersions); kgroup
sends its own `kafka.protocol` requests through it, so it chooses versions, sees every per-member
error and never touches fields it does not need (e.g. authorized-operation bits). Every
kafka-python failure leaves this module as one KgroupError sentence.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from kgroup.errors import KgroupError, KgroupUsageError

DEFAULT_TIMEOUT_S = 30.0


class TransportError(KgroupError):
    """A request that got no answer (connection refused or lost, timed out): the same request may
    work a moment later, e.g. once a restarted coordinator is back. Polling loops retry these."""


def error_name(code: int) -> str:
    """Kafka's name for an error code (NONE for 0); unknown codes stay recognisable."""
    from kgroup.kafka_errors import name_of  # imports kafka-python: not at `kgroup --help` time

    return name_of(code)


def retriable_coordinator_error(code: int) -> bool:
    """A coordinator error worth retrying after finding the coordinator again (Kafka marks these
    retriable): it is loading, not available yet, or has moved."""
    from kgroup import kafka_errors as codes

    return code in (codes.COORDINATOR_LOAD_IN_PROGRESS, codes.COORDINATOR_NOT_AVAILABLE,
                    codes.NOT_COORDINATOR)


RETRIABLE_COORDINATOR_NAMES = ("COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR")


def retriable_coordinator_name(error: str | None) -> bool:
    """The same for an error as kgroup keeps it (a name, maybe followed by `: message`)."""
    return bool(error) and error.split(":", 1)[0] in RETRIABLE_COORDINATOR_NAMES


RETRY_BACKOFF_S = 0.2


@dataclass(frozen=True)
class Coordinator:
    node_id: int
    host: str
    port: int

    def to_json(self) -> dict:
        return {"id": self.node_id, "host": self.host, "port": self.port}

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host  # IPv6, usable as HOST:PORT
        return f"{host}:{self.port} (id: {self.node_id})"


def parse_bootstrap(text: str) -> list[tuple[str, int]]:
    """`HOST:PORT[,HOST:PORT...]` (an IPv6 host in brackets) -> [(host, port)]. Empty entries
    ("h:9092,", "h:9092,,h2:9092") are dropped, as Kafka's ClientUtils drops them; a malformed entry,
    or a list of nothing but commas, is a usage error naming it."""
    addresses = []
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        host, sep, port = entry.rpartition(":")
        if not sep or not host.strip("[]") or not (port.isascii() and port.isdecimal()) or not 0 < int(port) < 65536:
            raise KgroupUsageError(f"bad bootstrap server {entry!r}: expected HOST:PORT[,HOST:PORT...]")
        addresses.append((host.strip("[]"), int(port)))
    if not addresses:
        raise KgroupUsageError(f"bad bootstrap server {text!r}: no HOST:PORT in it")
    return addresses


def bootstrap_text(addresses) -> str:
    """The parsed list written back as HOST:PORT,... (IPv6 hosts in brackets), empty entries gone."""
    return ",".join(f"[{host}]:{port}" if ":" in host else f"{host}:{port}" for host, port in addresses)


class ClusterClient:
    """A bootstrapped cluster connection; use as a context manager so sockets close."""

    def __init__(self, bootstrap: str, settings: dict | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
                 refused_at_once: bool = True):
        """`refused_at_once`: fail at once when every bootstrap address refuses the connection,
        rather than retrying until the timeout (`wait` rides out a restarting broker instead)."""
        if not bootstrap:
            raise KgroupUsageError("no bootstrap server: pass --bootstrap-server HOST:PORT or set "
                                   "KGROUP_BOOTSTRAP_SERVER")
        addresses = parse_bootstrap(bootstrap)
        bootstrap = bootstrap_text(addresses)   # what every message names, and what kafka-python is given
        from kgroup.wire.bootstrap_failures import (BootstrapFailure, BootstrapWatch, refuses,
                                                      tls_unanswered)

        if refused_at_once and all(refuses(address, timeout_s) for address in addresses):
            raise KgroupError(f"connection refused by {bootstrap}: no Kafka broker listens there")
        protocol = (settings or {}).get("security_protocol", "PLAINTEXT")
        if protocol in ("SSL", "SASL_SSL") and all(tls_unanswered(address, timeout_s) for address in addresses):
            raise KgroupError(f"cannot connect to {bootstrap}: the broker did not answer the TLS handshake "
                              f"(security.protocol={protocol}); a likely protocol mismatch: is it a plaintext "
                              "listener?")
        self.bootstrap = bootstrap
        self.timeout_s = timeout_s
        self._admin = None
        self._quiet_kafka_logging()
        from kafka.admin import KafkaAdminClient
        import kafka.errors as Errors

        config = {"client_id": "kgroup"}
        config.update(settings or {})
        config["bootstrap_servers"] = bootstrap
        config.setdefault("request_timeout_ms", int(timeout_s * 1000))
        # kafka-python backs off up to 30 s between reconnects; a poll loop (wait, remove-members
        # --wait) must see a restarted broker within a second or two, not half a minute later.
        config.setdefault("reconnect_backoff_max_ms", 1000)
        config["bootstrap_timeout_ms"] = max(1, int(timeout_s * 1000))
        try:
            with BootstrapWatch(bootstrap, addresses, config, timeout_s):
                self._admin = KafkaAdminClient(**config)
        except BootstrapFailure as exc:
            raise KgroupError(f"cannot connect to {bootstrap}: {exc}") from None
        except Errors.KafkaConfigurationError as exc:
            raise KgroupError(f"invalid client configuration: {exc}") from None
        except Errors.KafkaTimeoutError:
            raise KgroupError(f"cannot reach a Kafka broker at {bootstrap} within {timeout_s:g}s") from None
        except Exception as exc:  # noqa: BLE001 - any connection failure is reported as one line
            if isinstance(exc, Errors.IncompatibleBrokerVersion) and "SaslHandshake" in str(exc):
                raise KgroupError(f"cannot connect to {bootstrap}: the listener does not speak SASL (no "
                                  f"SaslHandshake in its ApiVersions) but security.protocol={protocol}: a protocol "
                                  "mismatch, is it a plaintext listener?") from None
            raise KgroupError(self.describe_failure(exc, f"cannot connect to {bootstrap}")) from None
        self._manager = self._admin._manager

    @staticmethod
    def _quiet_kafka_logging():
        """kafka-python logs connection retries at WARNING/ERROR; kgroup reports failures itself."""
        logger = logging.getLogger("kafka")
        if not logger.handlers:
            logger.addHandler(logging.NullHandler())
        logger.propagate = False

    @staticmethod
    def describe_failure(exc: BaseException, context: str) -> str:
        import kafka.errors as Errors

        if isinstance(exc, (Errors.SaslAuthenticationFailedError,)) or "Authentication" in type(exc).__name__:
            return f"{context}: authentication failed: {exc}"
        if isinstance(exc, Errors.AuthorizationError):
            return f"{context}: not authorized ({getattr(exc, 'message', type(exc).__name__)})"
        if isinstance(exc, Errors.KafkaTimeoutError):
            return f"{context}: timed out"
        if isinstance(exc, (Errors.KafkaConnectionError, Errors.NodeNotReadyError, ConnectionError, OSError)):
            return f"{context}: connection failed ({exc})"
        text = str(exc) or type(exc).__name__
        return f"{context}: {text}"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self) -> None:
        if self._admin is not None:
            admin, self._admin = self._admin, None
            try:
                admin.close()
            except Exception:  # noqa: BLE001 - closing must not mask the real outcome
                pass

    # -- requests ---------------------------------------------------------------------------

    def send(self, request, node_id: int | None = None, what: str = "request"):
        """Send one request (to a node, or the least loaded one) and return the decoded response."""
        async def call():
            return await self._manager.wait_for(self._manager.send(request, node_id=node_id),
                                                int(self.timeout_s * 1000))
        try:
            return self._run_bounded(call)
        except KgroupError:
            raise
        except Exception as exc:  # noqa: BLE001 - every transport failure becomes one line
            import kafka.errors as Errors

            message = self.describe_failure(exc, what)
            # UnknownBrokerIdError: the node left the cluster's metadata (a broker stopping); the
            # caller finds the coordinator or the brokers again.
            transient = (isinstance(exc, (Errors.KafkaConnectionError, Errors.NodeNotReadyError,
                                          Errors.KafkaTimeoutError, Errors.RequestTimedOutError,
                                          Errors.UnknownBrokerIdError, ConnectionError))
                         and not message.startswith(f"{what}: authentication failed"))
            raise (TransportError if transient else KgroupError)(message) from None

    def _run_bounded(self, call):
        """Run `call` on kafka-python's IO thread and wait for it — in slices, waking the IO thread at
        each, and never past the timeout and a grace.

        kafka-python's own net.run() waits without a limit. Under load its IO thread can miss the
        wake-up of a request handed over from this thread and sleep in select() with the request
        never sent — seen against Kafka 4.4 in the tests: `kgroup delete` and `remove-members
        --dry-run` hung for minutes, every IO thread idle. A wake-up each half second sends it; the
        limit turns anything else into the usual timeout error."""
        import threading

        import kafka.errors as Errors

        net = self._manager._net
        if getattr(net, "_io_thread", None) is None:      # no IO thread: run() polls on this one
            return self._manager.run(call)
        done, outcome = threading.Event(), {}

        async def waiter():
            try:
                outcome["value"] = await call()
            except BaseException as exc:  # noqa: BLE001 - re-raised on the caller's thread
                outcome["error"] = exc
            finally:
                done.set()

        net.call_soon_threadsafe(waiter)
        deadline = time.monotonic() + self.timeout_s + 5.0
        while not done.wait(0.5):
            if getattr(net, "_exception", None) is not None:
                raise net._exception
            if time.monotonic() > deadline:
                raise Errors.KafkaTimeoutError(f"no answer within {self.timeout_s + 5.0:.0f}s")
            net.wakeup()
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]

    def max_version(self, request_class, floor: int = 0) -> int:
        """Highest version both kafka-python and the (bootstrap) broker support; -1 if none."""
        import kafka.errors as Errors

        data = self._manager.broker_version_data
        if data is None:
            return -1
        try:
            return data.api_version(request_class, min_version=floor)
        except (Errors.IncompatibleBrokerVersion, ValueError):
            return -1

    def brokers(self, fresh: bool = False) -> list[Coordinator]:
        """The cluster's brokers; `fresh`: as a Metadata request answers now (a stopped broker
        is gone from it), not as bootstrapping found them."""
        if fresh:
            from kafka.protocol.metadata import MetadataRequest

            response = self.send(MetadataRequest(topics=[], allow_auto_topic_creation=False), what="Metadata")
            found = (Coordinator(b.node_id, b.host, b.port) for b in response.brokers)
        else:
            found = (Coordinator(b.node_id, b.host, b.port) for b in self._manager.cluster.brokers())
        return sorted(found, key=lambda c: c.node_id)

    def find_coordinator(self, group: str, deadline: float | None = None) -> Coordinator:
        """The group's coordinator, retrying while it is loading or not yet elected, and while the
        broker asked does not answer (it may be the one stopping), until `deadline` (monotonic;
        default: the timeout from now)."""
        from kafka.protocol.metadata import FindCoordinatorRequest

        if deadline is None:
            deadline = time.monotonic() + self.timeout_s
        while True:
            version = self.max_version(FindCoordinatorRequest)
            what = f"FindCoordinator for group {group!r}"
            try:
                if version >= 4:
                    request = FindCoordinatorRequest(key_type=0, coordinator_keys=[group], version=min(version, 4))
                    row = self.send(request, what=what).coordinators[0]
                else:
                    row = self.send(FindCoordinatorRequest(key=group, key_type=0, version=max(version, 0)),
                                    what=what)
            except TransportError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(RETRY_BACKOFF_S)
                continue
            code = row.error_code
            if code == 0:
                node = Coordinator(row.node_id, row.host, row.port)
                return node
            if retriable_coordinator_error(code) and time.monotonic() < deadline:
                time.sleep(0.1)
                continue
            from kgroup.wire.authorization import check

            check(error_name(code), "Describe", group)
            raise KgroupError(f"group {group!r}: FindCoordinator failed: {error_name(code)}")

    def to_coordinator(self, group: str, build, what: str, code_of=lambda response: response.error_code,
                       coordinator: Coordinator | None = None, deadline: float | None = None):
        """Send `build(coordinator)` to the group's coordinator -> (response, coordinator).

        When the coordinator moves — its broker stopping answers NOT_COORDINATOR, then nothing, and
        the new one is loading the group — the coordinator is found again and the request resent,
        until `deadline` (default: the timeout from now), as Kafka's AdminClient does. `code_of`
        gives the response's error code to judge (for per-partition answers, the first retriable
        one). The last answer (or TransportError) stands at the deadline.
        """
        if deadline is None:
            deadline = time.monotonic() + self.timeout_s
        while True:
            if coordinator is None:
                coordinator = self.find_coordinator(group, deadline)
            try:
                response = self.send(build(coordinator), node_id=coordinator.node_id, what=what)
            except TransportError:
                if time.monotonic() >= deadline:
                    raise
            else:
                if not retriable_coordinator_error(code_of(response)) or time.monotonic() >= deadline:
                    return response, coordinator
            coordinator = None
            time.sleep(RETRY_BACKOFF_S)
