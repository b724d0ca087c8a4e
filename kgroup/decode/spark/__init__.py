"""Decoding large `__consumer_offsets` dumps on Apache Spark with the local engine's reader and decoder.

`plan` (driver: byte ranges cut at batch boundaries), `reader` (one task's range), `replay` (the state
view per log partition), `columns` (the Parquet schema) and `session` import no pyspark; `engine` does.
"""
