"""Text rendering of trees and ensembles (like Hatchet's ``tree()``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from ..model.ensemble import Ensemble
    from ..model.tree import Tree


def render(
    obj: Tree | Ensemble,
    metric: str | None = None,
    *,
    depth: int | None = None,
    max_nodes: int = 500,
    precision: int = 3,
    second: str | None = None,
    header: bool = True,
) -> str:
    """An indented picture of the tree, one node per line: ``value name``.

    Args:
        metric: column of ``tree.metrics`` to show (default: first inclusive).
        depth: show only nodes with depth < ``depth``.
        max_nodes: stop after this many lines (a note says how many remain).
        precision: digits after the decimal point.
        second: another metric shown in brackets after the value.

    For an Ensemble the value is the mean over profiles, followed by the
    spread ``[min .. max]`` and the imbalance ``max/mean``.

    >>> from cctviz import Tree
    >>> t = Tree.from_parents([-1, 0, 0], ["main", "a", "b"], {"time": [1.0, 2.0, 3.0]})
    >>> print(render(t, header=False))
    6.000 main
    ├─ 2.000 a
    └─ 3.000 b
    """
    from ..model.ensemble import Ensemble

    ens = obj if isinstance(obj, Ensemble) else None
    tree = obj.tree if ens is not None else obj
    if len(tree) == 0:
        return "(empty tree)"
    col = tree.metric_column(metric) if tree.exc_metrics else None
    vals = tree.metrics[col].to_numpy() if col else None
    vals2 = tree.metrics[tree.metric_column(second)].to_numpy() if second else None
    stats = ens.stats(col) if ens is not None and col else None
    show = np.ones(len(tree), dtype=bool) if depth is None else tree.depth < depth
    ids = np.flatnonzero(show)
    more = max(0, ids.size - max_nodes)
    ids = ids[:max_nodes]
    parent = tree.parent
    end = tree.end
    names = tree.names
    pad: dict[int, str] = {}  # prefix that children of a node inherit
    lines: list[str] = []
    if header:
        unit = tree.units.get(col.replace(" (inc)", ""), "") if col else ""
        what = f"{col}" + (f" [{unit}]" if unit else "") if col else "no metrics"
        kind = (
            f"mean of {ens.n_profiles} profiles, [min .. max] imbalance" if ens is not None else ""
        )
        lines.append(f"# {len(tree)} nodes; {what}" + (f"; {kind}" if kind else ""))
    fmt = f"{{:.{precision}f}}"
    for i in ids.tolist():
        p = int(parent[i])
        if p < 0:
            prefix, child_pad = "", ""
        else:
            last = end[i] == end[p]
            prefix = pad.get(p, "") + ("└─ " if last else "├─ ")
            child_pad = pad.get(p, "") + ("   " if last else "│  ")
        pad[i] = child_pad
        text = f"{prefix}"
        if vals is not None:
            text += fmt.format(vals[i]) + " "
        text += str(names[i])
        if vals2 is not None:
            text += f" ({fmt.format(vals2[i])})"
        if stats is not None:
            s = stats.iloc[i]
            imb = "" if np.isnan(s["imbalance"]) else f" x{s['imbalance']:.2f}"
            text += f"  [{fmt.format(s['min'])} .. {fmt.format(s['max'])}]{imb}"
        lines.append(text)
    if more:
        lines.append(f"... {more} more nodes (raise max_nodes= or lower depth=)")
    return "\n".join(lines)


def describe(obj: Any) -> dict[str, Any]:
    """Facts for ``cctviz info``: nodes, metrics, units, profiles."""
    from ..model.ensemble import Ensemble

    tree = obj.tree if isinstance(obj, Ensemble) else obj
    out: dict[str, Any] = {
        "type": type(obj).__name__,
        "nodes": len(tree),
        "roots": int(len(tree.roots)),
        "depth": len(tree.levels),
        "metrics": tree.exc_metrics,
        "units": tree.units,
        "format": tree.meta.get("format"),
    }
    if isinstance(obj, Ensemble):
        out["profiles"] = obj.n_profiles
        out["rows"] = len(obj.rows)
        out["profile columns"] = list(obj.profiles.columns)
    return out
