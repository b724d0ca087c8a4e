"""Decoding large `__consumer_offsets` dumps on Apache Spark with the local engine's reader and decoder.

`plan` (driver: byte ranges cut at batch boundaries), `reader` (one task's range), `replay` (the state
view per log partition) and `session` import no pyspark; `engine` (the jobs) and `driver` (planning,
running and rendering on the driver) do, `driver` only once Spark runs. Rendering, Parquet columns
included, is `kgroup.decode.render`'s.
"""
