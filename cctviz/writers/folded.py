"""Writer of folded stacks (``frame;frame;... count`` lines), as FlameGraph,
speedscope, Brendan Gregg's ``flamegraph.pl`` and ``inferno`` read them.

- One line per node whose exclusive metric, scaled and rounded, is a positive
  count: the node's call path (root first, names joined by ``;``), a space,
  the count. Nodes whose count is 0 (or negative: folded counts cannot be)
  are left out, so a node with neither own time nor descendants with own time
  does not come back when the file is read again.
- Counts are integers: ``count = rint(value * scale)`` (round half to even).
  With ``scale=None`` the factor is 1 when every value is already integral
  (sample counts); otherwise it is the smallest power of ten, at most
  ``10**9``, that makes the smallest positive value at least 1: so no node
  with a positive value is rounded away (seconds of time become, say,
  microseconds). Give ``scale=`` to fix it yourself.
- Names: a ``;`` inside a name would split the frame, so it is replaced by
  ``:``; line breaks (``\\n``, ``\\r``) and tabs by a space; an empty name
  becomes ``[unnamed]``. Reading the file back gives these replaced names.
- An :class:`~cctviz.Ensemble` is written summed over its profiles (the
  format holds one profile); give ``profile=k`` to write one profile.
- The metric must add up (aggregation rule ``"sum"``): counts are summed
  along stacks, so a peak, a minimum or a per-node value is refused with a
  ``ValueError``; ``metric=None`` writes the first metric that adds up. The
  format has no unit: the numbers are the metric's, times ``scale``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..model.ensemble import Ensemble
from ..model.tree import Tree
from ._rules import additive_metric


def folded_names(names: np.ndarray) -> np.ndarray:
    """Node names made safe for the folded form (see the module docstring).

    >>> folded_names(np.array(["a;b", "x\\ny", ""], dtype=object)).tolist()
    ['a:b', 'x y', '[unnamed]']
    """
    out = np.empty(len(names), dtype=object)
    for i, n in enumerate(names):
        s = str(n).replace(";", ":").replace("\r\n", " ").replace("\n", " ")
        s = s.replace("\r", " ").replace("\t", " ")
        out[i] = s if s.strip() else "[unnamed]"
    return out


def default_scale(values: np.ndarray) -> float:
    """The ``scale=None`` factor: 1 for integral values, else the smallest power
    of ten (at most 1e9) lifting the smallest positive value to at least 1.

    >>> default_scale(np.array([3.0, 0.0, 12.0])), default_scale(np.array([0.25, 1.5]))
    (1.0, 10.0)
    """
    v = values[np.isfinite(values) & (values > 0)]
    if v.size == 0 or np.all(v == np.rint(v)):
        return 1.0
    k = int(np.ceil(-np.log10(v.min()))) if v.min() < 1 else 0
    return float(10 ** min(max(k, 0), 9))


def _exclusive(
    obj: Tree | Ensemble, metric: str | None, profile: int | None
) -> tuple[Tree, str, np.ndarray]:
    tree = obj.tree if isinstance(obj, Ensemble) else obj
    metric = additive_metric(tree, metric, "folded stacks")
    if isinstance(obj, Ensemble):
        rows = obj.exclusive_rows
        if profile is not None:
            rows = rows[rows["profile"] == profile]
        vals = np.bincount(
            rows["node"].to_numpy(), weights=rows[metric].to_numpy(np.float64), minlength=len(tree)
        )
    else:
        vals = tree.metrics[metric].to_numpy(np.float64)
    return tree, metric, np.nan_to_num(vals)


def to_folded(
    obj: Tree | Ensemble,
    metric: str | None = None,
    *,
    scale: float | None = None,
    profile: int | None = None,
) -> list[str]:
    """The folded lines of ``obj`` (see the module docstring), in tree pre-order.

    >>> t = Tree.from_parents([-1, 0, 0], ["main", "a;b", "io"], {"time": [0.5, 2.0, 0.0]})
    >>> to_folded(t)
    ['main 5', 'main;a:b 20']
    """
    tree, metric, vals = _exclusive(obj, metric, profile)
    if scale is None:
        scale = default_scale(vals)
    counts = np.rint(vals * scale)
    names = folded_names(tree.names)
    paths = np.empty(len(tree), dtype=object)
    par = tree.parent
    for d, lv in enumerate(tree.levels):
        paths[lv] = names[lv] if d == 0 else paths[par[lv]] + ";" + names[lv]
    keep = np.flatnonzero(counts > 0)
    return [f"{paths[i]} {int(counts[i])}" for i in keep.tolist()]


def write_folded(
    obj: Tree | Ensemble,
    path: Path,
    metric: str | None = None,
    *,
    scale: float | None = None,
    profile: int | None = None,
) -> None:
    """Write ``obj`` as folded stacks (``cctviz.write(obj, path, format="folded")``).

    ``metric``: the exclusive metric to write (default: the first one that adds up);
    ``scale``: factor applied before rounding to integer counts (see the module
    docstring); ``profile``: one profile of an Ensemble instead of their sum.

    >>> import cctviz, tempfile, os
    >>> t = cctviz.Tree.from_parents([-1, 0], ["main", "f"], {"samples": [1.0, 4.0]})
    >>> p = cctviz.write(t, os.path.join(tempfile.mkdtemp(), "t.folded"), format="folded")
    >>> open(p).read()
    'main 1\\nmain;f 4\\n'
    """
    lines = to_folded(obj, metric, scale=scale, profile=profile)
    Path(path).write_text("".join(ln + "\n" for ln in lines), encoding="utf-8")
