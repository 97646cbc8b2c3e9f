"""Shared tree builders: what readers build trees from, written once.

- from parents: :meth:`cctviz.Tree.from_parents` (any node order);
- from stacks or call paths: :func:`stacks_to_tree` (folded stacks, speedscope,
  pyinstrument); :func:`frames_to_tree` for many sampled stacks given as flat
  arrays of frame codes (perf script), vectorised;
- from Enter/Leave events: :func:`nest_enter_leave` (OTF2, speedscope's evented
  profiles), vectorised; per Enter its context, so that a timeline keeps them;
- from intervals (start, end) per thread: :func:`nest_intervals`, the one interval
  nester, with an overlap policy per source (``"clamp"``: Chrome traces, whose
  well-nested Enter/Leave stream goes to :func:`nest_enter_leave`; ``"cut"``:
  Kineto; ``"outside"``: Nsight Systems), vectorised;
- GPU activities under the CPU calls that launched them: :mod:`cctviz.model.gputrace`;
- ensembles from trees: :meth:`cctviz.Ensemble.from_trees`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._algo import TrieBuilder, as_whole, lexsort, stable_order

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


#: what :func:`nest_intervals` does with an interval that outlives the one it starts in
OVERLAP_POLICIES = ("clamp", "cut", "outside")


def nest_intervals(
    group: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    *,
    overlap: str = "clamp",
    yields: np.ndarray | None = None,
    tol: float = 0.0,
    order: np.ndarray | None = None,
) -> dict[str, Any]:
    """Nest intervals by time per group (a thread), vectorised: the one interval
    nester of the readers (Chrome traces, Kineto, Nsight Systems).

    The intervals are taken per group in ``order`` (default: by start, the longer
    first, then as given; a caller may give its own, e.g. Kineto's Python-frame
    links as a tie-break). An interval goes inside the innermost interval open at
    its start that holds it; ends below their starts count as zero-length. Give
    whole numbers (ns) where the source has them: float rounding of ``ts + dur``
    makes overlaps of one ulp (or give ``tol``).

    ``overlap`` says what happens to an interval that outlives the one it starts
    in (they overlap without nesting), and with it the ties:

    - ``"clamp"`` (Chrome traces): it is clamped to end with the interval it starts
      in. One that starts where another ends follows it (a zero-length one too).
    - ``"cut"`` (Kineto): it goes under the innermost open interval that holds it
      whole, keeps its whole length, and the open intervals it outlives end where
      it starts (``cut``; ``cut_by`` names the interval that cut them): the overlap
      is the later interval's. An interval marked in ``yields`` (Kineto's Python
      frames) is the one that gives way instead: it starts where the last of the
      intervals it outlives ends (``trimmed``), which keep their ends. Ends that
      differ by ``tol`` or less count as equal (the later one is clamped to the
      earlier for the nesting, its ``end`` kept). A zero-length interval that
      starts where another ends goes inside it, unless that one is zero-length
      too or a longer interval starts at that time.
    - ``"outside"`` (Nsight Systems): it goes under the innermost (the latest
      started, in ``order``) interval that holds it whole; nothing is shortened,
      so intervals that overlap stay siblings and one that starts inside both goes
      under the later. Holding is containment, ends included: a zero-length
      interval where another ends, or one equal to another, goes inside it.

    Returns a dict: per interval ``parent`` (the enclosing interval, -1 at the
    top), ``level`` (1 at the top), ``start`` and ``end`` (the times used, float64;
    for ``"clamp"``, int64 where both were given as integers:
    ``end`` lowered where an interval was clamped or cut, ``start`` raised where
    one was trimmed) and ``clamped`` (its end was lowered); ``stream`` (for
    ``"clamp"``: the intervals as Enter/Leave events in order, ``k`` for the Enter
    of interval ``k`` and ``-1 - k`` for its Leave, groups in increasing order,
    each balanced: what :func:`nest_enter_leave` takes; else None); for ``"cut"``
    also ``cut``, ``cut_by`` (-1: not cut) and ``trimmed``.

    Cost: one sort of the Enter/Leave stream for well-nested input. ``"clamp"``:
    where intervals overlap, a pass clamps what the stream places as a stack walk
    would (all but the stretches from a Leave out of order until the depth is back
    below it) and sorts again: one more pass per overlap that starts inside such a
    stretch. ``"cut"``: a pass finds each interval's parent (the innermost open
    one) by a pointer-jumping search and resolves every overlap but those inside
    an interval that gives way (or whose end a pass moved): one pass, and one more
    per level of such intervals inside one another. ``"outside"``: a
    pointer-jumping search for the nearest earlier interval that ends no earlier,
    a few rounds (about log2 of the siblings).

    >>> n = nest_intervals(np.zeros(4, int), np.array([0., 1, 2, 5]), np.array([10., 4, 3, 12]))
    >>> n["stream"].tolist(), n["parent"].tolist(), n["end"].tolist()
    ([0, 1, 2, -3, -2, 3, -4, -1], [-1, 0, 1, 0], [10.0, 4.0, 3.0, 10.0])
    >>> c = nest_intervals(np.zeros(3, int), np.array([0., 5, 7]), np.array([10., 15, 8]), overlap="cut")
    >>> c["parent"].tolist(), c["end"].tolist(), c["cut_by"].tolist()
    ([-1, -1, 1], [5.0, 15.0, 8.0], [1, -1, -1])
    >>> nest_intervals(np.zeros(3, int), np.array([0., 5, 7]), np.array([10., 15, 8]), overlap="outside")["parent"].tolist()
    [-1, -1, 1]
    """
    if overlap not in OVERLAP_POLICIES:
        raise ValueError(f"overlap: one of {OVERLAP_POLICIES}, not {overlap!r}")
    group = np.asarray(group, dtype=np.int64)
    whole = _whole_times(start, end)  # integers given: the sorts take them as they are
    start = np.asarray(start, dtype=np.float64)
    end0 = np.maximum(np.asarray(end, dtype=np.float64), start)
    n = start.shape[0]
    if order is None:
        s, e = whole if whole is not None else (start, end0)
        order = lexsort((s - e, s, group))  # outer first, then as given
    order = np.asarray(order, dtype=np.int64)
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    if overlap == "outside":
        return _nest_outside(group, start, end0, order)
    if overlap == "clamp":
        if whole is not None:  # integers: exact past 2**53 (epoch ns), and no conversions
            start, end0 = whole
        end = end0.copy()
        while True:
            s = _interval_stream(group, start, end, rank, with_stream=True)
            if s.settled is None:
                break
            new_end = _clamp_to_parents(start, end, s.parent, s.level, s.settled)
            if np.array_equal(new_end, end):  # a pass that finds an overlap always clamps
                raise NestingError(
                    "intervals that clamping does not nest", int(np.argmin(s.settled))
                )
            end = new_end
        return {
            "stream": s.stream,
            "start": start,
            "end": end,
            "parent": s.parent,
            "level": s.level.astype(np.int64),
            "clamped": end < end0,
        }
    return _nest_cut(group, start, end0, rank, yields, float(tol))


def _whole_times(start: Any, end: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """``start`` and ``end`` (end no earlier than start) as int64 where both are
    given as integers, else None."""
    s, e = np.asarray(start), np.asarray(end)
    if s.dtype.kind not in "iu" or e.dtype.kind not in "iu":
        return None
    s = s.astype(np.int64, copy=False)
    return s, np.maximum(e.astype(np.int64, copy=False), s)


class _Stream:
    """One pass of :func:`nest_intervals`: the sorted stream, each interval's level
    and parent (the last Enter one level up before it), the depth after each
    event, the Enter positions, and ``settled``: None where every Leave closes the
    innermost open interval (the stream nests), else which intervals are settled
    (entered before a Leave out of order in their group, outside its stretch)."""

    stream: np.ndarray
    level: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    e_pos: np.ndarray
    settled: np.ndarray | None


def _stream_order(
    group: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    rank: np.ndarray,
    leave_late: np.ndarray | None = None,
    enter_class: np.ndarray | None = None,
) -> np.ndarray:
    """The Enter/Leave stream as positions (``k`` the Enter of interval ``k``,
    ``n + k`` its Leave), sorted by (group, time, class, sub-order): a Leave (class
    0, inner first) before an Enter (class 1, in rank order), a zero-length
    interval's Leave right after its Enter. For ``"cut"``, ``leave_late`` (per
    interval) puts its Leave after the Enters of its time (class 2), and
    ``enter_class`` gives an Enter another class (3: after those)."""
    n = start.shape[0]
    zero = end <= start
    ce = np.ones(n, np.int8) if enter_class is None else enter_class.astype(np.int8)
    cl = np.zeros(n, np.int8) if leave_late is None else (2 * leave_late).astype(np.int8)
    packed = _packed_stream(group, start, end, zero, ce, cl)
    if packed is not None:
        return _arranged_order(packed, rank, zero)
    return lexsort(
        (
            np.concatenate([2 * rank, np.where(zero, 2 * rank + 1, -rank)]),
            np.concatenate([ce, np.where(zero, ce, cl)]),
            np.concatenate([start, np.where(zero, start, end)]),
            np.concatenate([group, group]),
        )
    )


def _packed_stream(
    group: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    zero: np.ndarray,
    ce: np.ndarray,
    cl: np.ndarray,
) -> tuple[np.ndarray, np.ndarray] | None:
    """The (group, time, class) keys of the Enters and of the Leaves packed into
    int64s, where the times are whole numbers and the keys fit; else None."""
    if not start.size:
        return None
    s, e = as_whole(start), as_whole(end)  # (integers: as they are)
    if s is None or e is None:
        return None
    g = group.astype(np.int64, copy=False)
    lo = int(s.min())  # (Python integers: no wrap past 2**63)
    width = max(int(e.max()), int(s.max())) - lo + 1
    g_lo, g_width = int(g.min()), int(g.max()) - int(g.min()) + 1
    if g_width * width * 4 >= 2**62:
        return None
    k_enter = ((g - g_lo) * width + (s - lo)) * 4 + ce
    k_leave = np.where(zero, k_enter, ((g - g_lo) * width + (e - lo)) * 4 + cl)
    return k_enter, k_leave


def _arranged_order(
    packed: tuple[np.ndarray, np.ndarray], rank: np.ndarray, zero: np.ndarray
) -> np.ndarray:
    """:func:`_stream_order` by one stable sort of the packed keys: the Leaves of
    intervals longer than zero laid out first in decreasing rank (inner first
    where they tie), then the Enters in rank order, each zero-length interval's
    Leave right after its Enter, so that ties keep the sub-order."""
    k_enter, k_leave = packed
    n = rank.shape[0]
    order = np.empty(n, dtype=np.int64)
    order[rank] = np.arange(n)
    desc = order[::-1]
    longer = desc[~zero[desc]]
    m = longer.size
    z = zero[order]
    at = m + np.arange(n) + np.cumsum(z) - z  # where each Enter goes
    seq = np.empty(2 * n, dtype=np.int64)
    key = np.empty(2 * n, dtype=np.int64)
    seq[:m], key[:m] = n + longer, k_leave[longer]
    seq[at], key[at] = order, k_enter[order]
    zs = order[z]
    seq[at[z] + 1], key[at[z] + 1] = n + zs, k_enter[zs]
    return seq[np.argsort(key, kind="stable")]


def _interval_stream(
    group: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    rank: np.ndarray,
    with_stream: bool = False,
) -> _Stream:
    """For ``"clamp"``: the stream (:func:`_stream_order`), each interval's level
    and parent (the last Enter one level up before it), and which are settled.
    ``stream`` is made only ``with_stream`` (the sort keys and positions are freed
    as soon as they are used: this is the nester's peak of memory)."""
    out = _Stream()
    n = start.shape[0]
    pos = _stream_order(group, start, end, rank)
    small = 2 * n < 2**31 - 1
    ix = np.int32 if small else np.int64
    is_enter = pos < n
    if with_stream:
        out.stream = np.where(is_enter, pos, -1 - (pos - n))
    out.depth = depth = np.cumsum(is_enter.astype(ix) * 2 - 1, dtype=ix)
    del is_enter
    where = np.empty(2 * n, dtype=ix)
    where[pos] = np.arange(2 * n, dtype=ix)
    entered = pos[pos < n]  # the intervals in the order of their Enters
    del pos
    out.e_pos = e_pos = where[:n]
    l_pos = where[n:]
    out.level = level = depth[e_pos]
    out.parent = _last_enter_above(e_pos, level, entered)
    del entered
    after = depth[l_pos]
    if (after == level - 1).all():
        out.settled = None
        return out
    # a Leave of level h + 1 that leaves others open above it: from there until the
    # depth is back at h, the stream is not what a stack walk sees; before and
    # after, it is (the depth moves by 1 a step). Leaves that find the depth below h
    # come after such a Leave, inside its stretch.
    bad = np.flatnonzero(after > level - 1)
    out.settled = ~_tainted(depth, l_pos[bad], level[bad] - 1)[e_pos]
    return out


def _last_enter_above(e_pos: np.ndarray, level: np.ndarray, entered: np.ndarray) -> np.ndarray:
    """Each interval's parent: the last Enter one level up before its Enter (a
    group starts at depth 0), -1 at the top. The intervals in the order of their
    Enters (``entered``) sorted stably by level (a radix sort of small
    integers), so each level's are in stream order; then per level one search
    among the level above."""
    parent = np.full(e_pos.shape[0], -1, dtype=np.int64)
    by_level = entered[stable_order(level[entered])]
    lv = level[by_level]
    bounds = np.searchsorted(lv, np.arange(1, int(lv[-1]) + 2) if lv.size else [])
    for h in range(1, bounds.shape[0] - 1):  # a loop per level, vectorised within
        up = by_level[bounds[h - 1] : bounds[h]]
        here = by_level[bounds[h] : bounds[h + 1]]
        k = np.searchsorted(e_pos[up], e_pos[here]) - 1
        parent[here] = up[np.maximum(k, 0)]
    return parent


def _tainted(depth: np.ndarray, p: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Per stream position, whether it lies in a stretch from a position ``p`` until
    (not including) the first position from ``p`` on where the depth is back at ``h``."""
    m = depth.shape[0]
    span = m + 1
    at = np.argsort(depth, kind="stable")  # positions by (depth, position)
    keys = depth[at].astype(np.int64) * span + at
    q = at[np.minimum(np.searchsorted(keys, h.astype(np.int64) * span + p), m - 1)]
    q = np.where(depth[q] == h, q, m)
    mark = np.zeros(m + 1, dtype=np.int64)
    np.add.at(mark, p, 1)
    np.add.at(mark, q, -1)
    return np.cumsum(mark[:-1]) > 0


def _clamp_to_parents(
    start: np.ndarray, end: np.ndarray, parent: np.ndarray, level: np.ndarray, settled: np.ndarray
) -> np.ndarray:
    """Ends of settled intervals clamped to the (clamped) end of the parent they
    start in, level by level from the top (a loop over levels, vectorised within)."""
    out = end.copy()
    for idx in _by_level(settled, level):
        pe = out[parent[idx]]
        inside = start[idx] < pe
        out[idx] = np.where(inside, np.minimum(out[idx], pe), out[idx])
    return out


def _by_level(settled: np.ndarray, level: np.ndarray) -> list[np.ndarray]:
    """The settled intervals below the top, a level at a time from the top."""
    idx_all = np.flatnonzero(settled & (level > 1))
    lv = level[idx_all]
    by_level = idx_all[np.argsort(lv, kind="stable")]
    bounds = np.searchsorted(np.sort(lv), np.arange(2, int(lv.max(initial=1)) + 2))
    return [by_level[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def _pop_times(group: np.ndarray, start: np.ndarray, end: np.ndarray):
    """For ``"cut"``: whether a longer-than-zero interval of the group starts at
    each of some times (where one does, the intervals that end then are left
    before anything starts; else a zero-length interval starting then goes
    inside them). Returns a function of (group, times); the starts are sorted on
    its first call."""
    sorted_: list[np.ndarray] = []

    def has(g: np.ndarray, t: np.ndarray) -> np.ndarray:
        if not sorted_:
            live = end > start
            ps = np.lexsort((start[live], group[live]))
            sorted_.extend((group[live][ps], start[live][ps]))
        pg, pt = sorted_
        m = g.shape[0]
        gg = np.concatenate([pg, g])
        tt = np.concatenate([pt, t])
        tag = np.concatenate([np.zeros(pg.shape[0], np.int8), np.ones(m, np.int8)])
        o = np.lexsort((tag, tt, gg))
        is_pop = tag[o] == 0
        last = np.maximum.accumulate(np.where(is_pop, np.arange(o.shape[0]), -1))
        q = np.flatnonzero(~is_pop)
        lp = last[q]
        ok = lp >= 0
        ok[ok] = (gg[o][lp[ok]] == gg[o][q[ok]]) & (tt[o][lp[ok]] == tt[o][q[ok]])
        out = np.zeros(m, dtype=bool)
        out[o[q] - pg.shape[0]] = ok
        return out

    return has


def _tie_classes(
    group: np.ndarray,
    ns: np.ndarray,
    ne: np.ndarray,
    trimmed: np.ndarray | None,
    pops: Any,
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """For ``"cut"``: the stream's ``leave_late`` and ``enter_class``. A Leave goes
    after the Enters of its time where no longer-than-zero interval starts then
    (``pops``): that matters only where a zero-length interval or a trimmed one
    starts at that time, so only those Leaves are looked up. A trimmed interval
    enters after the Leaves of its time."""
    zero = ne <= ns
    weak_t = ns[zero] if trimmed is None else np.concatenate([ns[zero], ns[trimmed]])
    late = None
    if weak_t.size:
        w = np.unique(weak_t)
        i = np.minimum(np.searchsorted(w, ne), w.size - 1)
        cand = np.flatnonzero((w[i] == ne) & ~zero)
        del i
        if cand.size:
            late = np.zeros(ns.shape[0], dtype=bool)
            late[cand] = ~pops(group[cand], ne[cand])
    ecls = None
    if trimmed is not None and trimmed.any():
        t = np.flatnonzero(trimmed)
        ecls = np.ones(ns.shape[0], dtype=np.int8)
        ecls[t] = np.where(pops(group[t], ns[t]), 1, 3)
    return late, ecls


def _open_parents(
    group: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    rank: np.ndarray,
    leave_late: np.ndarray | None,
    enter_class: np.ndarray | None,
) -> np.ndarray:
    """For ``"cut"``: each interval's parent in the stream (:func:`_stream_order`):
    the interval entered last before it that has not left yet (the innermost open
    one, whether or not the stream nests), by a pointer-jumping search over the
    Enters (a few rounds, about log2 of the siblings)."""
    n = start.shape[0]
    pos = _stream_order(group, start, end, rank, leave_late, enter_class)
    ix = np.int32 if 2 * n < 2**31 - 1 else np.int64
    eo = pos[pos < n]  # the intervals in the order they enter
    where = np.empty(2 * n, dtype=ix)
    where[pos] = np.arange(2 * n, dtype=ix)
    del pos
    ep, lp = where[:n][eo], where[n:][eo]  # their Enter and Leave positions
    del where
    # the nearest earlier Enter whose Leave comes later; one that fails passes on
    # to its own candidate (what it skipped left before it entered)
    cand = np.arange(-1, n - 1, dtype=np.int64)
    par = np.full(n, -1, dtype=np.int64)
    active = np.arange(1, n, dtype=np.int64)
    while active.size:
        c = cand[active]
        ok = c >= 0
        active, c = active[ok], c[ok]
        found = lp[c] > ep[active]
        par[active[found]] = c[found]
        active, c = active[~found], c[~found]
        cand[active] = cand[c]
    parent = np.full(n, -1, dtype=np.int64)
    parent[eo] = np.where(par >= 0, eo[np.maximum(par, 0)], -1)
    return parent


def _nest_cut(
    group: np.ndarray,
    start: np.ndarray,
    end0: np.ndarray,
    rank: np.ndarray,
    yields: np.ndarray | None,
    tol: float,
) -> dict[str, Any]:
    """:func:`nest_intervals` with ``overlap="cut"``: passes over the stream, each
    resolving what a stack walk would.

    An interval's parent is the innermost interval open at its start (entered
    last, not left): what a stack walk has on top, since an interval that another
    cut is never the latest open (the one that cut it is later and outlives it).
    A pass takes the intervals a level at a time from the top: one that outlives
    its parent by ``tol`` or less is clamped to it; one that outlives it by more
    walks up the open intervals to the first that holds it (``k``). If it gives
    way (``yields``), it starts where the last of those ends and, until it does,
    hangs below them above ``k``, where the walks of later intervals find it (a
    stack walk keeps it there), and what is inside it waits for the next pass;
    else those it passed end where it starts. Passes: one, and one more per level
    of intervals that give way inside one another."""
    n = start.shape[0]
    pops = _pop_times(group, start, end0)
    ns, ne = start, end0  # the starts and ends for the nesting (trimmed; clamped, cut)
    trimmed = None  # the bookkeeping of overlaps, made at the first
    span = n + 1
    while True:
        late, ecls = _tie_classes(group, ns, ne, trimmed, pops)
        parent = _open_parents(group, ns, ne, rank, late, ecls)
        del late, ecls
        # a trimmed interval was placed for good where it started (a later one may cut it)
        has = parent >= 0 if trimmed is None else (parent >= 0) & ~trimmed
        if not (ne[has] > ne[parent[has]]).any():  # nothing outlives its parent
            break
        del has
        if trimmed is None:
            weak = np.zeros(n, dtype=bool) if yields is None else np.asarray(yields, dtype=bool)
            ns, ne = start.copy(), end0.copy()
            rep_start = start.copy()  # the starts reported (trimmed)
            rep = end0.copy()  # the ends reported (cut)
            trimmed = np.zeros(n, dtype=bool)
            hang_at = np.full(n, -1, dtype=np.int64)  # a trimmed interval hangs below this
            hang_k = np.full(n, -1, dtype=np.int64)  # ... and above this one (its parent)
            hangers = np.empty(0, dtype=np.int64)  # trimmed intervals by (hang_at, rank)
            cut_rank = np.full(n, n, dtype=np.int64)  # rank of the interval that cut it
        base = np.where(trimmed, hang_k, parent)  # a walk's next step, but for hangers
        hkey = hang_at[hangers] * span + rank[hangers]
        out = ne.copy()
        waits = np.zeros(n, dtype=bool)  # placed by a stream that changes: the next pass
        hold = np.full(n, -np.inf)  # what starts in it before this waits too
        far_x: list[np.ndarray] = []
        far_k: list[np.ndarray] = []
        far_top: list[np.ndarray] = []
        far_last: list[np.ndarray] = []
        pair_x: list[np.ndarray] = []
        pair_a: list[np.ndarray] = []
        for idx in _by_level(np.ones(n, dtype=bool), _levels(parent)):
            p = parent[idx]
            # after its parent's end moved (clamped in this pass), the stream is
            # not what a stack walk sees: it waits too
            w = waits[p] | (ns[idx] <= hold[p]) | (ns[idx] >= out[p])
            waits[idx] = w
            w |= trimmed[idx]
            idx, p = idx[~w], p[~w]
            pe = out[p]
            ex = out[idx] - pe
            near = (ex > 0) & (ex <= tol)
            out[idx[near]] = pe[near]
            far = idx[ex > tol]
            if not far.size:
                continue
            # up the open intervals it outlives, to the first that holds it
            e, r = out[far], rank[far]
            a = parent[far].copy()
            last = np.full(far.shape[0], -1, dtype=np.int64)
            top = np.full(far.shape[0], -np.inf)
            pend = np.arange(far.shape[0])
            while pend.size:
                aa = a[pend]
                go = aa >= 0
                go[go] = e[pend[go]] - out[aa[go]] > tol
                pend, aa = pend[go], aa[go]
                pair_x.append(far[pend])
                pair_a.append(aa)
                # a hanger cut moves in the stream: what is in it waits
                hold[aa[trimmed[aa] & ~weak[far[pend]]]] = np.inf
                # where it hangs: the one it outlives that ends last (those cut
                # already end before the one that cut them)
                hi = out[aa] >= top[pend]
                last[pend[hi]] = aa[hi]
                top[pend] = np.maximum(top[pend], out[aa])
                nxt = base[aa]
                if hangers.size:  # the latest earlier interval that hangs below it
                    i = np.searchsorted(hkey, aa * span + r[pend]) - 1
                    ok = i >= 0
                    h = hangers[np.maximum(i, 0)]
                    ok &= hang_at[h] == aa
                    nxt = np.where(ok, h, nxt)
                a[pend] = nxt
            has = a >= 0
            out[far[has]] = np.minimum(out[far[has]], out[a[has]])
            # one that gives way enters later: what starts in it before then waits;
            # later walks step from it to its parent
            y = weak[far]
            hold[far[y]] = top[y]
            base[far[y]] = a[y]
            # the hangers one goes under start with it now: what is in them waits
            kk, sx = a[has & ~y], start[far[has & ~y]]
            while kk.size:
                go = trimmed[kk] & (ns[kk] > sx)
                kk, sx = kk[go], sx[go]
                hold[kk] = np.inf
                kk = hang_k[kk]
                go = kk >= 0
                kk, sx = kk[go], sx[go]
            far_x.append(far)
            far_k.append(a)
            far_top.append(top)
            far_last.append(last)
        fx = np.concatenate(far_x) if far_x else np.empty(0, np.int64)
        fk = np.concatenate(far_k) if far_k else np.empty(0, np.int64)
        ftop = np.concatenate(far_top) if far_top else np.empty(0)
        flast = np.concatenate(far_last) if far_last else np.empty(0, np.int64)
        new_ne = out
        new_ns = ns.copy()
        # those that give way: start where the last they outlive ends; hang below it
        t = weak[fx]
        ty = fx[t]
        new_ns[ty] = rep_start[ty] = ftop[t]
        trimmed[ty] = True
        hang_at[ty], hang_k[ty] = flast[t], fk[t]
        # the others: what they passed ends where they start
        if pair_x:
            px, pa = np.concatenate(pair_x), np.concatenate(pair_a)
            ok = ~weak[px]
            px, pa = px[ok], pa[ok]
            np.minimum.at(new_ne, pa, start[px])
            np.minimum.at(rep, pa, start[px])
            np.minimum.at(cut_rank, pa, rank[px])
            new_ns[pa] = np.minimum(new_ns[pa], new_ne[pa])  # a hanger cut: zero-length
        # ... and the hangers they went under (or above) now run from their start
        c = ~t
        kx, sx = fk[c], start[fx[c]]
        while kx.size:
            go = kx >= 0
            go[go] = trimmed[kx[go]] & (new_ns[kx[go]] > sx[go])
            kx, sx = kx[go], sx[go]
            np.minimum.at(new_ns, kx, sx)
            kx = hang_k[kx]
        if np.array_equal(new_ne, ne) and np.array_equal(new_ns, ns):
            has = (parent >= 0) & ~trimmed
            k = int(np.flatnonzero(has)[np.argmax(ne[has] > ne[parent[has]])])
            raise NestingError("intervals that cutting does not nest", k)
        ne, ns = new_ne, new_ns
        if ty.size:
            hangers = np.flatnonzero(trimmed)
            hangers = hangers[np.lexsort((rank[hangers], hang_at[hangers]))]
    if trimmed is None:  # nothing overlapped
        return {
            "stream": None,
            "start": start,
            "end": end0,
            "parent": parent,
            "level": _levels(parent),
            "clamped": np.zeros(n, dtype=bool),
            "cut": np.zeros(n, dtype=bool),
            "cut_by": np.full(n, -1, dtype=np.int64),
            "trimmed": np.zeros(n, dtype=bool),
        }
    order = np.argsort(rank)
    cut = cut_rank < n
    cut_by = np.full(n, -1, dtype=np.int64)
    cut_by[cut] = order[cut_rank[cut]]
    # a trimmed interval is under the one it hung above (the stream has those cut
    # before they started as zero-length where they were cut, not always there)
    parent = np.where(trimmed, hang_k, parent)
    return {
        "stream": None,
        "start": rep_start,
        "end": rep,
        "parent": parent,
        "level": _levels(parent),
        "clamped": rep < end0,
        "cut": cut,
        "cut_by": cut_by,
        "trimmed": trimmed,
    }


def _nest_outside(
    group: np.ndarray, start: np.ndarray, end: np.ndarray, order: np.ndarray
) -> dict[str, Any]:
    """:func:`nest_intervals` with ``overlap="outside"``: over the intervals in
    ``order``, each looks for the nearest earlier one of its group that ends no
    earlier, jumping along the candidates' own candidates; one that no earlier
    interval of its group outlasts is top-level at once."""
    n = start.shape[0]
    th, e = group[order], end[order]
    cand = np.arange(n, dtype=np.int64) - 1
    parent_sorted = np.full(n, -1, dtype=np.int64)
    # none before it in its group ends as late: a top-level interval, settled at once
    reach = pd.Series(e).groupby(th).cummax().groupby(th).shift(1).to_numpy(dtype=np.float64)
    active = np.flatnonzero(reach >= e)
    while active.size:
        c = cand[active]
        ok = c >= 0
        ok[ok] = th[c[ok]] == th[active[ok]]
        active, c = active[ok], c[ok]
        found = e[c] >= e[active]
        parent_sorted[active[found]] = c[found]
        active, c = active[~found], c[~found]
        cand[active] = cand[c]
    parent = np.full(n, -1, dtype=np.int64)
    has = parent_sorted >= 0
    parent[order[has]] = order[parent_sorted[has]]
    return {
        "stream": None,
        "start": start,
        "end": end,
        "parent": parent,
        "level": _levels(parent),
        "clamped": np.zeros(n, dtype=bool),
    }


def _levels(parent: np.ndarray) -> np.ndarray:
    """Depth of each node of a forest (1 at the top), by pointer doubling."""
    d = (parent >= 0).astype(np.int64)
    up = parent.copy()
    while True:
        m = np.flatnonzero(up >= 0)
        if not m.size:
            break
        u = up[m]
        d_new, up_new = d[u], up[u]
        d[m] += d_new
        up[m] = up_new
    return d + 1


__all__ = [
    "OVERLAP_POLICIES",
    "NestingError",
    "nest_enter_leave",
    "nest_intervals",
    "stacks_to_tree",
]
