"""One statistics function (cctviz.model.stats) for every table and view: checked
against numpy row by row, and the same numbers in ens.stats, the tree view's
payload and the Sankey's nodes."""

from __future__ import annotations

import numpy as np
import pytest

import cctviz
from cctviz.model.stats import BINS, OUTLIERS, box_plots, counted_matrix, histogram, node_stats


def _dense_stats(v: np.ndarray):
    """node_stats of a dense matrix (every profile has a value), and its box plots."""
    node, prof = np.nonzero(np.ones_like(v, dtype=bool))
    st = node_stats(
        node,
        prof,
        v[node, prof],
        v.shape[0],
        live=np.ones(v.shape[1], bool),
        run=np.zeros(v.shape[1], int),
    )
    q1, med, q3 = (st[k].to_numpy() for k in ("q25", "median", "q75"))
    return st, box_plots(v, q1, q3, med)


@pytest.mark.parametrize("seed", range(4))
def test_statistics_match_numpy_row_by_row(seed):
    rng = np.random.default_rng(seed)
    v = rng.lognormal(size=(30, 57))
    v[3] = 2.5  # a constant row
    v[7, :5] = 40.0  # outliers
    st, box = _dense_stats(v)
    for r in range(v.shape[0]):
        row = v[r]
        q1, med, q3 = np.quantile(row, [0.25, 0.5, 0.75])
        assert (st["q25"][r], st["median"][r], st["q75"][r]) == pytest.approx((q1, med, q3))
        assert st["std"][r] == pytest.approx(row.std(ddof=1))
        assert st["mean"][r] == pytest.approx(row.mean())
        inside = row[(row >= q1 - 1.5 * (q3 - q1)) & (row <= q3 + 1.5 * (q3 - q1))]
        assert box["whisker_lo"][r] == inside.min() and box["whisker_hi"][r] == inside.max()
        assert row[st["argmax"][r]] == row.max()  # ties: any profile holding the max
        if row.max() > row.min():
            want, _ = np.histogram(row, bins=BINS, range=(row.min(), row.max()))
            assert box["hist"][r].tolist() == want.tolist()
        else:
            assert box["hist"][r].tolist() == [0] * (BINS - 1) + [row.size]


def test_outliers_are_the_most_extreme_beyond_the_fences():
    rng = np.random.default_rng(5)
    v = rng.normal(10, 1, size=(6, 200))
    v[2, :20] = np.linspace(30, 50, 20)  # 20 high outliers: 8 sent, 12 more
    st, box = _dense_stats(v)
    rows, cols, more = box["outliers"]
    q1, q3, med = st["q25"].to_numpy(), st["q75"].to_numpy(), st["median"].to_numpy()
    for r in range(v.shape[0]):
        iqr = q3[r] - q1[r]
        out = np.flatnonzero((v[r] < q1[r] - 1.5 * iqr) | (v[r] > q3[r] + 1.5 * iqr))
        got = cols[rows == r]
        assert got.size == min(out.size, OUTLIERS) and more[r] == out.size - got.size
        far = np.abs(v[r, out] - med[r])
        assert np.sort(np.abs(v[r, got] - med[r]))[::-1].tolist() == sorted(far)[::-1][: got.size]
    assert more[2] >= 12


def test_histogram_bins_are_per_row_ranges_and_skip_nan():
    v = np.array([[0.0, 1.0, 2.0, 3.0], [5.0, 5.0, np.nan, 5.0]])
    h = histogram(v, np.array([0.0, 5.0]), np.array([4.0, 5.0]), 4)
    assert h.tolist() == [[1, 1, 1, 1], [0, 0, 0, 3]]


def test_counted_matrix_follows_the_absence_rule():
    v = np.array([[1.0, np.nan, 3.0, np.nan], [np.nan, np.nan, np.nan, 4.0]])
    run = np.array([0, 0, 1, 1])
    live = np.array([True, True, True, False])
    got = counted_matrix(v, live=live, run=run)
    # node 0: run 0 has it (profile 1 counts 0), run 1: profile 2; profile 3 is dead
    assert np.array_equal(got[0], [1.0, 0.0, 3.0, np.nan], equal_nan=True)
    # node 1: only the dead profile recorded it: nobody counts
    assert np.isnan(got[1]).all()
    assert np.array_equal(
        counted_matrix(v, live=live, run=run, missing="zero")[1], [0, 0, 0, np.nan], equal_nan=True
    )
    assert np.array_equal(
        counted_matrix(v, live=live, run=run, rule="max")[0], [1, np.nan, 3, np.nan], equal_nan=True
    )


def _three_ranks():
    trees = [
        cctviz.Tree.from_parents([-1, 0], ["main", "solve"], {"time": [1.0, x]})
        for x in (4.0, 8.0, 6.0)
    ]
    return cctviz.Ensemble.from_trees(trees, profiles={"rank": [0, 1, 2]})


def test_solve_4_8_6_has_one_std_everywhere():
    """The issue's case: std 2.0 (ddof 1) in ens.stats, the tree view and the Sankey
    (which said 1.633, numpy's ddof 0)."""
    ens = _three_ranks()
    st = ens.stats("time (inc)").loc[1]
    assert st["std"] == pytest.approx(2.0) and st["mean"] == pytest.approx(6.0)
    spread = cctviz.CCTView(ens, color="time (inc)")._data["spread"]  # the tree view's payload
    std = np.frombuffer(spread["std"], dtype=np.float32)
    mean = np.frombuffer(spread["mean"], dtype=np.float32)
    # main (inc): 5, 9, 7; solve: 4, 8, 6: std 2 both
    assert std.tolist() == pytest.approx([2.0, 2.0]) and mean.tolist() == pytest.approx([7.0, 6.0])
    sankey = cctviz.SankeyView(ens, group_by={"main": "main", "solve": "solve"})
    row = sankey.nodes.set_index("group").loc["solve"]
    assert row["std"] == pytest.approx(2.0) and row["mean"] == pytest.approx(6.0)
    assert row["median"] == pytest.approx(6.0) and row["max"] == 8.0 and row["min"] == 4.0


def test_rajaperf_sankey_means_leave_absent_runs_out():
    """A kernel that ran in some of the 18 RAJAPerf runs: its Sankey mean is over
    those runs (ens.stats', Thicket's), not over all 18 with zeros."""
    from tests.conftest import DATA

    ens = cctviz.read_ensemble(DATA / "thicket" / "rajaperf")
    sankey = cctviz.SankeyView(ens, group_by="name")
    st = ens.stats(sankey.metric)
    nodes = sankey.nodes
    partial = st[(st["n"] < ens.n_profiles) & (st["n"] > 0)]
    assert len(partial), "RAJAPerf has kernels missing from some runs"
    checked = 0
    for _, row in partial.iterrows():
        hit = nodes[nodes["group"] == row["name"]]
        if len(hit) != 1 or (ens.tree.names == row["name"]).sum() != 1:
            continue  # a name at several call paths is one super node of several
        got = hit.iloc[0]
        assert got["mean"] == pytest.approx(row["mean"], rel=1e-9), row["name"]
        assert got["std"] == pytest.approx(row["std"], rel=1e-9, nan_ok=True)
        assert (got["min"], got["max"], got["n"]) == pytest.approx(
            (row["min"], row["max"], row["n"])
        )
        checked += 1
    assert checked >= 1
    idx = nodes.set_index("group")
    if "Basic_INDEXLIST" in idx.index:
        want = st[st["name"] == "Basic_INDEXLIST"]["mean"].iloc[0]
        assert idx.loc["Basic_INDEXLIST", "mean"] == pytest.approx(want)


def test_stats_say_their_unit_and_read_with_units():
    """ens.stats() printed 8.373555e+06 with its unit (us) said nowhere: the table
    names its unit, and formatted=True shows each value with its own."""
    from cctviz.model.units import format_value
    from tests.conftest import LULESH_SCALING

    ens = cctviz.read_ensemble(LULESH_SCALING[:2])
    st = ens.stats("time (inc)")
    assert st.attrs["unit"] == "us"
    shown = ens.stats("time (inc)", formatted=True)
    for col in ("mean", "std", "min", "median", "max", "cost"):
        assert shown[col].tolist() == [format_value(v, "us") for v in st[col]]
    assert shown.loc[0, "mean"].endswith(" s") and "e+" not in shown.to_string()
    assert shown.loc[0, "imbalance"].endswith("\u00d7")
    assert ens.stats("time (inc)")["mean"].dtype == np.float64  # the numeric table is intact


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("missing", ["auto", "zero", "skip"])
def test_the_dense_and_the_long_form_of_the_absence_rule_agree(seed, missing):
    """counted_matrix (the Sankey's box plots) counts exactly the profiles node_stats
    (ens.stats) counts, and their mean is the same: one rule in two shapes."""
    rng = np.random.default_rng(seed)
    n, p = 12, 9
    v = rng.lognormal(size=(n, p))
    v[rng.random((n, p)) < 0.4] = np.nan  # profiles that recorded nothing there
    run = rng.integers(0, 3, p)
    live = rng.random(p) > 0.15
    node, prof = np.nonzero(~np.isnan(v))
    st = node_stats(node, prof, v[node, prof], n, live=live, run=run, missing=missing)
    counted = counted_matrix(v, live=live, run=run, missing=missing)
    assert (~np.isnan(counted)).sum(axis=1).tolist() == st["n"].tolist()
    has = st["n"].to_numpy() > 0
    np.testing.assert_allclose(np.nanmean(counted[has], axis=1), st["mean"].to_numpy()[has])
