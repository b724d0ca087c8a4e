"""ApiVersions, Metadata, FindCoordinator, CreateTopics and CreatePartitions: the cluster is this one
node."""

from __future__ import annotations

import re
import uuid

from kafka.protocol.admin import CreatePartitionsResponse, CreateTopicsResponse
from kafka.protocol.metadata import (
    ApiVersionsResponse,
    FindCoordinatorResponse,
    MetadataResponse,
)

from kgroup.kafka_errors import (COORDINATOR_NOT_AVAILABLE, INVALID_CONFIG, INVALID_PARTITIONS,
                                 INVALID_REPLICATION_FACTOR, INVALID_REQUEST, NONE, UNKNOWN_TOPIC_ID,
                                 UNKNOWN_TOPIC_OR_PARTITION)
from kgroup.server.storage.log_dir import INTERNAL_TOPICS, TopicError, validate_topic_name

# Upper bound on partitions per topic: each one is a directory and an open file.
MAX_PARTITIONS = 10000
# Kafka's "authorized operations not requested" sentinel.
AUTHZ_OMITTED = None  # kafka-python encodes None as -2147483648 (not requested)


def api_versions_response(api_table, version: int, error_code: int = NONE):
    """The advertised table; for UNSUPPORTED_VERSION only ApiVersions' own range, as Kafka does,
    so the client can retry with a version both sides know."""
    keys = [(key, lo, hi) for key, (_cls, lo, hi, _fn) in sorted(api_table.items())
            if error_code == NONE or key == 18]
    return ApiVersionsResponse(version=version, error_code=error_code, api_keys=keys,
                               throttle_time_ms=0)


# Kafka's ApiVersionsRequest.isValid(): v3+ client software name and version must match this.
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def handle_api_versions(broker, request, ctx):
    if request.version >= 3 and not all(
            isinstance(text, str) and _SOFTWARE.fullmatch(text)
            for text in (request.client_software_name, request.client_software_version)):
        # As Kafka: INVALID_REQUEST and no API list (the connection stays open).
        return ApiVersionsResponse(version=request.version, error_code=INVALID_REQUEST,
                                   api_keys=[], throttle_time_ms=0)
    return api_versions_response(ctx.api_table, request.version)


def _partitions(topic_obj, node_id, version):
    P = MetadataResponse.MetadataResponseTopic.MetadataResponsePartition
    return [P(version=version, error_code=NONE, partition_index=i, leader_id=node_id,
              leader_epoch=0, replica_nodes=[node_id], isr_nodes=[node_id], offline_replicas=[])
            for i in range(len(topic_obj.partitions))]


def handle_metadata(broker, request, ctx):
    version = request.version
    T = MetadataResponse.MetadataResponseTopic
    logdir = broker.logdir
    topics_unknown_ids = []
    if request.topics is None or (version == 0 and not request.topics):
        names = sorted(logdir.topics)
    else:
        names = []
        by_id = {t.topic_id: t.name for t in logdir.topics.values()}
        for t in request.topics:
            if t.name is None and version >= 10:
                # A topic asked for by id (v10+, KIP-516).
                name = by_id.get(t.topic_id)
                if name is None:
                    topics_unknown_ids.append(t.topic_id)
                    continue
                names.append(name)
            else:
                names.append(t.name)
    topics = []
    allow_create = broker.config.auto_create_topics and (
        version < 4 or request.allow_auto_topic_creation)
    for name in names:
        topic_obj = logdir.topics.get(name)
        error = NONE
        if topic_obj is None and name is not None and allow_create and name not in INTERNAL_TOPICS:
            try:
                topic_obj = broker.create_topic(name, broker.config.num_partitions)
            except TopicError as exc:
                error = exc.error_code
        if topic_obj is None:
            topics.append(T(version=version, error_code=error or UNKNOWN_TOPIC_OR_PARTITION,
                            name=name, is_internal=False, partitions=[],
                            authorized_operations=AUTHZ_OMITTED))
            continue
        topics.append(T(version=version, error_code=NONE, name=name, topic_id=topic_obj.topic_id,
                        is_internal=topic_obj.internal,
                        partitions=_partitions(topic_obj, broker.node_id, version),
                        authorized_operations=AUTHZ_OMITTED))
    for topic_id in topics_unknown_ids:
        topics.append(T(version=version, error_code=UNKNOWN_TOPIC_ID,
                        name=None if version >= 12 else "", topic_id=topic_id,
                        is_internal=False, partitions=[], authorized_operations=AUTHZ_OMITTED))
    B = MetadataResponse.MetadataResponseBroker
    host, port = ctx.advertised  # the listener the client came in on
    return MetadataResponse(
        version=version, throttle_time_ms=0,
        brokers=[B(version=version, node_id=broker.node_id, host=host, port=port, rack=None)],
        cluster_id=broker.config.cluster_id, controller_id=broker.node_id, topics=topics,
        authorized_operations=AUTHZ_OMITTED)


def handle_find_coordinator(broker, request, ctx):
    version = request.version
    host, port = ctx.advertised  # the listener the client came in on
    keys = request.coordinator_keys if version >= 4 else [request.key]
    key_type = request.key_type if version >= 1 else 0
    results = []
    for key in keys:
        if key_type == 0:
            results.append((key, broker.node_id, host, port, NONE, None))
        else:
            # Transactions and share groups (FindCoordinator v6's key type 2) are not implemented,
            # so there is no such coordinator.
            kind = "share" if key_type == 2 else "transaction"
            results.append((key, -1, "", -1, COORDINATOR_NOT_AVAILABLE,
                            f"kgroup serve has no {kind} coordinator"))
    if version >= 4:
        C = FindCoordinatorResponse.Coordinator
        return FindCoordinatorResponse(
            version=version, throttle_time_ms=0,
            coordinators=[C(version=version, key=k, node_id=n, host=h, port=p, error_code=e,
                            error_message=m) for k, n, h, p, e, m in results])
    key, node, h, p, err, msg = results[0]
    return FindCoordinatorResponse(version=version, throttle_time_ms=0, error_code=err,
                                   error_message=msg, node_id=node, host=h, port=p)


def handle_create_topics(broker, request, ctx):
    version = request.version
    R = CreateTopicsResponse.CreatableTopicResult
    results = []
    for topic in request.topics:
        name = topic.name
        count = topic.num_partitions if topic.num_partitions != -1 else broker.config.num_partitions
        error, message, topic_id = NONE, None, None
        try:
            validate_topic_name(name)
            if topic.replication_factor not in (-1, 1):
                raise TopicError(f"replication factor {topic.replication_factor} is larger than "
                                 f"the 1 available broker", INVALID_REPLICATION_FACTOR)
            if topic.assignments:
                raise TopicError("manual replica assignment is not supported", INVALID_REQUEST)
            if topic.configs:
                raise TopicError("topic configs are not supported by kgroup serve "
                                 f"(got {', '.join(c.name for c in topic.configs)})",
                                 INVALID_CONFIG)
            if name in broker.logdir.topics:
                raise TopicError(f"Topic '{name}' already exists.", 36)
            if count < 1:
                raise TopicError(f"Number of partitions must be larger than 0 (got {count}).",
                                 INVALID_PARTITIONS)
            if count > MAX_PARTITIONS:
                raise TopicError(f"Number of partitions {count} exceeds kgroup serve's limit of "
                                 f"{MAX_PARTITIONS} per topic.", INVALID_PARTITIONS)
            if not request.validate_only:
                topic_id = broker.create_topic(name, count).topic_id
        except TopicError as exc:
            error, message = exc.error_code, str(exc)
        results.append(R(version=version, name=name, topic_id=topic_id or uuid.UUID(int=0),
                         error_code=error,
                         error_message=message,
                         num_partitions=count if error == NONE else -1,
                         replication_factor=1 if error == NONE else -1, configs=None))
    return CreateTopicsResponse(version=version, throttle_time_ms=0, topics=results)


def handle_create_partitions(broker, request, ctx):
    """CreatePartitions: a topic grows to ``count`` partitions (never shrinks), with Kafka's errors
    and messages (ZkAdminManager/ReplicationControlManager) for a smaller or equal count, an unknown
    or internal topic, and a manual assignment (one broker: nothing to place)."""
    R = CreatePartitionsResponse.CreatePartitionsTopicResult
    results = []
    for topic in request.topics:
        name, count = topic.name, topic.count
        error, message = NONE, None
        existing = broker.logdir.topics.get(name)
        if existing is None or existing.internal:
            error, message = UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist."
        elif count < len(existing.partitions):
            error, message = INVALID_PARTITIONS, (
                f"The topic {name} currently has {len(existing.partitions)} partition(s); "
                f"{count} would not be an increase.")
        elif count == len(existing.partitions):
            error, message = INVALID_PARTITIONS, f"Topic already has {count} partition(s)."
        elif count > MAX_PARTITIONS:
            error, message = INVALID_PARTITIONS, (
                f"Number of partitions {count} exceeds kgroup serve's limit of {MAX_PARTITIONS} "
                f"per topic.")
        elif topic.assignments:
            error, message = INVALID_REQUEST, "manual replica assignment is not supported"
        elif not request.validate_only:
            try:
                broker.add_partitions(name, count)
            except TopicError as exc:
                error, message = exc.error_code, str(exc)
        results.append(R(version=request.version, name=name, error_code=error,
                         error_message=message))
    return CreatePartitionsResponse(version=request.version, throttle_time_ms=0, results=results)
