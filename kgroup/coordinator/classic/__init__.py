"""Classic groups (JoinGroup/SyncGroup/Heartbeat/LeaveGroup/DescribeGroups; Kafka's ``classic/``):
the group and its members, its GroupMetadata record, the request handlers and the rebalance."""
