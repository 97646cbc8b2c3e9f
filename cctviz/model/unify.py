"""Unify many trees into one: node identity is the call path (names from the root).

Never the integer id, never the bare name (merging by name turns recursion
into cycles), never the kind. Several same-named siblings in one tree (a
file that records a call path twice, a trace read with ``merge=False``) are
told apart by their order: the n-th ``f`` under a node is the n-th ``f`` of
that path in every tree (:func:`~cctviz.model._algo.identity_codes`), so
unifying a tree with itself gives it back unchanged. Paths are merged level by level with a :class:`TrieBuilder`,
so the cost is linear in the total number of nodes. Trees that share their
structure (the same object, or identical parent and name arrays, as the ranks
of one run usually do) are unified once.
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ._algo import TrieBuilder, identity_codes, preorder_permutation
from .tree import STRUCT_COLUMNS, Tree


def _fingerprint(t: Tree) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    h.update(t.parent.tobytes())
    h.update(pd.util.hash_pandas_object(t.nodes["name"], index=False).to_numpy().tobytes())
    return h.digest()


def unify_structures(trees: Sequence[Tree]) -> tuple[Tree, list[np.ndarray]]:
    """One tree holding every call path of ``trees`` (no metrics) and, per input
    tree, the unified id of each of its nodes.

    Sibling order in the result is order of first appearance.

    >>> a = Tree.from_parents([-1, 0], ["main", "f"])
    >>> b = Tree.from_parents([-1, 0, 0], ["main", "g", "f"])
    >>> u, maps = unify_structures([a, b])
    >>> u.nodes["name"].tolist(), [m.tolist() for m in maps]
    (['main', 'f', 'g'], [[0, 1], [0, 2, 1]])
    """
    # distinct structures only
    rep_of: list[int] = []
    reps: list[Tree] = []
    seen: dict[bytes, int] = {}
    by_id: dict[int, int] = {}
    for t in trees:
        if id(t) in by_id:
            rep_of.append(by_id[id(t)])
            continue
        fp = _fingerprint(t)
        k = seen.setdefault(fp, len(reps))
        if k == len(reps):
            reps.append(t)
        by_id[id(t)] = k
        rep_of.append(k)

    sizes = np.array([len(t) for t in reps], dtype=np.int64)
    offs = np.concatenate(([0], np.cumsum(sizes)))
    names = np.concatenate([t.names for t in reps]) if reps else np.empty(0, object)
    gparent = (
        np.concatenate([np.where(t.parent >= 0, t.parent + o, -1) for t, o in zip(reps, offs[:-1])])
        if reps
        else np.empty(0, np.int64)
    )
    gdepth = np.concatenate([t.depth for t in reps]) if reps else np.empty(0, np.int64)
    tree_of = np.repeat(np.arange(len(reps)), sizes)
    node_of, new_parent, new_names, first = merge_call_paths(gparent, names, tree_of, gdepth)
    extra_cols: list[str] = []
    for t in reps:
        extra_cols += [
            c for c in t.nodes.columns if c not in STRUCT_COLUMNS and c not in extra_cols
        ]
    nodes = pd.DataFrame({"name": new_names, "parent": new_parent})
    for c in ["kind", *extra_cols]:
        parts = [
            t.nodes[c] if c in t.nodes else pd.Series([None] * len(t), dtype=object) for t in reps
        ]
        col = (
            pd.concat(parts, ignore_index=True)
            if len(parts) > 1
            else parts[0].reset_index(drop=True)
        )
        nodes[c] = col.iloc[first].to_numpy()
    unified = Tree(nodes, None, None, _trusted=True)
    rep_maps = [node_of[offs[k] : offs[k + 1]] for k in range(len(reps))]
    return unified, [rep_maps[k] for k in rep_of]


def merge_call_paths(
    parent: np.ndarray, names: np.ndarray, tree_of: np.ndarray, depth: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Several trees' nodes (one forest: ``parent`` indexes it, -1 for a root;
    ``tree_of`` says whose each node is; ``depth`` its depth) merged by call path:
    the n-th same-named sibling joins the n-th, roots of different trees are not
    siblings of each other, siblings in order of first appearance. One pass per
    level over all the nodes (a trie), not a loop over the trees.

    Returns, for every input node its unified node; and per unified node (in
    pre-order) its parent, its name and the input node first seen there.

    Example:
        >>> node_of, parent, names, first = merge_call_paths(
        ...     np.array([-1, 0, -1, 2, 2]), np.array(["m", "f", "m", "g", "f"], dtype=object),
        ...     np.array([0, 0, 1, 1, 1]), np.array([0, 1, 0, 1, 1]))
        >>> node_of.tolist(), parent.tolist(), names.tolist(), first.tolist()
        ([0, 1, 0, 2, 1], [-1, 0, 0], ['m', 'f', 'g'], [0, 1, 3])
    """
    total = parent.size
    # roots of different trees are not siblings: each tree's roots get their own parent key
    codes, uniq_names, span = identity_codes(names, np.where(parent >= 0, parent, -1 - tree_of))
    order = np.argsort(depth, kind="stable")
    bounds = np.concatenate(
        ([0], np.cumsum(np.bincount(depth, minlength=int(depth.max(initial=-1)) + 1)))
    )
    tb = TrieBuilder()
    uid = np.empty(total, dtype=np.int64)
    for d in range(len(bounds) - 1):
        idx = order[bounds[d] : bounds[d + 1]]
        gp = parent[idx]
        prev = np.where(gp >= 0, uid[np.maximum(gp, 0)], -1)
        uid[idx] = tb.add_level(prev, codes[idx])
    tparent = tb.parent
    perm = preorder_permutation(tparent)
    inv = np.empty(tb.size, dtype=np.int64)
    inv[perm] = np.arange(tb.size)
    new_parent = np.where(tparent[perm] >= 0, inv[np.maximum(tparent[perm], 0)], -1)
    first = np.full(tb.size, total, dtype=np.int64)
    np.minimum.at(first, uid, np.arange(total))
    return inv[uid], new_parent, uniq_names[tb.code[perm] // span], first[perm]


_NODE_MAPS: dict[tuple[int, int], tuple[weakref.ref, weakref.ref, np.ndarray]] = {}


def node_map(src: Tree, dst: Tree) -> np.ndarray:
    """For every node of ``src``, the node of ``dst`` with the same identity (its call
    path, the n-th of same-named siblings being the n-th), or -1 where ``dst`` has none.

    The one mapping every link between views uses; computed once per pair of trees.

    Example:
        >>> a = Tree.from_parents([-1, 0, 0], ["main", "f", "f"])
        >>> b = Tree.from_parents([-1, 0, 0, 0], ["main", "g", "f", "f"])
        >>> node_map(a, b).tolist(), node_map(b, a).tolist()
        ([0, 2, 3], [0, -1, 1, 2])
    """
    if src is dst:
        return np.arange(len(src), dtype=np.int64)
    key = (id(src), id(dst))
    hit = _NODE_MAPS.get(key)
    if hit is not None and hit[0]() is src and hit[1]() is dst:
        return hit[2]
    unified, (a, b) = unify_structures([src, dst])
    inv = np.full(len(unified), -1, dtype=np.int64)
    inv[b] = np.arange(len(dst), dtype=np.int64)
    out = inv[a]
    out.setflags(write=False)
    if len(_NODE_MAPS) >= 32:  # a few linked views at a time
        _NODE_MAPS.clear()
    _NODE_MAPS[key] = (weakref.ref(src), weakref.ref(dst), out)
    return out
