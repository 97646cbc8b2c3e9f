"""Watch a run while it runs: ``cctviz.watch(run_dir)`` → :class:`Watch`.

Each rank of a ``cctviz run`` (``--workflow`` included) appends its
increments to ``run_dir/live/`` every ``--flush`` seconds
(:mod:`cctviz.runtime.live`). A :class:`Watch` reads what was appended since
its last look (:meth:`Watch.poll`; :meth:`Watch.start` polls from a thread),
from this process, another one, or another machine that shares the folder:

- :meth:`Watch.ensemble`: every rank's tree so far, an Ensemble as
  ``cctviz.read`` gives it (once the run has ended, the same one);
- :meth:`Watch.steps`: every step each rank has ended, with its time and the
  time the rank spent waiting in collectives in it;
- :attr:`Watch.alerts`: what the watch found, as it found it; :meth:`Watch.on_alert`
  calls a function for each new one;
- :meth:`Watch.dashboard`: a live widget of the run in the notebook.

Alerts (``kind``):

- ``straggler``: a rank late at the collectives for 0.75 s, 3 late steps at
  least, one step on time among them tolerated (:class:`StragglerRule`). A
  rank's lateness in a step is how much less it waited in collectives than
  the median of the other ranks (the others wait for the late one: their
  collectives last longer, its own end at once). Late means more than
  :attr:`StragglerRule.share` of the median step and at least
  :attr:`StragglerRule.least` seconds. The rank must also spend that much more
  time per step than the others in one of its contexts, beyond that context's
  share of the rank's whole extra time (:func:`beyond_proportion`: a rank
  slowed everywhere alike, by a core it shares, is not a straggler in a
  context). The alert names the rank, the step where the run of late steps
  began, that context (its call path) and how much. One alert per episode: the
  rank is alerted again only after it was on time for as long (steps and
  seconds) as it takes to be alerted.
- ``regression``: a component's steps (all of its ranks alike) take longer
  than the steps before by 20%, for 0.75 s and 3 slow steps at least, with one
  context's time per step grown by that much beyond its share of the whole
  growth (:class:`RegressionRule`); the alert names the step where it began,
  the context and how much.
- ``blocked``: a workflow component whose processes (sampled: ``--sample-hz``)
  were blocked more than half of the last second (or more: between two of
  their records), after start-up, in communication calls or in
  regions of their own at under 10% of a core, as the workflow summary
  counts (:class:`BlockedRule`); the alert names the context where most of
  it went.
- ``silent``: a rank has appended nothing for :attr:`Watch.silent_after`
  seconds while the others went on (killed, hung, or its node lost).

Example::

    w = cctviz.watch("runs/today")        # waits for the run's first record
    w.on_alert(print)
    w.start()                             # polls every second, from a thread
    ...
    w.alerts[["time", "kind", "rank", "step", "message"]]
    w.close()
"""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .errors import ProfileError
from .model.ensemble import Ensemble
from .model.formats import (
    K_COMM,
    K_STEP,
    LIVE_DIR,
    LIVE_TRACE_WANTED,
    RUN_FILE,
    STEP,
    live_rank_of,
    rank_of,
)  # fmt: skip
from .model.sampled import LOW_CPU, blocked_idle
from .model.tables import UnitTable, with_units
from .model.timeline import Timeline
from .readers._live import RankStream
from .readers._rawtrace import LiveTimeline
from .readers.cctviz_run import assemble_run, rank_row, read_rank, run_layout

#: a regression is of the ranks alike: this quantile of their growth in a context,
#: the value of one of them (9 ranks in 10 grew at least that much; of fewer than
#: 10, the least: one straggler among them is not a regression)
ALIKE = 0.1
#: steps before a run of late or slow steps whose records give a context's usual rate
BEFORE = 10
#: records of each rank kept to find where a straggler's time grew
HISTORY = 256
#: steps kept past the last one checked (a straggler's window lies within them)
KEEP_STEPS = 1000
#: the columns of :meth:`Watch.steps`
STEP_TABLE = ("rank", "component", "step", "warmup", "start [s]", "time [s]", "wait [s]")
#: the columns of :attr:`Watch.alerts`
ALERT_COLUMNS = (
    "time", "kind", "rank", "component", "step", "message",
    "late [s]", "gap [s]", "step [s]", "context", "after [s]", "grown [B]",
)  # fmt: skip
#: the memories a rank's records may hold, each with its metrics in the order
#: taken (the first recorded): the device allocator's peak per context or the
#: sampled device memory; the sampled resident set
MEMORY_METRICS = (("device memory", ("mem_peak", "gpu_mem_peak")), ("RSS", ("rss_peak",)))


def _require(rule: Any, least: dict[str, int]) -> None:
    """Refuse a rule whose counts are below their least, or whose seconds and
    shares are negative (or NaN)."""
    low = [f"{k} >= {v}" for k, v in least.items() if not getattr(rule, k) >= v]
    if not all(x >= 0 for x in (rule.seconds, rule.share, rule.least)):
        low.append("seconds, share and least >= 0")
    if low:
        raise ValueError(f"{type(rule).__name__} needs {', '.join(low)}: {rule}")


@dataclass(frozen=True)
class StragglerRule:
    """When a rank is a straggler (module docstring): late by more than
    ``share`` of the median step and at least ``least`` seconds, in ``steps``
    steps that last ``seconds`` at least (the machine's own hiccups last a
    few short steps). Within such a run of late steps, up to ``tolerate`` steps on
    time do not end it (a hiccup of the other ranks hides a step's lateness;
    :func:`advance_runs`). Warm-up steps and the first ``settle`` steps after them
    (start-up: the allocator, DDP's buckets, the first collectives) are left
    out."""

    steps: int = 3
    seconds: float = 0.75
    share: float = 0.10
    least: float = 0.002
    settle: int = 5
    tolerate: int = 1

    def __post_init__(self) -> None:
        _require(self, {"steps": 1, "settle": 0, "tolerate": 0})


@dataclass(frozen=True)
class RegressionRule:
    """When a component's steps regressed: its step (the median over its ranks)
    longer than the median of the ``baseline`` steps before by more than
    ``share`` of it and ``least`` seconds, in ``steps`` steps that last
    ``seconds`` at least (up to ``tolerate`` steps on time among them),
    while no rank of it is an alerted straggler (which explains the steps); and
    one context's time per step grown by more than ``share`` of the baseline
    step beyond its share of the whole growth, on 9 ranks in 10 (:data:`ALIKE`;
    :func:`beyond_proportion`): a machine that slows down everywhere alike is
    not the program's regression. After an alert its new steps become
    the baseline (one alert per change); warm-up and start-up steps are left out
    as for stragglers."""

    steps: int = 3
    seconds: float = 0.75
    share: float = 0.20
    least: float = 0.002
    baseline: int = 10
    tolerate: int = 2

    def __post_init__(self) -> None:
        _require(self, {"steps": 1, "baseline": 1, "tolerate": 0})


@dataclass(frozen=True)
class BlockedRule:
    """When a workflow's component is blocked (its ranks sampled,
    ``--sample-hz``): over the last ``seconds`` of each of its processes'
    records, more than ``share`` of their wall time (the mean over them) in
    communication calls or in regions of their own at under ``low_cpu`` of a core
    (:func:`cctviz.model.sampled.blocked_idle`, the rule of
    :func:`cctviz.workflow.summary`), counted from the sampler's time (a wait is
    timed when it ends; its samples fall in the window as it goes). Start-up
    is left out: a window begins once every process has time in a context of
    its own (before that it imports and connects, and its peers wait for it by
    design). One alert per episode: again only after the share fell to
    ``share`` or below."""

    share: float = 0.5
    seconds: float = 1.0
    low_cpu: float = LOW_CPU

    def __post_init__(self) -> None:
        if not (0 <= self.share <= 1 and self.seconds > 0 and self.low_cpu >= 0):
            raise ValueError(f"a blocked rule needs 0 <= share <= 1 and seconds > 0: {self}")


@dataclass(frozen=True)
class MemoryRule:
    """When a rank's memory grows: its peak so far (the highest of any
    context's, :data:`MEMORY_METRICS`: device memory and the sampled RSS apart)
    rose by more than ``least`` bytes and ``share`` of itself over the last
    ``seconds`` of its records, in ``steady`` of the spans between them at
    least (a leak grows step after step; a one-off allocation, such as the
    optimizer's states, once), after its warm-up and ``settle`` steps. The
    alert begins where the rise began and names the context whose own peak grew
    most (for RSS, the contexts where the samples fell as it grew). One alert
    per episode: again only after a window that grew ``least`` or less."""

    seconds: float = 2.0
    least: float = 32 * 2**20
    share: float = 0.05
    steady: float = 0.75
    settle: int = 5

    def __post_init__(self) -> None:
        _require(self, {"settle": 0})
        if not (self.seconds > 0 and 0 <= self.steady <= 1):
            raise ValueError(f"MemoryRule needs seconds > 0 and 0 <= steady <= 1: {self}")


class Watch:
    """A run read while it runs (module docstring).

    Args:
        run: the run folder (``cctviz run --out``).
        wait: seconds to wait for the run's first record (a run that has not
            started yet); a :class:`TimeoutError` past them.
        straggler: the :class:`StragglerRule`.
        regression: the :class:`RegressionRule`.
        blocked: the :class:`BlockedRule`.
        memory: the :class:`MemoryRule`.
        silent_after: seconds without a record from a rank, while others append,
            before a ``silent`` alert (default: 5 flushes, at least 5 s).
        keep: seconds of each rank's running sums kept from the start, for
            :meth:`ensemble`'s ``last`` (None: kept from the first such call on).
    """

    def __init__(
        self,
        run: str | os.PathLike,
        *,
        wait: float = 30.0,
        straggler: StragglerRule | None = None,
        regression: RegressionRule | None = None,
        blocked: BlockedRule | None = None,
        memory: MemoryRule | None = None,
        silent_after: float | None = None,
        keep: float | None = None,
    ) -> None:
        if keep is not None and not keep > 0:
            raise ValueError(f"keep: seconds > 0, not {keep!r}")
        self.keep = keep
        self.path = Path(run)
        self.rule = straggler or StragglerRule()
        self.regression = regression or RegressionRule()
        self.blocked = blocked or BlockedRule()
        self.memory = memory or MemoryRule()
        # per (rank, memory): its last records' (steps ended, wall clock ns, peak per context)
        self._memory: dict[tuple[int, str], deque[tuple]] = {}
        self._memory_now: set[tuple[int, str]] = set()  # in a growth episode
        self._silent_after = silent_after
        self._streams: dict[int, RankStream] = {}
        self._paths: dict[int, list[str]] = {}
        self._in_step: dict[int, list[bool]] = {}  # per rank, per context: within a step
        self._history: dict[int, deque[tuple[int, np.ndarray]]] = {}
        # per sampled rank, its last records: (wall clock ns, cpu_time, sampled_time)
        self._sampled: dict[int, deque[tuple]] = {}
        self._blocked_now: set[str] = set()  # components in a blocked episode
        self._began: dict[int, int] = {}  # per rank, its first record with context time (ns)
        self._alerts: list[dict[str, Any]] = []
        self._callbacks: list[Callable[[pd.Series], Any]] = []
        self._late_run: dict[int, list[int]] = {}
        # per component: its baseline steps' times, its run of slow steps
        self._baseline: dict[str, deque[float]] = {}
        self._slow_run: dict[str, list[int]] = {}
        self._on_time: dict[int, int] = {}
        self._rows: dict[tuple[int, int], tuple] = {}
        # per component ("" outside workflows): step -> rank -> (wait, time)
        self._by_step: dict[str, dict[int, dict[int, tuple[float, float]]]] = {}
        self._first: dict[int, int] = {}
        self._group: dict[int, str] = {}
        self._recent: dict[str, deque[float]] = {}
        self._alerted: set[int] = set()
        self._silent: set[int] = set()
        self._checked: dict[str, int] = {}
        self._ended_said = False
        self._traces = LiveTimeline()  # the traced ranks' timelines so far
        self._lock = threading.RLock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        _check_folder(self.path)
        self._wait_for_start(wait)

    # ------------------------------------------------------------ reading
    def _wait_for_start(self, wait: float) -> None:
        deadline = time.monotonic() + wait
        while True:
            self.poll()
            if any(s.records for s in self._streams.values()) or self._finished_files():
                return
            if self._job_ended():
                code = self._run_info().get("exit_code")
                raise ProfileError(
                    self.path,
                    f"the job ended (exit code {code}) before any rank wrote a record: "
                    "see the job's own output for why",
                )
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"{self.path}: no rank has written a record in {wait:g} s (is the run "
                    f"started, with `cctviz run --out {self.path}`, and --flush not off?)"
                )
            time.sleep(min(0.1, max(wait, 0.0)))

    def _finished_files(self) -> bool:
        """A run recorded without live files (``--flush off``), already ended."""
        return self.path.is_dir() and any(rank_of(p.name) is not None for p in self.path.iterdir())

    def poll(self) -> int:
        """Read what every rank appended since the last poll and look for
        alerts; returns how many records were read."""
        with self._lock:
            live = self.path / LIVE_DIR
            if live.is_dir():
                for p in live.iterdir():
                    r = live_rank_of(p.name)
                    if r is not None and r not in self._streams:
                        self._streams[r] = RankStream(p, on_record=self._remember)
                        self._streams[r].keep = self.keep
            n = sum(s.update() for s in self._streams.values())
            self._detect(new=n > 0)
            return n

    def _remember(self, s: RankStream) -> None:
        """After each record of a rank: its new steps (their wait in
        collectives), its call paths, and its time per context (the last
        :data:`HISTORY` records: for the context of a straggler)."""
        r = live_rank_of(s.path.name)
        self._traces.note(r, s)  # where its trace is: its first record says
        comp = s.meta.get("component", "")
        offset = s.wall_offset_ns or 0
        for row in s.new_steps:
            step, start, end, warm, ctx, ct = row
            before = s.step_row(step - 1)
            wait = max(ctx - (before[4] if before else 0), ct - (before[5] if before else 0))
            took = (end - start) / 1e9
            wait = max(wait, 0) / 1e9
            self._rows[(r, step)] = (r, comp, step, bool(warm), (start + offset) / 1e9, took, wait)
            if not warm:
                self._by_step.setdefault(comp, {}).setdefault(step, {})[r] = (wait, took)
                self._first.setdefault(r, step)
                self._group[r] = comp
        paths = self._paths.setdefault(r, [])
        in_step = self._in_step.setdefault(r, [])
        for i in range(len(paths), len(s.parent)):  # the new contexts (parents come first)
            p = s.parent[i]
            paths.append(s.name[i] if p < 0 else f"{paths[p]}/{s.name[i]}")
            in_step.append((s.kind[i] == K_STEP and s.name[i] == STEP) or (p >= 0 and in_step[p]))
        col = s.column("time")
        self._history.setdefault(r, deque(maxlen=HISTORY)).append((s.steps_done, col))
        if r not in self._began and col.any():
            self._began[r] = s.last_wall_ns
        for what, metrics in MEMORY_METRICS:
            if (m := next((m for m in metrics if m in s.metrics), None)) is not None:
                hist = self._memory.setdefault((r, what), deque(maxlen=HISTORY))
                hist.append((s.steps_done, s.last_wall_ns, s.column(m)))
        if "sampled_time" in s.metrics:  # a sampled rank: what its contexts waited
            sampled = (s.column("cpu_time"), s.column("sampled_time"))
            self._sampled.setdefault(r, deque(maxlen=HISTORY)).append((s.last_wall_ns, *sampled))

    # ------------------------------------------------------------ results
    @property
    def ranks(self) -> list[int]:
        """The ranks that have written a live record, in order."""
        return sorted(r for r, s in self._streams.items() if s.records)

    @property
    def ended(self) -> bool:
        """Whether the run has ended: every rank has written its last record or
        is cut (silent too long, or gone when its launcher said the job ended);
        a run recorded without live records: whether its rank files are there."""
        with self._lock:
            if not self._streams:
                return self._finished_files()
            world = self._world()
            ended = self._job_ended()
            return world > 0 and all(
                (s.final or self._cut(s)) if (s := self._streams.get(r)) is not None else ended
                for r in range(world)
            )

    def _job_ended(self) -> bool:
        """Whether the launcher wrote that the job ended (``run.json``'s ``ended``)."""
        if not self._ended_said:
            self._ended_said = bool(self._run_info().get("ended"))
        return self._ended_said

    @property
    def expected_steps(self) -> int | None:
        """The steps the job will run, warm-up included, where its launch said
        (``cctviz run --expect-steps N``); else None."""
        n = self._run_info().get("expected_steps")
        return int(n) if isinstance(n, int) and n > 0 else None

    def _run_info(self) -> dict[str, Any]:
        """``run.json`` as it is now (empty while there is none, or it is being written)."""
        try:
            info = json.loads((self.path / RUN_FILE).read_text())
        except (OSError, ValueError):
            return {}
        return info if isinstance(info, dict) else {}

    def _cut(self, s: RankStream) -> bool:
        """A rank that will write no more: no last record, and silent too long or
        its job ended."""
        return not s.final and (self._stale(s) or self._job_ended())

    def steps(self) -> UnitTable:
        """Every step each rank has ended so far: ``rank``, ``component``,
        ``step`` (counted from 0, warm-up included), ``warmup``, ``start [s]``
        (wall clock, seconds since the epoch), ``time [s]`` and ``wait [s]``
        (in collectives: the longer of the time in their contexts and their
        ``comm_time``, which counts an asynchronous one until it completed)."""
        with self._lock:
            rows = list(self._rows.values())
        table = pd.DataFrame(rows, columns=list(STEP_TABLE))
        table = table.sort_values(["rank", "step"], ignore_index=True)
        return with_units(table, {"start [s]": "s", "time [s]": "s", "wait [s]": "s"})

    def by_step(self) -> UnitTable:
        """One row per step that every rank of a component still writing has
        ended (warm-up left out; index: the step): ``component`` ("" outside
        workflows), ``ranks``, ``time [s]`` (the ranks' median), ``min [s]``,
        ``max [s]``, ``wait [s]`` (the median wait in collectives) and
        ``least wait`` (the rank that waited least: the one the others waited
        for)."""
        table = self.steps()
        table = table.loc[~table["warmup"].astype(bool)]
        columns = ["component", "ranks", "time [s]", "min [s]", "max [s]", "wait [s]", "least wait"]
        live = [r for r in self.ranks if r not in self._silent and r in self._first]
        table = table.loc[table["rank"].isin(live)]
        if table.empty:
            return with_units(pd.DataFrame(columns=columns).rename_axis("step"), {})
        g = table.groupby(["component", "step"])
        least = table.loc[g["wait [s]"].idxmin()].set_index(["component", "step"])["rank"]
        out = pd.DataFrame({
            "ranks": g["rank"].nunique(),
            "time [s]": g["time [s]"].median(), "min [s]": g["time [s]"].min(),
            "max [s]": g["time [s]"].max(), "wait [s]": g["wait [s]"].median(),
            "least wait": least,
        })  # fmt: skip
        size = pd.Series([self._group.get(r, "") for r in live]).value_counts()
        out = out.loc[
            out["ranks"].to_numpy() == size.reindex(out.index.get_level_values(0)).to_numpy()
        ]
        out = out.reset_index(level="component").sort_index(kind="stable")
        return with_units(out[columns], {c: "s" for c in columns if c.endswith("[s]")})

    @property
    def alerts(self) -> UnitTable:
        """The alerts so far, in the order raised (:data:`ALERT_COLUMNS`):
        ``time`` (wall clock when raised, a Timestamp), ``kind``, ``rank``
        (<NA> for a ``regression`` or ``blocked``: of a component), ``component``, ``step``
        (where the condition began), ``message``, and the numbers behind it:
        ``late [s]`` (a straggler's time per step in ``context`` beyond the
        other ranks' median; a regression's growth per step in ``context``
        against the steps before; both beyond the context's share of the whole
        growth; a blocked component's seconds a process in ``context`` over
        the window), ``gap [s]`` (how much longer the others
        waited in collectives per step, the median; a regression's growth of the
        step), ``step [s]`` (the median step; a regression's baseline step),
        ``after [s]`` (from the end of the step where it began to the alert; a
        ``silent`` rank's silence so far; a ``blocked`` component's: from its
        newest record), and for a ``blocked`` one ``step`` is the fewest steps
        its processes had ended. A ``memory`` alert (a rank's memory grew:
        :class:`MemoryRule`) says ``grown [B]`` (since ``step``, where the rise
        began) and the ``context`` whose own peak grew most."""
        with self._lock:
            table = pd.DataFrame(self._alerts, columns=list(ALERT_COLUMNS))
        table["rank"] = table["rank"].astype("Int64")  # <NA>: an alert about a component
        units = {"late [s]": "s", "gap [s]": "s", "step [s]": "s", "after [s]": "s"}
        units["grown [B]"] = "B"
        return with_units(table, units)

    def ranks_now(self) -> UnitTable:
        """One row per rank that has written a record (index: the rank), as it
        stands at the last poll: ``component``, ``steps`` (ended, warm-up
        included), ``step [s]`` and ``wait [s]`` (its last step's time and
        wait in collectives), ``late`` (an alerted straggler still late),
        ``cpu`` (cores busy between its last two sampled records;
        ``--sample-hz``; NaN where not sampled), ``rss [B]`` (the highest
        sampled ``rss_peak`` of any context so far) and ``device [B]`` (the
        device allocator's ``mem_peak``, else the sampled ``gpu_mem_peak``, the
        highest so far); NaN where not recorded.

        >>> w.ranks_now().loc[1, ["steps", "late"]]  # doctest: +SKIP
        """
        with self._lock:
            rows = [self._rank_now(r, s) for r, s in sorted(self._streams.items()) if s.records]
        columns = ["component", "steps", "step [s]", "wait [s]", "late", "cpu"]
        columns += ["rss [B]", "device [B]"]
        table = pd.DataFrame(rows, columns=["rank", *columns]).set_index("rank")
        units = {"step [s]": "s", "wait [s]": "s", "rss [B]": "B", "device [B]": "B"}
        return with_units(table, units)

    def _rank_now(self, r: int, s: RankStream) -> tuple:
        last = self._rows.get((r, s.steps_done - 1))

        def peak(*metrics: str) -> float:
            got = [max(v.values()) for m in metrics if (v := s.metrics.get(m))]
            return float(got[0]) if got else np.nan

        cpu = np.nan
        if len(hist := self._sampled.get(r, ())) >= 2:
            (w0, c0, _), (w1, c1, _) = hist[-2], hist[-1]
            if w1 > w0:
                cpu = float(c1.sum() - c0.sum()) / (w1 - w0)
        late = r in self._alerted
        took, wait = (last[5], last[6]) if last else (np.nan, np.nan)
        comp = s.meta.get("component", "")
        memory = peak("rss_peak"), peak("mem_peak", "gpu_mem_peak")
        return (r, comp, s.steps_done, took, wait, late, cpu, *memory)

    def collective_waits(self) -> UnitTable:
        """Each rank's waits so far in each of its collective calls' contexts
        (what the others' lateness adds to): ``rank``, ``component``,
        ``context`` (the call path) and ``wait [s]``, cumulative: the longer of
        the time in the context and its ``comm_time`` (which counts an
        asynchronous call, such as DDP's bucketed all-reduce, until it
        completed), as :meth:`steps` takes a step's wait."""
        rows = []
        with self._lock:
            for r, s in sorted(self._streams.items()):
                wait = np.maximum(s.column("time"), s.column("comm_time"))
                kind = np.asarray(s.kind[: len(wait)], dtype=object)
                comm = np.flatnonzero((kind == K_COMM) & (wait > 0))
                comp = s.meta.get("component", "")
                paths = self._paths.get(r, [])
                rows += [(r, comp, paths[i], wait[i] / 1e9) for i in comm if i < len(paths)]
        table = pd.DataFrame(rows, columns=["rank", "component", "context", "wait [s]"])
        return with_units(table, {"wait [s]": "s"})

    def on_alert(self, fn: Callable[[pd.Series], Any]) -> None:
        """Call ``fn(alert)`` (a row of :attr:`alerts`) for each new alert."""
        self._callbacks.append(fn)

    def ensemble(self, last: float | None = None) -> Ensemble:
        """Every rank's tree so far, as ``cctviz.read(run_dir)`` reads a run
        (ranks still running are flagged ``running``; a rank whose records stop
        short of its last is flagged with where it was cut). Once the run has
        ended it is the Ensemble ``cctviz.read`` gives.

        ``last``: only each rank's last ``last`` seconds of records (its summed
        metrics now less at its newest record at least that old; a rank begun
        since, from zero; maxima, which time does not take apart, left out;
        ``meta["window_s"]``: per rank the seconds it spans). The running sums are kept from the watch's
        ``keep`` seconds, else from the first call with ``last`` on: until then
        the window is shorter (it starts at that call)."""
        if last is not None:
            if not last > 0:
                raise ValueError(f"last: seconds > 0 (or None: the run so far), not {last!r}")
            self._keep_for(last)
        with self._lock:
            info, files, world = run_layout(self.path)
            world = max(world, self._world())
            if world == 0:
                raise ProfileError(self.path, "no rank has written anything yet")
            with warnings.catch_warnings():  # ranks that run are not complete yet: said per rank
                warnings.simplefilter("ignore")
                ens = assemble_run(
                    self.path, info, world, lambda r: self._rank(info, files, r, last)
                )
        for m in (ens.meta, ens.tree.meta):  # as cctviz.read says where it read it
            m.setdefault("format", "cctviz-run")
            m.setdefault("source", str(self.path))
        if last is not None:  # per rank, the seconds its window spans
            ens.meta["window_s"] = {
                r: s.window_span(last) for r, s in self._streams.items() if s.records
            }
        return ens

    def timeline(self) -> Timeline:
        """What the ranks' traces hold so far (a run traced with ``cctviz run
        --trace DIR`` or ``--timeline``): each rank's calling contexts over time,
        read incrementally from its raw trace (:mod:`cctviz.readers._rawtrace`:
        only what was appended since the last call is decoded). The first call
        asks the ranks to write their trace as it grows (a file in ``live/``);
        from then a rank's trace is on disk about one live record behind (the
        training thread writes it at the first step's start after each record,
        and that write counts in the step's own time); the contexts still open
        end at its last row (``profiles["open"]`` counts them). Once the run has
        ended and its archive is written, the Timeline ``cctviz.read_timeline``
        gives of it.

        Raises:
            ProfileError: no rank of the run traces (or none has said so yet).
        """
        with self._lock:
            archive = self._traces.archive()
            if archive is not None and self.ended:
                from .readers import read_timeline

                return read_timeline(archive)
            self._want_trace()
            self._traces.update(self._streams)
            if not self._traces.traces:
                raise ProfileError(
                    self.path,
                    "no rank of this run writes a trace (yet): run it with "
                    "`cctviz run --trace DIR` (or --timeline) to watch its timeline",
                )
            return self._traces.timeline(self._streams)

    def _keep_for(self, seconds: float) -> None:
        """Keep each rank's running sums for ``seconds`` from now on (and the
        watch's ranks to come): where none were kept, the sums as they stand."""
        with self._lock:
            self.keep = max(self.keep or 0.0, float(seconds))
            for s in self._streams.values():
                fresh = s.keep is None
                s.keep = self.keep
                if fresh and s.records:
                    s.snapshot()

    def _want_trace(self) -> None:
        """Ask the traced ranks to write their trace as it grows (a file in
        ``live/``, :data:`~cctviz.model.formats.LIVE_TRACE_WANTED`); a folder this
        watch cannot write to leaves them writing it a batch at a time."""
        try:
            (self.path / LIVE_DIR / LIVE_TRACE_WANTED).touch(exist_ok=True)
        except OSError:
            pass

    def _rank(
        self, info: dict, files: dict[int, Path], r: int, last: float | None = None
    ) -> tuple[dict, Any]:
        s = self._streams.get(r)
        if s is None or not s.records:
            if r in files and last is None:  # a rank written without live records
                return read_rank(self.path, info, files, r)
            said = "no live records to take a window of" if r in files else "no record yet"
            return rank_row(self.path, info, r, None, said)
        tree = s.tree(last)
        problem = s.problem
        if not s.final:
            steps = s.steps()
            done = steps.loc[~steps["warmup"].astype(bool)] if len(steps) else steps
            meta = tree.meta
            cut = self._cut(s)
            meta["status"] = "cut" if cut else "running"
            meta["steps"] = len(done)
            meta["step_ns"] = (done["end_ns"] - done["start_ns"]).astype(int).tolist()
            if cut:
                problem = (
                    f"no last record: the rank stopped after step {len(steps) - 1} "
                    f"(its records up to then are read){'; ' + problem if problem else ''}"
                )
        return rank_row(self.path, info, r, tree, problem)

    def _world(self) -> int:
        sizes = [
            s.meta.get("workflow_size") or s.meta.get("world_size") or 0
            for s in self._streams.values()
        ]
        return max([int(x) for x in sizes] + [max(self._streams, default=-1) + 1])

    def _stale(self, s: RankStream) -> bool:
        """No new record from the rank for :attr:`silent_after` seconds of this
        process's clock (the ranks' clocks may differ from it)."""
        return s.last_read is not None and time.monotonic() - s.last_read > self.silent_after

    @property
    def silent_after(self) -> float:
        if self._silent_after is not None:
            return float(self._silent_after)
        flushes = [float(s.meta.get("flush", 1.0) or 1.0) for s in self._streams.values()]
        return max(5.0, 5 * max(flushes, default=1.0))

    # ------------------------------------------------------------ detection
    def _detect(self, new: bool = True) -> None:
        self._detect_stragglers()
        if new:  # their windows end at the newest records
            self._detect_blocked()
            self._detect_memory()
        self._detect_silent()

    def _detect_blocked(self) -> None:
        """Each component of sampled ranks: its blocked share over the last
        :attr:`BlockedRule.seconds` of each live rank's records (the mean over
        its ranks), against :attr:`BlockedRule.share`; one alert per episode."""
        rule = self.blocked
        groups: dict[str, list[int]] = {}
        for r in self._sampled:  # a rank's last record too: its last window
            if r not in self._silent:
                groups.setdefault(self._streams[r].meta.get("component", ""), []).append(r)
        started = self._started_at()
        if started is None:
            return  # start-up: peers that load and connect are waited for by design
        for group, ranks in groups.items():
            windows = [w for r in ranks if (w := self._blocked_window(r, started)) is not None]
            if len(windows) < len(ranks):
                continue  # a rank without records over the whole window yet
            share = float(np.mean([b.sum() / wall for b, wall, _ in windows]))
            if share <= rule.share:
                self._blocked_now.discard(group)
                continue
            if group in self._blocked_now:
                continue
            self._blocked_now.add(group)
            self._blocked(group, ranks, share, windows)

    def _detect_memory(self) -> None:
        """Each rank's memories: growth over the last :attr:`MemoryRule.seconds`
        of its records (:class:`MemoryRule`); one alert per episode."""
        rule = self.memory
        for key, hist in self._memory.items():
            r = key[0]
            if r in self._silent or r not in self._first:
                continue  # no step after its warm-up yet
            start = self._first[r] + rule.settle
            end = hist[-1][1] - rule.seconds * 1e9
            at = [k for k, h in enumerate(hist) if h[0] >= start and h[1] <= end]
            if not at:
                continue
            peaks = np.array([h[2].max() if len(h[2]) else 0.0 for h in hist])
            first = at[-1]
            grown = peaks[-1] - peaks[first]
            if not grown > max(rule.least, rule.share * peaks[first]):
                if grown <= rule.least:
                    self._memory_now.discard(key)
                continue
            if np.mean(np.diff(peaks[first:]) > 0) < rule.steady or key in self._memory_now:
                continue
            # back to where the rise began: spans that rose at a quarter of the
            # window's rate at least (a process's memory may creep all along)
            steps = np.array([h[0] for h in hist], dtype=np.int64)
            slow = grown / max(steps[-1] - steps[first], 1) / 4
            while first > 0 and hist[first - 1][0] >= start:
                span = max(steps[first] - steps[first - 1], 1)
                if (peaks[first] - peaks[first - 1]) / span <= slow:
                    break
                first -= 1
            # within the span where it began, from the rate after it
            onset = onset_in_span(steps[first:], peaks[first:], slow)
            self._memory_now.add(key)
            self._memory_grew(r, key[1], hist[first], hist[-1], onset[0] if onset else steps[first])

    def _memory_grew(self, r: int, what: str, since: tuple, last: tuple, step: int) -> None:
        col = last[2].copy()
        col[: len(since[2])] -= since[2]
        grown = float(last[2].max() - (since[2].max() if len(since[2]) else 0.0))
        context = self._paths[r][int(np.argmax(col))] if len(col) else ""
        s = self._streams[r]
        comp = s.meta.get("component", "")
        who = f"{comp} rank {s.meta.get('component_rank', r)}" if comp else f"rank {r}"
        steps, seconds = last[0] - since[0], (last[1] - since[1]) / 1e9
        msg = (
            f"{who}: its {what} peak grew {grown / 2**20:.0f} MiB in {seconds:.1f} s since "
            f"step {step}, to {last[2].max() / 2**20:.0f} MiB"
        )
        if steps > 0:
            msg += f" ({grown / steps / 2**20:.1f} MiB a step)"
        where = f"most in {context}"
        if what == "RSS":  # sampled: where it was read, not where it was allocated
            where = f"read highest in {context} (sampled: not where it was allocated)"
        now = time.time()
        self._raise({
            "time": pd.Timestamp(now, unit="s", tz="UTC"), "kind": "memory", "rank": r,
            "component": comp, "step": step, "message": f"{msg}; {where}",
            "context": context, "after [s]": now - since[1] / 1e9, "grown [B]": grown,
        })  # fmt: skip

    def _started_at(self) -> int | None:
        """When the run's start-up ended (wall clock, ns): the first record of
        its last process to have time in any context (before it, a process
        imports and connects); None while one has none yet."""
        began = [
            self._began.get(r)
            for r, s in self._streams.items()
            if s.records and r not in self._silent
        ]
        return None if not began or None in began else max(began)

    def _blocked_window(self, r: int, started: int) -> tuple[np.ndarray, float, float] | None:
        """Rank ``r``'s blocked time per context (ns, of its sampled time)
        between its newest record and its last one at least
        :attr:`BlockedRule.seconds` older (and after ``started``, the end of
        start-up; else its first since then, at least half that older: a short
        run), the wall time between them (ns) and the newest record's wall
        clock (ns); None when its records do not reach that far back."""
        hist = self._sampled[r]
        end = hist[-1]
        after = [h for h in hist if started <= h[0] <= end[0] - self.blocked.seconds * 5e8]
        if not after:
            return None  # not half a window of records since start-up yet
        full = [h for h in after if h[0] <= end[0] - self.blocked.seconds * 1e9]
        start = full[-1] if full else after[0]
        n = len(end[1])
        cpu, sampled = (
            e - np.pad(b, (0, n - len(b))) for b, e in zip(start[1:], end[1:], strict=True)
        )
        kind = np.asarray(self._streams[r].kind[:n], dtype=object)
        # the sampler's time, not the contexts' own: a wait is timed when it ends,
        # its samples fall in the window as it goes
        blocked, _ = blocked_idle(sampled, cpu, sampled, kind, self.blocked.low_cpu)
        return blocked, float(end[0] - start[0]), float(end[0])

    def _blocked(self, group: str, ranks: list[int], share: float, windows: list) -> None:
        # per call path, the blocked time a process (ns): the mean over the ranks
        per_path = pd.concat(
            [pd.Series(b, index=self._paths[r][: len(b)]) for r, (b, _, _) in zip(ranks, windows)]
        ).groupby(level=0, sort=False).sum() / len(ranks)
        context = str(per_path.idxmax()) if per_path.max() > 0 else ""
        most = float(per_path.max()) / 1e9
        who = f"component {group}" if group else "the run"
        secs = float(np.mean([wall for _, wall, _ in windows])) / 1e9
        msg = (
            f"{who} is blocked {share:.0%} of the last {secs:.1f} s (the mean of its "
            f"{len(ranks)} process{'es' if len(ranks) > 1 else ''}), most in {context}"
            f" ({most:.2f} s a process)"
        )
        now = time.time()
        newest = max(end for _, _, end in windows) / 1e9
        steps = min(self._streams[r].steps_done for r in ranks)
        self._raise({
            "time": pd.Timestamp(now, unit="s", tz="UTC"), "kind": "blocked", "rank": None,
            "component": group, "step": steps, "message": msg,
            "late [s]": most, "gap [s]": np.nan,
            "step [s]": np.nan, "context": context, "after [s]": now - newest,
        })  # fmt: skip

    def _detect_stragglers(self) -> None:
        """Each step that every rank of a component still writing has ended, in
        order, once (the ranks of one job; a workflow's components apart)."""
        for group, by_step in self._by_step.items():
            live = [r for r in self.ranks if self._group.get(r) == group and r not in self._silent]
            if len(live) < 2:
                continue
            # each rank's first steps after its warm-up are start-up
            start = max(self._first[r] for r in live) + self.rule.settle
            checked = self._checked.get(group, -1)
            for step in sorted(k for k in by_step if k > checked):
                got = by_step[step]
                # a rank that has ended is waited for only up to its last step
                needed = [r for r in live if not self._ended_before(r, step)]
                if len(needed) < 2 or any(r not in got for r in needed):
                    break
                if step >= start:
                    self._check_step(group, step, np.array(needed), got)
                self._checked[group] = checked = step
            for old in [k for k in by_step if k < checked - KEEP_STEPS]:
                del by_step[old]

    def _ended_before(self, r: int, step: int) -> bool:
        """Whether rank ``r`` wrote its last record without reaching ``step``."""
        s = self._streams[r]
        return s.final and s.step_row(step) is None

    def _check_step(self, group: str, step: int, ranks: np.ndarray, got: dict[int, tuple]) -> None:
        w = np.array([got[r][0] for r in ranks])
        took = float(np.median([got[r][1] for r in ranks]))
        recent = self._recent.setdefault(group, deque(maxlen=20))
        recent.append(took)
        median_step = float(np.median(recent))
        limit = max(self.rule.share * median_step, self.rule.least)
        late = median_of_others(w) - w
        is_late = set(ranks[late > limit].tolist())
        mine = set(ranks.tolist())  # this component's ranks: the others' runs are theirs
        advance_runs(self._late_run, step, mine, is_late, self.rule.tolerate)
        for r in is_late:
            self._on_time.pop(r, None)
        self._stragglers(group, step, mine, is_late, median_step, limit)
        quiet = not (mine & self._alerted)  # an alerted straggler explains slow steps
        self._check_regression(group, step, took, quiet)

    def _stragglers(
        self, group: str, step: int, mine: set[int], is_late: set[int], median_step: float,
        limit: float,
    ) -> None:  # fmt: skip
        """Ends the episodes of alerted ranks on time again; alerts the ranks
        late long enough whose own time grew."""
        # an alerted straggler's episode ends when it is on time as long as it took to alert
        for r in [r for r in self._alerted if r in mine and r not in is_late]:
            self._on_time[r] = self._on_time.get(r, 0) + 1
            if self._on_time[r] >= self.rule.steps and (
                self._on_time[r] * median_step >= self.rule.seconds
            ):
                self._alerted.discard(r)
                del self._on_time[r]
        for r in is_late - self._alerted:
            first, count, _ = self._late_run[r]
            if count < self.rule.steps or (step - first + 1) * median_step < self.rule.seconds:
                continue
            grown = self._grown(r, first, step)
            # the others' longer waits alone can be noise: the rank must also
            # have spent that much more time in one of its contexts (a rank that
            # waits for others spends its wait where it waits: not the sum)
            if grown is not None and len(grown) and grown.max() > limit:
                # late steps may have begun with noise: the context's own
                # records say more closely when it grew
                onset, whole = self._onset([r], str(grown.idxmax()), first, step, limit)
                if onset > first and (again := self._grown(r, whole, step)) is not None:
                    first, grown = onset, again
                self._alerted.add(r)
                self._straggler(r, first, step, median_step, grown)

    def _check_regression(self, group: str, step: int, took: float, quiet: bool) -> None:
        """A component's step ``took`` seconds: against its baseline (a
        :class:`RegressionRule`); steps while a rank of it is an alerted straggler
        count neither way."""
        rule = self.regression
        base = self._baseline.setdefault(group, deque(maxlen=rule.baseline))
        if not quiet:
            self._slow_run.pop(group, None)
            return
        if len(base) < rule.baseline:
            base.append(took)
            return
        ref = float(np.median(base))
        slow = took > ref * (1 + rule.share) and took - ref > rule.least
        advance_runs(self._slow_run, step, {group}, {group} if slow else set(), rule.tolerate)
        if not slow:
            if group not in self._slow_run:  # within a run of slow steps the baseline holds
                base.append(took)
            return
        first, count, _ = self._slow_run[group]
        if count < rule.steps or self._steps_took(group, first, step) < rule.seconds:
            return
        # the run may have begun with steps slowed by the machine: it begins
        # where the step times changed most (then as long again to be sure)
        steps = [k for k in range(first, step + 1) if self._by_step.get(group, {}).get(k)]
        times = self._step_times(group, first, step)
        cut = change_point(np.array([*base, *times]))
        begins = steps[max(cut - len(base), 0)]
        if begins > first:
            slow_since = [t > ref * (1 + rule.share) for t in times[steps.index(begins) :]]
            took_since = self._steps_took(group, begins, step)
            if sum(slow_since) < rule.steps or took_since < rule.seconds:
                return
            first = begins
        run_first = self._slow_run[group][0]  # against the steps before the whole run
        grown = self._grown_alike(group, first, step, run_first)
        if grown is not None and len(grown) and grown.max() > rule.share * ref:
            # the context's own records say more closely when it grew
            mine = [q for q in self._history if self._group.get(q) == group]
            context = str(grown.idxmax())
            onset, whole = self._onset(mine, context, run_first, step, rule.share * ref)
            # how much, from where it is whole, against the steps just before
            # the onset (the machine's load may have changed since the run began)
            again = self._grown_alike(group, whole, step, onset)
            if again is not None and len(again) and str(again.idxmax()) == context:
                first, grown = onset, again
            self._regressed(group, first, step, ref, grown)
        elif count < 4 * rule.steps:
            return
        # alerted, or slow everywhere alike for long: the new steps are the
        # baseline at once (a baseline refilled from empty would take in a
        # regression that begins meanwhile)
        del self._slow_run[group]
        base.clear()
        base.extend(self._step_times(group, first, step))

    def _onset(
        self, ranks: list[int], context: str, first: int, last: int, limit: float
    ) -> tuple[int, int]:
        """When ``context``'s time per step grew by more than ``limit`` seconds
        over its rate in the :data:`BEFORE` steps before ``first``, and from
        which step its growth can be measured whole: per rank of ``ranks``, from
        its records after ``first`` up to the one that ended step ``last`` (a
        watch of the ended run, all records read at once, says the same as
        the live one; :func:`onset_in_span`); the ranks' medians (``first`` for
        both where none did)."""
        onsets, whole = [], []
        for q in ranks:
            hist = self._history.get(q)
            if hist:
                upto = next((k for k, h in enumerate(hist) if h[0] > last), len(hist) - 1)
                hist = list(itertools.islice(hist, upto + 1))
            if not hist or context not in self._paths[q]:
                continue
            i = self._paths[q].index(context)
            at = np.array([h[0] for h in hist], dtype=np.int64)
            value = np.array([h[1][i] if i < len(h[1]) else 0.0 for h in hist])
            lo = np.flatnonzero(at <= first - BEFORE)
            hi = np.flatnonzero(at <= first)
            if not len(lo) or not len(hi) or at[hi[-1]] <= at[lo[-1]]:
                continue
            a, b = lo[-1], hi[-1]
            base = (value[b] - value[a]) / (at[b] - at[a])
            found = onset_in_span(at[b:], value[b:] - base * at[b:], limit * 1e9)
            if found is not None:
                onsets.append(found[0])
                whole.append(found[1])
        if not onsets:
            return first, first
        return int(np.median(onsets)), int(np.median(whole))

    def _step_times(self, group: str, first: int, last: int) -> list[float]:
        """The component's steps ``first..last`` (those every rank ended): the
        ranks' median time of each, seconds."""
        by_step = self._by_step.get(group, {})
        return [float(np.median([v[1] for v in by_step[k].values()]))
                for k in range(first, last + 1) if by_step.get(k)]  # fmt: skip

    def _steps_took(self, group: str, first: int, last: int) -> float:
        return float(np.sum(self._step_times(group, first, last)))

    def _regressed(self, group: str, first: int, last: int, ref: float, grown: pd.Series) -> None:
        now = float(np.median(self._step_times(group, first, last)))
        context, more = str(grown.idxmax()), float(grown.max())
        ends = [
            row[4] + row[5]
            for r, g in self._group.items()
            if g == group and (row := self._rows.get((r, first)))
        ]
        who = f"component {group}" if group else "the run"
        msg = (
            f"{who}: steps take {now / ref - 1:.0%} longer since step {first} "
            f"({ref * 1e3:.1f} -> {now * 1e3:.1f} ms, the ranks' median); its ranks spend "
            f"{more * 1e3:.1f} ms a step more than before in {context}"
        )
        at = time.time()
        self._raise({
            "time": pd.Timestamp(at, unit="s", tz="UTC"), "kind": "regression", "rank": None,
            "component": group, "step": first, "message": msg, "late [s]": more,
            "gap [s]": now - ref, "step [s]": ref, "context": context,
            "after [s]": at - max(ends) if ends else np.nan,
        })  # fmt: skip

    def _straggler(
        self, r: int, first: int, last: int, median_step: float, grown: pd.Series
    ) -> None:
        gaps = []
        by_step = self._by_step.get(self._group.get(r, ""), {})
        for step in range(first, last + 1):
            got = by_step.get(step, {})
            ranks = sorted(got)
            if r in got and len(ranks) > 1:
                w = np.array([got[q][0] for q in ranks])
                i = ranks.index(r)
                gaps.append(float(median_of_others(w)[i] - w[i]))
        gap = float(np.median(gaps)) if gaps else float("nan")
        s = self._streams[r]
        row = self._rows.get((r, first))
        end_of_first = row[4] + row[5] if row else float("nan")
        context, late = str(grown.idxmax()), float(grown.max())
        comp = s.meta.get("component", "")
        who = f"{comp} rank {s.meta.get('component_rank', r)}" if comp else f"rank {r}"
        msg = (
            f"{who} is late at the collectives since step {first}: the others wait "
            f"{gap * 1e3:.1f} ms a step longer; it spends {late * 1e3:.1f} ms a step more "
            f"than they do in {context}"
        )
        if median_step > 0:
            msg += f" ({late / median_step:.0%} of a {median_step * 1e3:.1f} ms step)"
        now = time.time()
        self._raise({
            "time": pd.Timestamp(now, unit="s", tz="UTC"), "kind": "straggler", "rank": r,
            "component": comp, "step": first, "message": msg, "late [s]": late,
            "gap [s]": gap, "step [s]": median_step, "context": context,
            "after [s]": now - end_of_first,
        })  # fmt: skip

    def _grown(self, r: int, first: int, last: int) -> pd.Series | None:
        """Rank ``r``'s time per step beyond the other ranks' median in each of
        its contexts outside the collectives (seconds, by call path), from each
        rank's last record before step ``first`` to its first record with step
        ``last`` ended, per step since ``first`` (the steps before it in that
        span taken as like the base); None when a rank has no such records."""
        per_step = self._per_step(self._group.get(r, ""), first, last, after=True)
        if r not in per_step or len(per_step) < 2:
            return None
        others = pd.concat([v for q, v in per_step.items() if q != r], axis=1).median(axis=1)
        others = others.reindex(per_step[r].index).fillna(0.0)
        return beyond_proportion(per_step[r].sub(others), others) / 1e9

    def _grown_alike(
        self, group: str, first: int, last: int, since: int | None = None
    ) -> pd.Series | None:
        """How much the ranks' time per step grew alike (the :data:`ALIKE`
        quantile over them), in each context outside the collectives (seconds,
        by call path, beyond proportion): since step ``first`` (to the first
        record with step ``last`` ended) against the
        :attr:`RegressionRule.baseline` steps before it (before ``since``, where
        given); None without records."""
        since = first if since is None else since
        now = self._per_step(group, first, last, after=True)
        before = self._per_step(group, since - self.regression.baseline, since, after=False)
        grown = []
        for q in now:
            if q in before:
                base = before[q].reindex(now[q].index).fillna(0.0)
                grown.append(beyond_proportion(now[q].sub(base), base))
        if not grown:
            return None
        table = pd.concat(grown, axis=1).fillna(0.0)
        return table.quantile(ALIKE, axis=1, interpolation="lower") / 1e9

    def _per_step(self, group: str, lo: int, hi: int, *, after: bool) -> dict[int, pd.Series]:
        """Each rank of ``group``: its time (ns) per step in each context of its
        steps outside the collectives (by call path) from its last record with at most ``lo``
        steps ended to its first record with more than ``hi`` (``after``; else
        its last with at most ``hi``), per step since ``lo`` (steps before it in
        that span taken as like the base); ranks without such records left out."""
        per_step: dict[int, pd.Series] = {}
        for q, hist in self._history.items():
            if self._group.get(q) != group or not hist:
                continue
            before = [h for h in hist if h[0] <= lo]
            base_steps, base = before[-1] if before else (0, np.zeros(0))
            if after:
                later = [h for h in hist if h[0] > hi]
                steps, now = later[0] if later else hist[-1]
            else:
                upto = [h for h in hist if h[0] <= hi]
                steps, now = upto[-1] if upto else (0, np.zeros(0))
            since = steps - max(base_steps, lo)
            if since <= 0:
                continue
            grown = now.copy()
            grown[: len(base)] -= base
            kind = np.asarray(self._streams[q].kind[: len(grown)], dtype=object)
            keep = (kind != K_COMM) & np.asarray(self._in_step[q][: len(grown)], dtype=bool)
            paths = np.asarray(self._paths[q][: len(grown)], dtype=object)
            per_step[q] = pd.Series(grown[keep] / since, index=paths[keep])
        return per_step

    def _detect_silent(self) -> None:
        for r in [r for r in self._silent if not self._stale(self._streams[r])]:
            self._silent.discard(r)  # it writes again: back among the ranks compared
        going = [r for r, s in self._streams.items() if s.records and not s.final]
        fresh = [r for r in going if not self._stale(self._streams[r])]
        for r in going:
            s = self._streams[r]
            if r in self._silent or not self._stale(s) or not fresh:
                continue
            self._silent.add(r)
            since = time.monotonic() - s.last_read
            self._raise({
                "time": pd.Timestamp.now(tz="UTC"), "kind": "silent", "rank": r,
                "component": s.meta.get("component", ""), "step": s.steps_done,
                "message": f"rank {r} has written nothing for {since:.1f} s while others go on"
                + (f" ({s.problem})" if s.problem else ""),
                "late [s]": np.nan, "gap [s]": np.nan, "step [s]": np.nan, "context": "",
                "after [s]": since,
            })  # fmt: skip

    def _raise(self, alert: dict[str, Any]) -> None:
        self._alerts.append(alert)
        row = pd.Series(alert)
        for fn in list(self._callbacks):
            try:
                fn(row)
            except Exception as e:  # noqa: BLE001 - a callback's error is said, the watch goes on
                warnings.warn(f"cctviz.watch: on_alert callback failed: {e!r}", stacklevel=2)

    def dashboard(self, every: float = 1.0, last: float | None = 10.0, **view: Any) -> Any:
        """A live dashboard of this run in the notebook: a status line, the
        calling-context tree and the ranks' flow through it over the last
        ``last`` seconds (None: the run so far), a traced run's timeline (those
        seconds of it, which the tree and the flow then show), the alerts;
        refreshed at most once a second
        (:class:`cctviz.views.dashboard.Dashboard`; ``view``: the CCTView's
        keyword arguments)."""
        from .views.dashboard import Dashboard

        return Dashboard(self, every=every, last=last, **view)

    # ------------------------------------------------------------ running
    def start(self, every: float = 1.0) -> Watch:
        """Poll every ``every`` seconds from a thread until :meth:`close` (or the run ends)."""
        if self._thread is not None:
            return self

        def loop() -> None:
            while not self._stop.wait(every):
                try:
                    self.poll()
                    if self.ended:
                        return
                except Exception as e:  # noqa: BLE001 - said, and the watch goes on
                    warnings.warn(f"cctviz.watch: a poll failed: {e!r}", stacklevel=1)

        self._thread = threading.Thread(target=loop, name="cctviz-watch", daemon=True)
        self._thread.start()
        return self

    def wait(self, timeout: float | None = None, every: float = 0.25) -> bool:
        """Poll until the run has ended (True) or ``timeout`` seconds passed (False)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.ended:
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(every)
            if self._thread is None:
                self.poll()
        self.poll()
        return True

    def close(self) -> None:
        """Stop polling (the thread of :meth:`start`)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"<Watch {self.path}: {len(self.ranks)} rank(s), "
            f"{'ended' if self.ended else 'running'}, {len(self._alerts)} alert(s)>"
        )


def beyond_proportion(grown: pd.Series, base: pd.Series) -> pd.Series:
    """What each context grew beyond its share of the whole growth: ``grown``
    (per context) less ``base`` scaled by the total's growth. A process slowed
    everywhere alike (a shared core, a slower clock) grows nowhere beyond
    proportion; time added in one context shows there, less its own share.

    >>> base = pd.Series([10.0, 30.0, 60.0], index=["a", "b", "c"])
    >>> beyond_proportion(base * 0.2, base).round(6).tolist()  # 20% slower everywhere
    [0.0, 0.0, 0.0]
    >>> beyond_proportion(pd.Series([10.0, 0.0, 0.0], index=base.index), base).tolist()
    [9.0, -3.0, -6.0]
    """
    total = float(base.sum())
    if total <= 0:
        return grown
    return grown - base * (float(grown.sum()) / total)


def onset_in_span(at: np.ndarray, excess: np.ndarray, limit: float) -> tuple[int, int] | None:
    """When a cumulative ``excess`` over a base rate (one value per record;
    ``at``: the steps ended at each record) grew by more than ``limit`` a step,
    and the first record from which its growth is whole; None where no span
    between two records grew that fast. The first such span tells the rate
    (the rate after it where later records tell); the onset is where the
    excess since the record two before that span would have begun at that
    rate (a span with the onset inside grows slower than the rate).

    >>> at = np.array([20, 25, 31, 36])  # 10 a step more from step 30 on
    >>> onset_in_span(at, np.array([0.0, 0.0, 10.0, 60.0]), 5.0)
    (30, 31)
    >>> onset_in_span(np.append(at, 41), np.array([0.0, 0.0, 10.0, 60.0, 110.0]), 5.0)
    (30, 31)
    """
    span = np.diff(at)
    rate = np.diff(excess) / np.maximum(span, 1)
    grew = np.flatnonzero((span > 0) & (rate > limit))
    if not len(grew):
        return None
    j = int(grew[0])
    end = j + 1 if j + 2 < len(at) else j  # the rate from the record after the span
    g = (excess[-1] - excess[end]) / (at[-1] - at[end])
    pre = max(j - 1, 0)
    if g <= limit / 2:  # no steady growth after: the span's start
        return int(at[j]), int(at[j + 1])
    onset = at[-1] - (excess[-1] - excess[pre]) / g
    onset = int(min(max(round(onset), at[pre]), at[j + 1] - 1))
    return onset, int(at[np.searchsorted(at, onset)])


def change_point(values: np.ndarray) -> int:
    """Where the mean of a series changed most: the index ``k`` (1 to n-1)
    that maximises ``k (n - k) / n (mean(values[k:]) - mean(values[:k]))^2``
    (the likelihood of one change of mean in Gaussian noise); 0 for fewer than
    2 values.

    >>> change_point(np.array([1.0, 1.1, 0.9, 1.2, 1.3, 1.2, 2.0, 2.1]))
    6
    """
    n = len(values)
    if n < 2:
        return 0
    csum = np.cumsum(values)
    k = np.arange(1, n)
    before = csum[:-1] / k
    after = (csum[-1] - csum[:-1]) / (n - k)
    return int(k[np.argmax(k * (n - k) / n * (after - before) ** 2)])


def advance_runs(
    runs: dict[Any, list[int]], step: int, keys: set[Any], hits: set[Any], tolerate: int
) -> None:
    """Runs of steps where a condition held, per key (a rank, a component):
    ``runs[key] = [first step, steps it held, steps it did not]``; a key in
    ``hits`` held at ``step``; a run ends at its ``tolerate + 1``-th step where
    it did not (a noisy step inside a real run is tolerated; noise before one
    does not stretch its start back).

    >>> runs = {}
    >>> for step, hit in enumerate([1, 1, 0, 1, 1, 0, 1]):
    ...     advance_runs(runs, step, {"a"}, {"a"} if hit else set(), 1)
    ...     print(step, runs.get("a"))
    0 [0, 1, 0]
    1 [0, 2, 0]
    2 [0, 2, 1]
    3 [0, 3, 1]
    4 [0, 4, 1]
    5 None
    6 [6, 1, 0]
    """
    for k in keys:
        run = runs.get(k)
        if k in hits:
            if run is None:
                runs[k] = [step, 1, 0]
            else:
                run[1] += 1
        elif run is not None:
            run[2] += 1
            if run[2] > tolerate:
                del runs[k]


def median_of_others(values: np.ndarray) -> np.ndarray:
    """For each value, the median of all the others (vectorised).

    >>> median_of_others(np.array([1.0, 5.0, 3.0, 10.0])).tolist()
    [5.0, 3.0, 5.0, 3.0]
    """
    n = len(values)
    order = np.argsort(values, kind="stable")
    ranked = values[order]
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)

    def kth(j: int) -> np.ndarray:  # the j-th smallest of the others
        return np.where(j < pos, ranked[j], ranked[min(j + 1, n - 1)])

    k = n - 1
    if k < 1:
        return np.full(n, np.nan)
    return kth(k // 2) if k % 2 else (kth(k // 2 - 1) + kth(k // 2)) / 2


def watch(run: str | os.PathLike, **kw: Any) -> Watch:
    """A :class:`Watch` of the run folder ``run`` (module docstring)."""
    return Watch(run, **kw)


def _check_folder(path: Path) -> None:
    """A path that cannot become a run folder is refused at once; a missing or
    empty folder may be one that has not started yet."""
    if path.exists() and not path.is_dir():
        raise ProfileError(
            path, "not a run folder (a file): give the folder `cctviz run --out` writes"
        )
    if path.is_dir():
        names = [p.name for p in path.iterdir()]
        run_like = (
            not names
            or RUN_FILE in names
            or LIVE_DIR in names
            or any(rank_of(n) is not None for n in names)
        )
        if not run_like:
            raise ProfileError(
                path,
                "not a run folder: no run.json, live/ or rank-NNNNN.cctviz in it "
                f"(it holds {', '.join(sorted(names)[:5])}{', ...' if len(names) > 5 else ''})",
            )


__all__ = [
    "ALERT_COLUMNS", "STEP_TABLE", "BlockedRule", "MemoryRule", "RegressionRule",
    "StragglerRule", "Watch", "advance_runs", "beyond_proportion", "change_point",
    "median_of_others", "watch",
]  # fmt: skip
