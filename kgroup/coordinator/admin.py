"""ListGroups v0-v5 and DeleteGroups v0-v3 (Kafka's GroupMetadataManager.listGroups / deleteGroups): the
admin APIs that see every group type."""

from __future__ import annotations

from kafka.protocol.admin.groups import ListGroupsResponse

from kgroup.protocol import DeleteGroupsResponse

from . import codes

_Listed = ListGroupsResponse.ListedGroup
_Deleted = DeleteGroupsResponse.DeletableGroupResult


def handle_list_groups(coord, request, client_id: str, client_host: str):
    version = request.API_VERSION
    states = {s.strip().lower() for s in (request.states_filter or ())} if version >= 4 else set()
    types = {t.strip().lower() for t in (request.types_filter or ())} if version >= 5 else set()
    listed = []
    for group in coord.all_groups():
        group_id, protocol_type, state, group_type = group.listed()
        if (types and group_type not in types) or (states and not group.is_in_states(states)):
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
    if group is None:
        return codes.GROUP_ID_NOT_FOUND
    error = group.validate_delete_group()
    if error:
        return error
    coord.delete_group(group)
    return codes.NONE
