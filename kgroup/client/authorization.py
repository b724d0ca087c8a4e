"""Moved to ``kgroup.wire.authorization``, below the client, whose transport names a denial with
it; the names stay importable from here."""

from kgroup.wire.authorization import (  # noqa: F401
    PREFIX,
    RESOURCES,
    NotAuthorized,
    check,
    denial,
    failure,
    is_denial,
    partition_failure_lines,
)
