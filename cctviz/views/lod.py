"""Level of detail: which nodes of a big tree a view shows.

Pure numpy over the pre-order arrays of a :class:`~cctviz.model.tree.Tree`
(``parent``, ``end``, ``depth``); no widgets here, so it is tested directly.

The view never receives more than ``budget`` rows. Nodes are ranked by a
*tier* (0 ordinary, 1 a child of a node the user expanded, 2 a node that must
show: selected or a search match) and then by a priority (usually the absolute
inclusive value of the size metric). Both are made monotone along every path
(tiers propagate up to ancestors, priorities take the minimum down from the
root), so with ties broken by pre-order id every prefix of the ranking is
closed under ancestors: the top ``k`` nodes always form a tree.

A shown node whose children are only partly shown gets one "other" row after
its shown children that stands for the hidden ones (values combined by each
metric's rule, :func:`other_values`: summed for inclusive sums, so sizes add
up); a node with none of its children shown is drawn as collapsed.

Example:
    >>> import numpy as np
    >>> parent = np.array([-1, 0, 1, 1, 0])  # main -> (a -> (x, y)), b
    >>> end = np.array([5, 4, 3, 4, 5])
    >>> prio = np.array([10.0, 6, 5, 1, 4])
    >>> level_of_detail(parent, end, prio, budget=5).row_id.tolist()  # everything fits
    [0, 1, 2, 3, 4]
    >>> lod = level_of_detail(parent, end, prio, budget=4)
    >>> lod.row_id.tolist(), lod.row_parent.tolist(), lod.folded.tolist()
    ([0, 1, -2], [-1, 0, 0], [3, 2, 1])

    With 4 rows: ``main`` (3 hidden descendants), ``a`` drawn collapsed, and an
    "other" row (id ``-2 - 0``) under ``main`` standing for ``b``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model._algo import combine_at, level_order

#: ``flags`` bits (see cctviz/views/CONTRACT.md)
HAS_CHILDREN, CHILDREN_HIDDEN, USER_COLLAPSED, MATCH, OTHER = 1, 2, 4, 8, 16


@dataclass(frozen=True)
class LevelOfDetail:
    """Rows of the visible tree, in pre-order, "other" rows after their siblings.

    Attributes:
        shown: ids of the shown tree nodes (sorted).
        row_id: node id per row; an "other" row under node ``p`` has ``-2 - p``.
        row_parent: row index of each row's parent (-1 for top rows).
        row_depth: depth below the top rows.
        flags: bit field (:data:`HAS_CHILDREN`, ...).
        folded: per row, nodes hidden under it ("other": the nodes it stands for).
        other_parent: for each "other" row (in row order), its parent node id.
        row_of_shown: row index of each id in ``shown``.
    """

    shown: np.ndarray
    row_id: np.ndarray
    row_parent: np.ndarray
    row_depth: np.ndarray
    flags: np.ndarray
    folded: np.ndarray
    other_parent: np.ndarray
    row_of_shown: np.ndarray

    @property
    def n_rows(self) -> int:
        return int(self.row_id.size)

    @property
    def is_other(self) -> np.ndarray:
        return self.row_id < 0


def ancestors_closure(parent: np.ndarray, ids: np.ndarray, lo: int = 0) -> np.ndarray:
    """Sorted ids plus all their ancestors with id >= ``lo`` (one numpy step per level)."""
    out = [np.asarray(ids, dtype=np.int64)]
    cur = out[0]
    while cur.size:
        cur = parent[cur]
        cur = np.unique(cur[cur >= lo])
        out.append(cur)
    return np.unique(np.concatenate(out))


def _range_mask(n: int, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """Boolean mask of the union of half-open ranges ``[starts, stops)``."""
    diff = np.zeros(n + 1, dtype=np.int64)
    np.add.at(diff, starts, 1)
    np.add.at(diff, stops, -1)
    return np.cumsum(diff[:n]) > 0


def _monotone_min(values: np.ndarray, parent: np.ndarray, levels: list[np.ndarray]) -> np.ndarray:
    """``out[i]`` = min of ``values`` over ``i`` and its ancestors (restricted to ``levels``)."""
    out = values.copy()
    for lv in levels[1:]:
        p = parent[lv]
        ok = p >= 0
        out[lv[ok]] = np.minimum(out[lv[ok]], out[p[ok]])
    return out


def _levels(depth: np.ndarray, lo: int, hi: int) -> list[np.ndarray]:
    """Node ids of ``[lo, hi)`` grouped by depth, top-down."""
    ids = np.arange(lo, hi)
    d = depth[lo:hi]
    order = np.argsort(d, kind="stable")
    bounds = np.flatnonzero(np.diff(d[order])) + 1
    return np.split(ids[order], bounds)


def level_of_detail(
    parent: np.ndarray,
    end: np.ndarray,
    priority: np.ndarray,
    *,
    budget: int = 2000,
    root: int = -1,
    collapsed: np.ndarray | list[int] = (),
    expanded: np.ndarray | list[int] = (),
    forced: np.ndarray | list[int] = (),
    matches: np.ndarray | list[int] = (),
    depth: np.ndarray | None = None,
    pinned: np.ndarray | list[int] = (),
) -> LevelOfDetail:
    """Choose the rows a view shows (see the module docstring).

    Args:
        parent, end: the tree's pre-order arrays (``Tree.parent``, ``Tree.end``).
        priority: larger shows first (e.g. ``abs`` of an inclusive metric); NaN = lowest.
        budget: most rows to return, "other" rows included (at least 1).
        root: show the subtree of this node (focus), or the whole forest (-1).
        collapsed: nodes whose children are hidden.
        expanded: nodes whose children beat ordinary nodes for the budget.
        forced: nodes that must show when the budget allows (search matches).
        matches: nodes flagged :data:`MATCH`.
        depth: node depths (computed from ``parent`` when omitted).
        pinned: nodes that beat even ``forced`` ones (the selection: the match
            "next" just selected shows however many other matches there are).
    """
    parent = np.asarray(parent, dtype=np.int64)
    end = np.asarray(end, dtype=np.int64)
    n = parent.size
    budget = max(int(budget), 1)
    if depth is None:
        depth = _depths(parent)
    lo, hi = (0, n) if root < 0 else (int(root), int(end[root]))
    m = hi - lo
    if m == 0:
        return _empty()

    def local(ids) -> np.ndarray:
        a = np.asarray(ids, dtype=np.int64).reshape(-1)
        return a[(a >= lo) & (a < hi)]

    # hidden under a collapsed node (inside the shown range)
    coll = local(collapsed)
    blocked = _range_mask(n, coll + 1, end[coll])[lo:hi] if coll.size else np.zeros(m, dtype=bool)
    levels = _levels(depth, lo, hi)
    par = parent.copy()
    par[lo] = -1 if root >= 0 else par[lo]  # the focus node is a top row

    # tiers: pinned (and their ancestors) 3, forced 2, children of expanded 1
    tier = np.zeros(n, dtype=np.int8)
    exp = local(expanded)
    if exp.size:
        kids = np.flatnonzero(np.isin(par[lo:hi], exp) & ~blocked) + lo
        tier[ancestors_closure(par, kids, lo)] = 1
    frc = local(forced)
    frc = frc[~blocked[frc - lo]]  # hidden under a collapsed node: no claim on the budget
    if frc.size:
        tier[ancestors_closure(par, frc, lo)] = 2
    pin = local(pinned)
    pin = pin[~blocked[pin - lo]]
    if pin.size:
        tier[ancestors_closure(par, pin, lo)] = 3
    prio = np.asarray(priority, dtype=np.float64)[lo:hi].copy()
    prio[np.isnan(prio)] = -np.inf
    # top rows first: a hidden root of a forest would have no "other" row to
    # stand for it (only when there are more roots than the budget)
    prio[par[lo:hi] < 0] = np.inf
    full = np.zeros(n)
    full[lo:hi] = prio
    mono = _monotone_min(full, par, levels)[lo:hi]

    # rank the unblocked nodes: tier desc, monotone priority desc, id asc
    cand = np.flatnonzero(~blocked)
    unblocked = cand + lo
    t = tier[lo:hi][cand]
    p = mono[cand]
    if cand.size > budget:
        # only the best `budget` can be chosen: cut by (tier, priority) threshold
        above = np.cumsum(np.bincount(t, minlength=4)[::-1])  # nodes in tiers >= 3, 2, 1, 0
        kth_tier = 3 - int(np.searchsorted(above, budget))
        keep = t > kth_tier
        same = np.flatnonzero(t == kth_tier)
        room = budget - int(keep.sum())
        ps = p[same]
        if room < same.size:
            thr = np.partition(ps, same.size - room)[same.size - room]
            pick = same[ps > thr]
            ties = same[ps == thr][: room - pick.size]  # smallest ids first
            keep[pick] = True
            keep[ties] = True
        else:
            keep[same] = True
        cand, t, p = cand[keep], t[keep], p[keep]
    rank = np.lexsort((cand, -p, -t.astype(np.int64)))
    ranked = cand[rank] + lo  # best first, ancestor-closed prefixes

    # visible children per node (unblocked ones, in range)
    has_par = par[unblocked] >= 0
    n_kids = np.bincount(par[unblocked][has_par] - lo, minlength=m)

    def n_others(k: int) -> int:
        s = ranked[:k]
        sp = par[s]
        sp = sp[sp >= 0]
        shown_kids = np.bincount(sp - lo, minlength=m)
        partial = (shown_kids > 0) & (shown_kids < n_kids)
        return int(partial.sum())

    k = min(budget, ranked.size)
    bad = k + 1  # smallest prefix known to overflow the budget
    for _ in range(8):
        o = n_others(k)
        if k + o <= budget:
            break
        bad = k
        k = max(1, budget - o)
    else:
        while k > 1 and k + n_others(k) > budget:  # k // 2 always fits: others <= shown
            bad, k = k, k // 2
    while bad - k > 1:  # grow the prefix back towards the budget (bisection)
        mid = (k + bad) // 2
        if mid + n_others(mid) <= budget:
            k = mid
        else:
            bad = mid
    shown = np.sort(ranked[:k])
    return _rows(parent, par, end, depth, lo, shown, n_kids, coll, np.asarray(matches))


def _depths(parent: np.ndarray) -> np.ndarray:
    return level_order(parent)[0]


def _empty() -> LevelOfDetail:
    e = np.empty(0, dtype=np.int64)
    return LevelOfDetail(e, e, e, e, np.empty(0, dtype=np.uint8), e, e, e)


def _rows(
    parent: np.ndarray,
    par: np.ndarray,
    end: np.ndarray,
    depth: np.ndarray,
    lo: int,
    shown: np.ndarray,
    n_kids: np.ndarray,
    coll: np.ndarray,
    matches: np.ndarray,
) -> LevelOfDetail:
    m = n_kids.size
    sp = par[shown]
    shown_kids = np.bincount(sp[sp >= 0] - lo, minlength=m)[shown - lo]
    kids_all = np.bincount(parent[lo + 1 : lo + m][parent[lo + 1 : lo + m] >= lo] - lo, minlength=m)
    kids_all = kids_all[shown - lo]
    unblocked_kids = n_kids[shown - lo]
    partial = (shown_kids > 0) & (shown_kids < unblocked_kids)
    other_parent = shown[partial]

    # merge: real row i has key 2*id, other row of p goes right after p's subtree part
    desc_shown = np.searchsorted(shown, end[shown]) - np.arange(shown.size) - 1
    keys = np.concatenate([2 * shown, 2 * end[other_parent] - 1])
    # an "other" row of a deeper node closes before its ancestor's (same end)
    deep = np.concatenate([np.zeros(shown.size, dtype=np.int64), -depth[other_parent]])
    order = np.lexsort((deep, keys))
    n_shown = shown.size
    row_id = np.concatenate([shown, -2 - other_parent])[order]
    pos = np.empty(order.size, dtype=np.int64)
    pos[order] = np.arange(order.size)
    row_of_shown = pos[:n_shown]
    # parents
    parent_node = np.concatenate([sp, other_parent])[order]
    prow = np.full(order.size, -1, dtype=np.int64)
    has = parent_node >= 0
    prow[has] = row_of_shown[np.searchsorted(shown, parent_node[has])]
    top = depth[shown].min() if n_shown else 0
    row_depth = np.concatenate([depth[shown] - top, depth[other_parent] - top + 1])[order]

    flags = np.zeros(order.size, dtype=np.uint8)
    f_shown = np.zeros(n_shown, dtype=np.uint8)
    f_shown |= np.where(kids_all > 0, HAS_CHILDREN, 0).astype(np.uint8)
    f_shown |= np.where((kids_all > 0) & (shown_kids == 0), CHILDREN_HIDDEN, 0).astype(np.uint8)
    f_shown |= np.where(np.isin(shown, coll), USER_COLLAPSED, 0).astype(np.uint8)
    if matches.size:
        f_shown |= np.where(np.isin(shown, matches), MATCH, 0).astype(np.uint8)
    flags[row_of_shown] = f_shown
    is_other = row_id < 0
    flags[is_other] = OTHER

    folded = np.zeros(order.size, dtype=np.int64)
    folded[row_of_shown] = (end[shown] - shown - 1) - desc_shown
    # an "other" row stands for its parent's hidden children (whole subtrees)
    vis_kid_sizes = np.bincount(
        np.searchsorted(shown, sp[sp >= 0]),
        weights=(end - np.arange(end.size))[shown[sp >= 0]],
        minlength=n_shown,
    )
    op_idx = np.searchsorted(shown, other_parent)
    folded[pos[n_shown:]] = (end[other_parent] - other_parent - 1) - vis_kid_sizes[op_idx]
    return LevelOfDetail(
        shown=shown,
        row_id=row_id,
        row_parent=prow,
        row_depth=row_depth,
        flags=flags,
        folded=folded,
        other_parent=row_id[is_other] * -1 - 2,
        row_of_shown=row_of_shown,
    )


def other_values(
    values: np.ndarray, parent: np.ndarray, lod: LevelOfDetail, rule: str = "sum"
) -> np.ndarray:
    """Values of the "other" rows (in row order) of a metric column whose values
    of whole subtrees combine by ``rule``: the rule applied to the inclusive
    values of the hidden siblings each row stands for.

    - ``"sum"``: their total (so the rows under a parent add up to the
      parent's children total; a NaN among them makes it NaN);
    - ``"max"`` / ``"min"``: the largest / smallest of them (NaN ignored);
    - ``"none"``: NaN (the values do not combine).

    >>> parent = np.array([-1, 0, 0, 0])
    >>> lod = level_of_detail(parent, np.array([4, 2, 3, 4]), np.array([9.0, 5, 2, 1]), budget=3)
    >>> lod.row_id.tolist(), [other_values(np.array([9.0, 5, 2, 1]), parent, lod, r).tolist()
    ...                       for r in ("sum", "max", "min")]
    ([0, 1, -2], [[3.0], [2.0], [1.0]])
    """
    op = lod.other_parent
    out = np.full(op.size, 0.0 if rule == "sum" else np.nan)
    if not op.size or rule == "none":
        return out
    if rule not in ("sum", "max", "min"):
        raise ValueError(f"unknown aggregation rule {rule!r}")
    parent = np.asarray(parent)
    kids = np.flatnonzero(np.isin(parent, op))
    shown = lod.shown
    pos = np.searchsorted(shown, kids)
    is_shown = (pos < shown.size) & (shown[np.minimum(pos, shown.size - 1)] == kids)
    hidden = kids[~is_shown]
    order = np.argsort(op)
    slot = order[np.searchsorted(op, parent[hidden], sorter=order)]
    combine_at(out, slot, np.asarray(values, dtype=np.float64)[hidden], rule)
    return out
