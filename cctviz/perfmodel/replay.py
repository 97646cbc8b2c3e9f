"""Replay a trace, find the critical path of a step across ranks, ask what if.

:func:`replay` builds the dependency graph of a Timeline (:mod:`.graph`:
program order per lane, matched collective instances across ranks,
asynchronous calls and where they are waited for) and replays it: every chunk
starts when the one before it on its lane ends and when what it waits for is
done, and takes its measured own time, so the unchanged graph gives back the
measured steps. A what-if (:mod:`.whatif`: ``Scale``, ``Delay``, ``Balance``,
``Bandwidth``) changes durations and replays again; waits are recomputed, never
copied.

A step is what the trace marks as one (a ``step`` node: the runtime's step
contexts, Kineto's ``ProfilerStep#N``), per step across the ranks: from the
earliest start of its step intervals to the latest end. Without step markers
the whole trace is one step (a warning says so).

Example:
    >>> import pandas as pd
    >>> from cctviz.model.timeline import Timeline
    >>> from cctviz.model.tree import Tree
    >>> tree = Tree.from_parents([-1, 0, 1, 1], ["main", "step", "work", "all_reduce"],
    ...                          kind=["root", "step", "func", "comm"])
    >>> ev = pd.DataFrame({"profile": [0, 0, 0, 0, 1, 1, 1, 1], "node": [0, 1, 2, 3] * 2,
    ...     "start": [0, 0, 0, 50, 0, 0, 0, 10], "end": [60, 60, 50, 60, 60, 60, 10, 60]})
    >>> rp = replay(Timeline(tree, ev))
    >>> rp.steps.round(9).values.tolist()  # measured, replayed, span: s
    [[6e-08, 6e-08, 6e-08]]
    >>> from cctviz.perfmodel.whatif import Scale
    >>> rp.what_if(Scale("work", 0.5)).steps["replayed [s]"].round(9).tolist()
    [3.5e-08]
    >>> rp.critical_path().by_context.index.tolist()
    ['main/step/work', 'main/step/all_reduce']
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..model._algo import lexsort
from ..model.ensemble import Ensemble
from ..model.tables import UnitTable, with_units
from ..model.timeline import Timeline, number_steps
from .graph import COLL, ISSUE, K_COMM, KERNEL, KINDS, PLAIN, SYNC, Graph, build

#: nanoseconds per second (the tables are in seconds)
NS = 1e9
#: a walk segment that is an asynchronous call's transfer, kept whole
K_FREE_COMM = 100


class ReplayWarning(UserWarning):
    """What a trace lacks for the replay, and what was assumed instead."""


def replay(timeline_or_path: Any, **read_kw: Any) -> Replay:
    """Replay a trace (module docstring).

    Args:
        timeline_or_path: a :class:`~cctviz.model.timeline.Timeline`, or what
            :func:`cctviz.read_timeline` reads (a run folder of ``cctviz run
            --timeline``, an OTF2 archive, Kineto traces: one file, a glob or a
            folder of ranks, nsys SQLite).
        read_kw: passed to ``read_timeline``.

    Returns:
        a :class:`Replay`: ``steps`` (measured and replayed), ``critical_path()``,
        ``what_if(...)``, ``opportunities()``.

    Example:
        >>> import cctviz
        >>> rp = cctviz.perfmodel.replay("../shared/data/pipit/ping-pong-otf2/traces.otf2")
        >>> rp.critical_path().length > 0
        True
    """
    if isinstance(timeline_or_path, Timeline):
        tl = timeline_or_path
    elif isinstance(timeline_or_path, (str, os.PathLike)):
        from ..readers import read_timeline

        tl = read_timeline(timeline_or_path, **read_kw)
    else:
        raise TypeError(
            f"replay: expected a Timeline or a path, got {type(timeline_or_path).__name__}"
        )
    if len(tl) == 0:
        raise ValueError("replay: the timeline has no events")
    graph = build(tl)
    _warn_lacks(tl, graph)
    steps = _steps(tl)
    steps["lane"] = graph.ev_lane[steps["event"].to_numpy(dtype=np.int64)]
    return Replay(graph, steps, graph.dur, graph.c_transfer.copy())  # (what-ifs copy)


def _warn_lacks(tl: Timeline, graph: Graph) -> None:
    """Say what the trace lacks and what the replay assumes for it."""
    said = []
    cut = tl.meta.get("cut_ns")
    if cut is not None and cut == cut:
        said.append(
            "the timeline was cut by --timeline-limit: the replay covers the recorded "
            "part, and calls that a rank did not record before the cut wait for nobody"
        )
    prof = tl.profiles
    if "world_size" in tl.meta and "rank" in prof.columns:
        ranks = set(pd.to_numeric(prof["rank"], errors="coerce").dropna().astype(int))
        missing = sorted(set(range(int(tl.meta["world_size"]))) - ranks)
        if missing:
            said.append(
                f"rank(s) {missing} of {tl.meta['world_size']} have no trace: their "
                "collective calls are assumed to arrive no later than the others'"
            )
    said += graph.notes
    for s in said:
        warnings.warn(f"replay: {s}", ReplayWarning, stacklevel=3)


def _steps(tl: Timeline) -> pd.DataFrame:
    """One row per step interval: ``event`` (its index), ``lane``, ``step``."""
    ev = tl.events
    tree = tl.tree
    names = tree.nodes["name"].astype(str)
    kinds = tree.nodes["kind"].astype(str) if "kind" in tree.nodes else None
    is_step_node = names.str.startswith("ProfilerStep#").to_numpy()
    if kinds is not None:
        is_step_node |= (kinds.to_numpy() == "step") & ~names.str.startswith("(").to_numpy()
    node = ev["node"].to_numpy()
    idx = np.flatnonzero(is_step_node[node] & ev["timed"].to_numpy(dtype=bool))
    if not idx.size:
        warnings.warn(
            "replay: the trace has no step markers (step contexts, ProfilerStep#); "
            "the whole trace is taken as one step",
            ReplayWarning,
            stacklevel=3,
        )
        return pd.DataFrame({"event": np.zeros(0, np.int64), "lane": [], "step": []})
    sub = ev.iloc[idx]
    tree_kind = kinds.to_numpy() if kinds is not None else None
    k = number_steps(sub.assign(node=sub["node"]), tree, kind="step")
    if tree_kind is None or (k < 0).any():  # ProfilerStep#: numbered per lane in order
        order = np.lexsort((sub["start"].to_numpy(), sub["profile"].to_numpy()))
        prof = sub["profile"].to_numpy()[order]
        first = np.r_[0, np.flatnonzero(prof[1:] != prof[:-1]) + 1]
        pos = np.arange(len(order)) - np.repeat(first, np.diff(np.r_[first, len(order)]))
        k = np.empty(len(order), np.int64)
        k[order] = pos
    return pd.DataFrame({"event": idx, "lane": sub["profile"].to_numpy(), "step": k})


class Replay:
    """A replayed trace: measured against replayed steps, the critical path,
    what-if predictions (module docstring). Made by :func:`replay`.

    Attributes:
        steps: one row per step: ``measured [s]`` (each rank's time in the step,
            from its step's start to its end, as the training script's own clock
            counts it, averaged over the ranks), ``replayed [s]`` (the same, replayed;
            a what-if's prediction) and ``span [s]`` (replayed, from the first
            rank's start of the step to the last rank's end: the critical path's
            length).
        changes: the what-if changes replayed (empty for the unchanged trace).
    """

    def __init__(
        self,
        graph: Graph,
        step_rows: pd.DataFrame,
        dur: np.ndarray,
        transfer: np.ndarray,
        changes: Sequence[Any] = (),
    ) -> None:
        self._g = graph
        self._step_rows = step_rows
        self._dur = dur
        self._transfer = transfer
        self.changes = tuple(changes)
        self._first: np.ndarray | None = None
        self._psteps: np.ndarray | None = None
        self._base = int(graph.timeline.span[0])  # times inside are ns from here
        self._sim = _simulate(graph, dur, transfer, self._base)
        self._cum: np.ndarray | None = None  # per piece: the durations before it
        self._lane_bounds_made: dict[bool, pd.DataFrame] = {}
        self.steps = self._step_table()

    # ------------------------------------------------------------------ API
    @property
    def timeline(self) -> Timeline:
        """The measured Timeline."""
        return self._g.timeline

    @property
    def graph(self) -> Graph:
        """The dependency graph (:mod:`.graph`)."""
        return self._g

    def event_times(self, relative: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Replayed (start, end) of every event of the timeline, ns on its clock
        (``relative``: ns from its start, exact to well below a ns; on the clock, a
        float64 of an epoch's ns keeps about 256 ns), NaN for events folded into a
        communication call or left out."""
        return self._event_times(None, relative)

    def _event_times(
        self, events: np.ndarray | None, relative: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`event_times` of ``events`` (indices; None: all)."""
        g = self._g
        first, last = g.ev_first, g.ev_last
        if events is not None:
            first, last = first[events], last[events]
        if not g.n_chunks:  # nothing replayed (no timed event)
            nan = np.full(first.shape[0], np.nan)
            return nan, nan.copy()
        s = np.where(first >= 0, self._piece_times(np.maximum(first, 0))[0], np.nan)
        e = np.where(last >= 0, self._piece_times(np.maximum(last, 0))[1], np.nan)
        if relative:
            return s, e
        return s + self._base, e + self._base

    def replayed(self, label: str | None = None) -> Timeline:
        """The replayed run as a Timeline (every event at its replayed times, on
        the measured run's clock; events folded into a communication call left
        out), its profiles' ``run`` column ``label`` (default: "what if: " and the
        changes, or "replayed")."""
        tl = self._g.timeline
        s, e = self.event_times(relative=True)
        keep = np.isfinite(s) & np.isfinite(e)
        ev = tl.events[keep].copy()
        ev["start"] = self._base + np.rint(s[keep]).astype(np.int64)
        ev["end"] = np.maximum(self._base + np.rint(e[keep]).astype(np.int64), ev["start"])
        if label is None:
            from .whatif import describe

            label = (
                "what if: " + "; ".join(describe(c) for c in self.changes)
                if self.changes
                else "replayed"
            )
        profiles = tl.profiles.reset_index(drop=True).assign(run=label)
        meta = {k: v for k, v in tl.meta.items() if k not in ("cut_ns", "path")}
        return Timeline(tl.tree, ev, profiles, units=tl.units, meta=meta)

    def beside(self, label: str = "measured") -> Timeline:
        """The measured run and this replay (a what-if's prediction) in one Timeline,
        the measured lanes first: ``TimelineView(rp.what_if(...).beside())`` draws
        the predicted steps beside the measured ones (lanes "measured · rank 0",
        "what if: ... · rank 0")."""
        tl = self._g.timeline
        measured = Timeline(
            tl.tree, tl.events, tl.profiles.reset_index(drop=True).assign(run=label),
            counters=tl.counters if len(tl.counters) else None, units=tl.units,
            meta={k: v for k, v in tl.meta.items() if k != "path"},
        )  # fmt: skip
        return Timeline.concat([measured, self.replayed()])

    @property
    def _first_of_lane(self) -> np.ndarray:
        """Per chunk: whether it is its lane's first (made once)."""
        if self._first is None:
            lane = self._g.c_lane
            self._first = np.r_[True, lane[1:] != lane[:-1]] if lane.size else lane.astype(bool)
        return self._first

    def piece_steps(self) -> np.ndarray:
        """The step of every piece of the graph (-1: outside the steps): the step
        interval of its profile that holds its measured start (every lane of a
        profile: its threads and GPU streams); without step markers, step 0."""
        if self._psteps is None:
            g = self._g
            rows = self._step_rows
            out = np.full(g.lane.shape[0], -1, dtype=np.int64)
            if not len(rows):
                out[:] = 0
            else:
                ev = g.timeline.events
                e = rows["event"].to_numpy(dtype=np.int64)
                prof = ev["profile"].to_numpy(dtype=np.int64)[e]
                s0, s1 = ev["start"].to_numpy()[e], ev["end"].to_numpy()[e]
                order = np.lexsort((s0, prof))
                prof, s0, s1, k = prof[order], s0[order], s1[order], rows["step"].to_numpy()[order]
                p_prof = g.lane_prof[g.lane]
                width = int(max(s1.max(), g.end.max()) - min(s0.min(), g.start.min())) + 2
                base = min(s0.min(), g.start.min())
                key = prof * width + (s0 - base)
                at = np.searchsorted(key, p_prof * width + (g.start - base), side="right") - 1
                ok = at >= 0
                ok[ok] &= (prof[at[ok]] == p_prof[ok]) & (g.start[ok] < s1[at[ok]])
                out[ok] = k[at[ok]]
            self._psteps = out
        return self._psteps

    def what_if(self, *changes: Any) -> Replay:
        """A new Replay with ``changes`` (:mod:`.whatif`) applied: its ``steps``
        hold the prediction in ``replayed [s]``; ``measured [s]`` stays this
        trace's. Example: ``rp.what_if(Balance("mlp"), Bandwidth(2.0))``.
        """
        from .whatif import apply_changes

        dur, transfer = apply_changes(self, changes)
        return Replay(self._g, self._step_rows, dur, transfer, self.changes + tuple(changes))

    def critical_path(self, step: int | None = None) -> CriticalPath:
        """The critical path of ``step`` (None: of every step) across the ranks."""
        return CriticalPath(self, step)

    def opportunities(self, top: int = 10) -> UnitTable:
        """What to change first: for each context on the critical path, the saving
        per step (``saving [s]``, ``share`` of the step) the replay predicts for
        balancing it across the ranks, halving it, and doubling the bandwidth of
        its collectives, ranked by saving (each predicted by a what-if replay,
        never by summing the path)."""
        from .whatif import opportunities

        return opportunities(self, top)

    def step_bounds(self) -> pd.DataFrame:
        """Per step: ``start``, ``end`` (replayed, ns from the timeline's start) and
        the lane whose step ends last."""
        return self._bounds(replayed=True)

    def __repr__(self) -> str:
        n = len(self.steps)
        what = f", {len(self.changes)} change(s)" if self.changes else ""
        return f"<Replay: {n} step(s), {self._g.n_chunks} chunks{what}>"

    # ------------------------------------------------------------ internals
    def _chunk_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The replayed chunk starts and ends (ns from the timeline's start)."""
        return self._sim.start, self._sim.end

    def _offsets(self, pieces: np.ndarray, chunks: np.ndarray) -> np.ndarray:
        """The durations of the pieces before each of ``pieces`` in its chunk: summed
        over those pieces where they are few against all (the steps' first and
        last pieces, a critical path's), else from one cumulative sum of every
        piece's (made once)."""
        lo = self._g.c_first[chunks]
        counts = pieces - lo
        total = int(counts.sum())
        if self._cum is None and total <= self._dur.shape[0] // 4:
            rows = np.repeat(np.arange(pieces.size), counts)
            at = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts) + lo[rows]
            return np.bincount(rows, weights=self._dur[at], minlength=pieces.size)
        if self._cum is None:
            self._cum = np.cumsum(self._dur) - self._dur
        return self._cum[pieces] - self._cum[lo]

    def _piece_times(self, pieces: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Replayed start and end of ``pieces`` (indices; None: every piece), ns
        from the timeline's start: a chunk's pieces one after the other from its
        start; a collective's or sync's one piece spans the chunk."""
        g = self._g
        if not g.n_chunks:
            return np.zeros(0), np.zeros(0)
        cs, ce = self._chunk_arrays()
        ch = g.chunk if pieces is None else g.chunk_of(pieces)
        dur = self._dur if pieces is None else self._dur[pieces]
        ps = cs[ch] + self._offsets(np.arange(g.dur.shape[0]) if pieces is None else pieces, ch)
        whole = (g.c_type[ch] == COLL) | (g.c_type[ch] == SYNC)
        return ps, np.where(whole, ce[ch], ps + dur)

    def _bounds(self, replayed: bool) -> pd.DataFrame:
        """Per step across the lanes: first start, last end (ns), the lane that ends
        last and its step event."""
        frame = self._lane_bounds(replayed)
        last = frame.sort_values("end").groupby("step").tail(1).set_index("step")
        out = frame.groupby("step").agg(start=("start", "min"), end=("end", "max"))
        out["lane"] = last["lane"].reindex(out.index)
        out["event"] = last["event"].reindex(out.index)
        return out

    def _lane_bounds(self, replayed: bool) -> pd.DataFrame:
        """Each lane's start and end (ns) of each step (made once per flag)."""
        if replayed not in self._lane_bounds_made:
            self._lane_bounds_made[replayed] = self._make_lane_bounds(replayed)
        return self._lane_bounds_made[replayed]

    def _make_lane_bounds(self, replayed: bool) -> pd.DataFrame:
        rows = self._step_rows
        g = self._g
        if len(rows):
            ev_idx = rows["event"].to_numpy()
            if replayed:
                s, e = self._event_times(ev_idx)
            else:
                ev = g.timeline.events
                s = (ev["start"].to_numpy()[ev_idx] - self._base).astype(np.float64)
                e = (ev["end"].to_numpy()[ev_idx] - self._base).astype(np.float64)
            frame = pd.DataFrame({"step": rows["step"].to_numpy(), "lane": rows["lane"].to_numpy(),
                                  "start": s, "end": e, "event": ev_idx})  # fmt: skip
        else:  # the whole trace as one step, per profile (its lane that ends last)
            ps, pe = (
                self._piece_times()
                if replayed
                else ((g.start - self._base).astype(float), (g.end - self._base).astype(float))
            )
            frame = pd.DataFrame(
                {"lane": g.lane, "prof": g.lane_prof[g.lane], "start": ps, "end": pe}
            )
            last = frame.sort_values("end").groupby("prof").tail(1).set_index("prof")["lane"]
            frame = frame.groupby("prof").agg(start=("start", "min"), end=("end", "max"))
            frame["lane"] = last.reindex(frame.index)
            frame = frame.reset_index(drop=True)
            frame["step"] = 0
            frame["event"] = -1
        return frame.dropna(subset=["start", "end"])

    def _step_table(self) -> UnitTable:
        m = self._per_lane(replayed=False)
        r = self._per_lane(replayed=True)
        span = self._bounds(replayed=True)
        table = pd.DataFrame({
            "measured [s]": m.groupby("step")["time"].mean() / NS,
            "replayed [s]": r.groupby("step")["time"].mean() / NS,
            "span [s]": (span["end"] - span["start"]) / NS,
        })  # fmt: skip
        table.index.name = "step"
        return with_units(table, {c: "s" for c in table.columns})

    def _per_lane(self, replayed: bool) -> pd.DataFrame:
        """Each lane's time in each step (ns): its step interval, or its first
        start to last end where the trace has no step markers."""
        frame = self._lane_bounds(replayed)
        return frame.assign(time=frame["end"] - frame["start"])


# ------------------------------------------------------------------ the replay
class _Sim:
    """Replayed chunk times (arrays, once the walk is done) and, per chunk, what
    decided its end."""

    def __init__(self, n: int) -> None:
        self.start: Any = [math.nan] * n  # (lists while walking: a Python loop's)
        self.end: Any = [math.nan] * n
        # cause: 0 its lane (start + own time); 1 its instance's last arrival
        # (via: that member's chunk); 2 a completion it waited for (via: the
        # ISSUE or GPU chunk; at: when that completed); 3 GPU work's launch (via)
        self.cause = [0] * n
        self.via = [-1] * n
        self.at = [math.nan] * n
        self.barrier_who: dict[int, int] = {}  # SYNC chunk: the member that decided
        self.by_barrier: dict[int, bool] = {}  # SYNC chunk: decided by a last arrival
        self.barrier: dict[int, tuple[float, int]] = {}  # instance: its last arrival
        self.members: tuple[list[int], list[int]] = ([0], [])  # instances' chunks (CSR)

    def last_arrival(self, j: int) -> tuple[float, int]:
        """Instance ``j``'s replayed last arrival and the member chunk that made it."""
        got = self.barrier.get(j)
        if got is None:  # (a walk ends with every chunk's start known)
            ptr, chunks = self.members
            who = max(chunks[ptr[j] : ptr[j + 1]], key=self.start.__getitem__)
            got = self.barrier[j] = (float(self.start[who]), who)
        return got


def _runs(g: Graph, d: np.ndarray, base: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per chunk: the last chunk before it on its lane that waits for something
    (not PLAIN; -1: none), the own time of the PLAIN chunks in between (``lead``),
    and where it starts when nothing before it waits (``alone``: its lane's
    start plus the PLAIN chunks before it). A PLAIN chunk starts ``lead`` after
    that chunk's end: runs of them are offsets, not steps of the walk."""
    n = g.n_chunks
    at = np.arange(n)
    lane = g.c_lane
    lane_first = np.maximum.accumulate(np.where(np.r_[True, lane[1:] != lane[:-1]], at, 0))
    waits = np.where(g.c_type != PLAIN, at, -1)
    before = np.r_[-1, np.maximum.accumulate(waits)[:-1]] if n else waits
    before = np.where(before >= lane_first, before, -1)
    cum = np.r_[0.0, np.cumsum(np.where(g.c_type == PLAIN, d, 0.0))]  # before each chunk
    lead = cum[at] - cum[np.maximum(before, lane_first)]  # (a waiting chunk adds 0)
    alone = (g.c_start[lane_first] - base).astype(np.float64) + (cum[at] - cum[lane_first])
    return before, lead, alone


def _simulate(g: Graph, dur: np.ndarray, transfer: np.ndarray, base: int) -> _Sim:
    """Chunk start and end times: a walk of the chunks that wait for something
    (the others: offsets from them, :func:`_runs`) in the order of the measured
    ends (a valid order of the graph: everything a chunk waits for ended before
    it, in the measurement), resolving on demand what a tie left for later."""
    n = g.n_chunks
    c_dur = np.add.reduceat(dur, g.c_first) if n else np.zeros(0)
    before_a, lead_a, alone_a = _runs(g, c_dur, base)
    lane = g.c_lane
    first_a = np.r_[True, lane[1:] != lane[:-1]] if n else np.zeros(0, dtype=bool)
    prev_b, lead, alone = before_a.tolist(), lead_a.tolist(), alone_a.tolist()
    first = first_a.tolist()
    typ = g.c_type.tolist()
    # (a sync's piece holds its own time after the wait: graph.build)
    d = own_after = c_dur.tolist()
    tr = transfer.tolist()
    inst = g.c_inst.tolist()
    iptr, ich = g.inst_ptr.tolist(), g.inst_chunks.tolist()
    # what only GPU work and syncs use, for those chunks only
    kern = np.flatnonzero(g.c_type == KERNEL)
    launch = dict(zip(kern.tolist(), g.c_launch[kern].tolist()))
    gap = dict(zip(kern.tolist(), g.c_gap[kern].tolist()))
    into = dict(zip(kern.tolist(), g.c_into[kern].tolist()))
    syncs = np.flatnonzero(g.c_type == SYNC)
    sptr = dict(
        zip(syncs.tolist(), zip(g.sync_ptr[syncs].tolist(), g.sync_ptr[syncs + 1].tolist()))
    )
    sch = g.sync_chunks.tolist()
    sim = _Sim(n)
    start, end, cause, via, at = sim.start, sim.end, sim.cause, sim.via, sim.at
    barrier = sim.barrier
    sim.members = (iptr, ich)

    def begin(i: int) -> float:
        """When the chunk before ``i`` on its lane ends."""
        p = prev_b[i]
        if p < 0:
            return alone[i]
        if end[p] != end[p]:
            resolve(p)
        return end[p] + lead[i]

    def last_arrival(j: int) -> tuple[float, int]:
        """Instance ``j``'s last arrival and who made it (its members' starts
        kept: the values they resolve to)."""
        got = barrier.get(j)
        if got is None:
            best, who = -math.inf, -1
            for m in ich[iptr[j] : iptr[j + 1]]:
                p = prev_b[m]  # (begin, inline: a call per member costs a third more)
                if p < 0:
                    s = alone[m]
                else:
                    if end[p] != end[p]:
                        resolve(p)
                    s = end[p] + lead[m]
                start[m] = s
                if s > best:
                    best, who = s, m
            got = barrier[j] = (best, who)
        return got

    def completion(k: int) -> tuple[float, int, bool]:
        """When ISSUE chunk k's work completed, the chunk that decided it and whether
        that was its instance's last arrival (else k's own call, ending last)."""
        if end[k] != end[k]:
            resolve(k)
        a, who = last_arrival(inst[k])
        c = a + tr[k]
        return (c, who, True) if c > end[k] else (end[k], k, False)

    def done(k: int) -> tuple[float, int, bool]:
        """When what a sync waits for is done: an asynchronous call's completion,
        GPU work's end."""
        if typ[k] == ISSUE:
            return completion(k)
        if end[k] != end[k]:
            resolve(k)
        return end[k], k, False

    def resolve(i: int) -> None:
        if busy[i]:
            raise ValueError(
                "replay: the trace's dependencies form a cycle (chunk "
                f"{i} on lane {int(g.c_lane[i])} waits for itself); the ranks' clocks "
                "may disagree, or two calls were matched that are not one"
            )
        busy[i] = True
        try:
            resolve_one(i)
        finally:
            busy[i] = False

    def resolve_one(i: int) -> None:
        t = typ[i]
        if t == KERNEL:
            resolve_kernel(i)
            return
        s = begin(i)
        start[i] = s
        if t == PLAIN or t == ISSUE:
            end[i] = s + d[i]
        elif t == COLL:
            a, who = last_arrival(inst[i])
            e = a + tr[i]
            if e > s:
                end[i], cause[i], via[i] = e, 1, who
            else:
                end[i] = s
        else:  # SYNC
            dep, which, by, bar = -math.inf, -1, -1, False
            lo, hi = sptr[i]
            for k in sch[lo:hi]:
                c, who, b = done(k)
                if c > dep:
                    dep, which, by, bar = c, k, who, b
            if dep > s:
                end[i], cause[i], via[i], at[i] = dep + own_after[i], 2, which, dep
                barrier_who[i] = by
                sim.by_barrier[i] = bar
            else:
                end[i] = s + own_after[i]

    def resolve_kernel(i: int) -> None:
        """GPU work starts after the work before it on its stream and its launch."""
        la = launch[i]
        ready, by = (-math.inf if first[i] else begin(i)), 0
        if la >= 0:
            if start[la] != start[la]:  # (a blocking launch waits for this work)
                resolve(la)
            at = start[la] + into[i]
            if at >= ready:
                ready, by = at, 3
        s = alone[i] if ready == -math.inf else ready + gap[i]  # (alone: its measured start)
        start[i] = s
        end[i] = s + d[i]
        if by:
            cause[i], via[i] = by, la

    barrier_who = sim.barrier_who
    busy = [False] * n
    waiting = np.flatnonzero(g.c_type != PLAIN)
    order = waiting[lexsort((g.c_start[waiting], g.c_end[waiting]))].tolist()
    try:
        for i in order:
            if end[i] == end[i]:
                continue
            p = prev_b[i]
            if p >= 0 and end[p] != end[p]:
                resolve(i)
            elif typ[i] == COLL:  # the common case: a blocking collective, all its members
                j = inst[i]
                busy[i] = True
                a, who = last_arrival(j)
                busy[i] = False
                for m in ich[iptr[j] : iptr[j + 1]]:
                    if typ[m] == COLL:
                        s, e = start[m], a + tr[m]
                        if e > s:
                            end[m], cause[m], via[m] = e, 1, who
                        else:
                            end[m] = s
            else:
                resolve(i)
    except RecursionError:
        raise ValueError(
            "replay: the measured order is far from the dependencies' (the ranks' "
            "clocks may disagree by more than the time between their calls)"
        ) from None
    # the helpers refer to one another: let them go with this call, and with them
    # the graph and lists they hold (no cycle left for the garbage collector)
    begin = last_arrival = completion = done = resolve = resolve_one = resolve_kernel = None  # noqa: F811
    sim.start, sim.end = _filled_runs(start, end, g.c_type, c_dur, before_a, lead_a, alone_a)
    return sim


def _filled_runs(
    start: list,
    end: list,
    typ: np.ndarray,
    d: np.ndarray,
    before: np.ndarray,
    lead: np.ndarray,
    alone: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The walk's start and end lists as arrays, the PLAIN chunks' filled in
    from the chunks before them that wait (:func:`_runs`; the same sums as the
    walk's, so the values it made on demand are made again to the bit)."""
    n = len(start)
    s = np.fromiter(start, np.float64, count=n)  # (a third faster than asarray)
    e = np.fromiter(end, np.float64, count=n)
    plain = np.flatnonzero(typ == PLAIN)
    b = before[plain]
    s[plain] = np.where(b >= 0, e[np.maximum(b, 0)] + lead[plain], alone[plain])
    e[plain] = s[plain] + d[plain]
    return s, e


# ----------------------------------------------------------- the critical path
class CriticalPath:
    """The critical path of a step across the ranks (of every step when
    ``step`` is None): walking back from the step's last end, each chunk to
    what decided its end: the chunk before it on its lane, or, at a collective,
    the last member to arrive (the path crosses to that rank), or, at a wait
    for asynchronous work, that work's completion.

    Attributes:
        segments: ``step``, ``rank``, ``profile``, ``node``, ``path`` (the call path
            as text), ``kind`` (compute, launch, gpu, comm, wait, idle), ``start
            [s]``, ``end [s]`` (seconds from the timeline's start), in time order.
            (``wait`` never: where a rank waited, the path is on the rank it
            waited for.)
        by_context: indexed by call path: ``time [s]`` on the path and ``share``.
        length: the path's time in seconds: the step's replayed ``span [s]``;
            of every step, the paths one after the other, each from where the one
            before ended (ranks drift: one starts a step while another ends the
            step before).
    """

    def __init__(self, rp: Replay, step: int | None) -> None:
        self._rp = rp
        bounds = rp.step_bounds()
        if step is not None:
            if step not in bounds.index:
                raise ValueError(f"critical_path: no step {step}; steps are {list(bounds.index)}")
            bounds = bounds.loc[[step]]
        if step is None and len(bounds) > 1:
            # every step: each path from where the one before ended (ranks drift: a
            # step starts on one rank while another still ends the step before)
            bounds = bounds.sort_values("end")
            before = np.r_[-np.inf, bounds["end"].to_numpy()[:-1]]
            bounds = bounds.assign(start=np.maximum(bounds["start"].to_numpy(), before))
        cols: dict[str, list] = {"step": [], "chunk": [], "lo": [], "hi": [], "kind": []}
        for k, ev, lane, s0, s1 in zip(
            bounds.index, bounds["event"], bounds["lane"], bounds["start"], bounds["end"]
        ):
            _walk(rp, int(k), int(ev), int(lane), float(s0), float(s1), cols)
        seg = pd.DataFrame({
            "step": np.asarray(cols["step"], dtype=np.int64),
            "chunk": np.asarray(cols["chunk"], dtype=np.int64),
            "lo": np.asarray(cols["lo"], dtype=np.float64),
            "hi": np.asarray(cols["hi"], dtype=np.float64),
            "kind": np.asarray(cols["kind"], dtype=np.int64),
        })  # fmt: skip
        self.segments = _segment_table(rp, seg)
        self.length = float((bounds["end"] - bounds["start"]).sum() / NS)
        t = self.segments.assign(time=self.segments["end [s]"] - self.segments["start [s]"])
        by = t.groupby("path", sort=False)["time"].sum().sort_values(ascending=False)
        total = float(by.sum()) or 1.0
        table = pd.DataFrame({"time [s]": by, "share": by / total})
        table.index.name = "path"
        self.by_context = with_units(table, {"time [s]": "s"})

    def ensemble(self) -> Ensemble:
        """The timeline's Ensemble with a ``critical`` metric (ns on the path, per
        node and profile), so every view and table can show it."""
        rp = self._rp
        base = rp.timeline.ensemble()
        seg = self.segments
        seg = seg[seg["node"] >= 0]
        t = ((seg["end [s]"] - seg["start [s]"]) * NS).to_numpy()
        crit = (
            pd.DataFrame({"node": seg["node"].to_numpy(), "profile": seg["profile"].to_numpy(), "critical": t})
            .groupby(["node", "profile"], as_index=False)["critical"].sum()
        )  # fmt: skip
        rows = base.exclusive_rows.merge(crit, on=["node", "profile"], how="outer")
        rows["critical"] = rows["critical"].fillna(0.0)
        units = {**base.meta.get("units", {}), "critical": "ns"}
        return Ensemble(base.tree, rows, base.profiles, meta={**base.meta, "units": units})

    def __repr__(self) -> str:
        return f"<CriticalPath: {len(self.segments)} segments, {self.length:.6g} s>"


def _walk(
    rp: Replay, step: int, ev: int, lane: int, s_start: float, s_end: float, out: dict
) -> None:
    """Append to ``out`` the (chunk, lo, hi, kind override) the path of one step
    passes through, back from its end (a loop per chunk on the path)."""
    g, sim = rp._g, rp._sim
    if ev >= 0 and g.ev_last[ev] >= 0:
        i = int(g.chunk_of(g.ev_last[ev]))
    else:
        on_lane = np.flatnonzero(g.c_lane == lane)
        ends = rp._chunk_arrays()[1][on_lane]
        i = int(on_lane[np.argmax(ends)])
    first_of_lane = rp._first_of_lane
    out_chunk, out_lo, out_hi, out_kind = out["chunk"], out["lo"], out["hi"], out["kind"]
    first = len(out_chunk)
    t = s_end
    guard = 0
    while i >= 0 and t > s_start and guard <= 4 * g.n_chunks + 4:
        guard += 1
        cause = sim.cause[i]
        if cause == 1:  # the transfer after the last arrival, then that member
            a = sim.last_arrival(int(g.c_inst[i]))[0]
            out_chunk.append(i), out_lo.append(max(a, s_start)), out_hi.append(t)
            out_kind.append(K_COMM)
            who = sim.via[i]
            t = a
            i = who - 1 if not first_of_lane[who] else -1
            continue
        if cause == 2:  # the sync's own time, then the completion it waited for
            dep = sim.at[i]
            out_chunk.append(i), out_lo.append(max(dep, s_start)), out_hi.append(t)
            out_kind.append(-1)
            k = sim.via[i]
            who = sim.barrier_who[i]
            t = dep
            if not sim.by_barrier.get(i, False):  # its own call (or GPU work) ended last
                i = k
            else:  # the transfer after the last arrival, drawn where the call was issued
                a = sim.last_arrival(int(g.c_inst[k]))[0]
                out_chunk.append(k), out_lo.append(max(a, s_start)), out_hi.append(t)
                out_kind.append(K_FREE_COMM)
                t = a
                i = who - 1 if not first_of_lane[who] else -1
            continue
        lo = max(sim.start[i], s_start)
        out_chunk.append(i), out_lo.append(lo), out_hi.append(t)
        out_kind.append(-1)
        if cause == 3:  # GPU work that waited for its launch: into the launch
            la = sim.via[i]
            t = sim.start[la] + float(g.c_into[i])
            i = la
            continue
        t = sim.start[i]
        i = i - 1 if not first_of_lane[i] else -1
    out["step"].extend([step] * (len(out_chunk) - first))


def _segment_table(rp: Replay, walk: pd.DataFrame) -> UnitTable:
    """The walk's chunks cut into their pieces (vectorised), in time order."""
    g = rp._g
    ch = walk["chunk"].to_numpy(dtype=np.int64)
    first, stop = g.c_first[ch], g.c_stop[ch]
    counts = stop - first
    rows = np.repeat(np.arange(len(walk)), counts)
    piece = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts) + first[rows]
    ps, pe = rp._piece_times(piece)
    over = walk["kind"].to_numpy(dtype=np.int64)[rows]
    free = over == K_FREE_COMM  # an asynchronous transfer: after its call returned
    lo = np.where(free, walk["lo"].to_numpy()[rows], np.maximum(ps, walk["lo"].to_numpy()[rows]))
    hi = np.where(free, walk["hi"].to_numpy()[rows], np.minimum(pe, walk["hi"].to_numpy()[rows]))
    keep = hi > lo
    piece, rows, lo, hi, over = piece[keep], rows[keep], lo[keep], hi[keep], over[keep]
    kind = g.kind_of(g.owner[piece]).astype(np.int64)
    kind = np.where(over == K_FREE_COMM, K_COMM, np.where(over >= 0, over, kind))
    node = g.node_of(g.owner[piece])
    tl = g.timeline
    paths = tl.tree.callpaths.to_numpy(dtype=object)
    path = np.where(node >= 0, paths[np.maximum(node, 0)], "(idle)")
    lane = g.lane_of(g.owner[piece])
    t0 = 0.0  # the walk's times are ns from the timeline's start
    table = pd.DataFrame({
        "step": walk["step"].to_numpy()[rows], "rank": g.lane_rank[lane],
        "profile": g.lane_prof[lane],
        "node": node, "path": path, "kind": np.asarray(KINDS, dtype=object)[kind],
        "start [s]": (lo - t0) / NS, "end [s]": (hi - t0) / NS,
    }).sort_values(["step", "start [s]"], kind="stable").reset_index(drop=True)  # fmt: skip
    return with_units(table, {"start [s]": "s", "end [s]": "s"}, instants=["start [s]", "end [s]"])


__all__ = ["CriticalPath", "Replay", "ReplayWarning", "replay"]
