"""Writers of Hatchet's graph literal and ``to_json`` forms."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ..model.ensemble import Ensemble
from ..model.tree import STRUCT_COLUMNS, Tree


def _py(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


def _frame(tree: Tree, i: int, extra: list[str]) -> dict[str, Any]:
    nodes = tree.nodes
    fr = {"name": str(nodes["name"].iat[i]), "type": str(nodes["kind"].iat[i])}
    for c in extra:
        v = nodes[c].iat[i]
        if v is not None and not (isinstance(v, float) and np.isnan(v)):
            fr[c] = _py(v)
    return fr


def to_literal(tree: Tree) -> list[dict[str, Any]]:
    """The tree as Hatchet's graph literal: nested ``frame``/``metrics``/``children`` dicts.

    >>> t = Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 2.0]})
    >>> to_literal(t)[0]["metrics"]
    {'time': 1.0, 'time (inc)': 3.0}
    """
    extra = [c for c in tree.nodes.columns if c not in STRUCT_COLUMNS]
    m = tree.metrics
    cols = list(m.columns)
    vals = m.to_numpy(dtype=np.float64)
    made: list[dict[str, Any]] = []
    roots: list[dict[str, Any]] = []
    parent = tree.parent
    for i in range(len(tree)):  # pre-order: parents come first
        d = {
            "frame": _frame(tree, i, extra),
            "metrics": {c: float(vals[i, j]) for j, c in enumerate(cols)},
            "children": [],
        }
        made.append(d)
        (roots if parent[i] < 0 else made[parent[i]]["children"]).append(d)
    return roots


def to_hatchet_json(obj: Tree | Ensemble) -> dict[str, Any]:
    """Hatchet's ``to_json`` form; an Ensemble's profiles become a ``profile`` index level.

    Inclusive columns follow each metric's aggregation rule and a ``"none"``
    metric has none (as in :attr:`Tree.metrics`); the rules other than
    ``"sum"`` go to an extra ``"aggregation"`` key, and units to ``"units"``.
    """
    tree = obj.tree if isinstance(obj, Ensemble) else obj
    extra = [c for c in tree.nodes.columns if c not in STRUCT_COLUMNS]
    graph: list[dict[str, Any]] = []
    parent = tree.parent
    kids: list[list[int]] = [[] for _ in range(len(tree))]
    for i in np.flatnonzero(parent >= 0).tolist():
        kids[parent[i]].append(i)
    for r in tree.roots.tolist():
        g: dict[str, Any] = {}
        for i in range(r, int(tree.end[r])):
            g[str(i)] = {"data": _frame(tree, i, extra), "children": kids[i]}
        graph.append(g)
    names = tree.names
    if isinstance(obj, Ensemble):
        data = obj.long_table.reset_index()
        rows = data.assign(name=names[data["node"].to_numpy()]).to_dict("records")
        indices = ["node", "profile"]
        exc, inc = obj.exc_metrics, obj.inc_metrics
    else:
        m = obj.metrics.reset_index()
        rows = m.assign(name=names).to_dict("records")
        indices = ["node"]
        exc, inc = obj.exc_metrics, obj.inc_metrics
    rows = [{k: _py(v) for k, v in r.items()} for r in rows]
    out: dict[str, Any] = {
        "graph": graph,
        "dataframe_indices": indices,
        "dataframe": rows,
        "inclusive_metrics": inc,
        "exclusive_metrics": exc,
    }
    if tree.units:
        out["units"] = tree.units
    rules = {m: r for m, r in tree.aggregation.items() if r != "sum"}
    if rules:  # Hatchet has no field for them: cctviz's readers read this one
        out["aggregation"] = rules
    return out


def write_literal(obj: Tree | Ensemble, path: Path) -> None:
    tree = obj.tree if isinstance(obj, Ensemble) else obj
    path.write_text(json.dumps(to_literal(tree)))


def write_hatchet_json(obj: Tree | Ensemble, path: Path) -> None:
    path.write_text(json.dumps(to_hatchet_json(obj)))
