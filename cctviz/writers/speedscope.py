"""Writer of speedscope's JSON format (https://www.speedscope.app/file-format-schema.json).

- ``type="sampled"`` (default): one "sample" per node whose exclusive metric is
  positive: the node's stack of frames, weighted by that value. speedscope's
  left-heavy and sandwich views then show exactly the tree's exclusive and
  inclusive values. Nodes with a zero (or negative) value are not written, so
  a node with nothing positive in its subtree does not come back on reading.
- ``type="evented"``: open/close events laid out from time 0, each node's
  span lasting its inclusive value (negative exclusive values counted as 0),
  children first in tree order and the node's own time after them. Every node
  is written, zero-length ones included.
- Frames (``shared.frames``): one per distinct (name, file, line) of the
  nodes, ``file``/``line`` taken from the node columns when the tree has them.
- The metric must add up (aggregation rule ``"sum"``): weights and spans are
  summed along stacks, so a peak, a minimum or a per-node value is refused
  with a ``ValueError`` (:mod:`cctviz.writers._rules`); ``metric=None``
  writes the first metric that adds up.
- The unit comes from ``meta["units"]`` of the metric: ``s``, ``ms``, ``us``,
  ``ns`` map to speedscope's time units, sizes to ``bytes`` (kB, MB...
  converted), anything else (``%``, or no unit) to ``none``. speedscope has no field for a
  metric name: reading the file back names the metric by its unit (``time``,
  ``bytes``, ``samples``) unless ``read(..., metric=...)`` is given.
- A Tree is one profile, named after ``meta["profile_name"]`` (or ``cctviz``);
  an Ensemble is one profile per ensemble profile, named ``key=value, ...``
  from its ``profiles`` table (the reader turns such names back into columns).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..model.ensemble import Ensemble
from ..model.tree import Tree
from ..model.units import canonical, dimension, factor
from ._rules import additive_metric

SCHEMA = "https://www.speedscope.app/file-format-schema.json"
UNIT = {
    "s": "seconds",
    "ms": "milliseconds",
    "us": "microseconds",
    "ns": "nanoseconds",
    "B": "bytes",
    "bytes": "bytes",
}


def _unit(unit: Any) -> tuple[str, float]:
    """speedscope's unit for a metric's unit, and the factor to it (sizes
    become bytes); ``"none"`` for a unit speedscope has no word for."""
    u = canonical(unit)
    if u in UNIT:
        return UNIT[u], 1.0
    if dimension(u) == "bytes":
        return "bytes", factor(u, "B")
    return "none", 1.0


def _py(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


def _frames(tree: Tree) -> tuple[list[dict[str, Any]], np.ndarray]:
    """Shared frames and the frame index of every node."""
    nodes = tree.nodes
    cols = [c for c in ("file", "line") if c in nodes.columns]
    key = pd.DataFrame({"name": nodes["name"].astype(str)})
    for c in cols:
        key[c] = nodes[c].astype(object).where(nodes[c].notna(), None)
    key = key.astype(str)
    codes, uniq = pd.factorize(pd.MultiIndex.from_frame(key))
    first = pd.Series(np.arange(len(codes))).groupby(codes).first().to_numpy()
    frames = []
    for i in first.tolist():
        f: dict[str, Any] = {"name": str(nodes["name"].iat[i])}
        for c in cols:
            v = nodes[c].iat[i]
            if v is None or (isinstance(v, float) and np.isnan(v)):
                continue
            if c == "line":
                try:
                    f["line"] = int(v)
                except (TypeError, ValueError):
                    continue
            else:
                f[c] = str(v)
        frames.append(f)
    return frames, np.asarray(codes, dtype=np.int64)


def _stacks(tree: Tree, frame_of: np.ndarray) -> list[list[int]]:
    out: list[list[int]] = [[] for _ in range(len(tree))]
    par = tree.parent
    for d, lv in enumerate(tree.levels):
        for i in lv.tolist():
            out[i] = [int(frame_of[i])] if d == 0 else out[par[i]] + [int(frame_of[i])]
    return out


def _sampled(values: np.ndarray, stacks: list[list[int]]) -> dict[str, Any]:
    keep = np.flatnonzero(np.isfinite(values) & (values > 0))
    weights = [float(values[i]) for i in keep.tolist()]
    return {
        "type": "sampled",
        "startValue": 0,
        "endValue": float(sum(weights)),
        "samples": [stacks[i] for i in keep.tolist()],
        "weights": weights,
    }


def _evented(tree: Tree, values: np.ndarray, frame_of: np.ndarray) -> dict[str, Any]:
    n = len(tree)
    own = np.where(np.isfinite(values) & (values > 0), values, 0.0)
    inc = own.copy()
    par = tree.parent
    for lv in reversed(tree.levels[1:]):
        np.add.at(inc, par[lv], inc[lv])
    start = np.zeros(n)
    cursor = np.zeros(n)
    root_cursor = 0.0
    for i in range(n):  # pre-order: a parent is placed before its children
        p = par[i]
        if p < 0:
            start[i] = root_cursor
            root_cursor += inc[i]
        else:
            start[i] = cursor[p]
            cursor[p] += inc[i]
        cursor[i] = start[i]
    end = tree.end
    events: list[dict[str, Any]] = []
    stack: list[int] = []
    last = 0.0

    def close() -> None:
        nonlocal last
        j = stack.pop()
        last = max(last, float(start[j] + inc[j]))
        events.append({"type": "C", "at": last, "frame": int(frame_of[j])})

    for i in range(n):
        while stack and i >= end[stack[-1]]:
            close()
        last = max(last, float(start[i]))
        events.append({"type": "O", "at": last, "frame": int(frame_of[i])})
        stack.append(i)
    while stack:
        close()
    return {"type": "evented", "startValue": 0, "endValue": last, "events": events}


def _profile_names(ens: Ensemble) -> list[str]:
    prof = ens.profiles
    if "profile_name" in prof.columns and prof["profile_name"].is_unique:
        return [str(v) for v in prof["profile_name"]]
    cols = [c for c in prof.columns if c != "profile_name"]
    if not cols:
        return [f"profile={k}" for k in range(len(prof))]
    return [
        ", ".join(f"{c}={_py(v)}" for c, v in zip(cols, row))
        for row in prof[cols].itertuples(index=False)
    ]


def to_speedscope(
    obj: Tree | Ensemble,
    metric: str | None = None,
    *,
    type: str = "sampled",
    name: str | None = None,
) -> dict[str, Any]:
    """The speedscope document of ``obj`` (see the module docstring).

    >>> t = Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 2.0]}, meta={"units": {"time": "ms"}})
    >>> doc = to_speedscope(t)
    >>> doc["profiles"][0]["unit"], doc["profiles"][0]["samples"], doc["profiles"][0]["weights"]
    ('milliseconds', [[0], [0, 1]], [1.0, 2.0])
    """
    if type not in ("sampled", "evented"):
        raise ValueError(f"type must be 'sampled' or 'evented', not {type!r}")
    tree = obj.tree if isinstance(obj, Ensemble) else obj
    metric = additive_metric(tree, metric, "speedscope")
    unit, scale = _unit(tree.units.get(metric))
    frames, frame_of = _frames(tree)
    stacks = _stacks(tree, frame_of) if type == "sampled" else []
    if isinstance(obj, Ensemble):
        rows = obj.exclusive_rows
        values = np.zeros((obj.n_profiles, len(tree)))
        np.add.at(
            values,
            (rows["profile"].to_numpy(), rows["node"].to_numpy()),
            rows[metric].to_numpy(np.float64),
        )
        pnames = _profile_names(obj)
    else:
        values = [obj.metrics[metric].to_numpy(np.float64)]
        pnames = [str(tree.meta.get("profile_name", "cctviz"))]
    if scale != 1.0:  # kB, MB... written as bytes
        values = [np.asarray(v) * scale for v in values]
    profiles = []
    for v, pn in zip(values, pnames):
        body = _sampled(v, stacks) if type == "sampled" else _evented(tree, v, frame_of)
        profiles.append({"type": body.pop("type"), "name": pn, "unit": unit, **body})
    return {
        "$schema": SCHEMA,
        "shared": {"frames": frames},
        "profiles": profiles,
        "name": name or str(tree.meta.get("name", tree.meta.get("source", "cctviz"))),
        "activeProfileIndex": 0,
        "exporter": "cctviz",
    }


def write_speedscope(
    obj: Tree | Ensemble,
    path: Path,
    metric: str | None = None,
    *,
    type: str = "sampled",
    name: str | None = None,
) -> None:
    """Write ``obj`` for speedscope (``cctviz.write(obj, path, format="speedscope")``).

    ``metric``: the exclusive metric (default: the first one that adds up); ``type``:
    ``"sampled"`` or ``"evented"``; ``name``: the file's title in speedscope.

    >>> import cctviz, tempfile, os
    >>> t = cctviz.Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 2.0]})
    >>> p = cctviz.write(t, os.path.join(tempfile.mkdtemp(), "t.json"), format="speedscope")
    >>> cctviz.read(p, metric="time").metrics["time (inc)"].tolist()
    [3.0, 2.0]
    """
    doc = to_speedscope(obj, metric, type=type, name=name)
    Path(path).write_text(json.dumps(doc, separators=(",", ":")), encoding="utf-8")
