"""The coordinator's ``__consumer_offsets`` log and the boundaries of its operations.

A mixin of GroupCoordinator, kept apart so each reads in one sitting. An operation (a request, a
timer firing, a transaction marker) opens with ``_begin``, appends LogEntry values with ``append``
and closes with ``_end``: its entries go to the host's ``log_writer``; if that raises, ``_revert``
drops them from the log and runs the undo journal (see docs/coordinator-event-sourcing.md).
"""

from __future__ import annotations

from typing import Callable

from .log import LogEntry


class OperationLog:
    """Needs ``now_ms``, ``undo`` (UndoJournal) and ``_callbacks`` (completed replies) on self."""

    def _init_log(self, keep_log: bool, log_writer: Callable[[list[LogEntry]], None] | None,
                  worker_log_writer: Callable[[list[tuple]], None] | None = None) -> None:
        self.log_writer = log_writer
        self.worker_log_writer = worker_log_writer
        # the Connect worker groups' __worker_offsets records (connect.records), a log of its own
        self.worker_records: list[tuple[bytes, bytes | None]] = []
        self.keep_log = keep_log
        self.log: list[LogEntry] = []
        self.records: list[tuple[bytes, bytes | None]] = []
        self.entries_appended = 0     # LogEntry appends ever made (take_log() does not reset it)
        self.log_end_offset = 0       # next log offset: a record or a marker takes one each
        self._taken = 0               # how much of self.log take_log() has handed over

    # ---- operations --------------------------------------------------------------------
    def _begin(self) -> tuple[int, int, int, int, int]:
        """Open an operation: what ``_revert`` needs to drop the log entries it appends.

        Only a host's writer can refuse an operation: without one nothing is journaled."""
        if self.log_writer is not None or self.worker_log_writer is not None:
            self.undo.begin()
        return (len(self.log), len(self.records), self.log_end_offset, self.entries_appended,
                len(self.worker_records))

    def _abort(self, start: tuple[int, int, int, int, int]) -> None:
        """The operation raised (a bug, a malformed request): undone if journaled, else it stands."""
        if self.undo.open:
            self._revert(start)

    def _end(self, start: tuple[int, int, int, int, int]) -> list[LogEntry]:
        """Hand the operation's entries (and its ``__worker_offsets`` records, to
        ``worker_log_writer``) to the host; commit, or revert and re-raise if a write fails."""
        entries = self.log[start[0]:]
        worker = self.worker_records[start[4]:] if self.worker_log_writer is not None else []
        try:
            if entries and self.log_writer is not None:
                self.log_writer(entries)
            if worker:
                self.worker_log_writer(worker)
        except BaseException:
            self._revert(start)
            raise
        if entries and self.log_writer is not None:
            if self.keep_log:
                self._taken = len(self.log)
            else:
                self.log = []
        if worker and not self.keep_log:
            self.worker_records = []
        self.undo.commit()
        return entries

    def _revert(self, start: tuple[int, int, int, int, int]) -> None:
        log_size, records_size, self.log_end_offset, self.entries_appended, worker_size = start
        del self.log[log_size:]
        del self.records[records_size:]
        del self.worker_records[worker_size:]
        self.undo.revert()
        for reply in self._callbacks:        # completed by the reverted operation: parked again
            reply.reopen()
        self._callbacks.clear()

    # ---- log ---------------------------------------------------------------------------
    def append(self, entry: LogEntry) -> None:
        entry.timestamp_ms = self.now_ms
        self.log.append(entry)
        self.entries_appended += 1
        if entry.control is None:
            self.log_end_offset += len(entry.records)
            if self.keep_log:
                self.records.extend(entry.records)
        else:
            self.log_end_offset += 1

    def take_log(self) -> list[LogEntry]:
        """The entries appended since the last call, in order (what a host must persist).

        With ``keep_log=False`` they are dropped from ``log`` here; otherwise ``log`` keeps them all.
        """
        if self.keep_log:
            new = self.log[self._taken:]
            self._taken = len(self.log)
            return new
        new, self.log = self.log, []
        return new

    def append_records(self, records: list[tuple[bytes, bytes | None]]) -> None:
        self.append(LogEntry(records=records))
