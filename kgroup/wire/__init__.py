"""kgroup's transport to a Kafka cluster: what the operations verbs (``kgroup.client``),
`decode-offsets --bootstrap-server` (``kgroup.decode.live``) and the tests that talk to `kgroup
serve` share, below all of them.

* ``cluster`` — one kafka-python connection per cluster (``ClusterClient``): bootstrap, requests,
  finding a group's coordinator and following it when it moves; ``TransportError``, ``error_name``;
* ``bootstrap_failures`` — a bootstrap that cannot succeed (wrong credentials, an untrusted
  certificate, a protocol mismatch), said in one line at once;
* ``topic_log`` — one topic's partitions as raw record batches (Metadata, ListOffsets, sessionless
  Fetch);
* ``authorization`` — an authorization error code as one sentence naming the operation and the
  resource.
"""
