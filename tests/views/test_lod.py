"""Level of detail: invariants on random trees, and the real Hatchet tree."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cctviz.views.lod import (
    CHILDREN_HIDDEN,
    HAS_CHILDREN,
    MATCH,
    OTHER,
    USER_COLLAPSED,
    ancestors_closure,
    level_of_detail,
    other_values,
)
from tests.hypothesis_profiles import examples
from tests.strategies import trees


@st.composite
def lod_cases(draw):
    t = draw(trees(min_size=1, max_size=60))
    n = len(t)
    ids = st.lists(st.integers(0, n - 1), max_size=4)
    root = draw(st.one_of(st.just(-1), st.integers(0, n - 1)))
    return (
        t,
        draw(st.integers(1, 30)),
        root,
        np.array(draw(ids), dtype=np.int64),
        np.array(draw(ids), dtype=np.int64),
        np.array(draw(ids), dtype=np.int64),
    )


def check(t, lod, budget, root, collapsed, forced):
    parent, end = t.parent, t.end
    n = len(t)
    lo, hi = (0, n) if root < 0 else (root, end[root])
    shown = lod.shown
    assert lod.n_rows <= budget
    assert np.all((shown >= lo) & (shown < hi))
    # ancestor-closed inside the range
    ps = parent[shown]
    inner = (ps >= lo) & (shown != root)
    assert np.isin(ps[inner], shown).all()
    # nothing under a collapsed node
    for c in collapsed:
        if lo <= c < hi:
            assert not ((shown > c) & (shown < end[c])).any()
    # rows: pre-order, parents first, ids and parent links agree
    rows = lod.row_id
    assert np.all(lod.row_parent < np.arange(lod.n_rows))
    real = rows >= 0
    assert np.array_equal(np.sort(rows[real]), shown)
    assert np.array_equal(rows[real], shown)  # pre-order kept
    for r in np.flatnonzero(real):
        pr = lod.row_parent[r]
        if rows[r] == root or parent[rows[r]] < lo:
            assert pr == -1
        else:
            assert rows[pr] == parent[rows[r]]
    # one "other" row per partially shown node, right after the last of its shown subtree
    blocked = np.zeros(n, dtype=bool)
    for c in collapsed:
        if lo <= c < hi:
            blocked[c + 1 : end[c]] = True
    for r in np.flatnonzero(~real):
        p = -2 - rows[r]
        assert rows[lod.row_parent[r]] == p
        kids = np.flatnonzero((parent == p) & ~blocked)
        hidden = kids[~np.isin(kids, shown)]
        assert hidden.size and hidden.size < kids.size
        assert lod.folded[r] == (end[hidden] - hidden).sum()
        assert lod.flags[r] == OTHER
        # the "other" row is the last row of p's block
        nxt = r + 1
        if nxt < lod.n_rows and rows[nxt] >= 0:
            assert not (p < rows[nxt] < end[p])
    for s, r in zip(shown, lod.row_of_shown):
        assert rows[r] == s
        kids = np.flatnonzero((parent == s) & ~blocked)
        shown_kids = np.isin(kids, shown).sum()
        has_other = (-2 - s) in rows
        assert has_other == (0 < shown_kids < kids.size)
        f = lod.flags[r]
        all_kids = (parent == s).sum()
        assert bool(f & HAS_CHILDREN) == (all_kids > 0)
        assert bool(f & CHILDREN_HIDDEN) == (all_kids > 0 and shown_kids == 0)
        assert bool(f & USER_COLLAPSED) == (s in collapsed)
        hidden_desc = (end[s] - s - 1) - ((shown > s) & (shown < end[s])).sum()
        assert lod.folded[r] == hidden_desc
    # everything fits: all unblocked nodes shown, no others
    n_unblocked = (~blocked[lo:hi]).sum()
    if budget >= n_unblocked:
        assert shown.size == n_unblocked and real.all()
    # forced nodes show when there is room for them
    f = forced[(forced >= lo) & (forced < hi) & ~blocked[forced]]
    if f.size:
        need = ancestors_closure(np.where(np.arange(n) == root, -1, parent), f)
        need = need[need >= lo]
        if 2 * need.size + 2 <= budget:
            assert np.isin(f, shown).all()


@settings(max_examples=examples(300), deadline=None)
@given(lod_cases())
def test_lod_invariants(case):
    t, budget, root, collapsed, expanded, forced = case
    prio = t.metrics["time (inc)"].to_numpy()
    lod = level_of_detail(
        t.parent,
        t.end,
        prio,
        budget=budget,
        root=root,
        collapsed=collapsed,
        expanded=expanded,
        forced=forced,
        matches=forced,
        depth=t.depth,
    )
    check(t, lod, budget, root, set(collapsed.tolist()), forced)
    for s, r in zip(lod.shown, lod.row_of_shown):
        assert bool(lod.flags[r] & MATCH) == (s in forced)
    # sizes add up: shown children plus the "other" row make the parent's children total
    inc = t.metrics["time (inc)"].to_numpy()
    exc = t.metrics["time"].to_numpy()
    ov = other_values(inc, t.parent, lod)
    for p, v in zip(lod.other_parent, ov):
        kids = np.flatnonzero(t.parent == p)
        shown_kids = kids[np.isin(kids, lod.shown)]
        assert np.isclose(v + inc[shown_kids].sum(), inc[p] - exc[p])


def _hidden_siblings(t, lod, p):
    kids = np.flatnonzero(t.parent == p)
    return kids[~np.isin(kids, lod.shown)]


@settings(max_examples=examples(200), deadline=None)
@given(lod_cases(), st.sampled_from(["sum", "max", "min", "none"]), st.data())
def test_other_rows_obey_the_aggregation_rule(case, rule, data):
    """An "other" row is the rule over the hidden siblings' inclusive values:
    their sum, their max or min (NaN ignored), NaN for "none"."""
    t, budget, root, collapsed, expanded, _ = case
    t = t.with_aggregation({"calls": rule})
    col = "calls" if rule == "none" else "calls (inc)"
    values = t.metrics[col].to_numpy().copy()
    # some missing values: max/min skip them, a sum with one is unknown
    nan_at = data.draw(st.lists(st.integers(0, len(t) - 1), max_size=3))
    values[nan_at] = np.nan
    lod = level_of_detail(
        t.parent,
        t.end,
        t.metrics["time (inc)"].to_numpy(),
        budget=budget,
        root=root,
        collapsed=collapsed,
        expanded=expanded,
        depth=t.depth,
    )
    ov = other_values(values, t.parent, lod, rule)
    assert ov.shape == lod.other_parent.shape
    for p, v in zip(lod.other_parent, ov):
        hidden = values[_hidden_siblings(t, lod, p)]
        assert hidden.size
        if rule == "sum":
            want = hidden.sum()
        elif rule == "none" or np.isnan(hidden).all():
            want = np.nan
        else:
            want = np.nanmax(hidden) if rule == "max" else np.nanmin(hidden)
        assert np.isclose(v, want, equal_nan=True), (rule, v, want)
        finite = hidden[~np.isnan(hidden)]
        if rule == "max" and finite.size:
            assert v >= finite.max()  # never the sum of them
        if rule == "min" and finite.size:
            assert v <= finite.min()


def test_other_values_rejects_unknown_rules():
    parent = np.array([-1, 0, 0, 0])
    lod = level_of_detail(parent, np.array([4, 2, 3, 4]), np.array([9.0, 5, 2, 1]), budget=3)
    assert lod.other_parent.tolist() == [0]
    with pytest.raises(ValueError, match="mean"):
        other_values(np.array([9.0, 5, 2, 1]), parent, lod, "mean")


@settings(max_examples=examples(100), deadline=None)
@given(trees(min_size=2, max_size=60), st.integers(2, 20))
def test_higher_priority_shows_first(t, budget):
    """Without tiers, a shown node never has lower (path-monotone) priority than a
    hidden sibling."""
    prio = t.metrics["time (inc)"].to_numpy()
    lod = level_of_detail(t.parent, t.end, prio, budget=budget, depth=t.depth)
    shown = set(lod.shown.tolist())
    for s in lod.shown:
        p = t.parent[s]
        if p < 0:
            continue
        sib = np.flatnonzero(t.parent == p)
        hidden = [x for x in sib if x not in shown]
        if hidden:
            assert prio[s] >= max(prio[h] for h in hidden)


def test_expanded_children_beat_priority():
    # main has a heavy child and 5 light ones; expanding "light" shows its children
    parent = np.array([-1, 0, 1, 1, 0, 4, 4, 4])
    t_end = np.array([8, 4, 3, 4, 8, 6, 7, 8])
    prio = np.array([100.0, 90, 80, 5, 3, 1, 1, 1])
    plain = level_of_detail(parent, t_end, prio, budget=6)
    assert not np.isin([5, 6, 7], plain.shown).any()
    exp = level_of_detail(parent, t_end, prio, budget=6, expanded=[4])
    assert np.isin([4, 5, 6, 7], exp.shown).all()  # light's children beat heavy's
    # main, heavy drawn collapsed, light and its 3 children
    assert exp.row_id.tolist() == [0, 1, 4, 5, 6, 7]
    assert exp.flags[1] & CHILDREN_HIDDEN


def test_real_tree_budget(hatchet_tree):
    t = hatchet_tree
    prio = t.metrics[t.metric_column(None)].to_numpy()
    for budget in (1, 5, 20, len(t)):
        lod = level_of_detail(t.parent, t.end, prio, budget=budget, depth=t.depth)
        check(t, lod, budget, -1, set(), np.empty(0, dtype=np.int64))
    assert level_of_detail(t.parent, t.end, prio, budget=len(t)).n_rows == len(t)


def test_million_nodes_stays_bounded():
    rng = np.random.default_rng(0)
    n = 1_000_000
    # random recursive tree in pre-order: parent of i is a random earlier node on the
    # current path, which keeps ids in pre-order
    import cctviz

    raw = np.concatenate(([-1], (rng.random(n - 1) * np.arange(1, n)).astype(np.int64)))
    t = cctviz.Tree.from_parents(raw, np.full(n, "f"), {"time": rng.random(n)})
    prio = t.metrics["time (inc)"].to_numpy()
    lod = level_of_detail(t.parent, t.end, prio, budget=2000, depth=t.depth)
    assert 1000 <= lod.n_rows <= 2000
    assert np.isin(t.parent[lod.shown[1:]], lod.shown).all()
