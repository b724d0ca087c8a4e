"""DescribeGroups v0-v6 (Kafka's GroupMetadataManager.describeGroups): classic groups only."""

from __future__ import annotations

from kafka.protocol.admin.groups import DescribeGroupsResponse

from .. import codes
from .group import DEAD, STABLE

_Described = DescribeGroupsResponse.DescribedGroup
_DescribedMember = _Described.DescribedGroupMember
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
