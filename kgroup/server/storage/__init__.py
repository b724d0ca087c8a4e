"""kgroup.server.storage: the topics on disk under `--log-dir`.

Modules: `log_dir` (the locked directory, its topics and their ids, the internal topics),
`partition_log` (one partition's segments, index and recovery), `batches` (record-batch headers:
validate a client's batch, rewrite its offsets), `producers` (idempotent-producer ids and sequence
checks, rebuilt from the log on start-up).
"""
