"""SankeyView's Python side: statistics, selections both ways, brushing, diff
mode and expanded call sites, on the real ensembles of ../shared/data (the
payload the front end draws; the browser tests are in tests/ui)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import traitlets

import cctviz
from cctviz.views.sankey import SankeyView, default_group_by, short_label
from tests.conftest import DATA

KRIPKE = DATA / "hatchet-tutorial" / "hpctoolkit-kripke-database-2589696"
LULESH = DATA / "hatchet-tutorial" / "lulesh-scaling"
RAJAPERF = DATA / "thicket" / "rajaperf"
NCCL_RANKS = [DATA / "kineto" / f"hta_trace_filter_sampled_rank-{r}.json.gz" for r in (0, 1)]


@pytest.fixture(scope="module")
def kripke():
    return cctviz.read(KRIPKE)


@pytest.fixture(scope="module")
def lulesh():
    return cctviz.read_ensemble(LULESH)


def arr(data, key, dtype=np.float64):
    return np.asarray(data[key], dtype=dtype)


def test_short_labels_and_default_grouping(kripke, lulesh):
    assert short_label("/usr/lib64/libc-2.17.so") == "libc-2.17.so"
    assert default_group_by(kripke.tree) == "module"  # HPCToolkit's load modules
    assert default_group_by(lulesh.tree) == "name"  # a small tree: by call site name


# ---------------------------------------------------------------- real ensembles
def test_kripke_statistics_are_the_per_rank_sums(kripke):
    view = SankeyView(kripke)
    d = view._data
    g = view.graph
    vals = kripke.values("time (inc)")
    n = d["n"]
    # a super node's value per rank: the inclusive values of its segments' first nodes
    starts = np.array(
        [p < 0 or g.members[p] != g.members[i] for i, p in enumerate(kripke.tree.parent)]
    )
    want = np.zeros((n, kripke.n_profiles))
    np.add.at(want, g.members[starts], np.nan_to_num(vals[starts]))
    per = view.per_profile.to_numpy()
    # one run: every rank counts (0 where it never entered), but a super node no
    # rank recorded has no value at all (NaN, n = 0), as in ens.stats
    none = np.isnan(per).all(axis=1)
    assert np.array_equal(none, arr(d, "counted", np.int64) == 0) and not none.all()
    assert not np.isnan(per[~none]).any() and np.allclose(per[~none], want[~none])
    assert np.allclose(arr(d, "value"), want.mean(axis=1), rtol=1e-6)  # the height
    assert np.allclose(arr(d, "mean")[~none], want[~none].mean(axis=1), rtol=1e-6)
    assert np.allclose(arr(d, "max")[~none], want[~none].max(axis=1), rtol=1e-6)
    am = arr(d, "argmax", np.int64)
    assert (want[np.arange(n), am] == want.max(axis=1))[~none].all()
    per = np.nan_to_num(per)
    # labels name every rank the view mentions, as "rank k"
    assert all(d["labels"][str(p)] == f"rank {kripke.profiles['rank'][p]}" for p in am[am >= 0])
    # the first column's per-rank sum is each rank's whole time
    first = arr(d, "column", np.int64) == 0
    roots = np.nan_to_num(vals[np.asarray(kripke.tree.parent) < 0]).sum(axis=0)
    assert np.allclose(per[first].sum(axis=0), roots)
    assert d["back_edges"] == int(g.edges["back"].sum()) > 0
    # HPCToolkit's load modules are paths: the node shows the basename
    assert "libmpi.so.12.1.1" in d["label"] and all("/" not in s for s in d["label"])
    # histograms count every profile the statistics count, once
    h = arr(d, "hist", np.int64).reshape(n, d["bins"])
    assert np.array_equal(h.sum(axis=1), arr(d, "counted", np.int64))
    assert set(h.sum(axis=1).tolist()) == {0, kripke.n_profiles}


def test_links_conserve_flow_into_their_targets(kripke):
    d = SankeyView(kripke)._data
    n = d["n"]
    src, dst = arr(d, "link_source", np.int64), arr(d, "link_target", np.int64)
    lv = arr(d, "link_value")
    value = arr(d, "value")
    col = np.concatenate([arr(d, "column", np.int64), arr(d, "dummy_column", np.int64)])
    assert (col[dst] == col[src] + 1).all()  # every link crosses one column
    # through a dummy, what comes in goes out
    for k in range(n, n + d["n_dummy"]):
        assert lv[dst == k].sum() == pytest.approx(lv[src == k].sum())
    # into a real node: what its segments below a parent are worth (the rest: root
    # segments and broken back edges); never more than the node
    into = np.bincount(dst[dst < n], weights=lv[dst < n], minlength=n)
    assert (into <= value * (1 + 1e-5) + 1e-3).all()
    g = SankeyView(kripke).graph
    tree = kripke.tree
    starts = np.array([p < 0 or g.members[p] != g.members[i] for i, p in enumerate(tree.parent)])
    child = starts & (np.asarray(tree.parent) >= 0)
    back = g.edges[g.edges["back"]]
    mean_inc = np.nan_to_num(kripke.values("time (inc)")).mean(axis=1)
    fed = np.bincount(g.members[child], weights=mean_inc[child], minlength=n)
    lost = np.bincount(back["target"], weights=back["value"], minlength=n)
    assert np.allclose(into, fed - lost, rtol=1e-5, atol=1e-2)


@pytest.mark.parametrize(
    "source",
    ["lulesh", "rajaperf", "kripke", "nccl"],
)
def test_real_ensembles_give_a_consistent_payload(source, kripke, lulesh):
    ens = {
        "lulesh": lambda: lulesh,
        "rajaperf": lambda: cctviz.read_ensemble(RAJAPERF),
        "kripke": lambda: kripke,
        "nccl": lambda: cctviz.read_ensemble(NCCL_RANKS),
    }[source]()
    view = SankeyView(ens)
    d = view._data
    n = d["n"]
    assert n == len(d["group"]) == len(d["label"]) and n > 3
    value = arr(d, "value")
    has = arr(d, "counted", np.int64) > 0  # nodes no profile recorded have no statistics
    assert has.any() and np.isnan(arr(d, "mean")[~has]).all()
    mean, lo, hi = arr(d, "mean")[has], arr(d, "min")[has], arr(d, "max")[has]
    assert (lo <= mean * (1 + 1e-6) + 1e-9).all() and (mean <= hi * (1 + 1e-6) + 1e-9).all()
    q1, med, q3 = arr(d, "q1"), arr(d, "median"), arr(d, "q3")
    assert (q1[has] <= med[has]).all() and (med[has] <= q3[has]).all()
    assert d["profiles"] == int(ens.live.sum()) and d["profiles_total"] == ens.n_profiles
    assert d["unit"] is None or isinstance(d["unit"], str)
    # outliers really lie beyond 1.5 IQR of their node
    on, ov = arr(d, "outlier_node", np.int64), arr(d, "outlier_value")
    iqr = q3[on] - q1[on]
    assert ((ov < q1[on] - 1.5 * iqr * (1 - 1e-6)) | (ov > q3[on] + 1.5 * iqr * (1 - 1e-6))).all()
    assert all(str(p) in d["labels"] for p in arr(d, "outlier_profile", np.int64))
    # the heaviest node of each grouping is one the reader's profile really holds
    top = int(np.argmax(value))
    assert d["group"][top] in set(map(str, view.graph.nodes["group"]))


def test_lulesh_runs_differ_and_the_cue_marks_real_imbalance(lulesh):
    view = SankeyView(lulesh)
    d = view._data
    cost = arr(d, "cost")
    thr = d["cost_threshold"]
    # the threshold is 1% of the whole program's mean time
    first = arr(d, "column", np.int64) == 0
    assert thr == pytest.approx(0.01 * arr(d, "value")[first].sum(), rel=1e-6)
    cued = np.flatnonzero(cost >= thr)
    assert cued.size  # 1,296 ranks of runs from 1 to 512 cores do not run alike
    assert (arr(d, "imbalance")[cued] > 1).all()


# ---------------------------------------------------------------- selections
def test_node_selection_both_ways(kripke):
    view = SankeyView(kripke)
    g = view.graph
    mpi = view._data["label"].index("libmpi.so.12.1.1")
    view.selected_groups = [mpi]  # a click in the front end
    assert set(view.selection.ids.tolist()) == set(np.flatnonzero(g.members == mpi).tolist())
    # a call site picked elsewhere (a CCT view) selects its super node only
    one = int(np.flatnonzero(g.members == 0)[0])
    view.selection = [one]
    assert view.selected_groups == [0] and view.selection.ids.tolist() == [one]
    with pytest.raises(traitlets.TraitError, match="super node ids"):
        view.selected_groups = [10_000]


def test_brushing_a_distribution_selects_the_profiles_in_range(kripke):
    view = SankeyView(kripke)
    per = view.per_profile
    k = int(np.nanargmax(arr(view._data, "cost")))
    row = per.iloc[k]
    lo, hi = float(row.quantile(0.75)), float(row.max())
    view.brush = {"node": k, "lo": hi, "hi": lo}  # either direction
    want = sorted(int(p) for p, v in row.items() if lo <= v <= hi)
    assert view.selected_profiles == want and len(want) > 1
    d = view._data
    sel = arr(d, "hist_sel", np.int64).reshape(d["n"], d["bins"])
    has = arr(d, "counted", np.int64) > 0  # a node no rank recorded has no histogram
    assert (sel.sum(axis=1)[has] == len(want)).all() and (sel.sum(axis=1)[~has] == 0).all()
    assert arr(d, "sel_mean")[k] == pytest.approx(row[want].mean(), rel=1e-6)
    assert all(str(p) in d["labels"] for p in want)
    # any other selection of profiles clears the brush
    view.selected_profiles = [0]
    assert view.brush == {} and "hist_sel" in view._data
    view.selected_profiles = []
    assert "hist_sel" not in view._data


def test_expanded_node_is_an_icicle_of_its_call_sites(kripke):
    view = SankeyView(kripke)
    g = view.graph
    members = np.asarray(view._data["members"])
    small = int(np.flatnonzero((members > 5) & (members <= 200))[0])
    big = int(np.argmax(members))
    assert members[big] > 200
    view.expanded = [big, small]
    tree_parent = np.asarray(kripke.tree.parent)
    value = np.asarray(view._data["value"], dtype=np.float64)
    for sites in view._data["sites"]:
        k = sites["node"]
        ids = np.asarray(sites["id"])
        assert (g.members[ids] == k).all() and np.all(np.diff(ids) > 0)  # pre-order
        parent = np.asarray(sites["parent"])
        inner = parent >= 0
        assert (ids[parent[inner]] == tree_parent[ids[inner]]).all()  # closed under ancestors
        assert (
            np.asarray(sites["depth"])[inner] == np.asarray(sites["depth"])[parent[inner]] + 1
        ).all()
        top = np.asarray(sites["value"])[~inner].sum()
        if k == small:  # all call sites: the top ones fill the node
            assert sites["n"] == members[k]
            assert top == pytest.approx(value[k], rel=1e-4)
        else:  # the 200 heaviest and their ancestors inside the node
            assert 200 <= sites["n"] < members[k] and top <= value[k] * (1 + 1e-6)
    view.expanded = []
    assert view._data["sites"] == []


# ---------------------------------------------------------------- diff mode
def test_diff_of_two_runs(lulesh):
    prof = lulesh.profiles
    files = sorted(prof["file"].unique(), key=lambda f: int(str(f).split("-")[-1].split("c")[0]))
    small, big = files[1], files[-1]
    view = SankeyView(lulesh, diff=({"file": small}, {"file": big}))
    d = view._data
    df = d["diff"]
    assert d["profiles"] == df["a_profiles"] + df["b_profiles"]
    a = np.flatnonzero(prof["file"] == small)
    b = np.flatnonzero(prof["file"] == big)
    per = view.per_profile
    want = per[b].mean(axis=1) - per[a].mean(axis=1)
    assert np.allclose(np.asarray(df["delta"], dtype=np.float64), want, rtol=1e-5, atol=1e-3)
    dh = np.asarray(df["dhist"]).reshape(d["n"], d["bins"])
    assert (dh.sum(axis=1) == b.size).all()
    assert df["a_label"] == f"file={small}"
    # node heights are the mean over both groups
    assert np.allclose(arr(d, "value"), per[np.union1d(a, b)].mean(axis=1), rtol=1e-5)
    # brushing in diff mode ranges over B's differences from A's mean
    k = int(np.argmax(np.abs(want)))
    diffs = per.loc[k, b] - per.loc[k, a].mean()
    view.brush = {"node": k, "lo": float(diffs.min()), "hi": float(diffs.median())}
    assert view.selected_profiles == sorted(int(p) for p in b[diffs.to_numpy() <= diffs.median()])


def test_diff_of_two_ensembles_from_groupby(lulesh):
    groups = lulesh.groupby("file")
    keys = sorted(groups)[:2]
    view = SankeyView(diff=(groups[keys[0]], groups[keys[1]]), diff_labels=tuple(keys))
    df = view._data["diff"]
    assert (df["a_profiles"], df["b_profiles"]) == (
        groups[keys[0]].n_profiles,
        groups[keys[1]].n_profiles,
    )
    assert df["b_label"] == keys[1]


def test_bad_input_is_refused_with_a_clear_error(kripke, lulesh):
    with pytest.raises(ValueError, match="share profiles"):
        SankeyView(lulesh, diff=([0, 1], [1, 2]))
    with pytest.raises(KeyError, match="no profile column 'nodes'"):
        SankeyView(lulesh, diff=({"nodes": 1}, {"nodes": 2}))
    with pytest.raises(ValueError, match="single Tree"):
        SankeyView(lulesh.profile(0), diff=([0], [1]))
    with pytest.raises(KeyError, match="no such node attribute"):
        SankeyView(kripke, group_by="library")
    with pytest.raises(traitlets.TraitError, match="brush"):
        SankeyView(kripke).brush = {"node": 0}


# ---------------------------------------------------------------- CCTView scope
def test_cct_view_shows_the_statistics_of_selected_profiles(kripke):
    view = cctviz.CCTView(kripke)
    ids = [3, 17, 40]
    view.selected_profiles = ids
    sub = kripke.select(ids).stats("time (inc)")
    assert np.allclose(view._src.column("time (inc)"), sub["mean"], equal_nan=True)
    sp = view._data["spread"]
    assert sp["profiles"] == 3
    am = np.asarray(sp["argmax"])
    assert set(am[am >= 0].tolist()) <= set(ids)  # ids of the whole ensemble
    assert set(sp["labels"].values()) <= {f"rank {kripke.profiles['rank'][i]}" for i in ids}
    view.selected_profiles = []
    assert view._data["spread"]["profiles"] == kripke.n_profiles
    with pytest.raises(traitlets.TraitError, match="profile ids"):
        view.selected_profiles = [64]
    with pytest.raises(traitlets.TraitError, match="a Tree"):
        cctviz.CCTView(kripke.profile(0)).selected_profiles = [0]


def test_link_shares_selections_and_unlinks(kripke):
    tree, sankey = cctviz.CCTView(kripke), SankeyView(kripke)
    other = cctviz.CCTView(cctviz.read(KRIPKE))  # another Ensemble object: profiles not shared
    link = cctviz.link(tree, sankey, other)
    sankey.selected_groups = [1]
    assert tree.selection == sankey.selection
    assert other.selection.ids.tolist() == sankey.selection.ids.tolist()  # same call paths
    sankey.brush = {"node": 0, "lo": 0.0, "hi": float(sankey.per_profile.iloc[0].median())}
    assert tree.selected_profiles == sankey.selected_profiles != []
    assert other.selected_profiles == []
    link.unlink()
    tree.selection = []
    assert sankey.selection.ids.size > 0
    assert "unlinked" in repr(link)
    with pytest.raises(ValueError, match="two views"):
        cctviz.link(tree)


def test_grouping_a_runtime_profile_by_module_paths():
    # the runtime's kinds: root > step > phase > modules > comm
    t = cctviz.Tree.from_parents(
        [-1, 0, 1, 2, 3, 4, 4, 1, 7],
        [
            "train.py",
            "step",
            "forward",
            "GPT",
            "blocks.0",
            "attn",
            "all_gather",
            "backward",
            "all_reduce",
        ],
        {"time": [1.0] * 9},
    )
    t.nodes["kind"] = [
        "root",
        "step",
        "phase",
        "module",
        "module",
        "module",
        "comm",
        "phase",
        "comm",
    ]
    view = SankeyView(t)
    assert view.group_by == "nn.Module"
    groups = view.graph.nodes["group"].tolist()
    assert groups == ["train.py", "(steps)", "forward", "GPT", "GPT.blocks.0", "backward"]
    deep = SankeyView(t, group_by=("nn.Module", 3)).graph.nodes["group"].tolist()
    assert "GPT.blocks.0.attn" in deep
    pd.testing.assert_series_equal(view.nodes["mean"], view.graph.nodes["value"], check_names=False)


def test_linking_shares_what_is_already_selected(kripke):
    sankey = SankeyView(kripke, selected_profiles=[2, 9])
    tree = cctviz.CCTView(kripke, selection=[5])
    cctviz.link(tree, sankey)
    # the tree's node selection and the Sankey's ranks: each held by one view, now by both
    assert sankey.selection.ids.tolist() == [5] and tree.selected_profiles == [2, 9]
    assert tree._data["spread"]["profiles"] == 2


def test_replace_data_shows_what_a_new_view_shows(kripke, lulesh):
    """A live dashboard replaces the data as the run grows: afterwards the view
    draws what a view made of the new data draws; the selection follows its
    call paths, the grouping its default."""
    view = SankeyView(kripke)
    picked = kripke.tree.query([{"name": "psm_queue.c:274"}]).ids
    assert picked.size
    view.selection = picked
    again = cctviz.read(KRIPKE)  # another object, the same run: the selection kept
    view.replace_data(again)
    assert (
        view.selection.ids.tolist() == again.tree.query([{"name": "psm_queue.c:274"}]).ids.tolist()
    )
    assert view.selected_groups and view.shown is again
    view.replace_data(lulesh)  # another tree: its default grouping, no such node
    fresh = SankeyView(lulesh)
    assert view.group_by == fresh.group_by == "name" and view.selection.ids.size == 0
    assert {k: v for k, v in view._data.items() if k != "selected"} == {
        k: v for k, v in fresh._data.items() if k != "selected"
    }
    diff = SankeyView(diff=(lulesh, lulesh))
    with pytest.raises(ValueError, match="diff Sankey"):
        diff.replace_data(kripke)
