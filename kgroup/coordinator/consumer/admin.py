"""Admin operations on consumer groups: ConsumerGroupDescribe (API 69, v0-v1), LeaveGroup v3+
removal of members (Kafka 4.0, KAFKA-18188). Deleting an empty group is its registration's
``delete`` (``consumer/registration.py``).

Kafka's ``GroupMetadataManager.consumerGroupDescribe`` / ``ConsumerGroup.asDescribedGroup``: a
group that is missing or not a consumer group is GROUP_ID_NOT_FOUND; topic names come from the
coordinator's metadata image (a topic id it no longer knows is left out); v1 adds MemberType
(1: the member speaks the consumer protocol, 0: a classic member inside the consumer group).
"""

from __future__ import annotations

from kgroup.kafka_errors import FENCED_INSTANCE_ID, GROUP_ID_NOT_FOUND, NONE, UNKNOWN_MEMBER_ID
from kgroup.protocol import ConsumerGroupDescribeResponse

from .group import ConsumerGroup
from .fencing import fence_members
from .target import preferred_assignor

_Described = ConsumerGroupDescribeResponse.DescribedGroup
_Member = _Described.Member
_Assignment = _Member.Assignment
_TopicPartitions = _Assignment.TopicPartitions
CONSUMER_MEMBER_TYPE, CLASSIC_MEMBER_TYPE = 1, 0


def handle_consumer_group_describe(coord, request, client_id: str, client_host: str):
    version = request.API_VERSION
    return coord.done_reply(ConsumerGroupDescribeResponse(
        version=version, throttle_time_ms=0,
        groups=[_describe(coord, group_id) for group_id in request.group_ids or ()]))


def _describe(coord, group_id: str):
    group = coord.get_group(group_id)
    if group is None or group.group_type != ConsumerGroup.group_type:
        message = (f"Group {group_id} not found." if group is None
                   else f"Group {group_id} is not a consumer group.")
        return _Described(error_code=GROUP_ID_NOT_FOUND, error_message=message, group_id=group_id,
                          group_state="", group_epoch=0, assignment_epoch=0, assignor_name="", members=[])
    names = {topic_id: name for name, (topic_id, _) in coord.topic_image.items()}
    assignor = preferred_assignor(group, None, None, coord.config.group_consumer_assignors[0], as_described=True)
    members = [_Member(member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
                       member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
                       subscribed_topic_names=sorted(m.subscribed_topic_names),
                       subscribed_topic_regex=m.subscribed_topic_regex or "",
                       assignment=_assignment(m.assigned, names),
                       target_assignment=_assignment(group.target_row(m.member_id), names),
                       member_type=CONSUMER_MEMBER_TYPE if m.classic is None else CLASSIC_MEMBER_TYPE)
               for m in _table_order(group)]
    return _Described(error_code=NONE, error_message=None, group_id=group_id, group_state=group.state,
                      group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
                      assignor_name=assignor, members=members)


def _table_order(group: ConsumerGroup) -> list:
    """The members as Kafka's member table (a TimelineHashMap) iterates them, which is how its
    ConsumerGroupDescribe lists them and where its assignor starts from."""
    from kgroup.assignors.java_order import timeline_capacity, timeline_order

    order = timeline_order(group.members, timeline_capacity(max(group.member_high_water, len(group.members))))
    return [group.members[m] for m in order]


def _assignment(row, names: dict):
    known = sorted((names[t], t, parts) for t, parts in row.items() if t in names and parts)
    return _Assignment(topic_partitions=[_TopicPartitions(topic_id=t, topic_name=name, partitions=sorted(p))
                                         for name, t, p in known])


def remove_members(coord, group: ConsumerGroup, identities: list) -> list:
    """LeaveGroup v3+ on a consumer group: fence each named member (by member id, or by instance
    id with an empty member id), bumping the group epoch once. Returns (member id, instance id,
    error) per identity, in request order."""
    results, removed = [], []
    for member_id, instance_id, _reason in identities:
        if instance_id is None:
            member = group.members.get(member_id)
            error = UNKNOWN_MEMBER_ID if member is None else NONE
        else:
            member = group.static_member(instance_id)
            if member is None:
                error = UNKNOWN_MEMBER_ID
            elif member_id and member.member_id != member_id:
                error = FENCED_INSTANCE_ID
            else:
                error = NONE
        if not error and member.member_id not in removed:
            removed.append(member.member_id)
        results.append((member_id, instance_id, error))
    if removed:
        fence_members(coord, group, removed)
    return results
