"""Ensembles: many profiles (ranks, runs) over one unified tree.

Storage is a long table of (node, profile) rows with exclusive metrics: no
NaN padding for nodes a profile never entered. Statistics count a profile
without a row for a node as 0 there (a rank that never called MPI_Bcast spent
no time in it); ``missing="skip"`` leaves such profiles out instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._algo import accumulate_up, level_order, sorted_unique
from .tree import Tree, inc_name
from .unify import unify_structures


class Ensemble:
    """Profiles of many ranks and/or runs over one unified calling-context tree.

    Attributes:
        tree: the unified :class:`Tree`; its metrics are the mean over profiles.
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
    ) -> None:
        """Wrap a unified tree structure and a long table.

        ``rows`` has integer columns ``node`` and ``profile`` and one column per
        exclusive metric. Rows are summed per (node, profile), completed with
        zero rows for missing ancestors, and sorted.
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
        self._profiles = profiles
        self._meta = dict(meta or {})
        self._cache: dict[str, Any] = {}
        self._rows = _normalise_rows(tree, rows, metrics, len(profiles))
        mean = _node_sums(self._rows, metrics, len(tree)) / max(len(profiles), 1)
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
        """
        items = list(items)
        if not items:
            raise ValueError("an ensemble needs at least one profile")
        structures = [it.tree if isinstance(it, Ensemble) else it for it in items]
        unified, maps = unify_structures(structures)
        metrics: list[str] = []
        units: dict[str, str] = {}
        for it in items:
            metrics += [m for m in it.exc_metrics if m not in metrics]
            units.update((it.tree if isinstance(it, Ensemble) else it).units)
        parts: list[pd.DataFrame] = []
        prof_parts: list[pd.DataFrame] = []
        off = 0
        for k, (it, mp) in enumerate(zip(items, maps)):
            ex = dict(extra[k]) if extra is not None else {}
            if isinstance(it, Ensemble):
                r = it.rows
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
                df[m] = src[m].to_numpy(dtype=np.float64) if m in src else 0.0
            parts.append(df)
            prof_parts.append(pr)
        rows = pd.concat(parts, ignore_index=True)
        prof = pd.concat(prof_parts, ignore_index=True)
        m = dict(meta or {})
        if units:
            m.setdefault("units", units)
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
    def inc_metrics(self) -> list[str]:
        return [inc_name(c) for c in self.exc_metrics]

    @property
    def rows(self) -> pd.DataFrame:
        """The stored long table: ``node``, ``profile`` and exclusive metrics."""
        return self._rows

    @property
    def data(self) -> pd.DataFrame:
        """Long table indexed by (node, profile) with exclusive and inclusive metrics."""
        if "data" not in self._cache:
            inc = self._inclusive_rows()
            df = self._rows.set_index(["node", "profile"])
            for j, m in enumerate(self.exc_metrics):
                df[inc_name(m)] = inc[:, j]
            order = [x for m in self.exc_metrics for x in (m, inc_name(m))]
            self._cache["data"] = df[order]
        return self._cache["data"]

    def __len__(self) -> int:
        return len(self._profiles)

    @property
    def n_profiles(self) -> int:
        return len(self._profiles)

    def __repr__(self) -> str:
        cols = list(self._profiles.columns)
        return (
            f"<cctviz.Ensemble: {self.n_profiles} profiles x {len(self._tree)} nodes, "
            f"{len(self._rows)} rows, metrics {self.exc_metrics}, profile columns {cols}>"
        )

    def __str__(self) -> str:
        return self.render()

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
        n_prof = max(self.n_profiles, 1)
        node = r["node"].to_numpy()
        key = node * n_prof + r["profile"].to_numpy()  # sorted by construction
        par = self._tree.parent[node]
        pkey = np.where(par >= 0, par * n_prof + r["profile"].to_numpy(), -1)
        prow = np.where(pkey >= 0, np.searchsorted(key, np.maximum(pkey, 0)), -1)
        _, levels = level_order(prow)
        vals = r[self.exc_metrics].to_numpy(dtype=np.float64)
        return accumulate_up(vals, prow, levels)

    def values(self, metric: str) -> np.ndarray:
        """Dense (nodes x profiles) matrix of one metric, absent = 0.

        Meant for small ensembles and plots; statistics use :meth:`stats`.
        """
        col = self.data[metric].to_numpy()
        out = np.zeros((len(self._tree), self.n_profiles))
        out[self._rows["node"].to_numpy(), self._rows["profile"].to_numpy()] = col
        return out

    # ------------------------------------------------------------- statistics
    def stats(self, metric: str | None = None, *, missing: str = "zero") -> pd.DataFrame:
        """Per-node statistics of ``metric`` over profiles.

        Columns: mean, std (ddof=1), min, q25, median, q75, max,
        imbalance (max/mean), argmax (profile with the max; -1 when a profile
        without the node holds it), count (profiles with a row). Vectorised:
        quantiles are read off one sort of the long table, with the implicit
        zeros of absent profiles placed by rank, not materialised.

        Args:
            metric: a column of :attr:`data`; default the first inclusive metric.
            missing: ``"zero"`` (absent profile counts as 0) or ``"skip"``.
        """
        if metric is None:
            metric = self._tree.metric_column(None)
        if missing not in ("zero", "skip"):
            raise ValueError("missing must be 'zero' or 'skip'")
        key = (metric, missing)
        cache = self._cache.setdefault("stats", {})
        if key not in cache:
            cache[key] = _stats(
                self.data[metric].to_numpy(dtype=np.float64),
                self._rows["node"].to_numpy(),
                self._rows["profile"].to_numpy(),
                len(self._tree),
                self.n_profiles,
                missing == "zero",
            )
            cache[key].insert(0, "name", self._tree.names)
        return cache[key]

    # ------------------------------------------------------------- profiles
    def select(self, which: Any) -> Ensemble:
        """A new ensemble of some profiles (ids, a boolean mask, or a callable on :attr:`profiles`).

        The unified tree is kept whole, so node ids stay comparable.
        """
        if callable(which):
            which = which(self._profiles)
        arr = np.asarray(which)
        ids = (
            np.flatnonzero(arr)
            if arr.dtype == bool
            else np.asarray(arr, dtype=np.int64).reshape(-1)
        )
        newid = np.full(self.n_profiles, -1, dtype=np.int64)
        newid[ids] = np.arange(ids.size)
        r = self._rows
        keep = newid[r["profile"].to_numpy()] >= 0
        rows = r[keep].copy()
        rows["profile"] = newid[rows["profile"].to_numpy()]
        prof = self._profiles.iloc[ids].reset_index(drop=True)
        structure = Tree(self._tree.nodes.copy(), None, self._tree.meta, _trusted=True)
        return Ensemble(structure, rows, prof, self._meta)

    def groupby(self, by: str | Sequence[str]) -> dict[Any, Ensemble]:
        """Split profiles by metadata column(s): ``{value: Ensemble}``."""
        groups = self._profiles.groupby(by, sort=True, dropna=False).indices
        return {k: self.select(np.sort(v)) for k, v in groups.items()}

    def profile(self, which: int | None = None, **match: Any) -> Tree:
        """One profile as a Tree: by id, or by metadata (``ens.profile(rank=3)``)."""
        if which is None:
            sel = np.ones(self.n_profiles, dtype=bool)
            for k, v in match.items():
                sel &= (self._profiles[k] == v).to_numpy()
            hits = np.flatnonzero(sel)
            if hits.size != 1:
                raise KeyError(f"{hits.size} profiles match {match}; need exactly one")
            which = int(hits[0])
        which = int(which)
        if not 0 <= which < self.n_profiles:
            raise IndexError(f"profile {which} out of range [0, {self.n_profiles})")
        r = self._rows[self._rows["profile"].to_numpy() == which]
        present = np.zeros(len(self._tree), dtype=bool)
        present[r["node"].to_numpy()] = True
        newid = np.cumsum(present) - 1
        nodes = self._tree.nodes[present].copy()
        par = nodes["parent"].to_numpy()
        nodes["parent"] = np.where(par >= 0, newid[np.maximum(par, 0)], -1)
        metrics = pd.DataFrame(0.0, index=range(int(present.sum())), columns=self.exc_metrics)
        metrics.iloc[newid[r["node"].to_numpy()]] = r[self.exc_metrics].to_numpy()
        meta = {**self._tree.meta, "profile": self._profiles.iloc[which].to_dict()}
        return Tree(nodes, metrics, meta)

    def trees(self) -> Iterable[Tree]:
        for p in range(self.n_profiles):
            yield self.profile(p)

    # ------------------------------------------------------------- facade
    def query(self, query: Any):
        """Query the unified tree (metrics are means over profiles)."""
        return self._tree.query(query)

    def filter(self, keep: Any) -> Ensemble:
        from ..ops.transform import filter_tree

        return filter_tree(self, keep)

    def prune(self, metric: str | None = None, **kw: Any) -> Ensemble:
        from ..ops.transform import prune

        return prune(self, metric, **kw)

    def focus(self, node: Any) -> Ensemble:
        from ..ops.transform import focus

        return focus(self, node)

    def render(self, metric: str | None = None, **kw: Any) -> str:
        """Text tree of the mean, with the spread over profiles."""
        from ..ops.text import render

        return render(self, metric, **kw)

    def save(self, path: str, **kw: Any) -> None:
        from ..writers import write

        write(self, path, **kw)


# ------------------------------------------------------------------ helpers
def _node_sums(rows: pd.DataFrame, metrics: list[str], n_nodes: int) -> np.ndarray:
    out = np.zeros((n_nodes, len(metrics)))
    node = rows["node"].to_numpy()
    for j, m in enumerate(metrics):
        out[:, j] = np.bincount(node, weights=rows[m].to_numpy(dtype=np.float64), minlength=n_nodes)
    return out


def _normalise_rows(
    tree: Tree, rows: pd.DataFrame, metrics: list[str], n_prof: int
) -> pd.DataFrame:
    """Sum duplicate (node, profile) rows, add zero rows for missing ancestors, sort."""
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
    have = sorted_unique(key)
    frontier = have
    while frontier.size:
        par = parent[frontier // P]
        up = sorted_unique(par[par >= 0] * P + (frontier % P)[par >= 0])
        new = up[~np.isin(up, have, assume_unique=True)]
        if new.size:
            keys.append(new)
            have = sorted_unique(np.concatenate([have, new]))
        frontier = new
    vals = rows[metrics].to_numpy(dtype=np.float64) if metrics else np.zeros((len(rows), 0))
    allkey = np.concatenate(keys)
    allvals = np.vstack([vals, np.zeros((allkey.size - key.size, len(metrics)))])
    uniq, inv = sorted_unique(allkey, return_inverse=True)
    summed = np.zeros((uniq.size, len(metrics)))
    np.add.at(summed, inv.reshape(-1), allvals)
    out = pd.DataFrame({"node": uniq // P, "profile": uniq % P})
    for j, m in enumerate(metrics):
        out[m] = summed[:, j]
    return out


def _stats(
    vals: np.ndarray, node: np.ndarray, prof: np.ndarray, n: int, P: int, zeros: bool
) -> pd.DataFrame:
    m = np.bincount(node, minlength=n).astype(np.int64)
    z = (P - m) if zeros else np.zeros(n, dtype=np.int64)
    N = m + z
    with np.errstate(invalid="ignore", divide="ignore"):
        total = np.bincount(node, weights=vals, minlength=n)
        mean = total / N
        dev = vals - mean[node]
        ss = np.bincount(node, weights=dev * dev, minlength=n) + z * mean**2
        std = np.sqrt(ss / (N - 1))
        std[N < 2] = np.nan
    # one sort of the long table: by node, then value
    order = np.lexsort((vals, node))
    sv = vals[order]
    start = np.concatenate(([0], np.cumsum(m)[:-1]))
    neg = np.bincount(node, weights=(vals < 0).astype(np.float64), minlength=n).astype(np.int64)

    def at_rank(r: np.ndarray) -> np.ndarray:
        r = np.asarray(r, dtype=np.int64)
        idx = np.where(r < neg, r, r - z)
        use_zero = (r >= neg) & (r < neg + z)
        got = sv[np.clip(start + idx, 0, max(sv.size - 1, 0))] if sv.size else np.zeros(n)
        return np.where(use_zero, 0.0, got)

    def quantile(q: float) -> np.ndarray:
        h = q * (N - 1)
        lo = np.floor(h).astype(np.int64)
        hi = np.minimum(lo + 1, N - 1)
        vlo, vhi = at_rank(lo), at_rank(hi)
        out = vlo + (h - lo) * (vhi - vlo)
        out[N == 0] = np.nan
        return out

    mn, mx = quantile(0.0), quantile(1.0)
    # argmax: the profile holding the largest present value (last in sort order)
    last = start + m - 1
    argmax = (
        np.where(m > 0, prof[order][np.clip(last, 0, max(sv.size - 1, 0))], -1)
        if sv.size
        else np.full(n, -1)
    )
    present_max = np.where(
        m > 0, sv[np.clip(last, 0, max(sv.size - 1, 0))] if sv.size else 0.0, -np.inf
    )
    argmax = np.where((z > 0) & (present_max < 0), -1, argmax)
    with np.errstate(invalid="ignore", divide="ignore"):
        imb = np.where(mean != 0, mx / mean, np.nan)
    df = pd.DataFrame(
        {
            "mean": mean,
            "std": std,
            "min": mn,
            "q25": quantile(0.25),
            "median": quantile(0.5),
            "q75": quantile(0.75),
            "max": mx,
            "imbalance": imb,
            "argmax": argmax.astype(np.int64),
            "count": m,
        }
    )
    df.index.name = "node"
    return df


__all__ = ["Ensemble"]
