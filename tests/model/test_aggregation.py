"""Aggregation rules (sum, max, min, none) hold through every consumer of the model."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cctviz
from cctviz import Ensemble, ProfileError, Tree
from tests.hypothesis_profiles import examples
from tests.strategies import trees

RULES = ("sum", "max", "min")
REDUCE = {"sum": np.sum, "max": np.nanmax, "min": np.nanmin}


@st.composite
def ruled_trees(draw, max_size: int = 30):
    """A tree with one metric per rule: time (sum), peak (max), low (min), const (none)."""
    t = draw(trees(max_size=max_size))
    n = len(t)
    vals = st.lists(st.integers(-50, 1000), min_size=n, max_size=n)
    t = t.add_metric("peak", np.array(draw(vals), float), aggregation="max")
    t = t.add_metric("low", np.array(draw(vals), float), aggregation="min")
    return t.add_metric("const", np.array(draw(vals), float), aggregation="none")


def expected_inclusive(t: Tree, metric: str, rule: str) -> np.ndarray:
    exc = t.metrics[metric].to_numpy()
    return np.array([REDUCE[rule](exc[i : t.end[i]]) for i in range(len(t))])


def check_rules(t: Tree) -> None:
    """inclusive == rule(own, children's inclusive) for every node and metric."""
    for metric, rule in t.aggregation.items():
        if rule == "none":
            assert f"{metric} (inc)" not in t.metrics.columns
            continue
        inc = t.metrics[f"{metric} (inc)"].to_numpy()
        assert np.allclose(inc, expected_inclusive(t, metric, rule), equal_nan=True), metric
        # the same, one level at a time: own value and the children's inclusive values
        own = t.metrics[metric].to_numpy()
        for i in range(len(t)):
            kids = t.children(i)
            want = REDUCE[rule](np.concatenate(([own[i]], inc[kids])))
            assert np.isclose(inc[i], want, equal_nan=True)


@settings(max_examples=examples(40), deadline=None)
@given(ruled_trees())
def test_inclusive_follows_the_rule(t):
    assert t.aggregation == {
        "time": "sum",
        "calls": "sum",
        "peak": "max",
        "low": "min",
        "const": "none",
    }
    check_rules(t)
    assert "const (inc)" not in t.inc_metrics and "peak (inc)" in t.inc_metrics


@settings(max_examples=examples(40), deadline=None)
@given(ruled_trees(), st.sampled_from(["fraction", "top_k", "threshold"]))
def test_prune_keeps_every_roots_value(t, how):
    kw = {"fraction": 0.2, "top_k": 1, "threshold": 300.0}[how]
    p = t.prune("time (inc)", **{how: kw})
    check_rules(p)
    for metric, rule in t.aggregation.items():
        if rule == "none":
            continue
        col = f"{metric} (inc)"
        # (folded roots of a forest share one "(other)" root: compare the forest's value)
        before = REDUCE[rule](t.metrics[col].to_numpy()[t.roots])
        after = REDUCE[rule](p.metrics[col].to_numpy()[p.roots])
        assert np.isclose(before, after, equal_nan=True), col
    # an (other) row holds the rule over what it folds; a per-node constant only if all agree
    other = p.nodes.index[p.nodes["name"] == "(other)"]
    for o in other:
        assert p.nodes.loc[o, "folded"] >= 1


@settings(max_examples=examples(40), deadline=None)
@given(ruled_trees(), st.data())
def test_filter_and_focus_follow_the_rule(t, data):
    keep = np.array(data.draw(st.lists(st.booleans(), min_size=len(t), max_size=len(t))))
    keep[t.roots] = True  # roots kept: each kept node stays under its own root
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # merged per-node constants may disagree: that warns
        f = t.filter(keep)
    check_rules(f)
    # a root's inclusive value is the rule over the kept nodes' own values in its subtree
    for metric, rule in t.aggregation.items():
        if rule == "none":
            continue
        own = t.metrics[metric].to_numpy()
        want = sorted(REDUCE[rule](own[r : t.end[r]][keep[r : t.end[r]]]) for r in t.roots)
        got = sorted(f.metrics[f"{metric} (inc)"].to_numpy()[f.roots])
        assert np.allclose(np.sort(want), np.sort(got), equal_nan=True), metric
    # everything kept: nothing changes (same-named siblings stay apart)
    same = t.filter(np.ones(len(t), dtype=bool))
    assert same.nodes["name"].tolist() == t.nodes["name"].tolist()
    assert np.allclose(same.metrics.to_numpy(), t.metrics.to_numpy(), equal_nan=True)
    node = data.draw(st.integers(0, len(t) - 1))
    sub = t.focus(node)
    check_rules(sub)
    assert np.allclose(
        sub.metrics.iloc[0].to_numpy(), t.metrics.iloc[node].to_numpy(), equal_nan=True
    )


@settings(max_examples=examples(30), deadline=None)
@given(st.lists(ruled_trees(max_size=15), min_size=1, max_size=4))
def test_ensemble_rows_follow_the_rule_per_profile(ts):
    ens = Ensemble.from_trees(ts)
    assert ens.aggregation == ts[0].aggregation
    assert "const (inc)" not in ens.long_table.columns and "peak (inc)" in ens.long_table.columns
    for p, t in enumerate(ts):
        back = ens.profile(p)
        check_rules(back)
        for metric, rule in t.aggregation.items():
            if rule == "none":
                continue
            col = f"{metric} (inc)"
            want = t.metrics[col].to_numpy()[t.roots]
            have = back.metrics[col].to_numpy()[back.roots]
            assert np.allclose(np.sort(want), np.sort(have), equal_nan=True)
    # statistics of a max metric: the largest per-profile inclusive peak
    st_ = ens.stats("peak (inc)")
    dense = ens.values("peak (inc)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows
        assert np.allclose(st_["max"], np.nanmax(dense, axis=1), equal_nan=True)
        assert np.allclose(st_["min"], np.nanmin(dense, axis=1), equal_nan=True)


@settings(max_examples=examples(30), deadline=None)
@given(ruled_trees(max_size=15), ruled_trees(max_size=15))
def test_diff_follows_the_rule(a, b):
    d = cctviz.diff(a, b, labels=("a", "b"))
    assert d.meta["diff"]["a"] == "a" and d.meta["diff"]["b"] == "b"
    u = Ensemble.from_trees([a, b])
    # sums: the inclusive difference is the difference of inclusive values (absent = 0)
    va, vb = u.values("time (inc)")[:, 0], u.values("time (inc)")[:, 1]
    assert np.allclose(d.metrics["time (inc)"].to_numpy(), va - vb)
    # peaks: per-node differences of inclusive peaks, NaN where one side lacks the node
    pa, pb = u.values("peak (inc)")[:, 0], u.values("peak (inc)")[:, 1]
    assert d.aggregation["peak (inc)"] == "none"
    assert np.allclose(d.metrics["peak (inc)"].to_numpy(), pa - pb, equal_nan=True)
    assert "const (inc)" not in d.metrics.columns


def test_with_aggregation_and_errors():
    t = Tree.from_parents([-1, 0, 0], ["main", "a", "b"], {"mem": [1.0, 5.0, 3.0]})
    assert t.metrics["mem (inc)"].tolist() == [9.0, 5.0, 3.0]
    m = t.with_aggregation({"mem": "max"})
    assert m.metrics["mem (inc)"].tolist() == [5.0, 5.0, 3.0]
    assert t.aggregation == {"mem": "sum"}  # the original is unchanged
    assert list(t.with_aggregation({"mem": "none"}).metrics.columns) == ["mem"]
    with pytest.raises(ValueError, match="choose one of"):
        t.with_aggregation({"mem": "mean"})
    with pytest.raises(KeyError, match="no metric"):
        t.with_aggregation({"nope": "max"})
    with pytest.raises(ValueError, match="exclusive metrics only"):
        Tree(pd.DataFrame({"name": ["x"], "parent": [-1]}), pd.DataFrame({"x (inc)": [1.0]}))


def test_inclusive_values_that_a_rule_cannot_give_back_become_per_node_values():
    """A minimum over ranks of an inclusive time grows towards the root: the min of
    a subtree would be its smallest leaf, so it is kept as given, with a note."""
    meta = {"aggregation": {"Min time/rank": "min", "Max time/rank": "max"}}
    t = Tree.from_parents(
        [-1, 0, 0],
        ["main", "a", "b"],
        inclusive={"Min time/rank": [10.0, 4.0, 3.0], "Max time/rank": [12.0, 6.0, 5.0]},
        meta=meta,
    )
    assert t.aggregation == {"Min time/rank": "none", "Max time/rank": "max"}
    assert "smallest" not in t.meta["aggregation_notes"]["Min time/rank"]
    assert t.metrics["Min time/rank"].tolist() == [10.0, 4.0, 3.0]
    assert t.metrics["Max time/rank (inc)"].tolist() == [12.0, 6.0, 5.0]


def test_composition_converts_units_or_refuses():
    a = Tree.from_parents([-1], ["step"], {"time": [2.0]}, meta={"units": {"time": "ms"}})
    b = Tree.from_parents([-1], ["step"], {"time": [3000.0]}, meta={"units": {"time": "us"}})
    ens = Ensemble.from_trees([a, b])
    assert ens.tree.units["time"] == "us"
    assert ens.values("time").ravel().tolist() == [2000.0, 3000.0]
    c = Tree.from_parents([-1], ["step"], {"time": [1.0]}, meta={"units": {"time": "B"}})
    with pytest.raises(ProfileError, match="cannot be converted"):
        Ensemble.from_trees([a, c])
    d = Tree.from_parents([-1], ["step"], {"time": [1.0]})
    with pytest.raises(ProfileError, match="has no unit"):
        Ensemble.from_trees([a, d])
    e = Tree.from_parents([-1], ["step"], {"time": [1.0]}, meta={"aggregation": {"time": "max"}})
    with pytest.raises(ProfileError, match="different aggregation"):
        Ensemble.from_trees([d, e])


def test_absence_rule_for_runs_ranks_and_dead_profiles():
    main_only = Tree.from_parents([-1], ["main"], {"time": [5.0]})
    with_k = Tree.from_parents([-1, 0], ["main", "kernel"], {"time": [1.0, 4.0]})
    # ranks of one run: the rank that never ran the kernel spent 0 there
    ranks = Ensemble.from_trees([with_k, main_only], profiles={"rank": [0, 1]})
    k = int(np.flatnonzero(ranks.tree.names == "kernel")[0])
    assert ranks.stats("time (inc)").loc[k, ["min", "mean", "n"]].tolist() == [0.0, 2.0, 2]
    # two runs: the run that did not build the kernel was not measured there
    runs = Ensemble.from_trees([with_k, main_only], profiles={"run": ["a", "b"]})
    assert runs.stats("time (inc)").loc[k, ["min", "mean", "n"]].tolist() == [4.0, 4.0, 1]
    assert runs.stats("time (inc)", missing="zero").loc[k, "min"] == 0.0
    # a dead rank (no rows) is left out everywhere, the tree's mean included
    dead = Ensemble.concat([with_k, with_k, main_only], [{"rank": r} for r in range(3)])
    alive = dead.select([0, 2])
    dead = Ensemble(
        Tree(dead.tree.nodes.copy(), None, None, _trusted=True),
        dead.exclusive_rows[dead.exclusive_rows["profile"] != 1],
        dead.profiles.assign(ok=[True, False, True]),
    )
    assert dead.live.tolist() == [True, False, True]
    pd.testing.assert_frame_equal(
        dead.stats("time (inc)").drop(columns="argmax"),
        alive.stats("time (inc)").drop(columns="argmax"),
    )
    assert np.allclose(dead.tree.metrics["time (inc)"], alive.tree.metrics["time (inc)"])


def test_what_readers_said_of_metrics_survives_composition():
    meta = {"units": {"time": "us"}, "units_assumed": {"time": "timer default"}}
    a = Tree.from_parents(
        [-1, 0],
        ["main", "f"],
        {"time": [1.0, 2.0]},
        inclusive={"Min time/rank": [5.0, 3.0]},
        meta={**meta, "aggregation": {"Min time/rank": "min"}},
    )
    ens = Ensemble.from_trees([a, a])
    assert ens.meta["units_assumed"] == {"time": "timer default"}
    assert "Min time/rank" in ens.meta["aggregation_notes"]
    assert ens.tree.unit("time (inc)") == "us"


def test_text_that_is_not_a_number_is_not_silently_nan():
    with pytest.warns(UserWarning, match="not numbers and became NaN"):
        t = Tree.from_parents([-1, 0], ["main", "f"], {"time": ["1.5", "fast"]})
    assert t.metrics["time"].iloc[0] == 1.5 and np.isnan(t.metrics["time"].iloc[1])


def test_units_a_reader_assumed_are_never_converted():
    """Two profiles whose units were guessed differently are refused, not scaled by 1e6."""
    said = {"units": {"time": "us"}, "units_assumed": {"time": "timer default"}}
    a = Tree.from_parents([-1], ["main"], {"time": [21948.0]}, meta=said)
    b = Tree.from_parents(
        [-1],
        ["main"],
        {"time": [0.021948]},
        meta={"units": {"time": "s"}, "units_assumed": {"time": "timer default"}},
    )
    assert Ensemble.from_trees([a, a]).tree.units["time"] == "us"  # same guess: fine
    with pytest.raises(ProfileError, match="was assumed, not stated"):
        Ensemble.from_trees([a, b])


def test_a_unit_assumed_for_some_profiles_only_is_dropped_with_a_warning():
    said = {"units": {"time": "us"}, "units_assumed": {"time": "whole numbers"}}
    a = Tree.from_parents([-1], ["main"], {"time": [21948.0]}, meta=said)
    b = Tree.from_parents([-1], ["main"], {"time": [21948.3]})
    with pytest.warns(UserWarning, match="leaves it unknown"):
        ens = Ensemble.from_trees([a, b])
    assert "time" not in ens.tree.units
    assert ens.values("time").ravel().tolist() == [21948.0, 21948.3]  # nothing scaled


def test_diff_table_names_its_columns_after_the_runs():
    """Two real LULESH runs side by side: columns say which run is which."""
    from tests.conftest import DATA

    files = sorted((DATA / "hatchet-tutorial" / "lulesh-scaling").glob("*.json"))[:2]
    a, b = (cctviz.read(f) for f in files)
    a, b = (x.profile(0) if isinstance(x, Ensemble) else x for x in (a, b))
    t = cctviz.diff_table(a, b, labels=("small", "large"))
    cols = list(t.columns)
    assert cols[2:] == [
        "time (inc) [small]",
        "time (inc) [large]",
        "time (inc) [small - large]",
        "time (inc) [small / large]",
    ]
    assert np.allclose(t[cols[4]], t[cols[2]] - t[cols[3]])
    d = cctviz.diff(a, b, labels=("small", "large"))
    by_path = dict(zip(d.callpaths, d.metrics["time (inc)"]))
    assert np.allclose(t[cols[4]], [by_path[p] for p in t["callpath"]])
    diffs = np.abs(t[cols[4]].to_numpy())
    assert (diffs[:-1] >= diffs[1:]).all()  # largest change first


def test_selecting_profiles_keeps_units_and_rules():
    t = Tree.from_parents(
        [-1, 0],
        ["main", "f"],
        {"time": [1.0, 2.0], "peak": [3.0, 4.0]},
        meta={"units": {"time": "ms"}, "aggregation": {"peak": "max"}},
    )
    rows = pd.DataFrame(
        {"node": [0, 1, 0], "profile": [0, 0, 1], "time": [1.0, 2.0, 3.0], "peak": [3, 4, 5.0]}
    )
    e = Ensemble(t, rows, pd.DataFrame({"rank": [0, 1]}))
    for sub in (e.select([0]), *e.groupby("rank").values()):
        assert sub.tree.units == {"time": "ms"} and sub.aggregation["peak"] == "max"


def test_a_value_nobody_measured_is_left_out_not_counted_as_zero():
    a = Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 5.0], "bytes": [0.0, 100.0]})
    b = Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, np.nan]})
    e = Ensemble.from_trees([a, b])
    f = e.stats("time").loc[1]
    assert (f["mean"], f["min"], f["n"]) == (5.0, 5.0, 1)
    assert e.tree.metrics["time"].iloc[1] == 5.0
    by = e.stats("bytes (inc)").loc[1]  # b has no bytes at all: not measured, not 0
    assert (by["mean"], by["n"]) == (100.0, 1)


def test_empty_selections_and_demoted_rules_compose():
    a = Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 5.0]})
    assert Ensemble.from_trees([a]).select([]).n_profiles == 0
    meta = {"aggregation": {"tmin": "min"}}
    t1 = Tree.from_parents([-1, 0], ["main", "f"], meta=meta, inclusive={"tmin": [10.0, 4.0]})
    t2 = Tree.from_parents([-1], ["main"], meta=meta, inclusive={"tmin": [10.0]})
    assert (t1.aggregation["tmin"], t2.aggregation["tmin"]) == ("none", "min")
    assert Ensemble.from_trees([t1, t2]).aggregation["tmin"] == "none"
    nan_root = Tree.from_parents(
        [-1, 0, 0],
        ["m", "a", "b"],
        meta={"aggregation": {"pk": "max"}},
        inclusive={"pk": [np.nan, 4, 3]},
    )
    assert nan_root.aggregation["pk"] == "max"  # an unknown value is no evidence against the rule


def test_diff_refuses_a_unit_on_one_side_only():
    a = Tree.from_parents([-1], ["main"], {"time": [1.0]}, meta={"units": {"time": "ms"}})
    b = Tree.from_parents([-1], ["main"], {"time": [1.0]})
    for x, y in ((a, b), (b, a)):
        with pytest.raises(ValueError, match="only"):
            cctviz.diff(x, y)
