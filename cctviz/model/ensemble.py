"""Ensembles: many profiles (ranks, runs) over one unified tree.

Storage is a long table of (node, profile) rows with exclusive metrics: no
NaN padding for nodes a profile never entered.

**Absent is not always zero.** Within one healthy run, a rank that never
entered a context spent no time there: it counts 0. A profile that recorded
nothing (a killed rank: no rows, ``profiles["ok"]`` False) was not measured
at all, and neither was a node in a run that has no row for it (a kernel that
was not built in that run): both are left out of statistics. A rank that
failed after writing what it had (``ok`` False, with rows) is measured and
counts; ``ens.select(ens.profiles["ok"])`` keeps the complete ones only. Runs are told apart by
the ``run`` column of :attr:`Ensemble.profiles` (``read_ensemble`` fills it:
one run per file, or per group of rank files of one job); without one, all
profiles are ranks of one run. Only ``"sum"`` metrics count absence as 0; a
peak, a minimum or a per-node constant that was not recorded is unknown.
"""

from __future__ import annotations

import os
import warnings
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ProfileError
from . import units as _units
from ._algo import (
    _expand,
    accumulate_up,
    combine_rows,
    inverse_permutation,
    sorted_unique,
    stable_order,
)
from .stats import MISSING, node_stats
from .tables import UnitTable, measured, shown_unit, with_units
from .text import text_as_object
from .tree import Tree, base_metric, check_aggregation, inc_name
from .unify import unify_structures

#: the columns of :meth:`BaseEnsemble.stats` in the metric's unit (the rest are
#: counts, ratios and ids)
IN_METRIC_UNIT = ("mean", "std", "min", "q25", "median", "q75", "max", "cost")


class BaseEnsemble(ABC):
    """What every ensemble answers, wherever its values are: the in-memory
    :class:`Ensemble`, or a :class:`cctviz.dataset.DatasetEnsemble` whose values
    stay on disk. Views, the text renderer and the structural operations
    (filter, prune, focus) take any of them: they ask only for aggregates.

    A subclass gives its tree, profiles, metrics, :attr:`live`, :meth:`values`,
    :meth:`select`, :meth:`profile`, :meth:`remapped` and the statistics table
    (``_stats_table``); the rest is shared here, so both follow one set of rules.
    """

    __slots__ = ()

    # ------------------------------------------------------------- given
    @property
    @abstractmethod
    def tree(self) -> Tree:
        """The unified tree; its metrics are the means over the live profiles."""

    @property
    @abstractmethod
    def profiles(self) -> pd.DataFrame:
        """One row of metadata per profile."""

    @property
    @abstractmethod
    def meta(self) -> dict[str, Any]: ...

    @property
    @abstractmethod
    def exc_metrics(self) -> list[str]: ...

    @property
    @abstractmethod
    def live(self) -> np.ndarray:
        """Mask of the profiles that recorded something."""

    @abstractmethod
    def values(self, metric: str) -> np.ndarray:
        """Dense (nodes x profiles) matrix of one metric."""

    @abstractmethod
    def select(self, which: Any) -> BaseEnsemble:
        """Some of the profiles, over the same tree."""

    @abstractmethod
    def profile(self, which: int | None = None, **match: Any) -> Tree:
        """One profile as a Tree."""

    @abstractmethod
    def remapped(self, nodes: pd.DataFrame, mapping: np.ndarray) -> BaseEnsemble:
        """The same profiles over a new tree (``nodes``, pre-ordered), each node of
        this one going to ``mapping[node]`` (-1: dropped; rows meeting on one node
        combine by each metric's rule): what filter, prune and focus build on."""

    @abstractmethod
    def group_sums(self, metric: str, group: np.ndarray, n_groups: int) -> np.ndarray:
        """(groups x profiles): per profile, the sum of ``metric`` over the nodes
        of each group (``group[node]``, -1: none; NaN values count 0); NaN where
        the profile recorded none of the group's nodes. The Sankey's super nodes
        per profile."""

    @abstractmethod
    def live_mean(self, metric: str) -> np.ndarray:
        """Per node, the mean of ``metric`` over the live profiles, absent and NaN
        counting 0 (an additive metric's share of the mean profile)."""

    @abstractmethod
    def _stats_table(self, metric: str, missing: str) -> pd.DataFrame:
        """The statistics columns of :meth:`stats` (without ``name``)."""

    # ------------------------------------------------------------- shared
    @property
    def inc_metrics(self) -> list[str]:
        """Inclusive metric names (``"none"`` metrics have none)."""
        return [inc_name(m) for m, r in self.aggregation.items() if r != "none"]

    @property
    def aggregation(self) -> dict[str, str]:
        """Aggregation rule of every metric (see :attr:`Tree.aggregation`)."""
        return self.tree.aggregation

    def rule(self, metric: str) -> str:
        """Aggregation rule of a metric column (``"X"`` or ``"X (inc)"``)."""
        return self.tree.rule(metric)

    def __len__(self) -> int:
        return len(self.profiles)

    @property
    def n_profiles(self) -> int:
        return len(self.profiles)

    @property
    def run_ids(self) -> np.ndarray:
        """Run of every profile (integers), from the ``run`` column; all 0 without one."""
        return run_ids(self.profiles)

    @property
    def absence_groups(self) -> np.ndarray:
        """Per profile, the group within which a node it did not record counts
        as 0 (the absence rule of :mod:`cctviz.model.stats`): its run, and within
        a run its ``component`` where the profiles have one (a workflow's
        components run different programs: a node of the simulation is not a 0
        of the training's processes).

        Example:
            >>> import cctviz
            >>> t = cctviz.Tree.from_parents([-1], ["main"], {"time": [1.0]})
            >>> e = cctviz.Ensemble.from_trees([t, t, t], profiles={"component": ["sim", "sim", "train"]})
            >>> e.absence_groups.tolist(), e.run_ids.tolist()
            ([0, 0, 1], [0, 0, 0])
        """
        return absence_groups(self.profiles)

    def stats(
        self, metric: str | None = None, *, missing: str = "auto", formatted: bool = False
    ) -> UnitTable:
        """Per-node statistics of ``metric`` over profiles.

        Columns: mean, std (ddof=1), min, q25, median, q75, max,
        imbalance (max/mean), cost (max - mean: what the imbalance costs, in
        the metric's unit), argmax (profile with the max; -1 when an absent
        profile counted as 0 holds it), count (profiles with a value), n
        (profiles the statistics are over). Vectorised: quantiles are read off
        one sort of the long table, with the implicit zeros of absent profiles
        placed by rank, not materialised.

        Which profiles count (``missing``):

        - ``"auto"`` (default): profiles that recorded nothing never count;
          a profile of a run in which some profile recorded the node counts 0
          there; runs in which no profile recorded the node are left out. So
          a killed rank does not drag the minimum to 0, and a kernel that ran
          in 5 of 18 runs is averaged over those 5 (as Thicket does). In a
          workflow a run's components count apart (:attr:`absence_groups`):
          a node of the simulation is averaged over the simulation's processes.
          Metrics whose rule is not ``"sum"`` never count absence as 0.
        - ``"zero"``: every live profile counts, absent = 0.
        - ``"skip"``: only profiles with a value for the node.

        The values are in the metric's unit, ``table.attrs["unit"]``, stated per
        column in ``attrs["units"]`` (:data:`IN_METRIC_UNIT`; the columns keep
        their names whatever the unit): the table (a
        :class:`~cctviz.model.tables.UnitTable`) shows them with it ("75.3 ms")
        and computes with the numbers. With ``formatted=True`` they come as
        text with their units, the imbalance as "1.23×": a table to read only.

        Args:
            metric: a metric column; default the tree's default metric.
            missing: ``"auto"``, ``"zero"`` or ``"skip"``.
            formatted: values as text with units.

        Example:
            >>> import cctviz
            >>> a = cctviz.Tree.from_parents([-1, 0], ["main", "mpi"], {"time": [1.0, 3.0]})
            >>> b = cctviz.Tree.from_parents([-1], ["main"], {"time": [2.0]})
            >>> ranks = cctviz.Ensemble.from_trees([a, b], profiles={"rank": [0, 1]})
            >>> ranks.stats("time (inc)").loc[1, ["mean", "min", "n"]].astype(float).tolist()  # one run
            [1.5, 0.0, 2.0]
            >>> runs = cctviz.Ensemble.from_trees([a, b], profiles={"run": [0, 1]})
            >>> runs.stats("time (inc)").loc[1, ["mean", "min", "n"]].astype(float).tolist()  # mpi: run 0 only
            [3.0, 3.0, 1.0]
        """
        tree = self.tree
        if metric is None:
            metric = tree.metric_column(None)
        if missing not in MISSING:
            raise ValueError(f"missing must be one of {MISSING}")
        self.rule(metric)  # a KeyError for a metric it does not have
        key = (metric, missing)
        cache = self._cache.setdefault("stats", {})
        if key not in cache:
            table = self._stats_table(metric, missing)
            table.insert(0, "name", tree.names)
            unit = _units.canonical(tree.unit(base_metric(metric)[0]))
            table.attrs["unit"] = unit
            in_unit = measured(metric, unit)
            cache[key] = with_units(
                table, dict.fromkeys(IN_METRIC_UNIT, shown_unit(unit)) if in_unit else {}
            )
        if formatted:
            return _formatted(cache[key])
        return cache[key].copy()  # callers may edit theirs; the cache stays whole

    def profile_totals(self, metric: str) -> np.ndarray:
        """Per profile, the sum of an additive inclusive metric over the roots
        (NaN for profiles that recorded nothing)."""
        roots = self.tree.parent < 0
        out = np.asarray(self.values(metric)[roots].sum(axis=0), dtype=np.float64)
        out[~self.live] = np.nan
        return out

    def groupby(self, by: str | Sequence[str]) -> dict[Any, BaseEnsemble]:
        """Split profiles by metadata column(s): ``{value: ensemble}``."""
        groups = self.profiles.groupby(by, sort=True, dropna=False).indices
        return {k: self.select(np.sort(v)) for k, v in groups.items()}

    def trees(self) -> Iterable[Tree]:
        for p in range(self.n_profiles):
            yield self.profile(p)

    # ------------------------------------------------------------- facade
    def query(self, query: Any):
        """Query the unified tree (metrics are means over profiles)."""
        return self.tree.query(query)

    def filter(self, keep: Any) -> BaseEnsemble:
        """Keep the nodes ``keep`` selects (a query, NodeSet or mask), each joining
        its nearest kept ancestor (:func:`cctviz.ops.transform.filter_tree`)."""
        from ..ops.transform import filter_tree

        return filter_tree(self, keep)

    def merge_duplicates(self) -> BaseEnsemble:
        """Same-named siblings of the unified tree merged (see :meth:`Tree.merge_duplicates`)."""
        from ..ops.transform import merge_duplicates

        return merge_duplicates(self)

    def prune(self, metric: str | None = None, **kw: Any) -> BaseEnsemble:
        """Small nodes folded into ``(other)`` nodes, decided on the mean tree
        (:func:`cctviz.ops.transform.prune`)."""
        from ..ops.transform import prune

        return prune(self, metric, **kw)

    def focus(self, node: Any) -> BaseEnsemble:
        """The subtree(s) rooted at ``node`` (:func:`cctviz.ops.transform.focus`)."""
        from ..ops.transform import focus

        return focus(self, node)

    def render(self, metric: str | None = None, **kw: Any) -> str:
        """Text tree of the mean over profiles, with the spread ``[min .. max]``
        and, where it costs >= 1% of the root, the imbalance max/mean and its
        cost max - mean; options as :meth:`Tree.render`
        (:func:`cctviz.ops.text.render`)."""
        from ..ops.text import render

        return render(self, metric, **kw)

    def __str__(self) -> str:
        """The top of the mean tree with the spread (``print(ens)``), and how to see more."""
        from ..ops.text import SHORT_NODES, render

        return render(self, max_nodes=SHORT_NODES, hint="repr")

    def _repr_pretty_(self, p, cycle) -> None:  # IPython: the short view of str()
        p.text(repr(self) if cycle else str(self))


class Ensemble(BaseEnsemble):
    """Profiles of many ranks and/or runs over one unified calling-context tree.

    Attributes:
        tree: the unified :class:`Tree`; its metrics are the mean over the live
            profiles (those with data: :attr:`live`) of each node's own value, absent = 0 for
            ``"sum"`` metrics so that means still add up; :meth:`stats` gives
            the statistics that follow the absence rule (module docstring).
        data: long table indexed by (node, profile), exclusive and inclusive metrics.
        profiles: one row of metadata per profile (rank, run, file, ...).

    Example:
        >>> import cctviz
        >>> a = cctviz.Tree.from_parents([-1, 0], ["main", "mpi"], {"time": [1.0, 3.0]})
        >>> b = cctviz.Tree.from_parents([-1, 0], ["main", "io"], {"time": [2.0, 5.0]})
        >>> ens = cctviz.Ensemble.from_trees([a, b], profiles={"rank": [0, 1]})
        >>> ens.tree.nodes["name"].tolist()
        ['main', 'mpi', 'io']
        >>> ens.stats("time (inc)")[["mean", "max", "argmax"]].round(2).values.tolist()
        [[5.5, 7.0, 1.0], [1.5, 3.0, 0.0], [2.5, 5.0, 1.0]]
    """

    __slots__ = ("_tree", "_rows", "_profiles", "_meta", "_cache")

    def __init__(
        self,
        tree: Tree,
        rows: pd.DataFrame,
        profiles: pd.DataFrame | None = None,
        meta: Mapping[str, Any] | None = None,
        *,
        _own_rows: bool = False,
    ) -> None:
        """Wrap a unified tree structure and a long table.

        ``rows`` has integer columns ``node`` and ``profile`` and one column per
        exclusive metric. Rows of one (node, profile) are combined by each
        metric's aggregation rule (``tree.meta["aggregation"]`` or
        ``meta["aggregation"]``), completed with rows for missing ancestors
        (0 for ``"sum"`` metrics, NaN otherwise), and sorted. (``_own_rows``:
        the caller gives up ``rows``' arrays, which the ensemble may keep as
        they are rather than copy: the batch read's.)
        """
        metrics = [c for c in rows.columns if c not in ("node", "profile")]
        n_prof = int(rows["profile"].max()) + 1 if len(rows) else 0
        if profiles is None:
            profiles = pd.DataFrame(index=pd.RangeIndex(n_prof, name="profile"))
        else:
            profiles = profiles.reset_index(drop=True)
            profiles.index.name = "profile"
            if len(profiles) < n_prof:
                raise ValueError(
                    f"rows name profile {n_prof - 1} but only {len(profiles)} profiles are described"
                )
        self._profiles = text_as_object(profiles)
        self._meta = dict(meta or {})
        self._cache: dict[str, Any] = {}
        given = {**tree.meta.get("aggregation", {}), **self._meta.get("aggregation", {})}
        rules = check_aggregation({m: given.get(m, "sum") for m in metrics})
        if any(r != "sum" for r in rules.values()):
            self._meta["aggregation"] = {m: r for m, r in rules.items() if r != "sum"}
        self._rows = _normalise_rows(tree, rows, metrics, len(profiles), rules, _own_rows)
        mean = _node_means(self._rows, metrics, len(tree), self.live, rules)
        self._tree = Tree(
            tree.nodes.copy(),
            pd.DataFrame(mean, columns=metrics),
            {**tree.meta, **self._meta},
            _trusted=True,
        )

    # ------------------------------------------------------------- building
    @classmethod
    def from_trees(
        cls,
        trees: Sequence[Tree],
        profiles: pd.DataFrame | Mapping[str, Sequence] | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> Ensemble:
        """Unify single-profile trees (one per rank or run) by call path.

        ``profiles`` is a metadata table with one row per tree.
        """
        trees = list(trees)
        prof = (
            pd.DataFrame(profiles)
            if profiles is not None
            else pd.DataFrame(index=range(len(trees)))
        )
        if len(prof) != len(trees):
            raise ValueError(f"{len(prof)} metadata rows for {len(trees)} trees")
        return cls.concat(trees, prof.to_dict("records") if len(prof.columns) else None, meta)

    @classmethod
    def concat(
        cls,
        items: Sequence[Tree | Ensemble],
        extra: Sequence[Mapping[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> Ensemble:
        """Profiles of several trees and ensembles, unified by call path.

        A Tree contributes one profile, an Ensemble all of its profiles.
        ``extra[k]`` adds metadata columns to the profiles of ``items[k]``
        (an ensemble's own profile columns take precedence).

        Units are reconciled: a time (or size) metric stated in different
        units is converted to the finest of them; a metric whose units
        cannot be reconciled (seconds in one profile, bytes or no unit in
        another) is a :class:`~cctviz.ProfileError`, and so is a metric with
        different aggregation rules.
        """
        items = list(items)
        if not items:
            raise ValueError("an ensemble needs at least one profile")
        structures = [it.tree if isinstance(it, Ensemble) else it for it in items]
        unified, maps = unify_structures(structures)
        metrics: list[str] = []
        for it in items:
            metrics += [m for m in it.exc_metrics if m not in metrics]
        units, scale = _reconcile_units(structures, metrics)
        rules = _reconcile_rules(structures, metrics)
        parts: list[pd.DataFrame] = []
        prof_parts: list[pd.DataFrame] = []
        off = 0
        for k, (it, mp) in enumerate(zip(items, maps)):
            ex = dict(extra[k]) if extra is not None else {}
            if isinstance(it, Ensemble):
                r = it.exclusive_rows
                df = pd.DataFrame(
                    {"node": mp[r["node"].to_numpy()], "profile": r["profile"].to_numpy() + off}
                )
                src = r
                pr = it.profiles.reset_index(drop=True).copy()
                for key, v in ex.items():
                    if key not in pr.columns:
                        pr[key] = [v] * len(pr)
                off += it.n_profiles
            else:
                df = pd.DataFrame({"node": mp, "profile": np.full(len(it), off, dtype=np.int64)})
                src = it.metrics
                pr = pd.DataFrame([ex]) if ex else pd.DataFrame(index=[0])
                off += 1
            for m in metrics:
                if m in src:
                    df[m] = src[m].to_numpy(dtype=np.float64) * scale[k].get(m, 1.0)
                else:  # a metric this profile does not have was not measured
                    df[m] = np.nan
            parts.append(df)
            prof_parts.append(pr)
        rows = pd.concat(parts, ignore_index=True)
        prof = pd.concat(prof_parts, ignore_index=True)
        m = dict(meta or {})
        if units:
            m.setdefault("units", units)
        for key in ("units_assumed", "aggregation_notes"):  # what readers said of the metrics
            said = {k: v for t in structures for k, v in t.meta.get(key, {}).items()}
            if said:
                m.setdefault(key, said)
        if any(r != "sum" for r in rules.values()):
            m.setdefault("aggregation", {k: r for k, r in rules.items() if r != "sum"})
        return cls(unified, rows, prof, m)

    # ------------------------------------------------------------- accessors
    @property
    def tree(self) -> Tree:
        return self._tree

    @property
    def profiles(self) -> pd.DataFrame:
        return self._profiles

    @property
    def meta(self) -> dict[str, Any]:
        return self._meta

    @property
    def exc_metrics(self) -> list[str]:
        return [c for c in self._rows.columns if c not in ("node", "profile")]

    @property
    def live(self) -> np.ndarray:
        """Mask of the profiles that were measured: those that recorded something.

        A rank that died before writing has no rows (and ``ok`` False); it is
        left out of means and statistics instead of counting as zeros.
        """
        if "live" not in self._cache:  # rows never change: computed once
            out = np.zeros(self.n_profiles, dtype=bool)
            out[self._rows["profile"].to_numpy()] = True
            self._cache["live"] = out
        return self._cache["live"]

    @property
    def exclusive_rows(self) -> pd.DataFrame:
        """The stored table: one row per recorded (node, profile), columns ``node``,
        ``profile`` and the exclusive metrics (no NaN padding)."""
        return self._rows

    @property
    def n_rows(self) -> int:
        """How many (node, profile) rows are recorded."""
        return len(self._rows)

    @property
    def long_table(self) -> pd.DataFrame:
        """Every metric of every recorded (node, profile): the long table indexed by
        (node, profile) with exclusive and inclusive metrics (made on first use)."""
        if "data" not in self._cache:
            inc = self._inclusive_rows()
            df = self._rows.set_index(["node", "profile"])
            order = []
            for j, (m, rule) in enumerate(self.aggregation.items()):
                order.append(m)
                if rule != "none":
                    df[inc_name(m)] = inc[:, j]
                    order.append(inc_name(m))
            self._cache["data"] = df[order]
        return self._cache["data"]

    @property
    def rows(self) -> pd.DataFrame:
        """Deprecated name of :attr:`exclusive_rows`."""
        _renamed("rows", "exclusive_rows")
        return self.exclusive_rows

    @property
    def data(self) -> pd.DataFrame:
        """Deprecated name of :attr:`long_table`."""
        _renamed("data", "long_table")
        return self.long_table

    def __repr__(self) -> str:
        cols = list(self._profiles.columns)
        return (
            f"<cctviz.Ensemble: {self.n_profiles} profiles x {len(self._tree)} nodes, "
            f"{len(self._rows)} rows, metrics {self.exc_metrics}, profile columns {cols}>"
        )

    # IPython prefers a class's own __repr__ to an inherited _repr_pretty_
    _repr_pretty_ = BaseEnsemble._repr_pretty_

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Ensemble):
            return NotImplemented
        return (
            self._tree.nodes.equals(other._tree.nodes)
            and self._rows.equals(other._rows)
            and self._profiles.equals(other._profiles)
            and self._meta == other._meta
        )

    __hash__ = None  # type: ignore[assignment]

    # ------------------------------------------------------------- inclusive
    def _inclusive_rows(self) -> np.ndarray:
        r = self._rows
        return inclusive_rows(
            self._tree.parent,
            self._tree.depth,
            r["node"].to_numpy(),
            r["profile"].to_numpy(),
            r[self.exc_metrics].to_numpy(dtype=np.float64),
            list(self.aggregation.values()),
        )

    def values(self, metric: str) -> np.ndarray:
        """Dense (nodes x profiles) matrix of one metric; absent = 0 for a
        ``"sum"`` metric, NaN otherwise.

        Meant for small ensembles and plots; statistics use :meth:`stats`.
        An inclusive sum is accumulated up the tree on the dense matrix
        (level by level, without building the long inclusive table); the
        result is cached, so do not write into it.
        """
        base, inclusive = base_metric(metric)
        fill = 0.0 if self._tree.rule(metric) == "sum" else np.nan
        cache = self._cache.setdefault("values", {})
        if metric in cache:
            return cache[metric]
        node = self._rows["node"].to_numpy()
        prof = self._rows["profile"].to_numpy()
        if inclusive and base in self._rows.columns and self.aggregation.get(base) == "sum":
            own = np.zeros((len(self._tree), self.n_profiles))
            own[node, prof] = self._rows[base].to_numpy(dtype=np.float64)
            out = accumulate_up(own, self._tree.parent, self._tree.levels)
        else:
            out = np.full((len(self._tree), self.n_profiles), fill)
            out[node, prof] = self.long_table[metric].to_numpy()
        out.setflags(write=False)
        cache[metric] = out
        return out

    def group_sums(self, metric: str, group: np.ndarray, n_groups: int) -> np.ndarray:
        vals = self.values(metric)
        at = np.flatnonzero(group >= 0)
        out = np.zeros((n_groups, self.n_profiles))
        np.add.at(out, group[at], np.nan_to_num(vals[at]))
        recorded = np.zeros(vals.shape, dtype=bool)
        recorded[self._rows["node"].to_numpy(), self._rows["profile"].to_numpy()] = True
        seen = np.zeros(out.shape, dtype=bool)
        np.logical_or.at(seen, group[at], recorded[at])
        out[~seen] = np.nan
        return out

    def live_mean(self, metric: str) -> np.ndarray:
        live = self.live
        if not live.any():
            return np.zeros(len(self._tree))
        return np.nan_to_num(self.values(metric)[:, live]).mean(axis=1)

    # ------------------------------------------------------------- statistics
    def _stats_table(self, metric: str, missing: str) -> pd.DataFrame:
        return node_stats(
            self._rows["node"].to_numpy(),
            self._rows["profile"].to_numpy(),
            self.long_table[metric].to_numpy(dtype=np.float64),
            len(self._tree),
            live=self.live,
            run=self.absence_groups,
            rule=self._tree.rule(metric),
            missing=missing,
        )

    # ------------------------------------------------------------- profiles
    def select(self, which: Any) -> Ensemble:
        """A new ensemble of some profiles (ids, a boolean mask, or a callable on :attr:`profiles`).

        The unified tree is kept whole, so node ids stay comparable. A profile
        chosen twice is two profiles of the new ensemble, each with its rows.

        Example:
            >>> import cctviz
            >>> a = cctviz.Tree.from_parents([-1], ["main"], {"time": [1.0]})
            >>> b = cctviz.Tree.from_parents([-1], ["main"], {"time": [2.0]})
            >>> cctviz.Ensemble.concat([a, b]).select([1, 0, 1]).values("time").tolist()
            [[2.0, 1.0, 2.0]]
        """
        ids = profile_ids(which, self._profiles)
        order = np.argsort(ids, kind="stable")
        chosen = ids[order]
        r = self._rows
        old = r["profile"].to_numpy()
        lo, hi = np.searchsorted(chosen, old, "left"), np.searchsorted(chosen, old, "right")
        rows = r.iloc[np.repeat(np.arange(old.size), hi - lo)].reset_index(drop=True)
        rows["profile"] = order[_expand(lo, hi - lo)]  # one copy per time chosen
        prof = self._profiles.iloc[ids].reset_index(drop=True)
        structure = Tree(self._tree.nodes.copy(), None, self._tree.meta, _trusted=True)
        return Ensemble(structure, rows, prof, self._meta)

    def profile(self, which: int | None = None, **match: Any) -> Tree:
        """One profile as a Tree: by id, or by metadata (``ens.profile(rank=3)``)."""
        which = profile_id(self._profiles, which, match)
        r = self._rows[self._rows["profile"].to_numpy() == which]
        return profile_tree(self._tree, r, self.exc_metrics, self._profiles.iloc[which])

    # ------------------------------------------------------------- facade
    def remapped(self, nodes: pd.DataFrame, mapping: np.ndarray) -> Ensemble:
        """The same profiles over a new tree (``nodes``, pre-ordered), each node of
        this one going to ``mapping[node]`` (-1: dropped; rows meeting on one node
        combine by each metric's rule): what filter, prune and focus build on."""
        r = self.exclusive_rows
        newnode = mapping[r["node"].to_numpy()]
        keep = newnode >= 0
        rows = r[keep].copy()
        rows["node"] = newnode[keep]
        structure = Tree(nodes, None, None, _trusted=True)
        return Ensemble(structure, rows, self._profiles.copy(), self._meta)

    def save(self, path: str, **kw: Any) -> None:
        from ..writers import write

        write(self, path, **kw)

    def to_dataset(self, path: str | os.PathLike, **kw: Any) -> Path:
        """Write this ensemble as a dataset on disk (a folder of Parquet tables),
        which :func:`cctviz.open_dataset` computes on out of core; options as
        :func:`cctviz.dataset.write_dataset`.

        Example:
            >>> import cctviz, tempfile
            >>> t = cctviz.Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 2.0]})
            >>> ens = cctviz.Ensemble.from_trees([t, t])
            >>> d = ens.to_dataset(tempfile.mkdtemp() + "/ens")
            >>> sorted(p.name for p in d.iterdir())
            ['_COMPLETE', 'manifest.json', 'nodes.parquet', 'profiles.parquet', 'rows']
        """
        from ..dataset import write_dataset

        return write_dataset(self, path, **kw)


# ------------------------------------------------------------------ helpers
def run_ids(profiles: pd.DataFrame) -> np.ndarray:
    """Run of every profile (integers) from a profiles table's ``run`` column; all 0
    without one (see :attr:`Ensemble.run_ids`).

    Example:
        >>> run_ids(pd.DataFrame({"run": ["b", "a", "b"]})).tolist()
        [0, 1, 0]
    """
    if "run" not in profiles.columns:
        return np.zeros(len(profiles), dtype=np.int64)
    codes, _ = pd.factorize(profiles["run"], use_na_sentinel=False)
    return codes.astype(np.int64)


def absence_groups(profiles: pd.DataFrame) -> np.ndarray:
    """Per profile, its group under the absence rule: run, and component within a
    run (see :attr:`Ensemble.absence_groups`).

    Example:
        >>> absence_groups(pd.DataFrame({"component": ["sim", "train", "sim"]})).tolist()
        [0, 1, 0]
    """
    if "component" not in profiles.columns:
        return run_ids(profiles)
    key = pd.MultiIndex.from_arrays([run_ids(profiles), profiles["component"].astype(str)])
    codes, _ = pd.factorize(key)
    return codes.astype(np.int64)


def profile_ids(which: Any, profiles: pd.DataFrame) -> np.ndarray:
    """Profile ids from what :meth:`Ensemble.select` takes: ids, a boolean mask,
    or a callable on the profiles table.

    Example:
        >>> profile_ids(lambda p: p["rank"] > 0, pd.DataFrame({"rank": [0, 1, 2]})).tolist()
        [1, 2]
    """
    if callable(which):
        which = which(profiles)
    arr = np.asarray(which)
    if arr.dtype == bool:
        return np.flatnonzero(arr)
    return np.asarray(arr, dtype=np.int64).reshape(-1)


def profile_id(profiles: pd.DataFrame, which: int | None, match: Mapping[str, Any]) -> int:
    """The one profile :meth:`Ensemble.profile` names: by id, or by metadata.

    Example:
        >>> profile_id(pd.DataFrame({"rank": [0, 3]}), None, {"rank": 3})
        1
    """
    n = len(profiles)
    if which is None:
        sel = np.ones(n, dtype=bool)
        for k, v in match.items():
            sel &= (profiles[k] == v).to_numpy()
        hits = np.flatnonzero(sel)
        if hits.size != 1:
            raise KeyError(f"{hits.size} profiles match {match}; need exactly one")
        which = int(hits[0])
    which = int(which)
    if not 0 <= which < n:
        raise IndexError(f"profile {which} out of range [0, {n})")
    return which


def profile_tree(tree: Tree, rows: pd.DataFrame, metrics: list[str], about: pd.Series) -> Tree:
    """One profile's Tree: the unified ``tree``'s nodes that ``rows`` (that
    profile's exclusive rows) name, with their values; ``about`` is its row of
    the profiles table (kept in ``meta["profile"]``).

    Example:
        >>> t = Tree.from_parents([-1, 0, 0], ["main", "a", "b"], {"time": [1.0, 2.0, 3.0]})
        >>> rows = pd.DataFrame({"node": [0, 2], "profile": [0, 0], "time": [1.0, 3.0]})
        >>> profile_tree(t, rows, ["time"], pd.Series({"rank": 0})).names.tolist()
        ['main', 'b']
    """
    present = np.zeros(len(tree), dtype=bool)
    present[rows["node"].to_numpy()] = True
    newid = np.cumsum(present) - 1
    nodes = tree.nodes[present].copy()
    par = nodes["parent"].to_numpy()
    nodes["parent"] = np.where(par >= 0, newid[np.maximum(par, 0)], -1)
    values = pd.DataFrame(0.0, index=range(int(present.sum())), columns=metrics)
    values.iloc[newid[rows["node"].to_numpy()]] = rows[metrics].to_numpy()
    meta = {**tree.meta, "profile": about.to_dict()}
    return Tree(nodes, values, meta, _trusted=True)


def _formatted(st: pd.DataFrame) -> pd.DataFrame:
    """A statistics table as text: values with units, imbalance as a ratio."""
    unit = st.attrs.get("unit")
    out = st.copy()
    for col in IN_METRIC_UNIT:
        out[col] = [_units.format_value(v, unit) for v in st[col].to_numpy()]
    out["imbalance"] = [
        "n/a" if not np.isfinite(v) else f"{v:.3g}\u00d7" for v in st["imbalance"].to_numpy()
    ]
    return out


def _renamed(old: str, new: str) -> None:
    warnings.warn(
        f"Ensemble.{old} is renamed Ensemble.{new}; the old name is removed in 0.3.0",
        DeprecationWarning,
        stacklevel=3,
    )


def _reconcile_units(
    trees: Sequence[Tree], metrics: list[str]
) -> tuple[dict[str, str], list[dict[str, float]]]:
    """One unit per metric over ``trees`` (the finest of those stated) and, per
    tree, the factor that converts its values; ProfileError where impossible."""
    units: dict[str, str] = {}
    scale: list[dict[str, float]] = [{} for _ in trees]
    for m in metrics:
        stated = [_units.canonical(t.units.get(m)) for t in trees if m in t.exc_metrics]
        known = [u for u in stated if u]
        if not known:
            continue
        only_assumed = all(
            m in t.meta.get("units_assumed", {}) for t in trees if _units.canonical(t.units.get(m))
        )
        if len(known) < len(stated) and only_assumed:
            # a reader guessed the unit for some profiles and could not for others: the guess
            # is not evidence enough for all of them
            warnings.warn(
                f"metric {m!r}: its unit was assumed ({sorted(set(known))}) for only some "
                "profiles and is unknown for the others; the ensemble leaves it unknown",
                stacklevel=3,
            )
            continue
        if len(known) < len(stated) and _units.dimension(known[0]):
            src = next(
                t.meta.get("source", f"profile {k}")
                for k, t in enumerate(trees)
                if m in t.exc_metrics and not _units.canonical(t.units.get(m))
            )
            raise ProfileError(
                None,
                f"metric {m!r} is in {known[0]!r} in some profiles and has no unit in "
                f"{src!r}; give it one (tree.add_metric(..., unit=) or meta['units'])",
            )
        target = _units.finest(known)
        if len(set(known)) > 1:  # converting a unit a reader only assumed could be off by 1e6
            guessed = [
                (t.meta.get("source", f"profile {k}"), t.units.get(m))
                for k, t in enumerate(trees)
                if m in t.meta.get("units_assumed", {})
            ]
            if guessed:
                raise ProfileError(
                    None,
                    f"metric {m!r} is in {sorted(set(known))} in these profiles, and the unit "
                    f"of {guessed[0][0]!r} ({guessed[0][1]!r}) was assumed, not stated: "
                    "state the units (meta['units']) before composing them",
                )
        for k, t in enumerate(trees):
            u = _units.canonical(t.units.get(m))
            if u and u != target:
                try:
                    scale[k][m] = _units.factor(u, target)
                except ValueError:
                    raise ProfileError(
                        t.meta.get("source"),
                        f"metric {m!r} is in {u!r} here but in {target!r} in other profiles; "
                        "they cannot be converted",
                    ) from None
        units[m] = target  # type: ignore[assignment]
    return units, scale


def _reconcile_rules(trees: Sequence[Tree], metrics: list[str]) -> dict[str, str]:
    rules: dict[str, str] = {}
    for m in metrics:
        seen = {t.aggregation[m] for t in trees if m in t.exc_metrics}
        demoted = [t for t in trees if m in t.meta.get("aggregation_notes", {})]
        if len(seen) == 2 and "none" in seen and demoted:
            # some trees' values could not keep their rule (Tree._with_inclusive): per-node
            # values for all, so that the ranks of one job read alike compose
            rules[m] = "none"
            continue
        if len(seen) > 1:
            raise ProfileError(
                None,
                f"metric {m!r} has different aggregation rules in the profiles: "
                f"{sorted(seen)}; set one with tree.with_aggregation()",
            )
        rules[m] = seen.pop() if seen else "sum"
    return rules


def inclusive_rows(
    parent: np.ndarray,
    depth: np.ndarray,
    node: np.ndarray,
    profile: np.ndarray,
    values: np.ndarray,
    rules: str | Sequence[str] = "sum",
) -> np.ndarray:
    """The inclusive values of (node, profile) rows: each row combined, by each
    metric's rule (:func:`~cctviz.model._algo.accumulate_up`), with the rows of the
    same profile below it in the tree (``parent``, ``depth`` of each node). The rows
    are one per (node, profile) and closed under ancestors, as an :class:`Ensemble`
    holds them, in any order (the result is in theirs); ``values`` is rows x
    metrics.

    Example:
        >>> inclusive_rows(np.array([-1, 0]), np.array([0, 1]), np.array([0, 0, 1]), np.array([0, 1, 1]),
        ...                np.array([[1.0], [2.0], [3.0]])).ravel().tolist()
        [1.0, 5.0, 3.0]
    """
    node = np.asarray(node, dtype=np.int64)
    profile = np.asarray(profile, dtype=np.int64)
    span = int(profile.max(initial=0)) + 1
    key = node * span + profile
    if (key[1:] < key[:-1]).any():  # sorted first: the searches and sums run in order
        order = np.argsort(key)
        out = np.empty_like(np.asarray(values, dtype=np.float64))
        out[order] = inclusive_rows(
            parent, depth, node[order], profile[order], values[order], rules
        )
        return out
    par = parent[node]
    pkey = np.where(par >= 0, par * span + profile, -1)
    prow = np.where(pkey >= 0, np.searchsorted(key, np.maximum(pkey, 0)), -1)
    # a row's level is its node's depth (its parent row is its parent node's)
    row_depth = depth[node]
    order = stable_order(row_depth)
    bounds = np.cumsum(np.bincount(row_depth))
    levels = np.split(order, bounds[:-1]) if node.size else []
    return accumulate_up(values, prow, levels, rules)


def _node_means(
    rows: pd.DataFrame, metrics: list[str], n_nodes: int, live: np.ndarray, rules: dict[str, str]
) -> np.ndarray:
    """Per node: the mean of the live profiles' own values (absent = 0 for sums).
    ``rows``: normalised (sorted by node), so each node's rows are one segment."""
    sums = _sums(metrics, rules)
    # a node without rows: 0 for sums (every live profile absent), else NaN
    out = np.where(sums, 0.0, np.nan) * np.ones((n_nodes, 1))
    node = rows["node"].to_numpy()
    if not node.size or not metrics:
        return out
    n_live = max(int(live.sum()), 1)  # a profile with rows is live (``live``)
    starts = np.flatnonzero(np.r_[True, node[1:] != node[:-1]])
    at = node[starts]
    n_rows = np.diff(np.r_[starts, node.size])
    for j, m in enumerate(metrics):  # a column at a time: each is contiguous
        v = rows[m].to_numpy(dtype=np.float64)
        has = ~np.isnan(v)  # a NaN was not measured: left out
        # bincount sums each node's values in row order, as node_stats does: the
        # same mean to the last bit (reduceat would sum pairwise)
        if has.all():
            total, n_has = np.bincount(node, weights=v, minlength=n_nodes)[at], n_rows
        else:  # only the rows with a value (a sum that skips a NaN's 0.0 is the same sum)
            idx = np.flatnonzero(has)
            of = node[idx]
            total = np.bincount(of, weights=v[idx], minlength=n_nodes)[at]
            n_has = np.bincount(of, minlength=n_nodes)[at]
        # sums: over the live profiles, absent = 0; the others: the profiles with a value
        count = n_live - (n_rows - n_has) if sums[j] else n_has
        with np.errstate(invalid="ignore", divide="ignore"):
            out[at, j] = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return out


def _sums(metrics: list[str], rules: dict[str, str]) -> np.ndarray:
    """Per metric: whether its rule is a sum."""
    return np.array([rules[m] == "sum" for m in metrics], dtype=bool)


def _absent(have: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The distinct ``keys`` (sorted) that the sorted array ``have`` lacks."""
    if not keys.size:
        return keys
    at = np.minimum(np.searchsorted(have, keys), max(have.size - 1, 0))
    lacking = keys if not have.size else keys[have[at] != keys]
    return sorted_unique(lacking)


def _sorted_columns(
    rows: pd.DataFrame, metrics: list[str], at: np.ndarray, own: bool = False
) -> np.ndarray:
    """The metric columns of ``rows`` as one matrix (column-major, as pandas keeps
    a frame's floats), row ``i`` moved to ``at[i]`` (a permutation). ``own``:
    rows already in place whose columns are one matrix are that matrix."""
    n = at.size
    order = inverse_permutation(at)
    moved = not (n < 2 or bool((np.diff(order) == 1).all()))
    if own and not moved and metrics:
        block = _matrix_of([rows[m].to_numpy(dtype=np.float64) for m in metrics])
        if block is not None:
            return block
    out = np.empty((n, len(metrics)), order="F")
    for j, m in enumerate(metrics):
        col = rows[m].to_numpy(dtype=np.float64)
        if moved:
            np.take(col, order, out=out[:, j])
        else:
            out[:, j] = col
    return out


def _matrix_of(cols: list[np.ndarray]) -> np.ndarray | None:
    """The column-major float matrix whose columns ``cols`` are, one after the
    other, or None where they are not.

    >>> m = np.zeros((4, 2), order="F")
    >>> _matrix_of([m[:, 0], m[:, 1]]) is m, _matrix_of([m[:, 1], m[:, 0]])
    (True, None)
    """
    base = cols[0]
    while isinstance(base.base, np.ndarray):
        base = base.base
    n = cols[0].size
    if not (
        base.dtype == np.float64
        and base.flags.f_contiguous
        and base.shape == (n, len(cols))
        and all(c.strides == (8,) or n < 2 for c in cols)
    ):
        return None
    at = base.__array_interface__["data"][0]
    ok = all(c.__array_interface__["data"][0] == at + 8 * n * j for j, c in enumerate(cols))
    return base if ok else None


def _normalise_rows(
    tree: Tree,
    rows: pd.DataFrame,
    metrics: list[str],
    n_prof: int,
    rules: dict[str, str],
    own: bool = False,
) -> pd.DataFrame:
    """Combine duplicate (node, profile) rows by each metric's rule, add rows for
    missing ancestors (0 for sums, NaN otherwise), sort (``own``: the rows'
    arrays may be kept, :func:`_sorted_columns`)."""
    node = rows["node"].to_numpy(dtype=np.int64)
    prof = rows["profile"].to_numpy(dtype=np.int64)
    if node.size and (node.min() < 0 or node.max() >= len(tree)):
        raise ValueError("rows name nodes outside the tree")
    P = max(n_prof, 1)
    key = node * P + prof
    parent = tree.parent
    # ancestor closure: every row's parent row must exist. The parents of all
    # given rows are checked once; after that only rows just added need checking.
    keys = [key]
    uniq, inv = sorted_unique(key, return_inverse=True)
    have = frontier = uniq
    while frontier.size:
        par = parent[frontier // P]
        new = _absent(have, par[par >= 0] * P + (frontier % P)[par >= 0])
        if new.size:
            keys.append(new)
            have = sorted_unique(np.concatenate([have, new]))
        frontier = new
    if len(keys) > 1:  # ancestors' rows added
        uniq, inv = sorted_unique(np.concatenate(keys), return_inverse=True)
    inv = inv.reshape(-1)
    if len(keys) == 1 and uniq.size == key.size:  # a row per (node, profile), all given
        combined, conflicts = _sorted_columns(rows, metrics, inv, own), [0] * len(metrics)
    else:
        vals = np.empty((key.size, len(metrics)), order="F")  # a column at a time, as pandas
        for j, m in enumerate(metrics):
            vals[:, j] = rows[m].to_numpy(dtype=np.float64)
        combined, conflicts = combine_rows(
            vals, inv[: key.size], uniq.size, [rules.get(m, "sum") for m in metrics]
        )
    out = pd.DataFrame(combined, columns=metrics, copy=False)
    out.insert(0, "profile", uniq % P)
    out.insert(0, "node", uniq // P)
    for j, m in enumerate(metrics):
        if conflicts[j]:
            warnings.warn(
                f"metric {m!r} (aggregation 'none') has different values for one call path "
                f"of one profile in {conflicts[j]} places; those are NaN",
                stacklevel=4,
            )
    return out


__all__ = ["Ensemble"]
