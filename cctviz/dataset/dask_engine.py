"""A dataset's statistics on a Dask cluster: what ``open_dataset(dir, client=...)`` computes.

:class:`DaskEngine` answers the questions the DuckDB engine of
:class:`~cctviz.dataset.DatasetEnsemble` answers in SQL, with the model's rules:
the per-node sums of a statistics table (:class:`~cctviz.model.stats.NodeSums`),
the count of the absence rule, ``squares(mean)`` and ``ranked(node, rank)`` for
:func:`~cctviz.model.stats.summary_table`, the mean tree's values, and which
profiles are live after a filter. The rows never come to this process: the workers
read the Parquet parts (``dask.dataframe.read_parquet``, one partition per part
file), and only per-node results come back.

Why one partition per part is enough: a part holds whole profiles (layout:
:mod:`cctviz.dataset.layout`), so everything one (node, profile) value needs, the
rows that a filter or prune maps onto one node, and the rows below a node that its
inclusive value combines, is in one partition. Each partition turns its rows into
the (node, profile, v) values of one metric with numpy (``combine_rows`` for the
node map, the model's ``inclusive_rows`` for inclusive values: by each metric's
rule, as in memory); then

- the sums are partial per (node, absence group) and combined by a tree reduction;
- ``squares`` is a per-node sum over the same values, kept in the workers'
  memory (``persist``) for the length of one statistics table;
- quantiles: the values are shuffled by node (every node's values on one worker,
  the nodes spread over all of them), sorted per node there, and only the ranks
  asked for come back.

The small tables (the selected profiles' dataset ids, groups and live flags, the
node map, every node's parent and depth) are scattered to every worker once per
ensemble.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..model._algo import _expand, combine_rows, sorted_unique
from ..model.ensemble import inclusive_rows
from ..model.stats import NodeSums, summary_table
from ..model.tree import base_metric
from .engine import DatasetEnsemble, _means, _per_node

_SUMS = {"node": "i8", "grp": "i8", "m": "i8", "total": "f8", "neg": "i8"}
_SUMS.update({"vmax": "f8", "arg": "i8", "unk": "i8"})
_VALUES = {"node": "i8", "profile": "i8", "v": "f8", "grp": "i8"}


class DaskEngine:
    """The statistics of one :class:`~cctviz.dataset.DatasetEnsemble` on a Dask cluster.

    Made by the ensemble when it was opened with a ``client``
    (:func:`cctviz.open_dataset`); its ``stats``, mean ``tree`` and ``live`` (after a
    filter) come from here. Everything else a dataset answers (``values``,
    ``profile(i)``, ``to_ensemble``, the views' ``group_sums``) stays on DuckDB.

    Example (it needs a cluster, so it is not run as a doctest;
    ``tests/dataset/test_dask.py`` runs it)::

        from dask.distributed import Client, LocalCluster
        ds = cctviz.open_dataset(folder, client=Client(LocalCluster(2)))
        ds.stats("time (inc)")  # DaskEngine(ds, client).stats_table(...)
    """

    def __init__(self, ds: DatasetEnsemble, client: Any) -> None:
        self._ds = ds
        self._client = client
        self._files = ds._files()
        structure = ds._structure
        ids = np.asarray(ds._ids, dtype=np.int64)
        order = np.argsort(ids, kind="stable")
        small = {
            "ids_sorted": ids[order],  # the dataset ids chosen, sorted ...
            "ids_order": order,  # ... and the profile each is here
            "n_prof": max(ids.size, 1),
            "node_map": ds._node_map,
            "rules": ds.aggregation,
            "parent": structure.parent,
            "depth": structure.depth,
        }
        self._small = self._broadcast(small)

    def _broadcast(self, obj: Any) -> Any:
        """``obj`` sent once to every worker, as an argument for their tasks."""
        import dask

        (future,) = self._client.scatter([obj], broadcast=True, hash=False)
        return dask.delayed(future)

    # ------------------------------------------------------------- reading
    def _raw(self, metrics: list[str]) -> Any:
        """The dataset's rows of these profiles' parts, one partition per part file."""
        import dask.dataframe as dd

        cols = ["node", "profile", *metrics]
        if not self._files:  # no rows at all
            empty = pd.DataFrame(
                {c: np.zeros(0, np.int64 if c in cols[:2] else float) for c in cols}
            )
            return dd.from_pandas(empty, npartitions=1)
        return dd.read_parquet(self._files, columns=cols, split_row_groups=False)

    def _values(self, metric: str) -> Any:
        """(node, profile, v, grp) of the live profiles, one row per recorded
        (node, profile) of this ensemble's tree; NaN = not measured."""
        base, inclusive = base_metric(metric)
        ds = self._ds
        keep = self._broadcast({"live": ds.live, "grp": ds.absence_groups.astype(np.int64)})
        return self._raw([base]).map_partitions(
            _values_part,
            self._small,
            keep,
            base,
            inclusive,
            meta=_VALUES,
            enforce_metadata=False,
        )

    # ------------------------------------------------------------- statistics
    def stats_table(self, metric: str, missing: str) -> pd.DataFrame:
        """The statistics table of ``metric`` (as :meth:`Ensemble.stats` before its
        name and unit are added), every number computed on the cluster."""
        ds = self._ds
        n = len(ds._structure)
        groups = ds.absence_groups.astype(np.int64)
        gsize = np.bincount(groups[ds.live], minlength=int(groups.max(initial=0)) + 1)
        vals = self._values(metric).persist()
        try:
            per = (
                vals.map_partitions(_partial_sums, meta=_SUMS)
                .reduction(
                    _combine_sums,
                    combine=_combine_sums,
                    aggregate=_per_node_sums,
                    aggregate_kwargs={"gsize": gsize},
                    meta={"node": "i8", "m": "i8", "total": "f8", "neg": "i8", "arg": "i8"}
                    | {"pairs": "i8"},
                )
                .compute()
            )
            sums = NodeSums(
                m=_per_node(per, "m", n, 0).astype(np.int64),
                total=_per_node(per, "total", n, 0.0),
                neg=_per_node(per, "neg", n, 0).astype(np.int64),
                argmax=_per_node(per, "arg", n, -1).astype(np.int64),
            )
            count = self.counted(metric, missing, sums.m, _per_node(per, "pairs", n, 0))
            return summary_table(
                sums,
                count,
                squares=lambda mean: self.squares(vals, mean),
                ranked=lambda node, rank: self.ranked(vals, node, rank),
            )
        finally:
            vals = None  # the persisted values leave the workers' memory

    def counted(self, metric: str, missing: str, m: np.ndarray, pairs: np.ndarray) -> np.ndarray:
        """Per node, how many profiles the statistics are over (the absence rule of
        :func:`cctviz.model.stats.node_stats`); ``pairs``: per node, the live profiles
        of the groups that recorded it less those whose value is unknown."""
        if missing == "skip" or self._ds.rule(metric) != "sum":
            return m
        if missing == "zero":
            return np.full(m.size, int(self._ds.live.sum()), dtype=np.int64)
        return pairs.astype(np.int64)

    def squares(self, vals: Any, mean: np.ndarray) -> np.ndarray:
        """Per node, the sum of (v - mean[node])**2 over its counted values."""
        mu = self._broadcast(mean)
        got = (
            vals.map_partitions(_squares_part, mu, meta={"node": "i8", "ss": "f8"})
            .groupby("node")["ss"]
            .sum()
            .compute()
        )
        return _per_node(got.reset_index(), "ss", mean.size, 0.0)

    def ranked(self, vals: Any, node: np.ndarray, rank: np.ndarray) -> np.ndarray:
        """The ``rank``-th smallest counted value of each ``node`` (ties by profile):
        the values shuffled by node, each node's sorted on the worker holding them."""
        want = pd.DataFrame(
            {"node": node.astype(np.int64), "rk": rank.astype(np.int64), "i": np.arange(node.size)}
        )
        want = self._broadcast(want)
        kept = vals[vals["v"].notnull()][["node", "profile", "v"]]
        got = (
            kept.shuffle(on="node")
            .map_partitions(_ranked_part, want, meta={"i": "i8", "v": "f8"})
            .compute()
        )
        out = np.full(node.size, np.nan)
        out[got["i"].to_numpy(dtype=np.int64)] = got["v"].to_numpy(dtype=np.float64)
        return out

    def node_means(self) -> pd.DataFrame:
        """Per node and metric, the mean of the live profiles' own values (absent =
        0 for sums): the values of :attr:`DatasetEnsemble.tree`."""
        ds = self._ds
        n = len(ds._structure)
        metrics = ds.exc_metrics
        if not metrics:
            return pd.DataFrame(index=range(n))
        live = self._broadcast(ds.live)
        meta = {"node": "i8"} | {f"{k}{j}": "f8" for j in range(len(metrics)) for k in "tca"}
        got = (
            self._raw(metrics)
            .map_partitions(_means_part, self._small, live, metrics, meta=meta)
            .groupby("node")
            .sum()
            .compute()
        )
        return _means(got.reset_index(), ds.aggregation, n, int(ds.live.sum()))

    def live(self) -> np.ndarray:
        """Per profile, whether some row of it is kept on this ensemble's tree (after
        a filter or focus, a profile may have none left)."""
        got = (
            self._raw([])
            .map_partitions(_profiles_part, self._small, meta={"profile": "i8"})
            .compute()
        )
        live = np.zeros(self._ds.n_profiles, dtype=bool)
        live[got["profile"].to_numpy(dtype=np.int64)] = True
        return live


# ------------------------------------------------------------------ on the workers
def _here(df: pd.DataFrame, small: dict[str, Any], metrics: list[str]) -> tuple:
    """A partition's rows as (node, profile, values) of this ensemble: each row of
    a chosen dataset profile once per time it was chosen, moved onto this tree's
    nodes (rows meeting on one (node, profile) combined by each metric's rule)."""
    old = df["profile"].to_numpy(dtype=np.int64)
    s = small["ids_sorted"]
    lo, hi = np.searchsorted(s, old, "left"), np.searchsorted(s, old, "right")
    prof = small["ids_order"][_expand(lo, hi - lo)]
    rows = np.repeat(np.arange(old.size), hi - lo)
    node = df["node"].to_numpy(dtype=np.int64)[rows]
    vals = df[metrics].to_numpy(dtype=np.float64)[rows] if metrics else np.zeros((rows.size, 0))
    node_map = small["node_map"]
    if node_map is None:
        return node, prof, vals
    target = node_map[node]
    keep = target >= 0
    rules = [small["rules"][m] for m in metrics]
    return _combined(target[keep], prof[keep], vals[keep], small["n_prof"], rules)


def _combined(node: np.ndarray, prof: np.ndarray, vals: np.ndarray, n_prof: int, rules: list):
    """Rows that meet on one (node, profile) combined by each column's rule."""
    key, at = sorted_unique(node * n_prof + prof, return_inverse=True)
    out, _ = combine_rows(vals, at, key.size, rules)
    return key // n_prof, key % n_prof, out


def _values_part(
    df: pd.DataFrame, small: dict[str, Any], keep: dict[str, Any], base: str, inclusive: bool
) -> pd.DataFrame:
    """One metric's (node, profile, v, grp) values of a partition's live profiles;
    inclusive: every row combined with the rows below it by the metric's rule."""
    node, prof, vals = _here(df, small, [base])
    if inclusive:  # by the model's own inclusive_rows, as in memory and on DuckDB
        vals = inclusive_rows(
            small["parent"], small["depth"], node, prof, vals, [small["rules"][base]]
        )
    ok = keep["live"][prof]
    prof = prof[ok]
    return pd.DataFrame(
        {"node": node[ok], "profile": prof, "v": vals[ok, 0], "grp": keep["grp"][prof]}
    )


def _partial_sums(df: pd.DataFrame) -> pd.DataFrame:
    """Per (node, group) of a partition: count, sum, negatives, the largest value
    and its profile, and how many values are unknown (NaN)."""
    v = df["v"].to_numpy(dtype=np.float64)
    has = ~np.isnan(v)
    out = pd.DataFrame(
        {
            "node": df["node"].to_numpy(dtype=np.int64),
            "grp": df["grp"].to_numpy(dtype=np.int64),
            "m": has.astype(np.int64),
            "total": np.where(has, v, 0.0),
            "neg": (has & (v < 0)).astype(np.int64),
            "vmax": v,
            "arg": df["profile"].to_numpy(dtype=np.int64),
            "unk": (~has).astype(np.int64),
        }
    )
    return _combine_sums(out)


def _combine_sums(df: pd.DataFrame) -> pd.DataFrame:
    """Partial sums of the same (node, group) combined: counts and sums added, the
    largest value kept with its profile (ties: the largest profile, as in memory)."""
    df = df.sort_values(["node", "grp", "vmax", "arg"], na_position="first", kind="stable")
    keys = ["node", "grp"]
    added = df.groupby(keys, sort=True)[["m", "total", "neg", "unk"]].sum()
    top = df.drop_duplicates(keys, keep="last").set_index(keys)[["vmax", "arg"]]
    out = added.join(top).reset_index()
    return out.astype(_SUMS)[list(_SUMS)]


def _per_node_sums(df: pd.DataFrame, gsize: np.ndarray) -> pd.DataFrame:
    """Per node: the sums over its groups, the profile of its largest value, and
    ``pairs``: the live profiles of the groups in which some profile recorded it,
    less those whose value there is unknown (the ``"auto"`` absence rule)."""
    df = _combine_sums(df)
    recorded = df["m"].to_numpy() > 0
    df = df.assign(
        pairs=np.where(recorded, gsize[df["grp"].to_numpy()] - df["unk"].to_numpy(), 0),
        vmax=np.where(recorded, df["vmax"].to_numpy(), np.nan),
    )
    df = df.sort_values(["node", "vmax", "arg"], na_position="first", kind="stable")
    added = df.groupby("node", sort=True)[["m", "total", "neg", "pairs"]].sum()
    top = df.drop_duplicates("node", keep="last").set_index("node")[["arg"]]
    out = added.join(top).reset_index()
    out["arg"] = np.where(out["m"].to_numpy() > 0, out["arg"].to_numpy(), -1)
    return out[["node", "m", "total", "neg", "arg", "pairs"]]


def _squares_part(df: pd.DataFrame, mean: np.ndarray) -> pd.DataFrame:
    """Per node of a partition, the sum of (v - mean[node])**2 over its values."""
    v = df["v"].to_numpy(dtype=np.float64)
    has = ~np.isnan(v)
    node = df["node"].to_numpy(dtype=np.int64)[has]
    d = v[has] - mean[node]
    at, inv = sorted_unique(node, return_inverse=True)
    return pd.DataFrame({"node": at, "ss": np.bincount(inv, weights=d * d, minlength=at.size)})


def _ranked_part(df: pd.DataFrame, want: pd.DataFrame) -> pd.DataFrame:
    """The values asked for (``want``: node, rank, i) among the nodes this partition
    holds whole: each node's values sorted (ties by profile), the rank-th read."""
    node = df["node"].to_numpy(dtype=np.int64)
    v = df["v"].to_numpy(dtype=np.float64)
    order = np.lexsort((df["profile"].to_numpy(), v, node))
    node, v = node[order], v[order]
    w = want["node"].to_numpy()
    lo, hi = np.searchsorted(node, w, "left"), np.searchsorted(node, w, "right")
    rk = want["rk"].to_numpy()
    here = rk < hi - lo
    return pd.DataFrame({"i": want["i"].to_numpy()[here], "v": v[lo[here] + rk[here]]})


def _means_part(
    df: pd.DataFrame, small: dict[str, Any], live: np.ndarray, metrics: list[str]
) -> pd.DataFrame:
    """Per node of a partition's live rows and metric j: ``t{j}`` the sum of the
    values, ``c{j}`` how many, ``a{j}`` how many rows."""
    node, prof, vals = _here(df, small, metrics)
    ok = live[prof]
    node, vals = node[ok], vals[ok]
    at, inv = sorted_unique(node, return_inverse=True)
    out = {"node": at}
    for j in range(len(metrics)):
        has = ~np.isnan(vals[:, j])
        out[f"t{j}"] = np.bincount(inv[has], weights=vals[has, j], minlength=at.size)
        out[f"c{j}"] = np.bincount(inv[has], minlength=at.size).astype(np.float64)
        out[f"a{j}"] = np.bincount(inv, minlength=at.size).astype(np.float64)
    return pd.DataFrame(out)


def _profiles_part(df: pd.DataFrame, small: dict[str, Any]) -> pd.DataFrame:
    """The profiles of a partition with some row kept on this ensemble's tree."""
    _, prof, _ = _here(df, small, [])
    return pd.DataFrame({"profile": sorted_unique(prof)})
