"""Ensemble statistics on the 18 RAJAPerf runs equal llnl-thicket's (thicket.stats).

Thicket reads each ``.cali`` file as one profile, fills a node a run lacks
with NaN and computes per-node statistics with pandas (``std``: ddof=1, NaN
skipped). cctviz reads the same files as 18 runs (``read_ensemble``: one run
per file); its default ``stats(missing="auto")`` leaves out the runs without
a node, which is Thicket's NaN skipping. Metric names: Thicket keeps
Caliper's aliases, with the values as recorded (inclusive); cctviz has them as
``Total time (inc)`` (a sum), ``Max time/rank (inc)`` (a max) and, per node
(aggregation "none"), ``Min time/rank``, ``Avg time/rank`` and the kernel
constants.
"""

import warnings

import numpy as np
import pandas as pd
import pytest

import cctviz
from tests.conftest import DATA
from tests.peers import require

RAJAPERF = DATA / "thicket/rajaperf"
# Thicket's column -> ours
METRICS = {
    "Total time": "Total time (inc)",
    "Max time/rank": "Max time/rank (inc)",
    "Min time/rank": "Min time/rank",
    "Avg time/rank": "Avg time/rank",
    "BlockSize": "BlockSize",
    "Reps": "Reps",
    "Bytes/Rep": "Bytes/Rep",
}
STATS = {"mean": "mean", "std": "std", "min": "minimum", "median": "median", "max": "maximum"}


@pytest.fixture(scope="module")
def both():
    ens = cctviz.read(RAJAPERF)
    thicket = require("thicket")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tk = thicket.Thicket.from_caliperreader(list(ens.profiles["file"]), disable_tqdm=True)
        for fn in STATS.values():
            getattr(thicket.stats, fn)(tk, columns=list(METRICS))
    sf = tk.statsframe.dataframe.reset_index()
    sf.index = sf["node"].map(lambda n: "/".join(x.frame["name"] for x in n.path()))
    counts = tk.dataframe.reset_index()
    counts.index = counts["node"].map(lambda n: "/".join(x.frame["name"] for x in n.path()))
    return ens, tk, sf, counts


def _ours(ens, column, **kw):
    s = ens.stats(column, **kw)
    s.index = ens.tree.callpaths.to_numpy()
    return s


def test_the_runs_are_the_files(both):
    ens, tk, _, _ = both
    assert ens.n_profiles == len(tk.profile) == 18
    assert ens.profiles["run"].nunique() == 18 and len(set(ens.run_ids)) == 18
    assert sorted(ens.profiles["file"]) == sorted(str(f) for f in RAJAPERF.rglob("*.cali"))
    assert len(ens.tree) == len(tk.graph) == 74


@pytest.mark.parametrize("theirs", list(METRICS))
def test_default_statistics_equal_thickets(both, theirs):
    ens, _, sf, counts = both
    ours = _ours(ens, METRICS[theirs])
    assert sorted(ours.index) == sorted(sf.index)
    for s in STATS:
        a = ours[s].astype(float)
        b = sf[f"{theirs}_{s}"].reindex(a.index).astype(float)
        assert not a.isna().any() and not b.isna().any(), s
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=0, err_msg=f"{theirs} {s}")
    # the values counted are those Thicket has (not NaN) for the node
    have = counts[theirs].notna().groupby(level=0).sum()
    assert (ours["count"] == have.reindex(ours.index)).all()
    assert (ours["n"] == ours["count"]).all()


def test_the_default_metric_is_the_total_time(both):
    ens, _, sf, _ = both
    assert ens.tree.metric_column(None) == "Total time (inc)"
    ours = ens.stats()
    ours.index = ens.tree.callpaths.to_numpy()
    np.testing.assert_allclose(
        ours["mean"].astype(float), sf["Total time_mean"].reindex(ours.index), rtol=1e-12
    )


def test_kernels_missing_from_some_runs_are_not_zeros(both):
    """Ten kernels are in some runs only: seven in the 5 Base_Seq runs (quartz),
    three also in the 2 Base_CUDA block_256 runs (lassen). Thicket averages
    over the runs that have them, so do we.
    Counting the runs without them as 0 (``missing="zero"``) would be wrong:
    a kernel that was not built did not take 0 s."""
    ens, _, sf, _ = both
    auto = _ours(ens, "Total time (inc)")
    zero = _ours(ens, "Total time (inc)", missing="zero")
    partial = auto.index[auto["count"] < 18]
    assert sorted(auto.loc[partial, "count"].value_counts().to_dict().items()) == [(5, 7), (7, 3)]
    assert (zero.loc[partial, "n"] == 18).all()
    assert (zero.loc[partial, "mean"] < auto.loc[partial, "mean"] * 0.5).all()
    pd.testing.assert_series_equal(
        auto.loc[partial, "mean"].astype(float),
        sf.loc[partial, "Total time_mean"].astype(float),
        check_names=False,
        rtol=1e-12,
    )


def test_sankey_box_plots_equal_thickets(both):
    """The quartiles, fences and 1.5 IQR outliers the Sankey draws on a node
    (``cctviz.model.stats``: ``ens.stats`` and ``box_plots``) equal Thicket's
    ``calc_boxplot_statistics`` on the same values: for every node all 18
    runs have (Thicket's NaN for a missing kernel makes its quartiles NaN)."""
    from cctviz.model.stats import box_plots

    ens, tk, _, counts = both
    thicket = require("thicket")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cols = thicket.stats.calc_boxplot_statistics(tk, columns=["Total time"])
    sf = tk.statsframe.dataframe.reset_index()
    sf.index = sf["node"].map(lambda n: "/".join(x.frame["name"] for x in n.path()))
    col = {c.split("_")[1].split("(")[0]: c for c in cols}
    have = counts["Total time"].notna().groupby(level=0).sum()
    full = [p for p, k in have.items() if k == 18]
    assert len(full) == 64  # the ten kernels some runs lack are left out
    rows = ens.tree.callpaths.reset_index(drop=True)
    ids = np.array([rows[rows == p].index[0] for p in full])
    values = ens.values("Total time (inc)")[ids]
    st = ens.stats("Total time (inc)").loc[ids]
    d = {"q1": st["q25"].to_numpy(), "median": st["median"].to_numpy(), "q3": st["q75"].to_numpy()}
    q = sf.loc[full]
    for ours, theirs in (("q1", "q1"), ("median", "q2"), ("q3", "q3")):
        np.testing.assert_allclose(d[ours], q[col[theirs]].astype(float), rtol=1e-12)
    iqr = d["q3"] - d["q1"]
    np.testing.assert_allclose(d["q1"] - 1.5 * iqr, q[col["lowerfence"]].astype(float), rtol=1e-12)
    # outliers: the same runs (Thicket names them by profile hash, we by id)
    file_of = {h: str(f) for h, f in tk.profile_mapping.items()}
    pid = {f: i for i, f in enumerate(ens.profiles["file"])}
    r, c, more = box_plots(values, d["q1"], d["q3"], d["median"], per_node=18)["outliers"]
    assert not more.any()
    for k, path in enumerate(full):
        theirs = sorted(pid[file_of[h]] for h in q[col["outliers"]].iloc[k])
        assert sorted(c[r == k].tolist()) == theirs, path
    assert c.size > 0  # some nodes have outliers
