"""KIP-848 consumer groups (ConsumerGroupHeartbeat/ConsumerGroupDescribe; Kafka's
``modern/consumer/``): the group, its records, the heartbeat, the target assignment and
reconciliation, fencing, regex subscriptions, classic members inside a consumer group, and the
migration between classic and consumer groups (``migration``, ``migration_upgrade``: the one part
allowed to know the classic package)."""
