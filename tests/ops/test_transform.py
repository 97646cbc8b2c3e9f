import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import cctviz
from cctviz import Ensemble, Tree
from cctviz.ops.flat import outermost
from tests.hypothesis_profiles import examples
from tests.strategies import assert_consistent, trees


@settings(max_examples=examples(60), deadline=None)
@given(trees(), st.data())
def test_filter_reattaches_to_nearest_kept_ancestor(t, data):
    keep = np.array(data.draw(st.lists(st.booleans(), min_size=len(t), max_size=len(t))))
    f = t.filter(keep)
    assert_consistent(f)
    kept_paths = set()
    for i in np.flatnonzero(keep):
        # the call path of a kept node, through kept ancestors only
        chain, a = [], int(i)
        while a >= 0:
            if keep[a]:
                chain.append(t.names[a])
            a = int(t.parent[a])
        kept_paths.add(tuple(reversed(chain)))
    assert {f.path(i) for i in range(len(f))} == kept_paths
    # exclusive metrics of kept nodes are kept, the rest dropped
    assert np.isclose(f.metrics["time"].sum(), t.metrics["time"].to_numpy()[keep].sum())


@settings(max_examples=examples(60), deadline=None)
@given(trees(), st.integers(1, 3), st.floats(0, 600))
def test_prune_keeps_totals(t, k, thr):
    for p in (t.prune("time (inc)", top_k=k), t.prune("time (inc)", threshold=thr)):
        assert_consistent(p)
        assert np.isclose(p.metrics["time"].sum(), t.metrics["time"].sum())
        # every visible child list has at most k real children plus one (other)
        if p is not None and "folded" in p.nodes:
            others = p.nodes["name"] == "(other)"
            assert (p.nodes.loc[others, "folded"] > 0).all()
    p = t.prune("time (inc)", top_k=k)
    real = p.nodes["name"] != "(other)"
    counts = p.nodes[real].groupby("parent").size()
    assert (counts.drop(index=-1, errors="ignore") <= k).all()


def test_prune_example(hatchet_tree):
    p = hatchet_tree.prune("time (inc)", threshold=15)
    names = p.nodes["name"].tolist()
    assert "(other)" in names
    assert np.isclose(
        p.metrics["time (inc)"][p.roots].sum(),
        hatchet_tree.metrics["time (inc)"][hatchet_tree.roots].sum(),
    )
    assert (p.metrics["time (inc)"][p.nodes["name"] != "(other)"] >= 15).all()


def test_focus_and_ensemble_ops(hatchet_tree):
    corge = int(np.flatnonzero(hatchet_tree.names == "corge")[0])
    f = hatchet_tree.focus(corge)
    assert f.nodes["name"].tolist() == ["corge", "bar", "baz", "grault", "grault", "garply"]
    assert f.metrics["time (inc)"].iloc[0] == hatchet_tree.metrics["time (inc)"].iloc[corge]
    both = hatchet_tree.focus([{"name": "bar"}])
    assert both.nodes["name"].tolist().count("bar") == 3
    a = Tree.from_parents([-1, 0, 0], ["main", "x", "y"], {"time": [1.0, 2.0, 3.0]})
    b = Tree.from_parents([-1, 0], ["main", "x"], {"time": [1.0, 5.0]})
    ens = Ensemble.from_trees([a, b])
    fe = ens.filter([{"name": "main|x"}])
    assert fe.tree.nodes["name"].tolist() == ["main", "x"]
    assert fe.long_table.loc[(1, 1), "time"] == 5.0
    pe = ens.prune("time (inc)", top_k=1)
    assert np.isclose(pe.long_table["time"].sum(), ens.long_table["time"].sum())
    fo = ens.focus(1)
    assert fo.tree.nodes["name"].tolist() == ["x"] and fo.n_profiles == 2


@settings(max_examples=examples(40), deadline=None)
@given(trees())
def test_diff_with_itself_is_zero(t):
    d = t.diff(t)
    assert np.allclose(d.metrics.to_numpy(), 0)
    assert set(d.callpaths) == set(t.callpaths)


def test_diff_aligns_by_call_path():
    a = Tree.from_parents([-1, 0, 0], ["main", "f", "g"], {"time": [1.0, 5.0, 2.0]})
    b = Tree.from_parents([-1, 0, 1], ["main", "g", "h"], {"time": [1.0, 1.0, 4.0]})
    d = cctviz.diff(a, b)
    got = dict(zip(d.callpaths, d.metrics["time"]))
    assert got == {"main": 0.0, "main/f": 5.0, "main/g": 1.0, "main/g/h": -4.0}


def test_flat_profile_counts_recursion_once():
    t = Tree.from_parents([-1, 0, 1, 0], ["main", "f", "f", "g"], {"time": [1.0, 2.0, 3.0, 4.0]})
    fp = t.flat_profile()
    assert fp.loc["f", "time"] == 5.0
    assert fp.loc["f", "time (inc)"] == 5.0  # not 5 + 3
    assert fp.loc["main", "time (inc)"] == 10.0
    assert fp.index[0] == "f" or fp.index[0] == "g"
    assert outermost(t).tolist() == [True, True, False, True]


@settings(max_examples=examples(40), deadline=None)
@given(trees())
def test_bottom_up_roots_hold_flat_exclusive(t):
    bu = t.bottom_up()
    assert_consistent(bu)
    roots = bu.roots
    got = dict(zip(bu.names[roots], bu.metrics["time (inc)"].to_numpy()[roots]))
    fp = t.flat_profile()
    for name, v in got.items():
        assert np.isclose(v, fp.loc[name, "time"])
    assert np.isclose(bu.metrics["time"].sum(), t.metrics["time"].sum())


def test_squash_merges_a_node_moved_up_next_to_a_same_named_sibling():
    from cctviz import Tree

    t = Tree.from_parents([-1, 0, 1, 0], ["main", "A", "f", "f"], {"time": [1.0, 2.0, 3.0, 4.0]})
    f = t.filter(lambda df: df["name"] != "A")
    assert f.nodes[["name", "parent"]].values.tolist() == [["main", -1], ["f", 0]]
    assert f.metrics["time"].tolist() == [1.0, 7.0]
