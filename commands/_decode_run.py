"""Runs decode-offsets: reads the inputs through the library and renders rows or state in the chosen format."""

from __future__ import annotations

import os
import sys

import click

from kgroup.commands.output import ChunkedTable, CsvWriter, JsonArrayWriter, Progress, dumps, iso_ms, table
from kgroup.errors import EXIT_FAILURE, EXIT_OK, EXIT_PARTIAL, KgroupError
from kgroup.records import key_to_json, record_type_name, value_to_json
from kgroup.decode.decoder import ProblemLog, StrictModeStop, resolve_family
from kgroup.decode.inputs import RowFilter, iter_input, resolve_inputs
from kgroup.decode.dump_log_text import batch_lines, header_lines, trailing_bytes_line
from kgroup.decode.state import OffsetsState

RECORD_COLUMNS = ["file", "partition", "offset", "timestamp", "type", "key_version", "value_version",
                  "producer_id", "transactional", "group", "topic", "topic_partition", "member_id",
                  "key", "value", "marker", "coordinatorEpoch", "error", "key_hex", "value_hex"]
STATE_COLUMNS = ["status", "producer_id", "group", "topic", "partition", "offset", "leaderEpoch", "metadata",
                 "commitTimestamp", "expireTimestamp", "value_version", "record_offset", "type", "key", "value"]


def known_type_names() -> dict[str, str]:
    """Every --type spelling -> canonical name."""
    names = {"control": "control", "error": "error"}
    for family in ("consumer", "connect"):
        for rtype in range(16):
            try:
                name = record_type_name(rtype, family)
            except Exception:  # noqa: BLE001 - a type the family does not define
                continue
            names[name] = name
    return names


def normalize_types(types, family) -> set:
    known = known_type_names()
    out = set()
    for text in types:
        for part in text.split(","):
            part = part.strip()
            if not part:
                continue
            if part.isdigit():
                try:
                    out.add(record_type_name(int(part), family or "consumer"))
                    continue
                except Exception:  # noqa: BLE001
                    raise click.BadParameter(f"no record type {part}", param_hint="--type") from None
            if part not in known:
                raise click.BadParameter(f"unknown record type {part!r}; known: {', '.join(sorted(known))}",
                                         param_hint="--type")
            out.add(known[part])
    return out


def row_json(row) -> dict:
    base = {"offset": row.offset, "timestamp": row.timestamp}
    if row.kind == "data":
        value = row.value
        base.update({
            "type": row.type_name,
            "key_version": row.record_type,
            "key": key_to_json(row.key),
            "value_version": None if value is None else value.version,
            "value": None if value is None else value_to_json(row.record_type, value, row.key.family),
            "producer_id": row.producer_id,
            "transactional": row.transactional,
        })
    elif row.kind == "control":
        base.update({"type": "control", "marker": row.marker, "coordinatorEpoch": row.coordinator_epoch,
                     "producer_id": row.producer_id})
    else:
        base.update({"type": "error", "error": row.error,
                     "key_hex": None if row.key_bytes is None else bytes(row.key_bytes).hex(),
                     "value_hex": None if row.value_bytes is None else bytes(row.value_bytes).hex()})
    base["partition"] = row.partition
    base["file"] = row.file
    return base


class JsonlLines:
    """Builds row_json(row) as text, caching the parts that repeat (key JSON by key bytes, file names)."""

    CACHE_LIMIT = 200_000

    def __init__(self):
        self.keys = {}
        self.files = {}

    def line(self, row) -> str:
        if row.kind != "data":
            return dumps(row_json(row))
        kb = row.key_bytes
        head = self.keys.get(kb)
        if head is None:
            if len(self.keys) >= self.CACHE_LIMIT:
                self.keys.clear()
            head = self.keys[kb] = (',"type":%s,"key_version":%d,"key":%s' % (
                dumps(row.type_name), row.record_type, dumps(key_to_json(row.key))))
        tail = self.files.get((row.file, row.partition))
        if tail is None:
            tail = self.files[(row.file, row.partition)] = ',"partition":%s,"file":%s}' % (
                dumps(row.partition), dumps(row.file))
        value = row.value
        if value is None:
            body = ',"value_version":null,"value":null'
        else:
            body = ',"value_version":%d,"value":%s' % (
                value.version, dumps(value_to_json(row.record_type, value, row.key.family)))
        return '{"offset":%d,"timestamp":%d%s%s,"producer_id":%d,"transactional":%s%s' % (
            row.offset, row.timestamp, head, body, row.producer_id,
            "true" if row.transactional else "false", tail)


def _flat(obj: dict) -> dict:
    key = obj.get("key") or {}
    out = dict(obj)
    out["group"] = key.get("group", key.get("groupId"))
    out["topic"] = key.get("topic")
    out["topic_partition"] = key.get("partition")
    out["member_id"] = key.get("memberId")
    return out


# ---------------------------------------------------------------------------------------------- sinks

class DumpLogSink:
    def begin(self, inp):
        for line in header_lines(inp.shown_path, inp.segment.base_offset):
            click.echo(line)

    def batch(self, batch, rows):
        click.echo("\n".join(batch_lines(batch, rows)))

    def end(self, inp, problems):
        trailing = problems.trailing_bytes.get(inp.segment.path)
        if trailing:
            click.echo(trailing_bytes_line(os.path.basename(inp.segment.path), trailing[1]))

    def close(self):
        pass


class RowSink:
    """jsonl / json / csv / table of records, streaming."""

    def __init__(self, output, row_filter):
        self.output = output
        self.filter = row_filter
        self.count = 0
        self.lines = JsonlLines()
        if output == "json":
            self.writer = JsonArrayWriter().__enter__()
        elif output == "csv":
            self.writer = CsvWriter(RECORD_COLUMNS)
        elif output == "table":
            self.writer = ChunkedTable(["OFFSET", "TIME", "TYPE", "GROUP", "KEY", "VALUE"])

    def begin(self, inp):
        pass

    def batch(self, batch, rows):
        keep = self.filter.keep if self.filter.active else None
        out = self.output
        if out == "jsonl":  # one write per batch: a write per line costs as much as encoding it
            line = self.lines.line
            text = [line(row) for row in rows if keep is None or keep(row)]
            if text:
                self.count += len(text)
                text.append("")
                sys.stdout.write("\n".join(text))
            return
        for row in rows:
            if keep is not None and not keep(row):
                continue
            self.count += 1
            if out == "table":
                self.writer.add(table_row(row))
                continue
            if out == "json":
                self.writer.write_text(self.lines.line(row))
            else:
                self.writer.write(_flat(row_json(row)))

    def end(self, inp, problems):
        pass

    def close(self):
        if self.output == "json":
            self.writer.__exit__(None, None, None)
        elif self.output == "table":
            self.writer.flush()
            if not self.count:
                click.echo("(no records)")


class StateSink:
    """Replays every row (filters apply to what is shown, not to the replay)."""

    def __init__(self, output, row_filter):
        self.output = output
        self.filter = row_filter
        self.state = OffsetsState()
        self.current = None

    def begin(self, inp):
        self.current = self.state.for_partition(inp.segment.topic or inp.segment.path, inp.segment.partition)

    def batch(self, batch, rows):
        if not batch.crc_valid:  # reported already; corrupt bytes must not change the state
            return
        apply = self.current.apply
        for row in rows:
            apply(row)

    def end(self, inp, problems):
        pass

    def close(self):
        render_state(self.state, self.output, self.filter)


# ---------------------------------------------------------------------------------------------- state

def _offset_shown(c, row_filter) -> bool:
    import fnmatch

    if row_filter.types and "offset_commit" not in row_filter.types:
        return False
    if row_filter.groups and not any(fnmatch.fnmatchcase(c.group, g) for g in row_filter.groups):
        return False
    if row_filter.topics and not any(fnmatch.fnmatchcase(c.topic, t) for t in row_filter.topics):
        return False
    return True


def state_json(state: OffsetsState, row_filter) -> dict:
    committed = [c.to_json() for c in state.committed_offsets() if _offset_shown(c, row_filter)]
    open_txns = []
    for pid, offsets in state.open_transactions():
        shown = [c.to_json() for c in offsets if _offset_shown(c, row_filter)]
        if shown:
            open_txns.append({"producer_id": pid, "offsets": shown})
    keep = row_filter.keep if row_filter.active else (lambda r: True)
    records = [row_json(r) for r in state.latest_records() if keep(r)]
    return {"committed_offsets": committed, "open_transactions": open_txns, "records": records}


def render_state(state, output, row_filter):
    doc = state_json(state, row_filter)
    if output == "json":
        click.echo(dumps(doc))
    elif output == "jsonl":
        for c in doc["committed_offsets"]:
            click.echo(dumps({"kind": "committed_offset", **c}))
        for txn in doc["open_transactions"]:
            for c in txn["offsets"]:
                click.echo(dumps({"kind": "pending_offset", "producer_id": txn["producer_id"], **c}))
        for r in doc["records"]:
            click.echo(dumps({"kind": "record", **r}))
    elif output == "csv":
        writer = CsvWriter(STATE_COLUMNS)
        for c in doc["committed_offsets"]:
            writer.write({"status": "committed", **c})
        for txn in doc["open_transactions"]:
            for c in txn["offsets"]:
                writer.write({"status": "pending", "producer_id": txn["producer_id"], **c})
        for r in doc["records"]:  # latest record per key, types 2-15 (key and value as JSON)
            writer.write({"status": "record", "group": r["key"].get("group", r["key"].get("groupId")),
                          "value_version": r["value_version"], "record_offset": r["offset"], "type": r["type"],
                          "key": r["key"], "value": r["value"]})
    else:
        render_state_table(doc)


def render_state_table(doc):
    groups, members, others = [], [], []
    for r in doc["records"]:
        if r["type"] == "group_metadata":
            v, g = r["value"], r["key"]["group"]
            static = sum(1 for m in v["members"] if m.get("groupInstanceId") is not None)
            groups.append([g, v["protocolType"], v.get("protocol") or "", v["generation"], v.get("leader") or "",
                           len(v["members"]), static, iso_ms(v.get("currentStateTimestamp"))])
            for m in v["members"]:
                members.append([g, m["memberId"], m.get("groupInstanceId") or "",
                                "STATIC" if m.get("groupInstanceId") is not None else "DYNAMIC",
                                m["clientId"], m["clientHost"], m["sessionTimeout"],
                                assignment_text(m.get("assignment"))])
        else:
            others.append([r["type"], dumps(r["key"]), _short(dumps(r["value"]))])
    table(groups, ["GROUP", "PROTOCOL TYPE", "PROTOCOL", "GENERATION", "LEADER", "MEMBERS", "STATIC",
                   "STATE SINCE"], title="GROUPS")
    click.echo()
    table(members, ["GROUP", "MEMBER ID", "GROUP.INSTANCE.ID", "KIND", "CLIENT ID", "HOST", "SESSION MS",
                    "ASSIGNMENT"], title="MEMBERS")
    click.echo()
    table([[c["group"], c["topic"], c["partition"], c["offset"], c["leaderEpoch"], c["metadata"],
            iso_ms(c["commitTimestamp"])] for c in doc["committed_offsets"]],
          ["GROUP", "TOPIC", "PARTITION", "OFFSET", "LEADER EPOCH", "METADATA", "COMMITTED AT"],
          title="COMMITTED OFFSETS")
    pending = [[t["producer_id"], c["group"], c["topic"], c["partition"], c["offset"]]
               for t in doc["open_transactions"] for c in t["offsets"]]
    if pending:
        click.echo()
        table(pending, ["PRODUCER ID", "GROUP", "TOPIC", "PARTITION", "OFFSET"],
              title="OPEN TRANSACTIONS (not committed)")
    if others:
        click.echo()
        table(others, ["TYPE", "KEY", "VALUE"], title="OTHER RECORDS (latest per key)")


def assignment_text(assignment) -> str:
    """`orders:0,1 payments:3` for a decoded consumer assignment; the size for opaque bytes."""
    if isinstance(assignment, dict):
        parts = [f"{tp['topic']}:{','.join(str(p) for p in tp['partitions'])}"
                 for tp in assignment.get("assignedPartitions") or []]
        return " ".join(parts) or "-"
    if isinstance(assignment, str):
        return f"<{len(assignment) * 3 // 4} bytes>"
    return ""


def _short(text: str, limit: int = 100) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def table_row(row) -> list:
    time = iso_ms(row.timestamp)
    if row.kind == "control":
        return [row.offset, time, "control", "", f"producer {row.producer_id}", row.marker]
    if row.kind == "error":
        return [row.offset, time, "error", "", "", _short(row.error)]
    key = key_to_json(row.key)
    group = key.get("group", key.get("groupId", ""))
    detail = ""
    if "topic" in key:
        detail = f"{key['topic']}-{key['partition']}"
    elif "memberId" in key:
        detail = key["memberId"]
    return [row.offset, time, row.type_name, group, detail, value_summary(row)]


def value_summary(row) -> str:
    if row.value is None:
        return "<DELETE>"
    v = row.value.data
    if row.record_type in (0, 1):
        text = f"offset={v['offset']} metadata={v.get('metadata', '')!r} at {iso_ms(v.get('commitTimestamp'))}"
        if v.get("leaderEpoch", -1) >= 0:
            text += f" epoch={v['leaderEpoch']}"
        if v.get("expireTimestamp", -1) >= 0:
            text += f" expires {iso_ms(v['expireTimestamp'])}"
        return text
    if row.record_type == 2:
        members = v.get("members") or []
        static = sum(1 for m in members if m.get("groupInstanceId") is not None)
        return (f"{v.get('protocolType') or '-'}/{v.get('protocol') or '-'} gen={v.get('generation')} "
                f"leader={v.get('leader') or '-'} members={len(members)} static={static}")
    return _short(dumps(value_to_json(row.record_type, row.value, row.key.family)))


# ---------------------------------------------------------------------------------------------- run

def _report(problem, meter=None) -> None:
    if meter is not None:
        meter.clear()  # the message must not land on the progress line
    click.echo(f"kgroup: {problem}", err=True)


def family_overrides(inputs, family) -> list[str]:
    """A note when paths name the other family than an explicit --family (which wins)."""
    if not family:
        return []
    clashing = [inp.shown_path for inp in inputs if resolve_family(inp.segment, None) not in (None, family)]
    if not clashing:
        return []
    topic = "__consumer_offsets" if family == "connect" else "__worker_offsets"
    extra = len(clashing) - 1
    more = f" (and {extra} more file{'s' if extra > 1 else ''})" if extra else ""
    return [f"{clashing[0]}{more}: the path names {topic} but --family {family} was given; "
            f"decoding as {family} records"]


def default_progress(view: str) -> bool:
    """Progress by default only when stderr is a terminal, and not when records stream to that
    terminal too (the meter's line would end up inside the printed records)."""
    return sys.stderr.isatty() and not (view == "records" and sys.stdout.isatty())


def decode(paths, *, output, view, family, groups, topics, types, until_offset, until_time, strict,
           progress) -> int:
    """Decode with the local engine; until_time is epoch ms (parsed by the option)."""
    row_filter = RowFilter(groups, topics, normalize_types(types, family))
    if progress is None:
        progress = default_progress(view)
    meter = None
    problems = ProblemLog(strict=strict, report=lambda problem: _report(problem, meter))
    if view == "state":
        sink = StateSink(output, row_filter)
    elif output == "dump-log":
        sink = DumpLogSink()
    else:
        sink = RowSink(output, row_filter)
    batches_read = 0
    try:
        inputs = resolve_inputs(paths, family, problems)
        for note in family_overrides(inputs, family):
            click.echo(f"kgroup: note: {note}", err=True)
        meter = Progress(sum(i.size for i in inputs), "decoding", enabled=progress)
        done = 0
        for inp in inputs:
            sink.begin(inp)
            base = done

            def tick(pos, base=base):
                meter.update(base + pos, problems.records_ok)

            for batch, rows in iter_input(inp, problems, until_offset=until_offset, until_time=until_time,
                                          progress=tick if meter.enabled else None):
                batches_read += 1
                sink.batch(batch, rows)
            sink.end(inp, problems)
            done += inp.size
        meter.close()
        sink.close()
    except StrictModeStop:
        sys.stdout.flush()
        click.echo("kgroup: stopped at the first problem (--strict)", err=True)
        return EXIT_FAILURE
    except BrokenPipeError:  # e.g. `| head`: the reader has gone, nothing more to do
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
        except OSError:
            pass
        return EXIT_OK
    if problems.problems:
        n = len(problems.problems)
        click.echo(f"kgroup: {n} problem{'s' if n != 1 else ''}; {problems.records_ok} records decoded "
                   f"from {batches_read} batches", err=True)
        return EXIT_PARTIAL if problems.records_ok else EXIT_FAILURE
    return EXIT_OK


__all__ = ["decode", "KgroupError"]
