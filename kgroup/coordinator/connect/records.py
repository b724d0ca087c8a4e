"""The ``connect`` group's ``__worker_offsets`` records: written for every change, and the one apply path.

Record types 3-8 of the draft's ``__worker_offsets`` topic, encoded with the schemas kgroup decodes
(``kgroup/records/schemas/connect_worker_group_*.json``, family ``connect``). They never go into the
``__consumer_offsets`` log, whose types 3-8 are the consumer group's: the coordinator keeps them in
``coord.worker_records``. A live change is written and then applied through ``apply`` — the
function ``GroupCoordinator.from_records(worker_records=...)`` replays them with — so the group is
always what its records say.

Not in the schemas, so not rebuilt by a replay: a member's rebalance timeout (Connect's default
until its next heartbeat says otherwise) and the target's error when the target has no member.
"""

from __future__ import annotations

from kgroup.records import decode_key, decode_value, encode_key, encode_value

from .protocol import Assignor, TaskId, connector_items
from .group import ConnectGroup, ConnectMember, journaled, member_timer_keys

FAMILY = "connect"
GROUP_METADATA, CONNECTORS_TASKS, MEMBER_METADATA, TARGET_ASSIGNMENT, CURRENT_ASSIGNMENT = 3, 4, 5, 6, 7


def _record(record_type: int, key: dict, value: dict | None) -> tuple:
    return (encode_key(record_type, key, FAMILY),
            None if value is None else encode_value(record_type, 0, value, FAMILY))


def _items_value(items) -> list:
    connectors = sorted(i for i in items if not isinstance(i, TaskId))
    tasks = sorted(i for i in items if isinstance(i, TaskId))
    return [{"connectors": connectors,
             "tasks": [{"connector": t.connector, "task": t.task} for t in tasks]}]


def _items_read(value: list) -> frozenset:
    items = set()
    for entry in value:
        items.update(entry["connectors"])
        items.update(TaskId(t["connector"], t["task"]) for t in entry["tasks"])
    return frozenset(items)


def group_epoch_record(group_id: str, epoch: int) -> tuple:
    return _record(GROUP_METADATA, {"groupId": group_id}, {"epoch": epoch})


def connectors_record(group_id: str, epoch: int, connectors: dict) -> tuple:
    return _record(CONNECTORS_TASKS, {"groupId": group_id},
                   {"epoch": epoch, "connectorsTasks": _items_value(connector_items(connectors))})


def member_record(group_id: str, member: ConnectMember, group_epoch: int) -> tuple:
    return _record(MEMBER_METADATA, {"groupId": group_id, "memberId": member.member_id}, {
        "groupEpoch": group_epoch, "instanceId": member.instance_id or "",
        "clientId": member.client_id, "clientHost": member.client_host,
        "subscribedTopicNames": [], "subscribedTopicRegex": "",
        "assignors": [{"name": a.name, "minimumVersion": a.minimum_version,
                       "maximumVersion": a.maximum_version, "reason": a.reason,
                       "version": a.version, "metadata": bytes(a.metadata)} for a in member.assignors]})


def current_assignment_record(group_id: str, member: ConnectMember) -> tuple:
    return _record(CURRENT_ASSIGNMENT, {"groupId": group_id, "memberId": member.member_id}, {
        "memberEpoch": member.member_epoch, "error": member.error,
        "connectorsTasks": _items_value(member.owned), "version": member.version,
        "metadata": bytes(member.metadata)})


def member_tombstones(group_id: str, member_id: str) -> list:
    key = {"groupId": group_id, "memberId": member_id}
    return [_record(CURRENT_ASSIGNMENT, key, None), _record(MEMBER_METADATA, key, None)]


def group_tombstones(group: ConnectGroup) -> list:
    """A tombstone for every record the group has: its members', then the target, the connector set
    and last the group epoch record, whose tombstone removes the group."""
    key = {"groupId": group.group_id}
    return ([t for member_id in group.members for t in member_tombstones(group.group_id, member_id)]
            + [_record(TARGET_ASSIGNMENT, key, None), _record(CONNECTORS_TASKS, key, None),
               _record(GROUP_METADATA, key, None)])


def target_record(group_id: str, epoch: int, error: int, target: dict, versions: dict) -> tuple:
    members = []
    for member_id, items in target.items():
        version, metadata = versions.get(member_id, (0, b""))
        members.append({"memberId": member_id, "error": error, "connectorsTasks": _items_value(items),
                        "version": version, "metadata": bytes(metadata)})
    return _record(TARGET_ASSIGNMENT, {"groupId": group_id},
                   {"assignmentEpoch": epoch, "members": members})


def write(coord, records: list) -> None:
    """Append ``records`` to the worker log and apply them, in order."""
    for key, value in records:
        coord.worker_records.append((key, value))
        apply(coord, key, value)


def apply(coord, key: bytes, value: bytes | None) -> None:
    """One record's change of the group (live and on replay)."""
    decoded = decode_key(key, FAMILY)
    record_type = decoded.record_type
    handler = _APPLY.get(record_type)
    if handler is None:
        return              # the configuration record (type 8): no overrides are kept yet
    data = None if value is None else decode_value(record_type, value, FAMILY).data
    group_id = decoded.data["groupId"]
    group = journaled(coord, coord.get_group(group_id))
    if group is None:
        if data is None:
            return
        group = ConnectGroup(group_id, undo=coord.undo)
        coord.undo.push(coord.put_group, group_id, None)
        coord.put_group(group_id, group)
    elif group.group_type != ConnectGroup.group_type:
        return              # a group of another type owns the id: the heartbeat refuses those
    handler(coord, group, decoded.data, data)


def _apply_group_epoch(coord, group, key, data) -> None:
    if data is None:
        coord.remove_group(group.group_id)
    else:
        group.group_epoch = data["epoch"]


def _apply_connectors(coord, group, key, data) -> None:
    counts: dict = {}
    if data is None:
        group.connectors = counts
        return
    for entry in data["connectorsTasks"]:
        for name in entry["connectors"]:
            counts.setdefault(name, 0)
        for task in entry["tasks"]:
            counts[task["connector"]] = counts.get(task["connector"], 0) + 1
    group.connectors = counts


def _apply_member(coord, group, key, data) -> None:
    member_id = key["memberId"]
    if data is None:
        if group.members.pop(member_id, None) is not None:
            for timer_key in member_timer_keys(group.group_id, member_id):
                coord.cancel(timer_key)
        return
    member = group.members.get(member_id)
    if member is None:
        member = group.members[member_id] = ConnectMember(member_id)
    member.instance_id = data["instanceId"] or None
    member.client_id, member.client_host = data["clientId"], data["clientHost"]
    member.assignors = tuple(Assignor(a["name"], a["minimumVersion"], a["maximumVersion"], a["reason"],
                                      a["version"], a["metadata"]) for a in data["assignors"])


def _apply_target(coord, group, key, data) -> None:
    if data is None:
        group.assignment_epoch, group.target, group.target_versions, group.target_error = 0, {}, {}, 0
        return
    group.assignment_epoch = data["assignmentEpoch"]
    members = data["members"]
    group.target = {m["memberId"]: _items_read(m["connectorsTasks"]) for m in members}
    group.target_versions = {m["memberId"]: (m["version"], m["metadata"]) for m in members}
    group.target_error = members[0]["error"] if members else 0


def _apply_current(coord, group, key, data) -> None:
    member = group.members.get(key["memberId"])
    if data is None or member is None:
        return
    if member.member_epoch != data["memberEpoch"]:
        member.previous_epoch = member.member_epoch
    member.member_epoch = data["memberEpoch"]
    member.error = data["error"]
    member.owned = _items_read(data["connectorsTasks"])
    member.version, member.metadata = data["version"], data["metadata"]


_APPLY = {GROUP_METADATA: _apply_group_epoch, CONNECTORS_TASKS: _apply_connectors,
          MEMBER_METADATA: _apply_member, TARGET_ASSIGNMENT: _apply_target,
          CURRENT_ASSIGNMENT: _apply_current}


def replay_worker_records(coord, records) -> None:
    """``from_records(worker_records=...)``: rebuild the Connect groups; the log keeps the records."""
    for key, value in records:
        coord.worker_records.append((key, value))
        apply(coord, bytes(key), None if value is None else bytes(value))
