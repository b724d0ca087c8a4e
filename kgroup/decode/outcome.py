"""The exit status of a decode, the one policy both engines share.

0 when nothing went wrong; 3 (partial) when there were problems but some records decoded; 1 when no
record decoded at all (a dump of nothing but corrupt batches is a failure, however many batch
headers could be read), when --strict stopped at the first problem, or when the job failed.
Problems themselves are reported as they are found; this adds the one summary line at the end.
"""

from __future__ import annotations

import sys

from kgroup.errors import EXIT_FAILURE, EXIT_OK, EXIT_PARTIAL

from .decoder import ProblemLog, StrictModeStop

#: How every line decode-offsets writes on stderr starts, as the other commands' `kgroup COMMAND: ...`.
PREFIX = "kgroup decode-offsets: "


def note(text: str, stream=None) -> None:
    """One line on stderr: a problem, a note, a summary."""
    (stream or sys.stderr).write(f"{PREFIX}{text}\n")


def exit_status(problems: ProblemLog) -> int:
    if not problems.problems:
        return EXIT_OK
    return EXIT_PARTIAL if problems.records_ok else EXIT_FAILURE


def run_decode(problems: ProblemLog, body) -> int:
    """Run `body()` (which returns the number of batches read) and turn how it ended into the exit status."""
    try:
        batches = body()
    except StrictModeStop:
        sys.stdout.flush()
        note("stopped at the first problem (--strict)")
        return EXIT_FAILURE
    if problems.problems:
        n = len(problems.problems)
        note(f"{n} problem{'s' if n != 1 else ''}; {problems.records_ok} records decoded from {batches} batches")
    return exit_status(problems)
