"""`--engine auto`'s cost model (`kgroup.decode.engine_choice`): the cores each master gives Spark,
Spark only where its estimate (start included) beats the local engine's, the benchmark's own cases
decided for the engine that was faster in them, a named cluster or an explicit --spark-threshold taken
as the user's choice. No timing: the model's figures are constants measured by benchmarks/spark.py."""

import pytest

from kgroup.decode import engine_choice
from kgroup.decode.engine_choice import BENCHMARK, COSTS, SPARK_START_S, choose, estimates, spark_cores

GIB = 1 << 30


@pytest.mark.parametrize("master, conf, cores", [
    ("local", {}, 1),
    ("local[*]", {}, 2),
    ("local[2]", {}, 2),
    ("local[1]", {}, 1),
    ("local[8]", {}, 2),  # threads beyond the CPUs run on the same two
    ("local[*, 3]", {}, 2),
    ("local[4,2]", {}, 2),
    ("local-cluster[2, 1, 1024]", {}, 2),
    ("spark://10.0.0.1:7077", {}, None),
    ("yarn", {"spark.executor.instances": "8", "spark.executor.cores": "4"}, 32),
    ("spark://h:7077", {"spark.cores.max": "12"}, 12),
    ("k8s://https://h:443", {"spark.executor.instances": "x", "spark.executor.cores": "4"}, None),
])
def test_the_cores_each_master_gives_spark(master, conf, cores):
    assert spark_cores(master, conf, cpus=2) == cores


def _break_even(view: str, cores: int) -> float | None:
    """The input size from which Spark's estimate is below the local engine's (None: never)."""
    costs = COSTS[view]
    saved_per_m = costs.local_cpu - costs.spark_cpu / (cores * costs.efficiency)
    if saved_per_m <= 0:
        return None
    fixed = SPARK_START_S + costs.spark_fixed / (cores * costs.efficiency)
    return fixed / saved_per_m * 1e6 * engine_choice.BYTES_PER_RECORD


@pytest.mark.parametrize("view", ["records", "state"])
def test_two_cores_pick_spark_only_past_the_size_where_local_2_wins(view):
    size = _break_even(view, 2)
    for test_size in (1 << 20, 256 << 20, GIB, 4 * GIB, 64 * GIB):
        expected = "spark" if size is not None and test_size > size * 1.01 else "local"
        if size is not None and abs(test_size - size) < size * 0.01:
            continue
        assert choose(test_size, view, "local[*]", {}, cpus=2).engine == expected, (view, test_size, size)


@pytest.mark.parametrize("view", ["records", "state"])
def test_one_core_never_picks_spark(view):
    for size in (GIB, 100 * GIB, 10 << 40):
        assert choose(size, view, "local[*]", {}, cpus=1).engine == "local"
        assert choose(size, view, "local", {}, cpus=8).engine == "local"


@pytest.mark.parametrize("view", ["records", "state"])
def test_more_cores_win_sooner(view):
    sizes = [_break_even(view, cores) for cores in (4, 8, 32)]
    assert all(s is not None for s in sizes) and sizes == sorted(sizes, reverse=True)
    assert choose(int(sizes[1] * 1.1), view, "local[*]", {}, cpus=8).engine == "spark"
    assert choose(int(sizes[1] * 0.9), view, "local[*]", {}, cpus=8).engine == "local"
    assert choose(int(sizes[1] * 1.1), view, "local[4]", {}, cpus=8).engine == "local"


@pytest.mark.parametrize("view", ["records", "state"])
def test_the_benchmarks_own_cases_go_to_the_engine_that_was_faster(view):
    """benchmarks/spark.py's run that measured the constants: at its size and on its two cores, auto
    picks what won there (wall time, Spark's start included)."""
    size, local_wall, spark_wall = BENCHMARK[view]
    faster = "spark" if spark_wall < local_wall else "local"
    assert choose(size, view, "local[2]", {}, cpus=2).engine == faster
    local, spark = estimates(size, view, 2)
    assert local == pytest.approx(local_wall, rel=0.15) and spark == pytest.approx(spark_wall, rel=0.15)


def test_a_named_cluster_is_the_users_choice_unless_its_cores_are_given():
    choice = choose(64 << 20, "records", "spark://10.0.0.1:7077", {}, cpus=2)
    assert choice.engine == "spark"
    assert "--master spark://10.0.0.1:7077 names a cluster whose cores are not known here" in choice.why
    conf = {"spark.executor.instances": "2", "spark.executor.cores": "1"}
    assert choose(64 << 20, "records", "yarn", conf, cpus=64).engine == "local"  # two cores: the model


def test_an_explicit_threshold_is_the_rule():
    assert choose(GIB, "records", "local[*]", {}, threshold=1 << 10, cpus=1) == engine_choice.Choice(
        "spark", "1.0 GiB of input, at least the Spark threshold of 1.0 KiB")
    choice = choose(GIB, "state", "local[*]", {}, threshold=2 * GIB, cpus=64)
    assert choice.engine == "local" and "below the Spark threshold of 2.0 GiB, see --spark-threshold" in choice.why


def test_the_note_gives_both_estimates_and_the_cores():
    choice = choose(GIB, "records", "local[*]", {}, cpus=2)
    local, spark = estimates(GIB, "records", 2)
    assert choice.why.startswith("1.0 GiB of input: about ")
    assert f"on Spark local[*] with 2 cores, its {SPARK_START_S:.0f} s start included" in choice.why
    assert choice.why.endswith("; see --spark-threshold") == (choice.engine == "local")
    assert (local < spark) == (choice.engine == "local")
