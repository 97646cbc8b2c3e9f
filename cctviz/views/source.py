"""What a view can show of a Tree or an Ensemble: per-node metric columns.

Views speak one metric namespace whatever they display:

- a :class:`~cctviz.model.tree.Tree` offers its metrics (``"time"``,
  ``"time (inc)"``, ...);
- an :class:`~cctviz.model.ensemble.Ensemble` offers the same names, meaning
  the mean over profiles (``Ensemble.stats``: a failed rank, or a run without
  the node, does not count; a rank of a run that never entered it counts 0),
  plus derived spread columns
  ``"<metric> [max]"``, ``"[min]"``, ``"[std]"``, ``"[cost]"`` (max - mean:
  what the imbalance costs, in the metric's unit) and ``"[imbalance]"``
  (max/mean, a ratio without unit) of every inclusive metric.

Every column has a rule (:meth:`MetricSource.rule`) saying how the values of
several whole sibling subtrees combine (what an "other" row of a view shows,
and whether the column can size an icicle): ``"sum"`` for inclusive sums
(additive), ``"max"``/``"min"`` for inclusive maxima/minima, ``"none"`` for
exclusive columns, per-node constants and spread statistics that do not
combine (the ``[std]`` of a group of subtrees is not any function of theirs).

Columns are computed lazily and cached; nothing here knows about widgets.

Example:
    >>> import cctviz
    >>> t = cctviz.Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 2.0]})
    >>> s = MetricSource(t)
    >>> s.metrics, s.column("time (inc)").tolist(), s.is_additive("time (inc)")
    (['time (inc)', 'time'], [3.0, 2.0], True)
    >>> s.rule("time (inc)"), s.rule("time")
    ('sum', 'none')
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd

from ..model import units as _units
from ..model.ensemble import BaseEnsemble, Ensemble
from ..model.tables import UnitTable, measured, shown_unit, with_units
from ..model.timeline import Timeline
from ..model.tree import INC, Tree, base_metric
from .base import f32, i32

#: derived spread columns of an Ensemble, ``"<metric> [<stat>]"``
STATS = ("max", "min", "std", "cost", "imbalance")
#: derived columns that are ratios (no unit)
RATIOS = ("imbalance",)


def split_metric(name: str) -> tuple[str, str | None]:
    """``"time (inc) [max]"`` -> ``("time (inc)", "max")``; plain names -> ``(name, None)``.

    >>> split_metric("time (inc) [imbalance]"), split_metric("time")
    (('time (inc)', 'imbalance'), ('time', None))
    """
    for s in STATS:
        suffix = f" [{s}]"
        if name.endswith(suffix):
            return name[: -len(suffix)], s
    return name, None


class MetricSource:
    """Per-node metric columns of a Tree or an Ensemble (see the module docstring)."""

    def __init__(self, data: Tree | Ensemble | Timeline, profiles: Any = None) -> None:
        """``profiles``: for an Ensemble, the profile ids whose statistics the
        columns show (None: all). The tree, node ids and profile ids stay the
        whole ensemble's; only the means and spreads change. A Timeline shows
        its aggregate (``timeline.ensemble()``) and, on collective contexts, who
        the waiting waits for (:attr:`waits`)."""
        #: the Timeline shown, if any (its ensemble is :attr:`whole`)
        self.timeline: Timeline | None = data if isinstance(data, Timeline) else None
        self._waits: pd.DataFrame | None = None
        if self.timeline is not None:
            data = self.timeline.ensemble()
        #: the whole ensemble (labels, profile ids), None for a Tree
        self.whole: Ensemble | None = data if isinstance(data, BaseEnsemble) else None
        #: profile ids of :attr:`ensemble` in :attr:`whole` (None: all of them)
        self.profile_ids: np.ndarray | None = None
        if profiles is not None:
            if not isinstance(data, BaseEnsemble):
                raise TypeError("profiles: only an Ensemble has profiles to choose")
            ids = np.unique(np.asarray(profiles, dtype=np.int64).reshape(-1))
            if ids.size and (ids[0] < 0 or ids[-1] >= data.n_profiles):
                raise ValueError(f"profiles: ids must be in [0, {data.n_profiles})")
            self.profile_ids = ids
        if isinstance(data, BaseEnsemble):
            self.ensemble: Ensemble | None = (
                data if self.profile_ids is None else data.select(self.profile_ids)
            )
            self.tree: Tree = data.tree
            base = list(data.inc_metrics) + list(data.exc_metrics)
            derived = [f"{m} [{s}]" for m in data.inc_metrics for s in STATS]
            self.metrics: list[str] = base + derived
        elif isinstance(data, Tree):
            self.ensemble = None
            self.tree = data
            self.metrics = list(data.inc_metrics) + list(data.exc_metrics)
        else:
            raise TypeError(f"expected a cctviz Tree or Ensemble, got {type(data).__name__}")
        self._cache: dict[str, np.ndarray] = {}
        self._frames: dict[str, pd.DataFrame] = {}

    def __len__(self) -> int:
        return len(self.tree)

    @property
    def origin(self) -> Tree | Ensemble | Timeline:
        """What the source was made from (the Timeline, else the whole data)."""
        if self.timeline is not None:
            return self.timeline
        return self.whole if self.whole is not None else self.tree

    @property
    def waits(self) -> pd.DataFrame | None:
        """Per collective context of a Timeline: who the waiting waits for and
        what that rank was doing (:func:`cctviz.ops.collectives.wait_causes`,
        computed once); None without a Timeline."""
        if self.timeline is None:
            return None
        if self._waits is None:
            from ..ops.collectives import wait_causes

            self._waits = wait_causes(self.timeline)
        return self._waits

    def check(self, name: str) -> str:
        """``name`` if it is a metric, else a ``KeyError`` listing the metrics."""
        if name not in self.metrics:
            raise KeyError(f"no metric {name!r}; choose one of {self.metrics}")
        return name

    @property
    def default_metric(self) -> str:
        """``time (inc)`` when there is one, else the first inclusive metric; a
        ValueError for data with no metric at all (nothing to size or colour by)."""
        if not self.metrics:
            raise ValueError(
                "nothing to show: the tree has no metric (names only); give it one, "
                "e.g. Tree.from_parents(parent, name, {'calls': ...})"
            )
        return self.tree.metric_column(None) if self.tree.exc_metrics else self.metrics[0]

    def is_additive(self, name: str) -> bool:
        """Whether values of children add up under their parent: an inclusive
        ``"sum"`` metric (for an Ensemble, its mean over profiles). Spread
        columns (``[max]``, ``[cost]``, ...) never are; unknown names neither."""
        if name not in self.metrics:
            return False
        base, stat = split_metric(name)
        return stat is None and self.tree.is_additive(base)

    def rule(self, name: str) -> str:
        """How the values of several whole sibling subtrees combine:
        ``"sum"``, ``"max"``, ``"min"`` or ``"none"`` (module docstring).

        ``[max]`` of a ``"max"`` metric is ``"max"`` (a maximum over profiles of
        maxima over subtrees is the maximum over subtrees of the per-subtree
        maxima), ``[min]`` of a ``"min"`` metric ``"min"``; other spread
        columns are ``"none"``.
        """
        self.check(name)
        base, stat = split_metric(name)
        t = self.tree
        inclusive = base.endswith(INC) and base not in t.exc_metrics
        rule = t.rule(base) if inclusive else "none"
        if stat is None:
            return rule
        return rule if stat == rule else "none"

    def unit(self, name: str) -> str | None:
        """Canonical unit of a metric column (``"ms"``, ``"B"``...), None when
        unknown and for ratios (``[imbalance]``)."""
        base, stat = split_metric(name)
        if stat in RATIOS:
            return None
        return _units.canonical(self.tree.unit(base))

    def exclusive_of(self, name: str) -> np.ndarray | None:
        """The exclusive column behind an additive (inclusive) metric, if there is one."""
        base, inclusive = base_metric(name)
        if not (inclusive and self.is_additive(name)) or base not in self.metrics:
            return None
        return self.column(base)

    def column(self, name: str) -> np.ndarray:
        """Values of one metric per node (float64, NaN = missing)."""
        self.check(name)
        if name not in self._cache:
            self._cache[name] = self._compute(name)
        return self._cache[name]

    def _compute(self, name: str) -> np.ndarray:
        if self.ensemble is None:
            return self.tree.metrics[name].to_numpy(dtype=np.float64)
        base, stat = split_metric(name)
        if stat is None:  # the mean, over the profiles the absence rule counts
            return self.ensemble.stats(name)["mean"].to_numpy(dtype=np.float64)
        return self.spread(base)[stat].to_numpy(dtype=np.float64)

    def spread(self, metric: str) -> pd.DataFrame | None:
        """Per-node statistics over profiles (``Ensemble.stats``; ``argmax`` as
        an id of the whole ensemble's profiles), None for a Tree."""
        if self.ensemble is None:
            return None
        key = "\0spread\0" + split_metric(metric)[0]
        if key not in self._frames:
            st = self.ensemble.stats(split_metric(metric)[0])
            if self.profile_ids is not None:  # stats() gives a copy of its own
                am = st["argmax"].to_numpy()
                ok = am >= 0
                st["argmax"] = np.where(ok, self.profile_ids[np.where(ok, am, 0)], am)
            self._frames[key] = st
        return self._frames[key]

    def spread_metric(self, name: str) -> str:
        """The metric whose spread goes with ``name`` (its base, made inclusive if possible)."""
        base = split_metric(name)[0]
        if not base.endswith(INC) and base + INC in self.metrics:
            base += INC
        return base

    def profile_labels(self, ids: np.ndarray) -> dict[str, str]:
        """Short labels ("rank 3", "run 2 rank 0", file names when several) of profiles."""
        if self.whole is None:
            return {}
        prof = self.whole.profiles
        # a file name says which run (rank files of one run: the rank does);
        # a run number only where no file does
        runs = "run" in prof.columns and prof["run"].nunique() > 1
        by_file = (
            "file" in prof.columns
            and prof["file"].nunique() > 1
            and (runs or "rank" not in prof.columns)
        )
        cols = [c for c in ("rank",) if c in prof.columns]
        if not by_file and runs:
            cols.insert(0, "run")
        out: dict[str, str] = {}
        for i in np.unique(np.asarray(ids, dtype=np.int64)):
            if i < 0 or i >= len(prof):
                continue
            row = prof.iloc[int(i)]
            parts = [f"{c} {_fmt(row[c])}" for c in cols]
            if by_file:
                parts.append(os.path.basename(str(row["file"])))
            out[str(int(i))] = " ".join(parts) if parts else f"profile {int(i)}"
        return out

    def frame(self, ids: np.ndarray, metrics: list[str]) -> UnitTable:
        """Node attributes, call path and the given metric columns for ``ids``,
        each metric's unit in ``attrs["units"]`` (:meth:`unit`)."""
        ids = np.asarray(ids, dtype=np.int64)
        df = self.tree.nodes.iloc[ids].copy()
        df["callpath"] = self.tree.callpaths.iloc[ids].to_numpy()
        for m in dict.fromkeys(metrics):
            df[m] = self.column(m)[ids]
        return with_units(df, {m: shown_unit(self.unit(m)) for m in metrics if self.measured(m)})

    def measured(self, name: str) -> bool:
        """Whether a column is a measured quantity: it has a unit, or its name
        says it is a time or a size (then its unit is unknown)."""
        base, stat = split_metric(name)
        if stat in RATIOS:
            return False
        return measured(base, self.unit(name))


def _fmt(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def waits_payload(
    waits: pd.DataFrame, rows: np.ndarray, names: Any, pure: np.ndarray | None = None
) -> dict[str, Any]:
    """The ``waits`` entry of a view's data (``js/kit/waits.js``): the rows of
    :func:`~cctviz.ops.collectives.wait_causes` whose ``rows`` (the view's row
    or super node per table row) are >= 0, as columns; ``before`` named from
    ``names`` (the tree's node names); ``pure`` per table row: the view's mark
    is only collectives (default), so the most waited for rank is its cue, else
    the waits are those of the collectives inside it (told, not cued). The
    columns keep wait_causes' names."""
    keep = rows >= 0
    pure = np.ones(len(waits), dtype=bool) if pure is None else np.asarray(pure, dtype=bool)
    w = waits[keep]
    before = w["before"].to_numpy(dtype=np.int64)
    names = np.asarray(names, dtype=object)
    ints = {
        c: i32(w[c].to_numpy())
        for c in (
            "calls",
            "most_waited_for",
            "most_waited_for_calls",
            "most_often_last",
            "most_often_last_calls",
            "ranks_ever_last",
        )
    }
    floats = {
        c: f32(w[c].to_numpy(dtype=np.float64))
        for c in (
            "wait_total",
            "most_waited_for_wait_total",
            "before_time_total",
            "arrival_spread_total",
        )
    }
    return {
        "row": i32(rows[keep]),
        **ints,
        **floats,
        "before": [str(names[b]) if b >= 0 else "" for b in before],
        "pure": i32(pure[keep].astype(np.int32)),
        "unit": waits.attrs.get("unit", "ns"),
    }
