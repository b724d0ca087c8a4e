"""`--view state` output: the replayed state as one JSON document, JSON lines, CSV or tables.

Filters apply to what is shown here, never to the replay (a filtered-out record can still change
what the shown ones mean). Both engines hand their `OffsetsState` to `render_state`.
"""

from __future__ import annotations

import fnmatch
import sys

from kgroup.writers import CsvWriter, dumps, dumps_records, iso_ms, table

from .decoder import key_group
from .render import row_json, short

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
    return {"committed_offsets": committed, "open_transactions": open_txns, "records": records}


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
    else:
        render_state_table(doc, out)


def render_state_table(doc, out) -> None:
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
            others.append([r["type"], dumps(r["key"]), short(dumps(r["value"]))])
    table(groups, ["GROUP", "PROTOCOL TYPE", "PROTOCOL", "GENERATION", "LEADER", "MEMBERS", "STATIC",
                   "STATE SINCE"], title="GROUPS", stream=out)
    out.write("\n")
    table(members, ["GROUP", "MEMBER ID", "GROUP.INSTANCE.ID", "KIND", "CLIENT ID", "HOST", "SESSION MS",
                    "ASSIGNMENT"], title="MEMBERS", stream=out)
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
    if others:
        out.write("\n")
        table(others, ["TYPE", "KEY", "VALUE"], title="OTHER RECORDS (latest per key)", stream=out)


def assignment_text(assignment) -> str:
    """`orders:0,1 payments:3` for a decoded consumer assignment; the size for opaque bytes."""
    if isinstance(assignment, dict):
        parts = [f"{tp['topic']}:{','.join(str(p) for p in tp['partitions'])}"
                 for tp in assignment.get("assignedPartitions") or []]
        return " ".join(parts) or "-"
    if isinstance(assignment, str):
        return f"<{len(assignment) * 3 // 4} bytes>"
    return ""
