"""Authorization of every served API with `--acl`, where Kafka's `KafkaApis.handle*Request` checks it.

`guarded_api_table` wraps each handler of the API table in its check. Without `--acl` nothing is
checked (Kafka without an authorizer): only Metadata, DescribeGroups and ConsumerGroupDescribe are
wrapped, to report every supported operation when a client asks for AuthorizedOperations. A check
answers a denied request (or the denied part of it) with Kafka's error — GROUP_AUTHORIZATION_FAILED,
TOPIC_AUTHORIZATION_FAILED, TRANSACTIONAL_ID_AUTHORIZATION_FAILED or CLUSTER_AUTHORIZATION_FAILED
— and hands the allowed part to the handler, merging the two answers. The principal is whatever
the listener established for the connection (`RequestContext.principal`).
This module holds the topic and cluster APIs; the group APIs are in `authorization_groups`.
"""

from __future__ import annotations

import functools
import logging
import uuid

from kgroup.kafka_errors import (CLUSTER_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED, NONE,
                                 TOPIC_AUTHORIZATION_FAILED, TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                 UNKNOWN_TOPIC_ID)
from kgroup.server.security import audit
from kgroup.server.security.acl import CLUSTER_NAME, AllowEverything
from kgroup.server.security.authorization_groups import GROUP_CHECKS
from kgroup.server.security.authorization_parts import merged, split

EVERYTHING = AllowEverything()
UNCHECKED = frozenset({18})  # ApiVersions: answered before and without authentication, as Kafka


class Access:
    """One request's questions to the authorizer, for the connection's principal. Each decision is
    logged once per request, as Kafka's authorizer logs it (`kgroup.server.security.audit`): a denial unless
    the check is a filter (`log_denied=False`, Kafka's logIfDenied), an allow at DEBUG."""

    __slots__ = ("authorizer", "principal", "request", "host", "_logged")

    def __init__(self, authorizer, principal, request=None, host=""):
        self.authorizer = authorizer
        self.principal = principal
        self.request = request      # the request the decisions are for (its API names them in the log)
        self.host = host            # the client's address
        self._logged = None

    def group(self, operation, group_id, log_denied=True) -> bool:
        return self.allowed(operation, "Group", group_id or "", log_denied)

    def topic(self, operation, name, log_denied=True, refs=1) -> bool:
        return self.allowed(operation, "Topic", name or "", log_denied, refs)

    def cluster(self, operation, log_denied=True) -> bool:
        return self.allowed(operation, "Cluster", CLUSTER_NAME, log_denied)

    def transactional_id(self, operation, name) -> bool:
        return self.allowed(operation, "TransactionalId", name)

    def operations(self, resource_type, name) -> set[int]:
        return self.authorizer.authorized_operations(self.principal, resource_type, name or "")

    def allowed(self, operation, resource_type, name, log_denied=True, refs=1) -> bool:
        rule = self.authorizer.matching_rule(self.principal, operation, resource_type, name)
        if self.authorizer.audited and (log_denied or rule is not None):
            self._audit(rule, operation, resource_type, name, refs)
        return rule is not None

    def _audit(self, rule, operation, resource_type, name, refs):
        level = logging.INFO if rule is None else logging.DEBUG
        if not audit.log.isEnabledFor(level):
            return
        key = (operation, resource_type, name)
        if self._logged is None:
            self._logged = set()
        elif key in self._logged:    # asked again while answering the same request
            return
        self._logged.add(key)
        audit.log.log(level, audit.message(self.principal, rule, operation, self.host, resource_type,
                                           name, audit.api_name(self.request), refs))


def guarded_api_table(api_table, authorizer):
    """The API table with every handler behind its authorization check; without an authorizer
    (no --acl) only the answers that report AuthorizedOperations are wrapped, and they act only
    when a client asks for the operations."""
    checks = {**TOPIC_CHECKS, **GROUP_CHECKS}
    if authorizer is None:
        return {key: (cls, lo, hi, handler if key not in ASKS_OPERATIONS
                      else functools.partial(_reporting, checks[key], ASKS_OPERATIONS[key], handler))
                for key, (cls, lo, hi, handler) in api_table.items()}
    missing = set(api_table) - set(checks) - UNCHECKED
    if missing:  # a new API must say what it checks before it is served with --acl
        raise RuntimeError(f"no authorization check for API keys {sorted(missing)}")
    return {key: (cls, lo, hi, handler if key in UNCHECKED
                  else functools.partial(_checked, checks[key], handler, authorizer))
            for key, (cls, lo, hi, handler) in api_table.items()}


# Whether a request asks for AuthorizedOperations: Metadata v8+ (topics; the cluster up to v10),
# DescribeGroups v3+, ConsumerGroupDescribe.
ASKS_OPERATIONS = {
    3: lambda r: r.version >= 8 and (r.include_topic_authorized_operations or (
        r.version <= 10 and r.include_cluster_authorized_operations)),
    15: lambda r: r.version >= 3 and r.include_authorized_operations,
    69: lambda r: r.include_authorized_operations,
}


def _reporting(check, asks, handler, broker, request, ctx):
    if not asks(request):
        return handler(broker, request, ctx)
    return check(Access(EVERYTHING, ctx.principal, request), handler, broker, request, ctx)


def _checked(check, handler, authorizer, broker, request, ctx):
    return check(Access(authorizer, ctx.principal, request, ctx.client_host), handler, broker, request, ctx)


# -- Produce, Fetch, ListOffsets, OffsetForLeaderEpoch -----------------------------------------

def refuse_topics(handler, broker, request, ctx, field, allowed, refusal, response_field):
    """Hand the handler the topics of `request.<field>` that are `allowed`; each other one is
    answered `refusal(topic)` in the response's list `response_field`."""
    kept, denied = split(getattr(request, field), allowed)
    if not denied:
        return handler(broker, request, ctx)
    extra = [refusal(t) for t in denied]
    setattr(request, field, kept)
    return merged(handler, broker, request, ctx, response_field, extra)


def check_produce(access, handler, broker, request, ctx):
    from kafka.protocol.producer import ProduceResponse

    T = ProduceResponse.TopicProduceResponse
    txn = request.transactional_id
    txn_denied = txn is not None and not access.transactional_id("Write", txn)
    code = TRANSACTIONAL_ID_AUTHORIZATION_FAILED if txn_denied else TOPIC_AUTHORIZATION_FAILED
    v = request.version

    def refusal(t):
        if request.acks == 0:
            from kgroup.server.wire import FrameError

            raise FrameError(f"Produce with acks=0 to {t.name} not authorized; closing the "
                             f"connection as Kafka does")
        return T(version=v, name=t.name, partition_responses=[
            T.PartitionProduceResponse(version=v, index=p.index, error_code=code, base_offset=-1,
                                       log_append_time_ms=-1, log_start_offset=-1,
                                       record_errors=[], error_message=None)
            for p in t.partition_data])
    return refuse_topics(handler, broker, request, ctx, "topic_data",
                         lambda t: not txn_denied and access.topic("Write", t.name, refs=len(t.partition_data)),
                         refusal,
                         "responses")


def check_fetch(access, handler, broker, request, ctx):
    from kafka.protocol.consumer import FetchResponse

    R = FetchResponse.FetchableTopicResponse
    if request.replica_id >= 0:  # a follower's fetch: Kafka asks ClusterAction on the cluster
        kept, denied = split(request.topics, lambda t: access.cluster("ClusterAction"))
    else:
        kept, denied = split(request.topics, lambda t: access.topic("Read", t.topic, refs=len(t.partitions)))
    if not denied:
        return handler(broker, request, ctx)
    v = request.version
    extra = [R(version=v, topic=t.topic, partitions=[
        R.PartitionData(version=v, partition_index=p.partition, error_code=TOPIC_AUTHORIZATION_FAILED,
                        high_watermark=-1, last_stable_offset=-1, log_start_offset=-1,
                        aborted_transactions=None, preferred_read_replica=-1, records=b"")
        for p in t.partitions]) for t in denied]
    if not kept:  # nothing to wait for: answered at once, as Kafka does
        return FetchResponse(version=v, throttle_time_ms=0, error_code=NONE, session_id=0,
                             responses=extra)
    request.topics = kept
    return merged(handler, broker, request, ctx, "responses", extra)


def check_list_offsets(access, handler, broker, request, ctx):
    from kafka.protocol.consumer import ListOffsetsResponse

    T = ListOffsetsResponse.ListOffsetsTopicResponse
    v = request.version
    return refuse_topics(
        handler, broker, request, ctx, "topics", lambda t: access.topic("Describe", t.name),
        lambda t: T(version=v, name=t.name, partitions=[
            T.ListOffsetsPartitionResponse(version=v, partition_index=p.partition_index,
                                           error_code=TOPIC_AUTHORIZATION_FAILED, timestamp=-1,
                                           offset=-1, leader_epoch=-1)
            for p in t.partitions]), "topics")


def check_offset_for_leader_epoch(access, handler, broker, request, ctx):
    from kafka.protocol.consumer import OffsetForLeaderEpochResponse as Resp

    T = Resp.OffsetForLeaderTopicResult
    v = request.version
    follower = v >= 3 and request.replica_id >= 0
    return refuse_topics(
        handler, broker, request, ctx, "topics",
        lambda t: (access.cluster("ClusterAction", log_denied=False) if follower
                   else access.topic("Describe", t.topic)),
        lambda t: T(version=v, topic=t.topic, partitions=[
            T.EpochEndOffset(version=v, error_code=TOPIC_AUTHORIZATION_FAILED, partition=p.partition,
                             leader_epoch=-1, end_offset=-1) for p in t.partitions]), "topics")


# -- Metadata, FindCoordinator, CreateTopics, InitProducerId -------------------------------------

def check_metadata(access, handler, broker, request, ctx):
    """Describe on each topic: an unauthorized topic asked by name is TOPIC_AUTHORIZATION_FAILED, an
    unauthorized one in an all-topics answer is left out; auto-creation needs Create on the cluster
    or the topic (Kafka's KafkaApis.handleTopicMetadataRequest)."""
    from kafka.protocol.metadata import MetadataResponse

    T = MetadataResponse.MetadataResponseTopic
    v = request.version
    every_topic = request.topics is None or (v == 0 and not request.topics)
    with_operations = v >= 8 and request.include_topic_authorized_operations
    denied = []
    if not every_topic:
        names_by_id = {t.topic_id: n for n, t in broker.logdir.topics.items()}
        creates = broker.config.auto_create_topics and (v < 4 or request.allow_auto_topic_creation)
        may_create = []   # Create on the cluster, asked once, if a topic would be created

        def allowed(t):
            name = t.name if t.name is not None or v < 10 else names_by_id.get(t.topic_id)
            if name is None:
                return True  # an unknown id: UNKNOWN_TOPIC_ID from the handler
            if not access.topic("Describe", name):
                return False
            if not creates or name in broker.logdir.topics:
                return True
            if not may_create:    # Kafka asks it without logging a denial: the topic's Create decides
                may_create.append(access.cluster("Create", log_denied=False))
            return may_create[0] or access.topic("Create", name)
        kept, refused = split(request.topics, allowed)
        denied = [T(version=v, error_code=TOPIC_AUTHORIZATION_FAILED,
                    name=t.name if t.name is not None else names_by_id.get(t.topic_id),
                    topic_id=t.topic_id if v >= 10 else None, is_internal=False, partitions=[],
                    authorized_operations=None) for t in refused]
        if refused:
            request.topics = kept  # v0 reads [] as every topic: cleared in finish

    def finish(response):
        topics = [t for t in response.topics if t.error_code == UNKNOWN_TOPIC_ID  # all topics: a filter
                  or access.topic("Describe", t.name, log_denied=not every_topic)]
        if not every_topic and denied and not kept:
            topics = []
        if with_operations:
            for t in topics:
                t.authorized_operations = access.operations("Topic", t.name)
        response.topics = topics + denied
        if 8 <= v <= 10 and request.include_cluster_authorized_operations:
            response.authorized_operations = access.operations("Cluster", CLUSTER_NAME)
        return response
    return finish(handler(broker, request, ctx))


def check_find_coordinator(access, handler, broker, request, ctx):
    """Describe on the group (GROUP_AUTHORIZATION_FAILED) or on the transactional id."""
    response = handler(broker, request, ctx)
    key_type = request.key_type if request.version >= 1 else 0

    def refusal(key):
        if key_type == 0:
            return None if access.group("Describe", key) else GROUP_AUTHORIZATION_FAILED
        return (None if access.transactional_id("Describe", key)
                else TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    entries = response.coordinators if request.version >= 4 else [response]
    keys = request.coordinator_keys if request.version >= 4 else [request.key]
    for entry, key in zip(entries, keys):
        code = refusal(key)
        if code is not None:
            entry.error_code, entry.error_message = code, None
            entry.node_id, entry.host, entry.port = -1, "", -1
    return response


def check_create_topics(access, handler, broker, request, ctx):
    from kafka.protocol.admin import CreateTopicsResponse

    R = CreateTopicsResponse.CreatableTopicResult
    on_cluster = access.cluster("Create", log_denied=False)   # as Kafka's ControllerApis asks it
    return refuse_topics(
        handler, broker, request, ctx, "topics", lambda t: on_cluster or access.topic("Create", t.name),
        lambda t: R(version=request.version, name=t.name, topic_id=uuid.UUID(int=0),
                    error_code=TOPIC_AUTHORIZATION_FAILED, error_message=None, num_partitions=-1,
                    replication_factor=-1, configs=None), "topics")


def check_create_partitions(access, handler, broker, request, ctx):
    """Alter on the topic (Kafka's KafkaApis.handleCreatePartitionsRequest)."""
    from kafka.protocol.admin import CreatePartitionsResponse

    R = CreatePartitionsResponse.CreatePartitionsTopicResult
    return refuse_topics(
        handler, broker, request, ctx, "topics", lambda t: access.topic("Alter", t.name),
        lambda t: R(version=request.version, name=t.name, error_code=TOPIC_AUTHORIZATION_FAILED,
                    error_message=None), "results")


def check_init_producer_id(access, handler, broker, request, ctx):
    """Write on the transactional id; an idempotent producer needs IdempotentWrite on the cluster
    or Write on some topic (Kafka's KafkaApis.handleInitProducerIdRequest)."""
    from kafka.protocol.producer import InitProducerIdResponse

    txn = request.transactional_id
    if txn is not None:
        code = None if access.transactional_id("Write", txn) else TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif access.cluster("IdempotentWrite", log_denied=False) or access.authorizer.allows_any(
            access.principal, "Write", "Topic"):
        code = None
    else:
        code = CLUSTER_AUTHORIZATION_FAILED
    if code is None:
        return handler(broker, request, ctx)
    return InitProducerIdResponse(version=request.version, throttle_time_ms=0, error_code=code,
                                  producer_id=-1, producer_epoch=-1)


TOPIC_CHECKS = {0: check_produce, 1: check_fetch, 2: check_list_offsets, 3: check_metadata,
                10: check_find_coordinator, 19: check_create_topics, 37: check_create_partitions, 22: check_init_producer_id,
                23: check_offset_for_leader_epoch}
