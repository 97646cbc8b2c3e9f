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

- ``straggler``: a rank late at the collectives in every step for 0.75 s, 3
  steps at least (:class:`StragglerRule`). A rank's lateness in a step is how much less it waited in
  collectives than the median of the other ranks (the others wait for the
  late one: their collectives last longer, its own end at once). Late means
  more than :attr:`StragglerRule.share` of the median step and at least
  :attr:`StragglerRule.least` seconds. The alert names the rank, the step where
  the run of late steps began, the context whose time per step grew most on
  that rank against the others since then (its call path) and by how much.
  One alert per episode: the rank is alerted again only after it was on time
  for as long (steps and seconds) as it takes to be alerted.
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
from .model.formats import K_COMM, LIVE_DIR, RUN_FILE, live_rank_of, rank_of
from .model.tables import UnitTable, with_units
from .readers._live import RankStream
from .readers.cctviz_run import assemble_run, rank_row, read_rank, run_layout

#: records of each rank kept to find where a straggler's time grew
HISTORY = 256
#: steps kept past the last one checked (a straggler's window lies within them)
KEEP_STEPS = 1000
#: the columns of :meth:`Watch.steps`
STEP_TABLE = ("rank", "component", "step", "warmup", "start [s]", "time [s]", "wait [s]")
#: the columns of :attr:`Watch.alerts`
ALERT_COLUMNS = (
    "time", "kind", "rank", "component", "step", "message",
    "late [s]", "gap [s]", "step [s]", "context", "after [s]",
)  # fmt: skip


@dataclass(frozen=True)
class StragglerRule:
    """When a rank is a straggler (module docstring): late by more than
    ``share`` of the median step and at least ``least`` seconds, in ``steps``
    steps in a row that last ``seconds`` at least (the machine's own hiccups
    last a few short steps). Warm-up steps and the first ``settle`` steps after
    them (start-up: the allocator, DDP's buckets, the first collectives) are
    left out."""

    steps: int = 3
    seconds: float = 0.75
    share: float = 0.10
    least: float = 0.002
    settle: int = 5

    def __post_init__(self) -> None:
        if self.steps < 1 or self.settle < 0 or not min(self.seconds, self.share, self.least) >= 0:
            raise ValueError(f"a straggler rule needs steps >= 1 and shares >= 0: {self}")


class Watch:
    """A run read while it runs (module docstring).

    Args:
        run: the run folder (``cctviz run --out``).
        wait: seconds to wait for the run's first record (a run that has not
            started yet); a :class:`TimeoutError` past them.
        straggler: the :class:`StragglerRule`.
        silent_after: seconds without a record from a rank, while others append,
            before a ``silent`` alert (default: 5 flushes, at least 5 s).
    """

    def __init__(
        self,
        run: str | os.PathLike,
        *,
        wait: float = 30.0,
        straggler: StragglerRule | None = None,
        silent_after: float | None = None,
    ) -> None:
        self.path = Path(run)
        self.rule = straggler or StragglerRule()
        self._silent_after = silent_after
        self._streams: dict[int, RankStream] = {}
        self._paths: dict[int, list[str]] = {}
        self._history: dict[int, deque[tuple[int, np.ndarray]]] = {}
        self._alerts: list[dict[str, Any]] = []
        self._callbacks: list[Callable[[pd.Series], Any]] = []
        self._late_run: dict[int, int] = {}
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
            n = sum(s.update() for s in self._streams.values())
            self._detect()
            return n

    def _remember(self, s: RankStream) -> None:
        """After each record of a rank: its new steps (their wait in
        collectives), its call paths, and its time per context (the last
        :data:`HISTORY` records: for the context of a straggler)."""
        r = live_rank_of(s.path.name)
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
        for i in range(len(paths), len(s.parent)):
            p = s.parent[i]
            paths.append(s.name[i] if p < 0 else f"{paths[p]}/{s.name[i]}")
        times = s.metrics.get("time", {})
        col = np.zeros(len(s.parent))
        if times:
            col[np.fromiter(times.keys(), dtype=np.int64)] = np.fromiter(times.values(), float)
        self._history.setdefault(r, deque(maxlen=HISTORY)).append((s.steps_done, col))

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
            try:
                info = json.loads((self.path / RUN_FILE).read_text())
            except (OSError, ValueError):
                return False
            self._ended_said = isinstance(info, dict) and bool(info.get("ended"))
        return self._ended_said

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
        ``time`` (wall clock when raised, a Timestamp), ``kind``, ``rank``,
        ``component``, ``step`` (where the condition began), ``message``, and
        the numbers behind it: ``late [s]`` (a straggler's time per step in
        ``context`` beyond the other ranks' median), ``gap [s]`` (how much
        longer the others waited in collectives per step, the median),
        ``step [s]`` (the median step), ``after [s]`` (from the end of the step
        where it began to the alert; a ``silent`` rank's silence so far)."""
        with self._lock:
            table = pd.DataFrame(self._alerts, columns=list(ALERT_COLUMNS))
        units = {"late [s]": "s", "gap [s]": "s", "step [s]": "s", "after [s]": "s"}
        return with_units(table, units)

    def on_alert(self, fn: Callable[[pd.Series], Any]) -> None:
        """Call ``fn(alert)`` (a row of :attr:`alerts`) for each new alert."""
        self._callbacks.append(fn)

    def ensemble(self) -> Ensemble:
        """Every rank's tree so far, as ``cctviz.read(run_dir)`` reads a run
        (ranks still running are flagged ``running``; a rank whose records stop
        short of its last is flagged with where it was cut). Once the run has
        ended it is the Ensemble ``cctviz.read`` gives."""
        with self._lock:
            info, files, world = run_layout(self.path)
            world = max(world, self._world())
            if world == 0:
                raise ProfileError(self.path, "no rank has written anything yet")
            with warnings.catch_warnings():  # ranks that run are not complete yet: said per rank
                warnings.simplefilter("ignore")
                ens = assemble_run(self.path, info, world, lambda r: self._rank(info, files, r))
        for m in (ens.meta, ens.tree.meta):  # as cctviz.read says where it read it
            m.setdefault("format", "cctviz-run")
            m.setdefault("source", str(self.path))
        return ens

    def _rank(self, info: dict, files: dict[int, Path], r: int) -> tuple[dict, Any]:
        s = self._streams.get(r)
        if s is None or not s.records:
            if r in files:  # a rank written without live records
                return read_rank(self.path, info, files, r)
            return rank_row(self.path, info, r, None, "no record yet")
        tree = s.tree()
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
    def _detect(self) -> None:
        self._detect_stragglers()
        self._detect_silent()

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
        recent = self._recent.setdefault(group, deque(maxlen=20))
        recent.append(float(np.median([got[r][1] for r in ranks])))
        median_step = float(np.median(recent))
        limit = max(self.rule.share * median_step, self.rule.least)
        late = median_of_others(w) - w
        is_late = set(ranks[late > limit].tolist())
        for r in is_late:
            self._late_run[r] = self._late_run.get(r, 0) + 1
            self._on_time.pop(r, None)
        mine = set(ranks.tolist())  # this component's ranks: the others' runs are theirs
        for r in [r for r in self._late_run if r in mine and r not in is_late]:
            del self._late_run[r]
        # an alerted straggler's episode ends when it is on time as long as it took to alert
        for r in [r for r in self._alerted if r in mine and r not in is_late]:
            self._on_time[r] = self._on_time.get(r, 0) + 1
            if self._on_time[r] >= self.rule.steps and (
                self._on_time[r] * median_step >= self.rule.seconds
            ):
                self._alerted.discard(r)
                del self._on_time[r]
        for r, run in list(self._late_run.items()):
            if r not in mine or run < self.rule.steps or run * median_step < self.rule.seconds:
                continue
            if r in self._alerted:
                continue
            first = step - run + 1
            grown = self._grown(r, first, step)
            # the others' longer waits alone can be noise: the rank must also
            # have spent that much more time in one of its contexts (a rank that
            # waits for others spends its wait where it waits: not the sum)
            if grown is not None and len(grown) and grown.max() > limit:
                self._alerted.add(r)
                self._straggler(r, first, step, median_step, grown)

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
        per_step: dict[int, pd.Series] = {}
        group = self._group.get(r, "")
        for q, hist in self._history.items():
            if self._group.get(q) != group:
                continue
            before = [h for h in hist if h[0] <= first]
            base_steps, base = before[-1] if before else (0, np.zeros(0))
            after = [h for h in hist if h[0] > last]
            steps, now = after[0] if after else (hist[-1] if hist else (0, np.zeros(0)))
            since = steps - max(base_steps, first)
            if since <= 0:
                continue
            grown = now.copy()
            grown[: len(base)] -= base
            kind = np.asarray(self._streams[q].kind[: len(grown)], dtype=object)
            keep = kind != K_COMM
            paths = np.asarray(self._paths[q][: len(grown)], dtype=object)
            per_step[q] = pd.Series(grown[keep] / since, index=paths[keep])
        if r not in per_step or len(per_step) < 2:
            return None
        others = pd.concat([v for q, v in per_step.items() if q != r], axis=1).median(axis=1)
        return per_step[r].sub(others.reindex(per_step[r].index).fillna(0.0)) / 1e9

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

    def dashboard(self, every: float = 1.0, **view: Any) -> Any:
        """A live dashboard of this run in the notebook: a status line, the
        calling-context tree so far, the alerts; refreshed at most once a
        second (:class:`cctviz.views.dashboard.Dashboard`; ``view``: the
        CCTView's keyword arguments)."""
        from .views.dashboard import Dashboard

        return Dashboard(self, every=every, **view)

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


__all__ = ["ALERT_COLUMNS", "STEP_TABLE", "StragglerRule", "Watch", "median_of_others", "watch"]
