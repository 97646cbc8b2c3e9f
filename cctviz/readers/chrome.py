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
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..model._algo import ancestors_by_depth
from ..model.ensemble import Ensemble
from ..model.timeline import Timeline
from ..model.tree import Tree
from . import head, register, register_timeline
from ._chrometrace import TraceEvents, described, parse_trace
from ._json import file_bytes, first_byte
from ._threads import AGGREGATION, UNITS, process_profiles
from .kineto import is_kineto_head

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


def _build(
    path: Path, thread_ids: bool
) -> tuple[Tree | Ensemble, list[Tree], list[pd.DataFrame], TraceEvents, pd.DataFrame]:
    if is_kineto_head(head(path)):
        raise ProfileError(path, "a torch.profiler (Kineto) trace: read it with format='kineto'")
    col, top = _parse_samples_first(path)
    sampled = _samples_as_events(path, col, top) if not (len(col.x_ts) or len(col.b_ts)) else 0
    pids, trees, frames, counts = process_profiles(path, col, thread_ids)
    if sampled:
        counts["samples"] = sampled
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
