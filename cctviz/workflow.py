"""What a coupled workflow's components did and who waited for whom:
``cctviz.workflow.summary(run)`` of a ``cctviz run --workflow`` run folder.

Per process, its wall time (the root's inclusive time: all its profiled run) is
split by context, from the sampler's per-context ``cpu_time`` and
``sampled_time`` (:mod:`cctviz.runtime.sampler`):

- **blocked**: time in a communication call (``comm`` contexts: collectives,
  send, recv: waiting for peers, already timed), and time in a context of the
  program's own (``region``) during which the process used less than
  :data:`LOW_CPU` of a core (polling or blocking: a wait, whatever its name);
- **idle**: other time with that little CPU (outside the program's regions:
  start-up waits, a framework's sleeps);
- **busy**: the rest (contexts without a sample count as busy: too short to tell).

**Start-up and teardown** are apart. The run's steady state begins when the
last process that records steps (a training loop's optimizer steps) has ended
its first step: until then each process imports, sets up its process group,
takes its first step, or waits for those that do (a simulation that fills its
buffer while its consumer still imports torch). It ends when the first such
process has ended its last step: then they write results and leave. Each
process is cut at its live records just inside either end (``RUN/live``, every
``--flush`` seconds: a recorder charges time at its transitions, so a record's
values are exact and a moment between two records has none; a cut is up to one
flush inside), and within the steady state the time is the sampler's (a wait
open at a cut is charged when it ends; its samples fall on both sides). In :attr:`WorkflowSummary.table` ``startup`` and
``teardown`` are shares of a process's wall time before and after its steady
state; ``busy``, ``blocked`` and ``idle`` are shares of its time in it and sum
to 1; a component's are the means over its live processes. A run without live
records (``--flush off``) or without steps has none apart: the shares cover the
whole run (``startup`` and ``teardown`` 0, :attr:`WorkflowSummary.steady_from`
None). Every table names what a row of several processes
aggregates: ``_mean`` is the mean per process, ``_total`` the sum over them
(``docs/architecture.md`` section 3), and states its units (``attrs["units"]``). Whom a component waits for is known where data moved
between components: through files (the runtime's file log matches a path written
by one component and read by another, :mod:`cctviz.runtime.files`). A component's
waits in its regions are charged to the components it exchanges files with
(split evenly among several), its waits in communication calls to its own peers.
The **bottleneck** is the component the others wait for longest (seconds summed
over their processes).

Example (after ``cctviz run --workflow examples/workflow/sim_bound.toml --out
runs/coupled``; ``tests/runtime/test_workflow_summary.py`` runs it)::

    s = cctviz.workflow.summary("runs/coupled")
    s.table[["busy", "blocked", "idle", "wall_mean", "bytes_out_total"]], s.bottleneck, s.why
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import ProfileError
from .model.ensemble import Ensemble
from .model.formats import K_COMM, live_file
from .model.sampled import LOW_CPU, blocked_idle
from .model.tables import UnitTable, with_units
from .model.timeline import profile_ranks
from .readers import read
from .readers._live import RankStream

#: the metrics the split into busy, blocked and idle reads, taken apart at the
#: steady state's start
SPLIT_METRICS = ("time", "cpu_time", "sampled_time")

#: the units of :attr:`WorkflowSummary.table`'s measured columns
TABLE_UNITS = {
    "wall_mean": "s", "cpu_util": "%", "bytes_in_total": "B", "bytes_in_mean": "B",
    "bytes_out_total": "B", "bytes_out_mean": "B", "in_rate_mean": "B/s", "out_rate_mean": "B/s",
}  # fmt: skip


@dataclass
class WorkflowSummary:
    """The result of :func:`summary`.

    Attributes:
        table: one row per component (index: its name): ``processes``,
            ``wall_mean`` (s, the mean per process), ``startup``,
            ``teardown`` (shares of the wall time before and after the steady
            state), ``busy``, ``blocked``, ``idle`` (shares of the time in it,
            summing to 1; means over the processes; module docstring), ``cpu_util`` (%, the mean over the run and the
            processes), ``waits_for`` (the components its region waits are
            charged to), ``bytes_in_total``, ``bytes_out_total`` (B: files read
            and written, data moved with ``cctviz.moved``, collectives' bytes,
            summed over the component's processes), ``bytes_in_mean``,
            ``bytes_out_mean`` (the same per process) and the rates per process
            over its wall time ``in_rate_mean``, ``out_rate_mean`` (B/s).
        blocked: where each component was blocked in the steady state:
            ``component``, ``context`` (call path), ``kind``, ``blocked_mean``
            (s, the mean per process), ``share`` (of its steady time),
            ``waits_for``.
        channels: per (component, channel, direction): ``bytes_total``,
            ``bytes_mean`` (B; per process) and ``rate_mean`` (B/s, per process).
        waiting: how long each component waited for each other, summed over
            its processes: ``component``, ``waits_for``, ``wait_total`` (s).
        bottleneck: the component the others wait for longest (None when no
            component waits for another), from the waits in the steady state.
        why: the evidence, in one sentence.
        blocked_per_process: where each process was blocked over its whole
            run, start-up and teardown included (what a timeline of the run
            hatches, :class:`~cctviz.TimelineView`), one row per (process,
            context): ``rank``, ``component``, ``context``, ``kind``,
            ``blocked`` (s). A region counts as blocked in a process where its
            sampled CPU was low there, so the processes of one component may
            differ (``blocked``'s ``blocked_mean`` is the steady state's mean
            over the component's live processes; a process without a row
            counts 0).
        steady_from, steady_until: when the steady state began and ended
            (wall clock, seconds since the epoch; None: none apart).
        processes: one row per process: ``rank``, ``component``,
            ``component_rank``, ``startup``, ``steady``, ``teardown`` (s: its
            time before, in and after its steady state) and ``steady_from``,
            ``steady_until`` (its cuts, seconds since the epoch: its live
            records just inside the run's, up to one ``--flush`` in; NaN
            without).
    """

    table: UnitTable
    blocked: UnitTable
    channels: UnitTable
    waiting: UnitTable
    bottleneck: str | None
    why: str
    blocked_per_process: UnitTable | None = None
    steady_from: float | None = None
    steady_until: float | None = None
    processes: UnitTable | None = None


def summary(run: str | os.PathLike | Ensemble, *, low_cpu: float = LOW_CPU) -> WorkflowSummary:
    """Busy, blocked and idle per component of a workflow run, whom each waited
    for, and the bottleneck (module docstring).

    Args:
        run: a ``cctviz run --workflow`` run folder (or its Ensemble,
            ``cctviz.read(run)``, with the rank files beside it).
        low_cpu: the share of a core below which sampled time is a wait.

    Raises:
        ProfileError: the run has no ``component`` column (not a workflow) or
            was not sampled (``--sample-hz 0``).
    """
    ens = run if isinstance(run, Ensemble) else read(run)
    where = Path(run) if not isinstance(run, Ensemble) else Path(".")
    prof = ens.profiles
    if "component" not in prof.columns:
        raise ProfileError(where, "not a workflow run (no component column): cctviz run --workflow")
    if "sampled_time" not in ens.exc_metrics:
        raise ProfileError(where, "not sampled: run the workflow with --sample-hz > 0")
    live = prof["ok"].to_numpy(dtype=bool) if "ok" in prof.columns else np.ones(len(prof), bool)
    folder = where if not isinstance(run, Ensemble) else Path(str(ens.meta.get("source", ".")))
    steady = steady_state(ens, folder)
    split = _split(ens, low_cpu, steady)
    comp = prof["component"].astype(str).to_numpy()
    opens = _opens(prof)
    coupled = _couplings(comp, opens)
    waiting = _waiting(ens, split, comp, live, coupled)
    table = _table(ens, split, comp, live, coupled)
    blocked = _blocked_contexts(ens, split, comp, live, coupled)
    channels = _channels(ens, comp, live, split["wall_s"])
    bottleneck, why = _bottleneck(table, blocked, waiting)
    # what a timeline of the run hatches: each process's whole run, start-up included
    whole = split if steady is None else _split(ens, low_cpu, None)
    per_process = _blocked_per_process(ens, whole, comp, live)
    window = (None, None) if steady is None else (steady.since / 1e9, steady.until / 1e9)
    processes = _processes(ens, split, comp, steady)
    return WorkflowSummary(
        table, blocked, channels, waiting, bottleneck, why, per_process, *window, processes
    )


def _processes(
    ens: Ensemble, split: dict[str, np.ndarray], comp: np.ndarray, steady: Steady | None
) -> UnitTable:
    """One row per process: its time before, in and after the steady state,
    and where it was cut."""
    prof = ens.profiles
    nan = np.full(len(comp), np.nan)
    out = pd.DataFrame(
        {
            "rank": profile_ranks(prof),
            "component": comp,
            "component_rank": pd.to_numeric(prof.get("component_rank"), errors="coerce"),
            "startup": split["startup"] / 1e9,
            "steady": split["steady"] / 1e9,
            "teardown": split["teardown"] / 1e9,
            "steady_from": nan if steady is None else steady.cut_from / 1e9,
            "steady_until": nan if steady is None else steady.cut_until / 1e9,
        }
    )
    units = {"startup": "s", "steady": "s", "teardown": "s"}
    return with_units(out, units)


@dataclass
class Steady:
    """A run's steady state (:func:`steady_state`): from ``since`` to
    ``until`` (wall clock, ns), and per process its cuts (``cut_from``,
    ``cut_until``: wall clock ns, its live records just inside them) and
    its :data:`SPLIT_METRICS` per node there (nodes x profiles)."""

    since: int
    until: int
    cut_from: np.ndarray
    cut_until: np.ndarray
    at_from: dict[str, np.ndarray]
    at_until: dict[str, np.ndarray]


def steady_state(ens: Ensemble, folder: Path) -> Steady | None:
    """The run's steady state: from the end of the first step of the last
    process that records steps (start-up: imports, process groups, the first
    step, and the others' waits for them) to the end of the last step of the
    first one to end its steps (then teardown), with each process's values at
    its first live record at or after the start and its last at or before the
    end (the start's where none is). A recorder charges time at its
    transitions, so a record's values are exact and a moment between two
    records has none: each cut is up to one ``--flush`` inside. None where a
    process has no live records or none records steps."""
    ranks = profile_ranks(ens.profiles)
    streams, records = [], []
    for r in ranks:
        path = live_file(folder, int(r))
        if r < 0 or not path.is_file():
            return None
        got: list[tuple[int, dict[str, np.ndarray]]] = []
        s = RankStream(path, on_record=lambda s, got=got: got.append(_values_now(s)))
        s.update()
        streams.append(s)
        records.append(got)
    steps = [step_ends(s) for s in streams]
    steps = [e for e in steps if e is not None]
    if not steps:
        return None
    since, until = max(e[0] for e in steps), min(e[1] for e in steps)
    until = max(until, since)
    index = pd.Index(ens.tree.callpaths.astype(str))
    n, m_prof = len(ens.tree), len(streams)
    at = {end: {m: np.zeros((n, m_prof)) for m in SPLIT_METRICS} for end in ("from", "until")}
    cuts = {end: np.zeros(m_prof, dtype=np.int64) for end in ("from", "until")}
    for p, (s, got) in enumerate(zip(streams, records, strict=True)):
        node = index.get_indexer(context_paths(s.parent, s.name))
        walls = np.array([w for w, _ in got], dtype=np.int64)
        # the first record at or after the start, the last at or before the end
        first = min(int(np.searchsorted(walls, since, side="left")), len(got) - 1)
        last = max(int(np.searchsorted(walls, until, side="right")) - 1, first)
        for end, k in (("from", first), ("until", last)):
            cuts[end][p] = walls[k]
            for m in SPLIT_METRICS:
                col = got[k][1][m]
                ok = node[: len(col)] >= 0
                at[end][m][node[: len(col)][ok], p] = col[ok]
    return Steady(
        since, until, cuts["from"], cuts["until"], at["from"], at["until"]
    )  # fmt: skip


def context_paths(parent: list[int], name: list[str]) -> list[str]:
    r"""The call path of each of a recorder's contexts, in its order (parents
    first), as :attr:`cctviz.Tree.callpaths` writes them (a Tree's nodes are in
    another order).

    >>> context_paths([-1, 0, 0, 2], ["main", "a/b", "c", "d"])
    ['main', 'main/a\\/b', 'main/c', 'main/c/d']
    """
    out: list[str] = []
    for p, n in zip(parent, name, strict=True):
        e = str(n).replace("\\", "\\\\").replace("/", "\\/")
        out.append(e if p < 0 else f"{out[p]}/{e}")
    return out


def _values_now(s: RankStream) -> tuple[int, dict[str, np.ndarray]]:
    """A rank's :data:`SPLIT_METRICS` per context at its last record, with its
    wall clock (ns)."""
    return int(s.last_wall_ns or 0), {m: s.column(m) for m in SPLIT_METRICS}


def step_ends(s: RankStream) -> tuple[int, int] | None:
    """When the rank's first step and its last ended (wall clock, ns); None
    without steps."""
    if not s.steps_done:
        return None
    offset = int(s.wall_offset_ns or 0)
    first, last = s.step_row(0), s.step_row(s.steps_done - 1)
    return int(first[2]) + offset, int(last[2]) + offset


def _split(ens: Ensemble, low_cpu: float, steady: Steady | None) -> dict[str, np.ndarray]:
    """Nodes x profiles in the steady state (the whole run without one):
    ``blocked``, ``idle`` and ``busy`` ns; per profile ``wall`` (ns, the whole
    run), ``startup``, ``steady`` and ``teardown`` (ns: before, in and after
    it, summing to ``wall``) and ``wall_s`` (s, NaN where a process recorded no
    time: no rate). Within a steady state the time is the sampler's: a
    context's own time is charged when it is left, so a wait open at a cut
    would fall wholly on one side; its samples fall on both as it goes."""
    kind = ens.tree.nodes["kind"].astype(str).to_numpy()
    comm = (kind == K_COMM)[:, None]
    roots = np.asarray(ens.tree.parent) < 0
    wall = ens.values("time (inc)")[roots].sum(axis=0)

    def within(m: str) -> np.ndarray:
        v = ens.values(m)
        if steady is None:
            return v
        return np.maximum(np.minimum(v, steady.at_until[m]) - steady.at_from[m], 0.0)

    t = within("time" if steady is None else "sampled_time")
    blocked, idle = blocked_idle(t, within("cpu_time"), within("sampled_time"), kind, low_cpu)
    parts = {"startup": np.zeros_like(wall), "steady": wall, "teardown": np.zeros_like(wall)}
    if steady is not None:  # the sampler's shares of the wall time
        sampled = ens.values("sampled_time").sum(axis=0)
        share = np.vstack(
            [
                steady.at_from["sampled_time"].sum(axis=0),
                t.sum(axis=0),
            ]
        ) / np.where(sampled > 0, sampled, np.nan)
        share = np.nan_to_num(np.clip(share, 0.0, 1.0))
        before = np.round(wall * share[0])  # whole ns: no residue of rounding
        inside = np.round(wall * np.minimum(share[1], 1.0 - share[0]))
        parts = {"startup": before, "steady": inside, "teardown": wall - before - inside}
    return {
        "blocked": blocked,
        "idle": idle,
        "busy": t - blocked - idle,
        "wall": wall,
        **parts,
        "sampled": t.sum(axis=0),
        "wall_s": np.where(wall > 0, wall / 1e9, np.nan),
        "comm": comm,
    }


def _opens(prof: pd.DataFrame) -> list[list]:
    """Per profile, the files it opened (the rank files' ``files`` metadata)."""
    out = []
    for f in prof.get("file", pd.Series([None] * len(prof))):
        opens: list = []
        if isinstance(f, str) and Path(f).is_file():
            try:
                opens = list(read(f, format="cctviz").meta.get("files", []))
            except ProfileError:
                opens = []
        out.append(opens)
    return out


def _couplings(comp: np.ndarray, opens: list[list]) -> dict[str, list[str]]:
    """Per component, the others it exchanged files with (written by one, read
    by the other), in name order."""
    written: dict[str, set[str]] = {}
    readers: dict[str, set[str]] = {}
    for c, ops in zip(comp, opens):
        for o in ops:
            (written if o[3] == "w" else readers).setdefault(o[2], set()).add(str(c))
    pairs: dict[str, set[str]] = {str(c): set() for c in comp}
    for path, by in written.items():
        for r in readers.get(path, ()):
            for w in by:
                if r != w:
                    pairs[r].add(w)
                    pairs[w].add(r)
    return {c: sorted(v) for c, v in pairs.items()}


def _per_component(
    values: np.ndarray, comp: np.ndarray, live: np.ndarray, how: str = "mean"
) -> pd.Series:
    """The mean (or ``how``: "sum") of per-profile values over each component's
    live profiles."""
    frame = pd.DataFrame({"component": comp[live], "v": values[live]})
    return frame.groupby("component", sort=False)["v"].agg(how)


def _table(ens, split, comp, live, coupled) -> UnitTable:
    wall, within = split["wall"], split["sampled"]  # what busy, blocked and idle split
    shares = {
        k: _per_component(split[k].sum(axis=0) / np.where(within > 0, within, np.nan), comp, live)
        for k in ("busy", "blocked", "idle")
    }
    table = pd.DataFrame(shares)
    of_wall = np.where(wall > 0, wall, np.nan)
    table.insert(0, "teardown", _per_component(split["teardown"] / of_wall, comp, live))
    table.insert(0, "startup", _per_component(split["startup"] / of_wall, comp, live))
    table.insert(0, "wall_mean", _per_component(wall / 1e9, comp, live))
    table.insert(0, "processes", pd.Series(comp).value_counts().reindex(table.index))
    roots = np.asarray(ens.tree.parent) < 0
    cpu = ens.values("cpu_time (inc)")[roots].sum(axis=0)
    sampled = ens.values("sampled_time (inc)")[roots].sum(axis=0)
    table["cpu_util"] = _per_component(
        100.0 * cpu / np.where(sampled > 0, sampled, np.nan), comp, live
    )
    table["waits_for"] = [", ".join(coupled.get(c, [])) for c in table.index]
    bytes_in, bytes_out = _bytes(ens)
    for name, per in (("bytes_in", bytes_in), ("bytes_out", bytes_out)):
        table[f"{name}_total"] = _per_component(per, comp, live, "sum")
        table[f"{name}_mean"] = _per_component(per, comp, live)
    # the rate of each process over its own wall time, then the mean over them
    table["in_rate_mean"] = _per_component(bytes_in / split["wall_s"], comp, live)
    table["out_rate_mean"] = _per_component(bytes_out / split["wall_s"], comp, live)
    table.index.name = "component"
    return with_units(table, TABLE_UNITS)


def _bytes(ens: Ensemble) -> tuple[np.ndarray, np.ndarray]:
    """Per profile: bytes in and out (files and moved data; collectives both ways)."""
    n = ens.n_profiles

    def get(m: str) -> np.ndarray:
        return np.nansum(ens.values(m), axis=0) if m in ens.exc_metrics else np.zeros(n)

    comm = get("comm_bytes")
    return get("data_in_bytes") + comm, get("data_out_bytes") + comm


def _charged(kind_comm: bool, component: str, coupled: dict[str, list[str]]) -> list[str]:
    """Whom a wait is charged to: peers for a communication call, else the
    components it exchanges data with."""
    if kind_comm:
        return [component]
    return coupled.get(component, [])


def _waiting(ens, split, comp, live, coupled) -> UnitTable:
    comm = split["comm"][:, 0]
    rows = []
    for c in dict.fromkeys(comp):  # a loop per component
        mine = (comp == c) & live
        in_comm = split["blocked"][comm][:, mine].sum() / 1e9
        in_regions = split["blocked"][~comm][:, mine].sum() / 1e9
        if in_comm > 0:
            rows.append({"component": c, "waits_for": c, "wait_total": in_comm})
        others = coupled.get(c, [])
        for o in others:
            rows.append({"component": c, "waits_for": o, "wait_total": in_regions / len(others)})
    out = pd.DataFrame(rows, columns=["component", "waits_for", "wait_total"])
    return with_units(out, {"wait_total": "s"})


def _blocked_contexts(ens, split, comp, live, coupled) -> UnitTable:
    paths = ens.tree.callpaths.to_numpy()
    kind = ens.tree.nodes["kind"].astype(str).to_numpy()
    rows = []
    for c in dict.fromkeys(comp):
        mine = (comp == c) & live
        if not mine.any():
            continue
        mean = split["blocked"][:, mine].mean(axis=1)
        wall = split["sampled"][mine].mean()
        for i in np.flatnonzero(mean > 0):
            rows.append(
                {
                    "component": c,
                    "context": paths[i],
                    "kind": kind[i],
                    "blocked_mean": mean[i] / 1e9,
                    "share": mean[i] / wall if wall > 0 else np.nan,
                    "waits_for": ", ".join(_charged(kind[i] == K_COMM, c, coupled)),
                }
            )
    out = pd.DataFrame(
        rows, columns=["component", "context", "kind", "blocked_mean", "share", "waits_for"]
    )
    out = out.sort_values(["component", "blocked_mean"], ascending=[True, False], kind="stable")
    return with_units(out, {"blocked_mean": "s"})


def _blocked_per_process(ens, split, comp, live) -> UnitTable:
    """One row per (live process, context) with blocked time (vectorised)."""
    node, col = np.nonzero(split["blocked"] * live[None, :] > 0)
    prof = ens.profiles
    rank = profile_ranks(prof)
    out = pd.DataFrame(
        {
            "rank": rank[col],
            "component": comp[col],
            "context": ens.tree.callpaths.to_numpy()[node],
            "kind": ens.tree.nodes["kind"].astype(str).to_numpy()[node],
            "blocked": split["blocked"][node, col] / 1e9,
        }
    )
    return with_units(out, {"blocked": "s"})


def _channels(ens, comp, live, wall_s: np.ndarray) -> UnitTable:
    """Bytes per (component, channel, direction): data contexts by name, collectives;
    ``rate_mean`` is the mean of each process's bytes over its own wall time, as
    the table's ``in_rate_mean``."""
    names = np.asarray(ens.tree.names, dtype=object)
    kind = ens.tree.nodes["kind"].astype(str).to_numpy()
    rows = []
    for metric, direction in (("data_in_bytes", "in"), ("data_out_bytes", "out")):
        if metric not in ens.exc_metrics:
            continue
        v = ens.values(metric)
        for name in np.unique(names[kind == "data"]):
            at = (names == name) & (kind == "data")
            per = np.nansum(v[at], axis=0)
            for c in dict.fromkeys(comp):
                sel = (comp == c) & live
                mine = per[sel]
                if mine.size and mine.sum() > 0:
                    rate = mine / wall_s[sel]
                    rows.append(
                        {
                            "component": c,
                            "channel": str(name),
                            "direction": direction,
                            "bytes_total": mine.sum(),
                            "bytes_mean": mine.mean(),
                            "rate_mean": np.nanmean(rate) if np.isfinite(rate).any() else np.nan,
                        }
                    )
    cols = ["component", "channel", "direction", "bytes_total", "bytes_mean", "rate_mean"]
    out = pd.DataFrame(rows, columns=cols)
    out = with_units(out, {"bytes_total": "B", "bytes_mean": "B", "rate_mean": "B/s"})
    return out


def _bottleneck(table, blocked, waiting) -> tuple[str | None, str]:
    across = waiting[waiting["component"] != waiting["waits_for"]]
    if not len(across) or across["wait_total"].max() <= 0:
        return None, "no component waited for another (no data moved between them, or no waits)"
    on = across.groupby("waits_for")["wait_total"].sum().sort_values(ascending=False)
    b = str(on.index[0])
    who = across[across["waits_for"] == b].sort_values("wait_total", ascending=False).iloc[0]
    w = str(who["component"])
    ctx = blocked[(blocked["component"] == w) & (blocked["waits_for"].str.contains(b, regex=False))]
    where = f" (mostly in {ctx.iloc[0]['context'].split('/')[-1]!r})" if len(ctx) else ""
    apart = (table["startup"] > 0).any()
    after = " in the steady state" if apart else ""
    why = (
        f"{w} waits for {b}: blocked {table.loc[w, 'blocked']:.0%} of its time{after}{where}, "
        f"{who['wait_total']:.1f} s over its processes, while {b} is blocked "
        f"{table.loc[b, 'blocked']:.0%} and busy {table.loc[b, 'busy']:.0%} of its own"
    )
    if apart:
        shares = ", ".join(
            f"{c} {r['startup']:.0%} and {r['teardown']:.0%}" for c, r in table.iterrows()
        )
        why += f" (start-up and teardown apart: {shares} of their wall time)"
    return b, why


__all__ = ["LOW_CPU", "WorkflowSummary", "summary"]
