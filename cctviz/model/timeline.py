"""Time as a dimension: the intervals of a run, per profile and calling context.

A :class:`Timeline` holds what happened when, on the same unified calling-context
tree as an :class:`~cctviz.model.ensemble.Ensemble`:

- ``events``: one row per interval: ``profile`` (rank, thread or location, as an
  Ensemble's profiles), ``node`` (an id of :attr:`Timeline.tree`), ``start`` and
  ``end`` (int64 ns on the run's clock), ``timed`` (whether the interval is part of
  the time nesting: an operation recorded beside the frames, such as an MPI
  record inside a region, is not), optionally ``event`` and ``parent_event`` (an
  id per event and the id of the timed event that encloses it in time, -1 at the
  top: where a source nests by time containment rather than by call path, as
  :func:`~cctviz.model.build.nest_intervals` does for Kineto and Nsight Systems;
  ``launch_event``: the id of the CPU event that launched a GPU event, and
  ``device``/``stream`` where it ran: :func:`~cctviz.model.gputrace.gpu_trace`),
  and per event what is known: metric columns
  (``comm_bytes``, ``bus_bytes``, ``comm_time``: additive, named in
  ``meta["event_metrics"]`` with their units) and descriptive ones (``kind``,
  ``collective``, ``group``, ``seq``, ``step``; ``peer``: a point-to-point
  message's other rank in its communicator, OTF2's);
- ``counters``: sampled series (``profile``, ``track``, ``ts``, ``value``; units
  per track in :attr:`Timeline.units`), e.g. memory;
- ``profiles``: one row of metadata per profile.

:meth:`Timeline.ensemble` aggregates: exclusive ``time`` (an interval's length
less its timed children's: by ``parent_event`` where given, each event's own time
never below 0, else by the tree's parents per profile and node), ``calls`` (intervals that start
in the timeline) and the event metrics (summed), by the model's rules.
:meth:`Timeline.window` clips every interval to a window, so that windows that
tile a run sum back to the whole: time by clipping, calls and event metrics
counted in the window where the interval starts.

Everything is columnar (numpy/pandas); no loop runs per event.

Example:
    >>> import pandas as pd
    >>> from cctviz.model.tree import Tree
    >>> tree = Tree.from_parents([-1, 0, 0], ["main", "solve", "io"])
    >>> ev = pd.DataFrame({"profile": [0, 0, 0, 1, 1], "node": [0, 1, 2, 0, 1],
    ...                    "start": [0, 10, 60, 0, 5], "end": [100, 50, 90, 80, 75]})
    >>> tl = Timeline(tree, ev)
    >>> tl.ensemble().stats("time")["mean"].tolist()
    [20.0, 55.0, 15.0]
    >>> tl.window(0, 40).ensemble().values("time").tolist()
    [[10.0, 5.0], [30.0, 35.0], [0.0, 0.0]]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .ensemble import Ensemble
from .tree import Tree

#: the columns every events table has
EVENT_COLUMNS = ("profile", "node", "start", "end")
#: the time unit of ``start``/``end`` and of the aggregated ``time``
TIME_UNIT = "ns"


class Timeline:
    """The intervals of a run per profile and calling context (module docstring).

    Args:
        tree: the unified calling-context tree (its structure; metrics are ignored).
        events: the intervals (``profile``, ``node``, ``start``, ``end`` and
            optional columns, see the module docstring).
        profiles: one row per profile (default: one per profile id in ``events``).
        counters: sampled series (``profile``, ``track``, ``ts``, ``value``).
        units: unit per event metric and per counter track.
        meta: metadata (``event_metrics``: the additive per-event columns).
    """

    __slots__ = (
        "_tree",
        "_events",
        "_profiles",
        "_counters",
        "_units",
        "_meta",
        "_cache",
        "_whole",
    )

    def __init__(
        self,
        tree: Tree,
        events: pd.DataFrame,
        profiles: pd.DataFrame | None = None,
        *,
        counters: pd.DataFrame | None = None,
        units: Mapping[str, str] | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        missing = [c for c in EVENT_COLUMNS if c not in events.columns]
        if missing:
            raise ValueError(f"events: missing column(s) {missing}; needs {list(EVENT_COLUMNS)}")
        ev = events.reset_index(drop=True).copy()
        ev["profile"] = ev["profile"].to_numpy(dtype=np.int64)
        ev["node"] = ev["node"].to_numpy(dtype=np.int64)
        ev["start"] = ev["start"].to_numpy(dtype=np.int64)
        ev["end"] = ev["end"].to_numpy(dtype=np.int64)
        if "timed" not in ev.columns:
            ev["timed"] = True
        ev["timed"] = ev["timed"].to_numpy(dtype=bool)
        if "counted" not in ev.columns:  # starts inside this timeline (calls, metrics)
            ev["counted"] = True
        if "parent_event" in ev.columns and "event" not in ev.columns:
            ev["event"] = np.arange(len(ev), dtype=np.int64)  # ids: positions as given
        n = len(tree)
        if len(ev) and (ev["node"].min() < 0 or ev["node"].max() >= n):
            raise ValueError(f"events: node ids must be in [0, {n}) (the tree's nodes)")
        if len(ev) and (ev["end"] < ev["start"]).any():
            k = int(np.flatnonzero((ev["end"] < ev["start"]).to_numpy())[0])
            raise ValueError(f"events: event {k} ends before it starts")
        n_prof = int(ev["profile"].max()) + 1 if len(ev) else 0
        if profiles is None:
            profiles = pd.DataFrame(index=pd.RangeIndex(n_prof, name="profile"))
        elif len(profiles) < n_prof:
            raise ValueError(f"events name profile {n_prof - 1} but {len(profiles)} are described")
        self._tree = Tree(
            tree.nodes, pd.DataFrame(index=tree.nodes.index), tree.meta, _trusted=True
        )
        self._events = ev
        self._profiles = profiles.reset_index(drop=True)
        self._profiles.index.name = "profile"
        self._counters = (
            counters.reset_index(drop=True)
            if counters is not None
            else pd.DataFrame(
                {
                    "profile": pd.Series(dtype=np.int64),
                    "track": pd.Series(dtype=object),
                    "ts": pd.Series(dtype=np.int64),
                    "value": pd.Series(dtype=np.float64),
                }
            )
        )
        self._meta = dict(meta or {})
        self._units = {**dict(units or {}), **self._meta.get("event_metrics", {})}
        self._cache: dict[str, Any] = {}
        self._whole: Timeline = self

    # ------------------------------------------------------------ attributes
    @property
    def whole(self) -> Timeline:
        """The timeline this one is a window of (itself if it is no window):
        windows share its profiles, so views of a run and of its windows select
        profiles together (:func:`cctviz.link`)."""
        return self._whole

    @property
    def tree(self) -> Tree:
        """The unified calling-context tree (structure)."""
        return self._tree

    @property
    def events(self) -> pd.DataFrame:
        """The intervals, one row each (module docstring)."""
        return self._events

    @property
    def counters(self) -> pd.DataFrame:
        """Sampled series: ``profile``, ``track``, ``ts`` (ns), ``value``."""
        return self._counters

    @property
    def profiles(self) -> pd.DataFrame:
        """One row of metadata per profile."""
        return self._profiles

    @property
    def units(self) -> dict[str, str]:
        """Units of the event metrics and counter tracks (times are ns)."""
        return {"time": TIME_UNIT, **self._units}

    @property
    def meta(self) -> dict[str, Any]:
        return dict(self._meta)

    @property
    def event_metrics(self) -> list[str]:
        """The additive per-event columns summed by :meth:`ensemble`."""
        return [m for m in self._meta.get("event_metrics", {}) if m in self._events.columns]

    @property
    def n_profiles(self) -> int:
        return len(self._profiles)

    @property
    def span(self) -> tuple[int, int]:
        """First start and last end, ns (0, 0 when empty)."""
        if not len(self._events):
            return (0, 0)
        return (int(self._events["start"].min()), int(self._events["end"].max()))

    def __len__(self) -> int:
        return len(self._events)

    def __repr__(self) -> str:
        t0, t1 = self.span
        return (
            f"<Timeline: {len(self._events):,} events, {self.n_profiles} profiles, "
            f"{len(self._tree):,} contexts, {(t1 - t0) / 1e9:.6g} s>"
        )

    def memo(self, key: str, make: Callable[[], Any]) -> Any:
        """A result derived from this timeline (which never changes), made by
        ``make()`` the first time ``key`` is asked for and kept: so that the
        views and analyses of one timeline match its collective calls once.

        >>> import pandas as pd
        >>> from cctviz.model.tree import Tree
        >>> tl = Timeline(Tree.from_parents([-1], ["main"]),
        ...               pd.DataFrame({"profile": [0], "node": [0], "start": [0], "end": [5]}))
        >>> made = []
        >>> [tl.memo("answer", lambda: made.append(1) or 42) for _ in range(2)], made
        ([42, 42], [1])
        """
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    # ------------------------------------------------------------ aggregate
    def ensemble(self) -> Ensemble:
        """The aggregate over time: exclusive ``time`` (ns), ``calls`` and the
        event metrics per profile and node, as an :class:`Ensemble`."""
        hit = self._cache.get("ensemble")
        if hit is None:
            hit = self._cache["ensemble"] = _aggregate(self)
        return hit

    # ------------------------------------------------------------ windows
    def window(self, t0: float, t1: float) -> Timeline:
        """The timeline of ``[t0, t1)`` (ns): intervals clipped to it; an interval
        counts (calls, event metrics) in the window where it starts."""
        t0, t1 = int(t0), int(t1)
        if t1 < t0:
            raise ValueError(f"window: t1 ({t1}) is before t0 ({t0})")
        ev = self._events
        s, e = ev["start"].to_numpy(), ev["end"].to_numpy()
        starts_in = (s >= t0) & (s < t1)
        keep = ((s < t1) & (e > t0)) | starts_in
        out = ev[keep].copy()
        out["start"] = np.maximum(out["start"].to_numpy(), t0)
        out["end"] = np.minimum(out["end"].to_numpy(), t1)
        out["counted"] = out["counted"].to_numpy(dtype=bool) & starts_in[keep]
        c = self._counters
        cw = c[(c["ts"] >= t0) & (c["ts"] < t1)] if len(c) else c
        meta = {**self._meta, "window": (t0, t1)}
        part = Timeline(self._tree, out, self._profiles, counters=cw, units=self._units, meta=meta)
        part._whole = self._whole
        return part

    def steps(self, first: int, last: int | None = None) -> Timeline:
        """The window from the start of step ``first`` to the end of step ``last``
        (default: ``first``), by the events' ``step`` column."""
        if "step" not in self._events.columns:
            raise ValueError("steps: this timeline records no step of its events")
        last = first if last is None else last
        step = self._events["step"].to_numpy()
        sel = (step >= first) & (step <= last)
        if not sel.any():
            have = np.unique(step[np.isfinite(step.astype(np.float64))])
            raise ValueError(f"steps: no event in steps {first}..{last}; steps are {have.tolist()}")
        ev = self._events[sel]
        return self.window(int(ev["start"].min()), int(ev["end"].max()))

    @classmethod
    def concat(cls, timelines: Sequence[Timeline]) -> Timeline:
        """One timeline of several (the ranks of a job read one file each): trees
        unified by call path, profiles one after the other, clocks as they are (the
        sources put them on one clock: epoch ns, or a trace's base time).

        >>> import pandas as pd
        >>> from cctviz.model.tree import Tree
        >>> a = Timeline(Tree.from_parents([-1, 0], ["main", "f"]),
        ...              pd.DataFrame({"profile": [0], "node": [1], "start": [0], "end": [5]}))
        >>> b = Timeline(Tree.from_parents([-1, 0], ["main", "g"]),
        ...              pd.DataFrame({"profile": [0], "node": [1], "start": [1], "end": [3]}))
        >>> both = Timeline.concat([a, b])
        >>> both.n_profiles, both.tree.nodes["name"].tolist(), both.events["node"].tolist()
        (2, ['main', 'f', 'g'], [1, 2])
        """
        from .unify import unify_structures

        timelines = list(timelines)
        if not timelines:
            raise ValueError("concat: no timeline given")
        tree, maps = unify_structures([t.tree for t in timelines])
        parts, offset, next_id = [], 0, 0
        for t, m in zip(timelines, maps):
            ev = t.events.copy()
            ev["node"] = m[ev["node"].to_numpy()]
            ev["profile"] = ev["profile"].to_numpy() + offset
            if "event" in ev.columns:  # event ids stay unique across the parts
                ev["event"] = ev["event"].to_numpy() + next_id
                for link in ("parent_event", "launch_event"):
                    if link in ev.columns:
                        par = ev[link].to_numpy()
                        ev[link] = np.where(par >= 0, par + next_id, -1)
                next_id = int(ev["event"].max()) + 1 if len(ev) else next_id
            parts.append(ev)
            offset += t.n_profiles
        counters = [
            t.counters.assign(profile=t.counters["profile"].to_numpy() + o)
            for t, o in zip(timelines, np.cumsum([0] + [t.n_profiles for t in timelines[:-1]]))
            if len(t.counters)
        ]
        metrics: dict[str, str] = {}
        for t in timelines:
            metrics.update(t.meta.get("event_metrics", {}))
        meta = {**timelines[0].meta, "event_metrics": metrics, "parts": len(timelines)}
        units: dict[str, str] = {}
        for t in timelines:
            units.update(t._units)
        return cls(
            tree,
            pd.concat(parts, ignore_index=True),
            pd.concat([t.profiles for t in timelines], ignore_index=True),
            counters=pd.concat(counters, ignore_index=True) if counters else None,
            units=units,
            meta=meta,
        )

    def select(self, profiles: Sequence[int] | np.ndarray) -> Timeline:
        """Only the events of ``profiles`` (ids kept: the profiles table is whole)."""
        ids = np.asarray(profiles, dtype=np.int64)
        ev = self._events[np.isin(self._events["profile"].to_numpy(), ids)]
        c = self._counters
        cs = c[np.isin(c["profile"].to_numpy(), ids)] if len(c) else c
        return Timeline(
            self._tree, ev, self._profiles, counters=cs, units=self._units, meta=self._meta
        )


def profile_ranks(profiles: pd.DataFrame) -> np.ndarray:
    """The rank of every profile of a profiles table (an Ensemble's or a Timeline's):
    its ``rank`` column where there is one (-1 where unknown), else its position."""
    if "rank" in profiles.columns:
        return pd.to_numeric(profiles["rank"], errors="coerce").fillna(-1).to_numpy(dtype=np.int64)
    return np.arange(len(profiles), dtype=np.int64)


def number_steps(events: pd.DataFrame, tree: Tree, kind: str = "step") -> np.ndarray:
    """The step of every event: the index (per profile, in time order) of the
    interval of a ``kind`` node (a runtime's ``step`` context) that holds its start;
    -1 outside every step. The runtime's own buckets of that kind, named in
    parentheses ("(warm-up)", "(outside steps)"), are not steps."""
    names = tree.nodes["name"].astype(str)
    steps_nodes = (tree.nodes["kind"].to_numpy() == kind) & ~names.str.startswith("(").to_numpy()
    is_step = steps_nodes[events["node"].to_numpy()]
    out = np.full(len(events), -1, dtype=np.int64)
    prof = events["profile"].to_numpy()
    start, end = events["start"].to_numpy(), events["end"].to_numpy()
    for p in np.unique(prof[is_step]):  # a loop per profile, not per event
        mine = prof == p
        steps = np.flatnonzero(mine & is_step)
        steps = steps[np.argsort(start[steps], kind="stable")]
        s0, s1 = start[steps], end[steps]
        idx = np.flatnonzero(mine)
        k = np.searchsorted(s0, start[idx], side="right") - 1
        inside = (k >= 0) & (start[idx] < s1[np.maximum(k, 0)])
        out[idx[inside]] = k[inside]
    return out


def _own_time(ev: pd.DataFrame, dur: np.ndarray, timed: np.ndarray) -> np.ndarray:
    """Each event's own time: its length less its timed children's (by
    ``parent_event``), never below 0 (siblings that overlap in a trace)."""
    ids = ev["event"].to_numpy(dtype=np.int64)
    par = ev["parent_event"].to_numpy(dtype=np.int64)
    pos = np.full(int(ids.max()) + 1 if len(ids) else 0, -1, dtype=np.int64)
    pos[ids] = np.arange(len(ids))
    ok = timed & (par >= 0) & (par < pos.shape[0])
    ppos = np.where(ok, pos[np.where(ok, par, 0)], -1)
    ok &= ppos >= 0
    children = np.bincount(ppos[ok], weights=dur[ok], minlength=len(ids))
    return np.maximum(dur - children, 0.0)


def _aggregate(tl: Timeline) -> Ensemble:
    """Rows (node, profile, exclusive metrics) of the timeline's events."""
    ev = tl.events
    tree = tl.tree
    n_nodes, n_prof = len(tree), tl.n_profiles
    node = ev["node"].to_numpy()
    prof = ev["profile"].to_numpy()
    key = prof * n_nodes + node
    size = n_prof * n_nodes
    timed = ev["timed"].to_numpy(dtype=bool)
    counted = ev["counted"].to_numpy(dtype=bool)
    dur = (ev["end"].to_numpy() - ev["start"].to_numpy()).astype(np.float64)
    if "parent_event" in ev.columns:
        own = _own_time(ev, dur, timed)
        exclusive = np.bincount(key[timed], weights=own[timed], minlength=size)
    else:
        inclusive = np.bincount(key[timed], weights=dur[timed], minlength=size)
        parent = np.asarray(tree.parent)
        # what the timed children of each node took, per profile
        has_parent = parent[node] >= 0
        sel = timed & has_parent
        pkey = prof[sel] * n_nodes + parent[node[sel]]
        exclusive = inclusive - np.bincount(pkey, weights=dur[sel], minlength=size)
    columns: dict[str, np.ndarray] = {
        "time": exclusive,
        "calls": np.bincount(key[counted], minlength=size).astype(np.float64),
    }
    for m in tl.event_metrics:
        v = ev[m].to_numpy(dtype=np.float64)
        ok = counted & np.isfinite(v)
        columns[m] = np.bincount(key[ok], weights=v[ok], minlength=size)
    present = np.bincount(key, minlength=size) > 0
    k = np.flatnonzero(present)
    rows = pd.DataFrame(
        {"node": k % n_nodes, "profile": k // n_nodes, **{m: c[k] for m, c in columns.items()}}
    )
    units = {**tree.meta.get("units", {}), "time": TIME_UNIT, "calls": "count"}
    units.update({m: u for m, u in tl.units.items() if m in columns})
    structure = Tree(
        tree.nodes,
        pd.DataFrame(index=tree.nodes.index),
        {**tree.meta, "units": units},
        _trusted=True,
    )
    meta = {k: v for k, v in tl.meta.items() if k not in ("event_metrics",)}
    return Ensemble(structure, rows, tl.profiles, meta={**meta, "units": units})


__all__ = ["EVENT_COLUMNS", "TIME_UNIT", "Timeline", "number_steps", "profile_ranks"]
