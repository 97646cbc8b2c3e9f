"""CCTView without a browser: front-end messages are simulated with ``_handle_msg``."""

from __future__ import annotations

import numpy as np
import pytest
import traitlets
from ipywidgets.widgets.widget import _remove_buffers

import cctviz
from cctviz.views.lod import CHILDREN_HIDDEN, MATCH, OTHER, USER_COLLAPSED
from tests.conftest import LULESH_SCALING


class FakeComm:
    """Records what the widget sends to the front end."""

    comm_id = "fake"
    kernel = object()  # ipywidgets only sends when the comm has a kernel

    def __init__(self) -> None:
        self.sent: list[dict] = []

    def send(self, data=None, metadata=None, buffers=None):
        self.sent.append({"data": data, "buffers": buffers or []})

    def close(self, *a, **k):
        pass

    def on_msg(self, *a, **k):
        pass


def attach(view) -> FakeComm:
    comm = FakeComm()
    view.comm = comm
    return comm


def from_frontend(view, **state) -> None:
    """What the browser sends after ``model.set(...); model.save_changes()``."""
    view._handle_msg(
        {
            "content": {"data": {"method": "update", "state": state, "buffer_paths": []}},
            "buffers": [],
        }
    )


def sent_keys(comm: FakeComm) -> set[str]:
    """Traits the widget pushed to the browser (echo confirmations left out)."""
    msgs = [m["data"] for m in comm.sent if (m["data"] or {}).get("method") == "update"]
    return {k for m in msgs for k in m.get("state", {})}


def rows(view) -> np.ndarray:
    d = view._data
    return np.frombuffer(d["id"], dtype="<i4")


def col(view, key, dtype="<f4", src=None) -> np.ndarray:
    return np.frombuffer((src or view._data)[key], dtype=dtype)


def names(view) -> list[str]:
    d = view._data
    raw = bytes(d["name_bytes"])
    off = np.frombuffer(d["name_offsets"], dtype="<i4")
    return [raw[a:b].decode() for a, b in zip(off[:-1], off[1:])]


@pytest.fixture
def tree(hatchet_tree):
    return hatchet_tree


@pytest.fixture
def lulesh():
    return cctviz.read_ensemble(LULESH_SCALING)


def test_click_from_frontend_reaches_python(tree):
    view = cctviz.CCTView(tree)
    comm = attach(view)
    seen = []
    view.observe(lambda ch: seen.append(ch["new"]), names="selection")
    node = int(rows(view)[3])
    from_frontend(view, selection=[node])
    assert isinstance(view.selection, cctviz.NodeSet)
    assert view.selection.ids.tolist() == [node]
    assert len(seen) == 1 and seen[0].ids.tolist() == [node]
    assert view.selected["name"].tolist() == [tree.names[node]]
    assert tree.query(view.selection_query) == view.selection
    # shift-click adds; no echo of selection back to the browser, no re-layout
    from_frontend(view, selection=[node, int(rows(view)[5])])
    assert len(seen) == 2 and len(view.selection) == 2
    assert "selection" not in sent_keys(comm) and "_data" not in sent_keys(comm)


def test_python_selection_reveals_collapsed_and_budgeted_nodes(tree):
    deep = int(np.argmax(tree.depth))
    anc = tree.parent[deep]
    view = cctviz.CCTView(tree, collapsed=[int(tree.parent[anc])])
    assert deep not in rows(view)
    comm = attach(view)
    view.selection = [deep]
    assert deep in rows(view)
    assert int(tree.parent[anc]) not in view.collapsed
    assert {"selection", "_data", "collapsed"} <= sent_keys(comm)
    # a query string works too and the nodes show even beyond the budget
    leaf = int(np.flatnonzero(tree.is_leaf)[-1])
    budget = 2 * (tree.depth[leaf] + 1) + 2  # room for its path (and "other" rows)
    small = cctviz.CCTView(tree, max_nodes=budget)
    assert leaf not in rows(small)
    small.selection = tree.select([leaf])
    assert leaf in rows(small) and small._data["n"] <= budget
    q = f'MATCH (".", a) WHERE a."name" = "{tree.names[leaf]}"'
    small.selection = q
    assert small.selection == tree.query(q)


def test_collapse_expand_from_frontend(tree):
    view = cctviz.CCTView(tree)
    kids = rows(view)[np.frombuffer(view._data["parent"], dtype="<i4") == 0]
    node = int(kids[0])
    assert tree.end[node] - node > 1
    from_frontend(view, collapsed=[node])
    r = rows(view)
    flags = col(view, "flags", "u1")
    i = int(np.flatnonzero(r == node)[0])
    assert flags[i] & USER_COLLAPSED and flags[i] & CHILDREN_HIDDEN
    assert not ((r > node) & (r < tree.end[node])).any()
    assert np.frombuffer(view._data["folded"], dtype="<i4")[i] == tree.end[node] - node - 1
    from_frontend(view, collapsed=[], expanded=[node])
    r = rows(view)
    assert set(tree.children(node).tolist()) <= set(r.tolist())


def test_budget_folds_into_other_rows_that_add_up(lulesh):
    t = lulesh.profile(0)
    view = cctviz.CCTView(t, max_nodes=12)
    d = view._data
    assert d["n"] <= 12
    r = rows(view)
    par = np.frombuffer(d["parent"], dtype="<i4")
    flags = col(view, "flags", "u1")
    size = col(view, "size")
    others = np.flatnonzero(r < 0)
    assert others.size and (flags[others] == OTHER).all()
    assert all(n == "(other)" for n in np.array(names(view))[others])
    inc, exc = t.metrics["time (inc)"].to_numpy(), t.metrics["time"].to_numpy()
    for o in others:
        p = par[o]
        assert r[p] == -2 - r[o]
        siblings = np.flatnonzero(par == p)
        assert np.isclose(size[siblings].sum(), inc[r[p]] - exc[r[p]], rtol=1e-6)
    # the user expands one "other": its parent's children now beat the budget
    p = int(-2 - r[others[-1]])
    before = np.isin(t.children(p), r).sum()
    from_frontend(view, expanded=[p])
    assert np.isin(t.children(p), rows(view)).sum() > before
    assert view._data["n"] <= 12


def test_node_data_goes_as_binary_buffers(tree):
    view = cctviz.CCTView(tree, color=("time (inc)", "time"))
    state, paths, buffers = _remove_buffers(view.get_state())
    binary = {tuple(p) for p in paths}
    for key in ("id", "parent", "depth", "flags", "folded", "name_bytes", "name_offsets"):
        assert ("_data", key) in binary
    assert ("_data", "color") in binary and ("_data", "color2") in binary
    n = view._data["n"]
    assert len(bytes(view._data["id"])) == 4 * n
    assert names(view)[0] == tree.names[rows(view)[0]]
    # nothing in the JSON part is a per-node list
    assert all(not isinstance(v, list) or len(v) <= 2 for v in state["_data"].values())


def test_bivariate_color_from_frontend(tree):
    view = cctviz.CCTView(tree)
    assert "color2" not in view._data
    from_frontend(view, color=["time (inc)", "time"])
    assert view.color == ("time (inc)", "time")
    c2 = col(view, "color2")
    real = rows(view) >= 0
    np.testing.assert_allclose(c2[real], tree.metrics["time"].to_numpy()[rows(view)[real]])
    lo, hi = view._data["color2_domain"]
    assert lo == pytest.approx(np.nanmin(c2[real])) and hi == pytest.approx(np.nanmax(c2[real]))
    with pytest.raises(traitlets.TraitError, match="choose one of"):
        view.color = "no such metric"


def test_search_flags_matches_and_expands_ancestors(tree):
    target = int(np.argmax(tree.depth))
    name = str(tree.names[target])
    top = int(tree.roots[0])
    view = cctviz.CCTView(tree, collapsed=[top])
    from_frontend(view, search=name[1:].upper())
    assert target in view.matches
    assert top not in view.collapsed
    r = rows(view)
    flags = col(view, "flags", "u1")
    expected = set(view.matches.ids.tolist())
    assert {int(x) for x, f in zip(r, flags) if f & MATCH} == expected & set(r.tolist())
    assert target in r


def test_focus_shows_only_the_subtree(tree):
    node = int(tree.children(int(tree.roots[0]))[0])
    view = cctviz.CCTView(tree)
    from_frontend(view, focus=node)
    r = rows(view)
    real = r[r >= 0]
    assert real[0] == node and ((real >= node) & (real < tree.end[node])).all()
    assert view._data["focus_path"] == list(tree.path(node)[:-1])
    assert np.frombuffer(view._data["depth"], dtype="<i4")[0] == 0
    # selecting outside the focus leaves the focus
    view.selection = [int(tree.roots[0])]
    assert view.focus == -1


def test_state_round_trip(tree):
    view = cctviz.CCTView(tree, max_nodes=7, chart="icicle")
    from_frontend(view, collapsed=[int(rows(view)[1])], search="a", selection=[0])
    # observers of one message run in an order that depends on the hash seed:
    # whatever ran first, the rows equal a recomputation from scratch
    shown = bytes(view._data["id"])
    view._refresh(force=True)
    assert bytes(view._data["id"]) == shown
    again = cctviz.CCTView(tree, **view.state)
    assert again.state == view.state
    assert bytes(again._data["id"]) == shown


def test_ensemble_spread(lulesh):
    view = cctviz.CCTView(lulesh, color="time (inc) [imbalance]", size="time (inc)")
    sp = view._data["spread"]
    assert sp["metric"] == "time (inc)" and sp["profiles"] == lulesh.n_profiles
    r = rows(view)
    real = r >= 0
    st = lulesh.stats("time (inc)")
    for k in ("min", "mean", "max", "std"):
        np.testing.assert_allclose(
            col(view, k, src=sp)[real], st[k].to_numpy()[r[real]], rtol=1e-6, equal_nan=True
        )
    np.testing.assert_allclose(
        col(view, "color")[real], (st["max"] / st["mean"]).to_numpy()[r[real]], rtol=1e-6
    )
    am = np.frombuffer(sp["argmax"], dtype="<i4")[real]
    assert (am == st["argmax"].to_numpy()[r[real]]).all()
    label = sp["labels"][str(am[0])]
    assert label.startswith("rank ") and "lulesh" in label
    assert "time (inc) [max]" in view.metrics
    # the mean column is the ensemble's mean
    np.testing.assert_allclose(col(view, "size")[real], st["mean"].to_numpy()[r[real]], rtol=1e-6)
    assert view.selected.empty
    view.selection = [0]
    assert "time (inc) [imbalance]" in view.selected.columns


def test_untrusted_names_travel_as_bytes():
    evil = "<img src=x onerror=alert(1)>"
    t = cctviz.Tree.from_parents([-1, 0, 0], ["main", evil, "naïve ✓"], {"time": [1, 2, 3]})
    view = cctviz.CCTView(t)
    assert set(names(view)) == {"main", evil, "naïve ✓"}


def test_bad_input_errors(tree):
    with pytest.raises(TypeError, match="Tree or Ensemble"):
        cctviz.CCTView([1, 2, 3])
    with pytest.raises(traitlets.TraitError, match=r"\[0, "):
        cctviz.CCTView(tree, selection=[len(tree)])
    with pytest.raises(traitlets.TraitError):
        cctviz.CCTView(tree, chart="sunburst")
    view = cctviz.CCTView(tree)
    with pytest.raises(traitlets.TraitError, match="focus"):
        view.focus = len(tree)


def test_review_edge_cases():
    nan = float("nan")
    # one missing value does not flatten the ranking: the hot leaf still shows
    t = cctviz.Tree.from_parents([-1, 0, 0, 0, 1], list("abcde"), {"time": [1, 1, nan, 50, 1]})
    assert "d" in names(cctviz.CCTView(t, max_nodes=3))
    # every root of a forest shows before any child
    forest = cctviz.Tree.from_parents([-1, -1, -1, 0], ["r1", "r2", "r3", "x"], {"time": [1.0] * 4})
    assert sorted(rows(cctviz.CCTView(forest, max_nodes=3))) == [0, 2, 3]
    # a NodeSet of another profile selects the node with its identity: the only f
    # of one tree is the first f of the other (the model's rule, not "every f")
    dup = cctviz.Tree.from_parents([-1, 0, 0], ["main", "f", "f"], {"time": [1.0, 2, 3]})
    one = cctviz.Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 2]})
    view = cctviz.CCTView(dup)
    view.selection = one.select([1])
    assert view.selection.ids.tolist() == [1]
    # a lone surrogate (a valid JSON escape) in a name does not break the view
    bad = cctviz.Tree.from_parents([-1, 0], ["main", "bad\udcff"], {"time": [1.0, 2]})
    assert names(cctviz.CCTView(bad))[1].startswith("bad")


def test_focus_survives_shift_click_and_search(tree):
    node = int(tree.children(int(tree.roots[0]))[0])
    outside = int(tree.end[node])  # first node after the focused subtree
    inside = int(tree.children(node)[0])
    view = cctviz.CCTView(tree, collapsed=[inside])
    view.selection = [outside]
    view.focus = node
    from_frontend(view, selection=[outside, inside])  # shift-click keeps the old pick
    assert view.focus == node and inside in rows(view)
    from_frontend(view, search=str(tree.names[outside]))
    assert view.focus == node
    again = cctviz.CCTView(tree, **view.state)
    assert again.focus == node
    view.selection = [outside]  # Python asks for a node outside: the focus goes
    assert view.focus == -1


def test_selected_match_shows_however_many_matches_there_are():
    """The selection outranks search matches for the budget: 'next match' selects a
    match and it is drawn, even when the matches' ancestors alone fill the budget."""
    rng = np.random.default_rng(3)
    n = 20_000
    parent = np.concatenate([[-1], rng.integers(0, np.arange(1, n))])
    names = np.array([f"f{i}" for i in range(n)], dtype=object)
    hits = np.sort(rng.choice(np.arange(1000, n), 50, replace=False))
    names[hits] = "hit"
    t = cctviz.Tree.from_parents(parent, list(names), {"time": rng.random(n)})
    view = cctviz.CCTView(t, max_nodes=200)
    view.search = "hit"
    m = view.matches.ids
    assert m.size == 50
    for want in (m[0], m[-1], m[25]):
        view.selection = [int(want)]
        assert int(want) in set(view.visible["id"]), want
        assert len(view.visible) <= 200


def test_a_tree_of_names_only_is_refused_by_the_views_saying_why():
    """A tree without any metric has nothing to size or colour by: every view
    says so (a ValueError), not an IndexError from inside."""
    names_only = cctviz.Tree.from_parents([-1, 0], ["main", "solve"])
    ranks = cctviz.Ensemble.from_trees([names_only, names_only])
    for view, data in ((cctviz.CCTView, names_only), (cctviz.CCTView, ranks),
                       (cctviz.ProfilesView, ranks), (cctviz.SankeyView, ranks)):  # fmt: skip
        with pytest.raises(ValueError, match="has no metric|needs an additive"):
            view(data)


def test_every_view_selects_profiles_the_same_way():
    """One trait type (views.base.ProfileIds): ids sorted and unique, out of range
    refused, and a Tree (no profiles) refused alike by every view of one."""
    import traitlets

    tree = cctviz.Tree.from_parents([-1, 0], ["main", "solve"], {"time": [1.0, 2.0]})
    ranks = cctviz.Ensemble.from_trees([tree, tree, tree])
    for view in (cctviz.CCTView(ranks), cctviz.SankeyView(ranks), cctviz.ProfilesView(ranks)):
        view.selected_profiles = [2, 0, 2]
        assert view.selected_profiles == [0, 2], type(view).__name__
        with pytest.raises(traitlets.TraitError, match=r"in \[0, 3\)"):
            view.selected_profiles = [3]
    for view in (cctviz.CCTView(tree), cctviz.SankeyView(tree)):
        with pytest.raises(traitlets.TraitError, match="a Tree has no profiles"):
            view.selected_profiles = [0]


def test_every_view_selects_nodes_the_same_way():
    """One trait type (views.base.NodeSelection): ids, a query string or another
    tree's NodeSet (matched by call path) become a NodeSet of the view's tree; an
    id out of range is refused alike."""
    import traitlets

    from cctviz.model.nodeset import NodeSet

    tree = cctviz.Tree.from_parents([-1, 0, 0], ["main", "solve", "io"], {"time": [1.0, 2.0, 3.0]})
    other = cctviz.Tree.from_parents([-1, 0], ["main", "io"], {"time": [1.0, 1.0]})
    ranks = cctviz.Ensemble.from_trees([tree, tree])
    for view in (cctviz.CCTView(ranks), cctviz.SankeyView(ranks)):
        view.selection = [2, 1, 2]
        assert isinstance(view.selection, NodeSet) and view.selection.ids.tolist() == [1, 2]
        view.selection = NodeSet(other, [1])  # "main/io" on the view's tree
        assert [view.tree.path(k) for k in view.selection.ids] == [("main", "io")]
        with pytest.raises(traitlets.TraitError, match=r"selection: node ids must be in \[0, 3\)"):
            view.selection = [3]
