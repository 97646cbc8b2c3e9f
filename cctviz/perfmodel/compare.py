"""Predicted beside measured on one tree: collective time split into transfer and wait.

A collective cannot finish on any rank before the last rank has joined it, so
the time a rank spends in it is the transfer itself plus the time it waited
for the latest rank (``../shared/DESIGN.md`` section 8; the "late sender" /
"wait at collective" patterns of Scalasca: Geimer et al., "The Scalasca
performance toolset architecture", CCPE 2010). Across the ranks of one run
that took part in a collective context:

- **transfer** = the fastest rank's time there (it waited least: it came
  last), or a model's prediction (an alpha-beta time) when one is given and
  smaller;
- **wait** = a rank's time there minus the transfer;
- **late** = how much later than the earliest rank this rank arrived,
  estimated as the slowest rank's time minus its own; the rank with the
  largest ``late`` is the one that made the others wait.

The runtime sums a context's collectives over its calls, so this is per
context, not per call: a rank late at some calls and early at others shows its
net lateness.

Example:
    >>> import cctviz, numpy as np
    >>> def rank(wait):
    ...     t = cctviz.Tree.from_parents([-1, 0], ["step", "all_reduce"],
    ...         {"time": [1.0, wait], "comm_time": [0.0, wait], "calls": [1.0, 1.0]})
    ...     t.nodes["kind"] = ["step", "comm"]
    ...     return t
    >>> ens = cctviz.Ensemble.from_trees([rank(9.0), rank(9.5), rank(1.0)], profiles={"rank": [0, 1, 2]})
    >>> wt = wait_transfer(ens)
    >>> wt.table[["context", "transfer", "wait_mean", "late_rank"]].to_dict("records")
    [{'context': 'step/all_reduce', 'transfer': 1.0, 'wait_mean': 5.5, 'late_rank': 'rank 2'}]
    >>> wt.ensemble.values("comm_wait")[1].tolist(), wt.ensemble.values("comm_late")[1].tolist()
    ([8.0, 8.5, 0.0], [0.5, 0.0, 8.5])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..model.ensemble import Ensemble
from ..model.tree import Tree

#: the metrics :func:`wait_transfer` adds (exclusive, per rank, the unit of the time metric)
WAIT, TRANSFER, LATE = "comm_wait", "comm_transfer", "comm_late"


@dataclass(frozen=True)
class WaitTransfer:
    """What :func:`wait_transfer` finds: ``table`` (one row per run and
    collective context) and ``ensemble`` (the input with the exclusive metrics
    ``comm_wait``, ``comm_transfer`` and ``comm_late`` on the collective
    contexts, so views colour by them and ``stats`` names the late rank)."""

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
    ens: Ensemble,
    *,
    metric: str = "comm_time",
    transfer: Any = None,
) -> WaitTransfer:
    """Split the measured time of every collective context into transfer and
    wait, per rank, run by run (see the module docstring).

    Args:
        ens: an Ensemble of the ranks of one or more runs (``ens.run_ids``
            tells the runs apart), e.g. ``cctviz.read_ensemble(run_folder)``.
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
    late = np.zeros_like(t)
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
        lt = slowest[:, None] - sub
        inside = ~np.isnan(sub)
        for block, vals in ((wait, w), (xfer, np.broadcast_to(tr[:, None], sub.shape)), (late, lt)):
            blk = block[nodes][:, cols]
            blk[inside] = vals[inside]
            block[np.ix_(nodes, cols)] = blk
        latest = cols[np.nanargmax(np.where(inside, lt, -np.inf), axis=1)]
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
                    "late_rank": [labels[p] for p in latest],
                    "late_by": np.nanmax(lt, axis=1),
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
                "late_rank",
                "late_by",
            ]
        )
    )
    return WaitTransfer(
        table=table, ensemble=_with_metrics(ens, metric, {WAIT: wait, TRANSFER: xfer, LATE: late})
    )


def _with_metrics(ens: Ensemble, like: str, dense: dict[str, np.ndarray]) -> Ensemble:
    """``ens`` with more exclusive metrics (dense nodes x profiles; the unit of ``like``)."""
    rows = ens.rows.copy()
    node = rows["node"].to_numpy()
    prof = rows["profile"].to_numpy()
    for name, values in dense.items():
        rows[name] = values[node, prof]
    meta = dict(ens.meta)
    unit = ens.tree.unit(like)
    if unit:
        meta["units"] = {**meta.get("units", {}), **dict.fromkeys(dense, unit)}
    structure = Tree(ens.tree.nodes.copy(), None, {**ens.tree.meta, **meta}, _trusted=True)
    return Ensemble(structure, rows, ens.profiles, meta)
