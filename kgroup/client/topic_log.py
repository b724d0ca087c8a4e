"""Moved to ``kgroup.wire.topic_log``, below the client and `decode-offsets --bootstrap-server`,
which share it; the names stay importable from here."""

from kgroup.wire.topic_log import (  # noqa: F401
    EARLIEST,
    LATEST,
    MAX_FETCH_VERSION,
    PARTITION_MAX_BYTES,
    FetchedPartition,
    TopicLog,
)
