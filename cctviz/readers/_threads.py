"""Intervals per thread -> one calling-context tree per process, nested by time.

Shared by the readers whose files are intervals on threads: the Chrome
trace-event reader (its ``X`` and ``B``/``E`` events, parsed into
:class:`~cctviz.readers._chrometrace.TraceEvents`) and the XPlane reader (the
lines of a host plane, put in the same columns). Each process is a root
``process`` with a node per thread (``main thread`` for tid = pid, else
``thread 1``, ``thread 2``... by first event, so that processes unify by call
path; their own names in the column ``label``) and below them the events,
nested by :func:`cctviz.model.build.nest_intervals`: each under the innermost
event open at its start, one that outlives it clamped to end with it.
"""

from __future__ import annotations

from array import array
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..model.build import nest_enter_leave, nest_intervals
from ..model.tree import Tree
from ._chrometrace import TraceEvents, ints

UNITS = {"time": "us", "calls": "count"}
AGGREGATION = {"time": "sum", "calls": "sum"}


def id_key(v: Any) -> Any:
    """A sort key for pids/tids of mixed types (ints, numeric strings, names)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return (0, v, "")
    s = str(v)
    try:
        return (0, int(s), "")
    except ValueError:
        return (1, 0, s)


# ---------------------------------------------------------------- intervals
def _ns(path: Path, us: array, what: str) -> np.ndarray:
    """Microseconds as whole ns (int64); an error for a non-finite value."""
    a = np.frombuffer(us, dtype=np.float64) if len(us) else np.empty(0)
    bad = ~np.isfinite(a)
    if bad.any():
        raise ProfileError(path, f"an event has a non-finite {what} ({a[bad][0]})", "traceEvents")
    if a.size and np.abs(a).max() > 2**62 / 1e3:
        raise ProfileError(path, f"an event's {what} is out of range ({np.abs(a).max()} us)")
    return np.rint(a * 1e3).astype(np.int64)


def _pair_begin_end(col: TraceEvents, path: Path, t_end: np.ndarray) -> tuple[np.ndarray, ...]:
    """``B``/``E`` events paired per thread (vectorised): an ``E`` closes the
    innermost open ``B``. Returns (thread, name, cat, start, end) of the pairs (a
    ``B`` never closed ends at ``t_end`` of its thread) and the counts of unclosed
    ``B`` and unmatched ``E`` events."""
    n = len(col.b_ts)
    th = ints(col.b_th)
    ts = _ns(path, col.b_ts, "ts")
    order = np.lexsort((np.arange(n), ts, th))
    th, ts = th[order], ts[order]
    sign = (np.frombuffer(col.b_sign, dtype=np.int8) if n else np.empty(0, np.int8))[order]
    name = ints(col.b_name)[order]
    cat = ints(col.b_cat)[order]
    # depth per thread; an E that goes below every earlier depth closes nothing
    seg = np.r_[True, th[1:] != th[:-1]] if n else np.empty(0, bool)
    cs = np.cumsum(sign.astype(np.int64))
    rel = cs - np.repeat(cs[seg] - sign[seg], np.diff(np.r_[np.flatnonzero(seg), n]))
    seg_id = np.cumsum(seg) - 1
    big = 4 * (n + 1)
    low = np.minimum.accumulate(rel - big * seg_id) + big * seg_id  # running min per thread
    prev_low = np.where(seg, 0, np.r_[0, low[:-1]])
    unmatched = (sign < 0) & (rel < np.minimum(prev_low, 0))
    keep = ~unmatched
    th, ts, sign, name, cat, rel = th[keep], ts[keep], sign[keep], name[keep], cat[keep], rel[keep]
    low_k = np.minimum(low[keep], 0)
    depth = rel - low_k  # depth after each kept event
    level = np.where(sign > 0, depth, depth + 1)
    m = th.shape[0]
    by = np.lexsort((np.arange(m), level, th))
    nxt = np.r_[by[1:], -1]
    b_at = np.flatnonzero(sign[by] > 0)
    partner = nxt[b_at]
    ok = partner >= 0
    ok[ok] = (th[partner[ok]] == th[by[b_at[ok]]]) & (level[partner[ok]] == level[by[b_at[ok]]])
    ok[ok] = sign[partner[ok]] < 0
    b = by[b_at]
    end = np.where(ok, ts[np.where(ok, partner, 0)], t_end[th[b]])
    return th[b], name[b], cat[b], ts[b], end, int((~ok).sum()), int(unmatched.sum())


class _Events:
    """All intervals of the trace, nested: arrays per interval (in no set order)."""

    th: np.ndarray
    name: np.ndarray
    cat: np.ndarray
    start: np.ndarray  # ns
    end: np.ndarray  # ns, clamped where an event outlives its parent
    nest: dict[str, Any]


def _intervals(path: Path, col: TraceEvents) -> tuple[_Events, dict[str, int]]:
    """X events and paired B/E events as intervals in whole ns, nested per thread."""
    x_ts = _ns(path, col.x_ts, "ts")
    x_dur = _ns(path, col.x_dur, "dur")
    negative = int((x_dur < 0).sum())
    x_dur = np.maximum(x_dur, 0)
    nx = x_ts.shape[0]
    x_th = ints(col.x_th)
    nth = len(col.threads)
    t_end = np.full(max(nth, 1), np.iinfo(np.int64).min)
    np.maximum.at(t_end, x_th, x_ts + x_dur)
    b_ts = _ns(path, col.b_ts, "ts")
    if b_ts.size:
        np.maximum.at(t_end, ints(col.b_th), b_ts)
    b_th, b_name, b_cat, b_start, b_end, unclosed, unmatched = _pair_begin_end(col, path, t_end)
    ev = _Events()
    ev.th = np.r_[x_th, b_th]
    ev.name = np.r_[ints(col.x_name), b_name].astype(np.int64)
    ev.cat = np.r_[ints(col.x_cat), b_cat].astype(np.int64)
    ev.start = np.r_[x_ts, b_start]
    end = np.r_[x_ts + x_dur, b_end]
    ev.nest = nest_intervals(ev.th, ev.start, end)
    ev.end = ev.nest["end"].astype(np.int64)
    counts = {
        "x_events": nx,
        "begin_end_pairs": int(b_start.shape[0]),
        "unclosed": unclosed,
        "unmatched_end": unmatched,
        "negative_dur": negative,
        "clamped": int(ev.nest["clamped"].sum()),
    }
    return ev, counts


# --------------------------------------------------------------------- build
def process_profiles(
    path: Path, col: TraceEvents, thread_ids: bool = False
) -> tuple[list[Any], list[Tree], list[pd.DataFrame], dict[str, int]]:
    """The processes of parsed trace columns (``X`` and ``B``/``E`` events per
    (pid, tid)): pids in order, each one's tree (process > threads > events nested
    by time) and events (``node``, ``start``, ``end`` in ns, ``event``,
    ``parent_event``), and the nesting's counts. Other readers of intervals
    (XPlane's host threads) build their processes here too."""
    ev, counts = _intervals(path, col)
    if ev.start.shape[0] == 0:
        raise ProfileError(
            path, "no 'X' or 'B'/'E' event: nothing to build a tree of", "traceEvents"
        )
    pids, threads = _thread_order(col, ev)
    trees, frames = [], []
    for pid, ths in zip(pids, threads):
        tree, frame = _profile(col, ev, pid, ths, thread_ids)
        trees.append(tree)
        frames.append(frame)
    return pids, trees, frames, counts


def _thread_order(col: TraceEvents, ev: _Events) -> tuple[list[Any], list[list[int]]]:
    """pids (sorted as numbers, then names) and each one's threads by first event."""
    keys = list(col.threads)
    first = np.full(max(len(keys), 1), np.iinfo(np.int64).max)
    np.minimum.at(first, ev.th, ev.start)
    used = sorted({int(t) for t in np.unique(ev.th)}, key=lambda t: (first[t], id_key(keys[t][1])))
    pids = sorted({keys[t][0] for t in used}, key=id_key)
    return pids, [[t for t in used if keys[t][0] == pid] for pid in pids]


def _profile(
    col: TraceEvents, ev: _Events, pid: Any, threads: list[int], thread_ids: bool
) -> tuple[Tree, pd.DataFrame]:
    """The tree of one pid and its events (``node`` in the tree's ids, ns)."""
    stream = ev.nest["stream"]
    keys = list(col.threads)
    th_of = ev.th[np.where(stream >= 0, stream, -1 - stream)]
    names = list(col.names)
    n_names = len(names)
    extra: list[str] = ["process" if not thread_ids else f"process {pid}"]
    labels: list[Any] = [col.process_names.get(pid)]
    ids: list[Any] = [str(pid)]
    parts, ticks = [np.asarray([n_names])], [np.asarray([ev.start[ev.th == threads[0]].min()])]
    order: list[np.ndarray] = []  # per thread, its intervals in Enter order
    count = 0
    for t in threads:
        tid = keys[t][1]
        if thread_ids:
            nm = f"thread {tid}"
        elif str(tid) == str(pid):
            nm = "main thread"
        else:
            count += 1
            nm = f"thread {count}"
        code = n_names + len(extra)
        extra.append(nm)
        labels.append(col.thread_names.get(keys[t]))
        ids.append(str(tid))
        seg = stream[th_of == t]
        k = np.where(seg >= 0, seg, -1 - seg)
        region = np.where(seg >= 0, ev.name[k], -1 - ev.name[k])
        tk = np.where(seg >= 0, ev.start[k], ev.end[k])
        parts += [np.asarray([code]), region, np.asarray([-1 - code])]
        ticks += [tk[:1], tk, tk[-1:]]
        order.append(k[seg >= 0])
    region = np.concatenate([*parts, [-1 - n_names]])
    tick = np.concatenate([*ticks, ticks[-1][-1:]])
    nest = nest_enter_leave(region, tick, int(tick.max()))
    events = np.concatenate(order)  # interval index of each non-wrapper Enter, in order
    enter_region = region[nest["enters"]]
    real = enter_region < n_names
    ctx, parent_enter = nest["ctx"], nest["parent_enter"]
    n_ctx = nest["ctx_parent"].shape[0]
    dur = (ev.end[events] - ev.start[events]).astype(np.float64)
    inc = np.zeros(real.shape[0])
    inc[real] = dur
    pe = parent_enter
    child = np.bincount(pe[real & (pe >= 0)], weights=inc[real & (pe >= 0)], minlength=len(inc))
    own = np.where(real, inc - child, 0.0)
    time = np.bincount(ctx, weights=own, minlength=n_ctx) / 1e3  # ns -> us
    calls = np.bincount(ctx[real], minlength=n_ctx).astype(np.float64)
    # nodes: the contexts less the root context 0
    cr = nest["ctx_region"][1:]
    all_names = np.asarray(names + extra, dtype=object)
    depth_kind = np.asarray(["function"] * n_ctx, dtype=object)[1:]
    is_wrap = cr >= n_names
    depth_kind[is_wrap] = "thread"
    depth_kind[0] = "process"
    label = np.full(n_ctx - 1, None, dtype=object)
    ident = np.full(n_ctx - 1, None, dtype=object)
    label[is_wrap] = np.asarray(labels, dtype=object)[cr[is_wrap] - n_names]
    ident[is_wrap] = np.asarray(ids, dtype=object)[cr[is_wrap] - n_names]
    first = np.full(n_ctx, real.shape[0], dtype=np.int64)
    np.minimum.at(first, ctx[real], np.flatnonzero(real))
    cats = np.asarray(list(col.cats) + [None], dtype=object)
    cat_of_enter = np.full(real.shape[0] + 1, len(cats) - 1, dtype=np.int64)
    cat_of_enter[np.flatnonzero(real)] = ev.cat[events]
    category = cats[cat_of_enter[first]][1:]
    tree, new_id = Tree.from_parents_with_ids(
        nest["ctx_parent"][1:] - 1,
        all_names[cr],
        {"time": time[1:], "calls": calls[1:]},
        kind=depth_kind,
        columns={"label": label, "id": ident, "category": category},
        meta={"units": dict(UNITS), "aggregation": dict(AGGREGATION)},
    )
    # events: one per interval, parent_event the enclosing interval (-1 at a thread's top)
    enter_id = np.full(real.shape[0], -1, dtype=np.int64)
    enter_id[real] = events
    par = np.where(pe >= 0, enter_id[np.maximum(pe, 0)], -1)
    frame = pd.DataFrame(
        {
            "node": new_id[ctx[real] - 1],
            "start": ev.start[events],
            "end": ev.end[events],
            "event": events,
            "parent_event": par[real],
        }
    )
    return tree, frame


__all__ = ["AGGREGATION", "UNITS", "id_key", "process_profiles"]
