"""Two observations of one scenario -> the difference lines.

Normalised, because random by design: member ids (a broker's ``<instance id or client id>-<UUID>``)
become ``<prefix>#n``, n counting that prefix's ids in order of first appearance (the records
first, in log order; then the fields in play order) — so "a new member id" still differs from "the
same member id"; record timestamps (``*Timestamp``) become ``<ts>`` unless -1; a consumer group's non-zero
``metadataHash`` becomes ``<hash>`` (it hashes the topic ids, random on each side; a live test
compares it byte for byte for equal ids); the play's duration is dropped. Nothing else is: every other field is compared as it is, unless the scenario names a
Tolerance for it (with its reason).
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import re

from helpers.differential.play import PROBLEM

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
MEMBER_ID = re.compile(rf"^(.*)-({UUID})$")
# A consumer-protocol member id: a random Uuid in base64 (22 characters; the Java client and Kafka
# write it URL-safe, librdkafka in the standard alphabet). Labelled by its member's client id.
CONSUMER_MEMBER_ID = re.compile(r"^[A-Za-z0-9_\-+/]{22}$")
TIMESTAMP_KEY = re.compile(r"[Tt]imestamp$")


def normalise(fields: dict) -> dict:
    labels: dict[str, str] = {}
    counts: dict[str, int] = {}

    owners = _consumer_member_clients(fields)

    def label(member_id: str) -> str:
        if member_id not in labels:
            match = MEMBER_ID.match(member_id)
            prefix = match.group(1) if match else owners[member_id]
            counts[prefix] = counts.get(prefix, 0) + 1
            labels[member_id] = f"{prefix}#{counts[prefix]}"
        return labels[member_id]

    def scan(value):
        if isinstance(value, str) and (MEMBER_ID.match(value) or value in owners):
            label(value)
        elif isinstance(value, dict):
            for v in value.values():
                scan(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                scan(v)

    def rewrite(value, key=None):
        if isinstance(value, str):
            return labels.get(value, value)
        if isinstance(value, int) and key and TIMESTAMP_KEY.search(key) and value != -1:
            return "<ts>"
        if isinstance(value, int) and key == "metadataHash" and value != 0:
            return "<hash>"     # of the topics' random ids; byte-exactness: test_kafka_metadata_hash
        if isinstance(value, dict):
            return {k: rewrite(v, k) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [rewrite(v) for v in value]
        return value

    if isinstance(fields.get("records"), list):
        fields = dict(fields, records=[_map_order_marked(r) for r in fields["records"]])
    scan(fields.get("records"))
    scan(fields)
    out = {k: rewrite(v) for k, v in fields.items() if not k.startswith("_")}
    if isinstance(out.get("records"), list):
        out["records"] = [_topics_sorted(r) for r in out["records"]]
        out["records"] = _renumbered(_without_noop_rebalances([_members_sorted(r) for r in out["records"]]))
    for key, value in out.items():
        if key.endswith(".callbacks") and isinstance(value, list):
            out[key] = _callbacks_without_noop_rebalances(value)
    return out


_TOPIC_LISTS = ("topicPartitions", "assignedPartitions", "partitionsPendingRevocation")


def _topics_sorted(record):
    """A consumer group record's topics in name order: Kafka writes an assignment's topics in the
    order of a HashMap keyed by the topics' ids, random on each side (the ids are named already)."""
    value = record.get("value") if isinstance(record, dict) else None
    if not isinstance(value, dict) or not any(isinstance(value.get(k), list) for k in _TOPIC_LISTS):
        return record
    return dict(record, value={k: sorted(v, key=lambda t: str(t.get("topicId")))
                               if k in _TOPIC_LISTS and isinstance(v, list) and all(isinstance(t, dict) for t in v)
                               else v for k, v in value.items()})


def _consumer_member_clients(fields: dict) -> dict:
    """Consumer-protocol member id -> its client id, from the member records (key memberId, value
    clientId) and the describes (member_id beside client_id), wherever they appear."""
    out = {}

    def walk(value):
        if isinstance(value, dict):
            key, val = value.get("key"), value.get("value")
            if (value.get("type") == "consumer_group_member_metadata" and isinstance(key, dict)
                    and isinstance(val, dict)):
                out.setdefault(key.get("memberId"), val.get("clientId"))
            member_id = value.get("member_id")
            if isinstance(member_id, str) and "client_id" in value:
                out.setdefault(member_id, value["client_id"])
            for v in value.values():
                walk(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)
    walk(fields)
    return {k: v for k, v in out.items()
            if isinstance(k, str) and CONSUMER_MEMBER_ID.match(k) and isinstance(v, str)}


# A rebalance that changes nothing (the same members with the same subscriptions and assignments
# as the generation before) is dropped from the records and the callbacks, and generations are
# renumbered in order. How many such rebalances a scenario has depends on client timing, on Kafka
# itself: kafka-python's leader rejoins when its metadata snapshot changes after an assignment, and
# a member's second JoinGroup (a heartbeat's REBALANCE_IN_PROGRESS arriving after it rejoined)
# starts another round when it reaches the coordinator in Stable rather than CompletingRebalance
# (playing the scenarios twice on one Kafka, benchmarks/differential.py --self-check, shows both).
def _state_of(record):
    value = record.get("value") or {}
    return text({k: v for k, v in value.items() if k not in ("generation", "currentStateTimestamp")})


def _without_noop_rebalances(records):
    out, last = [], None
    for record in records:
        if record.get("type") == "group_metadata" and record.get("value"):
            state = _state_of(record)
            if state == last:
                continue
            last = state
        elif record.get("type") == "group_metadata":
            last = None
        out.append(record)
    return out


def _renumbered(records):
    """Generations as their order among the (collapsed) GroupMetadata records: 0, 1, 2, ..."""
    numbers: dict = {}
    out = []
    for record in records:
        value = record.get("value")
        if record.get("type") == "group_metadata" and isinstance(value, dict) and "generation" in value:
            numbers.setdefault(value["generation"], len(numbers))
            record = dict(record, value=dict(value, generation=f"g{numbers[value['generation']]}"))
        out.append(record)
    return out


def _callbacks_without_noop_rebalances(events):
    """An eager no-op rebalance: revoked X then assigned X again, X what the client held."""
    out, held = [], []
    i = 0
    while i < len(events):
        kind, detail = events[i][0], events[i][1]
        nxt = events[i + 1] if i + 1 < len(events) else None
        if kind == "revoked" and detail and detail == held and nxt and nxt[0] == "assigned" and nxt[1] == detail:
            i += 2
            continue
        if kind == "assigned" and detail is not None:
            held = sorted(set(held) | set(detail)) if out and out[-1][0] != "revoked" else list(detail)
        elif kind in ("revoked", "lost") and detail:
            held = [p for p in held if p not in detail]
        elif kind == "restart":
            held = []
        out.append(events[i])
        i += 1
    return out


def in_kafka_map_order(member_ids) -> bool:
    """Are these member ids listed as Kafka's ClassicGroup.members (a java.util.HashMap) iterates
    them? (Capacity 16: the scenarios' groups stay under 13 members.)"""
    from kgroup.coordinator.classic.group import java_hash_map_order

    return list(member_ids) == java_hash_map_order(list(member_ids))


def _map_order_marked(record):
    """A GroupMetadata record gets ``membersInKafkaMapOrder``: its members' order is random on each
    side (random ids), but whether it is the member map's order is not."""
    value = record.get("value") if isinstance(record, dict) else None
    if record.get("type") != "group_metadata" or not isinstance(value, dict) or not value.get("members"):
        return record
    ids = [m.get("memberId") for m in value["members"]]
    return dict(record, value=dict(value, membersInKafkaMapOrder=in_kafka_map_order(ids)))


def _members_sorted(record):
    """A GroupMetadata record's members in member-id order: Kafka writes them in the iteration
    order of ClassicGroup.members, a java.util.HashMap keyed by the random member ids, so their
    order is random by design (the same ids in kgroup would still be another order)."""
    value = record.get("value") if isinstance(record, dict) else None
    if record.get("type") != "group_metadata" or not isinstance(value, dict) or not value.get("members"):
        return record
    members = sorted(value["members"], key=lambda m: str(m.get("memberId")))
    return dict(record, value=dict(value, members=members))


def text(value) -> str:
    return json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))


def tolerance_of(scenario, field: str):
    for pattern, tolerance in scenario.tolerances.items():
        if "/" not in pattern and fnmatch.fnmatchcase(field, pattern):
            return tolerance
    return None


def _without_keys(scenario, field: str, value):
    """A tolerance ``FIELD/KEY`` (e.g. ``records/leader``): every KEY inside that field's value is
    not compared (written <tolerated>)."""
    keys = {p.split("/", 1)[1] for p, t in scenario.tolerances.items()
            if "/" in p and t.how == "ignore" and fnmatch.fnmatchcase(field, p.split("/", 1)[0])}
    if not keys:
        return value

    def strip(v):
        if isinstance(v, dict):
            return {k: "<tolerated>" if k in keys else strip(x) for k, x in v.items()}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v
    return strip(value)


# A consumer group member's reconciliation states between two settled ones (UNREVOKED_PARTITIONS 1,
# UNRELEASED_PARTITIONS 2, UNKNOWN 3): whether a member writes one depends on whose heartbeat reaches
# the coordinator first, on Kafka itself.
_MEMBER_STABLE = 0


def _settled_records(records: list) -> list:
    """Tolerance ``settled`` of a consumer group's records: the current-assignment records of
    members between reconciliation steps (state != STABLE) are left out (and the previous epoch
    of the settled ones, which names such a state when there was one), and so is every one
    written while the group is Assigning (group epoch ahead of the target's): a member reconciled
    to the last target while KIP-1263's interval holds the next one back (a joiner waiting at the
    old epoch with nothing, a member whose subscription changed dropping the topics it left) —
    written only when the change lands within the interval (1 s) of the last target, which the
    clients' timing decides on each side. Each run of consecutive per-member records of one type is compared as
    a set (Kafka writes a batch's rows of several members — target rows, a conversion's
    tombstones — in the hash order of the members' random ids)."""
    out, run = [], []
    group_epoch = target_epoch = None
    for record in records:
        value = record.get("value") if isinstance(record, dict) else None
        kind = record.get("type") if isinstance(record, dict) else None
        if kind == "consumer_group_metadata":
            group_epoch = value.get("epoch") if isinstance(value, dict) else None
        elif kind == "consumer_group_target_assignment_metadata":
            target_epoch = value.get("assignmentEpoch") if isinstance(value, dict) else None
        if kind == "consumer_group_current_member_assignment" and isinstance(value, dict):
            if value.get("state") != _MEMBER_STABLE:
                continue
            if group_epoch is not None and target_epoch is not None and group_epoch > target_epoch:
                continue
            # the epoch it came from names the left-out state when there was one
            record = dict(record, value=dict(value, previousMemberEpoch="<tolerated>"))
        per_member = isinstance(record.get("key"), dict) and "memberId" in record["key"]
        if run and not (per_member and run[-1].get("type") == kind):
            out.extend(sorted(run, key=text))
            run = []
        if per_member:
            run.append(record)
        else:
            out.append(record)
    return out + sorted(run, key=text)


_PARTITION = re.compile(r"^.+-\d+$")
_MEMBER_NAMES = {"member_id", "client_id", "memberId", "clientId", "key"}


def _sizes(value):
    """Tolerance ``sizes``: every partition list ("t-0", ... or a record's ``partitions``) becomes
    its length, members lose their names and lists of them compare as multisets — for where which
    member gets which partition depends on the random member ids (Kafka's assignors walk members
    in their hash order), so only the shape of the assignment is Kafka's to reproduce."""
    if isinstance(value, dict):
        return {k: (len(v) if k in ("partitions", "assignmentEpochs") and isinstance(v, list) else _sizes(v))
                for k, v in value.items() if k not in _MEMBER_NAMES}
    if isinstance(value, list):
        if value and all(isinstance(v, str) and _PARTITION.match(v) for v in value):
            return len(value)
        items = [_sizes(v) for v in value]
        return sorted(items, key=text) if all(isinstance(v, dict) for v in items) else items
    return value


def differences(scenario, kafka: dict, kgroup: dict) -> list[str]:
    """One line per difference: scenario | where | field | kafka=... | kgroup=...  (``where`` is
    "both", or "kafka only"/"kgroup only" for a field one side never produced)."""
    a, b = normalise(kafka), normalise(kgroup)
    lines = [line(scenario, "runner", field, a.get(field), b.get(field))
             for field in dict.fromkeys([*a, *b])
             if any(isinstance(s.get(field), str) and s[field].startswith(PROBLEM) for s in (a, b))]
    for field in list(dict.fromkeys([*a, *b])):
        if field not in a or field not in b:
            where = "kafka only" if field in a else "kgroup only"
            lines.append(line(scenario, where, field, a.get(field), b.get(field)))
            continue
        x, y = _without_keys(scenario, field, a[field]), _without_keys(scenario, field, b[field])
        tolerance = tolerance_of(scenario, field)
        if tolerance is not None:
            if tolerance.how == "ignore":
                continue
            if tolerance.how == "unordered" and isinstance(x, list) and isinstance(y, list):
                x, y = sorted(map(text, x)), sorted(map(text, y))
            elif tolerance.how == "final" and isinstance(x, list) and isinstance(y, list):
                x, y = x[-1:], y[-1:]
            elif tolerance.how == "settled" and isinstance(x, list) and isinstance(y, list):
                x, y = _settled_records(x), _settled_records(y)
            elif tolerance.how == "sizes":      # records: settled first (the same timing holds)
                if field == "records" and isinstance(x, list) and isinstance(y, list):
                    x, y = _settled_records(x), _settled_records(y)
                x, y = _sizes(x), _sizes(y)
        if x == y:
            continue
        if field == "records" and isinstance(x, list) and isinstance(y, list):
            lines.extend(_list_differences(scenario, field, x, y))
        else:
            lines.append(line(scenario, "both", field, x, y))
    return lines


def _list_differences(scenario, field, x, y) -> list[str]:
    """A long list (the records) differs chunk by chunk, each chunk one line."""
    xs, ys = [text(v) for v in x], [text(v) for v in y]
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=xs, b=ys, autojunk=False).get_opcodes():
        if op != "equal":
            out.append(line(scenario, "both", f"{field}[{i1}:{i2}|{j1}:{j2}]", x[i1:i2], y[j1:j2]))
    return out


def line(scenario, where, field, kafka_value, kgroup_value) -> str:
    return f"{scenario.name} | {where} | {field} | kafka={text(kafka_value)} | kgroup={text(kgroup_value)}"
