"""TimelineView: the intervals of a run over time, one lane per profile (anywidget + D3).

Time runs left to right; each lane (a rank, a thread) stacks the calling-context
levels ``0..depth`` of the :class:`~cctviz.Timeline`'s tree. Python decides the
level of detail: the visible ``window`` is cut into ``bins`` pixel-wide bins and,
per (lane, level), each bin shows the context that covers most of it; adjacent
bins of one context merge into one rectangle. So the browser receives at most
``bins`` rectangles per (lane, level), however many events the window holds
(:func:`lod_rects`, vectorised: no loop per event). Rectangles are coloured by
the node's ``kind``. Collective calls in the window put a marker on the lane of
the rank that arrived last (:func:`cctviz.ops.collectives.instances`).

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
from typing import Any

import numpy as np
import pandas as pd
import traitlets

from ..model._algo import stable_order
from ..model.nodeset import NodeSet
from ..model.timeline import Timeline, profile_ranks
from .base import View, f32, i32, ids_json, profile_ids, register_view, share_space

#: the events' times (ns) per second
PER_S = 1e9
#: at most this many collective markers go to the browser (the latest arrivals
#: by how late they were: ``late_by``)
MAX_MARKERS = 2000
#: profile columns that group the lanes, outermost first (those with more than
#: one value; a lane's label names its groups: "sim · rank 0")
LANE_GROUPS = ("component", "host", "run")
#: beyond this many events the first view goes out before its collective markers
#: (matching every call across the ranks takes a while at 10^7 events): the front
#: end asks for them once it has drawn (``_marks_wanted``) and they follow
MARKS_AFTER = 2_000_000


#: at most this many (cell, node) sums are kept in one dense table by
#: :func:`lod_rects` (8 bytes each); beyond it the sums are sorted instead
DENSE_CELLS = 1 << 22


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


@register_view("timeline")
class TimelineView(View):
    """A timeline of a :class:`~cctviz.Timeline`: one lane per profile, the
    calling-context levels ``0..depth`` stacked in each lane, coloured by the
    node's ``kind`` (module docstring).

    Args:
        timeline: the :class:`~cctviz.Timeline` (``cctviz.read_timeline``).
        window: ``(t0, t1)`` seconds from the timeline's start (default: all of it).
        depth: the deepest level drawn (0 = the roots).
        bins: pixel bins across the window: the level-of-detail budget, the most
            rectangles per (lane, level).
        **traits: ``selected_profiles`` (the lanes; ``[]`` = all), ``selection``
            (node ids, a NodeSet or a query string: outlined), ``brush``.
    """

    window = traitlets.Tuple(traitlets.Float(), traitlets.Float()).tag(sync=True)
    depth = traitlets.Int(3).tag(sync=True)
    bins = traitlets.Int(1000).tag(sync=True)
    selected_profiles = traitlets.List(traitlets.Int()).tag(sync=True)
    selection = traitlets.Any(None, allow_none=True).tag(sync=True, to_json=ids_json)
    brush = traitlets.List(traitlets.Float()).tag(sync=True)
    _data = traitlets.Dict().tag(sync=True)
    _marks_wanted = traitlets.Int(-1).tag(sync=True)

    #: traits that make up a view's state (see :attr:`state`)
    STATE = ("window", "depth", "bins", "selected_profiles", "selection", "brush")

    def __init__(
        self,
        timeline: Timeline,
        window: tuple[float, float] | None = None,
        depth: int = 3,
        bins: int = 1000,
        **traits: Any,
    ) -> None:
        if not isinstance(timeline, Timeline):
            raise TypeError(
                f"TimelineView shows a Timeline, got {type(timeline).__name__}; "
                "read one with cctviz.read_timeline"
            )
        self._tl = timeline
        self._t00, t11 = timeline.span
        self._whole = (0.0, max((t11 - self._t00) / PER_S, 1e-9))
        ev = timeline.events
        self._node = ev["node"].to_numpy()
        self._prof = ev["profile"].to_numpy()
        # ns from the start: exact in int64, and float64 keeps ns for any run
        self._start = ev["start"].to_numpy() - self._t00
        self._end = ev["end"].to_numpy() - self._t00
        self._level = np.asarray(timeline.tree.depth, dtype=np.int64)[self._node]
        self._max_level = int(self._level.max()) if self._level.size else 0
        self._init_counters(timeline)
        self._inst: pd.DataFrame | None = None
        self._lod: tuple[tuple, pd.DataFrame, int] | None = None  # see _rects_of
        self._version = 0  # of _data: the front end asks for markers by it
        self._lane_order = self._order_lanes()
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
    def lanes(self) -> np.ndarray:
        """The profile ids drawn, top to bottom: grouped by the profiles'
        :data:`LANE_GROUPS` columns that differ, then by rank."""
        order = self._lane_order
        sel = self.selected_profiles
        return order[np.isin(order, sel)] if sel else order

    @property
    def rects(self) -> pd.DataFrame:
        """The rectangles sent: lane (index), profile, level, node, name, kind,
        bins ``[b0, b1)`` and their times ``t0``/``t1`` (s from the start)."""
        return self._rects.copy()

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

    @traitlets.validate("selected_profiles")
    def _v_profiles(self, proposal: dict) -> list[int]:
        return profile_ids(proposal["value"], self._tl.n_profiles)

    @traitlets.validate("selection")
    def _v_selection(self, proposal: dict) -> NodeSet:
        v, t = proposal["value"], self.tree
        if v is None:
            return NodeSet(t)
        if isinstance(v, str):
            return t.query(v)
        if isinstance(v, NodeSet):
            return v.on(t)  # another tree's nodes: matched by call path
        ids = np.unique(np.asarray([v] if np.isscalar(v) else list(v), dtype=np.int64))
        if ids.size and (ids[0] < 0 or ids[-1] >= len(t)):
            raise traitlets.TraitError(f"selection: node ids must be in [0, {len(t)})")
        return NodeSet(t, ids)

    # ------------------------------------------------------------ data
    @traitlets.observe("window", "depth", "bins", "selected_profiles")
    def _on_state(self, change: dict) -> None:
        if self._ready:
            self._refresh()

    def _groups(self) -> list[str]:
        """The :data:`LANE_GROUPS` columns of the profiles that hold more than one value."""
        p = self._tl.profiles
        return [c for c in LANE_GROUPS if c in p.columns and p[c].nunique(dropna=False) > 1]

    def _order_lanes(self) -> np.ndarray:
        """Profile ids by group (component, host, run: those that differ), then rank."""
        p = self._tl.profiles
        keys = [p[c].astype(str).to_numpy() for c in self._groups()]
        rank = pd.to_numeric(p["rank"], errors="coerce") if "rank" in p.columns else None
        if rank is not None:
            keys.append(rank.fillna(np.inf).to_numpy())
        ids = np.arange(len(p), dtype=np.int64)
        return ids[np.lexsort([ids, *keys[::-1]])] if keys else ids

    def _labels(self, ids: np.ndarray) -> list[str]:
        p = self._tl.profiles
        if "rank" in p.columns:
            r = pd.to_numeric(p["rank"], errors="coerce").to_numpy()
            names = [f"rank {int(r[i])}" if np.isfinite(r[i]) else f"profile {int(i)}" for i in ids]
        else:
            names = [f"profile {int(i)}" for i in ids]
        groups = self._groups()
        if not groups:
            return names
        cols = [p[c].astype(str).to_numpy() for c in groups]
        return [" \u00b7 ".join([*(c[i] for c in cols), nm]) for i, nm in zip(ids, names)]

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
        self._p_end = np.full(timeline.n_profiles, -np.inf)
        np.maximum.at(self._p_end, self._prof, self._end)
        np.maximum.at(self._p_end, self._c_prof, self._c_ts)

    def _counters(self, lane_of: np.ndarray, a: float, b: float) -> dict[str, Any]:
        """The counter bands of the shown lanes: per (lane, track) its peak per
        bin in ``[a, b)`` ns from the start (:func:`counter_peaks`)."""
        nt = max(len(self._tracks), 1)
        prof, track = self._c_pairs // nt, self._c_pairs % nt
        shown = lane_of[prof] >= 0 if prof.size else np.zeros(0, dtype=bool)
        lane = lane_of[prof[shown]]
        track = track[shown]
        order = np.lexsort((lane, track))  # grouped by track, lanes in order
        lane, track = lane[order], track[order]
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
        peaks = counter_peaks(
            series[ok], self._c_ts[ok], self._c_val[ok], a, b, self.bins, int(keys.size), until
        )
        return {
            "k": int(keys.size),
            "tracks": self._tracks,
            "track_units": self._track_units,
            "counter_lane": i32(lane),
            "counter_track": i32(track),
            "counter_peak": f32(peaks.reshape(-1)),
        }

    def _instances(self) -> pd.DataFrame:
        if self._inst is None:
            from ..ops.collectives import instances

            self._inst = instances(self._tl)
        return self._inst

    def _markers(self, lane_of: np.ndarray, a: int, b: int) -> pd.DataFrame:
        """Per collective instance whose last arrival is in ``[a, b)`` ns: the
        late rank's profile, its arrival, the node, ``late_by``."""
        inst = self._instances()
        if not len(inst):
            return pd.DataFrame({"profile": [], "arrival": [], "node": [], "late_by": []})
        late = inst[inst["rank"].to_numpy() == inst["late"].to_numpy()]
        late = late.sort_values("arrival", kind="stable").drop_duplicates("instance", keep="last")
        t = late["arrival"].to_numpy(dtype=np.int64)
        prof = late["profile"].to_numpy(dtype=np.int64)
        ok = (t >= a) & (t < b) & (lane_of[prof] >= 0)
        out = late[ok][["profile", "arrival", "node", "late_by", "ranks"]]
        if len(out) > MAX_MARKERS:
            out = out.nlargest(MAX_MARKERS, "late_by").sort_values("arrival", kind="stable")
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

    def _rects_of(self, lane_of: np.ndarray, a: float, b: float) -> tuple[pd.DataFrame, int]:
        """The level of detail of the window (and the events it holds), kept for
        a refresh of the same window, lanes, depth and bins (markers arriving)."""
        key = (a, b, self.depth, self.bins, lane_of.tobytes())
        if self._lod is not None and self._lod[0] == key:
            return self._lod[1], self._lod[2]
        lanes = self.lanes
        k = self._in_view(lane_of, a, b)
        identity = lanes.size == lane_of.size and bool((lanes == lane_of).all())
        r = lod_rects(
            self._prof[k] if identity else lane_of[self._prof[k]],
            self._level[k],
            self._node[k],
            self._start[k],
            self._end[k],
            a,
            b,
            self.bins,
            self.depth + 1,
        )
        self._lod = (key, r, int(len(self._node[k])))
        return r, self._lod[2]

    def _refresh(self, marks: bool = False) -> None:
        tl, tree = self._tl, self._tl.tree
        w0, w1 = self.window
        a, b = w0 * PER_S, w1 * PER_S  # ns from the start
        lanes = self.lanes
        lane_of = np.full(max(tl.n_profiles, 1), -1, dtype=np.int64)
        lane_of[lanes] = np.arange(lanes.size)
        n_levels = self.depth + 1
        r, n_events = self._rects_of(lane_of, a, b)
        t00 = self._t00
        pending = not marks and self._inst is None and len(tl) > MARKS_AFTER
        if pending:
            marks = pd.DataFrame({c: [] for c in ("profile", "arrival", "node", "late_by")})
        else:
            marks = self._markers(lane_of, t00 + math.floor(a), t00 + math.ceil(b))
        used = np.unique(np.r_[r["node"].to_numpy(), marks["node"].to_numpy(dtype=np.int64)])
        used = used.astype(np.int64)
        index = np.searchsorted(used, r["node"].to_numpy())
        kinds_all = tree.nodes["kind"].astype(object).where(tree.nodes["kind"].notna(), "")
        kinds_used = kinds_all.to_numpy()[used].astype(str)
        # the kinds of the whole tree: a kind keeps its colour in every window
        kinds = np.unique(kinds_all.to_numpy().astype(str))
        kind_code = np.searchsorted(kinds, kinds_used)
        names = [str(x) for x in np.asarray(tree.names, dtype=object)[used]]
        width = (w1 - w0) / self.bins
        rects = r.assign(
            profile=lanes[r["lane"].to_numpy()] if len(r) else np.empty(0, dtype=np.int64),
            name=[names[i] for i in index],
            kind=kinds_used[index] if len(r) else np.empty(0, dtype=object),
            t0=w0 + r["b0"].to_numpy() * width,
            t1=w0 + r["b1"].to_numpy() * width,
        )
        self._rects = rects
        m_node = np.searchsorted(used, marks["node"].to_numpy(dtype=np.int64))
        m_prof = marks["profile"].to_numpy(dtype=np.int64)
        self._version += 1
        self._data = {
            "n": int(len(r)),
            "bins": int(self.bins),
            "levels": int(n_levels),
            "window": [float(w0), float(w1)],
            "whole": list(self._whole),
            "events": n_events,
            "events_total": int(len(tl)),
            "lanes": self._labels(lanes),
            "lane_profile": i32(lanes),
            "lane": i32(r["lane"].to_numpy()),
            "level": i32(r["level"].to_numpy()),
            "b0": i32(r["b0"].to_numpy()),
            "b1": i32(r["b1"].to_numpy()),
            "node": i32(index),
            "cover": f32(r["cover"].to_numpy()),
            "node_id": i32(used),
            "names": names,
            "node_kind": i32(kind_code),
            "kinds": [k or "(none)" for k in kinds.tolist()],
            "m": int(len(marks)),
            "mark_x": f32((marks["arrival"].to_numpy(dtype=np.int64) - t00 - a) / PER_S),
            "mark_lane": i32(lane_of[m_prof]),
            "mark_rank": i32(profile_ranks(self._tl.profiles)[m_prof]),
            "mark_node": i32(m_node),
            "mark_late_by": f32(marks["late_by"].to_numpy(dtype=np.float64) / PER_S),
            "unit": "s",
            "marks_pending": pending,
            "version": self._version,
            **self._counters(lane_of, a, b),
        }


__all__ = ["TimelineView", "counter_peaks", "lod_rects"]
