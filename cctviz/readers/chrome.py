"""Chrome trace-event JSON that is not Kineto, format ``"chrome"``.

What writes it: JAX (``jax.profiler.trace(dir, create_perfetto_trace=True)``:
``perfetto_trace.json.gz``, and ``*.trace.json.gz`` beside it), TensorFlow/XLA
trace-viewer JSON, VizTracer, py-spy (``--format chrometrace``), Perfetto's JSON
export. torch.profiler (Kineto) traces are Chrome traces too; they go to the
``kineto`` reader (its categories, ``schemaVersion``...), which this one refuses.

Format facts (the trace-event format's "JSON Object" and "JSON Array" forms):

- an object with a ``traceEvents`` list (other keys: ``displayTimeUnit``, which
  only says how to display times, ``metadata``, a tool's own keys), or a bare list
  of events (py-spy). ``ts`` and ``dur`` count microseconds (fractions allowed);
- ``X`` complete events (``ts``, ``dur``; without ``dur``, its thread duration
  ``tdur``, as speedscope reads it; without a ``name``, ``(unnamed)``) and
  ``B``/``E`` pairs per (pid, tid):
  an ``E`` closes the innermost open ``B`` of its thread (its name is not
  checked); ``M`` metadata names processes and threads (``process_name``,
  ``thread_name``); ``C`` counters carry their series in ``args``;
- the ``samples`` + ``stackFrames`` form (Hermes, for a trace with no ``X``
  or ``B``/``E`` event): each sample's stack (its frame and the frames' parents)
  lasts until the next sample of its thread (the last: 0), consecutive samples
  under one frame make one event of it (``meta["chrome"]["samples"]``);
- async (``b``/``e``/``n``, ``S``/``T``/``F``), flow (``s``/``t``/``f``),
  instant (``i``/``I``), sample (``P``), object (``N``/``O``/``D``), mark
  (``R``), clock-sync (``c``) events, and JAX's trailing ``{}``, are not read:
  they are counted in ``meta["chrome"]["skipped"]`` by phase.

How the tree is built: one profile per pid (a :class:`~cctviz.Tree` for a file
with one, an :class:`~cctviz.Ensemble` with a ``pid`` and ``process_name``
column in ``profiles`` for several). Each profile has a root ``process`` (kind
``"process"``) and below it a node per thread (kind ``"thread"``), named as the
Kineto reader names them: ``main thread`` (tid = pid) and ``thread 1``,
``thread 2``... by first event, so that processes unify by call path; the
``M`` names are in the node column ``label``, the pid/tid in ``id``
(``thread_ids=True`` names them ``process <pid>``/``thread <tid>``). Events
(kind ``"function"``; their ``cat`` in the column ``category``) nest by time
per thread (:func:`cctviz.model.build.nest_intervals`, vectorised): each goes
under the innermost event open at its start; one that outlives it is clamped
to end with it (counted in ``meta["chrome"]["clamped"]``). Events with the
same call path are one node. Times are nested in whole nanoseconds (the
microseconds of the file, rounded), so that ``ts + dur`` does not round past
an enclosing event's end.

Metrics: ``time`` (exclusive: an event's duration less its children's, ``us``)
and ``calls`` (events), both summed. A thread node's inclusive time is the sum
of its top-level events (its own time is 0: the gaps between them are not
time it spent). ``B`` events never closed end at the thread's last timestamp
(``meta["chrome"]["unclosed"]``); ``E`` events with nothing open are dropped
(``meta["chrome"]["unmatched_end"]``).

The events are parsed into columns by the parse the Kineto reader shares
(:func:`cctviz.readers._chrometrace.parse_trace`).

Not read (ask if needed): ``args`` (py-spy's file and line, say), ``tts`` and
``tdur`` beside a ``dur``, ``id``-scoped counters. The array form's list may
end without its ``]`` (the format allows it, so that a crashed process leaves a
readable trace): read up to its last whole event, ``meta["chrome"]["unterminated"]``;
a file cut inside an event is an error.

>>> import cctviz
>>> t = cctviz.read("../shared/data/chrome-trace/workload.viztracer.json")
>>> t.nodes["name"].tolist()[:2], t.nodes["label"].tolist()[:2], t.units["time"]
(['process', 'main thread'], ['MainProcess', 'MainThread'], 'us')
"""

from __future__ import annotations

import re
from array import array
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..model._algo import ancestors_by_depth
from ..model.build import nest_enter_leave, nest_intervals
from ..model.ensemble import Ensemble
from ..model.timeline import Timeline
from ..model.tree import Tree
from . import head, register, register_timeline
from ._chrometrace import TraceEvents, described, ints, parse_trace
from ._json import file_bytes, first_byte
from .kineto import _key, is_kineto_head

UNITS = {"time": "us", "calls": "count"}
AGGREGATION = {"time": "sum", "calls": "sum"}
#: phases read; the others are counted as skipped
READ_PHASES = {"X", "B", "E", "M", "C"}


# -------------------------------------------------------------------- sniff
_OBJECT = re.compile(rb'^\s*\{.*?"traceEvents"\s*:\s*\[', re.S)
_ARRAY = re.compile(rb"^\s*\[\s*\{")
_PHASE = re.compile(rb'"ph"\s*:\s*"[A-Za-z]"')
_TIME = re.compile(rb'"(?:ts|pid)"\s*:')


def _sniff(path: Path, h: bytes) -> bool:
    """A Chrome trace (an object with ``traceEvents``, or a list of events with a
    ``ph``) that the Kineto reader does not claim."""
    if is_kineto_head(h):
        return False
    if first_byte(h) == b"{":
        return bool(_OBJECT.match(h))
    first = h[:4096]  # the first events: each has a phase and a time or pid
    return bool(_ARRAY.match(h)) and bool(_PHASE.search(first)) and bool(_TIME.search(first))


# -------------------------------------------------------------------- parse
def _parse(path: Path, events: bool = True) -> tuple[TraceEvents, dict[str, Any]]:
    """The events as columns (the shared Chrome-trace parse); the other top-level
    keys. ``events=False``: only ``M`` and ``C`` events (a samples form's)."""
    return parse_trace(
        path, what="a Chrome trace", problem=_problem, array_ok=True, unnamed=UNNAMED,
        categories=None if events else (), other_phases=events,
    )  # fmt: skip


def _parse_samples_first(path: Path) -> tuple[TraceEvents, dict[str, Any]]:
    """:func:`_parse`; a document with ``samples`` and ``stackFrames`` is read by
    its samples, as speedscope reads it (Hermes's ``X`` events there mark the
    threads, with string times): parsed again without its events."""
    try:
        col, top = _parse(path)
    except ProfileError:
        if b'"stackFrames"' not in file_bytes(path):
            raise
        return _parse(path, events=False)
    if top.get("samples") and isinstance(top.get("stackFrames"), dict):
        return _parse(path, events=False)
    return col, top


def _problem(e: BaseException, ev: Any) -> str:
    if isinstance(e, AttributeError):
        return f"expected an event (an object), got {described(ev)}"
    if isinstance(e, KeyError):
        return f"a {ev.get('ph')!r} event without {e.args[0]!r}"
    return (
        f"an event needs numeric ts (and dur for 'X') and hashable pid, tid and cat "
        f"({type(e).__name__}: {e})"
    )


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


def _samples_as_events(path: Path, col: TraceEvents, top: dict[str, Any]) -> int:
    """The ``samples`` + ``stackFrames`` form (Hermes): each sample is its
    stack (the frame ``sf`` and its ``parent`` chain) from its ``ts`` to the
    next sample of its (pid, tid) (the last: 0, as speedscope reads it);
    consecutive samples under one frame at a depth make one ``X`` event of it
    (vectorised, one pass per depth). Appended to ``col``; returns the samples."""
    samples, frames = top.get("samples"), top.get("stackFrames")
    if not isinstance(samples, list) or not isinstance(frames, dict) or not samples:
        return 0
    ids = {str(k): i for i, k in enumerate(frames)}
    try:
        parent = np.array([ids[str(f["parent"])] if f.get("parent") is not None else -1
                           for f in frames.values()], dtype=np.int64)  # fmt: skip
        fname = [str(f.get("name", UNNAMED)) for f in frames.values()]
        sf = np.array([ids[str(x["sf"])] for x in samples], dtype=np.int64)
        ts = np.array([float(x["ts"]) for x in samples])
        key = [(x.get("pid"), x.get("tid")) for x in samples]
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ProfileError(path, f"a sample or stack frame it names is malformed ({e!r})",
                           "samples") from None  # fmt: skip
    th = np.array([col.threads.setdefault(k, len(col.threads)) for k in key], dtype=np.int64)
    order = np.lexsort((ts, th))
    sf, ts, th = sf[order], ts[order], th[order]
    same = np.r_[th[1:] == th[:-1], False]
    end = np.where(same, np.r_[ts[1:], 0.0], ts)  # until the thread's next sample
    _, anc = ancestors_by_depth(parent)
    codes = np.array([col.names.setdefault(n, len(col.names)) for n in fname], dtype=np.int64)
    cat = col.cats.setdefault("sample", len(col.cats))
    for k in range(anc.shape[1]):  # a run of samples under one frame at depth k: one event
        node = anc[sf, k]
        start = np.r_[True, (node[1:] != node[:-1]) | (th[1:] != th[:-1])]
        first = np.flatnonzero(start)
        last = np.r_[first[1:], node.size] - 1
        keep = node[first] >= 0
        first, last = first[keep], last[keep]
        col.x_ts.extend(ts[first].tolist())
        col.x_dur.extend((end[last] - ts[first]).tolist())
        col.x_th.extend(th[first].tolist())
        col.x_name.extend(codes[node[first]].tolist())
        col.x_cat.extend([cat] * first.size)
    return len(samples)


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
def _thread_order(col: TraceEvents, ev: _Events) -> tuple[list[Any], list[list[int]]]:
    """pids (sorted as numbers, then names) and each one's threads by first event."""
    keys = list(col.threads)
    first = np.full(max(len(keys), 1), np.iinfo(np.int64).max)
    np.minimum.at(first, ev.th, ev.start)
    used = sorted({int(t) for t in np.unique(ev.th)}, key=lambda t: (first[t], _key(keys[t][1])))
    pids = sorted({keys[t][0] for t in used}, key=_key)
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


def _build(
    path: Path, thread_ids: bool
) -> tuple[Tree | Ensemble, list[Tree], list[pd.DataFrame], TraceEvents, pd.DataFrame]:
    if is_kineto_head(head(path)):
        raise ProfileError(path, "a torch.profiler (Kineto) trace: read it with format='kineto'")
    col, top = _parse_samples_first(path)
    sampled = _samples_as_events(path, col, top) if not (len(col.x_ts) or len(col.b_ts)) else 0
    ev, counts = _intervals(path, col)
    if sampled:
        counts["samples"] = sampled
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
    meta: dict[str, Any] = {
        k: v for k, v in top.items() if isinstance(v, (str, int, float, bool)) and k != "units"
    }
    meta["chrome"] = {**counts, "skipped": dict(col.skipped), "processes": len(pids)}
    if col.unterminated:  # the array form's list may end without "]": a process that stopped
        meta["chrome"]["unterminated"] = True
    meta["units"] = dict(UNITS)
    meta["aggregation"] = dict(AGGREGATION)
    profiles = pd.DataFrame(
        {"pid": [str(p) for p in pids], "process_name": [col.process_names.get(p) for p in pids]}
    )
    if len(trees) == 1:
        obj: Tree | Ensemble = trees[0]
        obj.meta.update(meta)
    else:
        obj = Ensemble.from_trees(trees, profiles=profiles, meta=meta)
    return obj, trees, frames, col, profiles


#: the name of an event without one (as speedscope names it)
UNNAMED = "(unnamed)"


@register("chrome", _sniff, "Chrome trace-event JSON (JAX, VizTracer, py-spy, Perfetto)")
def read_chrome(path: Path, *, thread_ids: bool = False) -> Tree | Ensemble:
    """Read a Chrome trace-event JSON file (plain or gzipped) that is not Kineto.

    Args:
        path: the ``.json`` / ``.json.gz`` trace (an object with ``traceEvents``
            or a list of events).
        thread_ids: name process and thread nodes by pid/tid; the default gives
            id-free names (``process``, ``main thread``, ``thread 1``...), the
            ``M`` names being in the column ``label``.

    Returns a Tree for a trace of one process, an Ensemble (one profile per pid)
    for several.

    Example:
        >>> import cctviz
        >>> t = cctviz.read("../shared/data/chrome-trace/workload.pyspy.chrometrace.json")
        >>> t.meta["format"], t.meta["chrome"]["begin_end_pairs"]
        ('chrome', 225)
    """
    return _build(Path(path), thread_ids)[0]


@register_timeline("chrome")
def read_chrome_timeline(path: Path, *, thread_ids: bool = False) -> Timeline:
    """A Chrome trace as a :class:`~cctviz.model.timeline.Timeline`: one profile per
    pid, its events on the calling contexts of :func:`read_chrome`'s tree (times in
    ns, the file's microseconds rounded to whole ns; ``parent_event`` is the
    enclosing event, so that ``.ensemble()`` gives :func:`read_chrome`'s times),
    and ``C`` counter events as counter tracks (``timeline.counters``; the format
    gives no unit, so the tracks have none).

    Example:
        >>> import cctviz
        >>> tl = cctviz.read_timeline("../shared/data/chrome-trace/workload.viztracer.json")
        >>> tl.n_profiles, tl.profiles["process_name"].tolist()
        (1, ['MainProcess'])
    """
    from ..model.unify import node_map

    p = Path(path)
    obj, trees, frames, col, profiles = _build(p, thread_ids)
    unified = obj.tree if isinstance(obj, Ensemble) else obj
    parts = []
    for k, (tree, frame) in enumerate(zip(trees, frames)):
        ids = node_map(tree, unified) if tree is not unified else np.arange(len(tree))
        parts.append(frame.assign(node=ids[frame["node"].to_numpy()], profile=k))
    events = pd.concat(parts, ignore_index=True)
    pid_index = {pid: k for k, pid in enumerate(profiles["pid"])}
    counters = None
    if col.counters:
        c = pd.DataFrame(col.counters, columns=["pid", "track", "ts", "value"])
        prof = c["pid"].map(lambda v: pid_index.get(str(v), -1)).to_numpy()
        c = c[prof >= 0].assign(profile=prof[prof >= 0])
        c["ts"] = np.rint(c["ts"].to_numpy() * 1e3).astype(np.int64)
        counters = c[["profile", "track", "ts", "value"]].reset_index(drop=True)
    meta = {k: v for k, v in obj.meta.items() if k not in ("units", "aggregation")}
    meta.update(event_metrics={}, path=str(p), format="chrome")
    return Timeline(unified, events, profiles.assign(file=str(p)), counters=counters, meta=meta)
