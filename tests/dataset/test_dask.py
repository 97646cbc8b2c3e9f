"""A dataset's statistics on a Dask cluster (``open_dataset(dir, client=...)``) equal
the in-memory Ensemble's: every metric and absence mode on RAJAPerf and LULESH, the
mean tree, groupby results, filtered, pruned and focused ensembles, and random
ensembles with missing nodes, NaN values and dead ranks; computed by the workers,
not by DuckDB. Slow: one LocalCluster of 2 worker processes for the module."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cctviz
from tests.dataset.test_dataset import MISSING, assert_same_stats
from tests.dataset.test_dataset_ops import CASES, ensembles_and_choices
from tests.hypothesis_profiles import examples

pytestmark = pytest.mark.slow  # dask: the main test environment (cctviz[scale])


@pytest.fixture(scope="module")
def client():
    """One cluster for the module: 2 worker processes on 127.0.0.1, closed at the end."""
    from dask.distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as c,
    ):
        yield c


def _cctviz_file() -> str:
    import cctviz as here

    return here.__file__


def _open(ens, folder: Path, parts: int, client):
    per_part = max(len(ens.exclusive_rows) // parts, 1)
    return cctviz.open_dataset(ens.to_dataset(folder, rows_per_part=per_part), client=client)


def assert_same_on_cluster(ds, ens, cases, label: str) -> None:
    """Statistics and mean tree of ``ds`` equal ``ens``'s, and DuckDB was never opened."""
    for metric, missing in cases:
        want = ens.stats(metric, missing=missing)
        assert_same_stats(ds.stats(metric, missing=missing), want, f"{label} {metric} {missing}")
    assert ds.live.tolist() == ens.live.tolist(), label
    assert ds.tree.nodes.equals(ens.tree.nodes), label
    a, b = ds.tree.metrics, ens.tree.metrics
    assert list(a.columns) == list(b.columns), label
    assert np.allclose(a.to_numpy(float), b.to_numpy(float), rtol=1e-9, equal_nan=True), label
    assert ds._con is None, f"{label}: DuckDB was used"


def test_the_workers_import_this_cctviz(client):
    """The worker processes run the cctviz under test (the engine's functions are
    sent by reference), not another install."""
    assert set(client.run(_cctviz_file).values()) == {cctviz.__file__}


@pytest.mark.parametrize("which", ["rajaperf", "lulesh"])
def test_real_ensembles_every_metric_and_mode_on_the_cluster(which, request, tmp_path, client):
    from distributed import get_task_stream

    ens = request.getfixturevalue(which)
    ds = _open(ens, tmp_path / which, 4, client)
    assert len(ds._files()) >= 4  # several partitions
    cases = [(m, missing) for m in ens.tree.metrics.columns for missing in MISSING]
    with get_task_stream(client) as ts:
        assert_same_on_cluster(ds, ens, cases, which)
    ran = {str(t["key"]) for t in ts.data}
    assert any("read_parquet" in k for k in ran) and any("shuffle" in k for k in ran)
    assert ds.stats(formatted=True).equals(ens.stats(formatted=True))


def test_groupby_and_structural_operations_on_the_cluster(rajaperf, tmp_path, client):
    ens = rajaperf
    ds = _open(ens, tmp_path / "r", 5, client)
    inc = "Total time (inc)"
    cases = [(inc, "auto"), (inc, "zero"), ("Total time", "skip")]
    rules = ens.aggregation
    cases += [(m, "auto") for m, r in rules.items() if r != "sum"][:2]  # max/none rules
    got, want = ds.groupby("variant"), ens.groupby("variant")
    assert list(got) == list(want) and len(got) > 1
    for key in want:
        assert_same_on_cluster(got[key], want[key], cases, f"variant {key}")
    keep = np.ones(len(ens.tree), dtype=bool)
    keep[np.flatnonzero(ens.tree.parent >= 0)[::3]] = False
    deep = int(np.flatnonzero(ens.tree.depth == 1)[0])
    for label, op in [
        ("prune", lambda e: e.prune(inc, top_k=3)),
        ("filter", lambda e: e.filter(keep)),
        ("focus", lambda e: e.focus(deep)),
        ("select, merge", lambda e: e.select([11, 2, 5]).merge_duplicates()),
    ]:
        assert_same_on_cluster(op(ds), op(ens), cases, label)


def test_a_profile_chosen_twice_counts_twice_as_on_duckdb(rajaperf, tmp_path, client):
    """``select([3, 1, 3, 0])``: four profiles, the first and third the same one,
    each counted, on the cluster, on DuckDB and in memory."""
    ds = _open(rajaperf, tmp_path / "r", 5, client)
    duck = cctviz.open_dataset(tmp_path / "r")
    pick = [3, 1, 3, 0]
    for metric, missing in [("Total time (inc)", "auto"), ("Total time", "zero")]:
        got = ds.select(pick).stats(metric, missing=missing)
        assert_same_stats(got, duck.select(pick).stats(metric, missing=missing), metric)
        assert_same_stats(got, rajaperf.select(pick).stats(metric, missing=missing), metric)
        assert (got["count"] == 4).any()
    duck.close()


@settings(
    max_examples=examples(4),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ensembles_and_choices(), st.integers(1, 9))
def test_random_ensembles_equal_on_the_cluster(client, case, per_part):
    ens, keep, node, top_k, _, pick = case
    with tempfile.TemporaryDirectory() as d:
        folder = ens.to_dataset(Path(d) / "e", rows_per_part=per_part)
        ds = cctviz.open_dataset(folder, client=client)
        assert_same_on_cluster(ds, ens, CASES, "whole")
        chained = [("focus", lambda e: e.focus(node))]
        if keep[ens.tree.roots].any():  # the filter mask is for the unpruned tree only
            chained.append(("chain", lambda e: e.select(pick).filter(keep).prune(top_k=top_k)))
        for label, op in chained:
            assert_same_on_cluster(op(ds), op(ens), CASES, label)


def test_parts_of_many_row_groups_stay_one_partition_each(rajaperf, tmp_path, client):
    """A profile's rows are computed together: a part written in many row groups (by
    another writer, or a larger part) still gives whole profiles to one task."""
    import pyarrow.parquet as pq

    ds = _open(rajaperf, tmp_path / "r", 2, client)
    for f in ds._files():
        table = pq.read_table(f)
        pq.write_table(table, f, row_group_size=max(table.num_rows // 9, 1))
        assert pq.read_metadata(f).num_row_groups > 4
    inc = "Total time (inc)"
    cases = [(inc, "auto"), (inc, "skip"), ("Total time", "zero")]
    assert_same_on_cluster(ds.prune(inc, top_k=4), rajaperf.prune(inc, top_k=4), cases, "rg")
