"""Online migration between the classic and the consumer protocol (Kafka 4.0's
``GroupMetadataManager.validateOnlineUpgrade`` / ``convertToConsumerGroup`` /
``validateOnlineDowngradeWithFencedMember(s)`` / ``validateOnlineDowngradeWithReplacedMemberId`` /
``convertToClassicGroup``, ``ConsumerGroup.fromClassicGroup``, ``ClassicGroup.fromConsumerGroup``).

Upgrade: the first ConsumerGroupHeartbeat join into a non-empty classic group that uses the
``consumer`` protocol type turns it into a consumer group, if ``group.consumer.migration.policy``
allows upgrades and the group is not larger than ``group.consumer.max.size``. Every classic member
becomes a member at epoch = the classic generation, Stable, owning the partitions of its last
classic assignment (its target too), keeping its instance id, its session timeout and its
protocols (the member record's ClassicMemberMetadata). Parked JoinGroup/SyncGroup requests are
answered REBALANCE_IN_PROGRESS. The records: the classic GroupMetadata tombstone, then member
metadata x members, group epoch, target rows x members, target epoch, current assignments x members
— then the joining heartbeat's own records.

Downgrade: when members leave or are fenced (one LeaveGroup may remove several, of either protocol)
and only classic members stay (or a classic joiner replaces the last consumer-protocol member by
instance id), the policy allows downgrades and they are no more than ``group.max.size``, the
consumer group's tombstones and one GroupMetadata record (generation = group epoch, members with
their current partitions serialized) are written and the classic group takes its place; after a
leave it prepares a rebalance so the classic members rejoin.

Each conversion is written with the records of the operation that caused it as one batch, as
Kafka's coordinator appends one CoordinatorResult: the classic tombstone, the conversion and the
joining heartbeat's records for an upgrade; the tombstones and the GroupMetadata record (after a
replacing join's own records) for a downgrade.

This module holds the policy, the downgrade and what both directions share; the upgrade is in
``migration_upgrade``. The two sit on either side of ``fencing``: fencing a member may
downgrade its group (here, below fencing), and an upgrade starts the converted members' sessions,
whose end fences them (``migration_upgrade``, above it).
"""

from __future__ import annotations

from kgroup.records import encode_assignment

from . import records as rec
from .group import ConsumerGroup
from ..classic.group import STABLE, ClassicGroup, Member
from ..classic.rebalance import prepare_rebalance, reschedule_member
from ..classic.records import group_metadata_record
from ..classic.subscriptions import remember_subscriptions

CONSUMER_PROTOCOL_TYPE = "consumer"


def upgrade_allowed(config) -> bool:
    return config.group_consumer_migration_policy in ("bidirectional", "upgrade")


def downgrade_allowed(config) -> bool:
    return config.group_consumer_migration_policy in ("bidirectional", "downgrade")


# ---- shared by both directions and by classic members inside a consumer group ------------------
def topic_id_map(coord, topic_partitions) -> dict:
    """[{topic, partitions}] by name -> {topic id: partitions}; topics the image does not know are dropped."""
    image, out = coord.topic_image, {}
    for item in topic_partitions or ():
        known = image.get(item["topic"])
        if known is not None and item["partitions"]:
            out[known[0]] = out.get(known[0], frozenset()) | frozenset(item["partitions"])
    return out


# ---- consumer -> classic ------------------------------------------------------------------------
def maybe_downgrade(coord, group: ConsumerGroup, leaving: list) -> bool:
    """Kafka's validateOnlineDowngradeWithFencedMembers then convertToClassicGroup with a rebalance:
    True if the group became a classic one (the leaving members, of either protocol, are gone with
    it). Only the members that stay count: an admin LeaveGroup removing classic members with the
    last consumer-protocol one downgrades what is left."""
    staying = [m for m_id, m in group.members.items() if m_id not in leaving]
    if not _downgradable(coord, staying):
        return False
    convert_to_classic(coord, group, staying, rebalance=True)
    return True


def maybe_downgrade_after_replacement(coord, group: ConsumerGroup, subscription_changed: bool,
                                      pending: list) -> bool:
    """Kafka's validateOnlineDowngradeWithReplacedMember: a classic joiner took the instance id of
    the last consumer-protocol member (``pending``: the join's records, applied, not yet appended,
    which go first in the conversion's batch). The members keep their partitions; a rebalance only
    when the joiner subscribes to other topics than the member it replaced (KAFKA-19546: without it
    the new subscription would wait for the next rebalance, with partitions of the new topics
    unowned)."""
    staying = list(group.members.values())
    if not _downgradable(coord, staying):
        return False
    convert_to_classic(coord, group, staying, rebalance=subscription_changed, pending=pending)
    return True


def _downgradable(coord, staying: list) -> bool:
    """Members stay, all of them classic, the policy allows downgrades, a classic group can hold them."""
    return (bool(staying) and all(m.classic is not None for m in staying)
            and downgrade_allowed(coord.config) and len(staying) <= coord.config.group_max_size)


def delete_empty_consumer_group(coord, group: ConsumerGroup) -> None:
    """A classic JoinGroup to an empty consumer group: its tombstones (offsets stay), then the
    join creates a classic group (Kafka's maybeDeleteEmptyConsumerGroup)."""
    rec.write(coord, rec.group_tombstones(group))


def convert_to_classic(coord, group: ConsumerGroup, staying: list, rebalance: bool,
                       pending: list = ()) -> ClassicGroup:
    tombstones = rec.group_tombstones(group)
    rec.apply_all(coord, tombstones)                 # the consumer group and its timers are gone
    classic = coord.get_or_create_classic_group(group.group_id, persist=False)
    classic.save()
    classic.generation_id = group.group_epoch
    for m in staying:
        classic.add(Member(m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                           m.classic.session_timeout_ms, CONSUMER_PROTOCOL_TYPE, list(m.classic.protocols)))
    classic.protocol_type = CONSUMER_PROTOCOL_TYPE
    classic.protocol_name = classic.select_protocol()
    for m in staying:
        member = classic.members[m.member_id]
        member.assignment = classic_assignment(coord, m.assigned, member.metadata(classic.protocol_name))
        classic.touch_record(m.member_id)
    classic.state = STABLE
    classic.current_state_timestamp = coord.now_ms
    remember_subscriptions(classic)     # as a load would: the converted members' subscriptions
    rec.append(coord, [*pending, *tombstones], after=[group_metadata_record(classic)])
    for member in classic.members.values():
        reschedule_member(coord, classic, member)
    if rebalance:
        prepare_rebalance(coord, classic)
    return classic


def classic_assignment(coord, assigned, subscription: bytes) -> bytes:
    """Kafka's ConsumerProtocol.serializeAssignment of the partitions by name, at the version of the
    member's subscription (0 if it does not say). A classic member inside a consumer group is
    handed one at every SyncGroup: the topic names are looked up only for the topics it holds."""
    version = int.from_bytes(subscription[:2], "big", signed=True) if len(subscription) >= 2 else 0
    image = coord.topic_image
    key = (id(assigned), id(image), version)
    kept = _ASSIGNMENT_BYTES.get(key)
    if kept is not None and kept[0] is assigned and kept[1] is image:
        return kept[2]
    raw = _classic_assignment(image, assigned, version)
    if len(_ASSIGNMENT_BYTES) >= 1 << 16:
        _ASSIGNMENT_BYTES.clear()
    _ASSIGNMENT_BYTES[key] = (assigned, image, raw)
    return raw


# (id(assigned), id(topic image), version) -> (assigned, image, its bytes): a classic member of a
# consumer group syncs at every epoch bump, mostly with the same partitions (the same map: members
# are immutable and keep a row they do not change); set_topics replaces the image, never changes it
_ASSIGNMENT_BYTES: dict[tuple, tuple] = {}


def _classic_assignment(image, assigned, version: int) -> bytes:
    partitions = []
    if assigned:
        names = {topic_id: name for name, (topic_id, _) in image.items()}
        for topic_id, parts in assigned.items():
            name = names.get(topic_id)
            if name is not None and parts:
                partitions.append((name, sorted(parts)))
        partitions.sort()
    return encode_assignment({"assignedPartitions": [{"topic": n, "partitions": p} for n, p in partitions],
                              "userData": None}, min(max(version, 0), 3))
