"""Writers every verb shares: compact JSON, streamed JSON arrays, CSV, tables, ISO times, a status line.

Click-free and stream-based (the library renders, the CLI only picks the stream), so the decode wing
and Spark's Python workers use them without importing the command layer.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from itertools import islice

from orjson import OPT_INDENT_2
from orjson import dumps as _orjson_dumps

_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode
_indented = json.JSONEncoder(ensure_ascii=False, indent=2).encode


def dumps(obj) -> str:
    """Compact JSON, non-ASCII kept (one shared encoder: json.dumps with options builds one per call)."""
    return _compact(obj)


def dumps_records(obj) -> str:
    """`dumps` at C speed for decoded records and the documents built from them (no floats there:
    orjson writes 1e-7 where json writes 1e-07). What orjson refuses (ints past 64 bits, non-str
    keys, lone surrogates) falls back to `dumps`, so the text is the same either way."""
    try:
        return _orjson_dumps(obj).decode()
    except TypeError:
        return _compact(obj)


def write_json(obj, stream, chunk: int = 2000) -> None:
    """Write `json.dumps(obj, ensure_ascii=False, indent=2)` and a newline to `stream`. An array given
    as an iterator or as a sequence that is neither a list nor a tuple (the simulator's event log)
    is written `chunk` elements at a time, so that neither all its elements nor its text are ever
    held at once. orjson writes a chunk: its OPT_INDENT_2 text is json's indent=2 text of str, int,
    bool, None, lists and dicts, re-indented to the array's depth; what it refuses (ints past 64
    bits, non-str keys) falls back to json, but a float would be written otherwise (1e-7 where json
    writes 1e-07), so such arrays must hold none. Everything else is json's own text.
    """
    _write_value(obj, stream, 0, chunk)
    stream.write("\n")


def _write_value(obj, stream, level: int, chunk: int) -> None:
    if _is_streamed(obj):
        _write_streamed(obj, stream, level, chunk)
    elif not _holds_streamed(obj):
        stream.write(_indented(obj).replace("\n", "\n" + "  " * level))
    else:                       # a dict, list or tuple with a streamed array somewhere inside
        is_dict = isinstance(obj, dict)
        pad = "\n" + "  " * (level + 1)
        stream.write("{" if is_dict else "[")
        for index, item in enumerate(obj.items() if is_dict else obj):
            stream.write(pad if index == 0 else "," + pad)
            if is_dict:
                key, item = item
                stream.write(_compact({key: 0})[1:-3] + ": ")    # the key as json writes it
            _write_value(item, stream, level + 1, chunk)
        stream.write("\n" + "  " * level + ("}" if is_dict else "]"))


def _is_streamed(obj) -> bool:
    return (isinstance(obj, (Iterator, Sequence))
            and not isinstance(obj, (str, bytes, bytearray, list, tuple)))


def _holds_streamed(obj) -> bool:
    if isinstance(obj, dict):
        return any(map(_holds_streamed, obj.values()))
    if isinstance(obj, (list, tuple)):
        return any(map(_holds_streamed, obj))
    return _is_streamed(obj)


def _write_streamed(items, stream, level: int, chunk: int) -> None:
    pad = "  " * level
    elements = iter(items)
    written = False
    while part := list(islice(elements, chunk)):
        try:
            text = _orjson_dumps(part, option=OPT_INDENT_2).decode()
        except TypeError:
            text = _indented(part)
        lines = text[2:-2]               # the elements, one level in: "[\n" and "\n]" cut off
        stream.write(("[\n" if not written else ",\n") + pad + lines.replace("\n", "\n" + pad))
        written = True
    stream.write("\n" + pad + "]" if written else "[]")


def stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone (`| head` exited): poll reports an error on it.
    Tells a BrokenPipeError of stdout from one of a socket, which is a real failure."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _fd, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no real file behind stdout (a test's buffer)
        return False


def stdout_reader_gone() -> None:
    """The reader of stdout has gone (`| head`): there is nothing more to write. Stdout now goes to
    /dev/null, so that the flush at exit does not fail again."""
    with contextlib.suppress(OSError):
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - kept open until exit


class JsonArrayWriter:
    """Streams a JSON array element by element, so memory stays flat however many rows there are."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stdout
        self.count = 0

    def __enter__(self):
        self.stream.write("[")
        return self

    def write(self, obj) -> None:
        self.write_text(dumps(obj))

    def write_text(self, text: str) -> None:
        """Append one element already serialized as JSON."""
        self.stream.write(("\n" if self.count == 0 else ",\n") + text)
        self.count += 1

    def write_texts(self, texts: list) -> None:
        """Append elements already serialized as JSON, in one write."""
        if texts:
            self.write_joined(",\n".join(texts), len(texts))

    def write_joined(self, text: str, count: int) -> None:
        """Append `count` elements already serialized as JSON and joined by ",\n"."""
        self.stream.write(("\n" if self.count == 0 else ",\n") + text)
        self.count += count

    def __exit__(self, *exc):
        self.stream.write("\n]\n" if self.count else "]\n")
        return False


class CsvWriter:
    def __init__(self, columns, stream=None):
        self.columns = columns
        self.writer = csv.writer(stream or sys.stdout, lineterminator="\n")
        self.writer.writerow(columns)

    def write(self, row: dict) -> None:
        self.writer.writerow(["" if row.get(c) is None else _csv_cell(row.get(c)) for c in self.columns])


def _csv_cell(value):
    if isinstance(value, (dict, list)):
        return dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


class ChunkedTable:
    """A table printed in chunks (aligned within a chunk) so a huge input never buffers whole."""

    def __init__(self, headers, chunk=1000, stream=None):
        self.headers = headers
        self.chunk = chunk
        self.rows = []
        self.printed = False
        self.stream = stream or sys.stdout

    def add(self, row) -> None:
        self.rows.append(row)
        if len(self.rows) >= self.chunk:
            self.flush()

    def flush(self) -> None:
        if not self.rows:
            return
        from tabulate import tabulate

        text = tabulate(self.rows, headers=() if self.printed else self.headers, tablefmt="plain",
                        disable_numparse=True)
        self.stream.write(text + "\n")
        self.rows = []
        self.printed = True


def table(rows, headers, title=None, stream=None) -> None:
    """Print one small table (with an optional title line); prints `(none)` for no rows."""
    from tabulate import tabulate

    out = stream or sys.stdout
    if title:
        out.write(title + "\n")
    if rows:
        out.write(tabulate(rows, headers=headers, tablefmt="plain", disable_numparse=True) + "\n")
    else:
        out.write("(none)\n")


def iso_ms(ms) -> str:
    """Epoch milliseconds as an ISO 8601 UTC time; Kafka's -1 (no time) as an empty cell."""
    if ms is None or ms < 0:
        return ""
    try:
        return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds").replace(
            "+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return str(ms)


def parse_iso_ms(text: str) -> int:
    """An ISO 8601 time as epoch milliseconds, UTC when it names no zone (a runbook run on another
    machine must not shift it); ValueError when it is not one. `iso_ms` the other way."""
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


class StatusLine:
    """One line on stderr, redrawn in place, shown only when stderr is a terminal.

    Call clear() before writing anything else to the terminal, so no text lands on the line.
    """

    def __init__(self, enabled: bool | None = None):
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.shown = False

    def show(self, text: str) -> None:
        if self.enabled:
            sys.stderr.write(f"\r\033[K{text}")
            sys.stderr.flush()
            self.shown = True

    def clear(self) -> None:
        """Erase the line (it is drawn again at the next show)."""
        if self.enabled and self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
            self.shown = False

    def close(self) -> None:
        self.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.clear()


class StepProgress(StatusLine):
    """Steps of a known count (a simulation's waves) with an estimate of the time left, drawn only
    once the work has run ``after_s`` seconds (a quick run draws nothing). A phase without a count
    (``total`` 0: forming the group, settling) shows its name and the time so far. The same figures
    again redraw the clock (at most every 0.2 s)."""

    def __init__(self, label: str, after_s: float = 2.0, enabled: bool | None = None, clock=time.monotonic):
        super().__init__(enabled)
        self.label = label
        self.after_s = after_s
        self.clock = clock
        self.start = clock()
        self.last = 0.0

    def due(self) -> float | None:
        """The seconds run so far when a line is due (enabled, past ``after_s``, 0.2 s after the last
        one), else None."""
        if not self.enabled:
            return None
        now = self.clock()
        elapsed = now - self.start
        if elapsed < self.after_s or now - self.last < 0.2:
            return None
        self.last = now
        return elapsed

    def update(self, what: str, done: int, total: int) -> None:
        elapsed = self.due()
        if elapsed is None:
            return
        if total <= 0:
            self.show(f"{self.label}: {what}, {_duration(elapsed)} so far")
            return
        left = f", about {_duration(elapsed / done * (total - done))} left" if done else ""
        self.show(f"{self.label}: {what} {done + 1} of {total}, {_duration(elapsed)} so far{left}")


class RunsProgress(StepProgress):
    """``simulate --runs``: runs of a known count, each with its phases (``update``, as a single
    run reports them), and an estimate of the time left from how much of all the runs is done —
    the runs before this one, and this one's waves or steps so far — drawn, as StepProgress does,
    only once the work has run ``after_s`` seconds."""

    def __init__(self, label: str, runs: int, after_s: float = 2.0, enabled: bool | None = None,
                 clock=time.monotonic):
        super().__init__(label, after_s, enabled, clock)
        self.runs = runs
        self.run_text = ""
        self.run_index = 0

    def run(self, index: int, text: str) -> None:
        """Run ``index`` (from 0) of ``runs`` starts; ``text`` names it (its variant and seed)."""
        self.run_index, self.run_text = index, text
        self.last = 0.0                     # a new run's line is drawn at once
        self.update("", 0, 0)

    def update(self, what: str, done: int, total: int) -> None:
        elapsed = self.due()
        if elapsed is None:
            return
        fraction = (self.run_index + (done / total if total > 0 else 0)) / self.runs
        left = f", about {_duration(elapsed / fraction * (1 - fraction))} left" if fraction > 0 else ""
        self.show(f"{self.label}: run {self.run_index + 1} of {self.runs}{self.run_text}, "
                  f"{_duration(elapsed)} so far{left}")


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class Progress(StatusLine):
    """A progress meter for reading inputs of a known total size.

    A total of 0 means the size is unknown (stdin): bytes and records are shown without a percentage.
    """

    def __init__(self, total_bytes: int, label: str, enabled: bool | None = None):
        super().__init__(enabled)
        self.known = total_bytes > 0
        self.total = max(total_bytes, 1)
        self.label = label
        self.start = time.monotonic()
        self.last = 0.0
        self.done = 0

    def update(self, done_bytes: int, records: int = 0) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last < 0.2:
            return
        self.last = now
        self.done = done_bytes
        elapsed = max(now - self.start, 1e-6)
        rate = done_bytes / elapsed / 1e6
        if self.known:
            pct = min(100.0, 100.0 * done_bytes / self.total)
            where = f"{pct:5.1f}%  {done_bytes / 1e6:,.1f}/{self.total / 1e6:,.1f} MB"
        else:
            where = f"{done_bytes / 1e6:,.1f} MB"
        self.show(f"{self.label}: {where}  {rate:,.1f} MB/s  {records:,} records")
