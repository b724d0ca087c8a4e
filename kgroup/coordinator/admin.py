"""DescribeGroups v0-v6, ListGroups v0-v5 and DeleteGroups v0-v3 (Kafka's GroupMetadataManager.describeGroups / listGroups / deleteGroups)."""

from __future__ import annotations

from kafka.protocol.admin.groups import (DescribeGroupsResponse,
                                         ListGroupsResponse)

from kgroup.protocol import DeleteGroupsResponse

from . import codes
from .group import DEAD, EMPTY, STABLE

_Described = DescribeGroupsResponse.DescribedGroup
_DescribedMember = _Described.DescribedGroupMember
_Listed = ListGroupsResponse.ListedGroup
_Deleted = DeleteGroupsResponse.DeletableGroupResult
# authorized_operations stays None: kafka-python encodes that as INT32_MIN ("not requested")


def handle_describe_groups(coord, request, client_id: str, client_host: str):
    version = request.API_VERSION
    groups = []
    for group_id in request.groups or ():
        groups.append(_describe(coord, version, group_id))
    return coord.done_reply(DescribeGroupsResponse(version=version, throttle_time_ms=0,
                                                   groups=groups))


def _describe(coord, version: int, group_id: str | None):
    described = {"group_id": group_id or "", "error_code": codes.NONE, "group_state": "",
                 "protocol_type": "", "protocol_data": "", "members": []}
    if group_id is None:
        # Kafka refuses only a null id; "" is described like any other group (backwards compatibility)
        described["error_code"] = codes.INVALID_GROUP_ID
        return _Described(**described)
    group = coord.get_classic_group(group_id)
    if group is None:
        described["group_state"] = DEAD
        if version >= 6:
            # KIP-1043: v6 reports a missing group instead of describing it as Dead
            described["error_code"] = codes.GROUP_ID_NOT_FOUND
            # Kafka's GroupMetadataManager.classicGroup: another group type is "not a classic group"
            described["error_message"] = (f"Group {group_id} not found." if coord.get_group(group_id) is None
                                          else f"Group {group_id} is not a classic group.")
        return _Described(**described)
    stable = group.state == STABLE
    protocol = group.protocol_name
    described["group_state"] = group.state
    described["protocol_type"] = group.protocol_type or ""
    described["protocol_data"] = (protocol or "") if stable else ""
    described["members"] = [
        _DescribedMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                         client_id=m.client_id, client_host=m.client_host,
                         member_metadata=m.metadata(protocol) if stable else b"",
                         member_assignment=m.assignment)
        for m in group.java_ordered_members()]
    return _Described(**described)


def handle_list_groups(coord, request, client_id: str, client_host: str):
    version = request.API_VERSION
    states = {s.strip().lower() for s in (request.states_filter or ())} if version >= 4 else set()
    types = {t.strip().lower() for t in (request.types_filter or ())} if version >= 5 else set()
    listed = []
    for group in coord.all_groups():
        group_id, protocol_type, state, group_type = group.listed()
        if (types and group_type not in types) or (states and state.lower() not in states):
            continue
        listed.append(_Listed(group_id=group_id, protocol_type=protocol_type,
                              group_state=state, group_type=group_type))
    return coord.done_reply(ListGroupsResponse(version=version, throttle_time_ms=0,
                                               error_code=codes.NONE, groups=listed))


def handle_delete_groups(coord, request, client_id: str, client_host: str):
    version = request.API_VERSION
    results = []
    for group_id in request.groups_names or ():
        # v3's ErrorMessage (KIP-1331) stays null: Kafka sets it only for a streams group whose
        # topology-description plugin failed, and a consumer or classic group has none
        results.append(_Deleted(group_id=group_id or "", error_code=_delete(coord, group_id), error_message=None))
    return coord.done_reply(DeleteGroupsResponse(version=version, throttle_time_ms=0,
                                                 results=results))


def _delete(coord, group_id: str | None) -> int:
    if group_id is None:
        # as for DescribeGroups, only a null id is invalid: "" is an ordinary (usually unknown) group
        return codes.INVALID_GROUP_ID
    group = coord.get_group(group_id)
    if group is not None and group.group_type == "consumer":
        from .consumer_admin import delete_consumer_group
        return delete_consumer_group(coord, group)
    group = coord.get_classic_group(group_id)
    if group is None or group.state == DEAD:
        return codes.GROUP_ID_NOT_FOUND
    if group.state != EMPTY:
        return codes.NON_EMPTY_GROUP
    if coord.offsets is not None:
        coord.offsets.delete_group_offsets(group_id)
    coord.delete_group_metadata(group_id)
    return codes.NONE
