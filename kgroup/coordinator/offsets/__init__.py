"""The offsets side of the coordinator (Kafka's OffsetMetadataManager): the manager answering the
offset APIs (``manager``), the store it applies records to (``store``, shared with the decode
wing's state replay), the wire forms (``wire``) and the expiry rules (``retention``). It asks a
group only through the seam (``group_types.Group``), never its type."""
