"""Bandwidths of communication, from any tree's additive byte and time sums.

Profiles from the runtime, Kineto traces and (later) OTF2 traces all carry
``comm_bytes``, ``bus_bytes`` (bytes x nccl-tests' bus factor) and
``comm_time`` as ``"sum"`` metrics, each with its unit in ``meta["units"]``
(the runtime's times are ns, Kineto's us). Bandwidths of a subtree are ratios
of its inclusive sums, in the units read from the tree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..model import units as U
from ..model.ensemble import BaseEnsemble, Ensemble
from ..model.tables import UnitTable, with_units
from ..model.tree import Tree


def bandwidth(
    data: Tree | Ensemble | pd.DataFrame,
    inclusive: bool = True,
    *,
    units: Mapping[str, str] | None = None,
) -> UnitTable:
    """``algbw`` and ``busbw`` in GB/s (1e9 bytes/s) per node.

    ``data`` is a Tree (or an Ensemble: its per-node means), whose
    ``meta["units"]`` say what ``comm_bytes``, ``bus_bytes`` and
    ``comm_time`` are in; or a DataFrame of such columns with ``units``
    given. With ``inclusive`` the subtree sums are used, so a module's figures
    average over every collective it issued. NaN where no communication time
    was recorded.

    >>> import cctviz
    >>> t = cctviz.Tree.from_parents([-1, 0], ["step", "all_reduce"],
    ...     {"comm_bytes": [0, 8e9], "bus_bytes": [0, 12e9], "comm_time": [0, 4e9]},
    ...     meta={"units": {"comm_bytes": "B", "bus_bytes": "B", "comm_time": "ns"}})
    >>> bandwidth(t).round(1).to_dict("list")
    {'algbw': [2.0, 2.0], 'busbw': [3.0, 3.0]}
    """
    if isinstance(data, BaseEnsemble):
        data = data.tree
    if isinstance(data, Tree):
        frame, units = data.metrics, {**data.units, **(units or {})}
    else:
        frame = data
        if units is None:
            raise ValueError(
                "bandwidth of a DataFrame needs units=: pass tree.units (or the tree itself)"
            )
    sfx = " (inc)" if inclusive else ""
    time_unit = units.get("comm_time")
    if U.dimension(time_unit) != "time":
        raise ValueError(f"comm_time has unit {time_unit!r}, not a time: cannot make a bandwidth")
    to_s = U.factor(time_unit, "s")
    t = frame[f"comm_time{sfx}"].to_numpy(dtype=float) * to_s
    out: dict[str, Any] = {}
    for col, name in (("comm_bytes", "algbw"), ("bus_bytes", "busbw")):
        b_unit = units.get(col, "B")
        if U.dimension(b_unit) != "bytes":
            raise ValueError(f"{col} has unit {b_unit!r}, not bytes")
        b = frame[f"{col}{sfx}"].to_numpy(dtype=float) * U.factor(b_unit, "B")
        with np.errstate(divide="ignore", invalid="ignore"):
            out[name] = np.where(t > 0, b / t / 1e9, np.nan)
    return with_units(pd.DataFrame(out, index=frame.index), {"algbw": "GB/s", "busbw": "GB/s"})


__all__ = ["BY_CONTEXT_UNITS", "bandwidth", "by_context"]


#: the columns of :func:`by_context` and their units
BY_CONTEXT_UNITS = {"MB_mean": "MB", "ms_mean": "ms", "algbw GB/s": "GB/s", "busbw GB/s": "GB/s"}


def by_context(data: Tree | Ensemble) -> UnitTable:
    """Communication by code context: one row per communication leaf (``kind``
    "comm": a collective or a point-to-point call) of any profile that has them
    (the runtime's, Kineto traces, OTF2 traces), with the context that issued it
    (its call path above the leaf), the operation, and per profile (the mean
    over an Ensemble's profiles; a Tree is one profile): ``calls_mean``,
    ``MB_mean`` (1e6 bytes), ``ms_mean`` and the bandwidths (``algbw GB/s``,
    ``busbw GB/s``: of those means).

    >>> import cctviz
    >>> t = cctviz.Tree.from_parents([-1, 0, 1], ["main", "solve", "send"],
    ...     {"calls": [1, 1, 4], "comm_bytes": [0, 0, 4e6], "bus_bytes": [0, 0, 4e6],
    ...      "comm_time": [0, 0, 2e6]},
    ...     meta={"units": {"comm_bytes": "B", "bus_bytes": "B", "comm_time": "ns"}})
    >>> t.nodes["kind"] = ["function", "function", "comm"]
    >>> by_context(t)[["context", "operation", "calls_mean", "MB_mean", "ms_mean"]].to_dict("records")
    [{'context': 'main/solve', 'operation': 'send', 'calls_mean': 4.0, 'MB_mean': 4.0, 'ms_mean': 2.0}]
    """
    tree = data.tree if isinstance(data, BaseEnsemble) else data
    cols = ["context", "operation", "calls_mean", "MB_mean", "ms_mean", "algbw GB/s", "busbw GB/s"]
    if "kind" not in tree.nodes.columns or "comm_bytes" not in tree.metrics.columns:
        return with_units(pd.DataFrame(columns=cols), BY_CONTEXT_UNITS)
    ids = np.flatnonzero(tree.nodes["kind"].astype(str).to_numpy() == "comm")
    units = tree.units
    m = tree.metrics
    to_mb = U.factor(units.get("comm_bytes", "B"), "MB")
    has_time = "comm_time" in m.columns and U.dimension(units.get("comm_time")) == "time"
    bw = bandwidth(tree, inclusive=False) if has_time else None
    paths = tree.callpaths.to_numpy()
    out = pd.DataFrame(
        {
            "context": [p.rsplit("/", 1)[0] for p in paths[ids]],
            "operation": np.asarray(tree.names, dtype=object)[ids],
            "calls_mean": m["calls"].to_numpy(dtype=float)[ids] if "calls" in m.columns else np.nan,
            "MB_mean": m["comm_bytes"].to_numpy(dtype=float)[ids] * to_mb,
            "ms_mean": (
                m["comm_time"].to_numpy(dtype=float)[ids] * U.factor(units["comm_time"], "ms")
                if has_time
                else np.nan
            ),
            "algbw GB/s": bw["algbw"].to_numpy()[ids] if bw is not None else np.nan,
            "busbw GB/s": bw["busbw"].to_numpy()[ids] if bw is not None else np.nan,
        },
        index=pd.Index(ids, name="node"),
    )
    return with_units(out[cols], BY_CONTEXT_UNITS)
