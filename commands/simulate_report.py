"""What `kgroup simulate` reports of a run, shared by one run's table and `--runs`' spread: the
figures' rows and labels, and the warning (exit 3) for a member that never rejoined."""

from __future__ import annotations

import click

ROWS = [("membership", "membership"), ("assignor", "assignor"), ("members", "members"),
        ("partitions", "partitions"), ("rebalances", "rebalances"),
        ("generation", None), ("hand-offs", "handoffs"), ("partitions ever moved", "partitions_moved"),
        ("unowned partition-s", "unowned_partition_seconds"),
        ("peak unowned", "peak_unowned_partitions"),
        ("longest partition wait (ms)", "longest_partition_wait_ms"),
        ("longest stop (ms)", "longest_stop_ms"), ("time to Stable (ms)", "time_to_stable_ms"),
        ("safe restart (ms)", None), ("errors", None)]
# with a state size (restore.Restores.figures): label, key, how to show it
RESTORE_ROWS = [("bytes restored", "bytes", "size"), ("restoring partition-s", "restoring_partition_seconds", None),
                ("peak restoring", "peak_restoring_partitions", None),
                ("longest restore (ms)", "longest_member_restore_ms", None),
                ("all restored at (ms)", "all_restored_at_ms", None)]


def warn_never_rejoined(lost: list) -> None:
    """A member that never came back (a fatal error Kafka's clients do not recover from) makes the
    run partial: a warning line each (``lost``: (prefix, never_rejoined entry) pairs), on stderr
    whatever the output, and exit 3."""
    from kgroup.errors import EXIT_PARTIAL

    for prefix, m in lost:
        advice = f"; {m['advice']}" if m["advice"] else ""
        click.echo(f"kgroup simulate: warning: {prefix}never rejoined: {m['member']}, fatal {m['error']}"
                   f"{advice}", err=True)
    if lost:
        raise SystemExit(EXIT_PARTIAL)
