"""Shared tree builders: what readers build trees from, written once.

- from parents: :meth:`cctviz.Tree.from_parents` (any node order);
- from stacks or call paths: :func:`stacks_to_tree` (folded stacks, speedscope,
  pyinstrument);
- ensembles from trees: :meth:`cctviz.Ensemble.from_trees`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence

import numpy as np


def stacks_to_tree(
    stacks: Iterable[Sequence[Hashable]],
    weights: Sequence[float] | np.ndarray | None = None,
) -> tuple[np.ndarray, list[Hashable], np.ndarray]:
    """Merge stacks (outermost frame first) into a call-path tree.

    Returns ``(parent, frame_key, weight)`` arrays over the tree nodes: a node
    per distinct stack prefix (frames merged by key under the same parent) and
    the summed weight of the stacks that end at each node (exclusive values).

    >>> parent, keys, w = stacks_to_tree([("a", "b"), ("a",), ("a", "b")], [1, 2, 3])
    >>> parent.tolist(), keys, w.tolist()
    ([-1, 0], ['a', 'b'], [2.0, 4.0])
    """
    ids: dict[tuple[int, Hashable], int] = {}
    parent: list[int] = []
    keys: list[Hashable] = []
    ends: list[int] = []
    for stack in stacks:
        node = -1
        for frame in stack:
            k = (node, frame)
            nid = ids.get(k)
            if nid is None:
                nid = len(parent)
                ids[k] = nid
                parent.append(node)
                keys.append(frame)
            node = nid
        ends.append(node)
    end = np.asarray(ends, dtype=np.int64)
    w = (
        np.ones(end.size)
        if weights is None
        else np.asarray(weights, dtype=np.float64).reshape(-1)[: end.size]
    )
    ok = end >= 0  # an empty stack carries no node
    out = np.bincount(end[ok], weights=w[ok], minlength=len(parent)).astype(np.float64)
    return np.asarray(parent, dtype=np.int64), keys, out


__all__ = ["stacks_to_tree"]
