"""Difference of two profiles aligned by call path."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..model.tables import UnitTable, measured, shown_unit, with_units
from ..model.tree import Tree, base_metric, inc_name
from ..model.unify import unify_structures


def run_label(tree: Tree, default: str) -> str:
    """A short name for the run a tree comes from: its ``run``/``label`` meta,
    the profile it was taken from, or its file's name.

    >>> run_label(Tree.from_parents([-1], ["main"], meta={"source": "runs/ddp/rank-0.cctviz"}), "a")
    'rank-0.cctviz'
    """
    meta = tree.meta
    for key in ("label", "run"):
        if meta.get(key) not in (None, ""):
            return str(meta[key])
    prof = meta.get("profile")
    if isinstance(prof, dict):
        parts = [f"{k} {prof[k]}" for k in ("run", "rank") if prof.get(k) is not None]
        if parts:
            return " ".join(parts)
    if meta.get("source"):
        return os.path.basename(str(meta["source"]).rstrip("/")) or str(meta["source"])
    return default


def diff(a: Tree, b: Tree, labels: Sequence[str] | None = None) -> Tree:
    """``a - b`` for every metric the two have in common, nodes aligned by call path.

    ``"sum"`` metrics: a context present on one side only counts as 0 on the
    other, and the result's inclusive values are the differences of the
    inclusive values. Other rules (peaks, minima, per-node values) have no
    inclusive form for a difference: the result holds the difference of the
    own values under the metric's name and, for ``"max"``/``"min"`` metrics,
    the difference of the inclusive values as ``"<metric> (inc)"``, both
    per-node values (aggregation ``"none"``), NaN where one side lacks the
    node. Metrics on one side only are left out, with a warning naming them.

    ``meta["diff"]`` says which run is subtracted from which: ``{"a": ..., "b":
    ..., "sources": [...]}``; ``labels`` names them (default: :func:`run_label`).

    >>> a = Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 5.0]})
    >>> b = Tree.from_parents([-1, 0], ["main", "g"], {"time": [1.0, 2.0]})
    >>> d = diff(a, b, labels=("new", "old"))
    >>> list(zip(d.nodes["name"], d.metrics["time"])), d.meta["diff"]["a"]
    ([('main', 0.0), ('f', 5.0), ('g', -2.0)], 'new')
    """
    u, (ma, mb) = unify_structures([a, b])
    metrics = [m for m in a.exc_metrics if m in b.exc_metrics]
    if not metrics:
        raise ValueError(f"no metric in common: {a.exc_metrics} vs {b.exc_metrics}")
    one_side = [m for m in a.exc_metrics + b.exc_metrics if m not in metrics]
    if one_side:
        warnings.warn(
            f"diff: metrics on one side only are left out: {sorted(set(one_side))}",
            stacklevel=2,
        )
    rules_a, rules_b = a.aggregation, b.aggregation
    clash = [m for m in metrics if rules_a[m] != rules_b[m]]
    if clash:
        raise ValueError(f"diff: metrics with different aggregation rules: {clash}")
    la, lb = labels if labels is not None else (run_label(a, "a"), run_label(b, "b"))
    n = len(u)
    out: dict[str, np.ndarray] = {}
    rules: dict[str, str] = {}
    ua, ub = a.units, b.units
    units: dict[str, str] = {}
    for m in metrics:
        rule = rules_a[m]
        fa = _units_factor(m, ua, ub)
        if rule == "sum":
            col = np.zeros(n)
            np.add.at(col, ma, a.metrics[m].to_numpy(dtype=np.float64))
            np.subtract.at(col, mb, b.metrics[m].to_numpy(dtype=np.float64) * fa)
            out[m] = col
            continue
        cols = [m] + ([inc_name(m)] if rule != "none" else [])
        for c in cols:
            va, vb = np.full(n, np.nan), np.full(n, np.nan)
            va[ma] = a.metrics[c].to_numpy(dtype=np.float64)
            vb[mb] = b.metrics[c].to_numpy(dtype=np.float64) * fa
            out[c] = va - vb
            rules[c] = "none"
        if m in ua:
            units.update({c: ua[m] for c in cols})
    for m in metrics:
        if m in ua and m not in units:
            units[m] = ua[m]
    meta = {
        "units": units,
        "diff": {
            "a": str(la),
            "b": str(lb),
            "sources": [a.meta.get("source"), b.meta.get("source")],
        },
    }
    if rules:
        meta["aggregation"] = rules
    return Tree(u.nodes.copy(), pd.DataFrame(out), meta, _trusted=True)


def _units_factor(metric: str, ua: dict, ub: dict) -> float:
    """Factor that brings ``b``'s values of ``metric`` into ``a``'s unit."""
    from ..model import units as U

    if metric in ua and metric in ub:
        try:
            return U.factor(ub[metric], ua[metric])
        except ValueError:
            raise ValueError(
                f"diff: {metric!r} is in {ua[metric]!r} and {ub[metric]!r}; cannot subtract"
            ) from None
    if (metric in ua) != (metric in ub):
        side = "a" if metric in ua else "b"
        raise ValueError(
            f"diff: {metric!r} has a unit ({(ua | ub)[metric]!r}) in {side} only; "
            "give both the same units (meta['units']) before subtracting"
        )
    return 1.0


def diff_table(
    a: Tree, b: Tree, metric: str | None = None, labels: Sequence[str] | None = None
) -> UnitTable:
    """Two runs side by side, one row per call path, columns named after the runs.

    Columns: ``name``, ``callpath``, ``<metric> [<a>]``, ``<metric> [<b>]``,
    ``<metric> [<a> - <b>]`` and ``<metric> [<a> / <b>]``, sorted by the absolute
    difference; values in ``a``'s unit (``b``'s converted; ``attrs["units"]``). A path on one side
    only is NaN on the other for metrics that are not ``"sum"``, 0 for sums.

    >>> a = Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 5.0]})
    >>> b = Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 2.0]})
    >>> t = diff_table(a, b, labels=("new", "old"))
    >>> list(t.columns[2:])
    ['time (inc) [new]', 'time (inc) [old]', 'time (inc) [new - old]', 'time (inc) [new / old]']
    >>> t.iloc[0, 2:].astype(float).tolist()
    [6.0, 3.0, 3.0, 2.0]
    """
    col = a.metric_column(metric)
    if col not in b.metrics.columns:
        raise KeyError(f"{col!r} is not a metric of both runs")
    la, lb = labels if labels is not None else (run_label(a, "a"), run_label(b, "b"))
    u, (ma, mb) = unify_structures([a, b])
    fill = 0.0 if a.rule(col) == "sum" else np.nan
    va, vb = np.full(len(u), fill), np.full(len(u), fill)
    va[ma] = a.metrics[col].to_numpy(dtype=np.float64)
    key = col if col in a.units or col in b.units else base_metric(col)[0]
    vb[mb] = b.metrics[col].to_numpy(dtype=np.float64) * _units_factor(key, a.units, b.units)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(vb != 0, va / vb, np.nan)
    out = pd.DataFrame(
        {
            "name": u.names,
            "callpath": u.callpaths.to_numpy(),
            f"{col} [{la}]": va,
            f"{col} [{lb}]": vb,
            f"{col} [{la} - {lb}]": va - vb,
            f"{col} [{la} / {lb}]": ratio,
        }
    )
    unit = shown_unit(a.unit(col))
    out = with_units(out, {c: unit for c in out.columns[2:5]} if measured(col, a.unit(col)) else {})
    return out.iloc[np.argsort(-np.abs(va - vb), kind="stable")]
