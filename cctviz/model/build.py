"""Shared tree builders: what readers build trees from, written once.

- from parents: :meth:`cctviz.Tree.from_parents` (any node order);
- from stacks or call paths: :func:`stacks_to_tree` (folded stacks, speedscope,
  pyinstrument); :func:`frames_to_tree` for many sampled stacks given as flat
  arrays of frame codes (perf script), vectorised;
- from Enter/Leave events: :func:`nest_enter_leave` (OTF2, speedscope's evented
  profiles), vectorised; per Enter its context, so that a timeline keeps them;
- from intervals (start, end) per thread: :func:`nest_intervals` orders them into
  a well-nested Enter/Leave stream for :func:`nest_enter_leave` (Chrome traces);
- ensembles from trees: :meth:`cctviz.Ensemble.from_trees`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from ._algo import TrieBuilder

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


def frames_to_tree(
    sample: np.ndarray, code: np.ndarray, n_samples: int, *, innermost_first: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merge sampled stacks given as flat arrays into a call-path tree, vectorised.

    ``sample[k]`` is the stack (sample) that frame ``k`` belongs to, ``code[k]``
    its frame (an integer key, >= 0); the frames of a sample are contiguous and
    in stack order, innermost first (as ``perf script`` prints them) or, with
    ``innermost_first=False``, outermost first. The tree is built level by level
    from the root (:class:`~cctviz.model._algo.TrieBuilder`): one numpy pass per
    level, none per frame.

    Returns ``(parent, frame_code, leaf)``: per tree node its parent (-1 for a
    root) and frame code, and per sample the node its stack ends at (-1 for a
    sample without frames).

    >>> parent, codes, leaf = frames_to_tree(np.array([0, 0, 1, 2, 2]), np.array([1, 0, 0, 2, 0]), 3)
    >>> parent.tolist(), codes.tolist(), leaf.tolist()
    ([-1, 0, 0], [0, 1, 2], [1, 0, 2])
    """
    sample = np.asarray(sample, dtype=np.int64)
    code = np.asarray(code, dtype=np.int64)
    n = np.bincount(sample, minlength=n_samples)
    start = np.cumsum(n) - n
    tb = TrieBuilder()
    node = np.full(n_samples, -1, dtype=np.int64)
    active = np.flatnonzero(n > 0)
    depth = 0
    while active.size:
        pos = n[active] - 1 - depth if innermost_first else np.full(active.size, depth)
        node[active] = tb.add_level(node[active], code[start[active] + pos])
        depth += 1
        active = active[n[active] > depth]
    return tb.parent, tb.code, node


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


def nest_intervals(group: np.ndarray, start: np.ndarray, end: np.ndarray) -> dict[str, Any]:
    """Order intervals into a well-nested Enter/Leave stream per group (a thread),
    vectorised, for :func:`nest_enter_leave`.

    An interval goes inside the innermost interval open at its start. Of intervals
    that start together the longer is outside (equal ones: the first given); one
    that starts where another ends follows it (a zero-length one too). An interval
    that outlives the one it starts in (they overlap without nesting) is clamped to
    end with it: ``end`` gives the ends used. Ends below their starts count as
    zero-length. Give whole numbers (ns) where the source has them: float rounding
    of ``ts + dur`` makes overlaps of one ulp.

    Returns a dict: ``stream`` (the events in order: ``k`` for the Enter of
    interval ``k``, ``-1 - k`` for its Leave; groups in increasing order, each
    balanced), ``end`` (the ends used, float64), ``parent`` (the enclosing interval,
    -1 at the top) and ``level`` (1 at the top) per interval, and ``clamped`` (a
    bool per interval: its end was lowered).

    Cost: one sort of the stream for well-nested input. Where intervals overlap, a
    pass clamps what the stream places as a stack walk would (all but the stretches
    from a Leave out of order until the depth is back below it) and sorts again:
    one more pass per overlap that starts inside such a stretch.

    >>> n = nest_intervals(np.zeros(4, int), np.array([0., 1, 2, 5]), np.array([10., 4, 3, 12]))
    >>> n["stream"].tolist(), n["parent"].tolist(), n["end"].tolist()
    ([0, 1, 2, -3, -2, 3, -4, -1], [-1, 0, 1, 0], [10.0, 4.0, 3.0, 10.0])
    """
    group = np.asarray(group, dtype=np.int64)
    start = np.asarray(start, dtype=np.float64)
    end0 = np.maximum(np.asarray(end, dtype=np.float64), start)
    n = start.shape[0]
    order = np.lexsort((np.arange(n), start - end0, start, group))  # outer first
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    end = end0.copy()
    while True:
        stream, level, parent, settled = _interval_stream(group, start, end, rank)
        if settled is None:
            break
        new_end = _clamp_to_parents(start, end, parent, level, settled)
        if np.array_equal(new_end, end):  # a pass that finds an overlap always clamps
            raise NestingError("intervals that clamping does not nest", int(np.argmin(settled)))
        end = new_end
    return {"stream": stream, "end": end, "parent": parent, "level": level, "clamped": end < end0}


def _interval_stream(
    group: np.ndarray, start: np.ndarray, end: np.ndarray, rank: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """One pass of :func:`nest_intervals`: the sorted stream, each interval's level
    and parent (the last Enter one level up before it), and None where every Leave
    closes the innermost open interval (the stream nests), else which intervals
    are settled (entered before the first Leave out of order in their group)."""
    n = start.shape[0]
    zero = end <= start
    # sort keys: (group, time, 0 for a Leave / 1 for an Enter, sub-order)
    g2 = np.concatenate([group, group])
    t2 = np.concatenate([start, np.where(zero, start, end)])
    c2 = np.concatenate([np.ones(n, np.int8), zero.astype(np.int8)])
    s2 = np.concatenate([2 * rank, np.where(zero, 2 * rank + 1, -rank)])
    pos = np.lexsort((s2, c2, t2, g2))
    stream = np.where(pos < n, pos, -1 - (pos - n))
    depth = np.cumsum(np.where(pos < n, 1, -1))
    where = np.empty(2 * n, dtype=np.int64)
    where[pos] = np.arange(2 * n)
    e_pos, l_pos = where[:n], where[n:]
    level = depth[e_pos]
    # the parent: the last Enter one level up before it (a group starts at depth 0)
    span = 2 * n + 1
    key = level * span + e_pos
    by_key = np.argsort(key, kind="stable")
    k = np.searchsorted(key[by_key], (level - 1) * span + e_pos) - 1
    parent = np.where(level > 1, by_key[np.maximum(k, 0)], -1)
    after = depth[l_pos]
    if (after == level - 1).all():
        return stream, level, parent, None
    # a Leave of level h + 1 that leaves others open above it: from there until the
    # depth is back at h, the stream is not what a stack walk sees; before and
    # after, it is (the depth moves by 1 a step). Leaves that find the depth below h
    # come after such a Leave, inside its stretch.
    bad = np.flatnonzero(after > level - 1)
    p, h = l_pos[bad], level[bad] - 1
    at = np.lexsort((np.arange(2 * n), depth))  # positions by (depth, position)
    keys = depth[at] * span + at
    q = at[np.minimum(np.searchsorted(keys, h * span + p + 1), 2 * n - 1)]
    q = np.where(depth[q] == h, q, 2 * n)
    mark = np.zeros(2 * n + 1, dtype=np.int64)
    np.add.at(mark, p, 1)
    np.add.at(mark, q, -1)
    tainted = np.cumsum(mark[:-1]) > 0
    return stream, level, parent, ~tainted[e_pos]


def _clamp_to_parents(
    start: np.ndarray, end: np.ndarray, parent: np.ndarray, level: np.ndarray, settled: np.ndarray
) -> np.ndarray:
    """Ends of settled intervals clamped to the (clamped) end of the parent they
    start in, level by level from the top (a loop over levels, vectorised within)."""
    out = end.copy()
    idx_all = np.flatnonzero(settled & (level > 1))
    lv = level[idx_all]
    by_level = idx_all[np.argsort(lv, kind="stable")]
    bounds = np.searchsorted(np.sort(lv), np.arange(2, int(lv.max(initial=1)) + 2))
    for a, b in zip(bounds[:-1], bounds[1:]):
        idx = by_level[a:b]
        pe = out[parent[idx]]
        inside = start[idx] < pe
        out[idx] = np.where(inside, np.minimum(out[idx], pe), out[idx])
    return out


__all__ = ["NestingError", "nest_enter_leave", "nest_intervals", "stacks_to_tree"]
