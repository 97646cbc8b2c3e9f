"""Shared tree builders: what readers build trees from, written once.

- from parents: :meth:`cctviz.Tree.from_parents` (any node order);
- from stacks or call paths: :func:`stacks_to_tree` (folded stacks, speedscope,
  pyinstrument);
- from Enter/Leave events: :func:`nest_enter_leave` (OTF2, speedscope's evented
  profiles), vectorised; per Enter its context, so that a timeline keeps them;
- ensembles from trees: :meth:`cctviz.Ensemble.from_trees`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import numpy as np

#: name of the root that samples with an empty stack are charged to (py-spy's
#: samples of a thread without Python frames: `` 4`` in its raw output)
NO_FRAMES = "(no frames)"


def stacks_to_tree(
    stacks: Iterable[Sequence[Hashable]],
    weights: Sequence[float] | np.ndarray | None = None,
    empty: Hashable | None = None,
) -> tuple[np.ndarray, list[Hashable], np.ndarray]:
    """Merge stacks (outermost frame first) into a call-path tree.

    Returns ``(parent, frame_key, weight)`` arrays over the tree nodes: a node
    per distinct stack prefix (frames merged by key under the same parent) and
    the summed weight of the stacks that end at each node (exclusive values).
    An empty stack (a sample that caught no frame) is charged to a root of key
    ``empty``, so that the samples still add up; with ``empty=None`` it is
    dropped.

    >>> parent, keys, w = stacks_to_tree([("a", "b"), ("a",), ("a", "b")], [1, 2, 3])
    >>> parent.tolist(), keys, w.tolist()
    ([-1, 0], ['a', 'b'], [2.0, 4.0])
    >>> stacks_to_tree([("a",), ()], [1, 5], empty=NO_FRAMES)[1:]
    (['a', '(no frames)'], array([1., 5.]))
    """
    if empty is not None:
        stacks = (tuple(s) if len(s) else (empty,) for s in stacks)
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


class NestingError(ValueError):
    """Enter/Leave events that do not nest; ``event`` is the offending index."""

    def __init__(self, message: str, event: int) -> None:
        super().__init__(message)
        self.event = int(event)


def nest_enter_leave(region: np.ndarray, ticks: np.ndarray, end: int) -> dict[str, Any]:
    """Pair the Enter/Leave events of one thread of execution and give each
    Enter its call path (a context id; 0 is the root), vectorised.

    ``region[k]`` is the region (frame) entered by event ``k`` (>= 0), or
    ``-1 - region`` for a Leave of it; ``ticks`` are the events' times (not
    decreasing); an Enter never left ends at ``end``. Contexts merge equal
    regions under the same parent context (the calling-context tree).

    Returns a dict of arrays: per Enter, ``enters`` (its event index), ``ctx``,
    ``parent_ctx``, ``parent_enter`` (the enclosing Enter, -1 at the top),
    ``inc`` (end minus start), ``leave_of`` (its Leave's index, -1 if never
    left); per event, ``after`` (the context running after it) and
    ``open_after`` (the Enter open after it); per context, ``ctx_parent`` and
    ``ctx_region`` (context 0, the root, has -1 for both); ``unclosed`` (how
    many Enters were never left). Raises :class:`NestingError` naming the event.

    >>> n = nest_enter_leave(np.array([0, 1, -2, 1, -2, -1]), np.array([0, 1, 3, 4, 7, 9]), 9)
    >>> n["ctx"].tolist(), n["inc"].tolist(), n["ctx_parent"].tolist(), n["ctx_region"].tolist()
    ([1, 2, 2], [9, 2, 3], [-1, 0, 1], [-1, 0, 1])
    """
    n = region.shape[0]
    is_enter = region >= 0
    step = np.where(is_enter, 1, -1)
    depth_after = np.cumsum(step)
    if n and depth_after.min() < 0:
        k = int(np.argmax(depth_after < 0))
        raise NestingError("a Leave event without a matching Enter", k)
    unclosed = int(depth_after[-1]) if n else 0
    level = np.where(is_enter, depth_after, depth_after + 1)  # 1-based frame level
    enters = np.flatnonzero(is_enter)
    e_level = level[enters]
    # the Leave of each Enter: within one level, events alternate E, L, E, L...
    order = np.lexsort((np.arange(n), level))
    lv_sorted = level[order]
    pos_in = np.empty(n, dtype=np.int64)
    pos_in[order] = np.arange(n)
    nxt = pos_in[enters] + 1
    ok = nxt < n
    ok[ok] = (lv_sorted[nxt[ok]] == e_level[ok]) & ~is_enter[order[nxt[ok]]]
    leave_of = np.full(enters.shape[0], -1, dtype=np.int64)
    leave_of[ok] = order[nxt[ok]]
    if n:
        lr = region[leave_of[ok]]
        bad = np.flatnonzero(-1 - lr != region[enters[ok]])
        if bad.size:
            k = int(leave_of[ok][bad[0]])
            raise NestingError(
                f"a Leave of region {-1 - int(region[k])} closes region "
                f"{int(region[enters[ok][bad[0]]])}",
                k,
            )
    t_leave = np.where(leave_of >= 0, ticks[np.maximum(leave_of, 0)], end)
    inc = t_leave - ticks[enters]
    # parents and contexts, level by level
    n_e = enters.shape[0]
    ctx = np.zeros(n_e, dtype=np.int64)
    parent_ctx = np.zeros(n_e, dtype=np.int64)
    parent_enter = np.full(n_e, -1, dtype=np.int64)
    ctx_parent: list[np.ndarray] = [np.asarray([-1], dtype=np.int64)]
    ctx_region: list[np.ndarray] = [np.asarray([-1], dtype=np.int64)]
    n_ctx = 1
    max_level = int(e_level.max()) if n_e else 0
    by_level = np.argsort(e_level, kind="stable")
    bounds = np.searchsorted(e_level[by_level], np.arange(1, max_level + 2))
    prev_idx = np.zeros(0, dtype=np.int64)
    for lv in range(1, max_level + 1):
        idx = by_level[bounds[lv - 1] : bounds[lv]]  # Enter indices at this level, in order
        if lv > 1:
            k = np.searchsorted(enters[prev_idx], enters[idx]) - 1
            parent_enter[idx] = prev_idx[k]
            parent_ctx[idx] = ctx[prev_idx[k]]
        regs = region[enters[idx]]
        key = parent_ctx[idx] * (int(region.max()) + 1) + regs
        uniq, first, inv = np.unique(key, return_index=True, return_inverse=True)
        ctx[idx] = n_ctx + inv
        ctx_parent.append(parent_ctx[idx][first])
        ctx_region.append(regs[first])
        n_ctx += uniq.shape[0]
        prev_idx = idx
    # the context (and the Enter) running after each E/L event
    after = np.zeros(n, dtype=np.int64)
    after[enters] = ctx
    open_after = np.full(n, -1, dtype=np.int64)
    open_after[enters] = np.arange(n_e)
    if n_e:
        ok_l = leave_of >= 0
        after[leave_of[ok_l]] = parent_ctx[ok_l]
        open_after[leave_of[ok_l]] = parent_enter[ok_l]
    return {
        "enters": enters,
        "ctx": ctx,
        "parent_ctx": parent_ctx,
        "parent_enter": parent_enter,
        "inc": inc,
        "after": after,
        "open_after": open_after,
        "leave_of": leave_of,
        "ctx_parent": np.concatenate(ctx_parent),
        "ctx_region": np.concatenate(ctx_region),
        "unclosed": unclosed,
    }


__all__ = ["NestingError", "nest_enter_leave", "stacks_to_tree"]
