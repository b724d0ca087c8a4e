"""Live group calls: ListGroups, describing groups of both protocols, committed offsets and log-end offsets."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from kgroup.views.model import GroupView, OffsetRow, group_from_described
from kgroup.errors import KgroupError
from kgroup.wire.cluster import (RETRY_BACKOFF_S, ClusterClient, Coordinator, TransportError, error_name,
                                retriable_coordinator_error, retriable_coordinator_name)

# Classic groups' states, then the consumer/streams groups' (streams: NotReady while its internal
# topics are missing); share groups use Empty, Stable and Dead.
GROUP_STATES = ("Stable", "PreparingRebalance", "CompletingRebalance", "Empty", "Dead",
                "Assigning", "Reconciling", "NotReady")
# Kafka 4.4's types (ListGroups v5, KIP-1043), then kgroup serve's Connect worker groups.
GROUP_TYPES = ("classic", "consumer", "share", "streams", "connect")


@dataclass
class ListedGroup:
    group: str
    state: str
    protocol_type: str
    group_type: str
    coordinator: Coordinator | None      # None: listed offline, from a dump

    def to_json(self) -> dict:
        return {"group": self.group, "state": self.state, "protocol_type": self.protocol_type,
                "type": self.group_type, "coordinator": self.coordinator.to_json() if self.coordinator else None}


def list_groups(client: ClusterClient, states=(), types=()) -> list[ListedGroup]:
    """Groups from every broker; filters go to the broker when it supports them and are applied here too."""
    from kafka.protocol.admin import ListGroupsRequest

    version = client.max_version(ListGroupsRequest)
    if version < 0:
        raise KgroupError("the broker does not support ListGroups")
    wanted_states = {s.lower() for s in states}
    wanted_types = {t.lower() for t in types}
    # Brokers before 3.8 match the states filter case-sensitively ("Stable", never "stable"), so
    # only Kafka's own spellings go on the wire, as kafka-consumer-groups.sh sends them.
    canonical = {s.lower(): s for s in GROUP_STATES}
    kwargs = {"version": version}
    if version >= 4:
        kwargs["states_filter"] = sorted({canonical.get(s, s) for s in wanted_states})
    if version >= 5:
        kwargs["types_filter"] = sorted(wanted_types)
    found: dict[str, ListedGroup] = {}
    for broker, response in _list_every_broker(client, lambda: ListGroupsRequest(**kwargs)):
        for row in response.groups:
            found[row.group_id] = ListedGroup(
                row.group_id, getattr(row, "group_state", "") or "", getattr(row, "protocol_type", "") or "",
                # Brokers before ListGroups v5 only have classic groups.
                (getattr(row, "group_type", "") or "classic").lower(), broker)
    groups = sorted(found.values(), key=lambda g: g.group)
    if version < 5 and groups:
        _types_by_describing(client, groups)
    if wanted_states and any(not g.state for g in groups):
        described = {v.group: v.state for v in describe_groups(client, [g.group for g in groups if not g.state])}
        for g in groups:
            g.state = g.state or described.get(g.group, "")
    return filter_listed(groups, states, types)


def _list_every_broker(client: ClusterClient, build):
    """(broker, ListGroups answer) for every broker. Groups live on their coordinators, so a broker
    that stops answering meanwhile (its groups moving to the others, maybe ones already asked) or
    answers that a coordinator is loading restarts the round over the brokers Metadata lists
    then, until the timeout — complete, rather than missing the groups that moved."""
    import time

    deadline = time.monotonic() + client.timeout_s
    brokers = client.brokers()
    while True:
        answers, problem = [], None
        for broker in brokers:
            what = f"ListGroups on broker {broker}"
            try:
                response = client.send(build(), node_id=broker.node_id, what=what)
            except TransportError as exc:
                problem = exc
                break
            if retriable_coordinator_error(response.error_code):
                problem = KgroupError(f"{what} failed: {error_name(response.error_code)}")
                break
            if response.error_code:
                raise KgroupError(f"{what} failed: {error_name(response.error_code)}")
            answers.append((broker, response))
        if problem is None:
            return answers
        if time.monotonic() >= deadline:
            raise problem
        time.sleep(RETRY_BACKOFF_S)
        try:
            brokers = client.brokers(fresh=True)
        except TransportError:
            if time.monotonic() >= deadline:
                raise


def filter_listed(groups, states=(), types=()) -> list[ListedGroup]:
    """The groups in any of `states` and of any of `types` (case-insensitive; none given: all)."""
    wanted_states, wanted_types = {s.lower() for s in states}, {t.lower() for t in types}
    return [g for g in groups
            if (not wanted_states or g.state.lower() in wanted_states)
            and (not wanted_types or g.group_type.lower() in wanted_types)]


def _types_by_describing(client: ClusterClient, groups: list[ListedGroup]) -> None:
    """ListGroups before v5 has no group type: a broker that answers ConsumerGroupDescribe may host
    consumer groups, so describe the groups to learn each one's type (and state); without API 69
    every group is classic."""
    from kgroup.protocol import ConsumerGroupDescribeRequest

    if client.max_version(ConsumerGroupDescribeRequest) < 0:
        return
    for g, view in zip(groups, describe_groups(client, [g.group for g in groups])):
        if not view.error:
            g.group_type = view.group_type
            g.state = g.state or view.state


def describe_groups(client: ClusterClient, group_ids, deadline: float | None = None) -> list[GroupView]:
    """Per coordinator: one ConsumerGroupDescribe for all its groups, then (kgroup serve only) one
    ConnectGroupDescribe, then one DescribeGroups for those neither knows; groups come back in the
    order asked. Where the coordinator's ListGroups (v5+, KIP-1043) gives a group's type, only the
    describe API of that type is asked: a broker that answers ConsumerGroupDescribe for a classic
    group (Tansu: an empty consumer group) must not hide the classic group's members.

    A group whose coordinator moved meanwhile (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
    COORDINATOR_NOT_AVAILABLE, or a coordinator that stopped answering) is looked up and asked
    again until `deadline` (monotonic; default: the timeout from now), as Kafka's AdminClient
    retries them; at the deadline the last error stands.
    """
    import time

    from kgroup.wire.authorization import PREFIX, NotAuthorized, denial

    if deadline is None:
        deadline = time.monotonic() + client.timeout_s
    views: dict[str, GroupView] = {}
    pending = list(dict.fromkeys(group_ids))
    first: dict[str, Coordinator] = {}       # each group's coordinator when the describe began
    while pending:
        by_coordinator: dict[Coordinator, list[str]] = defaultdict(list)
        for group in pending:
            try:
                coordinator = client.find_coordinator(group, deadline)
            except NotAuthorized as exc:  # this group only: the others are still described
                views[group] = GroupView(group, "", "", "", None, error=str(exc))
                continue
            first.setdefault(group, coordinator)
            by_coordinator[coordinator].append(group)
        retry = []
        for coordinator, groups in by_coordinator.items():
            try:
                answered = _describe_at(client, coordinator, groups)
            except TransportError:  # the coordinator stopped: find the groups' new one
                if time.monotonic() >= deadline:
                    raise
                retry += groups
                continue
            for group in groups:
                view = answered.get(group)
                if view is not None and time.monotonic() < deadline and (
                        retriable_coordinator_name(view.error)
                        # a coordinator that just took the group over serves reads at a high
                        # watermark that trails the old leader's for a moment: the group may not
                        # be there yet
                        or coordinator != first[group] and not group_exists(view)):
                    retry.append(group)
                elif view is not None:
                    views[group] = view
        pending = retry
        if pending:
            time.sleep(RETRY_BACKOFF_S)
    result = []
    for group in group_ids:
        view = views.get(group)
        if view is None:
            view = GroupView(group, "", "", "", None, error="MISSING_FROM_RESPONSE")
        if (view.error or "").startswith("TOPIC_AUTHORIZATION_FAILED"):
            # Kafka withholds a consumer group whose assignments name a topic the principal may not
            # Describe (the group's own Describe was granted): say so, not "topic <group id>"
            view.error = f"{PREFIX}Describe the topics of group {group}"
        view.error = denial(view.error, "Describe", group) or view.error
        result.append(view)
    return result


def _describe_at(client: ClusterClient, coordinator: Coordinator, groups: list[str]) -> dict[str, GroupView]:
    from kgroup.client.connect_describe import describe_connect_groups
    from kgroup.client.consumer_describe import describe_consumer_groups
    from kgroup.client.share_describe import describe_share_groups

    listed = listed_types(client, coordinator)
    from kgroup.client.streams_describe import describe_streams_groups

    # share and streams groups: only their own describe API knows them (listed by ListGroups v5)
    typed = describe_share_groups(client, coordinator, [g for g in groups if listed.get(g) == "share"])
    typed.update(describe_streams_groups(client, coordinator, [g for g in groups if listed.get(g) == "streams"]))
    groups = [g for g in groups if g not in typed]
    views = dict(describe_consumer_groups(client, coordinator,
                                          [g for g in groups if listed.get(g, "consumer") == "consumer"]))
    views.update(describe_connect_groups(client, coordinator,
                                         [g for g in groups if g not in views and listed.get(g, "connect") == "connect"]))
    classic = [g for g in groups if g not in views]
    # A group the listing did not type (no ListGroups v5, or listed a moment later) that
    # ConsumerGroupDescribe calls an empty consumer group: Tansu answers a classic group so, so the
    # classic describe is asked too and wins if it shows members.
    unsure = [g for g in groups if g in views and g not in listed and not views[g].members]
    if classic or unsure:
        answered = _describe_classic(client, coordinator, classic + unsure)
        views.update({g: v for g, v in answered.items() if g in classic or v.members})
    return {**views, **typed}


def listed_types(client: ClusterClient, coordinator: Coordinator) -> dict[str, str]:
    """group -> type ("classic", "consumer", ...) of the groups the coordinator lists, from ListGroups
    v5+ (KIP-1043), as kafka-groups reads them; {} from a broker whose ListGroups has no type."""
    from kafka.protocol.admin import ListGroupsRequest

    version = client.max_version(ListGroupsRequest)
    if version < 5:
        return {}
    response = client.send(ListGroupsRequest(version=version, states_filter=[], types_filter=[]),
                           node_id=coordinator.node_id, what=f"ListGroups on {coordinator}")
    if response.error_code:
        return {}
    return {row.group_id: (row.group_type or "classic").lower() for row in response.groups}


def _describe_classic(client: ClusterClient, coordinator: Coordinator, groups: list[str]) -> dict[str, GroupView]:
    from kafka.protocol.admin import DescribeGroupsRequest

    version = client.max_version(DescribeGroupsRequest)
    if version < 0:
        raise KgroupError("the broker does not support DescribeGroups")
    kwargs = {"groups": groups, "version": min(version, 5)}
    if kwargs["version"] >= 3:
        kwargs["include_authorized_operations"] = False
    response = client.send(DescribeGroupsRequest(**kwargs), node_id=coordinator.node_id,
                           what=f"DescribeGroups on {coordinator}")
    return {raw.group_id: group_from_described(raw, coordinator) for raw in response.groups}


def committed_offsets(client: ClusterClient, group: str, coordinator: Coordinator,
                      topics=None, leader_epochs: dict | None = None) -> dict[tuple[str, int], int]:
    """(topic, partition) -> committed offset for the group (all its partitions when supported).
    ``leader_epochs``, when given, is filled with each offset's committed leader epoch (OffsetFetch
    v5+; absent when the commit carried none, -1, as kafka-consumer-groups shows it: ``-``)."""
    from kafka.protocol.consumer import OffsetFetchRequest

    version = min(client.max_version(OffsetFetchRequest), 9)
    if version < 1:
        raise KgroupError("the broker does not support OffsetFetch v1+ (Kafka-stored offsets)")
    if version >= 8:        # the batched form Kafka's AdminClient sends (a broker may know only it)
        extra = {"member_id": None, "member_epoch": -1} if version >= 9 else {}
        request = OffsetFetchRequest(version=version, require_stable=False, groups=[
            OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group, topics=None, **extra)])
    else:
        request_topics = None if version >= 2 else [
            OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=list(ps))
            for t, ps in sorted((topics or {}).items())]
        request = OffsetFetchRequest(group_id=group, topics=request_topics, version=version)
    response, _ = client.to_coordinator(group, lambda _c: request, f"OffsetFetch for group {group!r}",
                                        code_of=_offset_fetch_code, coordinator=coordinator)
    code, answered_topics = _offset_fetch_answer(response)
    if code:
        from kgroup.wire.authorization import check

        check(error_name(code), "Describe", group)
        raise KgroupError(f"group {group!r}: OffsetFetch failed: {error_name(code)}")
    result = {}
    for topic in answered_topics:
        for part in topic.partitions:
            if part.error_code == 0 and part.committed_offset >= 0:
                result[(topic.name, part.partition_index)] = part.committed_offset
                epoch = getattr(part, "committed_leader_epoch", -1)
                if leader_epochs is not None and epoch is not None and epoch >= 0:
                    leader_epochs[(topic.name, part.partition_index)] = epoch
    return result


def _offset_fetch_answer(response) -> tuple[int, list]:
    """(error code, topics) of an OffsetFetch answer for one group: v8+ nests them per group."""
    if getattr(response, "groups", None) is not None:
        (answer,) = response.groups
        return answer.error_code or 0, answer.topics
    return getattr(response, "error_code", 0) or 0, response.topics


def _offset_fetch_code(response) -> int:
    """OffsetFetch's error: the group's (v2+), else a partition's (v1 answers per partition)."""
    code, topics = _offset_fetch_answer(response)
    if code:
        return code
    return next((p.error_code for t in topics for p in t.partitions
                 if retriable_coordinator_error(p.error_code)), 0)


def log_end_offsets(client: ClusterClient, partitions, timestamp: int = -1) -> dict[tuple[str, int], int | str]:
    """(topic, partition) -> latest offset, or an error name for a partition that cannot be read.
    Another ListOffsets `timestamp` (-2 earliest, or epoch ms) asks for that offset instead (-1
    when no record has a timestamp at or after it)."""
    return offsets_at(client, partitions, (timestamp,))[timestamp]


def offsets_at(client: ClusterClient, partitions, timestamps) -> dict[int, dict[tuple[str, int], int | str]]:
    """timestamp -> what `log_end_offsets` gives for it, with one Metadata request for them all
    (then one ListOffsets per leader and timestamp: a request names a partition once)."""
    from kafka.protocol.consumer import ListOffsetsRequest
    from kafka.protocol.metadata import MetadataRequest

    partitions = sorted(set(partitions))
    if not partitions:
        return {ts: {} for ts in timestamps}
    topics = sorted({t for t, _ in partitions})
    metadata = client.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
                                           allow_auto_topic_creation=False),
                           what="Metadata for the group's topics")
    leaders = {}
    unreadable: dict[tuple[str, int], str] = {}
    for topic in metadata.topics:
        if topic.error_code:
            for t, p in partitions:
                if t == topic.name:
                    unreadable[(t, p)] = error_name(topic.error_code)
            continue
        for part in topic.partitions:
            leaders[(topic.name, part.partition_index)] = part.leader_id
    by_leader: dict[int, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for tp in partitions:
        if tp in unreadable:
            continue
        leader = leaders.get(tp, -1)
        if leader < 0:
            unreadable[tp] = "LEADER_NOT_AVAILABLE" if tp in leaders else "UNKNOWN_TOPIC_OR_PARTITION"
        else:
            by_leader[leader][tp[0]].append(tp[1])
    version = max(min(client.max_version(ListOffsetsRequest), 7), 1)
    results = {}
    for timestamp in timestamps:
        result = results[timestamp] = dict(unreadable)
        for leader, grouped in by_leader.items():
            request = ListOffsetsRequest(
                replica_id=-1, isolation_level=0, version=version,
                topics=[ListOffsetsRequest.ListOffsetsTopic(
                    name=t, partitions=[ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                        partition_index=p, timestamp=timestamp) for p in ps]) for t, ps in grouped.items()])
            response = client.send(request, node_id=leader, what=f"ListOffsets on broker {leader}")
            for topic in response.topics:
                for part in topic.partitions:
                    key = (topic.name, part.partition_index)
                    result[key] = part.offset if part.error_code == 0 else error_name(part.error_code)
    return results


def topic_partitions(client: ClusterClient, topics) -> dict[str, list[int] | str]:
    """topic -> its partitions, or an error name (UNKNOWN_TOPIC_OR_PARTITION) from Metadata."""
    from kafka.protocol.metadata import MetadataRequest

    topics = sorted(set(topics))
    if not topics:
        return {}
    response = client.send(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=t) for t in topics],
                                           allow_auto_topic_creation=False), what="Metadata")
    found = {t.name: (error_name(t.error_code) if t.error_code
                      else sorted(p.partition_index for p in t.partitions)) for t in response.topics}
    return {t: found.get(t, "UNKNOWN_TOPIC_OR_PARTITION") for t in topics}


def attach_offsets(client: ClusterClient, view: GroupView) -> None:
    """Fill view.offsets: committed offsets, log end, lag and the owner of every partition (a
    share group's: start offset and lag per share partition)."""
    if view.group_type == "share":
        from kgroup.client.share_describe import attach_share_offsets

        return attach_share_offsets(client, view)
    owners = view.owners()
    assigned: dict[str, set[int]] = defaultdict(set)
    for t, p in owners:
        assigned[t].add(p)
    epochs: dict[tuple[str, int], int] = {}
    committed = committed_offsets(client, view.group, view.coordinator, assigned, epochs) if view.coordinator else {}
    partitions = set(committed) | set(owners)
    # a streams group's lag before its first commit is the whole log (kafka-streams-groups): its start too
    streams = view.group_type == "streams"
    found = offsets_at(client, partitions, (-1, -2) if streams else (-1,))
    ends, starts = found[-1], found.get(-2, {})
    rows = []
    for tp in sorted(partitions):
        owner = owners.get(tp)
        end, start = ends.get(tp), starts.get(tp)
        rows.append(OffsetRow(tp[0], tp[1], committed.get(tp), end if isinstance(end, int) else None,
                              owner.member_id if owner else None, owner.group_instance_id if owner else None,
                              end if isinstance(end, str) else None, epochs.get(tp),
                              log_start=start if isinstance(start, int) else None))
    view.offsets = rows


def no_such_group(group: str, coordinator) -> str:
    """How every verb says a group is not there."""
    return f"group {group!r} does not exist (coordinator {coordinator})"


def group_exists(view: GroupView) -> bool:
    """DescribeGroups answers an unknown group as Dead with no members (or GROUP_ID_NOT_FOUND)."""
    if view.error and view.error.startswith("GROUP_ID_NOT_FOUND"):
        return False
    return not (view.state in ("Dead", "") and not view.members and not view.offsets)
