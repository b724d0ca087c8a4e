"""The decode wing: reading `__consumer_offsets` / `__worker_offsets` dumps into rows, state and text.

Click-free, so `decode-offsets`, `describe --from-dump` and Spark's Python workers share it:

* `inputs` — which segment files a path names, the --until cut-offs, the row filters;
* `decoder` — batches to rows (data, control, error) and the problem log;
* `dump_log_text` — `kafka-dump-log --offsets-decoder` text;
* `state` — the `--view state` replay (the coordinator's `OffsetStore` for offsets);
* `render` / `render_state` — every output format (Parquet columns included), writing to a stream;
* `run` — the local engine's loop; `outcome` — the exit status both engines give;
* `engines` — engine and format choice (the verb below its option parsing); `out_dir` — --out;
* `spark` — the Spark driver and the jobs its executors run.
"""
