"""Reading a whole dump: inputs to segment files, the --until cut-offs, and row filters.

Everything that decides *what* is read and kept lives here, so both engines and `describe --from-dump`
reuse it; bad option values raise OptionError, which the CLI shows as click shows a bad parameter.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field

from kgroup.decode.decoder import ProblemLog, iter_decoded, key_group, resolve_family
from kgroup.errors import EXIT_USAGE, KgroupError
from kgroup.records import FAMILIES, record_type_name, record_types
from kgroup.records.batch import scan
from kgroup.records.batch_model import Batch
from kgroup.records.segment import FAMILIES as TOPIC_FAMILIES, SegmentFile, SegmentPathError, find_segments

TOPICS = {family: topic for topic, family in TOPIC_FAMILIES.items()}  # family -> its topic

STDIN = "-"


class OptionError(KgroupError):
    """A value or combination of options the decode wing refuses; `option` names the option when one is
    to blame (the CLI shows it as a bad parameter, else as a usage error)."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, option: str | None = None):
        super().__init__(message)
        self.option = option


@dataclass
class Input:
    """One segment to read, with the path to show for it (as the user gave it, or found under it)."""

    segment: SegmentFile
    shown_path: str
    family: str | None
    size: int


def resolve_inputs(paths, family: str | None, problems: ProblemLog) -> list[Input]:
    """Expand files, partition directories and log directories; unreadable paths become problems."""
    inputs = []
    named_empty = []  # files named on the command line with nothing in them
    for given in paths:
        if given == STDIN:
            seg = SegmentFile(path=STDIN, topic=None, partition=None, base_offset=0)
            inputs.append(Input(seg, STDIN, family, 0))
            continue
        try:
            segments = find_segments(given)
        except SegmentPathError as exc:
            problems.add(None, None, None, str(exc))
            continue
        except (OSError, ValueError) as exc:
            problems.add(given, None, None, _plain(exc))
            continue
        for seg in segments:
            shown = given if os.path.isfile(given) else seg.path
            try:
                size = os.path.getsize(seg.path)
            except OSError:
                size = 0
            inputs.append(Input(seg, shown, resolve_family(seg, family), size))
            if size == 0 and shown == given:
                named_empty.append(inputs[-1])
    if named_empty and not any(inp.size or inp.shown_path == STDIN for inp in inputs):
        # Nothing to read at all: each empty file named on the command line is worth a line. Beside
        # files that hold batches (`__consumer_offsets-*/*.log`) an empty one is as normal as the
        # empty active segment of a fresh partition found in a directory, and is read as that is.
        for inp in named_empty:
            problems.add(inp.shown_path, None, None, "empty file: no record batch to decode")
        inputs = [inp for inp in inputs if inp not in named_empty]
    return inputs


def in_log_order(inputs: list[Input]) -> list[Input]:
    """The inputs as a replay must read them: each partition's segments in base-offset order (the
    log's order, whatever order the command line named them in), partitions in the order first
    given, and a segment reached twice (a directory and one of its files, a path given twice) once.
    Inputs whose partition the path does not say keep their place."""
    first: dict = {}
    order = []
    seen = set()
    for index, inp in enumerate(inputs):
        seg = inp.segment
        if seg.path != STDIN:
            real = os.path.realpath(seg.path)
            if real in seen:
                continue
            seen.add(real)
        known = seg.topic is not None and seg.partition is not None
        log = first.setdefault((seg.topic, seg.partition) if known else ("", index), index)
        order.append(((log, seg.base_offset if known else 0, index), inp))
    return [inp for _key, inp in sorted(order, key=lambda pair: pair[0])]


def _plain(exc) -> str:
    if isinstance(exc, FileNotFoundError):
        return "no such file or directory"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, IsADirectoryError):
        return "is a directory"
    return str(exc)


def parse_until_time(text: str | None) -> int | None:
    """Epoch milliseconds, or an ISO 8601 time (UTC when no zone is given)."""
    if text is None:
        return None
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    from kgroup.writers import parse_iso_ms

    try:
        return parse_iso_ms(text)
    except ValueError:
        raise OptionError(f"{text!r} is neither epoch milliseconds nor an ISO 8601 time", "--until-time") from None


def known_type_names() -> dict[str, str]:
    """Every --type spelling -> canonical name."""
    names = {"control": "control", "error": "error"}
    for family in FAMILIES:
        for rtype in record_types(family):
            name = record_type_name(rtype, family)
            names[name] = name
    return names


def normalize_types(types, family) -> set:
    """--type values (names, key type numbers, comma lists) as canonical names."""
    known = known_type_names()
    out = set()
    for text in types:
        if not text.replace(",", "").strip():   # `--type "$TYPES"` with nothing in it must not mean every type
            raise OptionError(f"{text!r} names no record type", "--type")
        for part in text.split(","):
            part = part.strip()
            if not part:
                continue
            if part.isdigit():
                try:
                    out.add(record_type_name(int(part), family or "consumer"))
                    continue
                except Exception:  # noqa: BLE001
                    raise OptionError(f"no record type {part}", "--type") from None
            if part not in known:
                raise OptionError(f"unknown record type {part!r}; known: {', '.join(sorted(known))}", "--type")
            out.add(known[part])
    return out


def family_overrides(inputs, family) -> list[str]:
    """A note when paths name the other family than an explicit --family (which wins)."""
    if not family:
        return []
    clashing = [inp.shown_path for inp in inputs if resolve_family(inp.segment, None) not in (None, family)]
    if not clashing:
        return []
    topic = {TOPICS[resolve_family(inp.segment, None)] for inp in inputs
             if resolve_family(inp.segment, None) not in (None, family)}
    topic = " / ".join(sorted(topic))
    extra = len(clashing) - 1
    more = f" (and {extra} more file{'s' if extra > 1 else ''})" if extra else ""
    return [f"{clashing[0]}{more}: the path names {topic} but --family {family} was given; "
            f"decoding as {family} records"]


@dataclass
class RowFilter:
    """--group/--topic globs and --type names; an empty list means no filter."""

    groups: list = field(default_factory=list)
    topics: list = field(default_factory=list)
    types: set = field(default_factory=set)  # type names, plus "control" and "error"

    @property
    def active(self) -> bool:
        return bool(self.groups or self.topics or self.types)

    def keep(self, row) -> bool:
        if self.types:
            name = row.kind if row.kind in ("control", "error") else row.type_name
            if name not in self.types:
                return False
        if row.kind != "data":
            return not (self.groups or self.topics) or row.kind == "error"
        data = row.key.data
        if self.groups:
            group = key_group(data)
            if group is None or not any(fnmatch.fnmatchcase(group, g) for g in self.groups):
                return False
        if self.topics:
            topic = data.get("topic")
            if topic is None or not any(fnmatch.fnmatchcase(topic, t) for t in self.topics):
                return False
        return True


def iter_input(inp: Input, problems: ProblemLog, *, until_offset=None, until_time=None, progress=None,
               decode=True, resync=True):
    """Yield (batch, rows) for one input, stopping at the --until cut-offs (decode, resync: see iter_decoded)."""
    batches = iter_decoded(inp.segment, inp.family, problems, progress=progress, decode=decode, resync=resync)
    if until_offset is None and until_time is None:
        return batches
    return apply_cutoffs(batches, until_offset, until_time)


def apply_cutoffs(batches, until_offset=None, until_time=None):
    """(batch, rows) pairs of one partition in log order, cut at --until-offset / --until-time (rows:
    decoded rows or undecoded records, both have offset and timestamp)."""
    for batch, rows in batches:
        if until_offset is not None and batch.base_offset > until_offset:
            return
        if until_offset is not None or until_time is not None:
            kept = [r for r in rows
                    if (until_offset is None or r.offset <= until_offset)
                    and (until_time is None or r.timestamp <= until_time)]
            rows = kept
        yield batch, rows


def batches_again(inp: Input, *, until_offset=None, until_time=None, resync=True):
    """How to read part of an input again, as `iter_input(..., decode=False)` read it the first time:
    a callable (start, stop) -> the (batch, records) pairs of the batches starting at byte positions
    start..stop-1 (start: a batch's position), records undecoded and within the cut-offs, problems
    not reported again (nothing, if the file can no longer be read). None for stdin, which cannot be read twice."""
    if inp.segment.path == STDIN:
        return None
    path = inp.segment.path

    def read(start: int, stop: int):
        try:
            with open(path, "rb", buffering=0) as f:
                batches = ((event, event.records) for event in scan(f, path, start, lean=True, resync=resync,
                                                                    stop=stop) if isinstance(event, Batch))
                yield from apply_cutoffs(batches, until_offset, until_time)
        except OSError:  # gone since the first read: what that read replayed stands
            return

    return read
