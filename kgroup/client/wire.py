"""Moved to ``kgroup.wire.cluster``, below the client and `decode-offsets --bootstrap-server`, which
share it; the names stay importable from here."""

from kgroup.wire.cluster import (  # noqa: F401
    DEFAULT_TIMEOUT_S,
    RETRIABLE_COORDINATOR_NAMES,
    RETRY_BACKOFF_S,
    ClusterClient,
    Coordinator,
    TransportError,
    bootstrap_text,
    error_name,
    parse_bootstrap,
    retriable_coordinator_error,
    retriable_coordinator_name,
)
