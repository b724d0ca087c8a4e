"""What the coordinator appends to its ``__consumer_offsets`` partition, and parked replies."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


@dataclass(slots=True)
class LogEntry:
    """One append: a data batch (records) or a transaction marker (control set, records empty)."""

    records: list[tuple[bytes, bytes | None]] = field(default_factory=list)
    producer_id: int = -1
    producer_epoch: int = -1
    transactional: bool = False
    control: str | None = None
    coordinator_epoch: int = 0
    timestamp_ms: int = 0


class Reply:
    """The answer to one request; parked requests (JoinGroup, SyncGroup) complete later.

    Callbacks run after the coordinator operation that completed the reply has finished (and
    its records were appended), so a callback sees a consistent state and may call back into
    the coordinator. ``records`` are the LogEntry appends of the operation that handled the
    request (Kafka's CoordinatorResult.records). ``error`` is set, and ``response`` stays None,
    when the host could not append them: the operation was reverted, nothing it did happened.
    """

    __slots__ = ("response", "done", "records", "error", "_callbacks", "_queue")

    def __init__(self, queue: "deque | None" = None, response=None):
        self.response = response
        self.done = response is not None
        self.records: list[LogEntry] | tuple = ()
        self.error: BaseException | None = None
        self._callbacks: list[Callable[["Reply"], None]] | None = None
        self._queue = queue

    def add_done_callback(self, fn: Callable[["Reply"], None]) -> None:
        if self.done:
            fn(self)
        elif self._callbacks is None:
            self._callbacks = [fn]
        else:
            self._callbacks.append(fn)

    def complete(self, response) -> bool:
        """Set the response once; later completions are ignored (returns False)."""
        if self.done:
            return False
        self.response = response
        self.done = True
        self._queue.append(self)       # the operation runs the callbacks, or reopens it on revert
        return True

    def reopen(self) -> None:
        """Undo ``complete`` (the operation that completed it was reverted): parked again."""
        self.response = None
        self.done = False

    def fail(self, error: BaseException) -> None:
        """The request's operation was reverted: done, with ``error`` instead of a response."""
        self.response = None
        self.error = error
        self.done = True
        self.run_callbacks()

    def run_callbacks(self) -> None:
        callbacks, self._callbacks = self._callbacks, None
        for fn in callbacks or ():
            fn(self)

    def __repr__(self) -> str:
        return f"Reply(done={self.done}, response={self.response!r})"
