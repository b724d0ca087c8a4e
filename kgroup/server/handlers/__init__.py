"""kgroup.server.handlers: what `kgroup serve` answers each API with.

Modules: `apis` (the API table: every key served, the versions advertised, its handler), `meta`
(ApiVersions, Metadata, FindCoordinator, CreateTopics, CreatePartitions), `data` (Produce, Fetch,
ListOffsets, OffsetForLeaderEpoch), `group_bridge` (the group APIs: kgroup.coordinator driven by the
event loop's clock, its records fsynced before a client hears), `connect` (the Connect draft's
experimental APIs, wire classes to and from the coordinator's dataclasses).
"""
