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

The three are shares of the wall time and sum to 1; a component's are the means
over its live processes. Every table names what a row of several processes
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
from .model.formats import K_COMM
from .model.sampled import LOW_CPU, blocked_idle
from .model.tables import UnitTable, with_units
from .model.timeline import profile_ranks
from .readers import read

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
            ``wall_mean`` (s, the mean per process), ``busy``, ``blocked``,
            ``idle`` (shares of the wall time, summing to 1; means over the
            processes), ``cpu_util`` (%, the mean over the run and the
            processes), ``waits_for`` (the components its region waits are
            charged to), ``bytes_in_total``, ``bytes_out_total`` (B: files read
            and written, data moved with ``cctviz.moved``, collectives' bytes,
            summed over the component's processes), ``bytes_in_mean``,
            ``bytes_out_mean`` (the same per process) and the rates per process
            over its wall time ``in_rate_mean``, ``out_rate_mean`` (B/s).
        blocked: where each component was blocked: ``component``, ``context``
            (call path), ``kind``, ``blocked_mean`` (s, the mean per process),
            ``share`` (of its wall time), ``waits_for``.
        channels: per (component, channel, direction): ``bytes_total``,
            ``bytes_mean`` (B; per process) and ``rate_mean`` (B/s, per process).
        waiting: how long each component waited for each other, summed over
            its processes: ``component``, ``waits_for``, ``wait_total`` (s).
        bottleneck: the component the others wait for longest (None when no
            component waits for another).
        why: the evidence, in one sentence.
        blocked_per_process: where each process was blocked, one row per
            (process, context): ``rank``, ``component``, ``context``, ``kind``,
            ``blocked`` (s). A region counts as blocked in a process where its
            sampled CPU was low there, so the processes of one component may
            differ; ``blocked``'s ``blocked_mean`` is their mean over the
            component's live processes (a process without a row counts 0).
    """

    table: UnitTable
    blocked: UnitTable
    channels: UnitTable
    waiting: UnitTable
    bottleneck: str | None
    why: str
    blocked_per_process: UnitTable | None = None


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
    split = _split(ens, low_cpu)
    comp = prof["component"].astype(str).to_numpy()
    opens = _opens(prof)
    coupled = _couplings(comp, opens)
    waiting = _waiting(ens, split, comp, live, coupled)
    table = _table(ens, split, comp, live, coupled)
    blocked = _blocked_contexts(ens, split, comp, live, coupled)
    channels = _channels(ens, comp, live, split["wall_s"])
    bottleneck, why = _bottleneck(table, blocked, waiting)
    per_process = _blocked_per_process(ens, split, comp, live)
    return WorkflowSummary(table, blocked, channels, waiting, bottleneck, why, per_process)


def _split(ens: Ensemble, low_cpu: float) -> dict[str, np.ndarray]:
    """Nodes x profiles: ``blocked``, ``idle`` and ``busy`` ns; per profile ``wall``
    (ns) and ``wall_s`` (s, NaN where a process recorded no time: no rate)."""
    t = ens.values("time")
    kind = ens.tree.nodes["kind"].astype(str).to_numpy()
    blocked, idle = blocked_idle(
        t, ens.values("cpu_time"), ens.values("sampled_time"), kind, low_cpu
    )
    comm = (kind == K_COMM)[:, None]
    roots = np.asarray(ens.tree.parent) < 0
    wall = ens.values("time (inc)")[roots].sum(axis=0)
    return {
        "blocked": blocked,
        "idle": idle,
        "busy": t - blocked - idle,
        "wall": wall,
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
    wall = split["wall"]
    shares = {
        k: _per_component(split[k].sum(axis=0) / np.where(wall > 0, wall, np.nan), comp, live)
        for k in ("busy", "blocked", "idle")
    }
    table = pd.DataFrame(shares)
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
        wall = split["wall"][mine].mean()
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
    why = (
        f"{w} waits for {b}: blocked {table.loc[w, 'blocked']:.0%} of its wall time{where}, "
        f"{who['wait_total']:.1f} s over its processes, while {b} is blocked "
        f"{table.loc[b, 'blocked']:.0%} and busy {table.loc[b, 'busy']:.0%} of its own"
    )
    return b, why


__all__ = ["LOW_CPU", "WorkflowSummary", "summary"]
