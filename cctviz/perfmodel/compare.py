"""Predicted beside measured on one tree: collective time split into transfer and wait.

A collective cannot finish on any rank before the last rank has joined it, so
the time a rank spends in it is the transfer itself plus the time it waited
for the latest rank (``docs/architecture.md`` section 10; the "late sender" /
"wait at collective" patterns of Scalasca: Geimer et al., "The Scalasca
performance toolset architecture", CCPE 2010). Across the ranks of one run
that took part in a collective context:

- **transfer** = the fastest rank's time there (it waited least: it came
  last), or a model's prediction (an alpha-beta time) when one is given and
  smaller;
- **wait** = a rank's time there minus the transfer;
- **below_slowest** = the slowest rank's time there minus this rank's (the
  metric ``comm_below_slowest``): of one call, how much later than the earliest
  rank this rank arrived; the rank with the most, ``waited_least`` (the rank
  with the least time there), is the best guess from sums at whom the others
  waited for.

The runtime sums a context's collectives over its calls, so this is per
context, not per call: a rank last at some calls and early at others shows its
net. Given a Timeline, :func:`wait_transfer` works per call instead and names
whom the others waited for with the words of :mod:`cctviz.ops.collectives`
(``last_to_arrive`` per call; ``most_waited_for`` and ``most_often_last`` per
context), taken from there.

Example:
    >>> import cctviz, numpy as np
    >>> def rank(wait):
    ...     t = cctviz.Tree.from_parents([-1, 0], ["step", "all_reduce"],
    ...         {"time": [1.0, wait], "comm_time": [0.0, wait], "calls": [1.0, 1.0]})
    ...     t.nodes["kind"] = ["step", "comm"]
    ...     return t
    >>> ens = cctviz.Ensemble.from_trees([rank(9.0), rank(9.5), rank(1.0)], profiles={"rank": [0, 1, 2]})
    >>> wt = wait_transfer(ens)
    >>> wt.table[["context", "transfer [unit unknown]", "wait_mean [unit unknown]", "waited_least"]].to_dict("records")
    [{'context': 'step/all_reduce', 'transfer [unit unknown]': 1.0, 'wait_mean [unit unknown]': 5.5, 'waited_least': 'rank 2'}]
    >>> wt.ensemble.values("comm_wait")[1].tolist(), wt.ensemble.values("comm_below_slowest")[1].tolist()
    ([8.0, 8.5, 0.0], [0.5, 0.0, 8.5])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..model import units as _units
from ..model.ensemble import Ensemble
from ..model.tables import UnitTable, with_units
from ..model.timeline import Timeline, profile_ranks
from ..model.tree import Tree

#: the metrics :func:`wait_transfer` adds (exclusive, per rank, the unit of the time
#: metric): both paths add the wait and the transfer; an Ensemble's split adds
#: ``comm_below_slowest`` (the slowest rank's time minus this rank's), a Timeline's
#: ``comm_last_by`` (per rank, its ``last_by`` summed over the calls it was last to arrive at)
WAIT, TRANSFER = "comm_wait", "comm_transfer"
BELOW_SLOWEST, LAST_BY = "comm_below_slowest", "comm_last_by"
#: the metrics :func:`annotate` adds (exclusive, per rank, summed over the profiled steps)
BYTES_PRED, TIME_PRED, CALLS_PRED = "comm_bytes_pred", "comm_time_pred", "calls_pred"
#: predicted memory per rank (model states, and activations when known), on the step
#: contexts: a peak, so its rule is "max" (as the runtime's mem_peak)
MEM_PRED = "mem_pred"
#: the runtime's context of the profiled steps (warm-up and outside steps are not predicted)
STEP = "step"


def in_seconds(table: pd.DataFrame, columns: tuple[str, ...], unit: Any) -> UnitTable:
    """``table`` with time ``columns`` (in ``unit``) converted to seconds and named
    ``"col [s]"``, the one time unit of the perfmodel tables; ``"col [unit unknown]"``
    where no one stated the unit. ``table.attrs["units"]`` maps each to its unit
    (a :class:`~cctviz.model.tables.UnitTable`: shown with it).

    Example:
        >>> in_seconds(pd.DataFrame({"wait": [2e9]}), ("wait",), "ns").to_dict("records")
        [{'wait [s]': 2.0}]
    """
    out = pd.DataFrame(table).copy()
    known = _units.dimension(unit) == "time"
    names = {c: f"{c} [s]" if known else f"{c} [unit unknown]" for c in columns}
    if known:
        out[list(columns)] = out[list(columns)].astype(np.float64) * _units.factor(unit, "s")
    out = out.rename(columns=names)
    out.attrs = {}
    return with_units(out, {n: ("s" if known else None) for n in names.values()})


@dataclass(frozen=True)
class Annotated:
    """What :func:`annotate` gives: ``ensemble`` (the run with predicted
    metrics ``comm_bytes_pred``, ``comm_time_pred`` and ``calls_pred`` on
    the collective contexts of the profiled steps, in the units of
    ``comm_bytes`` and ``comm_time``, and ``mem_pred``, the predicted memory
    per rank, on the step context: beside the runtime's ``mem_peak`` on CUDA), ``table`` (one row per context and
    collective kind: per rank and step, the measured ``calls_mean``,
    ``bytes_mean [B]`` and ``time_mean [s]`` (means over the live ranks) beside the
    predicted ``calls_pred``, ``bytes_pred [B]`` and ``time_pred [s]``, and
    ``bytes_error``, the relative error of the bytes: units in the column names), ``memory`` (predicted memory per rank:
    parameters, gradients, optimizer states, activations when the model's
    dimensions are known) and the ``model`` and ``parallel`` descriptions used."""

    ensemble: Ensemble
    table: pd.DataFrame
    memory: pd.DataFrame
    model: Any
    parallel: Any


@dataclass(frozen=True)
class WaitTransfer:
    """What :func:`wait_transfer` finds: ``table`` (one row per run and
    collective context; times in seconds, ``"wait_mean [s]"`` and so on, as in
    :class:`Annotated`'s table; its columns: :func:`wait_transfer`) and
    ``ensemble`` (the input with the exclusive metrics ``comm_wait``,
    ``comm_transfer`` and ``comm_below_slowest`` (of an Ensemble) or
    ``comm_last_by`` (of a Timeline) on the collective contexts, so views colour
    by them and ``stats(...)["argmax"]`` names the rank)."""

    table: pd.DataFrame
    ensemble: Ensemble


def _labels(ens: Ensemble) -> list[str]:
    prof = ens.profiles
    if "rank" in prof.columns:
        return [
            f"rank {int(r)}" if pd.notna(r) else f"profile {i}" for i, r in enumerate(prof["rank"])
        ]
    return [f"profile {i}" for i in range(len(prof))]


def wait_transfer(
    ens: Ensemble | Timeline,
    *,
    metric: str = "comm_time",
    transfer: Any = None,
) -> WaitTransfer:
    """Split the measured time of every collective context into transfer and
    wait, per rank, run by run (see the module docstring).

    Of an Ensemble (times summed per context), the table's columns: ``run``,
    ``node``, ``context``, ``kind``, ``ranks``, ``time_mean``, ``transfer``,
    ``wait_mean``, ``wait_max`` (per rank, ``[s]``), ``wait_share`` (of the
    ranks' time there), ``waited_least`` (the rank with the least time there:
    net, the one the others waited for; None where one rank took part or all
    took as long) and ``time_spread`` (the slowest rank's
    time minus the fastest's, ``[s]``).

    Given a :class:`~cctviz.model.timeline.Timeline`, the split is made per call
    (:func:`cctviz.ops.collectives.instances`): each rank's wait for the call's
    last to arrive, summed per context; whom the others waited for comes from
    :func:`cctviz.ops.collectives.wait_causes`, with its words: the table's
    columns are ``node``, ``context``, ``kind``, ``calls`` (with at least two
    ranks), ``ranks``, ``wait_mean`` and ``wait_max`` (per rank and call, ``[s]``),
    ``most_waited_for``, ``most_waited_for_calls``,
    ``most_waited_for_wait_total [s]``, ``most_often_last``,
    ``most_often_last_share`` and ``ranks_ever_last`` (ranks as ``"rank 2"``;
    None where no call had a last to arrive). How whom they waited for is
    spread over the calls is what a per-context aggregate cannot tell.

    Args:
        ens: an Ensemble of the ranks of one or more runs (``ens.run_ids``
            tells the runs apart), e.g. ``cctviz.read_ensemble(run_folder)``;
            or a Timeline (``cctviz.read_timeline(run_folder)``).
        metric: the exclusive time spent in collectives (the runtime's ``comm_time``).
        transfer: a predicted transfer time per node (an array over the tree's
            nodes, or the name of a metric of the ensemble such as
            ``"comm_time_pred"``); where it is smaller than the fastest rank's
            time it is the transfer, so the fastest rank waits too. Default:
            the fastest rank's time.

    A rank takes part in a context where it has calls there (the ``calls``
    metric) or, without one, a positive time: ranks outside a sub-group's
    collective neither count as fastest nor wait.

    Raises:
        KeyError: ``metric`` (or ``transfer``) is not a metric of the ensemble.
    """
    if isinstance(ens, Timeline):
        return _per_call(ens)
    if metric not in ens.exc_metrics:
        raise KeyError(
            f"metric {metric!r}: not an exclusive metric of this ensemble ({', '.join(ens.exc_metrics)})"
        )
    tree = ens.tree
    t = np.asarray(ens.values(metric), dtype=np.float64)
    if "kind" in tree.nodes.columns:
        comm = tree.nodes["kind"].astype(str).to_numpy() == "comm"
    else:
        comm = np.nansum(t, axis=1) > 0
    took_part = ens.values("calls") > 0 if "calls" in ens.exc_metrics else t > 0
    took_part &= comm[:, None] & np.asarray(ens.live, dtype=bool)[None, :]
    pred = None
    if transfer is not None:
        if isinstance(transfer, str):
            if transfer not in ens.exc_metrics and transfer not in tree.metrics:
                raise KeyError(f"transfer={transfer!r}: no such metric")
            pred = tree.metrics[transfer].to_numpy(dtype=np.float64)
        else:
            pred = np.asarray(transfer, dtype=np.float64).reshape(-1)
            if pred.size != len(tree):
                raise ValueError(f"transfer: {pred.size} values for {len(tree)} nodes")

    runs = np.asarray(ens.run_ids)
    wait = np.zeros_like(t)
    xfer = np.zeros_like(t)
    below = np.zeros_like(t)
    labels = _labels(ens)
    run_name = ens.profiles["run"] if "run" in ens.profiles.columns else None
    paths = tree.callpaths.to_numpy()
    names = np.asarray(tree.names, dtype=object)
    rows = []
    for run in pd.unique(runs):
        cols = np.flatnonzero(runs == run)
        tt = np.where(took_part[:, cols], t[:, cols], np.nan)
        n_in = took_part[:, cols].sum(axis=1)
        nodes = np.flatnonzero(n_in > 0)
        if not nodes.size:
            continue
        sub = tt[nodes]
        fastest = np.nanmin(sub, axis=1)
        slowest = np.nanmax(sub, axis=1)
        tr = fastest if pred is None else np.fmin(fastest, np.maximum(pred[nodes], 0))
        w = sub - tr[:, None]
        bs = slowest[:, None] - sub
        inside = ~np.isnan(sub)
        for block, vals in (
            (wait, w),
            (xfer, np.broadcast_to(tr[:, None], sub.shape)),
            (below, bs),
        ):
            blk = block[nodes][:, cols]
            blk[inside] = vals[inside]
            block[np.ix_(nodes, cols)] = blk
        least = cols[np.nanargmax(np.where(inside, bs, -np.inf), axis=1)]
        total = np.nansum(sub, axis=1)
        rows.append(
            pd.DataFrame(
                {
                    "run": run if run_name is None else run_name.iloc[cols[0]],
                    "node": nodes,
                    "context": paths[nodes],
                    "kind": names[nodes],
                    "ranks": n_in[nodes],
                    "time_mean": np.nanmean(sub, axis=1),
                    "transfer": tr,
                    "wait_mean": np.nanmean(w, axis=1),
                    "wait_max": np.nanmax(w, axis=1),
                    "wait_share": np.divide(
                        np.nansum(w, axis=1), total, out=np.zeros(nodes.size), where=total > 0
                    ),
                    # nobody where one rank took part or all took as long
                    "waited_least": [
                        labels[p] if k > 1 and d > 0 else None
                        for p, k, d in zip(least, n_in[nodes], slowest - fastest)
                    ],
                    "time_spread": slowest - fastest,
                }
            )
        )
    table = (
        pd.concat(rows, ignore_index=True)
        if rows
        else pd.DataFrame(
            columns=[
                "run",
                "node",
                "context",
                "kind",
                "ranks",
                "time_mean",
                "transfer",
                "wait_mean",
                "wait_max",
                "wait_share",
                "waited_least",
                "time_spread",
            ]
        )
    )
    table = in_seconds(
        table,
        ("time_mean", "transfer", "wait_mean", "wait_max", "time_spread"),
        ens.tree.unit(metric),
    )
    return WaitTransfer(
        table=table,
        ensemble=_with_metrics(
            ens,
            {
                m: (v, ens.tree.unit(metric), "sum")
                for m, v in ((WAIT, wait), (TRANSFER, xfer), (BELOW_SLOWEST, below))
            },
        ),
    )


def _per_call(tl: Timeline) -> WaitTransfer:
    """:func:`wait_transfer` of a Timeline: call by call (ns summed per context).

    Per call and rank: ``wait`` = the last rank's arrival minus this rank's, at most
    the rank's time in the call; ``transfer`` = the rest of that time;
    ``comm_last_by`` = the call's ``last_by`` on its last to arrive (0 elsewhere).
    """
    from ..ops.collectives import instances, last_rows

    ens = tl.ensemble()
    inst = instances(tl)
    n_nodes, n_prof = len(ens.tree), ens.n_profiles
    wait = np.zeros((n_nodes, n_prof))
    xfer = np.zeros((n_nodes, n_prof))
    last_by = np.zeros((n_nodes, n_prof))
    if len(inst):
        node = inst["node"].to_numpy(dtype=np.int64)
        prof = inst["profile"].to_numpy(dtype=np.int64)
        took = (inst["end"] - inst["arrival"]).to_numpy(dtype=np.float64)
        w = np.minimum(inst["wait"].to_numpy(dtype=np.float64), took)
        is_last = inst.index.isin(last_rows(inst).index)  # its one row per call
        np.add.at(wait, (node, prof), w)
        np.add.at(xfer, (node, prof), took - w)
        np.add.at(last_by, (node, prof), np.where(is_last, inst["last_by"].to_numpy(np.float64), 0))
    table = _per_call_table(ens, tl, inst)
    unit = "ns"
    return WaitTransfer(
        table=table,
        ensemble=_with_metrics(
            ens,
            {m: (v, unit, "sum") for m, v in ((WAIT, wait), (TRANSFER, xfer), (LAST_BY, last_by))},
        ),
    )


#: the columns of a Timeline's :func:`wait_transfer` table (before the times' units)
PER_CALL_COLUMNS = (
    "node", "context", "kind", "calls", "ranks", "wait_mean", "wait_max", "most_waited_for",
    "most_waited_for_calls", "most_waited_for_wait_total", "most_often_last",
    "most_often_last_share", "ranks_ever_last",
)  # fmt: skip


def _per_call_table(ens: Ensemble, tl: Timeline, inst: pd.DataFrame) -> UnitTable:
    """One row per collective context with a call of two ranks or more: the
    waits per rank and call, and whom the others waited for, as
    :func:`cctviz.ops.collectives.wait_causes` names them (the same numbers)."""
    from ..ops.collectives import shared_calls, wait_causes

    times = ("wait_mean", "wait_max", "most_waited_for_wait_total")
    causes = wait_causes(tl, inst, before=False)
    if not len(causes):
        return in_seconds(pd.DataFrame(columns=list(PER_CALL_COLUMNS)), times, "ns")
    g = shared_calls(inst).groupby("node")
    nodes = causes.index.to_numpy(dtype=np.int64)
    labels = _labels(ens)
    rank_label = {int(r): labels[i] for i, r in enumerate(profile_ranks(ens.profiles))}

    def named(ranks: pd.Series) -> list[str | None]:
        return [rank_label.get(r, f"rank {r}") if r >= 0 else None for r in ranks.tolist()]

    out = pd.DataFrame(
        {
            "node": nodes,
            "context": ens.tree.callpaths.to_numpy()[nodes],
            "kind": np.asarray(ens.tree.names, dtype=object)[nodes],
            "calls": causes["calls"].to_numpy(),
            "ranks": g["rank"].nunique().reindex(nodes).to_numpy(),  # a rank's streams are one
            "wait_mean": g["wait"].mean().reindex(nodes).to_numpy(),
            "wait_max": g["wait"].max().reindex(nodes).to_numpy(),
            "most_waited_for": named(causes["most_waited_for"]),
            "most_waited_for_calls": causes["most_waited_for_calls"].to_numpy(),
            "most_waited_for_wait_total": causes["most_waited_for_wait_total"].to_numpy(),
            "most_often_last": named(causes["most_often_last"]),
            "most_often_last_share": causes["most_often_last_share"].to_numpy(),
            "ranks_ever_last": causes["ranks_ever_last"].to_numpy(),
        }
    )
    return in_seconds(out[list(PER_CALL_COLUMNS)], times, "ns")


def _with_metrics(ens: Ensemble, new: dict[str, tuple[np.ndarray, str | None, str]]) -> Ensemble:
    """``ens`` with more exclusive metrics, built once: ``{name: (dense nodes x
    profiles values, unit or None, aggregation rule)}``."""
    rows = ens.exclusive_rows.copy()
    node = rows["node"].to_numpy()
    prof = rows["profile"].to_numpy()
    meta = dict(ens.meta)
    units = dict(meta.get("units", {}))
    rules = dict(meta.get("aggregation", {}))
    for name, (values, unit, rule) in new.items():
        rows[name] = values[node, prof]
        if unit:
            units[name] = unit
        if rule != "sum":
            rules[name] = rule
    meta["units"] = units
    if rules:
        meta["aggregation"] = rules
    structure = Tree(ens.tree.nodes.copy(), None, {**ens.tree.meta, **meta}, _trusted=True)
    return Ensemble(structure, rows, ens.profiles, meta)


def annotate(
    run: Any,
    *,
    model: Any = None,
    parallel: Any = None,
    interconnect: Any = "gloo-loopback",
    optimizer: str = "adam",
    precision: str = "fp32",
) -> Annotated:
    """Predicted communication beside the measured on a runtime profile's tree.

    ``run``: a ``cctviz run`` folder (path) or the Ensemble ``cctviz.read``
    gives of one. Everything the models need is in the run's metadata (the
    model's parameters and FSDP units, the strategy, world size and DDP bucket
    size, recorded by the runtime); ``model`` (a
    :class:`~cctviz.perfmodel.analytic.ModelSpec`) and ``parallel`` (a
    :class:`~cctviz.perfmodel.analytic.ParallelSpec`) override them, e.g. to
    give the transformer's dimensions for activation memory or a tensor
    parallel layout. ``interconnect``: a name of
    :data:`~cctviz.perfmodel.analytic.INTERCONNECTS` or an ``Interconnect``
    (alpha-beta times). ``optimizer``/``precision``: for the memory of the
    model states (the runtime does not record the optimizer).

    The predictions are per step (:func:`~cctviz.perfmodel.analytic.communication`),
    put on the collective nodes of the profiled steps (``.../step/<context>/<kind>``)
    times the rank's number of profiled steps, so they sum like the measured
    metrics: colour a CCTView by ``("comm_bytes", "comm_bytes_pred")`` to see
    where they part.

    Raises:
        ProfileError: the run has no model description and none is given.
    """
    from ..errors import ProfileError
    from .analytic import ModelSpec, ParallelSpec, collective_time, communication, memory

    if not isinstance(run, Ensemble):
        from ..readers import read

        source = run
        run = read(run)
        if not isinstance(run, Ensemble):
            raise ProfileError(
                source, "not a run of ranks (an Ensemble): read a `cctviz run` folder"
            )
    ens = run
    meta = ens.meta
    if model is None:
        if not meta.get("model_spec"):
            raise ProfileError(
                meta.get("source", "the run"),
                "no model description in the run's metadata (runs recorded before cctviz 0.1"
                " lack it): pass model=ModelSpec.from_module(your_model)",
            )
        model = ModelSpec.from_dict(meta["model_spec"])
    if parallel is None:
        units = list(model.fsdp_units) if model.fsdp_units else None
        parallel = ParallelSpec.from_meta({**meta, **({"fsdp_units": units} if units else {})})
    pred = communication(model, parallel).copy()
    pred["time"] = collective_time(pred, interconnect)  # seconds
    per_step = pred.groupby(["context", "kind"], sort=False)[["calls", "bytes", "time"]].sum()

    tree = ens.tree
    kinds = tree.nodes["kind"].astype(str).to_numpy() if "kind" in tree.nodes.columns else None
    # the call paths of the collective leaves only (a path walk per node is slow on big trees)
    leaves = np.flatnonzero(kinds == "comm") if kinds is not None else np.arange(len(tree))
    depth = np.asarray(tree.depth)
    names = np.asarray(tree.names, dtype=object)
    steps = (
        pd.to_numeric(ens.profiles["steps"], errors="coerce").fillna(0).to_numpy(dtype=np.float64)
        if "steps" in ens.profiles.columns
        else np.ones(ens.n_profiles)
    )
    unit_t = ens.tree.unit("comm_time") or "s"
    to_unit = _units.factor("s", unit_t)
    n = len(tree)
    node_pred = {k: np.zeros(n) for k in ("calls", "bytes", "time")}
    matched: dict[tuple[str, str], list[int]] = {}
    for i in leaves[depth[leaves] >= 2].tolist():
        path = tree.path(i)
        if path[1] != STEP:
            continue
        key = ("/".join(path[2:-1]), path[-1])
        matched.setdefault(key, []).append(i)
        if key in per_step.index:
            row = per_step.loc[key]
            node_pred["calls"][i] = row["calls"]
            node_pred["bytes"][i] = row["bytes"]
            node_pred["time"][i] = row["time"] * to_unit
    mem = memory(model, parallel, optimizer=optimizer, precision=precision)
    on_step = (depth == 1) & (names == STEP)
    per_rank = steps[None, :]
    mem_pred = np.where(on_step[:, None], float(mem.total), np.nan) * np.ones_like(per_rank)
    by_context = _context_memory(ens)
    if by_context is not None:  # a run with act_bytes: every context's, from its plan
        nodes, held = by_context
        mem_pred[nodes] = held
    annotated = _with_metrics(
        ens,
        {
            TIME_PRED: (node_pred["time"][:, None] * per_rank, unit_t, "sum"),
            BYTES_PRED: (node_pred["bytes"][:, None] * per_rank, tree.unit("comm_bytes"), "sum"),
            CALLS_PRED: (node_pred["calls"][:, None] * per_rank, tree.unit("calls"), "sum"),
            MEM_PRED: (mem_pred, "B", "max"),
        },
    )

    # the table: measured per step (mean over the live ranks) beside predicted
    live = np.asarray(ens.live, dtype=bool) & (steps > 0)

    def per_rank_step(metric: str, ids: list[int]) -> float:
        if metric not in ens.exc_metrics or not live.any():
            return float("nan")
        v = ens.values(metric)[ids][:, live].sum(axis=0) / steps[live]
        return float(v.mean())

    rows = []
    for key in dict.fromkeys([*matched, *per_step.index]):
        ids = matched.get(key, [])
        p = per_step.loc[key] if key in per_step.index else None
        mb = per_rank_step("comm_bytes", ids) if ids else 0.0
        pb = float(p["bytes"]) if p is not None else 0.0
        rows.append(
            {
                "context": key[0],
                "kind": key[1],
                "calls_mean": per_rank_step("calls", ids) if ids else 0.0,
                "calls_pred": float(p["calls"]) if p is not None else 0.0,
                "bytes_mean": mb,
                "bytes_pred": pb,
                "bytes_error": (mb - pb) / pb
                if pb
                else (float("nan") if mb == 0 else float("inf")),
                "time_mean": per_rank_step("comm_time", ids) / to_unit if ids else 0.0,
                "time_pred": float(p["time"]) if p is not None else 0.0,
            }
        )
    columns = {
        "bytes_mean": "bytes_mean [B]",
        "bytes_pred": "bytes_pred [B]",
        "time_mean": "time_mean [s]",
        "time_pred": "time_pred [s]",
    }
    table = pd.DataFrame(rows, columns=["context", "kind", "calls_mean", "calls_pred",
                                        "bytes_mean", "bytes_pred", "bytes_error",
                                        "time_mean", "time_pred"]).rename(columns=columns)  # fmt: skip
    table = with_units(
        table,
        {"bytes_mean [B]": "B", "bytes_pred [B]": "B", "time_mean [s]": "s", "time_pred [s]": "s"},
    )
    return Annotated(annotated, table, mem.frame(), model, parallel)


def _context_memory(ens: Ensemble) -> tuple[np.ndarray, np.ndarray] | None:
    """Each context's predicted bytes per rank from the run's plan
    (:meth:`~.plan.Plan.context_memory`); None for a run without the plan's
    spec or without ``act_bytes``."""
    from .plan import NEEDS, Plan

    if "act_bytes" not in ens.exc_metrics or not all(ens.meta.get(k) for k in NEEDS):
        return None
    try:
        return Plan(ens).context_memory()
    except ValueError:  # (a strategy the plan does not model: fsdp1)
        return None


def fit_interconnect(ens: Ensemble, *, name: str = "fitted") -> Any:
    """Alpha-beta figures of the machine a run ran on, fitted to its own
    collectives (:func:`~cctviz.perfmodel.analytic.fit_alpha_beta`) after the
    waiting is taken out (:func:`wait_transfer`): fitted to the raw times, the
    latency would absorb the time ranks spent waiting for each other. Each
    collective context of each run is one measurement: the transfer time of
    all its calls, its bytes per rank (mean over the ranks), its calls.

    Raises:
        ValueError: fewer than 2 distinct message sizes (see ``fit_alpha_beta``).
    """
    from .analytic import fit_alpha_beta

    wt = wait_transfer(ens)
    t = wt.table
    if t.empty:
        raise ValueError("fit_interconnect: the run has no collectives")
    # the table's times are in seconds; a time of unknown unit is taken as seconds
    transfer_s = t["transfer [s]" if "transfer [s]" in t else "transfer [unit unknown]"]
    nodes = t["node"].to_numpy(dtype=np.int64)
    live = np.asarray(ens.live, dtype=bool)
    size = np.nanmean(np.where(live, ens.values("comm_bytes"), np.nan)[nodes], axis=1)
    calls = np.nanmean(np.where(live, ens.values("calls"), np.nan)[nodes], axis=1)
    per_call = np.divide(size, calls, out=np.zeros_like(size), where=calls > 0)
    return fit_alpha_beta(
        per_call * calls,
        transfer_s.to_numpy(dtype=np.float64),
        list(t["kind"]),
        [int(x) for x in t["ranks"]],
        calls=calls,
        name=name,
    )
