"""Chrome trace-event JSON parsed into columns: the one parse of the readers that
take it (``chrome``, and ``kineto`` for torch.profiler's traces).

:func:`parse_trace` streams ``traceEvents`` (:class:`~cctviz.readers._jsonstream.JsonStream`,
about 64 KiB of events per ``json.loads`` call, the garbage collector paused) and
keeps, per event, only columns in :mod:`array` buffers (:class:`TraceEvents`),
never a list of all events:

- ``X`` complete events: thread (an interned ``(pid, tid)``), name (interned, a
  string), category (interned), ``ts``, ``dur`` and, where asked, the
  ``args.correlation`` (-1 for none); ``categories`` limits which are read (the
  others are counted in ``skipped`` by category, or dropped unseen);
- ``B``/``E`` events (thread, name of a ``B``, category, ``ts``, +1/-1), ``C``
  counters (a sample per numeric series in ``args``), counted as skipped by
  phase with ``other_phases=True``, left out otherwise;
- ``M`` events: process names and labels, thread names;
- ``i`` instants to a reader's ``on_instant`` (else like the other phases).

A reader's ``on_x(k, cat, name, args)`` sees each ``X`` event kept (its index
among them) for what else it keeps of ``args``; ``on_name(name, code)`` each new
name. Errors are :class:`~cctviz.errors.ProfileError` naming the event
(``traceEvents[k]``) in the reader's words (``problem``).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ProfileError
from ._json import gc_paused
from ._jsonstream import CHUNK, JsonStream


class TraceEvents:
    """What :func:`parse_trace` keeps: flat typed arrays, interned strings."""

    def __init__(self) -> None:
        #: the events' list ended without its "]" (the array form allows it)
        self.unterminated = False
        self.names: dict[str, int] = {}
        self.cats: dict[Any, int] = {}
        self.threads: dict[tuple[Any, Any], int] = {}
        # X events
        self.x_th, self.x_name, self.x_cat = array("i"), array("i"), array("i")
        self.x_ts, self.x_dur = array("d"), array("d")
        self.x_corr = array("q")  # args.correlation (-1: none), where asked for
        # B/E events (sign +1 for B, -1 for E; name of the B, -1 for an E)
        self.b_th, self.b_name, self.b_cat = array("i"), array("i"), array("i")
        self.b_ts, self.b_sign = array("d"), array("b")
        # M events
        self.process_names: dict[Any, str] = {}
        self.process_labels: dict[Any, str] = {}
        self.thread_names: dict[tuple[Any, Any], str] = {}
        self.counters: list[tuple[Any, str, float, float]] = []  # pid, track, ts, value
        self.skipped: dict[Any, int] = {}


def ints(buf: array) -> np.ndarray:
    """An int buffer of :class:`TraceEvents` as int64 (empty where it is)."""
    return (
        np.frombuffer(buf, dtype=np.int32).astype(np.int64) if len(buf) else np.empty(0, np.int64)
    )


def floats(buf: array) -> np.ndarray:
    """A float buffer of :class:`TraceEvents` as float64, without a copy."""
    return np.frombuffer(buf, dtype=np.float64) if len(buf) else np.empty(0)


def parse_trace(
    path: Path,
    *,
    what: str,
    problem: Callable[[BaseException, Any], str],
    array_ok: bool = False,
    categories: Collection[Any] | None = None,
    drop: Collection[Any] = (),
    correlation: bool = False,
    other_phases: bool = True,
    unnamed: str | None = "",
    on_x: Callable[[int, Any, int, dict], None] | None = None,
    on_name: Callable[[str, int], None] | None = None,
    on_instant: Callable[[dict], None] | None = None,
    chunk: int = CHUNK,
    into: TraceEvents | None = None,
) -> tuple[TraceEvents, dict[str, Any]]:
    """Stream the events of a Chrome trace into columns (module docstring); the
    other top-level keys.

    Args:
        what: the document in error messages (``"a Kineto trace"``).
        problem: the reader's words for an event it cannot read: from the
            exception (``AttributeError``: not an object, or ``args`` not one;
            ``KeyError``: a key missing; ``TypeError``/``ValueError``/
            ``OverflowError``: a value of the wrong type) and the event.
        array_ok: a bare list of events (the format's JSON Array form) is read too.
        categories: the ``X`` categories read (None: all); the others count in
            ``skipped`` by category, but those in ``drop``, which vanish.
        correlation: keep ``args.correlation`` of the ``X`` events.
        other_phases: read ``B``/``E`` and ``C`` events and count the phases not
            read in ``skipped`` (``"phase 'i'"``, ``"no phase"``); else skip them.
        unnamed: the name of an event without one (None: an error).
        into: the columns to fill (a reader's :class:`TraceEvents` with more).
    """
    st = JsonStream(path, chunk)
    top: dict[str, Any] = {}
    col = TraceEvents() if into is None else into
    names, cats, threads, skipped = col.names, col.cats, col.threads, col.skipped
    x_th, x_name, x_cat = col.x_th.append, col.x_name.append, col.x_cat.append
    x_ts, x_dur, x_corr = col.x_ts.append, col.x_dur.append, col.x_corr.append
    kx = 0
    k0 = 0  # index of the batch's first event in traceEvents
    batch: list = []
    ev: Any = None
    empty: dict = {}

    def new_name(nm: Any, batch: list, ev: Any, k0: int) -> int:
        """The code of a name not seen yet (the hot path looks codes up inline)."""
        if not isinstance(nm, str):
            raise ProfileError(
                path,
                f"event name {nm!r} is not a string",
                f"traceEvents[{_index(batch, ev, k0)}].name",
            )
        nc = names[nm] = len(names)
        if on_name is not None:
            on_name(nm, nc)
        return nc

    with gc_paused():
        try:
            for batch in st.batches(top, "traceEvents", what, array_ok=array_ok):
                for ev in batch:
                    ph = ev.get("ph")
                    if ph == "X":
                        cat = ev.get("cat")
                        if categories is not None and cat not in categories:
                            if cat not in drop:
                                skipped[cat] = skipped.get(cat, 0) + 1
                            continue
                        key = (ev.get("pid"), ev.get("tid"))
                        th = threads.get(key)
                        if th is None:
                            th = threads[key] = len(threads)
                        nm = ev.get("name", unnamed)
                        nc = names.get(nm)
                        if nc is None:
                            nc = new_name(nm, batch, ev, k0)
                        cc = cats.get(cat)
                        if cc is None:
                            cc = cats[cat] = len(cats)
                        x_ts(ev["ts"])
                        d = ev.get("dur")  # else the thread duration, as speedscope reads it
                        if d is None:
                            d = ev["tdur"] if "tdur" in ev else ev["dur"]  # the KeyError says dur
                        x_dur(d)
                        x_th(th)
                        x_name(nc)
                        x_cat(cc)
                        if correlation or on_x is not None:
                            args = ev.get("args") or empty
                            if correlation:
                                corr = args.get("correlation")
                                x_corr(-1 if corr is None else corr)
                            if on_x is not None:
                                on_x(kx, cat, nc, args)
                        kx += 1
                    elif ph == "M":
                        _metadata(ev, col)
                    elif ph == "i" and on_instant is not None:
                        on_instant(ev)
                    elif not other_phases:
                        continue
                    elif ph == "B" or ph == "E":
                        key = (ev.get("pid"), ev.get("tid"))
                        th = threads.get(key)
                        if th is None:
                            th = threads[key] = len(threads)
                        col.b_ts.append(ev["ts"])
                        col.b_th.append(th)
                        col.b_sign.append(1 if ph == "B" else -1)
                        if ph == "B":
                            nm = ev.get("name", unnamed)
                            nc = names.get(nm)
                            if nc is None:
                                nc = new_name(nm, batch, ev, k0)
                            col.b_name.append(nc)
                        else:
                            col.b_name.append(-1)
                        cat = ev.get("cat")
                        cc = cats.get(cat)
                        if cc is None:
                            cc = cats[cat] = len(cats)
                        col.b_cat.append(cc)
                    elif ph == "C":
                        _counter(ev, col)
                    else:
                        w = f"phase {ph!r}" if isinstance(ph, str) else "no phase"
                        skipped[w] = skipped.get(w, 0) + 1
                k0 += len(batch)
        except ProfileError:
            raise
        except (AttributeError, KeyError, TypeError, OverflowError, ValueError) as e:
            raise ProfileError(
                path, problem(e, ev), f"traceEvents[{_index(batch, ev, k0)}]"
            ) from None
        finally:
            col.unterminated = st.unterminated
            st.close()
    return col, top


def _index(batch: list, ev: Any, k0: int) -> int:
    """Index in traceEvents of the event ``ev`` of a batch starting at ``k0``."""
    return k0 + next((i for i, e in enumerate(batch) if e is ev), 0)


def described(ev: Any) -> str:
    """An event that is no object, for an error message: its type and start."""
    return f"{type(ev).__name__} {str(ev)[:40]!r}"


def _metadata(ev: dict, col: TraceEvents) -> None:
    args = ev.get("args")
    if not isinstance(args, dict):
        return
    nm = ev.get("name")
    if nm == "thread_name":
        col.thread_names[(ev.get("pid"), ev.get("tid"))] = str(args.get("name"))
    elif nm == "process_name":
        col.process_names[ev.get("pid")] = str(args.get("name"))
    elif nm == "process_labels":
        col.process_labels[ev.get("pid")] = str(args.get("labels"))


def _counter(ev: dict, col: TraceEvents) -> None:
    """A ``C`` event: one sample per numeric series in ``args`` (track ``name``
    for a series called ``value`` or named as the event, else ``name key``)."""
    args, ts, name = ev.get("args"), ev.get("ts"), str(ev.get("name", ""))
    if not isinstance(args, dict) or not _is_number(ts):
        what = "counter without args or ts"
        col.skipped[what] = col.skipped.get(what, 0) + 1
        return
    for key, v in args.items():
        if _is_number(v) and np.isfinite(v):
            track = name if key in ("value", name) else f"{name} {key}"
            col.counters.append((ev.get("pid"), track, float(ts), float(v)))


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


__all__ = ["TraceEvents", "described", "floats", "ints", "parse_trace"]
