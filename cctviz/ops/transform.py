"""Structural operations: filter (with squash), prune into "other" nodes, focus.

All three compute a :class:`Remap` (the new structure and, for every old node,
its new node or -1) and then apply it the same way to a Tree's metrics or to
an Ensemble's long table, so trees and ensembles stay consistent and
inclusive values are re-derived from exclusive ones.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..model._algo import TrieBuilder, combine_rows, identity_codes, preorder_permutation
from ..model.ensemble import Ensemble
from ..model.nodeset import NodeSet
from ..model.tree import STRUCT_COLUMNS, Tree

OTHER = "(other)"


@dataclass
class Remap:
    """New structure (pre-order nodes table) and old -> new node ids (-1: dropped)."""

    nodes: pd.DataFrame
    mapping: np.ndarray


def _apply(obj: Tree | Ensemble, rm: Remap, *, warn: bool = False) -> Tree | Ensemble:
    """Carry ``obj``'s values over to the new structure: the values of the old
    nodes that map to one new node combine by each metric's aggregation rule
    (an ``(other)`` node holds the sum, max or min of what it folds; a
    ``"none"`` metric has a value there only if all folded nodes agree).
    ``warn``: say which ``"none"`` values were lost (merges of call paths)."""
    if not isinstance(obj, Tree):  # an ensemble, in memory or on disk
        return obj.remapped(rm.nodes, rm.mapping)
    rules = list(obj.aggregation.values())
    vals = obj.metrics[obj.exc_metrics].to_numpy(dtype=np.float64)
    out, conflicts = combine_rows(vals, rm.mapping, len(rm.nodes), rules)
    if warn:
        lost = [f"{m!r} ({c} nodes)" for m, c in zip(obj.exc_metrics, conflicts) if c]
        if lost:
            warnings.warn(
                "merging same call paths: different values of per-node metrics became NaN: "
                + ", ".join(lost),
                stacklevel=3,
            )
    return Tree(rm.nodes, pd.DataFrame(out, columns=obj.exc_metrics), obj.meta, _trusted=True)


def _tree(obj: Tree | Ensemble) -> Tree:
    return obj if isinstance(obj, Tree) else obj.tree


def _mask(tree: Tree, keep: Any) -> np.ndarray:
    if isinstance(keep, NodeSet):
        if keep.tree is not tree:
            keep = tree.query(keep.to_query())
        return keep.mask
    if isinstance(keep, (np.ndarray, pd.Series, list)):
        arr = np.asarray(keep)
        if arr.dtype == bool:
            if arr.shape != (len(tree),):
                raise ValueError(f"mask has shape {arr.shape}, expected ({len(tree)},)")
            return arr
    return tree.query(keep).mask


# ------------------------------------------------------------------ filter
def filter_remap(tree: Tree, keep: np.ndarray, *, merge_duplicates: bool = False) -> Remap:
    """Keep ``keep`` nodes; each is re-attached to its nearest kept ancestor.

    Kept nodes that end up as same-named siblings merge (identity is the
    call path), as in Hatchet's squash; same-named siblings of the input stay
    apart (the n-th joins the n-th: see :func:`~cctviz.model._algo.identity_codes`)
    unless ``merge_duplicates``.
    """
    parent = tree.parent
    if merge_duplicates:
        codes, uniq = pd.factorize(tree.names)
        uniq, span = np.asarray(uniq, dtype=object), 1
    else:
        codes, uniq, span = identity_codes(tree.names, parent)
    n = len(tree)
    nearest = np.full(n, -1, dtype=np.int64)  # nearest kept ancestor (strict)
    new_depth = np.full(n, -1, dtype=np.int64)  # depth among kept nodes
    for d, lv in enumerate(tree.levels):
        if d:
            p = parent[lv]
            nearest[lv] = np.where(keep[p], p, nearest[p])
        k = lv[keep[lv]]
        anc = nearest[k]
        new_depth[k] = np.where(anc >= 0, new_depth[np.maximum(anc, 0)] + 1, 0)
    # the trie takes one level of the *result* at a time, so a node squashed up next
    # to a same-named sibling meets it (and merges), whatever depth it came from
    tb = TrieBuilder()
    tid = np.full(n, -1, dtype=np.int64)
    kept_ids = np.flatnonzero(keep)
    by_depth = kept_ids[np.argsort(new_depth[kept_ids], kind="stable")]
    bounds = np.flatnonzero(np.diff(new_depth[by_depth])) + 1
    for k in np.split(by_depth, bounds) if by_depth.size else []:
        anc = nearest[k]
        prev = np.where(anc >= 0, tid[np.maximum(anc, 0)], -1)
        tid[k] = tb.add_level(prev, codes[k])
    kept = tid >= 0
    src = np.full(tb.size, len(tree), dtype=np.int64)
    np.minimum.at(src, tid[kept], np.flatnonzero(kept))
    nodes, inv = trie_nodes(tree, tb, src, uniq, span)
    mapping = np.where(kept, inv[np.maximum(tid, 0)], -1) if tb.size else np.full(len(tree), -1)
    return Remap(nodes, mapping)


def trie_nodes(
    tree: Tree, tb: TrieBuilder, src: np.ndarray, uniq: np.ndarray, span: int = 1
) -> tuple[pd.DataFrame, np.ndarray]:
    """Pre-ordered nodes table of a trie built over ``tree``'s name codes.

    ``src[t]`` is a node of ``tree`` standing for trie node ``t``: its
    attributes (kind, file, ...) are copied; its name is ``uniq[code // span]``.
    Returns the table and ``inv``, the pre-order id of every trie node.
    """
    tparent = tb.parent
    perm = preorder_permutation(tparent)
    inv = np.empty(tb.size, dtype=np.int64)
    inv[perm] = np.arange(tb.size)
    nodes = tree.nodes.iloc[src[perm]].reset_index(drop=True).copy()
    nodes["name"] = uniq[tb.code[perm] // span]
    nodes["parent"] = np.where(tparent[perm] >= 0, inv[np.maximum(tparent[perm], 0)], -1)
    return nodes, inv


def filter_tree(obj: Tree | Ensemble, keep: Any, *, squash: bool = True) -> Tree | Ensemble:
    """Keep the nodes selected by ``keep`` (a query, NodeSet or boolean mask).

    Dropped nodes' exclusive metrics are dropped; inclusive values of kept
    nodes are recomputed from what remains (Hatchet's filter + squash).

    >>> t = Tree.from_parents([-1, 0, 1], ["main", "mid", "leaf"], {"time": [1, 2, 3]})
    >>> f = t.filter(lambda df: df["name"] != "mid")
    >>> f.nodes[["name", "parent"]].values.tolist(), f.metrics["time (inc)"].tolist()
    ([['main', -1], ['leaf', 0]], [4.0, 3.0])
    """
    if not squash:
        raise ValueError(
            "cctviz trees are always squashed: kept nodes join their nearest kept ancestor"
        )
    tree = _tree(obj)
    return _apply(obj, filter_remap(tree, _mask(tree, keep)), warn=True)


def merge_duplicates(obj: Tree | Ensemble) -> Tree | Ensemble:
    """Merge same-named siblings (and so same call paths) into one node each;
    values combine by each metric's aggregation rule.

    >>> t = Tree.from_parents([-1, 0, 0], ["main", "f", "f"], {"time": [1.0, 2.0, 3.0]})
    >>> m = merge_duplicates(t)
    >>> m.nodes["name"].tolist(), m.metrics["time"].tolist()
    (['main', 'f'], [1.0, 5.0])
    """
    tree = _tree(obj)
    rm = filter_remap(tree, np.ones(len(tree), dtype=bool), merge_duplicates=True)
    return _apply(obj, rm, warn=True)


# ------------------------------------------------------------------ prune
def prune_remap(tree: Tree, fold: np.ndarray) -> Remap:
    """Fold the subtrees of ``fold`` heads into one ``(other)`` child per parent."""
    parent = tree.parent
    n = len(tree)
    hidden = np.zeros(n, dtype=bool)
    head = np.full(n, -1, dtype=np.int64)
    for d, lv in enumerate(tree.levels):
        if d == 0:
            hidden[lv] = fold[lv]
            head[lv] = np.where(fold[lv], lv, -1)
        else:
            p = parent[lv]
            inherited = hidden[p]
            hidden[lv] = inherited | fold[lv]
            head[lv] = np.where(inherited, head[p], np.where(fold[lv], lv, -1))
    visible = np.flatnonzero(~hidden)
    heads = np.flatnonzero(hidden & (head == np.arange(n)))
    host = parent[heads]  # parent of each folded head (-1: a root was folded)
    hosts, host_of_head = np.unique(host, return_inverse=True)
    n_vis = visible.size
    # structure in "any order": visible nodes, then one other-node per host
    vis_new = np.full(n, -1, dtype=np.int64)
    vis_new[visible] = np.arange(n_vis)
    par_vis = np.where(parent[visible] >= 0, vis_new[np.maximum(parent[visible], 0)], -1)
    par_oth = np.where(hosts >= 0, vis_new[np.maximum(hosts, 0)], -1)
    all_parent = np.concatenate([par_vis, par_oth])
    end = tree.end
    key = np.concatenate([visible, np.where(hosts >= 0, end[np.maximum(hosts, 0)], n)])
    perm = preorder_permutation(all_parent, key)
    inv = np.empty(perm.size, dtype=np.int64)
    inv[perm] = np.arange(perm.size)
    base = tree.nodes.iloc[
        np.concatenate([visible, np.zeros(hosts.size, dtype=np.int64)])
    ].reset_index(drop=True)
    base = base.copy()
    oth = slice(n_vis, None)
    base.loc[base.index[oth], "name"] = OTHER
    base.loc[base.index[oth], "kind"] = "other"
    for c in base.columns:
        if c not in STRUCT_COLUMNS:
            base.loc[base.index[oth], c] = None
    count = np.bincount(host_of_head, minlength=hosts.size)
    base["folded"] = np.concatenate([np.zeros(n_vis, dtype=np.int64), count])
    nodes = base.iloc[perm].reset_index(drop=True)
    nodes["parent"] = np.where(all_parent[perm] >= 0, inv[np.maximum(all_parent[perm], 0)], -1)
    mapping = np.empty(n, dtype=np.int64)
    mapping[visible] = inv[np.arange(n_vis)]
    hid = np.flatnonzero(hidden)
    mapping[hid] = inv[n_vis + host_of_head[np.searchsorted(heads, head[hid])]]
    return Remap(nodes, mapping)


def prune(
    obj: Tree | Ensemble,
    metric: str | None = None,
    *,
    threshold: float | None = None,
    fraction: float | None = None,
    top_k: int | None = None,
) -> Tree | Ensemble:
    """Fold small nodes into one ``(other)`` node per parent; totals still add up.

    A node is folded (with its whole subtree) when its inclusive ``metric``
    is below ``threshold``, or below ``fraction`` of the total, or when it is
    not among the ``top_k`` largest children of its parent. The ``(other)``
    node's ``folded`` column says how many subtrees it holds.

    >>> t = Tree.from_parents([-1, 0, 0, 0], ["m", "a", "b", "c"], {"t": [0, 5, 1, 2]})
    >>> p = t.prune("t (inc)", top_k=1)
    >>> p.nodes["name"].tolist(), p.metrics["t"].tolist()
    (['m', 'a', '(other)'], [0.0, 5.0, 3.0])
    """
    tree = _tree(obj)
    col = tree.metric_column(metric)
    val = tree.metrics[col].to_numpy(dtype=np.float64)
    fold = np.zeros(len(tree), dtype=bool)
    if threshold is not None:
        fold |= val < threshold
    if fraction is not None:
        total = val[tree.roots].sum()
        fold |= val < fraction * total
    if top_k is not None:
        parent = tree.parent
        order = np.lexsort((np.arange(len(tree)), -val, parent))
        grp = parent[order]
        first = np.ones(len(tree), dtype=bool)
        first[1:] = grp[1:] != grp[:-1]
        idx = np.arange(len(tree))
        rank = idx - np.maximum.accumulate(np.where(first, idx, 0))
        r = np.empty(len(tree), dtype=np.int64)
        r[order] = rank
        fold |= r >= top_k
    return _apply(obj, prune_remap(tree, fold))


# ------------------------------------------------------------------ focus
def focus(obj: Tree | Ensemble, node: Any) -> Tree | Ensemble:
    """The subtree(s) rooted at ``node``: an id, ids, a NodeSet or a query.

    Nested selections keep the outermost root.
    """
    tree = _tree(obj)
    if isinstance(node, (int, np.integer)):
        roots = np.array([int(node)])
    elif isinstance(node, NodeSet):
        roots = node.ids
    elif (
        isinstance(node, (list, np.ndarray))
        and len(node)
        and all(isinstance(x, (int, np.integer)) for x in node)
    ):
        roots = np.unique(np.asarray(node, dtype=np.int64))
    else:
        roots = tree.query(node).ids
    if roots.size == 0:
        raise ValueError("focus: nothing selected")
    if roots.min() < 0 or roots.max() >= len(tree):
        raise IndexError(f"node ids must be in [0, {len(tree)})")
    inside = np.zeros(len(tree) + 1, dtype=np.int64)
    np.add.at(inside, roots, 1)
    np.add.at(inside, tree.end[roots], -1)
    keep = np.cumsum(inside)[:-1] > 0
    newid = np.cumsum(keep) - 1
    nodes = tree.nodes[keep].reset_index(drop=True).copy()
    par = tree.parent[keep]
    ok = par >= 0
    ok[ok] = keep[par[ok]]
    nodes["parent"] = np.where(ok, newid[np.maximum(par, 0)], -1)
    mapping = np.where(keep, newid, -1)
    return _apply(obj, Remap(nodes, mapping))
