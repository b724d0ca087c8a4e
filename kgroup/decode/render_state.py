"""`--view state` output: the replayed state as one JSON document, JSON lines, CSV or tables.

Filters apply to what is shown here, never to the replay (a filtered-out record can still change
what the shown ones mean). Both engines hand their `OffsetsState` to `render_state`. The tables show
groups and members as `describe --from-dump` does (`state_groups`: the same replay and views), and
under OTHER RECORDS only the records no group shown stands for. The JSON adds the share and streams
groups (`share_groups`, `streams_groups`: describe's JSON of those types) and, from
`__share_group_state` partitions, each share partition's state (`share_partitions`).
"""

from __future__ import annotations

import fnmatch
import sys

from kgroup.writers import CsvWriter, dumps, dumps_records, iso_ms, table

from .decoder import key_group
from .render import row_json, short
from .state_groups import (GROUP_METADATA, is_group_record, share_streams_views, state_groups,
                           state_topic_names)

STATE_COLUMNS = ["status", "producer_id", "group", "topic", "partition", "offset", "leaderEpoch", "metadata",
                 "commitTimestamp", "expireTimestamp", "value_version", "record_offset", "type", "key", "value"]


def _offset_shown(c, row_filter) -> bool:
    if row_filter.types and "offset_commit" not in row_filter.types:
        return False
    if row_filter.groups and not any(fnmatch.fnmatchcase(c.group, g) for g in row_filter.groups):
        return False
    if row_filter.topics and not any(fnmatch.fnmatchcase(c.topic, t) for t in row_filter.topics):
        return False
    return True


def state_json(state, row_filter) -> dict:
    committed = [c.to_json() for c in state.committed_offsets() if _offset_shown(c, row_filter)]
    open_txns = []
    for pid, offsets in state.open_transactions():
        shown = [c.to_json() for c in offsets if _offset_shown(c, row_filter)]
        if shown:
            open_txns.append({"producer_id": pid, "offsets": shown})
    keep = row_filter.keep if row_filter.active else (lambda r: True)
    records = [row_json(r) for r in state.latest_records() if keep(r)]
    groups = share_streams_views(state, row_filter.keep if row_filter.active else None)
    shares = state.share_partitions()
    share_partitions = []
    if shares is not None:
        names = state_topic_names(state)
        share_partitions = [s.to_json(names) for s in shares.states() if _share_partition_shown(s, row_filter)]
    return {"committed_offsets": committed, "open_transactions": open_txns, "records": records,
            "share_groups": [v.to_json(True) for v in groups if v.group_type == "share"],
            "streams_groups": [v.to_json(True) for v in groups if v.group_type == "streams"],
            "share_partitions": share_partitions}


def _share_partition_shown(s, row_filter) -> bool:
    """A share partition's state passes --group, and --type share_snapshot / share_update."""
    if row_filter.types and not row_filter.types & {"share_snapshot", "share_update"}:
        return False
    return not row_filter.groups or any(fnmatch.fnmatchcase(s.group, g) for g in row_filter.groups)


def render_state(state, output: str, row_filter, stream=None) -> None:
    out = stream or sys.stdout
    doc = state_json(state, row_filter)
    if output == "json":
        out.write(dumps_records(doc) + "\n")
    elif output == "jsonl":
        lines = [{"kind": "committed_offset", **c} for c in doc["committed_offsets"]]
        lines += [{"kind": "pending_offset", "producer_id": txn["producer_id"], **c}
                  for txn in doc["open_transactions"] for c in txn["offsets"]]
        lines += [{"kind": "record", **r} for r in doc["records"]]
        lines += [{"kind": "share_group", **g} for g in doc["share_groups"]]
        lines += [{"kind": "streams_group", **g} for g in doc["streams_groups"]]
        lines += [{"kind": "share_partition", **p} for p in doc["share_partitions"]]
        out.writelines(dumps_records(line) + "\n" for line in lines)
    elif output == "csv":
        writer = CsvWriter(STATE_COLUMNS, out)
        for c in doc["committed_offsets"]:
            writer.write({"status": "committed", **c})
        for txn in doc["open_transactions"]:
            for c in txn["offsets"]:
                writer.write({"status": "pending", "producer_id": txn["producer_id"], **c})
        for r in doc["records"]:  # latest record per key, types 2-15 (key and value as JSON)
            writer.write({"status": "record", "group": key_group(r["key"]),
                          "value_version": r["value_version"], "record_offset": r["offset"], "type": r["type"],
                          "key": r["key"], "value": r["value"]})
        for p in doc["share_partitions"]:  # a share partition's state: its start offset, the rest as JSON
            writer.write({"status": "share_partition", "group": p["group"], "topic": p["topic"] or p["topic_id"],
                          "partition": p["partition"], "offset": p["start_offset"], "leaderEpoch": p["leader_epoch"],
                          "record_offset": p["record_offset"], "value": p})
    else:
        keep = row_filter.keep if row_filter.active else None
        render_state_table(doc, [r for r in state.latest_records() if keep is None or keep(r)],
                           state_groups(state, keep), out)


def render_state_table(doc, records, groups, out) -> None:
    """doc: `state_json`'s document; records: the latest records shown (rows); groups: `state_groups`
    of the same state."""
    group_rows, members, others = [], [], []
    classic_records = {}  # group -> its GroupMetadata record (the leader, since when in its state)
    for row in records:
        if row.key.family == "share-state":     # their replayed state is under SHARE PARTITIONS
            continue
        group = key_group(row.key.data)
        if is_group_record(row) and group in groups.shown:
            if row.record_type == GROUP_METADATA:
                classic_records[group] = row.value.data
            continue
        r = row_json(row)
        others.append([r["type"], dumps(r["key"]), short(dumps(r["value"]))])
    for view in groups.views:
        group_rows.append(_group_row(view, classic_records.get(view.group)))
        members += [_member_row(view, m) for m in view.members]
    table(group_rows, ["GROUP", "TYPE", "STATE", "PROTOCOL TYPE", "PROTOCOL", "GENERATION/EPOCH", "LEADER",
                       "MEMBERS", "STATIC", "STATE SINCE"], title="GROUPS", stream=out)
    if groups.error:
        out.write(f"(groups not rebuilt: {groups.error}; their records are under OTHER RECORDS)\n")
    out.write("\n")
    table(members, ["GROUP", "MEMBER ID", "GROUP.INSTANCE.ID", "KIND", "CLIENT ID", "HOST", "SESSION MS",
                    "MEMBER EPOCH", "ASSIGNMENT"], title="MEMBERS", stream=out)
    out.write("\n")
    table([[c["group"], c["topic"], c["partition"], c["offset"], c["leaderEpoch"], c["metadata"],
            iso_ms(c["commitTimestamp"])] for c in doc["committed_offsets"]],
          ["GROUP", "TOPIC", "PARTITION", "OFFSET", "LEADER EPOCH", "METADATA", "COMMITTED AT"],
          title="COMMITTED OFFSETS", stream=out)
    pending = [[t["producer_id"], c["group"], c["topic"], c["partition"], c["offset"]]
               for t in doc["open_transactions"] for c in t["offsets"]]
    if pending:
        out.write("\n")
        table(pending, ["PRODUCER ID", "GROUP", "TOPIC", "PARTITION", "OFFSET"],
              title="OPEN TRANSACTIONS (not committed)", stream=out)
    if doc["share_partitions"]:
        out.write("\n")
        table([[p["group"], p["topic"] or p["topic_id"], p["partition"], p["start_offset"], p["state_epoch"],
                p["leader_epoch"], len(p["batches"]), _batches_text(p["batches"])] for p in doc["share_partitions"]],
              ["GROUP", "TOPIC", "PARTITION", "START OFFSET", "STATE EPOCH", "LEADER EPOCH", "BATCHES",
               "IN FLIGHT (first-last:state/deliveries)"], title="SHARE PARTITIONS", stream=out)
    if others:
        out.write("\n")
        table(others, ["TYPE", "KEY", "VALUE"], title="OTHER RECORDS (latest per key)", stream=out)


def _batches_text(batches: list) -> str:
    """`10-19:2/1 20-20:4/3`: a share partition's in-flight batches, first few only."""
    text = " ".join(f"{b['first_offset']}-{b['last_offset']}:{b['delivery_state']}/{b['delivery_count']}"
                    for b in batches[:4])
    return (text + (f" (+{len(batches) - 4})" if len(batches) > 4 else "")) or "-"


def _group_row(view, record) -> list:
    """A GROUPS row: a classic group's generation, leader and state time from its record; a consumer,
    share, streams or Connect worker group's epoch and assignor (none offline for share and streams:
    a broker setting)."""
    static = sum(1 for m in view.members if m.static)
    if view.group_type == "classic":
        record = record or {}
        return [view.group, "classic", view.state, view.protocol_type or "-", view.protocol or "-",
                _cell(view.generation), record.get("leader") or "-", len(view.members), static,
                iso_ms(record.get("currentStateTimestamp")) or "-"]
    return [view.group, view.group_type, view.state, view.protocol_type or "-", view.assignor or "-",
            _cell(view.group_epoch), "-", len(view.members), static, "-"]


def _member_row(view, member) -> list:
    if view.group_type == "connect":
        from kgroup.coordinator.connect.protocol import items_text

        assignment = items_text(member.runs)
    elif view.group_type == "share":
        from kgroup.views.model import topic_partitions_text

        assignment = topic_partitions_text(member.assignment)
    elif view.group_type == "streams":
        from kgroup.views.streams import TASK_KINDS, tasks_text

        assignment = " ".join(f"{kind}={tasks_text(member.tasks.get(kind))}" for kind in TASK_KINDS
                              if member.tasks.get(kind)) or "-"
    else:
        assignment = member.assignment_text(view.protocol_type)
    return [view.group, member.member_id, member.group_instance_id or "",
            "STATIC" if member.static else "DYNAMIC", member.client_id, member.client_host,
            _cell(getattr(member, "session_timeout_ms", None)), _cell(member.member_epoch), assignment]


def _cell(value) -> str:
    return "-" if value is None else str(value)


