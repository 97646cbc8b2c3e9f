"""Views that regroup a tree: flat profile by name, bottom-up (callers) tree."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..model._algo import TrieBuilder, combine_rows
from ..model.tables import UnitTable, metric_units, with_units
from ..model.tree import Tree, inc_name
from .transform import trie_nodes


def outermost(tree: Tree) -> np.ndarray:
    """Mask of nodes with no ancestor of the same name (recursion counted once)."""
    codes, _ = pd.factorize(tree.names)
    ids = np.arange(len(tree))
    order = np.lexsort((ids, codes))
    end = tree.end[order]
    grp = codes[order]
    first = np.ones(len(tree), dtype=bool)
    first[1:] = grp[1:] != grp[:-1]
    # running max of `end` over earlier same-name nodes, in pre-order
    s = pd.Series(end).groupby(grp).cummax().shift(1).to_numpy(dtype=np.float64, copy=True)
    s[first] = -1
    nested = ids[order] < s
    out = np.ones(len(tree), dtype=bool)
    out[order[nested]] = False
    return out


def _group(frame: pd.DataFrame, by: np.ndarray, rules: dict[str, str]) -> pd.DataFrame:
    """Columns of ``frame`` combined per group by their rules (``none``: the
    common value, NaN where the group's values differ)."""
    g = frame.groupby(by)
    out = {}
    for c in frame.columns:
        rule = rules[c]
        if rule == "none":
            lo, hi = g[c].min(), g[c].max()
            out[c] = lo.where(lo == hi)
        else:
            out[c] = getattr(g[c], rule)(**({"min_count": 1} if rule == "sum" else {}))
    return pd.DataFrame(out)


def flat_profile(tree: Tree, metric: str | None = None) -> UnitTable:
    """Metrics combined per node name by their aggregation rules, sorted by
    the chosen metric; each in its unit (``attrs["units"]``).

    Exclusive values combine over every node of the name; inclusive sums only
    over outermost occurrences, so a recursive function is not counted twice
    (a maximum or minimum is the same either way). ``nodes`` counts calling
    contexts.

    >>> t = Tree.from_parents([-1, 0, 1], ["main", "f", "f"], {"time": [1.0, 2.0, 3.0]})
    >>> flat_profile(t).loc["f", ["time", "time (inc)", "nodes"]].tolist()
    [5.0, 5.0, 2.0]
    """
    m = tree.metrics
    rules = tree.aggregation
    outer = pd.Series(outermost(tree), index=m.index)
    df = _group(m[tree.exc_metrics], tree.names, rules)
    inc_rules = {inc_name(c): r for c, r in rules.items() if r != "none"}
    inc = _group(m[list(inc_rules)].where(outer, np.nan, axis=0), tree.names, inc_rules)
    out = pd.concat([df, inc], axis=1)
    out["nodes"] = pd.Series(tree.names).value_counts()
    out.index.name = "name"
    order = [x for c in tree.exc_metrics for x in (c, inc_name(c)) if x in out.columns]
    out = out[order + ["nodes"]]
    if tree.exc_metrics:
        out = out.sort_values(metric or tree.exc_metrics[0], ascending=False)
    return with_units(out, metric_units(tree, out.columns))


def bottom_up(tree: Tree) -> Tree:
    """The inverted tree: roots are the functions where cost is incurred,
    children their callers, and so on up to the original roots.

    Exclusive values of an original node sit at the end of its reversed
    path, so an inverted node's inclusive value is the cost incurred in its
    root function when called through that chain of callers.

    >>> t = Tree.from_parents([-1, 0, 0, 1], ["main", "a", "b", "b"], {"t": [0, 1, 2, 3]})
    >>> bu = bottom_up(t)
    >>> sorted(zip(bu.nodes["name"][bu.roots], bu.metrics["t (inc)"][bu.roots]))
    [('a', 1.0), ('b', 5.0)]
    """
    vals = tree.metrics[tree.exc_metrics].to_numpy(dtype=np.float64)
    items = np.flatnonzero(np.any(vals != 0, axis=1)) if vals.shape[1] else np.arange(len(tree))
    codes, uniq = pd.factorize(tree.names)
    parent = tree.parent
    tb = TrieBuilder()
    cur = items.copy()  # original node at this level of each item's reversed path
    prev = np.full(items.size, -1, dtype=np.int64)
    last = np.full(items.size, -1, dtype=np.int64)
    src: list[tuple[np.ndarray, np.ndarray]] = []
    active = np.arange(items.size)
    while active.size:
        ids = tb.add_level(prev[active], codes[cur[active]])
        src.append((ids, cur[active].copy()))
        prev[active] = ids
        up = parent[cur[active]]
        alive = up >= 0
        last[active[~alive]] = ids[~alive]
        cur[active[alive]] = up[alive]
        active = active[alive]
    source = np.zeros(tb.size, dtype=np.int64)
    for ids, orig in src:
        source[ids] = orig
    nodes, inv = trie_nodes(tree, tb, source, np.asarray(uniq, dtype=object))
    target = np.full(len(tree), -1, dtype=np.int64)
    target[items] = inv[last]
    out, _ = combine_rows(vals, target, tb.size, list(tree.aggregation.values()))
    meta = {**tree.meta, "view": "bottom-up"}
    return Tree(nodes, pd.DataFrame(out, columns=tree.exc_metrics), meta, _trusted=True)


__all__ = ["bottom_up", "flat_profile", "outermost"]
