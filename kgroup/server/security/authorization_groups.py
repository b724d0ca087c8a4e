"""The group APIs' authorization checks with `--acl`, as Kafka's `KafkaApis` does them.

Read on the group for every member API (JoinGroup, SyncGroup, Heartbeat, LeaveGroup — an admin's
removal of members included —, OffsetCommit, ConsumerGroupHeartbeat and the Connect draft's APIs);
Describe for OffsetFetch, DescribeGroups, ConsumerGroupDescribe and ListGroups' filter; Delete for
DeleteGroups and OffsetDelete. Topics: Read for OffsetCommit and OffsetDelete, Describe for
OffsetFetch and a consumer group's subscription.
"""

from __future__ import annotations

from kgroup.coordinator.offsets.wire import commit_response, delete_response, fetch_response
from kgroup.kafka_errors import GROUP_AUTHORIZATION_FAILED, NONE, TOPIC_AUTHORIZATION_FAILED
from kgroup.server.security.acl import operations_field
from kgroup.server.security.authorization_parts import answer, merged, split

DENIED_OFFSET = (-1, -1, "")   # offset, leader epoch, metadata of a partition not authorized


def _read_group_or(error_response):
    """A member API's check: Read on the group, else `error_response(request)`."""
    def check(access, handler, broker, request, ctx):
        if access.group("Read", request.group_id):
            return handler(broker, request, ctx)
        return error_response(request)
    return check


def _version_error(response_class, **fields):
    return lambda request: response_class(version=request.version,
                                          error_code=GROUP_AUTHORIZATION_FAILED, **fields)


def _join_error(request):
    from kgroup.coordinator.classic.responses import join_error

    return join_error(request.version, GROUP_AUTHORIZATION_FAILED)


def _sync_error(request):
    from kgroup.coordinator.classic.responses import sync_response

    return sync_response(request.version, GROUP_AUTHORIZATION_FAILED)


# -- OffsetCommit, OffsetFetch, OffsetDelete ---------------------------------------------------

def check_offset_commit(access, handler, broker, request, ctx):
    if not access.group("Read", request.group_id):
        return commit_response(request, [(t.name, [(p.partition_index, GROUP_AUTHORIZATION_FAILED)
                                                   for p in t.partitions]) for t in request.topics])
    kept, denied = split(request.topics, lambda t: access.topic("Read", t.name))
    if not denied:
        return handler(broker, request, ctx)
    errors = commit_response(request, [(t.name, [(p.partition_index, TOPIC_AUTHORIZATION_FAILED)
                                                 for p in t.partitions]) for t in denied])
    if not kept:  # as Kafka: the coordinator is not asked
        return errors
    request.topics = kept
    return merged(handler, broker, request, ctx, "topics", errors.topics)


def check_offset_fetch(access, handler, broker, request, ctx):
    """Describe on each group (GROUP_AUTHORIZATION_FAILED) and on each topic: a topic asked for
    is TOPIC_AUTHORIZATION_FAILED, one in an all-partitions answer is left out (Kafka's
    KafkaApis.handleOffsetFetchRequest)."""
    v = request.version
    names_by_id = ({t.topic_id: n for n, t in broker.logdir.topics.items()} if v >= 10 else {})

    def topic_name(t):
        return names_by_id.get(t.topic_id, "") if v >= 10 else t.name

    def denied_part(ident, t):
        return fetch_response(request, [(None, NONE, [(ident, [(p, *DENIED_OFFSET, TOPIC_AUTHORIZATION_FAILED)
                                                               for p in t.partition_indexes])])])

    groups = [request] if v <= 7 else list(request.groups)
    denied_groups, denied_topics = {}, {}
    for group in groups:
        if not access.group("Describe", group.group_id):
            denied_groups[group.group_id] = group
        elif group.topics is not None:
            kept, refused = split(group.topics, lambda t: access.topic("Describe", topic_name(t)))
            if refused:
                group.topics = kept
                denied_topics[group.group_id] = [
                    (denied_part(t.topic_id if v >= 10 else t.name, t)) for t in refused]
    if not denied_groups and not denied_topics and not _fetches_all(groups):
        return handler(broker, request, ctx)
    if v <= 7 and denied_groups:
        parts = [(t.name, [(p, *DENIED_OFFSET, NONE) for p in t.partition_indexes])
                 for t in (request.topics or ())]
        return fetch_response(request, [(request.group_id, GROUP_AUTHORIZATION_FAILED, parts)])
    if v >= 8:
        request.groups = [g for g in groups if g.group_id not in denied_groups]

    async def finish():
        response = await answer(handler, broker, request, ctx) if (v <= 7 or request.groups) \
            else fetch_response(request, [])
        answered = [response] if v <= 7 else response.groups
        for group, entry in zip([g for g in groups if g.group_id not in denied_groups], answered):
            if group.topics is None:  # every committed partition: unauthorized topics left out
                entry.topics = [t for t in entry.topics
                                if access.topic("Describe", topic_name(t))]
            for extra in denied_topics.get(group.group_id, ()):
                entry.topics.extend(extra.topics if v <= 7 else extra.groups[0].topics)
        if v >= 8:
            refusals = fetch_response(request, [(g, GROUP_AUTHORIZATION_FAILED, [])
                                                for g in denied_groups])
            by_id = {g.group_id: g for g in list(response.groups) + list(refusals.groups)}
            response.groups = [by_id[g.group_id] for g in groups]
        return response
    return finish()


def _fetches_all(groups) -> bool:
    return any(g.topics is None for g in groups)


def check_offset_delete(access, handler, broker, request, ctx):
    if not access.group("Delete", request.group_id):
        return delete_response(request, GROUP_AUTHORIZATION_FAILED, [])
    kept, denied = split(request.topics, lambda t: access.topic("Read", t.name))
    if denied:
        request.topics = kept
    extra = delete_response(request, NONE, [
        (t.name, [(p.partition_index, TOPIC_AUTHORIZATION_FAILED) for p in t.partitions])
        for t in denied]).topics
    return merged(handler, broker, request, ctx, "topics", extra)


# -- DescribeGroups, ListGroups, DeleteGroups, ConsumerGroupDescribe ---------------------------

def check_describe_groups(access, handler, broker, request, ctx):
    from kafka.protocol.admin import DescribeGroupsResponse

    Described = DescribeGroupsResponse.DescribedGroup
    v = request.version
    with_operations = v >= 3 and request.include_authorized_operations

    async def finish():
        response = await answer(handler, broker, request, ctx)
        groups = []
        for entry in response.groups:
            if not access.group("Describe", entry.group_id):
                entry = Described(version=v, error_code=GROUP_AUTHORIZATION_FAILED,
                                  group_id=entry.group_id, group_state="", protocol_type="",
                                  protocol_data="", members=[])
            elif with_operations:
                entry.authorized_operations = access.operations("Group", entry.group_id)
            groups.append(entry)
        response.groups = groups
        return response
    return finish()


def check_consumer_group_describe(access, handler, broker, request, ctx):
    from kgroup.protocol import ConsumerGroupDescribeResponse

    Described = ConsumerGroupDescribeResponse.DescribedGroup
    v = request.version

    async def finish():
        response = await answer(handler, broker, request, ctx)
        groups = []
        for entry in response.groups:
            if not access.group("Describe", entry.group_id):
                entry = Described(version=v, group_id=entry.group_id,
                                  error_code=GROUP_AUTHORIZATION_FAILED)
            elif request.include_authorized_operations and entry.error_code == NONE:
                entry.authorized_operations = operations_field(access.operations("Group", entry.group_id))
            if _names_an_undescribable_topic(access, entry):
                entry = Described(version=v, group_id=entry.group_id, error_code=TOPIC_AUTHORIZATION_FAILED,
                                  error_message=UNDESCRIBABLE_TOPICS, members=[])
            groups.append(entry)
        response.groups = groups
        return response
    return finish()


# Kafka's KafkaApis.handleConsumerGroupDescribe: "Clients are not allowed to see topics that are not
# authorized for Describe" — a group whose members' current or target assignment names one is
# answered with TOPIC_AUTHORIZATION_FAILED, this message and no members.
UNDESCRIBABLE_TOPICS = "The group has described topic(s) that the client is not authorized to describe."


def _names_an_undescribable_topic(access, entry) -> bool:
    """Whether some topic the group's assignments name may not be described; each topic is asked
    (and each denial logged), as Kafka's filter asks every one."""
    names = dict.fromkeys(tp.topic_name
                          for member in entry.members or ()
                          for assignment in (member.assignment, member.target_assignment) if assignment is not None
                          for tp in assignment.topic_partitions or ())
    return not all([access.topic("Describe", name) for name in names])


def check_connect_group_describe(access, handler, broker, request, ctx):
    """kgroup's ConnectGroupDescribe (1004): Describe on each group, as ConsumerGroupDescribe."""
    from kgroup.server.handlers.connect import described_connect_error

    async def finish():
        response = await answer(handler, broker, request, ctx)
        response.groups = [entry if access.group("Describe", entry.group_id) else
                           described_connect_error(request.version, entry.group_id, GROUP_AUTHORIZATION_FAILED)
                           for entry in response.groups]
        return response
    return finish()


def check_list_groups(access, handler, broker, request, ctx):
    """Every group with Describe on the cluster, else the groups the principal may Describe
    (filters: Kafka logs neither denial)."""
    if access.cluster("Describe", log_denied=False):
        return handler(broker, request, ctx)

    async def finish():
        response = await answer(handler, broker, request, ctx)
        response.groups = [g for g in response.groups if access.group("Describe", g.group_id, log_denied=False)]
        return response
    return finish()


def check_delete_groups(access, handler, broker, request, ctx):
    from kgroup.protocol import DeleteGroupsResponse

    Result = DeleteGroupsResponse.DeletableGroupResult
    kept, denied = split(request.groups_names, lambda g: access.group("Delete", g))
    if denied:
        request.groups_names = kept
    extra = [Result(version=request.version, group_id=g, error_code=GROUP_AUTHORIZATION_FAILED)
             for g in denied]
    return merged(handler, broker, request, ctx, "results", extra)


def check_consumer_group_heartbeat(access, handler, broker, request, ctx):
    """Read on the group, then Describe on every subscribed topic name (Kafka's
    KafkaApis.handleConsumerGroupHeartbeat: TOPIC_AUTHORIZATION_FAILED if any is not)."""
    from kgroup.protocol import ConsumerGroupHeartbeatResponse as Resp

    if not access.group("Read", request.group_id):
        code = GROUP_AUTHORIZATION_FAILED
    elif request.subscribed_topic_names and not all(    # each topic asked (and a denial logged)
            [access.topic("Describe", name) for name in dict.fromkeys(request.subscribed_topic_names)]):
        code = TOPIC_AUTHORIZATION_FAILED
    else:
        return handler(broker, request, ctx)
    return Resp(version=request.version, error_code=code)


def _connect_error(request):
    from kgroup.protocol import (ConnectGroupHeartbeatResponse, ConnectGroupInstallAssignmentResponse,
                                 ConnectGroupPrepareAssignmentResponse, ConnectGroupSetConnectorsResponse)

    response_class = {1000: ConnectGroupHeartbeatResponse, 1001: ConnectGroupPrepareAssignmentResponse,
                      1002: ConnectGroupInstallAssignmentResponse,
                      1003: ConnectGroupSetConnectorsResponse}[request.API_KEY]
    return _version_error(response_class)(request)


def _group_checks():
    from kafka.protocol.consumer import HeartbeatResponse, LeaveGroupResponse

    return {8: check_offset_commit, 9: check_offset_fetch, 11: _read_group_or(_join_error),
            12: _read_group_or(_version_error(HeartbeatResponse)),
            13: _read_group_or(_version_error(LeaveGroupResponse, members=[])),
            14: _read_group_or(_sync_error), 15: check_describe_groups, 16: check_list_groups,
            42: check_delete_groups, 47: check_offset_delete, 68: check_consumer_group_heartbeat,
            69: check_consumer_group_describe, 1000: _read_group_or(_connect_error),
            1001: _read_group_or(_connect_error), 1002: _read_group_or(_connect_error),
            1003: _read_group_or(_connect_error), 1004: check_connect_group_describe}


GROUP_CHECKS = _group_checks()
