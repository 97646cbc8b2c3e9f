"""TimelineView: the intervals of a run over time, one lane per profile (anywidget + D3).

Time runs left to right; each lane (a rank, a thread) stacks the calling-context
levels ``0..depth`` of the :class:`~cctviz.Timeline`'s tree. Python decides the
level of detail: the visible ``window`` is cut into ``bins`` pixel-wide bins and,
per (lane, level), each bin shows the context that covers most of it; adjacent
bins of one context merge into one rectangle. So the browser receives at most
``bins`` rectangles per (lane, level), however many events the window holds
(:func:`lod_rects`, vectorised: no loop per event).

The figure says what ran:

- rectangles are coloured by context (:func:`context_colors`): a phase
  (forward, backward, optimizer, data: fixed colours) or the first level of the
  program's own contexts, lighter shades inside it; frames, steps and the time
  outside the steps take neutral colours; the legend names the contexts, the
  front end names the rectangles where the names fit (cut in the middle as the
  trees' labels are);
- the time outside the steps (the start-up, the end) is drawn apart: where it
  is long, in a segment of the time axis of its own, compressed, after (or
  before) a break (:func:`step_segments`);
- communication calls (kind ``comm``) are sent apart, merged where their pixels
  overlap (:func:`collective_runs`), with the part of their time spent waiting
  (from the matched calls, :func:`cctviz.ops.collectives.instances`): the front
  end draws them at least a few pixels wide, the wait hatched, then the transfer;
- a collective call among two ranks or more marks the lane of its
  ``last_to_arrive`` (none for one rank or one stream), saying whose ranks it
  orders ("last of train's 2 ranks to arrive");
- a workflow's timeline states its :func:`cctviz.workflow.summary` (the
  bottleneck and why) and hatches the contexts where it counts a component
  blocked; counter tracks are folded per component (``counter_bands``).

Brushing (a drag along the time axis) sets ``brush``; Python changes ``window``
only when the user zooms (the wheel, or "Zoom to brush"). A TimelineView linked
with a CCTView (:func:`cctviz.link`) rescopes the CCTView to the brushed window.
The contract with the front end (``js/timeline/``) is in
``cctviz/views/CONTRACT.md``.

Example:
    >>> import pandas as pd, cctviz
    >>> tree = cctviz.Tree.from_parents([-1, 0, 0], ["main", "solve", "io"],
    ...                                 kind=["function", "function", "io"])
    >>> ev = pd.DataFrame({"profile": [0, 0, 0, 1, 1], "node": [0, 1, 2, 0, 1],
    ...                    "start": [0, 10, 60, 0, 5], "end": [100, 50, 90, 80, 75]})
    >>> view = TimelineView(cctviz.Timeline(tree, ev), bins=10)
    >>> view.window, view._data["lanes"]
    ((0.0, 1e-07), ['profile 0', 'profile 1'])
    >>> view.rects[["lane", "level", "name", "b0", "b1"]].values.tolist()[:4]
    [[0, 0, 'main', 0, 10], [0, 1, 'solve', 1, 5], [0, 1, 'io', 6, 9], [1, 0, 'main', 0, 8]]
    >>> view.brush = [2e-8, 6e-8]; view.brushed_window
    (2e-08, 6e-08)
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import traitlets

from ..model._algo import children_csr, stable_order
from ..model.formats import K_COMM, K_STEP, OUTSIDE
from ..model.nodeset import NodeSet
from ..model.timeline import Timeline, profile_ranks
from ..ops.behaviour import rank_groups
from .base import (
    NodeSelection,
    ProfileIds,
    View,
    data_argument,
    f32,
    i32,
    register_view,
    share_space,
)

#: the events' times (ns) per second
PER_S = 1e9
#: at most this many collective markers go to the browser (the calls whose
#: last_to_arrive kept the others waiting longest: ``last_by``)
MAX_MARKERS = 2000
#: profile columns that group the lanes, outermost first (those with more than
#: one value; a lane's label names its groups: "sim · rank 0")
LANE_GROUPS = ("component", "host", "run")
#: beyond this many events the first view goes out before its collective markers
#: (matching every call across the ranks takes a while at 10^7 events): the front
#: end asks for them once it has drawn (``_marks_wanted``) and they follow
MARKS_AFTER = 2_000_000


#: beyond this many lanes (``max_lanes``) the ranks are grouped by behaviour
#: (:func:`cctviz.ops.behaviour.rank_groups`): a group's lane draws its most
#: typical rank, with bands of its ranks' communication share under it
MAX_LANES = 64
#: the context levels whose time shares describe a rank's behaviour
BEHAVIOUR_LEVELS = 3
#: at most this many contexts (the longest) describe a rank's behaviour
BEHAVIOUR_CONTEXTS = 48
#: a group lane's band has at most this many bins (the view's bins, coarsened)
BAND_BINS = 250


#: at most this many (cell, node) sums are kept in one dense table by
#: :func:`lod_rects` (8 bytes each); beyond it the sums are sorted instead
DENSE_CELLS = 1 << 22

#: node kinds drawn as frames in neutral colours (the roots, threads, processes)
FRAME_KINDS = ("root", "thread", "process")
#: the kind of a training step's node ("step", "(warm-up)", "(outside steps)")
STEP_KIND = K_STEP
#: the node of the time outside any step: the start-up (and the teardown)
STARTUP = OUTSIDE
#: the kind of communication calls (collectives, send, recv): drawn as wait + transfer
COMM_KIND = K_COMM
#: what a node is drawn as (``_data["node_role"]``)
ROLE_CONTEXT, ROLE_FRAME, ROLE_STEP, ROLE_STARTUP, ROLE_COMM = range(5)
#: phases of a runtime run and their fixed colour slots (``GROUP_COLORS`` in
#: js/timeline/scene.js): forward and backward always differ
PHASE_SLOTS = {"forward": 0, "backward": 1, "optimizer": 2, "data": 3, "other": -1}
#: colour slots of the front end's palette (slot -1: grey)
N_SLOTS = 11
#: the time outside the steps (the start-up before the first, the end after the
#: last) is drawn at most this many times as wide as the steps: a longer part is
#: compressed into a segment of its own, after (or before) a break in the time axis
OUTSIDE_SHARE = 0.15


def _covering(row, node, ps, pe, bins, cells):
    """Per cell: the node of an interval that covers the cell's bin whole (-1
    if none). Of several, the one that started last; of nested ones that began
    before, the one reaching furthest."""
    owner = np.full(cells, -1, dtype=np.int64)
    cand = np.flatnonzero(pe - ps >= 1.0)  # shorter ones cover no bin whole
    f0 = np.ceil(ps[cand]).astype(np.int64)
    f1 = np.floor(pe[cand]).astype(np.int64)
    whole = f1 > f0
    if not whole.any():
        return owner
    k = cand[whole]
    c0 = row[k] * bins + f0[whole]
    c1 = row[k] * bins + f1[whole]  # exclusive
    order = np.argsort(c0, kind="stable")
    k, c0, c1 = k[order], c0[order], c1[order]
    idx = np.full(cells, -1, dtype=np.int64)
    idx[c0] = np.arange(k.size)  # last of equal starts wins
    last = np.maximum.accumulate(idx)
    reach = np.maximum.accumulate(c1)  # c1 sorted by start: furthest end so far
    far = np.zeros(k.size, dtype=np.int64)
    best = np.flatnonzero(np.r_[True, c1[1:] > reach[:-1]])
    far[best] = best
    far = np.maximum.accumulate(far)
    cell = np.arange(cells)
    ok = last >= 0
    j = np.where(ok, last, 0)
    inside = ok & (cell < c1[j])
    jf = far[j]
    inside_far = ok & ~inside & (cell < c1[jf])
    pick = np.where(inside, j, np.where(inside_far, jf, -1))
    return np.where(pick >= 0, node[k[np.maximum(pick, 0)]], -1)


def _numbered_within_level(level, node, n_levels):
    """Nodes numbered within their level, so that a (cell, node) table is only
    cells x (the most nodes on one level) wide: ``(local number per interval,
    ids[level, local] -> node, width)``, or None if a node sits on several levels."""
    level_of = np.full(int(node.max()) + 1, -1, dtype=np.int64)
    level_of[node] = level
    if not np.array_equal(level_of[node], level):
        return None
    used = np.flatnonzero(level_of >= 0)
    by_level = used[np.argsort(level_of[used], kind="stable")]
    lv = level_of[by_level]
    rank = np.arange(by_level.size) - np.searchsorted(lv, lv)
    local_of = np.zeros(level_of.size, dtype=np.int64)
    local_of[by_level] = rank
    ids = np.full((n_levels, int(rank.max()) + 1), -1, dtype=np.int64)
    ids[lv, rank] = by_level
    return local_of[node], ids, ids.shape[1]


def _most_covering(row, level, node, ps, pe, bins, cells, n_levels):
    """Per cell: the node whose intervals cover most of the cell's bin, counting
    only the bins an interval touches in part (its first and its last) and the
    share covered. Returns ``(node or -1, share)``. Sums with ``np.bincount``
    over a dense (cell, node-of-its-level) table, or sorted keys when that table
    would be too large. In-place arithmetic: at 10^7 intervals each pass counts."""
    numbered = _numbered_within_level(level, node, n_levels)
    if numbered is None:  # a node on several levels: number the (level, node) pairs
        size = int(node.max()) + 1
        pairs, pair = np.unique(level * size + node, return_inverse=True)
        winner, share = _most_covering(row, level, pair, ps, pe, bins, cells, n_levels)
        return np.where(winner >= 0, pairs[winner] % size, -1), share
    loc, ids, width = numbered
    b0 = np.floor(ps)
    np.minimum(b0, bins - 1, out=b0)  # the first bin touched
    first = b0 + 1.0
    np.minimum(first, pe, out=first)  # where the interval leaves its first bin
    multi = np.flatnonzero(first < pe)  # intervals touching more than one bin
    first -= ps
    key0 = row * bins
    key0 += b0.astype(np.int64)
    key0 *= width
    key0 += loc
    b1 = np.minimum(np.ceil(pe[multi]).astype(np.int64) - 1, bins - 1)  # the last
    last = pe[multi] - b1
    key1 = (row[multi] * bins + b1) * width + loc[multi]
    if cells * width <= DENSE_CELLS:
        n = cells * width
        sums = np.bincount(key0, first, minlength=n)
        sums += np.bincount(key1, last, minlength=n)
        table = sums.reshape(cells, width)
        pick = table.argmax(axis=1)
        amount = table[np.arange(cells), pick]
    else:
        keys, inverse = np.unique(np.r_[key0, key1], return_inverse=True)
        sums = np.bincount(inverse, np.r_[first, last])
        cell_of = keys // width
        top = np.lexsort((-sums, cell_of))
        top = top[np.r_[True, cell_of[top][1:] != cell_of[top][:-1]]]
        pick = np.zeros(cells, dtype=np.int64)
        amount = np.zeros(cells)
        pick[cell_of[top]] = keys[top] % width
        amount[cell_of[top]] = sums[top]
    level_of_cell = (np.arange(cells) // bins) % n_levels
    winner = np.where(amount > 0, ids[level_of_cell, pick], -1)
    return winner, np.minimum(amount, 1.0)


def lod_rects(
    lane: np.ndarray,
    level: np.ndarray,
    node: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    t0: float,
    t1: float,
    bins: int,
    n_levels: int,
) -> pd.DataFrame:
    """The level of detail of intervals in the window ``[t0, t1)``: per (lane,
    level) and pixel bin, the node covering most of the bin; runs of bins of one
    node merged. Vectorised: a few passes over the intervals, sums by
    ``np.bincount``.

    A bin fully covered by an interval belongs to it (if several intervals of one
    level cover it whole, the one that started last); any other bin goes to the
    node whose intervals cover most of it (summed). Bins nothing covers are
    empty.

    Args:
        lane, level, node, start, end: one entry per interval (``level`` in
            ``[0, n_levels)``, the same for every interval of a node; times in
            any unit, the same as ``t0``/``t1``; integer times with integer
            ``t0`` are subtracted exactly, as epoch nanoseconds need).
        bins: bins across the window.

    Returns:
        rows ``lane``, ``level``, ``node``, ``b0``, ``b1`` (bins ``[b0, b1)``)
        and ``cover`` (the share of those bins the rectangle's node covers),
        ordered by lane, level, b0.

    Example:
        >>> r = lod_rects(np.array([0, 0]), np.array([0, 0]), np.array([5, 6]),
        ...               np.array([0.0, 4.5]), np.array([4.4, 10.0]), 0, 10, 10, 1)
        >>> r[["node", "b0", "b1"]].values.tolist()
        [[5, 0, 4], [6, 4, 10]]
    """
    lane = np.asarray(lane, dtype=np.int64)
    level = np.asarray(level, dtype=np.int64)
    node = np.asarray(node, dtype=np.int64)
    s, e = np.asarray(start), np.asarray(end)
    keep = (e > t0) & (s < t1) & (e > s)
    if not keep.all():
        lane, level, node, s, e = lane[keep], level[keep], node[keep], s[keep], e[keep]
    empty = pd.DataFrame(
        {c: np.empty(0, dtype=np.int64) for c in ("lane", "level", "node", "b0", "b1")}
    ).assign(cover=np.empty(0))
    if not lane.size:
        return empty
    per_bin = bins / (t1 - t0)
    ps = np.asarray(s - t0, dtype=np.float64)  # positions in bins
    ps *= per_bin
    np.maximum(ps, 0.0, out=ps)
    pe = np.asarray(e - t0, dtype=np.float64)
    pe *= per_bin
    np.minimum(pe, float(bins), out=pe)
    row = lane * n_levels
    row += level
    n_rows = int(row.max()) + 1
    cells = n_rows * bins
    owner = _covering(row, node, ps, pe, bins, cells)
    winner, cover = _most_covering(row, level, node, ps, pe, bins, cells, n_levels)
    has = owner >= 0
    winner[has] = owner[has]
    cover[has] = 1.0
    return _runs(winner, cover, n_rows, bins, n_levels, empty)


def _runs(winner, cover, n_rows, bins, n_levels, empty):
    """Runs of bins of one node per row, as rectangles (see :func:`lod_rects`)."""
    cells = n_rows * bins
    w = winner.reshape(n_rows, bins)
    change = np.ones_like(w, dtype=bool)
    change[:, 1:] = w[:, 1:] != w[:, :-1]
    r, b = np.nonzero(change & (w >= 0))
    if not r.size:
        return empty
    flat = r * bins + b
    # end of each run: the next change in the row (or the row's end)
    ch_r, ch_b = np.nonzero(change)
    ch_flat = ch_r * bins + ch_b
    nxt = np.searchsorted(ch_flat, flat, side="right")
    nxt_flat = np.r_[ch_flat, cells][nxt]
    end_b = np.where(nxt_flat // bins == r, nxt_flat % bins, bins)
    end_b = np.where(nxt < ch_flat.size, end_b, bins)
    csum = np.r_[0.0, np.cumsum(cover)]
    share = (csum[r * bins + end_b] - csum[flat]) / (end_b - b)
    return pd.DataFrame(
        {
            "lane": r // n_levels,
            "level": r % n_levels,
            "node": w[r, b],
            "b0": b,
            "b1": end_b,
            "cover": share,
        }
    )


def _by_series_then_time(series, ts, value, n_series):
    """The samples ordered by series, then time (stable: equal times keep their
    order). Two stable sorts, each skipped when not needed: by time only if
    ``ts`` is not already in order (a view keeps its counters by time), by
    series with a radix sort (``stable_order``: the ids as int16 where they fit)."""
    if ts.size > 1 and not (ts[1:] >= ts[:-1]).all():
        order = np.argsort(ts, kind="stable")
        series, ts, value = series[order], ts[order], value[order]
    if n_series > 1:
        order = stable_order(series)
        series, ts, value = series[order], ts[order], value[order]
    return series, ts, value


def counter_peaks(
    series: np.ndarray,
    ts: np.ndarray,
    value: np.ndarray,
    t0: float,
    t1: float,
    bins: int,
    n_series: int,
    until: np.ndarray | None = None,
    presorted: bool = False,
) -> np.ndarray:
    """The level of detail of sampled series (counters) in the window ``[t0, t1)``:
    per (series, pixel bin) the highest value the series holds in the bin, so no
    peak is lost however many samples fall in one pixel. A sample's value holds
    until the series' next sample (memory stays allocated until it is freed), so a
    bin with no sample shows the value carried into it; NaN before a series' first
    sample, and after ``until[s]`` (where its process ended: a value is not
    carried past it). Vectorised: one sort, ``np.maximum.reduceat`` and a forward fill.

    Args:
        series: the series of each sample, in ``[0, n_series)``.
        ts, value: the samples' times (the unit of ``t0``/``t1``) and values.
        bins: bins across the window.
        until: per series, the time after which it holds no value (None: to the end).
        presorted: the samples are already by series, then time (the windows of
            one refresh sort them once).

    Returns:
        float64 ``(n_series, bins)``.

    Example:
        >>> counter_peaks(np.array([0, 0, 0, 1]), np.array([1, 2, 7, 3]),
        ...               np.array([5.0, 9.0, 1.0, 4.0]), 0, 10, 5, 2).tolist()
        [[5.0, 9.0, 9.0, 9.0, 1.0], [nan, 4.0, 4.0, 4.0, 4.0]]
        >>> counter_peaks(np.array([0, 0, 0, 1]), np.array([1, 2, 7, 3]),
        ...               np.array([5.0, 9.0, 1.0, 4.0]), 0, 10, 5, 2, until=np.array([10, 5])).tolist()
        [[5.0, 9.0, 9.0, 9.0, 1.0], [nan, 4.0, 4.0, nan, nan]]
    """
    series = np.asarray(series, dtype=np.int64)
    ts, value = np.asarray(ts), np.asarray(value, dtype=np.float64)
    if not presorted:
        series, ts, value = _by_series_then_time(series, ts, value, n_series)
    ext = np.full((n_series, bins + 1), np.nan)  # column 0: the value at t0
    before = np.flatnonzero(ts < t0)
    if before.size:  # the last sample before the window, per series
        s = series[before]
        last = before[np.r_[s[1:] != s[:-1], True]]
        ext[series[last], 0] = value[last]
    peak = np.full(n_series * bins, np.nan)
    inside = np.flatnonzero((ts >= t0) & (ts < t1))
    if inside.size:
        b = np.floor((ts[inside] - t0) * (bins / (t1 - t0))).astype(np.int64)
        cell = series[inside] * bins + np.minimum(b, bins - 1)  # sorted: by series, ts
        starts = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])
        v = value[inside]
        peak[cell[starts]] = np.maximum.reduceat(v, starts)
        ends = np.r_[starts[1:], cell.size] - 1  # a bin's last sample: what it carries on
        flat = ext[:, 1:].reshape(-1).copy()
        flat[cell[starts]] = v[ends]
        ext[:, 1:] = flat.reshape(n_series, bins)
    # the value carried into bin k: the last known at a column <= k of ``ext``
    idx = np.where(np.isnan(ext), -1, np.arange(bins + 1))
    np.maximum.accumulate(idx, axis=1, out=idx)
    carried = np.take_along_axis(ext, np.maximum(idx, 0), axis=1)
    carried[idx < 0] = np.nan
    out = np.fmax(peak.reshape(n_series, bins), carried[:, :bins])
    if until is not None:  # a bin that starts after the series' end holds nothing
        bin_start = t0 + np.arange(bins) * ((t1 - t0) / bins)
        out[bin_start[None, :] > np.asarray(until, dtype=np.float64)[:, None]] = np.nan
    return out


def per_profile(values: np.ndarray, profile: np.ndarray, n: int, how: str) -> np.ndarray:
    """The ``"max"`` or ``"min"`` of ``values`` per profile id in ``[0, n)``
    (-inf/inf where a profile has none): by ``reduceat`` over the runs of one
    profile where the ids are sorted (events are, by profile), else a groupby.
    (``np.maximum.at`` takes half a second at 10^7 events.)

    Example:
        >>> per_profile(np.array([3.0, 5.0, 1.0]), np.array([0, 0, 2]), 3, "max").tolist()
        [5.0, -inf, 1.0]
        >>> per_profile(np.array([3.0, 5.0, 1.0]), np.array([2, 0, 2]), 3, "min").tolist()
        [5.0, inf, 1.0]
    """
    out = np.full(n, -np.inf if how == "max" else np.inf)
    profile = np.asarray(profile, dtype=np.int64)
    if not profile.size:
        return out
    if (profile[1:] >= profile[:-1]).all():
        starts = np.flatnonzero(np.r_[True, profile[1:] != profile[:-1]])
        op = np.maximum if how == "max" else np.minimum
        out[profile[starts]] = op.reduceat(np.asarray(values, dtype=np.float64), starts)
    else:
        g = pd.Series(np.asarray(values, dtype=np.float64)).groupby(profile).agg(how)
        out[g.index.to_numpy()] = g.to_numpy()
    return out


def step_segments(
    a: float, b: float, first: float, last: float, bins: int, share: float = OUTSIDE_SHARE
) -> list[tuple[float, float, int]]:
    """The window ``[a, b)`` as segments ``(t0, t1, bins)`` of uniform bins: the
    steps (``[first, last)``) at their scale, the time before them (the
    start-up) and after them (the end) each compressed into a segment of its own
    where it is longer than ``share`` times the steps' time in the window (it is
    then drawn that wide). One segment when nothing needs compressing.

    Example:
        >>> step_segments(0, 100, 80, 99, 100)  # a long start-up, a short end
        [(0, 80, 12), (80, 100, 88)]
        >>> step_segments(0, 100, 10, 20, 100)  # both long
        [(0, 10, 12), (10, 20, 76), (20, 100, 12)]
        >>> step_segments(0, 100, 5, 99, 100), step_segments(0, 100, float("inf"), -1.0, 100)
        ([(0, 100, 100)], [(0, 100, 100)])
    """
    lo, hi = max(a, first), min(b, last)
    if bins < 20 or not hi > lo:
        return [(a, b, bins)]
    cap = share * (hi - lo)
    before, after = lo - a > cap, b - hi > cap
    if not (before or after):
        return [(a, b, bins)]
    t0 = lo if before else a
    t1 = hi if after else b
    weights = [cap] * before + [t1 - t0] + [cap] * after
    n = [max(1, round(bins * w / sum(weights))) for w in weights]
    mid = int(before)
    n[mid] = bins - (sum(n) - n[mid])
    edges = [a] * before + [t0, t1] + [b] * after
    return [(edges[k], edges[k + 1], n[k]) for k in range(len(n))]


def _window_value(value: Any) -> tuple[float, float]:
    try:
        t0, t1 = (float(v) for v in value)
    except (TypeError, ValueError):
        raise traitlets.TraitError(
            f"window: expected (t0, t1) in seconds from the timeline's start, got {value!r}"
        ) from None
    if not (math.isfinite(t0) and math.isfinite(t1)) or t1 <= t0:
        raise traitlets.TraitError(f"window: need finite t0 < t1 (seconds), got ({t0}, {t1})")
    return (t0, t1)


def context_colors(
    tree: Any, weight: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str], list[int]]:
    """What each node of ``tree`` is drawn as, and its colour by context.

    Frames (roots with children, threads, processes), steps and the start-up
    (``(outside steps)``) take neutral colours; communication calls (kind
    ``comm``) are drawn as wait and transfer. Every other node takes the colour
    of its *group*: the name of its outermost ancestor that is none of those
    (itself, at the top): in a runtime run the phase (``forward``,
    ``backward``, ``optimizer``, ``data``; fixed colours), elsewhere the first
    level of the program's own contexts. Inside a group, a node's shade
    alternates with its place among its siblings (the group's top node takes
    the full colour), so neighbours on a level differ.

    Args:
        tree: a :class:`~cctviz.Tree` (ids in pre-order).
        weight: per node, the time it holds (orders the groups that are not
            phases: the longest take the first colours); None: tree order.

    Returns:
        ``(role, group, tint, groups, slots)``: per node its role
        (``ROLE_*``), its group (index into ``groups``, -1 for none) and its
        shade (0 full, 1 or 2 lighter); per group, its colour slot (-1: grey).
        A name keeps its colour in every window of the timeline.

    Example:
        >>> import cctviz
        >>> t = cctviz.Tree.from_parents(
        ...     [-1, 0, 0, 2, 3, 3, 2, 6], ["train.py", "(outside steps)", "step", "forward",
        ...     "wte", "h.0", "backward", "all_reduce"],
        ...     kind=["root", "step", "step", "phase", "module", "module", "phase", "comm"])
        >>> role, group, tint, groups, slots = context_colors(t)
        >>> role.tolist(), group.tolist(), tint.tolist()
        ([1, 3, 2, 0, 0, 0, 0, 4], [-1, -1, -1, 0, 0, 0, 1, 1], [0, 0, 0, 0, 1, 2, 0, 1])
        >>> groups, slots
        (['forward', 'backward'], [0, 1])
    """
    n = len(tree)
    names = tree.nodes["name"].astype(str).to_numpy()
    kinds = tree.nodes["kind"]
    kind = kinds.astype(object).where(kinds.notna(), "").astype(str).to_numpy()
    parent = np.asarray(tree.parent, dtype=np.int64)
    depth = np.asarray(tree.depth, dtype=np.int64)
    has_kids = ~np.asarray(tree.is_leaf)
    role = np.full(n, ROLE_CONTEXT, dtype=np.int64)
    role[kind == COMM_KIND] = ROLE_COMM
    role[np.isin(kind, FRAME_KINDS) | ((depth == 0) & has_kids)] = ROLE_FRAME
    role[kind == STEP_KIND] = ROLE_STEP
    role[names == STARTUP] = ROLE_STARTUP
    # communication calls are drawn as wait and transfer: no group of their own
    neutral = np.isin(role, (ROLE_FRAME, ROLE_STEP, ROLE_STARTUP, ROLE_COMM))
    top = np.full(n, -1, dtype=np.int64)
    for idx in tree.levels:  # a level at a time: parents before children
        idx = np.asarray(idx, dtype=np.int64)
        p = parent[idx]
        above = np.where(p >= 0, top[np.maximum(p, 0)], -1)
        top[idx] = np.where(above >= 0, above, np.where(neutral[idx], -1, idx))
    # shades: the top node full; below it, alternating with the place among siblings
    order, start = children_csr(parent)
    sibling = np.empty(n, dtype=np.int64)
    sibling[order] = np.arange(n) - start[parent[order] + 1]
    tint = np.where(top == np.arange(n), 0, 1 + sibling % 2)
    tint[top < 0] = 0
    # groups: the names of the top nodes; phases first, then the heaviest
    has = top >= 0
    top_names = names[top[has]]
    tops = np.unique(top[has])
    w = np.zeros(n) if weight is None else np.asarray(weight, dtype=np.float64)
    frame = pd.DataFrame({"name": names[tops], "w": w[tops], "first": tops})
    agg = frame.groupby("name", sort=False).agg(w=("w", "sum"), first=("first", "min"))
    agg["later"] = [str(x) not in PHASE_SLOTS for x in agg.index]
    agg["phase_order"] = [list(PHASE_SLOTS).index(x) if x in PHASE_SLOTS else 0 for x in agg.index]
    agg = agg.sort_values(
        ["later", "phase_order", "w", "first"], ascending=[True, True, False, True]
    )
    groups = [str(x) for x in agg.index]
    reserved = {PHASE_SLOTS[g] for g in groups if g in PHASE_SLOTS}
    free = iter([s for s in range(N_SLOTS) if s not in reserved])
    slots = [PHASE_SLOTS[g] if g in PHASE_SLOTS else next(free, -1) for g in groups]
    code = pd.Index(groups).get_indexer(top_names)
    group = np.full(n, -1, dtype=np.int64)
    group[has] = code
    return role, group, tint, groups, slots


def collective_runs(
    lane: np.ndarray,
    level: np.ndarray,
    node: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    wait: np.ndarray,
    t0: float,
    t1: float,
    bins: int,
    n_levels: int,
) -> pd.DataFrame:
    """Communication calls in the window ``[t0, t1)`` as runs of pixel bins per
    (lane, level): calls whose bins overlap merge into one run, which keeps how
    many calls it holds, their time in the window and the part of it spent
    waiting (a call waits from its start for ``wait``; NaN: not known). At
    most one run per bin, however many calls; the front end widens each run to
    a few pixels. Vectorised: one sort, ``reduceat``.

    Returns:
        rows ``lane``, ``level``, ``node`` (the longest call's), ``b0``, ``b1``,
        ``calls``, ``time`` and ``waited`` (in the unit of the times; ``waited``
        NaN when a call of the run has no known wait), ordered by lane, level, b0.

    Example:
        >>> r = collective_runs(np.array([0, 0, 0]), np.array([1, 1, 1]), np.array([7, 7, 8]),
        ...                     np.array([10.0, 12.0, 60.0]), np.array([14.0, 15.0, 70.0]),
        ...                     np.array([3.0, 1.0, np.nan]), 0, 100, 20, 2)
        >>> r[["node", "b0", "b1", "calls", "time", "waited"]].values.tolist()
        [[7.0, 2.0, 3.0, 2.0, 7.0, 4.0], [8.0, 12.0, 14.0, 1.0, 10.0, nan]]
    """
    lane = np.asarray(lane, dtype=np.int64)
    level = np.asarray(level, dtype=np.int64)
    s = np.asarray(start, dtype=np.float64)
    e = np.asarray(end, dtype=np.float64)
    keep = (e > t0) & (s < t1) & (e >= s)
    lane, level, s, e = lane[keep], level[keep], s[keep], e[keep]
    node = np.asarray(node, dtype=np.int64)[keep]
    wait = np.asarray(wait, dtype=np.float64)[keep]
    cols = ("lane", "level", "node", "b0", "b1", "calls", "time", "waited")
    if not lane.size:
        return pd.DataFrame(
            {c: np.empty(0, dtype=np.int64 if c != "time" else float) for c in cols}
        )
    a, b = np.maximum(s, t0), np.minimum(e, t1)
    took = b - a
    waited = np.clip(np.minimum(s + wait, b) - a, 0.0, None)  # NaN stays NaN
    per_bin = bins / (t1 - t0)
    b0 = np.minimum(np.floor((a - t0) * per_bin).astype(np.int64), bins - 1)
    b1 = np.maximum(np.ceil((b - t0) * per_bin).astype(np.int64), b0 + 1)
    np.minimum(b1, bins, out=b1)
    row = lane * n_levels + level
    order = np.lexsort((b0, row))
    row, b0, b1 = row[order], b0[order], b1[order]
    k0 = row * (bins + 1) + b0
    k1 = row * (bins + 1) + b1
    reach = np.maximum.accumulate(k1)
    starts = np.flatnonzero(np.r_[True, k0[1:] >= reach[:-1]])
    run = np.cumsum(np.r_[True, k0[1:] >= reach[:-1]]) - 1
    longest = np.lexsort((-took[order], run))
    longest = longest[np.r_[True, run[longest][1:] != run[longest][:-1]]]
    r = row[starts]
    return pd.DataFrame(
        {
            "lane": r // n_levels,
            "level": r % n_levels,
            "node": node[order][longest],
            "b0": b0[starts],
            "b1": np.maximum.reduceat(k1, starts) - r * (bins + 1),
            "calls": np.diff(np.r_[starts, row.size]),
            "time": np.add.reduceat(took[order], starts),
            "waited": np.add.reduceat(waited[order], starts),
        }
    )


def band_shares(
    row: np.ndarray, start: np.ndarray, end: np.ndarray, edges: np.ndarray, n_rows: int
) -> np.ndarray:
    """The share of each bin (between consecutive ``edges``, any spacing) that
    the intervals ``[start, end)`` of each row cover: an ``(n_rows, bins)``
    array, partial bins counted exactly (overlapping intervals of a row add up;
    clipped to 1). Vectorised: difference arrays for the bins covered whole.

    Example:
        >>> band_shares(np.array([0, 1]), np.array([0.5, 0.0]), np.array([2.0, 4.0]),
        ...             np.array([0.0, 1.0, 2.0, 4.0]), 2).tolist()
        [[0.5, 1.0, 0.0], [1.0, 1.0, 1.0]]
    """
    nb = edges.size - 1
    out = np.zeros(n_rows * nb)
    s = np.clip(np.asarray(start, dtype=np.float64), edges[0], edges[-1])
    e = np.clip(np.asarray(end, dtype=np.float64), edges[0], edges[-1])
    ok = e > s
    row, s, e = np.asarray(row, dtype=np.int64)[ok], s[ok], e[ok]
    if not row.size or nb < 1:
        return out.reshape(n_rows, max(nb, 0))
    width = np.diff(edges)
    i0 = np.clip(np.searchsorted(edges, s, side="right") - 1, 0, nb - 1)
    i1 = np.clip(np.searchsorted(edges, e, side="left") - 1, 0, nb - 1)  # the bin e ends in
    base = row * nb
    one = i0 == i1
    out += np.bincount(base[one] + i0[one], (e[one] - s[one]) / width[i0[one]], n_rows * nb)
    many = ~one
    a0, a1, b = i0[many], i1[many], base[many]
    out += np.bincount(b + a0, (edges[a0 + 1] - s[many]) / width[a0], n_rows * nb)
    out += np.bincount(b + a1, (e[many] - edges[a1]) / width[a1], n_rows * nb)
    whole = np.bincount(b + a0 + 1, minlength=n_rows * nb + 1)[: n_rows * nb].astype(np.float64)
    whole -= np.bincount(b + a1, minlength=n_rows * nb)
    out += np.cumsum(whole)  # rows never carry over: every interval's +1 ends in its row
    return np.minimum(out, 1.0).reshape(n_rows, nb)


def _by_lane_level(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """Rectangles of the window's segments (each ordered by lane, level, b0) as
    one table so ordered."""
    if len(parts) == 1:
        return parts[0]
    r = pd.concat(parts, ignore_index=True)
    order = np.lexsort((r["b0"].to_numpy(), r["level"].to_numpy(), r["lane"].to_numpy()))
    return r.iloc[order].reset_index(drop=True)


def _workflow_summary(timeline: Timeline) -> Any:
    """The workflow summary of the run ``timeline`` was read from, when it is the
    timeline of a ``cctviz run --workflow --timeline`` run folder (its
    ``timeline/`` archive beside the rank files) with several components; else None."""
    prof = timeline.profiles
    if "component" not in prof.columns or prof["component"].nunique() < 2:
        return None
    path = timeline.meta.get("path")
    if not isinstance(path, (str, os.PathLike)):
        return None
    trace = Path(path)
    if trace.parent.name != "timeline":
        return None
    from ..errors import ProfileError
    from ..workflow import summary

    try:
        return summary(trace.parent.parent)
    except (ProfileError, OSError, ValueError, KeyError):
        return None


@register_view("timeline")
class TimelineView(View):
    """A timeline of a :class:`~cctviz.Timeline`: one lane per profile, the
    calling-context levels ``0..depth`` stacked in each lane, coloured by
    context and named where the names fit (module docstring).

    Args:
        data: the :class:`~cctviz.Timeline` (``cctviz.read_timeline``); the old keyword
            ``timeline=`` is deprecated.
        window: ``(t0, t1)`` seconds from the timeline's start (default: all of it).
        depth: the deepest level drawn (0 = the roots).
        bins: pixel bins across the window: the level-of-detail budget, the most
            rectangles per (lane, level).
        summary: the :func:`cctviz.workflow.summary` of the same run: the figure
            states its bottleneck and hatches the contexts where it counts a
            component blocked. None (the default): the summary of the workflow
            run folder the timeline was read from, if it is one; False: none.
        **traits: ``selected_profiles`` (the lanes; ``[]`` = all), ``selection``
            (node ids, a NodeSet or a query string: outlined), ``brush``,
            ``counter_bands`` (``"component"``: one band per track and lane
            group, the highest of its lanes per pixel; ``"lane"``: one per lane;
            ``"none"``).
    """

    window = traitlets.Tuple(traitlets.Float(), traitlets.Float()).tag(sync=True)
    depth = traitlets.Int(3).tag(sync=True)
    bins = traitlets.Int(1000).tag(sync=True)
    selected_profiles = ProfileIds()
    selection = NodeSelection()
    brush = traitlets.List(traitlets.Float()).tag(sync=True)
    counter_bands = traitlets.Enum(("component", "lane", "none"), "component").tag(sync=True)
    max_lanes = traitlets.Int(MAX_LANES).tag(sync=True)
    expanded = traitlets.List(traitlets.Unicode()).tag(sync=True)
    _data = traitlets.Dict().tag(sync=True)
    _marks_wanted = traitlets.Int(-1).tag(sync=True)
    #: counts :meth:`replace_data` calls (a link rescopes its trees on it)
    _loaded = traitlets.Int(0)

    #: traits that make up a view's state (see :attr:`state`)
    STATE = (
        "window", "depth", "bins", "selected_profiles", "selection", "brush", "counter_bands",
        "max_lanes", "expanded",
    )  # fmt: skip

    def __init__(
        self,
        data: Timeline | None = None,
        window: tuple[float, float] | None = None,
        depth: int = 3,
        bins: int = 1000,
        summary: Any = None,
        critical_path: Any = None,
        **traits: Any,
    ) -> None:
        timeline = data_argument("TimelineView", "timeline", data, traits)
        if not isinstance(timeline, Timeline):
            raise TypeError(
                f"TimelineView shows a Timeline, got {type(timeline).__name__}; "
                "read one with cctviz.read_timeline"
            )
        self._load(timeline, summary, critical_path)
        self._ready = False
        super().__init__(
            window=self._whole if window is None else window,
            depth=depth,
            bins=bins,
            _data={},
            **traits,
        )
        share_space(self)
        if self.selection is None:
            self.selection = NodeSet(self.tree)
        self._ready = True
        self._refresh()

    def _load(self, timeline: Timeline, summary: Any, critical_path: Any) -> None:
        """Everything the view keeps of ``timeline`` (made again by :meth:`replace_data`)."""
        self._tl = timeline
        self._t00, t11 = timeline.span
        self._whole = (0.0, max((t11 - self._t00) / PER_S, 1e-9))
        ev = timeline.events
        self._node = ev["node"].to_numpy()
        self._prof = ev["profile"].to_numpy()
        # ns from the start: exact in int64, and float64 keeps ns for any run
        self._start = ev["start"].to_numpy() - self._t00
        self._end = ev["end"].to_numpy() - self._t00
        tree = timeline.tree
        self._level = np.asarray(tree.depth, dtype=np.int64)[self._node]
        self._max_level = int(self._level.max()) if self._level.size else 0
        weight = np.bincount(
            self._node, weights=np.asarray(self._end - self._start, dtype=np.float64),
            minlength=len(tree),
        )  # fmt: skip
        self._role, self._group, self._tint, self._groups, self._slots = context_colors(
            tree, weight
        )
        n_prof = max(timeline.n_profiles, 1)
        # where each profile's steps start and end: the time outside is drawn apart
        steps = np.flatnonzero(self._role[self._node] == ROLE_STEP)
        self._first_step = per_profile(
            self._start[steps].astype(np.float64), self._prof[steps], n_prof, "min"
        )
        self._last_step = per_profile(
            self._end[steps].astype(np.float64), self._prof[steps], n_prof, "max"
        )
        self._comm = np.flatnonzero(self._role[self._node] == ROLE_COMM)
        self._ev_wait: np.ndarray | None = None  # per event of self._comm: its wait (ns)
        self._init_counters(timeline)
        self._inst: pd.DataFrame | None = None
        self._calls: pd.DataFrame | None = None  # see _last_arrivals
        self._lod: tuple | None = None  # see _rects_of
        # of _data: the front end asks for markers by it (on across replace_data)
        self._version = getattr(self, "_version", 0)
        self._lane_order = self._order_lanes()
        self._behaviour: np.ndarray | None = None  # see _features
        self._plan: tuple | None = None  # see _lane_plan
        self._summary = _workflow_summary(timeline) if summary is None else (summary or None)
        # each profile's component, coded (names sorted; "" without the column)
        names, code = np.unique(self._components().astype(str), return_inverse=True)
        self._comp_names, self._comp_code = names, np.asarray(code, dtype=np.int64).reshape(-1)
        self._init_blocked()
        self._summary_text = self._summary_lines()  # (verdict, blocked label): fixed
        self._path = _path_runs(critical_path)

    def replace_data(self, timeline: Timeline, window: tuple[float, float] | None = None) -> None:
        """Show ``timeline`` instead (a run watched as it grows: the live
        dashboard), over ``window`` (seconds from its start; default: all of
        it). Kept: the depth, bins, lanes' grouping and what is expanded, the
        selection (by call path), the brush where the new window holds it;
        reset: the profiles selected.

        Example:
            >>> import pandas as pd, cctviz
            >>> tree = cctviz.Tree.from_parents([-1, 0], ["main", "f"])
            >>> ev = pd.DataFrame({"profile": [0, 0], "node": [0, 1], "start": [0, 10], "end": [100, 50]})
            >>> view = TimelineView(cctviz.Timeline(tree, ev))
            >>> ev2 = pd.DataFrame({"profile": [0], "node": [0], "start": [0], "end": [400]})
            >>> view.replace_data(cctviz.Timeline(tree, ev2), window=(2e-7, 4e-7)); view.window
            (2e-07, 4e-07)
        """
        if not isinstance(timeline, Timeline):
            raise TypeError(f"TimelineView shows a Timeline, got {type(timeline).__name__}")
        paths = set(np.asarray(self.tree.callpaths)[self.selection.ids].tolist())
        self._ready = False
        try:
            self._load(timeline, None, None)
            keep = np.isin(np.asarray(self.tree.callpaths), list(paths))
            self.selection = NodeSet(self.tree, np.flatnonzero(keep))
            self.selected_profiles = []
            self.window = self._whole if window is None else window
            w0, w1 = self.window
            if len(self.brush) and not (w0 <= self.brush[0] and self.brush[1] <= w1):
                self.brush = []
        finally:
            self._ready = True
        self._refresh()
        self._loaded += 1

    # ------------------------------------------------------------ public API
    @property
    def timeline(self) -> Timeline:
        """The Timeline shown."""
        return self._tl

    @property
    def tree(self) -> Any:
        """The timeline's calling-context tree (what ``selection`` names)."""
        return self._tl.tree

    @property
    def shown(self) -> Timeline:
        """The Timeline shown."""
        return self._tl

    @property
    def summary(self) -> Any:
        """The workflow summary the figure agrees with (None: none)."""
        return self._summary

    def show_critical_path(self, critical_path: Any) -> None:
        """Draw ``critical_path`` (a :class:`cctviz.perfmodel.CriticalPath` of this
        timeline, e.g. ``replay(tl).critical_path()``) over the lanes: along the top
        of each lane it runs on, a hop where it crosses to another rank; None
        removes it."""
        self._path = _path_runs(critical_path)
        self._refresh()

    @property
    def whole_window(self) -> tuple[float, float]:
        """The whole timeline as a window: ``(0, duration)`` seconds."""
        return self._whole

    @property
    def brushed_window(self) -> tuple[float, float]:
        """The brushed window ``(t0, t1)`` in seconds from the start, or the
        visible ``window`` when nothing is brushed: the time a linked view scopes to."""
        return (self.brush[0], self.brush[1]) if len(self.brush) == 2 else tuple(self.window)

    def window_ns(self, window: tuple[float, float] | None = None) -> tuple[int, int]:
        """A window in seconds from the start (default :attr:`brushed_window`) on
        the timeline's clock (ns), as :meth:`Timeline.window` takes it."""
        t0, t1 = self.brushed_window if window is None else window
        return (self._t00 + round(t0 * PER_S), self._t00 + round(t1 * PER_S))

    def brushed_timeline(self) -> Timeline:
        """The timeline of :attr:`brushed_window` (``timeline.window(...)``)."""
        return self._tl.window(*self.window_ns())

    @property
    def selected(self) -> pd.DataFrame:
        """The selected nodes (``selection``), as :attr:`CCTView.selected
        <cctviz.CCTView.selected>`: their attributes, call path and every plain
        metric of the brushed window (:attr:`brushed_window`; the whole run
        when nothing is brushed), the mean over the shown profiles."""
        from .source import MetricSource, split_metric

        whole = np.allclose(self.brushed_window, self._whole, rtol=0, atol=1e-12)
        tl = self._tl if whole else self.brushed_timeline()
        src = MetricSource(tl, profiles=self.selected_profiles or None)
        plain = [m for m in src.metrics if split_metric(m)[1] is None]
        return src.frame(self.selection.ids, plain)

    @property
    def lanes(self) -> np.ndarray:
        """The profile ids drawn, top to bottom: grouped by the profiles'
        :data:`LANE_GROUPS` columns that differ, then by rank. Beyond
        ``max_lanes`` profiles, a group lane's profile is its most typical
        member (:attr:`lane_members`)."""
        return self._lane_plan()[1]

    @property
    def lane_members(self) -> list[np.ndarray]:
        """Per lane, the profile ids it stands for: one, or a group's members.

        Beyond ``max_lanes`` shown profiles the ranks of each lane group are
        grouped by behaviour (their time shares in the contexts of the first
        :data:`BEHAVIOUR_LEVELS` levels, :func:`cctviz.ops.behaviour.rank_groups`):
        a group is one lane, its outliers keep lanes of their own. A group whose
        key (:attr:`lane_keys`) is in ``expanded`` shows its members, or, past
        ``max_lanes`` of them, the ``max_lanes - 1`` farthest from its centre
        apart and the rest as one lane (key ``KEY+``; expand that in turn)."""
        return list(self._lane_plan()[0])

    @property
    def lane_keys(self) -> list[str]:
        """Per lane, the key that ``expanded`` takes ("" for a lane of one profile)."""
        return list(self._lane_plan()[2])

    def _shown_profiles(self) -> np.ndarray:
        order = self._lane_order
        sel = self.selected_profiles
        return order[np.isin(order, sel)] if sel else order

    def _lane_plan(self) -> tuple[list[np.ndarray], np.ndarray, list[str]]:
        """(members per lane, the profile drawn per lane, keys), cached per state."""
        ids = self._shown_profiles()
        state = (ids.tobytes(), int(self.max_lanes), tuple(self.expanded))
        if self._plan is not None and self._plan[0] == state:
            return self._plan[1]
        if self.max_lanes <= 0 or ids.size <= self.max_lanes:
            plan = ([ids[k : k + 1] for k in range(ids.size)], ids, [""] * ids.size)
        else:
            lanes: list[tuple[np.ndarray, int, str]] = []
            labels = np.asarray(self._group_labels(ids), dtype=object)
            for g in pd.unique(labels):
                lanes += self._grouped(ids[labels == g], f"{g}#" if g else "#")
            pos = np.empty(self._lane_order.size, dtype=np.int64)
            pos[self._lane_order] = np.arange(pos.size)
            lanes.sort(key=lambda x: int(pos[x[0]].min()))  # a lane where its first rank is
            plan = ([m for m, _, _ in lanes], np.array([r for _, r, _ in lanes], dtype=np.int64),
                    [k for _, _, k in lanes])  # fmt: skip
        self._plan = (state, plan)
        return plan

    def _grouped(self, ids: np.ndarray, key: str) -> list[tuple[np.ndarray, int, str]]:
        """The lanes of ``ids`` (one lane group's shown profiles) under ``key``."""
        if ids.size <= self.max_lanes:
            return [(ids[k : k + 1], int(ids[k]), "") for k in range(ids.size)]
        g = rank_groups(self._features()[ids])
        out = [(ids[k : k + 1], int(ids[k]), "") for k in g.outliers]
        for j in range(g.n_groups):
            rows, gkey = g.members(j), f"{key}{j}"
            out += self._group_lanes(ids, rows, int(g.representative[j]), g.distance, gkey)
        return out

    def _group_lanes(
        self, ids: np.ndarray, rows: np.ndarray, rep: int, distance: np.ndarray, key: str
    ) -> list[tuple[np.ndarray, int, str]]:
        """One group's lanes: itself, or expanded (:attr:`lane_members`)."""
        if key not in self.expanded or rows.size == 1:
            return [(ids[rows], int(ids[rep]), key)]
        if rows.size <= self.max_lanes:
            return [(ids[k : k + 1], int(ids[k]), "") for k in rows]
        far = rows[np.argsort(-distance[rows], kind="stable")]
        apart, rest = far[: self.max_lanes - 1], np.sort(far[self.max_lanes - 1 :])
        near = rest[int(np.argmin(distance[rest]))]
        out = [(ids[k : k + 1], int(ids[k]), "") for k in apart]
        return out + self._group_lanes(ids, rest, int(near), distance, key + "+")

    def _features(self) -> np.ndarray:
        """Per profile, the share of its time (its roots' time) in each of the
        longest contexts of the :data:`BEHAVIOUR_LEVELS` levels under the roots
        (computed once)."""
        if self._behaviour is None:
            n_prof = max(self._tl.n_profiles, 1)
            dur = np.asarray(self._end - self._start, dtype=np.float64)
            level = self._level
            inside = (level >= 1) & (level <= BEHAVIOUR_LEVELS)
            weight = np.bincount(self._node[inside], dur[inside], len(self._tl.tree))
            cols = np.argsort(-weight, kind="stable")[:BEHAVIOUR_CONTEXTS]
            cols = cols[weight[cols] > 0]
            col_of = np.full(len(self._tl.tree), -1, dtype=np.int64)
            col_of[cols] = np.arange(cols.size)
            c = col_of[self._node]
            k = inside & (c >= 0)
            x = np.bincount(self._prof[k] * max(cols.size, 1) + c[k], dur[k],
                            n_prof * max(cols.size, 1)).reshape(n_prof, -1)  # fmt: skip
            roots = level == 0
            total = np.bincount(self._prof[roots], dur[roots], n_prof)[:, None]
            self._behaviour = np.divide(x, total, out=np.zeros_like(x), where=total > 0)
        return self._behaviour

    @property
    def rects(self) -> pd.DataFrame:
        """The rectangles sent: lane (index), profile, level, node, name, kind,
        ``group`` (the context whose colour it wears, "" for frames and steps),
        ``blocked`` (a context the workflow summary counts as blocked), bins
        ``[b0, b1)`` and their times ``t0``/``t1`` (s from the start)."""
        return self._rects.copy()

    @property
    def bin_edges(self) -> np.ndarray:
        """The ``bins + 1`` edges of the bins sent, in seconds from the start:
        uniform within each segment of the window (the time outside the steps
        may be compressed into segments of its own: :func:`step_segments`)."""
        return self._edges.copy()

    @property
    def collectives(self) -> pd.DataFrame:
        """The communication calls sent (:func:`collective_runs`): lane, profile,
        level, node, name, bins ``[b0, b1)``, ``t0``/``t1`` (s from the start),
        ``calls``, ``time`` and ``waited`` (s; NaN where a call's wait is not known)."""
        return self._colls.copy()

    def zoom(self, t0: float, t1: float) -> None:
        """Show ``[t0, t1]`` seconds from the start (sets ``window``)."""
        self.window = (t0, t1)

    def figure_extras(self) -> dict[str, Any]:
        """The whole window (the axis' context in a figure)."""
        return {"whole": list(self._whole)}

    # ------------------------------------------------------------ validation
    @traitlets.validate("window")
    def _v_window(self, proposal: dict) -> tuple[float, float]:
        return _window_value(proposal["value"])

    @traitlets.validate("brush")
    def _v_brush(self, proposal: dict) -> list[float]:
        v = list(proposal["value"] or [])
        if not v:
            return []
        if len(v) != 2:
            raise traitlets.TraitError(f"brush: expected [] or [t0, t1] seconds, got {v!r}")
        t0, t1 = sorted(float(x) for x in v)
        if not (math.isfinite(t0) and math.isfinite(t1)) or t1 <= t0:
            raise traitlets.TraitError(f"brush: need finite t0 < t1 (seconds), got {v!r}")
        return [t0, t1]

    @traitlets.validate("depth")
    def _v_depth(self, proposal: dict) -> int:
        if proposal["value"] < 0:
            raise traitlets.TraitError("depth must be 0 (the roots) or more")
        return proposal["value"]

    @traitlets.validate("bins")
    def _v_bins(self, proposal: dict) -> int:
        if not 1 <= proposal["value"] <= 100_000:
            raise traitlets.TraitError("bins must be in [1, 100000]")
        return proposal["value"]

    @property
    def profile_count(self) -> int | None:
        """How many profiles the view can select among: the timeline's."""
        return self._tl.n_profiles

    # ------------------------------------------------------------ data
    @traitlets.observe(
        "window", "depth", "bins", "selected_profiles", "counter_bands", "max_lanes", "expanded"
    )
    def _on_state(self, change: dict) -> None:
        if self._ready:
            self._refresh()

    def _groups_of_lanes(self) -> list[str]:
        """The :data:`LANE_GROUPS` columns of the profiles that hold more than one value."""
        p = self._tl.profiles
        return [c for c in LANE_GROUPS if c in p.columns and p[c].nunique(dropna=False) > 1]

    def _order_lanes(self) -> np.ndarray:
        """Profile ids by group (component, host, run: those that differ), then rank."""
        p = self._tl.profiles
        keys = [p[c].astype(str).to_numpy() for c in self._groups_of_lanes()]
        rank = pd.to_numeric(p["rank"], errors="coerce") if "rank" in p.columns else None
        if rank is not None:
            keys.append(rank.fillna(np.inf).to_numpy())
        ids = np.arange(len(p), dtype=np.int64)
        return ids[np.lexsort([ids, *keys[::-1]])] if keys else ids

    def _group_labels(self, ids: np.ndarray) -> list[str]:
        """Per profile of ``ids``: its lane group ("sim", "node-a · sim"), "" without groups."""
        p = self._tl.profiles
        groups = self._groups_of_lanes()
        if not groups:
            return ["" for _ in ids]
        cols = [p[c].astype(str).to_numpy() for c in groups]
        return [" \u00b7 ".join(c[i] for c in cols) for i in ids]

    def _names(self, ids: np.ndarray) -> list[str]:
        """Per profile of ``ids``: "rank 3" (or "profile 3" without a rank)."""
        p = self._tl.profiles
        if "rank" not in p.columns:
            return [f"profile {int(i)}" for i in ids]
        r = pd.to_numeric(p["rank"], errors="coerce").to_numpy()
        return [f"rank {int(r[i])}" if np.isfinite(r[i]) else f"profile {int(i)}" for i in ids]

    def _labels(self, ids: np.ndarray, names: list[str] | None = None) -> list[str]:
        names = self._names(ids) if names is None else names
        return [f"{g} \u00b7 {nm}" if g else nm for g, nm in zip(self._group_labels(ids), names)]

    def _lane_labels(self, lanes: np.ndarray, members: list[np.ndarray]) -> list[str]:
        """The lanes' labels: a group lane's says how many ranks it stands for
        and which one it draws ("sim \u00b7 4,090 ranks like rank 12")."""
        names = self._names(lanes)
        for k, m in enumerate(members):
            if m.size > 1:
                names[k] = f"{m.size:,} ranks like {names[k]}"
        return self._labels(lanes, names)

    def _bands(self, members: list[np.ndarray], edges: np.ndarray) -> dict[str, Any]:
        """The bands of the group lanes: per band bin (the bins of ``edges``, ns
        from the start, coarsened to at most :data:`BAND_BINS`), the min, median
        and max over the group's ranks of the share of the bin they spend in
        communication calls. Empty without group lanes or calls."""
        groups = [k for k, m in enumerate(members) if m.size > 1]
        bins = edges.size - 1
        stride = max(1, math.ceil(bins / BAND_BINS))
        out: dict[str, Any] = {"band_lane": [], "band_stride": stride, "band_bins": 0,
                               "band_lo": [], "band_mid": [], "band_hi": []}  # fmt: skip
        if not groups or not self._comm.size:
            return out
        row_of = np.full(max(self._tl.n_profiles, 1), -1, dtype=np.int64)
        rows = np.concatenate([members[k] for k in groups])
        row_of[rows] = np.arange(rows.size)
        ev = self._comm[row_of[self._prof[self._comm]] >= 0]
        coarse = np.r_[edges[::stride], edges[-1]] if bins % stride else edges[::stride]
        share = band_shares(
            row_of[self._prof[ev]], self._start[ev], self._end[ev], coarse, rows.size
        )
        lo, mid, hi, at = [], [], [], 0
        for k in groups:
            part = share[at : at + members[k].size]
            at += members[k].size
            lo.append(part.min(axis=0))
            mid.append(np.median(part, axis=0))
            hi.append(part.max(axis=0))
        out.update(
            band_lane=i32(np.array(groups, dtype=np.int64)), band_bins=int(coarse.size - 1),
            band_lo=f32(np.concatenate(lo)), band_mid=f32(np.concatenate(mid)),
            band_hi=f32(np.concatenate(hi)),
        )  # fmt: skip
        return out

    def _components(self) -> np.ndarray:
        """Per profile, its ``component`` ("" without the column)."""
        p = self._tl.profiles
        if "component" not in p.columns:
            return np.full(len(p), "", dtype=object)
        return p["component"].astype(str).to_numpy(dtype=object)

    def _init_blocked(self) -> None:
        """The (profile, node) pairs the workflow summary counts as blocked in
        the program's own regions, process by process (its communication calls
        are drawn as wait and transfer), as sorted keys ``profile * nodes + node``:
        a region blocked in one process of a component and not in the other is
        hatched on the one lane only."""
        self._blocked_keys = np.empty(0, dtype=np.int64)
        where = getattr(self._summary, "blocked_per_process", None)
        if where is None or not len(where):
            return
        regions = where[where["kind"].astype(str) != COMM_KIND]
        node = pd.Index(self.tree.callpaths.astype(str)).get_indexer(regions["context"].astype(str))
        # a region with sub-contexts is blocked for its own time only (the summary
        # counts exclusive time), which its interval on the figure does not show
        # apart: only regions without sub-contexts are hatched
        ok = (node >= 0) & self.tree.is_leaf[np.maximum(node, 0)]
        # every profile of the row's rank (a rank's streams and threads alike)
        ranks = profile_ranks(self.timeline.profiles)
        pairs = pd.DataFrame({"rank": regions["rank"].to_numpy()[ok], "node": node[ok]}).merge(
            pd.DataFrame({"rank": ranks, "profile": np.arange(ranks.size)}), on="rank"
        )
        keys = pairs["profile"].to_numpy(np.int64) * len(self.tree) + pairs["node"].to_numpy(
            np.int64
        )
        self._blocked_keys = np.unique(keys)

    def _summary_lines(self) -> tuple[str, str]:
        """The summary's verdict (one sentence) and the legend's text of the
        blocked hatching ("" where there is no summary)."""
        s = self._summary
        if s is None:
            return "", ""
        why = str(getattr(s, "why", "") or "").strip().rstrip(".")
        neck = getattr(s, "bottleneck", None)
        line = f"Workflow summary: the bottleneck is {neck}" if neck else "Workflow summary"
        line = f"{line} ({why})." if why else f"{line}."
        blocked = getattr(s, "blocked", None)
        label = ""
        if self._blocked_keys.size and blocked is not None:
            regions = blocked[blocked["kind"].astype(str) != COMM_KIND]
            pairs = regions.drop_duplicates(["component", "waits_for"])
            who = [f"{c} for {w}" for c, w in zip(pairs["component"], pairs["waits_for"]) if w]
            label = "blocked, as the summary counts it" + (f" ({', '.join(who)})" if who else "")
        return line, label

    def _init_counters(self, timeline: Timeline) -> None:
        """The counters as arrays: profile, track code (into ``self._tracks``),
        ns from the start, value."""
        c = timeline.counters
        p = c["profile"].to_numpy(dtype=np.int64)
        c = c[(p >= 0) & (p < timeline.n_profiles)]  # as the lanes: profiles described
        c = c.iloc[np.argsort(c["ts"].to_numpy(), kind="stable")]  # by time: sorts skipped later
        tracks, code = np.unique(c["track"].astype(str).to_numpy(), return_inverse=True)
        self._tracks = [str(t) for t in tracks]
        units = timeline.units
        self._track_units = [str(units.get(t) or "") for t in self._tracks]
        self._c_prof = c["profile"].to_numpy(dtype=np.int64)
        self._c_track = np.asarray(code, dtype=np.int64).reshape(-1)
        self._c_ts = c["ts"].to_numpy(dtype=np.int64) - self._t00
        self._c_val = c["value"].to_numpy(dtype=np.float64)
        # the (profile, track) pairs that have samples anywhere: a band each,
        # whatever the window (bands do not come and go as one zooms)
        self._c_pairs = np.unique(self._c_prof * max(len(tracks), 1) + self._c_track)
        # where each profile ends (its last event or sample): its counters stop there
        self._p_end = np.fmax(
            per_profile(self._end.astype(np.float64), self._prof, timeline.n_profiles, "max"),
            per_profile(self._c_ts.astype(np.float64), self._c_prof, timeline.n_profiles, "max"),
        )

    def _counters(
        self, lane_of: np.ndarray, segs: list[tuple[float, float, int]], labels: list[str]
    ) -> dict[str, Any]:
        """The counter bands of the shown lanes: per (lane, track) its peak per
        bin of each segment (:func:`counter_peaks`), folded per track and lane
        group by ``counter_bands`` (the highest of the group's lanes per bin);
        ``labels``: the lanes' labels."""
        nt = max(len(self._tracks), 1)
        prof, track = self._c_pairs // nt, self._c_pairs % nt
        shown = lane_of[prof] >= 0 if prof.size else np.zeros(0, dtype=bool)
        if self.counter_bands == "none":
            shown[:] = False
        lane = lane_of[prof[shown]]
        track = track[shown]
        lanes = self.lanes
        fold_names = self._group_labels(lanes) if self.counter_bands == "component" else None
        if fold_names is not None:
            _, fold_of_lane = np.unique(np.asarray(fold_names, dtype=object), return_inverse=True)
            fold_of_lane = np.asarray(fold_of_lane, dtype=np.int64).reshape(-1)
            # the groups in the order their first lane is drawn
            first = np.full(int(fold_of_lane.max(initial=-1)) + 1, lanes.size)
            np.minimum.at(first, fold_of_lane, np.arange(lanes.size))
            rank = np.argsort(np.argsort(first, kind="stable"), kind="stable")
            fold = rank[fold_of_lane[lane]] if lane.size else lane
        else:
            fold = lane
        order = np.lexsort((lane, fold, track))  # by track, then group, lanes in order
        lane, track, fold = lane[order], track[order], fold[order]
        until = self._p_end[prof[shown][order]]
        keys = lane * nt + track  # in display order
        by_key = np.argsort(keys)
        series = np.zeros(self._c_prof.size, dtype=np.int64)
        ok = np.zeros(self._c_prof.size, dtype=bool)
        if keys.size:
            sample_key = lane_of[self._c_prof] * nt + self._c_track
            pos = np.minimum(np.searchsorted(keys[by_key], sample_key), keys.size - 1)
            ok = (lane_of[self._c_prof] >= 0) & (keys[by_key][pos] == sample_key)
            series = by_key[pos]
        # sorted once (by series, then time) for every segment of the window
        samples = _by_series_then_time(series[ok], self._c_ts[ok], self._c_val[ok], int(keys.size))
        peaks = np.concatenate(
            [
                counter_peaks(*samples, a, b, nb, int(keys.size), until, presorted=True)
                for a, b, nb in segs
            ],
            axis=1,
        )
        starts = np.flatnonzero(np.r_[True, (fold[1:] != fold[:-1]) | (track[1:] != track[:-1])])
        count = np.diff(np.r_[starts, keys.size]) if keys.size else np.empty(0, dtype=np.int64)
        if keys.size and starts.size < keys.size:
            with np.errstate(invalid="ignore"):
                peaks = np.fmax.reduceat(peaks, starts, axis=0)
        band_lane = lane[starts] if keys.size else lane
        if fold_names is not None:
            group_of = [fold_names[int(x)] for x in band_lane]
            names = [
                labels[int(la)] if n == 1 else f"{g or 'all lanes'} (highest of {int(n)})"
                for la, g, n in zip(band_lane, group_of, count)
            ]
        else:
            names = [labels[int(la)] for la in band_lane]
        return {
            "k": int(band_lane.size),
            "tracks": self._tracks,
            "track_units": self._track_units,
            "counter_lane": i32(band_lane),
            "counter_track": i32(track[starts] if keys.size else track),
            "counter_label": names,
            "counter_peak": f32(peaks.reshape(-1)),
        }

    def _instances(self) -> pd.DataFrame:
        if self._inst is None:
            from ..ops.collectives import instances, shared_calls

            self._inst = shared_calls(instances(self._tl)).reset_index(drop=True)
        return self._inst

    def _event_waits(self) -> np.ndarray:
        """Per communication event (``self._comm``) its wait (ns) from the matched
        calls (:func:`cctviz.ops.collectives.instances`), NaN where unmatched."""
        if self._ev_wait is None:
            wait = np.full(self._comm.size, np.nan)
            inst = self._instances()
            if len(inst) and self._comm.size:
                ev = self._tl.events
                mine = pd.DataFrame(
                    {
                        "profile": self._prof[self._comm],
                        "node": self._node[self._comm],
                        "arrival": ev["start"].to_numpy()[self._comm],
                        "i": np.arange(self._comm.size),
                    }
                )
                got = inst[["profile", "node", "arrival", "wait"]].drop_duplicates(
                    ["profile", "node", "arrival"]
                )
                m = mine.merge(got, on=["profile", "node", "arrival"], how="inner")
                wait[m["i"].to_numpy()] = m["wait"].to_numpy(dtype=np.float64)
            self._ev_wait = wait
        return self._ev_wait

    def _last_arrivals(self) -> pd.DataFrame:
        """Per collective call (among two ranks or more) that kept someone
        waiting, once per timeline: the profile of its ``last_to_arrive``, its
        arrival, the node, ``last_by``, the longest wait of the others
        (``waited``), the ranks in the call and the component they share ("")."""
        if self._calls is not None:
            return self._calls
        from ..ops.collectives import last_rows

        inst = self._instances()
        cols = ("profile", "arrival", "node", "last_by", "waited", "ranks", "of")
        if not len(inst):
            self._calls = pd.DataFrame({c: [] for c in cols})
            return self._calls
        ids = inst["instance"].to_numpy()
        waited = pd.Series(inst["wait"].to_numpy(dtype=np.float64)).groupby(ids).max()
        comp = self._comp_code[inst["profile"].to_numpy(dtype=np.int64)]
        span = pd.Series(comp).groupby(ids).agg(["min", "max"])
        late = last_rows(inst)  # the row of the rank that arrived last, alone
        out = pd.DataFrame(
            {c: late[c].to_numpy() for c in ("profile", "arrival", "node", "last_by", "ranks")}
        )
        calls = late["instance"].to_numpy()
        lo, hi = span["min"].reindex(calls).to_numpy(), span["max"].reindex(calls).to_numpy()
        names = self._comp_names
        one = lo == hi
        of = names[np.where(one, lo, 0).astype(np.int64)] if names.size else np.full(len(out), "")
        self._calls = out.assign(
            waited=waited.reindex(calls).to_numpy(dtype=np.float64),
            of=np.where(one, of, ""),
        )
        return self._calls

    def _markers(self, lane_of: np.ndarray, a: int, b: int) -> pd.DataFrame:
        """The calls of :meth:`_last_arrivals` whose last arrival is in ``[a, b)``
        ns on a shown lane (at most :data:`MAX_MARKERS`: those last by the most)."""
        calls = self._last_arrivals()
        t = calls["arrival"].to_numpy(dtype=np.int64)
        prof = calls["profile"].to_numpy(dtype=np.int64)
        out = calls[(t >= a) & (t < b) & (lane_of[prof] >= 0)] if len(calls) else calls
        if len(out) > MAX_MARKERS:
            out = out.nlargest(MAX_MARKERS, "last_by").sort_values("arrival", kind="stable")
        return out

    def _in_view(self, lane_of: np.ndarray, a: float, b: float) -> np.ndarray | slice:
        """The events drawn: on a shown lane, at most ``depth`` deep, meeting
        ``[a, b)`` (ns from the start). A slice (no copy) when that is all of them."""
        keep = None
        if (lane_of < 0).any():
            keep = lane_of[self._prof] >= 0
        if self.depth < self._max_level:
            keep = self._level <= self.depth if keep is None else keep & (self._level <= self.depth)
        t00, t11 = self._tl.span
        if a > 0 or b < t11 - t00:
            inside = (self._end > a) & (self._start < b)
            keep = inside if keep is None else keep & inside
        return slice(None) if keep is None else np.flatnonzero(keep)

    @traitlets.observe("_marks_wanted")
    def _on_marks_wanted(self, change: dict) -> None:
        if change["new"] == self._version and self._data.get("marks_pending"):
            self._refresh(marks=True)

    def complete_data(self) -> None:
        """Add the collective markers if the first view went out without them
        (:data:`MARKS_AFTER`): a figure draws everything."""
        if self._data.get("marks_pending"):
            self._refresh(marks=True)

    def _steps_span(self, lanes: np.ndarray) -> tuple[float, float]:
        """The shown lanes' steps: from the first one's start to the last one's
        end (ns from the start; ``(inf, -1)`` without steps)."""
        if not lanes.size:
            return float("inf"), -1.0
        return float(self._first_step[lanes].min()), float(self._last_step[lanes].max())

    def _segments(self, lanes: np.ndarray, a: float, b: float) -> list[tuple[float, float, int]]:
        """The window ``[a, b)`` (ns from the start) as segments ``(t0, t1,
        bins)``: the time outside the shown lanes' steps drawn apart
        (:func:`step_segments`)."""
        return step_segments(a, b, *self._steps_span(lanes), self.bins)

    def _rects_of(
        self, lane_of: np.ndarray, segs: list[tuple[float, float, int]]
    ) -> tuple[pd.DataFrame, pd.DataFrame, int]:
        """The level of detail of the window's segments (rectangles, communication
        runs, the events the window holds). The rectangles are kept for a refresh
        of the same window, lanes, depth and bins (markers arriving); the
        communication runs are made again once the calls' waits are known."""
        key = (tuple(segs), self.depth, lane_of.tobytes())
        waits = self._inst is not None
        if self._lod is not None and self._lod[0] == key:
            _, r, n_events, colls = self._lod
            if waits in colls:
                return r, colls[waits], n_events
        else:
            r, colls, n_events = None, {}, 0
        lanes = self.lanes
        k = self._in_view(lane_of, segs[0][0], segs[-1][1])
        identity = lanes.size == lane_of.size and bool((lanes == lane_of).all())
        lane = self._prof[k] if identity else lane_of[self._prof[k]]
        level, node, start, end = self._level[k], self._node[k], self._start[k], self._end[k]
        if r is None:
            parts, offset = [], 0
            for sa, sb, nb in segs:
                part = lod_rects(lane, level, node, start, end, sa, sb, nb, self.depth + 1)
                part["b0"] += offset
                part["b1"] += offset
                parts.append(part)
                offset += nb
            r = _by_lane_level(parts)
            n_events = int(node.size)
        # communication calls of the view, with their waits where known
        ck = np.flatnonzero(self._role[self._node[k]] == ROLE_COMM)
        wait = np.full(ck.size, np.nan)
        if waits and ck.size:
            events = np.asarray(k)[ck] if isinstance(k, np.ndarray) else ck
            wait = self._event_waits()[np.searchsorted(self._comm, events)]
        parts, offset = [], 0
        for sa, sb, nb in segs:
            part = collective_runs(
                lane[ck], level[ck], node[ck], start[ck], end[ck], wait, sa, sb, nb, self.depth + 1
            )
            part["b0"] += offset
            part["b1"] += offset
            parts.append(part)
            offset += nb
        c = _by_lane_level(parts)
        colls[waits] = c
        self._lod = (key, r, n_events, colls)
        return r, c, n_events

    def _path_in(self, lane_of: np.ndarray, w0: float, w1: float) -> pd.DataFrame:
        """The critical path's runs on the shown lanes inside the window ``[w0, w1)``
        (seconds from the start), as ``x0``/``x1`` from the window's start."""
        runs = self._path
        if runs is None or not len(runs):
            return pd.DataFrame({"x0": [], "x1": [], "lane": []})
        prof = runs["profile"].to_numpy(dtype=np.int64)
        ok = (prof >= 0) & (prof < lane_of.shape[0])
        lane = np.where(ok, lane_of[np.where(ok, prof, 0)], -1)
        t0, t1 = runs["t0"].to_numpy(), runs["t1"].to_numpy()
        keep = (lane >= 0) & (t1 > w0) & (t0 < w1)
        return pd.DataFrame({
            "x0": np.maximum(t0[keep], w0) - w0, "x1": np.minimum(t1[keep], w1) - w0,
            "lane": lane[keep],
        })  # fmt: skip

    def _refresh(self, marks: bool = False) -> None:
        tl, tree = self._tl, self._tl.tree
        w0, w1 = self.window
        a, b = w0 * PER_S, w1 * PER_S  # ns from the start
        lanes = self.lanes
        lane_of = np.full(max(tl.n_profiles, 1), -1, dtype=np.int64)
        lane_of[lanes] = np.arange(lanes.size)
        n_levels = self.depth + 1
        t00 = self._t00
        pending = not marks and self._inst is None and len(tl) > MARKS_AFTER
        if not pending:
            self._instances()  # the calls' waits, before the communication runs are made
        segs = self._segments(lanes, a, b)
        r, colls, n_events = self._rects_of(lane_of, segs)
        if pending:
            marks = pd.DataFrame(
                {c: [] for c in ("profile", "arrival", "node", "last_by", "waited", "ranks", "of")}
            )
        else:
            marks = self._markers(lane_of, t00 + math.floor(a), t00 + math.ceil(b))
        used = np.unique(
            np.r_[
                r["node"].to_numpy(),
                colls["node"].to_numpy(dtype=np.int64),
                marks["node"].to_numpy(dtype=np.int64),
            ]
        ).astype(np.int64)
        index = np.searchsorted(used, r["node"].to_numpy())
        kinds_all = tree.nodes["kind"].astype(object).where(tree.nodes["kind"].notna(), "")
        kinds_used = kinds_all.to_numpy()[used].astype(str)
        # the kinds of the whole tree: a kind keeps its name's index in every window
        kinds = np.unique(kinds_all.to_numpy().astype(str))
        kind_code = np.searchsorted(kinds, kinds_used)
        names = [str(x) for x in np.asarray(tree.names, dtype=object)[used]]
        # bin edges in seconds from the start, segment by segment
        edges = (
            np.concatenate(
                [
                    np.linspace(sa, sb, nb + 1)[(1 if j else 0) :]
                    for j, (sa, sb, nb) in enumerate(segs)
                ]
            )
            / PER_S
        )
        lane_idx = r["lane"].to_numpy()
        prof = lanes[lane_idx] if len(r) else np.empty(0, dtype=np.int64)
        blocked = np.zeros(len(r), dtype=bool)
        if self._blocked_keys.size and len(r):
            blocked = np.isin(prof * len(tree) + r["node"].to_numpy(), self._blocked_keys)
        group_names = np.asarray([*self._groups, ""], dtype=object)
        rects = r.assign(
            profile=prof,
            name=[names[i] for i in index],
            kind=kinds_used[index] if len(r) else np.empty(0, dtype=object),
            group=group_names[self._group[r["node"].to_numpy()]]
            if len(r)
            else np.empty(0, dtype=object),
            blocked=blocked,
            t0=edges[r["b0"].to_numpy()],
            t1=edges[r["b1"].to_numpy()],
        )
        self._rects = rects
        self._edges = edges
        c_index = np.searchsorted(used, colls["node"].to_numpy(dtype=np.int64))
        c_lane = colls["lane"].to_numpy(dtype=np.int64)
        self._colls = colls.assign(
            profile=lanes[c_lane] if len(colls) else np.empty(0, dtype=np.int64),
            name=[names[i] for i in c_index],
            t0=edges[colls["b0"].to_numpy(dtype=np.int64)],
            t1=edges[colls["b1"].to_numpy(dtype=np.int64)],
            time=colls["time"].to_numpy(dtype=np.float64) / PER_S,
            waited=colls["waited"].to_numpy(dtype=np.float64) / PER_S,
        )
        path = self._path_in(lane_of, w0, w1)
        m_node = np.searchsorted(used, marks["node"].to_numpy(dtype=np.int64))
        m_prof = marks["profile"].to_numpy(dtype=np.int64)
        summary_line, blocked_label = self._summary_text
        members, _, keys = self._lane_plan()
        lane_labels = self._lane_labels(lanes, members)
        band = self._bands(members, edges * PER_S)
        self._version += 1
        self._data = {
            "n": int(len(r)),
            "bins": int(self.bins),
            "levels": int(n_levels),
            "window": [float(w0), float(w1)],
            "whole": list(self._whole),
            "segments": [[sa / PER_S, sb / PER_S, int(nb)] for sa, sb, nb in segs]
            if len(segs) > 1
            else [],
            # the steps' span, which the standalone page compresses around as Python does
            "steps": [t / PER_S for t in self._steps_span(lanes)]
            if np.isfinite(self._steps_span(lanes)[0])
            else [],
            "events": n_events,
            "events_total": int(len(tl)),
            "lanes": lane_labels,
            "lane_profile": i32(lanes),
            "lane_members": i32(np.array([m.size for m in members], dtype=np.int64)),
            "lane_key": keys,
            **band,
            "lane": i32(lane_idx),
            "level": i32(r["level"].to_numpy()),
            "b0": i32(r["b0"].to_numpy()),
            "b1": i32(r["b1"].to_numpy()),
            "node": i32(index),
            "cover": f32(r["cover"].to_numpy()),
            "blocked": i32(blocked) if blocked.any() else [],
            "node_id": i32(used),
            "names": names,
            "node_kind": i32(kind_code),
            "kinds": [k or "(none)" for k in kinds.tolist()],
            "node_role": i32(self._role[used]),
            "node_group": i32(self._group[used]),
            "node_tint": i32(self._tint[used]),
            "groups": list(self._groups),
            "group_slot": [int(s) for s in self._slots],
            "c": int(len(colls)),
            "coll_lane": i32(c_lane),
            "coll_level": i32(colls["level"].to_numpy(dtype=np.int64)),
            "coll_b0": i32(colls["b0"].to_numpy(dtype=np.int64)),
            "coll_b1": i32(colls["b1"].to_numpy(dtype=np.int64)),
            "coll_node": i32(c_index),
            "coll_calls": i32(colls["calls"].to_numpy(dtype=np.int64)),
            "coll_time": f32(self._colls["time"].to_numpy()),
            "coll_waited": f32(self._colls["waited"].to_numpy()),
            "m": int(len(marks)),
            "mark_x": f32((marks["arrival"].to_numpy(dtype=np.int64) - t00 - a) / PER_S),
            "mark_lane": i32(lane_of[m_prof]),
            "mark_rank": i32(profile_ranks(self._tl.profiles)[m_prof]),
            "mark_node": i32(m_node),
            "mark_last_by": f32(marks["last_by"].to_numpy(dtype=np.float64) / PER_S),
            "mark_waited": f32(marks["waited"].to_numpy(dtype=np.float64) / PER_S),
            "mark_ranks": i32(marks["ranks"].to_numpy(dtype=np.int64)),
            "mark_of": [str(x) for x in marks["of"].tolist()],
            "p": int(len(path)),
            "path_x0": f32(path["x0"].to_numpy()),
            "path_x1": f32(path["x1"].to_numpy()),
            "path_lane": i32(path["lane"].to_numpy()),
            "summary": summary_line,
            "blocked_label": blocked_label,
            "unit": "s",
            "marks_pending": pending,
            "version": self._version,
            **self._counters(lane_of, segs, lane_labels),
        }


def _path_runs(critical_path: Any) -> pd.DataFrame | None:
    """A critical path's segments merged into runs per profile (consecutive
    segments on one profile), seconds from the timeline's start."""
    if critical_path is None:
        return None
    seg = getattr(critical_path, "segments", None)
    if seg is None:
        raise TypeError(
            f"critical_path: expected a CriticalPath (replay(tl).critical_path()), "
            f"got {type(critical_path).__name__}"
        )
    seg = seg.sort_values("start [s]", kind="stable")
    prof = seg["profile"].to_numpy(dtype=np.int64)
    t0, t1 = seg["start [s]"].to_numpy(), seg["end [s]"].to_numpy()
    new = np.r_[True, (prof[1:] != prof[:-1]) | (t0[1:] > t1[:-1] + 1e-9)] if len(seg) else []
    run = np.cumsum(new) - 1
    frame = pd.DataFrame({"run": run, "profile": prof, "t0": t0, "t1": t1})
    return frame.groupby("run").agg(
        profile=("profile", "first"), t0=("t0", "min"), t1=("t1", "max")
    )


__all__ = ["TimelineView", "collective_runs", "context_colors", "counter_peaks", "lod_rects"]
