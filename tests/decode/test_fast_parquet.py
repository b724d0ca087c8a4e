"""The Spark engine's Parquet columns the fast way (`fast_parquet`: offset commits from the undecoded
records, value_json joined in Arrow) equal the generic way (`RowDecoder` + `render.ParquetRows`), with
the same problems and counts: on every segment vector and on random dumps (every value version, odd
metadata, Kafka 4.4's topicId, tombstones, transactions, values and keys that do not decode), read as
a Spark task reads its range (`spark.rows.parquet_blocks`); and the fast way does take Kafka's commits."""

import pytest
from hypothesis import HealthCheck, given, settings

from kgroup.decode import fast_parquet
from kgroup.decode.decoder import ProblemLog
from kgroup.decode.inputs import RowFilter, resolve_inputs
from kgroup.decode.render import COLUMNS, ParquetRows, arrow_schema
from kgroup.decode.spark import rows as task_rows
from kgroup.decode.spark.plan import plan_tasks
from kgroup.decode.spark.reader import RangeReader
from kgroup.records import encode_key, encode_value
from kgroup.records.writer import LogWriter, OutRecord, encode_batch

from decode.test_fast_rows import KAFKA44_VECTORS, SEGMENT_VECTORS, dumps

FILTERS = (RowFilter(), RowFilter(groups=["g1", "*1*"], types={"offset_commit"}), RowFilter(topics=["t"]))


def _generic(tasks, row_filter, until=(None, None)):
    """(rows as COLUMNS tuples, problems, records decoded) of every range, decoded whole."""
    convert, keep = ParquetRows().row, (row_filter.keep if row_filter.active else None)
    rows, problems, ok = [], [], 0
    for task in tasks:
        reader = RangeReader(task, *until)
        rows += [convert(r) for _b, batch_rows in reader for r in batch_rows if keep is None or keep(r)]
        problems += reader.summary.problems
        ok += reader.summary.records_ok
    return rows, problems, ok


def _fast(tasks, row_filter, until=(None, None), arrow=False):
    """The same through `parquet_blocks`: each block's tuples, or its Arrow record batch's rows."""
    rows, problems, ok = [], [], 0
    schema = arrow_schema() if arrow else None
    for task in tasks:
        reader = RangeReader(task, *until)
        for block in task_rows.parquet_blocks(reader, row_filter):
            if arrow:
                batch = block.record_batch(schema)
                rows += list(zip(*(batch.column(i).to_pylist() for i in range(len(COLUMNS)))))
            else:
                rows += list(block.tuples())
        problems += reader.summary.problems
        ok += reader.summary.records_ok
    return rows, problems, ok


def _same_both_ways(path, split=64 << 20, family=None, until=(None, None)):
    inputs = resolve_inputs([str(path)], family, ProblemLog())
    tasks = plan_tasks(inputs, split)
    for row_filter in FILTERS:
        want = _generic(tasks, row_filter, until)
        assert _fast(tasks, row_filter, until) == want
        assert _fast(tasks, row_filter, until, arrow=True) == want


@pytest.fixture(autouse=True)
def _fresh_worker_caches():
    """Each test starts as a new Python worker does (the caches live for a worker's life)."""
    task_rows._worker_caches.clear()
    yield
    task_rows._worker_caches.clear()


def test_every_segment_vector_gives_the_same_columns_both_ways():
    assert SEGMENT_VECTORS
    for path in SEGMENT_VECTORS:
        for family in (None, "consumer", "connect"):
            _same_both_ways(path, family=family)
        _same_both_ways(path, split=1)  # a range per batch
        _same_both_ways(path, until=(15, None))


def test_kafka44_commits_go_the_fast_way(monkeypatch):
    """Once a key is known, the real Kafka 4.4 segments' commits (v4 with topicId) are columns read
    without the row decoder, and their value_json is joined in Arrow."""
    fast_rows = []
    run = fast_parquet.FastParquet._run

    def spy(self, block, batch, records, part, decoder):
        n = run(self, block, batch, records, part, decoder)
        fast_rows.append(n)
        return n

    monkeypatch.setattr(fast_parquet.FastParquet, "_run", spy)
    for path in KAFKA44_VECTORS:
        _same_both_ways(path)
    assert sum(fast_rows) > 0


def test_a_dump_of_runs_goes_the_fast_way_and_keeps_its_topic_ids(tmp_path):
    """Commits of many partitions per batch (runs), v3 and v4 with and without topicId, tombstones."""
    path = tmp_path / "__consumer_offsets-0" / "00000000000000000000.log"
    path.parent.mkdir()
    with open(path, "wb") as f:
        w = LogWriter(f)
        for round_no in range(6):
            for version, topic_id in ((3, None), (4, b"\x15" * 16), (4, None), (4, "each")):
                rows = []
                for p in range(20):
                    data = {"offset": round_no * 100 + p, "leaderEpoch": 3, "metadata": "",
                            "commitTimestamp": 1_700_000_000_000 + round_no}
                    if topic_id is not None:
                        data["topicId"] = bytes([p + 1]) * 16 if topic_id == "each" else topic_id
                    key = encode_key(1, {"group": "g1", "topic": "t", "partition": p})
                    rows.append((key, encode_value(1, version, data) if round_no != 4 else None,
                                 1_700_000_000_000 + round_no))
                w.append(rows, base_sequence=0)
        # a batch the log cleaner left with gaps between its offsets, and a run past delta 63
        f.write(encode_batch([OutRecord(encode_key(1, {"group": "g1", "topic": "t", "partition": p}),
                                          encode_value(1, 3, {"offset": p, "leaderEpoch": 1, "metadata": "",
                                                              "commitTimestamp": 5}), 1_700_000_000_000 + p % 2,
                                          offset=10_000 + 3 * p) for p in range(20)], base_offset=10_000))
        for base in (20_000, 30_000):  # (the second time with its keys known)
            f.write(encode_batch([(encode_key(1, {"group": "g2", "topic": "t", "partition": p}),
                                   encode_value(1, 3, {"offset": p, "leaderEpoch": 1, "metadata": "",
                                                       "commitTimestamp": 5}), 1_700_000_000_000)
                                  for p in range(100)], base_offset=base))
    inputs = resolve_inputs([str(path)], None, ProblemLog())
    tasks = plan_tasks(inputs, 1 << 20)
    fast = _fast(tasks, RowFilter(), arrow=True)
    assert fast == _generic(tasks, RowFilter())
    value_json = [row[-1] for row in fast[0]]
    assert sum(text is not None and '"topicId":"FRUVFRUV' in text for text in value_json) == 5 * 20
    assert sum(text is None for text in value_json) > 6 * 20


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(data=dumps())
def test_random_dumps_give_the_same_columns_both_ways(tmp_path, data):
    path = tmp_path / "__consumer_offsets-3" / "00000000000000000000.log"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(data)
    task_rows._worker_caches.clear()
    _same_both_ways(path)
    _same_both_ways(path, split=200)  # keys known from an earlier range of the same worker
