"""Difference of two profiles aligned by call path."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..model.tree import Tree
from ..model.unify import unify_structures


def diff(a: Tree, b: Tree) -> Tree:
    """``a - b`` for every exclusive metric, nodes aligned by call path.

    A context present on one side only counts as 0 on the other. The result
    holds the union of both trees; ``meta["diff"]`` records the operands.

    >>> a = Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 5.0]})
    >>> b = Tree.from_parents([-1, 0], ["main", "g"], {"time": [1.0, 2.0]})
    >>> d = diff(a, b)
    >>> list(zip(d.nodes["name"], d.metrics["time"]))
    [('main', 0.0), ('f', 5.0), ('g', -2.0)]
    """
    u, (ma, mb) = unify_structures([a, b])
    metrics = [m for m in a.exc_metrics if m in b.exc_metrics]
    if not metrics:
        raise ValueError(f"no metric in common: {a.exc_metrics} vs {b.exc_metrics}")
    out = np.zeros((len(u), len(metrics)))
    np.add.at(out, ma, a.metrics[metrics].to_numpy(dtype=np.float64))
    np.subtract.at(out, mb, b.metrics[metrics].to_numpy(dtype=np.float64))
    meta = {"units": {**b.units, **a.units}, "diff": [a.meta.get("source"), b.meta.get("source")]}
    return Tree(u.nodes.copy(), pd.DataFrame(out, columns=metrics), meta, _trusted=True)
