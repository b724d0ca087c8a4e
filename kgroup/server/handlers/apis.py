"""The API table: every API key served, the versions advertised in ApiVersions, and its handler.

The ranges are exactly what is implemented (and what the coordinator decodes for the group APIs).
InitProducerId serves idempotent producers only (a transactional id is refused); transactions
(AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn) are not implemented and so not
advertised. ConsumerGroupHeartbeat and ConsumerGroupDescribe (KIP-848) and DeleteGroups v3 (Kafka
4.4), which kafka-python lacks, use `kgroup.protocol`'s classes, declared from Kafka's message schemas
like kafka-python's own. Every group API's range is the one a real Kafka 4.4 broker advertises
(tests/live/test_kafka_api_versions.py holds serve to it; the data-plane APIs' differences are listed there).
The Connect draft's ConnectGroupHeartbeat, ConnectGroupPrepareAssignment and
ConnectGroupInstallAssignment are EXPERIMENTAL, under kgroup's own keys 1000-1002 (Kafka has none),
and so are kgroup's ConnectGroupSetConnectors (1003: the connector set, which the draft carries in no
API) and ConnectGroupDescribe (1004: Kafka describes no worker group).
"""

from __future__ import annotations


def build_api_table():
    """api_key -> (request class, min version, max version, handler(broker, request, ctx))."""
    from kafka.protocol.admin import CreatePartitionsRequest, CreateTopicsRequest, DescribeGroupsRequest, ListGroupsRequest
    from kafka.protocol.consumer import (FetchRequest, HeartbeatRequest, JoinGroupRequest,
                                         LeaveGroupRequest, ListOffsetsRequest, OffsetCommitRequest,
                                         OffsetDeleteRequest, OffsetFetchRequest,
                                         OffsetForLeaderEpochRequest, SyncGroupRequest)
    from kafka.protocol.metadata import ApiVersionsRequest, FindCoordinatorRequest, MetadataRequest
    from kafka.protocol.producer import InitProducerIdRequest, ProduceRequest

    from kgroup.protocol import (ConnectGroupHeartbeatRequest, ConnectGroupInstallAssignmentRequest,
                                 ConnectGroupDescribeRequest, ConnectGroupPrepareAssignmentRequest,
                                 ConnectGroupSetConnectorsRequest,
                                 ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest,
                                 DeleteGroupsRequest)
    from kgroup.server.handlers.connect import handle_connect_request as connect
    from kgroup.server.handlers import data
    from kgroup.server.handlers import meta
    from kgroup.server.handlers.group_bridge import handle_group_request as group

    table = {
        0: (ProduceRequest, 3, 11, data.handle_produce),
        1: (FetchRequest, 4, 12, data.handle_fetch),
        2: (ListOffsetsRequest, 1, 7, data.handle_list_offsets),
        3: (MetadataRequest, 0, 12, meta.handle_metadata),
        8: (OffsetCommitRequest, 2, 10, group),
        9: (OffsetFetchRequest, 1, 10, group),
        10: (FindCoordinatorRequest, 0, 6, meta.handle_find_coordinator),
        11: (JoinGroupRequest, 0, 9, group),
        12: (HeartbeatRequest, 0, 4, group),
        13: (LeaveGroupRequest, 0, 5, group),
        14: (SyncGroupRequest, 0, 5, group),
        15: (DescribeGroupsRequest, 0, 6, group),
        16: (ListGroupsRequest, 0, 5, group),
        18: (ApiVersionsRequest, 0, 4, meta.handle_api_versions),
        19: (CreateTopicsRequest, 2, 7, meta.handle_create_topics),
        37: (CreatePartitionsRequest, 0, 3, meta.handle_create_partitions),
        22: (InitProducerIdRequest, 0, 4, data.handle_init_producer_id),
        23: (OffsetForLeaderEpochRequest, 2, 4, data.handle_offset_for_leader_epoch),
        42: (DeleteGroupsRequest, 0, 3, group),
        47: (OffsetDeleteRequest, 0, 0, group),
        68: (ConsumerGroupHeartbeatRequest, 0, 1, group),
        69: (ConsumerGroupDescribeRequest, 0, 1, group),
        1000: (ConnectGroupHeartbeatRequest, 0, 0, connect),       # experimental
        1001: (ConnectGroupPrepareAssignmentRequest, 0, 0, connect),
        1002: (ConnectGroupInstallAssignmentRequest, 0, 0, connect),
        1003: (ConnectGroupSetConnectorsRequest, 0, 0, connect),
        1004: (ConnectGroupDescribeRequest, 0, 0, connect),
    }
    return table
