import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cctviz import Ensemble, Tree
from cctviz.model._algo import sibling_ordinal
from tests.hypothesis_profiles import examples
from tests.strategies import trees


def identities(t: Tree) -> list[tuple]:
    """Each node's identity: its path of (name, n-th same-named sibling)."""
    import pandas as pd

    codes, _ = pd.factorize(t.names)
    ordinal = sibling_ordinal(t.parent, codes)
    out: list[tuple] = []
    for i in range(len(t)):
        step = (str(t.names[i]), int(ordinal[i]))
        p = int(t.parent[i])
        out.append((out[p] if p >= 0 else ()) + (step,))
    return out


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(trees(max_size=25), min_size=1, max_size=5))
def test_unify_preserves_every_profile_total_and_paths(ts):
    ens = Ensemble.from_trees(ts)
    data = ens.long_table
    for p, t in enumerate(ts):
        rows = data.xs(p, level="profile")
        assert np.isclose(rows["time"].sum(), t.metrics["time"].sum())
        roots_inc = t.metrics["time (inc)"].to_numpy()[t.roots].sum()
        uroots = ens.tree.roots
        got = rows["time (inc)"].reindex(uroots).fillna(0).sum()
        assert np.isclose(got, roots_inc)
        # every call path of the profile exists in the unified tree
        upaths = set(ens.tree.callpaths)
        assert set(t.callpaths) <= upaths
        assert set(identities(t)) <= set(identities(ens.tree))
    # the unified tree has each identity (call path, n-th same-named sibling) once
    ids = identities(ens.tree)
    assert len(set(ids)) == len(ids)


@settings(max_examples=examples(40), deadline=None)
@given(trees(max_size=25))
def test_one_profile_ensemble_gives_the_tree_back(t):
    """Same-named siblings stay apart: unifying a tree alone changes nothing."""
    back = Ensemble.from_trees([t]).profile(0)
    assert back.nodes["name"].tolist() == t.nodes["name"].tolist()
    assert back.parent.tolist() == t.parent.tolist()
    assert np.allclose(back.metrics.to_numpy(), t.metrics.to_numpy(), equal_nan=True)
    kept = t.filter(np.ones(len(t), dtype=bool))
    assert kept.nodes["name"].tolist() == t.nodes["name"].tolist()
    assert np.allclose(kept.metrics.to_numpy(), t.metrics.to_numpy(), equal_nan=True)


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(trees(max_size=20), min_size=2, max_size=6))
def test_stats_match_dense_computation(ts):
    ens = Ensemble.from_trees(ts)
    dense = ens.values("time (inc)")  # absent = 0
    s = ens.stats("time (inc)")
    assert np.allclose(s["mean"], dense.mean(axis=1))
    assert np.allclose(s["min"], dense.min(axis=1))
    assert np.allclose(s["max"], dense.max(axis=1))
    assert np.allclose(s["median"], np.median(dense, axis=1))
    assert np.allclose(s["q25"], np.quantile(dense, 0.25, axis=1))
    assert np.allclose(s["q75"], np.quantile(dense, 0.75, axis=1))
    assert np.allclose(s["std"], dense.std(axis=1, ddof=1), equal_nan=True)
    has = s["argmax"] >= 0
    assert np.allclose(dense[np.flatnonzero(has), s["argmax"][has]], s["max"][has])


def test_stats_skip_missing_and_imbalance():
    a = Tree.from_parents([-1, 0], ["main", "mpi"], {"time": [1.0, 4.0]})
    b = Tree.from_parents([-1], ["main"], {"time": [2.0]})
    ens = Ensemble.from_trees([a, b], profiles={"rank": [0, 1]})
    mpi = int(np.flatnonzero(ens.tree.names == "mpi")[0])
    zero = ens.stats("time").loc[mpi]
    skip = ens.stats("time", missing="skip").loc[mpi]
    assert zero["mean"] == 2.0 and zero["min"] == 0.0 and zero["count"] == 1
    assert skip["mean"] == 4.0 and skip["min"] == 4.0
    assert zero["imbalance"] == 2.0 and zero["argmax"] == 0
    # no NaN padding: the long table has no row for (mpi, rank 1)
    assert (mpi, 1) not in ens.long_table.index
    assert not ens.long_table.isna().any().any()


def test_select_groupby_profile_roundtrip():
    ts = [
        Tree.from_parents([-1, 0], ["main", f"k{i % 2}"], {"time": [float(i), 1.0]})
        for i in range(4)
    ]
    ens = Ensemble.from_trees(ts, profiles={"rank": [0, 1, 2, 3], "run": ["a", "b", "a", "b"]})
    groups = ens.groupby("run")
    assert set(groups) == {"a", "b"}
    assert groups["a"].profiles["rank"].tolist() == [0, 2]
    assert len(groups["a"].tree) == len(ens.tree)  # node ids stay comparable
    t2 = ens.profile(rank=2)
    assert t2.nodes["name"].tolist() == ["main", "k0"]
    assert t2.metrics["time"].tolist() == [2.0, 1.0]
    assert t2.meta["profile"]["run"] == "a"
    with pytest.raises(KeyError):
        ens.profile(run="a")


def test_recursion_is_not_merged_into_cycles():
    t = Tree.from_parents([-1, 0, 1], ["f", "f", "f"], {"time": [1.0, 1.0, 1.0]})
    ens = Ensemble.from_trees([t, t])
    assert len(ens.tree) == 3
    assert ens.tree.depth.tolist() == [0, 1, 2]


def test_a_profile_chosen_twice_is_two_profiles_each_with_its_rows():
    """``select([3, 1, 3, 0])`` on the real RAJAPerf runs (kernels missing from some
    runs): the new ensemble's profiles are the chosen ones in order, their values
    the chosen columns, and a profile chosen twice counts twice in the statistics."""
    import cctviz
    from tests.conftest import DATA

    ens = cctviz.read_ensemble(DATA / "thicket" / "rajaperf")
    pick = [3, 1, 3, 0]
    sel = ens.select(pick)
    assert sel.profiles.equals(ens.profiles.iloc[pick].reset_index(drop=True))
    for metric in ("Total time", "Total time (inc)"):
        assert np.array_equal(sel.values(metric), ens.values(metric)[:, pick], equal_nan=True)
    count = sel.stats("Total time", missing="zero")["count"]
    assert count.max() == 4


def test_inclusive_rows_take_the_rows_in_any_order():
    """The dataset engines hand ``inclusive_rows`` rows in a scan's order: shuffled
    rows of the real RAJAPerf runs give each row the value it has sorted."""
    import cctviz
    from cctviz.model.ensemble import inclusive_rows
    from tests.conftest import DATA

    ens = cctviz.read_ensemble(DATA / "thicket" / "rajaperf")
    r = ens.exclusive_rows
    node, prof = r["node"].to_numpy(), r["profile"].to_numpy()
    vals = r[ens.exc_metrics].to_numpy(dtype=np.float64)
    rules = list(ens.aggregation.values())
    t = ens.tree
    want = inclusive_rows(t.parent, t.depth, node, prof, vals, rules)
    shuffle = np.random.default_rng(3).permutation(node.size)
    got = inclusive_rows(t.parent, t.depth, node[shuffle], prof[shuffle], vals[shuffle], rules)
    # the same sums (children added in another order: the last bits may differ)
    assert np.allclose(got, want[shuffle], rtol=1e-12, atol=0, equal_nan=True)
    inc = ens.long_table[[f"{m} (inc)" for m, rule in ens.aggregation.items() if rule != "none"]]
    kept = [j for j, rule in enumerate(rules) if rule != "none"]
    assert np.allclose(want[:, kept], inc.to_numpy(dtype=np.float64), equal_nan=True)


def test_the_rows_given_are_copied_unless_given_up():
    """Sorted rows whose metrics are one column-major matrix (as the batch read
    makes them): an Ensemble copies them, so that changing the caller's table later
    changes nothing; with ``_own_rows`` it keeps the matrix."""
    import pandas as pd

    t = Tree.from_parents([-1, 0, 0], ["main", "a", "b"])
    node, prof = np.repeat([0, 1, 2], 2), np.tile([0, 1], 3)
    for own in (False, True):
        vals = np.asfortranarray(np.arange(12.0).reshape(6, 2))
        cols = {"node": node, "profile": prof, "x": vals[:, 0], "y": vals[:, 1]}
        ens = Ensemble(t, pd.DataFrame(cols, copy=False), _own_rows=own)
        want = vals.copy()
        vals[:] = -1.0
        kept = ens.exclusive_rows[["x", "y"]].to_numpy()
        assert np.array_equal(kept, vals if own else want)


@settings(max_examples=examples(80), deadline=None)
@given(trees(max_size=12), st.data())
def test_rows_combined_and_completed_in_any_order(t, data):
    """The constructor's rows, one at a time by hand: duplicate (node, profile) rows
    summed (a NaN stays NaN), every row's ancestors given a 0 row where absent, and
    each node's mean over the live profiles (absent 0, NaN left out). Drawn rows
    have duplicates, missing ancestors and NaN in any order and mix (a duplicate
    beside an added ancestor once sent the fast path reading past its rows)."""
    import pandas as pd

    n = len(t)
    P = data.draw(st.integers(1, 4))
    k = data.draw(st.integers(0, 14))
    node = data.draw(st.lists(st.integers(0, n - 1), min_size=k, max_size=k))
    prof = data.draw(st.lists(st.integers(0, P - 1), min_size=k, max_size=k))
    value = st.one_of(st.integers(-50, 50).map(float), st.just(np.nan))
    vals = data.draw(st.lists(value, min_size=k, max_size=k))
    rows = pd.DataFrame({"node": node, "profile": prof, "time": vals})
    rows = rows.astype({"node": np.int64, "profile": np.int64, "time": np.float64})
    ens = Ensemble(t, rows, pd.DataFrame(index=range(P)))
    want: dict[tuple[int, int], float] = {}
    for nd, p, v in zip(node, prof, vals):
        want[(nd, p)] = want.get((nd, p), 0.0) + v
        up = int(t.parent[nd])
        while up >= 0:
            want.setdefault((up, p), 0.0)
            up = int(t.parent[up])
    got = ens.exclusive_rows
    assert list(zip(got["node"], got["profile"])) == sorted(want)
    assert np.array_equal(got["time"], [want[key] for key in sorted(want)], equal_nan=True)
    live = sorted({p for _, p in want})
    mean = np.zeros(n)
    for nd in range(n):
        seen = [want.get((nd, p), 0.0) for p in live]
        kept = [v for v in seen if not np.isnan(v)]
        mean[nd] = sum(kept) / max(len(live) - (len(seen) - len(kept)), 1) if live else 0.0
        if live and len(kept) < len(seen) and len(live) == len(seen) - len(kept):
            mean[nd] = np.nan
    assert np.allclose(ens.tree.metrics["time"], mean, equal_nan=True)
