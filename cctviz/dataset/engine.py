"""An ensemble whose values stay on disk: :class:`DatasetEnsemble`, computed by DuckDB.

The small tables (the unified tree's nodes, the profiles) are read into memory;
the (node, profile) rows stay in the dataset's Parquet parts and every number
over them is an SQL query that DuckDB runs out of core. The rules are the
model's: inclusive values follow each metric's aggregation rule, statistics the
absence rule, and the final assembly of a statistics table is the model's own
(:func:`cctviz.model.stats.summary_table`), so both engines give one table.

Inclusive values out of core: every profile's rows lie in one part, so a
metric's inclusive values are made a range of profiles at a time (a few million
rows read into memory, combined up the tree by the model's own
:func:`~cctviz.model.ensemble.inclusive_rows`, written into a temporary table
that DuckDB spills past its memory limit): the rule (``sum``: a NaN anywhere
below makes it NaN; ``max``/``min`` ignore NaN) and the order of the sums are the
in-memory Ensemble's. Where only a few nodes' inclusive values are wanted (a
Sankey's segment starts, the roots' totals) an ``ancestors`` table, one (node, up)
row per node and each of its ancestors, is joined to the rows of those nodes'
descendants instead. Statistics sort the counted values once by (node, value)
for their quantiles; exclusive values are read from the parts as they are.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..model._algo import accumulate_up, combine_rows
from ..model.ensemble import (
    BaseEnsemble,
    Ensemble,
    inclusive_rows,
    profile_id,
    profile_ids,
    profile_tree,
)
from ..model.stats import NodeSums, summary_table
from ..model.text import text_as_object
from ..model.tree import Tree, base_metric
from ..readers import progress_bar
from .layout import NODES, PROFILES, Part, parts_of, read_manifest, read_table

#: rows read into memory at a time to make a metric's inclusive values
INCLUSIVE_BATCH_ROWS = 4_000_000

_SQL_RULE = {"sum": "CASE WHEN count(r.{m}) = count(*) THEN sum(r.{m}) END", "max": "max(r.{m})"}
_SQL_RULE["min"] = "min(r.{m})"
# rows of one (node, profile) brought together by a remap: as combine_rows ("none":
# the value they agree on)
_SQL_COMBINE = {**_SQL_RULE, "none": "CASE WHEN min(r.{m}) = max(r.{m}) THEN min(r.{m}) END"}


def open_dataset(
    path: str | os.PathLike,
    *,
    memory_limit: str | None = None,
    threads: int | None = None,
    client: Any = None,
) -> DatasetEnsemble:
    """Open a dataset folder written by :meth:`cctviz.Ensemble.to_dataset`.

    The values stay on disk; statistics are computed by DuckDB (``memory_limit``
    such as ``"2GB"`` and ``threads`` are DuckDB's settings; beyond the limit it
    spills into a temporary folder of its own, removed on :meth:`close`: give the
    disk room for several times the dataset, about 4x the Parquet for the
    statistics of an inclusive metric). A folder that is not a dataset, or a
    partial one (a write that did not finish), is a :class:`~cctviz.ProfileError`.

    With ``client`` (a ``dask.distributed.Client``) the statistics (:meth:`stats`,
    every metric and ``missing`` mode), the mean :attr:`tree` and so those of
    :meth:`select`/:meth:`groupby` results and of filtered, pruned or focused
    ensembles are computed on that Dask cluster instead, the workers reading the
    Parquet parts (:mod:`cctviz.dataset.dask_engine`); the rest stays on DuckDB.
    The workers must see the dataset folder at the same path (a shared file system)
    and import the same cctviz.

    Example on a cluster:
        >>> from dask.distributed import Client, LocalCluster  # doctest: +SKIP
        >>> client = Client(LocalCluster(n_workers=2, dashboard_address=None))  # doctest: +SKIP
        >>> ds = cctviz.open_dataset(d, client=client)  # doctest: +SKIP
        >>> ds.stats("time (inc)")[["mean", "min", "n"]].values.tolist()  # doctest: +SKIP
        [[3.0, 2.0, 2.0], [1.5, 0.0, 2.0]]

    Example:
        >>> import cctviz, tempfile
        >>> a = cctviz.Tree.from_parents([-1, 0], ["main", "mpi"], {"time": [1.0, 3.0]})
        >>> b = cctviz.Tree.from_parents([-1], ["main"], {"time": [2.0]})
        >>> d = cctviz.Ensemble.from_trees([a, b]).to_dataset(tempfile.mkdtemp() + "/e")
        >>> ds = cctviz.open_dataset(d)
        >>> ds.stats("time (inc)")[["mean", "min", "n"]].values.tolist()
        [[3.0, 2.0, 2.0], [1.5, 0.0, 2.0]]
    """
    p = Path(path)
    manifest = read_manifest(p)
    parts = parts_of(p, manifest)
    nodes = read_table(p, NODES, manifest)
    for c in ("name", "parent"):
        if c not in nodes.columns:
            raise ProfileError(p / NODES, f"the nodes table lacks column {c!r}")
    try:
        structure = Tree(nodes, None, manifest.get("tree_meta") or {})
    except ValueError as e:
        raise ProfileError(p / NODES, f"the nodes do not form a pre-ordered tree: {e}") from None
    profiles = text_as_object(read_table(p, PROFILES, manifest))  # as an Ensemble keeps text
    if not len(profiles.columns):  # Parquet keeps no row count without columns
        profiles = pd.DataFrame(index=pd.RangeIndex(manifest["n_profiles"]))
    if len(profiles) != manifest["n_profiles"] or len(structure) != manifest["n_nodes"]:
        raise ProfileError(p, "the nodes or profiles table does not hold what the manifest says")
    settings = {"memory_limit": memory_limit, "threads": threads}
    store = _Store(p, manifest, parts, structure, profiles, settings, client)
    return DatasetEnsemble(store, np.arange(len(profiles), dtype=np.int64))


class _Store:
    """What the profiles selected from one dataset share: the folder, its parts and
    small tables."""

    def __init__(
        self,
        path: Path,
        manifest: dict[str, Any],
        parts: list[Part],
        structure: Tree,
        profiles: pd.DataFrame,
        settings: dict[str, Any],
        client: Any = None,
    ) -> None:
        self.path = path
        self.client = client  # a dask.distributed.Client: statistics on its cluster
        self.manifest = manifest
        self.parts = parts
        self.structure = structure
        self.profiles = profiles
        self.settings = settings
        self.metrics: list[str] = list(manifest["metrics"])
        self.live = np.ones(len(profiles), dtype=bool)
        self.live[np.asarray(manifest.get("dead") or [], dtype=np.int64)] = False


class DatasetEnsemble(BaseEnsemble):
    """An ensemble whose (node, profile) values stay on disk, in a dataset folder.

    It answers as :class:`~cctviz.Ensemble` does, by the same rules, computing
    with DuckDB over the Parquet parts: :meth:`stats`, :attr:`tree` (the mean
    tree), :meth:`values`, :meth:`profile`, :meth:`select`, :meth:`groupby`;
    :meth:`to_ensemble` loads it whole. Made by :func:`open_dataset`.

    Example:
        >>> import cctviz, tempfile
        >>> t = cctviz.Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 2.0]})
        >>> ens = cctviz.Ensemble.from_trees([t, t], profiles={"rank": [0, 1]})
        >>> ds = cctviz.open_dataset(ens.to_dataset(tempfile.mkdtemp() + "/e"))
        >>> ds.n_profiles, ds.profile(rank=1).names.tolist()
        (2, ['main', 'f'])
    """

    def __init__(
        self,
        store: _Store,
        ids: np.ndarray,
        structure: Tree | None = None,
        node_map: np.ndarray | None = None,
    ) -> None:
        self._store = store
        self._ids = ids  # the dataset's profile id of each of these profiles
        # the tree these profiles are over: the dataset's, or one made from it by
        # filter/prune/focus; node_map[dataset node] is its node there (-1: dropped,
        # several onto one: combined by each metric's rule); None: the dataset's own
        self._structure = store.structure if structure is None else structure
        self._node_map = node_map
        self._profiles = store.profiles.iloc[ids].reset_index(drop=True)
        self._profiles.index.name = "profile"
        self._con: Any = None
        self._cache: dict[str, Any] = {}

    # ------------------------------------------------------------- accessors
    @property
    def path(self) -> Path:
        return self._store.path

    @property
    def profiles(self) -> pd.DataFrame:
        return self._profiles

    @property
    def meta(self) -> dict[str, Any]:
        return dict(self._store.manifest.get("meta") or {})

    @property
    def exc_metrics(self) -> list[str]:
        return list(self._store.metrics)

    @property
    def aggregation(self) -> dict[str, str]:
        """Aggregation rule of every metric (as :attr:`Ensemble.aggregation`)."""
        rules = self._structure.meta.get("aggregation", {})
        return {m: rules.get(m, "sum") for m in self._store.metrics}

    def rule(self, metric: str) -> str:
        """Aggregation rule of a metric column (``"X"`` or ``"X (inc)"``)."""
        base, inclusive = base_metric(metric)
        if base not in self._store.metrics or inclusive and self.aggregation[base] == "none":
            have = self.exc_metrics + self.inc_metrics
            raise KeyError(f"no metric {metric!r} in this dataset; it has {have}")
        return self.aggregation[base]

    @property
    def inc_metrics(self) -> list[str]:
        return [f"{m} (inc)" for m, r in self.aggregation.items() if r != "none"]

    @property
    def live(self) -> np.ndarray:
        """Mask of the profiles that recorded something (see :attr:`Ensemble.live`):
        after a filter or focus, something that was kept."""
        if "live" not in self._cache:
            if self._node_map is None:
                self._cache["live"] = self._store.live[self._ids]
            elif self._store.client is not None:
                self._cache["live"] = self._dask().live()
            else:
                self._connection()  # found while its views are made: see _register
        return self._cache["live"]

    @property
    def n_rows(self) -> int:
        """How many (node, profile) rows these profiles hold on disk."""
        if "n_rows" not in self._cache:
            self._cache["n_rows"] = int(self._sql("SELECT count(*) FROM exc").fetchone()[0])
        return self._cache["n_rows"]

    def __repr__(self) -> str:
        return (
            f"<cctviz.DatasetEnsemble at {str(self.path)!r}: {self.n_profiles} profiles x "
            f"{len(self._structure)} nodes, metrics {self.exc_metrics}, "
            f"profile columns {list(self._profiles.columns)}>"
        )

    # IPython prefers a class's own __repr__ to an inherited _repr_pretty_
    _repr_pretty_ = BaseEnsemble._repr_pretty_

    @property
    def tree(self) -> Tree:
        """The unified tree with each node's mean over the live profiles (absent = 0
        for ``"sum"`` metrics), as :attr:`Ensemble.tree`; computed on first use."""
        if "tree" not in self._cache:
            s = self._structure
            mean = self._node_means()
            self._cache["tree"] = Tree(s.nodes.copy(), mean, s.meta, _trusted=True)
        return self._cache["tree"]

    # ------------------------------------------------------------- engine
    def _connection(self) -> Any:
        if self._con is None:
            try:
                import duckdb
            except ImportError:
                raise ImportError(
                    "a dataset's values are computed by DuckDB: pip install 'cctviz[scale]'"
                ) from None

            con = duckdb.connect(":memory:")
            for key, value in self._store.settings.items():
                if value is not None:
                    con.execute(f"SET {key} = '{value}'")
            # where DuckDB spills past its memory limit: its default is ./.tmp, in the
            # user's working folder; a folder of our own instead, removed on close
            spill = tempfile.mkdtemp(prefix="cctviz-duckdb-")
            con.execute(f"SET temp_directory = {_literal(spill)}")
            con.execute("SET enable_progress_bar = false")  # it prints to stdout
            con.execute("SET preserve_insertion_order = true")  # _ranked's sorted table
            self._spill = weakref.finalize(self, shutil.rmtree, spill, True)
            self._register(con)
            self._con = con
        return self._con

    def _register(self, con: Any) -> None:
        """The views every query starts from: ``exc`` (these profiles' exclusive rows,
        numbered 0..n-1), ``prof`` (profile, group, live) and ``ancestors``."""
        files = self._files()
        sel = pd.DataFrame({"old": self._ids, "new": np.arange(self._ids.size, dtype=np.int64)})
        con.register("sel", sel)
        if files:
            con.execute(f"CREATE VIEW exc AS {self._exc_sql(con, files)}")
        else:  # no rows at all: an empty table of the right columns
            metric_cols = "".join(f", {_q(m)} DOUBLE" for m in self.exc_metrics)
            con.execute(f"CREATE TABLE exc (node BIGINT, profile BIGINT{metric_cols})")
        if "live" not in self._cache:  # the profiles some row of which was kept
            kept = con.execute("SELECT DISTINCT profile FROM exc").fetchnumpy()["profile"]
            live = np.zeros(self.n_profiles, dtype=bool)
            live[np.asarray(kept, dtype=np.int64)] = True
            self._cache["live"] = live
        prof = pd.DataFrame(
            {
                "profile": np.arange(self.n_profiles, dtype=np.int64),
                "grp": self.absence_groups,
                "live": self.live,
            }
        )
        con.register("prof", prof)
        con.register("ancestors", _ancestors(self._structure.parent))

    def _exc_sql(self, con: Any, files: list[str], where: str = "") -> str:
        """The query of these profiles' exclusive rows in the Parquet ``files``
        (``where``: a filter on the raw rows ``r``), numbered and remapped."""
        cols = "".join(f", NULLIF(r.{_q(m)}, 'nan'::DOUBLE) AS {_q(m)}" for m in self.exc_metrics)
        src = "read_parquet([" + ", ".join(_literal(f) for f in files) + "])"
        raw = f"SELECT r.node, s.new AS profile{cols} FROM {src} r JOIN sel s ON r.profile = s.old"
        return self._remapped(con, raw + where)

    def _remapped(self, con: Any, raw: str) -> str:
        """The rows of query ``raw`` (dataset node ids) over this ensemble's tree: each
        row moved to its node there, dropped ones left out, rows that meet on one
        (node, profile) combined by each metric's rule, as :func:`combine_rows`
        does in memory."""
        if self._node_map is None:
            return raw
        keep = self._node_map >= 0
        old = np.flatnonzero(keep)
        con.register("nmap", pd.DataFrame({"old": old, "new": self._node_map[keep]}))
        aggs = "".join(
            f", {_SQL_COMBINE[self.aggregation[m]].format(m=_q(m))} AS {_q(m)}"
            for m in self.exc_metrics
        )
        return (
            f"SELECT n.new AS node, r.profile{aggs} FROM ({raw}) r "
            "JOIN nmap n ON r.node = n.old GROUP BY n.new, r.profile"
        )

    def _files(self) -> list[str]:
        """The parts that hold any of these profiles."""
        chosen = np.zeros(len(self._store.profiles) + 1, dtype=np.int64)
        np.add.at(chosen, self._ids, 1)
        before = np.concatenate(([0], np.cumsum(chosen)))
        return [
            str(self._store.path / p.file)
            for p in self._store.parts
            if p.rows and before[p.hi] > before[p.lo]
        ]

    def _sql(self, query: str) -> Any:
        return self._connection().execute(query)

    def _values_at(self, metric: str, at: str) -> str:
        """A query of (node, profile, v) rows: the metric's value per recorded
        (node, profile) at the nodes listed in the registered table ``at`` (its
        ``node`` column), exclusive or inclusive (by the metric's rule; only those
        nodes' descendants' rows are joined); NULL = NaN."""
        rule = self.rule(metric)
        base, inclusive = base_metric(metric)
        if not inclusive:
            return f"SELECT node, profile, {_q(base)} AS v FROM exc WHERE node IN (SELECT node FROM {at})"
        agg = _SQL_RULE[rule].format(m=_q(base))
        ups = f"(SELECT * FROM ancestors WHERE up IN (SELECT node FROM {at}))"
        return (
            f"SELECT a.up AS node, r.profile, {agg} AS v "
            f"FROM exc r JOIN {ups} a ON r.node = a.node GROUP BY a.up, r.profile"
        )

    @contextlib.contextmanager
    def _values(self, metric: str) -> Iterator[str]:
        """``vals``, a relation of (node, profile, v): the metric's value per
        recorded (node, profile), NULL = NaN, for the duration of the block.
        Exclusive: a view of the rows on disk. Inclusive: a table made a range of
        profiles at a time (each profile's rows lie in one part): the rows read into
        memory, combined up the tree by the model's own
        :func:`~cctviz.model.ensemble.inclusive_rows` (so by the rule and in the
        order the in-memory Ensemble uses), written back. Memory: one batch of
        about :data:`INCLUSIVE_BATCH_ROWS` rows; the table spills past DuckDB's
        limit, and is dropped after the block (at 1e9 values it is ~24 GB)."""
        rule = self.rule(metric)
        base, inclusive = base_metric(metric)
        con = self._connection()
        if not inclusive:
            con.execute(
                f"CREATE OR REPLACE TEMP VIEW vals AS SELECT node, profile, {_q(base)} AS v FROM exc"
            )
        else:
            # 4-byte ids: 16 bytes a row where it spills (1e9 values: ~15 GB, not ~23 GB)
            con.execute(
                "CREATE OR REPLACE TEMP TABLE vals (node INTEGER, profile INTEGER, v DOUBLE)"
            )
        try:
            if inclusive:
                self._fill_inclusive(con, base, rule)
            yield "vals"
        finally:
            con.execute(f"DROP {'TABLE' if inclusive else 'VIEW'} IF EXISTS vals")

    def _fill_inclusive(self, con: Any, base: str, rule: str) -> None:
        """Insert the inclusive values of metric ``base`` into ``vals`` (:meth:`_values`)."""
        s = self._structure
        batches = list(self._batches(con, INCLUSIVE_BATCH_ROWS))
        # a bar where it takes a while (readers.progress_bar: after a few seconds)
        for query in progress_bar(batches, None, desc=f"{base} (inc)", unit="batch"):
            got = con.execute(
                f"SELECT node, profile, coalesce({_q(base)}, 'nan'::DOUBLE) AS v FROM ({query})"
            ).fetchnumpy()
            node = np.asarray(got["node"], dtype=np.int64)
            prof = np.asarray(got["profile"], dtype=np.int64)
            v = np.asarray(got["v"], dtype=np.float64)
            part = {"node": node, "profile": prof}  # in the scan's order
            part["v"] = inclusive_rows(s.parent, s.depth, node, prof, v, rule)
            con.register("inc_part", pd.DataFrame(part, copy=False))
            con.execute(
                "INSERT INTO vals SELECT node, profile, NULLIF(v, 'nan'::DOUBLE) FROM inc_part"
            )
            con.unregister("inc_part")

    def _batches(self, con: Any, max_rows: int) -> Iterator[str]:
        """Queries of these profiles' exclusive rows (as the ``exc`` view) a range of
        profiles of one part at a time, about ``max_rows`` rows each."""
        ids = np.unique(self._ids)  # a profile selected twice: its rows in one batch
        for p in self._store.parts:
            mine = ids[(ids >= p.lo) & (ids < p.hi)]
            if not p.rows or not mine.size:
                continue
            step = max(max_rows * (p.hi - p.lo) // p.rows, 1)
            for a in range(0, mine.size, step):
                lo, hi = int(mine[a]), int(mine[min(a + step, mine.size) - 1])
                where = f" WHERE r.profile BETWEEN {lo} AND {hi}"
                yield self._exc_sql(con, [str(self._store.path / p.file)], where)

    # ------------------------------------------------------------- statistics

    def _dask(self) -> Any:
        """The Dask engine of these profiles (:mod:`cctviz.dataset.dask_engine`)."""
        if "dask" not in self._cache:
            from .dask_engine import DaskEngine

            self._cache["dask"] = DaskEngine(self, self._store.client)
        return self._cache["dask"]

    def _stats_table(self, metric: str, missing: str) -> pd.DataFrame:
        if self._store.client is not None:
            return self._dask().stats_table(metric, missing)
        con = self._connection()
        n = len(self._structure)
        with self._values(metric):
            con.execute(
                "CREATE OR REPLACE TEMP VIEW kept AS SELECT v.node, v.profile, v.v, p.grp "
                "FROM vals v JOIN prof p USING (profile) WHERE p.live AND v.v IS NOT NULL"
            )
            per = con.execute(
                "SELECT node, count(*) AS m, sum(v) AS total, count_if(v < 0) AS neg, "
                "arg_max(profile, (v, profile)) AS argmax FROM kept GROUP BY node"
            ).df()
            sums = NodeSums(
                m=_per_node(per, "m", n, 0).astype(np.int64),
                total=_per_node(per, "total", n, 0.0),
                neg=_per_node(per, "neg", n, 0).astype(np.int64),
                argmax=_per_node(per, "argmax", n, -1).astype(np.int64),
            )
            count = self._counted(metric, missing, sums.m)
            ranked = lambda node, rank: self._ranked(node, rank, sums.m)  # noqa: E731
            return summary_table(sums, count, squares=self._squares, ranked=ranked)

    def _counted(self, metric: str, missing: str, m: np.ndarray) -> np.ndarray:
        """Per node, how many profiles the statistics are over (the absence rule of
        :func:`cctviz.model.stats.node_stats`)."""
        n = m.size
        if missing == "skip" or self.rule(metric) != "sum":
            return m
        if missing == "zero":
            return np.full(n, int(self.live.sum()), dtype=np.int64)
        # auto: the live profiles of the groups (runs) in which some profile recorded
        # the node, less those whose value there is unknown (NaN)
        sizes = np.bincount(self.absence_groups[self.live], minlength=1)
        self._connection().register(
            "gsize", pd.DataFrame({"grp": np.arange(sizes.size), "size": sizes})
        )
        got = self._sql(
            "WITH pairs AS (SELECT DISTINCT node, grp FROM kept), "
            "unknown AS (SELECT v.node, p.grp, count(*) AS u FROM vals v "
            "JOIN prof p USING (profile) WHERE p.live AND v.v IS NULL GROUP BY v.node, p.grp) "
            "SELECT q.node, sum(g.size - coalesce(u.u, 0)) AS n FROM pairs q "
            "JOIN gsize g USING (grp) LEFT JOIN unknown u USING (node, grp) GROUP BY q.node"
        ).df()
        return _per_node(got, "n", n, 0).astype(np.int64)

    def _squares(self, mean: np.ndarray) -> np.ndarray:
        """Per node, the sum of (v - mean[node])**2 over its counted values."""
        con = self._connection()
        con.register("mu", pd.DataFrame({"node": np.arange(mean.size), "mu": mean}))
        got = con.execute(
            "SELECT k.node, sum((k.v - mu.mu) * (k.v - mu.mu)) AS ss "
            "FROM kept k JOIN mu USING (node) GROUP BY k.node"
        ).df()
        return _per_node(got, "ss", mean.size, 0.0)

    def _ranked(self, node: np.ndarray, rank: np.ndarray, m: np.ndarray) -> np.ndarray:
        """The ``rank``-th smallest counted value of each ``node``; ``m``: how many
        values each node counts. The counted values are sorted once by (node, value)
        into a table (a sort spills to disk past the memory limit; a window
        partitioned by node was 2.4x slower), whose ``rowid`` is then the position:
        node ``k``'s values start at the sum of ``m`` before it."""
        con = self._connection()
        start = np.cumsum(m) - m
        want = pd.DataFrame({"pos": start[node] + rank, "i": np.arange(node.size)})
        con.register("want", want)
        try:
            con.execute(
                "CREATE OR REPLACE TEMP TABLE by_value AS SELECT v FROM kept ORDER BY node, v"
            )
            got = con.execute("SELECT w.i, b.v FROM by_value b JOIN want w ON b.rowid = w.pos").df()
        finally:
            con.execute("DROP TABLE IF EXISTS by_value")
        out = np.full(node.size, np.nan)
        out[got["i"].to_numpy(dtype=np.int64)] = got["v"].to_numpy(dtype=np.float64)
        return out

    def _node_means(self) -> pd.DataFrame:
        """Per node and metric, the mean of the live profiles' own values (absent =
        0 for sums), as the in-memory Ensemble's tree holds."""
        if self._store.client is not None:
            return self._dask().node_means()
        n = len(self._structure)
        metrics = self.exc_metrics
        if not metrics:
            return pd.DataFrame(index=range(n))
        aggs = ", ".join(
            f"coalesce(sum(r.{_q(m)}), 0) AS t{j}, count(r.{_q(m)}) AS c{j}, count(*) AS a{j}"
            for j, m in enumerate(metrics)
        )
        got = self._sql(
            f"SELECT r.node, {aggs} FROM exc r JOIN prof p USING (profile) "
            "WHERE p.live GROUP BY r.node"
        ).df()
        return _means(got, self.aggregation, n, int(self.live.sum()))

    # ------------------------------------------------------------- values
    def values(self, metric: str) -> np.ndarray:
        """Dense (nodes x profiles) matrix of one metric, as :meth:`Ensemble.values`
        (absent = 0 for a ``"sum"`` metric, NaN otherwise): it is in memory, so for
        small selections."""
        with self._values(metric) as vals:
            got = self._sql(f"SELECT * FROM {vals}").df()
        fill = 0.0 if self.rule(metric) == "sum" else np.nan
        out = np.full((len(self._structure), self.n_profiles), fill)
        v = got["v"].to_numpy(dtype=np.float64, na_value=np.nan)
        out[got["node"].to_numpy(dtype=np.int64), got["profile"].to_numpy(dtype=np.int64)] = v
        return out

    def profile_totals(self, metric: str) -> np.ndarray:
        """Per profile, the sum of an additive inclusive metric over the roots (NaN
        for profiles that recorded nothing), as :meth:`Ensemble.profile_totals`."""
        roots = np.flatnonzero(self._structure.parent < 0)
        self._connection().register("roots", pd.DataFrame({"node": roots}))
        got = self._sql(
            "SELECT profile, CASE WHEN count(v) = count(*) THEN sum(v) END AS t "
            f"FROM ({self._values_at(metric, 'roots')}) GROUP BY profile"
        ).df()
        out = np.zeros(self.n_profiles)
        out[got["profile"].to_numpy(dtype=np.int64)] = got["t"].to_numpy(
            dtype=np.float64, na_value=np.nan
        )
        out[~self.live] = np.nan
        return out

    def group_sums(self, metric: str, group: np.ndarray, n_groups: int) -> np.ndarray:
        at = np.flatnonzero(group >= 0)
        self._connection().register("grp_of", pd.DataFrame({"node": at, "g": group[at]}))
        got = self._sql(
            "SELECT g.g, v.profile, sum(coalesce(v.v, 0)) AS t "
            f"FROM ({self._values_at(metric, 'grp_of')}) v "
            "JOIN grp_of g USING (node) GROUP BY g.g, v.profile"
        ).df()
        out = np.full((n_groups, self.n_profiles), np.nan)
        out[got["g"].to_numpy(dtype=np.int64), got["profile"].to_numpy(dtype=np.int64)] = got[
            "t"
        ].to_numpy(dtype=np.float64)
        return out

    def live_mean(self, metric: str) -> np.ndarray:
        base, inclusive = base_metric(metric)
        if inclusive and self.rule(metric) == "sum" and not self._has_nan(base):
            # a sum of sums: the exclusive means accumulated up the tree (no NaN
            # below a node to make its inclusive value unknown), without the table
            s = self._structure
            return accumulate_up(self.live_mean(base), s.parent, s.levels)
        with self._values(metric) as vals:
            got = self._sql(
                f"SELECT v.node, sum(coalesce(v.v, 0)) AS t FROM {vals} v "
                "JOIN prof p USING (profile) WHERE p.live GROUP BY v.node"
            ).df()
        return _per_node(got, "t", len(self._structure), 0.0) / max(int(self.live.sum()), 1)

    def _has_nan(self, metric: str) -> bool:
        """Whether a live profile has an unknown (NaN) value of exclusive ``metric``."""
        key = f"has_nan {metric}"
        if key not in self._cache:
            got = self._sql(
                f"SELECT count(*) FROM (SELECT 1 FROM exc r JOIN prof p USING (profile) "
                f"WHERE p.live AND r.{_q(metric)} IS NULL LIMIT 1)"
            ).fetchone()
            self._cache[key] = bool(got[0])
        return self._cache[key]

    # ------------------------------------------------------------- profiles
    def select(self, which: Any) -> DatasetEnsemble:
        """Some of the profiles (ids, a boolean mask, or a callable on :attr:`profiles`),
        still on disk; as :meth:`Ensemble.select`."""
        ids = profile_ids(which, self._profiles)
        if ids.size and (ids.min() < 0 or ids.max() >= self.n_profiles):
            raise IndexError(f"profile ids out of range [0, {self.n_profiles})")
        return DatasetEnsemble(self._store, self._ids[ids], self._structure, self._node_map)

    def profile(self, which: int | None = None, **match: Any) -> Tree:
        """One profile as a Tree: by id, or by metadata (``ds.profile(rank=3)``); reads
        only the part that holds it."""
        which = profile_id(self._profiles, which, match)
        old = int(self._ids[which])
        part = next(p for p in self._store.parts if p.lo <= old < p.hi)
        rows = pd.read_parquet(self._store.path / part.file, filters=[("profile", "==", old)])
        if self._node_map is not None:
            rows = self._moved(rows)
        return profile_tree(self._structure, rows, self.exc_metrics, self._profiles.iloc[which])

    def _moved(self, rows: pd.DataFrame) -> pd.DataFrame:
        """One profile's rows (dataset node ids) moved onto this ensemble's tree."""
        metrics = self.exc_metrics
        target = self._node_map[rows["node"].to_numpy(dtype=np.int64)]
        used, at = np.unique(target[target >= 0], return_inverse=True)
        vals = rows[metrics].to_numpy(dtype=np.float64)[target >= 0]
        out, _ = combine_rows(vals, at, used.size, [self.aggregation[m] for m in metrics])
        moved = pd.DataFrame(out, columns=metrics)
        moved.insert(0, "node", used)
        moved.insert(1, "profile", rows["profile"].iloc[0] if len(rows) else 0)
        return moved

    # ------------------------------------------------------------- structure
    def remapped(self, nodes: pd.DataFrame, mapping: np.ndarray) -> DatasetEnsemble:
        """The same profiles over a new tree (``nodes``, pre-ordered), each node of
        this one going to ``mapping[node]`` (-1: dropped; several onto one combine
        by each metric's rule): what filter, prune and focus build on."""
        structure = Tree(nodes, None, self._structure.meta, _trusted=True)
        old = np.arange(len(self._store.structure), dtype=np.int64)
        before = old if self._node_map is None else self._node_map
        node_map = np.where(before >= 0, mapping[np.maximum(before, 0)], -1)
        return DatasetEnsemble(self._store, self._ids, structure, node_map)

    def to_ensemble(self) -> Ensemble:
        """Load these profiles into an in-memory :class:`~cctviz.Ensemble`."""
        cols = ", ".join(_q(m) for m in self.exc_metrics)
        rows = self._sql(
            f"SELECT node, profile{', ' + cols if cols else ''} FROM exc ORDER BY node, profile"
        ).df()
        for m in self.exc_metrics:
            rows[m] = rows[m].to_numpy(dtype=np.float64, na_value=np.nan)
        rows["node"] = rows["node"].astype(np.int64)
        rows["profile"] = rows["profile"].astype(np.int64)
        s = self._structure
        return Ensemble(
            Tree(s.nodes.copy(), None, s.meta, _trusted=True), rows, self._profiles, self.meta
        )

    def close(self) -> None:
        """Close the DuckDB connection (a later query opens a new one)."""
        if self._con is not None:
            self._con.close()
            self._con = None
            self._spill()


# ------------------------------------------------------------------ helpers
def _ancestors(parent: np.ndarray) -> pd.DataFrame:
    """(node, up) for every node and each of its ancestors, itself included.

    >>> _ancestors(np.array([-1, 0, 1])).sort_values(["node", "up"]).values.tolist()
    [[0, 0], [1, 0], [1, 1], [2, 0], [2, 1], [2, 2]]
    """
    node = np.arange(parent.size, dtype=np.int64)
    nodes, ups = [], []
    cur = node
    while cur.size:
        nodes.append(node)
        ups.append(cur)
        up = parent[cur]
        keep = up >= 0
        node, cur = node[keep], up[keep]
    return pd.DataFrame({"node": np.concatenate(nodes), "up": np.concatenate(ups)})


def _means(got: pd.DataFrame, rules: dict[str, str], n: int, n_live: int) -> pd.DataFrame:
    """Per node, each metric's mean from the sums of ``got`` (per node of the live
    profiles' rows: ``t{j}`` the sum of metric j's values, ``c{j}`` how many
    values, ``a{j}`` how many rows), by the rule of :attr:`DatasetEnsemble.tree`."""
    out = {}
    for j, (m, rule) in enumerate(rules.items()):
        total = _per_node(got, f"t{j}", n, 0.0)
        has = _per_node(got, f"c{j}", n, 0)
        if rule == "sum":  # over the live profiles, absent = 0
            count = max(n_live, 1) - (_per_node(got, f"a{j}", n, 0) - has)
        else:  # over the profiles with a value
            count = has
        with np.errstate(invalid="ignore", divide="ignore"):
            out[m] = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return pd.DataFrame(out)


def _per_node(df: pd.DataFrame, col: str, n: int, fill: float) -> np.ndarray:
    """A column of a (node, ...) result as a dense per-node array."""
    out = np.full(n, fill, dtype=np.float64)
    if len(df):
        out[df["node"].to_numpy(dtype=np.int64)] = df[col].to_numpy(
            dtype=np.float64, na_value=np.nan
        )
    return out


def _q(name: str) -> str:
    """A column name quoted for SQL."""
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    """A string literal for SQL."""
    return "'" + text.replace("'", "''") + "'"
