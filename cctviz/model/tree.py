"""The calling-context tree.

A :class:`Tree` stores its nodes in dense integer ids in **pre-order**, so the
subtree of node ``i`` is the contiguous id range ``[i, end[i])``. Node
attributes live in ``tree.nodes`` and metrics in ``tree.metrics``, both pandas
DataFrames indexed by node id. Exclusive metrics are stored; inclusive ones
(Hatchet naming: ``"time (inc)"``) are derived from them by a vectorised
sweep over the levels of the tree.

Every metric has an **aggregation rule** (``tree.aggregation``), kept in
``meta["aggregation"]``: ``"sum"`` (time, bytes, calls: the default), ``"max"``
(peaks), ``"min"``, or ``"none"`` (per-node constants, averages, ratios). The
inclusive value of a node is the rule applied to its own value and its
children's inclusive values; a ``"none"`` metric has no inclusive column.

Trees are immutable values: operations return new trees.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ._algo import (
    AGGREGATIONS,
    accumulate_up,
    level_order,
    own_from_inclusive,
    preorder_permutation,
)
from .text import text_as_object

if TYPE_CHECKING:  # pragma: no cover
    from .nodeset import NodeSet

INC = " (inc)"
STRUCT_COLUMNS = ("name", "parent", "depth", "kind")


def inc_name(metric: str) -> str:
    """``"time"`` -> ``"time (inc)"``."""
    return metric + INC


def check_aggregation(rules: Mapping[str, str]) -> dict[str, str]:
    """``rules`` as a plain dict, or a ``ValueError`` naming the bad rule."""
    out = {}
    for m, r in dict(rules).items():
        if r not in AGGREGATIONS:
            raise ValueError(f"aggregation of {m!r} is {r!r}; choose one of {AGGREGATIONS}")
        out[str(m)] = str(r)
    return out


def base_metric(column: str) -> tuple[str, bool]:
    """``"time (inc)"`` -> ``("time", True)``; ``"time"`` -> ``("time", False)``."""
    if column.endswith(INC):
        return column[: -len(INC)], True
    return column, False


class Tree:
    """A calling-context tree with per-node metrics.

    Build one with :meth:`from_parents`, :meth:`from_dict` or a reader
    (:func:`cctviz.read`).

    Example:
        >>> import cctviz
        >>> t = cctviz.Tree.from_dict({"name": "main", "metrics": {"time": 1.0},
        ...     "children": [{"name": "solve", "metrics": {"time": 4.0}},
        ...                  {"name": "io", "metrics": {"time": 2.0}}]})
        >>> t.metrics["time (inc)"].tolist()
        [7.0, 4.0, 2.0]
        >>> sorted(t.query([{"name": "s.*"}]).names)
        ['solve']
    """

    __slots__ = ("_nodes", "_exc", "_meta", "_cache", "__weakref__")

    def __init__(
        self,
        nodes: pd.DataFrame,
        metrics: pd.DataFrame | None = None,
        meta: Mapping[str, Any] | None = None,
        *,
        _trusted: bool = False,
    ) -> None:
        """Wrap pre-ordered node and exclusive-metric tables.

        Most users want :meth:`from_parents` (any order) instead; this
        constructor checks that ``nodes`` is in pre-order and raises
        ``ValueError`` otherwise.
        """
        n = len(nodes)
        nodes = nodes.reset_index(drop=True) if not _trusted else nodes
        nodes.index = pd.RangeIndex(n, name="node")
        if "name" not in nodes or "parent" not in nodes:
            raise ValueError("nodes need 'name' and 'parent' columns")
        if "kind" not in nodes:
            nodes["kind"] = "function"
        parent = nodes["parent"].to_numpy(dtype=np.int64)
        self._cache: dict[str, Any] = {}
        depth, levels = level_order(parent)
        if not _trusted:
            if n and not np.array_equal(preorder_permutation(parent), np.arange(n)):
                raise ValueError("nodes are not in pre-order; use Tree.from_parents")
        nodes["parent"] = parent
        nodes["depth"] = depth
        text_as_object(nodes)
        cols = list(STRUCT_COLUMNS) + [c for c in nodes.columns if c not in STRUCT_COLUMNS]
        self._nodes = nodes[cols]
        self._cache["levels"] = levels
        if metrics is None:
            metrics = pd.DataFrame(index=nodes.index)
        else:
            metrics = metrics.reset_index(drop=True)
            if len(metrics) != n:
                raise ValueError(f"metrics have {len(metrics)} rows for {n} nodes")
            metrics.index = nodes.index
            rules = check_aggregation((meta or {}).get("aggregation", {}))
            bad = [c for c in metrics.columns if c.endswith(INC) and rules.get(c) != "none"]
            if bad:
                raise ValueError(
                    f"store exclusive metrics only; got inclusive columns {bad} "
                    "(a per-node value named '... (inc)' needs the aggregation 'none')"
                )
            for c in metrics.columns:
                if not pd.api.types.is_numeric_dtype(metrics[c]):
                    raise ValueError(f"metric {c!r} is not numeric")
        self._exc = metrics
        self._meta = dict(meta or {})

    # ------------------------------------------------------------------ build
    @classmethod
    def from_parents(
        cls,
        parent: Sequence[int] | np.ndarray,
        name: Sequence[str] | np.ndarray,
        metrics: Mapping[str, Any] | pd.DataFrame | None = None,
        *,
        kind: Sequence[str] | str | None = None,
        columns: Mapping[str, Any] | pd.DataFrame | None = None,
        meta: Mapping[str, Any] | None = None,
        inclusive: Mapping[str, Any] | pd.DataFrame | None = None,
        sibling_key: Sequence | np.ndarray | None = None,
    ) -> Tree:
        """Build a tree from a parent array in any order.

        Args:
            parent: parent index of each node, ``-1`` for roots.
            name: node names.
            metrics: exclusive metrics, one column per metric.
            kind: node kinds (``"function"``, ``"module"``, ``"comm"``, ...).
            columns: extra node attributes (``file``, ``line``, ``module``...).
            meta: tree metadata; ``meta["units"]`` maps metric -> unit and
                ``meta["aggregation"]`` metric -> rule (default ``"sum"``).
            inclusive: metrics known only as inclusive values (keys without
                the ``" (inc)"`` suffix); own values are derived by the
                metric's rule (see :meth:`exclusive_from_inclusive`). When the
                rule cannot give the values back (a ``"min"`` of values that
                grow towards the root, say), the metric's rule becomes
                ``"none"`` and ``meta["aggregation_notes"]`` says why.
            sibling_key: order of siblings in the result (default: input order).

        Example:
            >>> t = Tree.from_parents([-1, 0, 0], ["main", "a", "b"], {"time": [1, 2, 3]})
            >>> t.metrics["time (inc)"].tolist()
            [6.0, 2.0, 3.0]
        """
        return cls._build(parent, name, metrics, kind, columns, meta, inclusive, sibling_key)[0]

    @classmethod
    def from_parents_with_ids(
        cls,
        parent: Sequence[int] | np.ndarray,
        name: Sequence[str] | np.ndarray,
        metrics: Any = None,
        **kw: Any,
    ) -> tuple[Tree, np.ndarray]:
        """:meth:`from_parents` (same arguments), also returning the new (pre-order) id
        of every input node.

        Readers use the ids to attach per-row data given in the file's own node order.

        >>> t, ids = Tree.from_parents_with_ids([1, -1], ["leaf", "root"])
        >>> ids.tolist(), t.nodes["name"].tolist()
        ([1, 0], ['root', 'leaf'])
        """
        return cls._build(parent, name, metrics, **kw)

    @classmethod
    def _build(
        cls,
        parent: Sequence[int] | np.ndarray,
        name: Sequence[str] | np.ndarray,
        metrics: Any,
        kind: Sequence[str] | str | None = None,
        columns: Any = None,
        meta: Mapping[str, Any] | None = None,
        inclusive: Any = None,
        sibling_key: Sequence | np.ndarray | None = None,
    ) -> tuple[Tree, np.ndarray]:
        parent = np.asarray(parent, dtype=np.int64)
        n = parent.shape[0]
        names = np.asarray(name, dtype=object)
        if names.shape[0] != n:
            raise ValueError(f"{names.shape[0]} names for {n} parents")
        perm = preorder_permutation(
            parent, None if sibling_key is None else np.asarray(sibling_key)
        )
        inv = np.empty(n, dtype=np.int64)
        inv[perm] = np.arange(n)
        new_parent = np.where(parent[perm] >= 0, inv[np.maximum(parent[perm], 0)], -1)
        # names are any text a profile holds (lone surrogates too): object, never
        # pandas 3's pyarrow-backed str dtype
        nodes = pd.DataFrame({"name": pd.Series(names[perm], dtype=object), "parent": new_parent})
        if kind is None:
            nodes["kind"] = "function"
        elif isinstance(kind, str):
            nodes["kind"] = kind
        else:
            nodes["kind"] = np.asarray(kind, dtype=object)[perm]
        if columns is not None:
            cdf = pd.DataFrame(columns) if not isinstance(columns, pd.DataFrame) else columns
            for c in cdf.columns:
                nodes[c] = cdf[c].to_numpy()[perm]
        exc = _as_frame(metrics, n).iloc[perm].reset_index(drop=True)
        tree = cls(nodes, exc, meta, _trusted=True)
        if inclusive is not None:
            incf = _as_frame(inclusive, n).iloc[perm].reset_index(drop=True)
            for c in incf.columns:
                tree = tree._with_inclusive(c, incf[c].to_numpy())
        return tree, inv

    @classmethod
    def from_dict(
        cls, data: Mapping | Sequence[Mapping], meta: Mapping[str, Any] | None = None
    ) -> Tree:
        """Build a tree from nested dicts (one dict or a list of roots).

        Each dict has ``name`` (or Hatchet's ``frame: {"name": ..., "type": ...}``),
        optional ``metrics`` (exclusive values; keys ending in ``" (inc)"`` are
        ignored since inclusive values are derived), optional ``children`` and
        any other scalar keys as node attributes.

        >>> Tree.from_dict([{"name": "a", "children": [{"name": "b"}]}]).nodes["name"].tolist()
        ['a', 'b']
        """
        roots = [data] if isinstance(data, Mapping) else list(data)
        parents: list[int] = []
        names: list[str] = []
        kinds: list[str] = []
        metric_rows: list[Mapping] = []
        inc_rows: list[Mapping] = []
        attrs: list[Mapping] = []
        stack: list[tuple[Mapping, int]] = [(r, -1) for r in reversed(roots)]
        while stack:
            d, par = stack.pop()
            if not isinstance(d, Mapping):
                raise ProfileError(
                    None, f"expected a dict for node, got {type(d).__name__}", f"node {len(names)}"
                )
            frame = d.get("frame") if isinstance(d.get("frame"), Mapping) else {}
            nm = d.get("name", frame.get("name"))
            if nm is None:
                raise ProfileError(None, "node has no 'name'", f"node {len(names)}")
            me = len(names)
            parents.append(par)
            names.append(str(nm))
            kinds.append(str(d.get("kind", frame.get("type", "function"))))
            m = d.get("metrics") or {}
            metric_rows.append({k: v for k, v in m.items() if not k.endswith(INC)})
            inc_rows.append({k[: -len(INC)]: v for k, v in m.items() if k.endswith(INC)})
            extra = {k: v for k, v in frame.items() if k not in ("name", "type")}
            extra.update(
                {
                    k: v
                    for k, v in d.items()
                    if k not in ("name", "kind", "frame", "metrics", "children")
                }
            )
            attrs.append(extra)
            for ch in reversed(list(d.get("children") or [])):
                stack.append((ch, me))
        exc = pd.DataFrame.from_records(metric_rows)
        incd = pd.DataFrame.from_records(inc_rows)
        only_inc = [c for c in incd.columns if c not in exc.columns]
        cols = pd.DataFrame.from_records(attrs) if any(attrs) else None
        return cls.from_parents(
            parents,
            names,
            exc.fillna(0) if len(exc.columns) else None,
            kind=kinds,
            columns=cols,
            meta=meta,
            inclusive=incd[only_inc].fillna(0) if only_inc else None,
        )

    # ------------------------------------------------------------ accessors
    @property
    def nodes(self) -> pd.DataFrame:
        """Node attributes indexed by node id (treat as read-only)."""
        return self._nodes

    @property
    def exc_metrics(self) -> list[str]:
        """Names of the exclusive metrics."""
        return list(self._exc.columns)

    @property
    def inc_metrics(self) -> list[str]:
        """Names of the inclusive metrics (``"X (inc)"``); ``"none"`` metrics have none."""
        rules = self.aggregation
        return [inc_name(c) for c in self._exc.columns if rules[c] != "none"]

    @property
    def aggregation(self) -> dict[str, str]:
        """Aggregation rule of every metric: ``"sum"``, ``"max"``, ``"min"`` or ``"none"``.

        >>> t = Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 2.0], "peak": [3.0, 7.0]},
        ...                       meta={"aggregation": {"peak": "max"}})
        >>> t.aggregation, t.metrics["peak (inc)"].tolist()
        ({'time': 'sum', 'peak': 'max'}, [7.0, 7.0])
        """
        rules = self._meta.get("aggregation", {})
        return {c: rules.get(c, "sum") for c in self._exc.columns}

    def with_aggregation(self, rules: Mapping[str, str]) -> Tree:
        """A new tree whose metrics follow ``rules`` (metric -> ``"sum"``,
        ``"max"``, ``"min"`` or ``"none"``); other metrics keep theirs.

        >>> t = Tree.from_parents([-1, 0], ["main", "f"], {"BlockSize": [256.0, 128.0]})
        >>> list(t.with_aggregation({"BlockSize": "none"}).metrics.columns)
        ['BlockSize']
        """
        rules = check_aggregation(rules)
        unknown = [m for m in rules if m not in self._exc.columns]
        if unknown:
            raise KeyError(f"no metric {unknown[0]!r}; have {self.exc_metrics}")
        meta = {**self._meta, "aggregation": {**self._meta.get("aggregation", {}), **rules}}
        return Tree(self._nodes.copy(), self._exc.copy(), meta, _trusted=True)

    def rule(self, column: str) -> str:
        """Aggregation rule of a metric column (``"X"`` or ``"X (inc)"``)."""
        rules = self.aggregation
        if column in rules:
            return rules[column]
        base, inclusive = base_metric(column)
        if inclusive and base in rules:
            return rules[base]
        raise KeyError(f"no metric {column!r}; have {list(self.metrics.columns)}")

    def is_additive(self, column: str) -> bool:
        """Whether ``column`` is an inclusive sum: children's values add up
        under their parent (what sizes an icicle or a Sankey link)."""
        return (
            column.endswith(INC) and column not in self._exc.columns and self.rule(column) == "sum"
        )

    @property
    def metrics(self) -> pd.DataFrame:
        """Exclusive and inclusive metrics indexed by node id (read-only).

        Columns come in pairs ``X``, ``X (inc)``; a metric with the rule
        ``"none"`` has only its per-node column.
        """
        if "metrics" not in self._cache:
            inc = self.inclusive_values()
            rules = self.aggregation
            df = self._exc.copy()
            order = []
            for j, c in enumerate(self._exc.columns):
                order.append(c)
                if rules[c] != "none":
                    df[inc_name(c)] = inc[:, j]
                    order.append(inc_name(c))
            self._cache["metrics"] = df[order]
        return self._cache["metrics"]

    @property
    def frame(self) -> pd.DataFrame:
        """Nodes and metrics side by side: the table queries run on."""
        if "frame" not in self._cache:
            self._cache["frame"] = pd.concat([self._nodes, self.metrics], axis=1)
        return self._cache["frame"]

    @property
    def meta(self) -> dict[str, Any]:
        """Tree metadata (``units``, ``format``, ``source`` and whatever the file held)."""
        return self._meta

    @property
    def units(self) -> dict[str, str]:
        """Unit of each metric that has one (``meta["units"]``)."""
        return dict(self._meta.get("units", {}))

    def unit(self, column: str) -> str | None:
        """Unit of a metric column: its own entry (a per-node ``"X (inc)"``), else
        its metric's (``"X (inc)"`` is in ``X``'s unit); None when unknown.

        >>> t = Tree.from_parents([-1], ["main"], {"time": [1.0]}, meta={"units": {"time": "ms"}})
        >>> t.unit("time (inc)"), t.unit("calls")
        ('ms', None)
        """
        units = self._meta.get("units", {})
        return units.get(column) or units.get(base_metric(column)[0])

    @property
    def parent(self) -> np.ndarray:
        return self._nodes["parent"].to_numpy()

    @property
    def depth(self) -> np.ndarray:
        return self._nodes["depth"].to_numpy()

    @property
    def names(self) -> np.ndarray:
        return self._nodes["name"].to_numpy()

    @property
    def levels(self) -> list[np.ndarray]:
        """Node ids per depth, top-down."""
        return self._cache["levels"]

    @property
    def end(self) -> np.ndarray:
        """``end[i]``: one past the last id of node ``i``'s subtree."""
        if "end" not in self._cache:
            size = accumulate_up(np.ones(len(self), dtype=np.int64), self.parent, self.levels)
            self._cache["end"] = np.arange(len(self)) + size.astype(np.int64)
        return self._cache["end"]

    @property
    def is_leaf(self) -> np.ndarray:
        return self.end == np.arange(len(self)) + 1

    @property
    def roots(self) -> np.ndarray:
        return np.flatnonzero(self.parent < 0)

    def children(self, node: int) -> np.ndarray:
        """Ids of the children of ``node``."""
        node = int(node)
        lo, hi = node + 1, int(self.end[node])
        return lo + np.flatnonzero(self.parent[lo:hi] == node)

    def path(self, node: int) -> tuple[str, ...]:
        """Names from the root down to ``node``."""
        out = []
        p = self.parent
        i = int(node)
        while i >= 0:
            out.append(str(self._nodes["name"].iat[i]))
            i = int(p[i])
        return tuple(reversed(out))

    @property
    def callpaths(self) -> pd.Series:
        """Call path of every node as one string, names joined by ``/``.

        ``/`` and ``\\`` inside names are escaped with a backslash, so the
        string identifies the node (the ``callpath`` query attribute).
        """
        if "callpaths" not in self._cache:
            esc = self._nodes["name"].astype(str).str.replace("\\", "\\\\", regex=False)
            esc = esc.str.replace("/", "\\/", regex=False).to_numpy(dtype=object)
            out = np.empty(len(self), dtype=object)
            par = self.parent
            for d, lv in enumerate(self.levels):
                out[lv] = esc[lv] if d == 0 else out[par[lv]] + "/" + esc[lv]
            self._cache["callpaths"] = pd.Series(out, index=self._nodes.index, name="callpath")
        return self._cache["callpaths"]

    def __len__(self) -> int:
        return len(self._nodes)

    def __repr__(self) -> str:
        return (
            f"<cctviz.Tree: {len(self)} nodes, {len(self.roots)} roots, "
            f"depth {len(self.levels)}, metrics {self.exc_metrics}>"
        )

    def __str__(self) -> str:
        """The top of the tree (``print(tree)``), with a line on how to see more."""
        from ..ops.text import SHORT_NODES, render

        return render(self, max_nodes=SHORT_NODES, hint="repr")

    def _repr_pretty_(self, p, cycle) -> None:  # IPython: the short view of str()
        p.text(repr(self) if cycle else str(self))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tree):
            return NotImplemented
        return (
            self._nodes.equals(other._nodes)
            and self._exc.equals(other._exc)
            and self._meta == other._meta
        )

    __hash__ = None  # type: ignore[assignment]

    # ------------------------------------------------------------ metrics
    def inclusive_values(self) -> np.ndarray:
        """Inclusive values of every exclusive metric by its rule, shape (nodes,
        metrics); the column of a ``"none"`` metric is NaN."""
        if "inc" not in self._cache:
            vals = (
                self._exc.to_numpy(dtype=np.float64)
                if len(self._exc.columns)
                else np.zeros((len(self), 0))
            )
            rules = list(self.aggregation.values())
            self._cache["inc"] = accumulate_up(vals, self.parent, self.levels, rules)
        return self._cache["inc"]

    def exclusive_from_inclusive(self, inclusive: np.ndarray, rule: str = "sum") -> np.ndarray:
        """Own values that give ``inclusive`` back under ``rule``.

        ``sum``: own minus the children's sum. ``max``/``min``/``none``: the
        values themselves (for ``max`` that is exact when no child exceeds its
        parent, as for the maximum over ranks of an inclusive time).
        """
        inclusive = np.asarray(inclusive, dtype=np.float64)
        if rule != "sum":
            return inclusive.copy()
        return own_from_inclusive(self.parent, inclusive)

    def _with_exclusive(self, name: str, values: np.ndarray) -> Tree:
        exc = self._exc.copy()
        exc[name] = values
        return Tree(self._nodes.copy(), exc, self._meta, _trusted=True)

    def _with_inclusive(self, name: str, values: np.ndarray) -> Tree:
        """Add a metric known by its inclusive values (see :meth:`from_parents`)."""
        rule = self._meta.get("aggregation", {}).get(name, "sum")
        t = self._with_exclusive(name, self.exclusive_from_inclusive(values, rule))
        if rule in ("max", "min"):
            got = t.metrics[inc_name(name)].to_numpy()
            ok = np.isclose(got, values, rtol=1e-9, equal_nan=True) | np.isnan(values)
            if not ok.all():
                bad = int(np.flatnonzero(~ok)[0])
                note = (
                    f"given as inclusive values that the rule {rule!r} does not give back "
                    f"(node {bad} {self.names[bad]!r}: {values[bad]!r}, {rule} of its "
                    f"subtree {got[bad]!r}); kept as per-node values (aggregation 'none')"
                )
                meta = dict(t._meta)
                meta["aggregation"] = {**meta.get("aggregation", {}), name: "none"}
                meta["aggregation_notes"] = {**meta.get("aggregation_notes", {}), name: note}
                t = Tree(t._nodes, t._exc, meta, _trusted=True)
        return t

    def add_metric(
        self,
        name: str,
        values: Any,
        *,
        inclusive: bool = False,
        unit: str | None = None,
        aggregation: str = "sum",
    ) -> Tree:
        """A new tree with one more metric.

        ``values`` are exclusive values (or inclusive ones with
        ``inclusive=True``, from which own values are derived by the
        ``aggregation`` rule); a callable gets ``tree.frame`` and returns them.

        >>> t = Tree.from_parents([-1, 0], ["a", "b"], {"time": [1.0, 3.0]})
        >>> t.add_metric("ms", lambda f: f["time"] * 1e3).metrics["ms (inc)"].tolist()
        [4000.0, 3000.0]
        """
        if name.endswith(INC) and aggregation != "none":  # a per-node "X (inc)" keeps its name
            name, inclusive = name[: -len(INC)], True
        if callable(values):
            values = values(self.frame)
        arr = np.asarray(values, dtype=np.float64).reshape(-1)
        if arr.shape[0] != len(self):
            raise ValueError(f"{arr.shape[0]} values for {len(self)} nodes")
        base = self
        rules = check_aggregation({name: aggregation})
        if aggregation != "sum" or name in self._meta.get("aggregation", {}):
            meta = {**self._meta, "aggregation": {**self._meta.get("aggregation", {}), **rules}}
            base = Tree(self._nodes, self._exc, meta, _trusted=True)
        t = base._with_inclusive(name, arr) if inclusive else base._with_exclusive(name, arr)
        if unit is not None:
            t._meta = {**t._meta, "units": {**self.units, name: unit}}
        return t

    def exclusive_metric(self, metric: str | None = None) -> str:
        """The exclusive metric a writer or exporter should use: ``metric``
        without its ``" (inc)"`` suffix, or the first metric when None.

        >>> t = Tree.from_parents([-1], ["main"], {"time": [1.0], "calls": [2]})
        >>> t.exclusive_metric(), t.exclusive_metric("calls (inc)")
        ('time', 'calls')
        """
        if metric is None:
            if not self.exc_metrics:
                raise ValueError("the tree has no metrics")
            return self.exc_metrics[0]
        metric = base_metric(metric)[0]
        if metric not in self.exc_metrics:
            raise KeyError(f"no metric {metric!r}; have {self.exc_metrics}")
        return metric

    def metric_column(self, metric: str | None) -> str:
        """Resolve a metric argument to a column of :attr:`metrics`.

        ``None`` picks a default that says something about this tree: ``time``
        if it is not all zero, else the first metric that is not (``gpu_time``
        for a GPU trace whose CPU times are empty), else ``time`` or the first
        metric; inclusive where the metric has an inclusive form.

        >>> t = Tree.from_parents([-1, 0], ["a", "b"], {"time": [0.0, 0.0], "gpu_time": [0, 2.0]})
        >>> t.metric_column(None)
        'gpu_time (inc)'
        """
        if metric is None:
            if not self.exc_metrics:
                raise ValueError("tree has no metrics")
            rules = self.aggregation
            order = sorted(self.exc_metrics, key=lambda m: m != "time")
            vals = self._exc[order].to_numpy(dtype=np.float64)
            nonzero = np.nansum(np.abs(vals), axis=0) > 0 if len(self) else np.zeros(len(order))
            pick = order[int(np.argmax(nonzero))] if nonzero.any() else order[0]
            return pick if rules[pick] == "none" else inc_name(pick)
        if metric not in self.metrics.columns:
            raise KeyError(f"no metric {metric!r}; have {list(self.metrics.columns)}")
        return metric

    # ------------------------------------------------------------ facade over ops
    def query(self, query: Any) -> NodeSet:
        """Nodes matched by a call-path query (see :mod:`cctviz.ops.query`).

        ``query`` is Hatchet's object dialect (list of ``(quantifier,
        {attr: predicate})``), its string dialect (``MATCH ... WHERE ...``) or
        a callable taking :attr:`frame` and returning a boolean mask.
        """
        from ..ops.query import apply_query

        return apply_query(self, query)

    def select(self, ids: Iterable[int] | np.ndarray) -> NodeSet:
        """A :class:`NodeSet` of the given node ids."""
        from .nodeset import NodeSet

        return NodeSet(self, ids)

    def filter(self, keep: Any, *, squash: bool = True) -> Tree:
        """Keep matching nodes, re-attached to their nearest kept ancestor."""
        from ..ops.transform import filter_tree

        return filter_tree(self, keep, squash=squash)

    def merge_duplicates(self) -> Tree:
        """Same-named siblings merged into one node each, values combined by
        each metric's rule (see :func:`cctviz.ops.transform.merge_duplicates`)."""
        from ..ops.transform import merge_duplicates

        return merge_duplicates(self)

    def prune(
        self,
        metric: str | None = None,
        *,
        threshold: float | None = None,
        fraction: float | None = None,
        top_k: int | None = None,
    ) -> Tree:
        """Fold small nodes into one ``(other)`` node per parent (see ops.transform.prune)."""
        from ..ops.transform import prune

        return prune(self, metric, threshold=threshold, fraction=fraction, top_k=top_k)

    def focus(self, node: Any) -> Tree:
        """The subtree(s) under ``node`` (an id, ids, a NodeSet or a query)."""
        from ..ops.transform import focus

        return focus(self, node)

    def diff(self, other: Tree, labels: Sequence[str] | None = None) -> Tree:
        """``self - other``, aligned by call path (see :func:`cctviz.ops.diff.diff`)."""
        from ..ops.diff import diff

        return diff(self, other, labels)

    def flat_profile(self, metric: str | None = None) -> pd.DataFrame:
        """Metrics grouped by node name (recursion counted once inclusive), in
        their units (:func:`cctviz.ops.flat.flat_profile`)."""
        from ..ops.flat import flat_profile

        return flat_profile(self, metric)

    def bottom_up(self) -> Tree:
        """The inverted (callers) tree: roots are where time is spent."""
        from ..ops.flat import bottom_up

        return bottom_up(self)

    def render(self, metric: str | None = None, **kw: Any) -> str:
        """Indented text picture of the tree, largest children first, values
        with units: at most ``max_nodes`` nodes, none whose subtree stays below
        ``threshold`` of the root, zero-valued subtrees folded, names cut to
        ``width`` (see :func:`cctviz.ops.text.render` for ``second=``,
        ``digits=`` and the rest)."""
        from ..ops.text import render

        return render(self, metric, **kw)

    def to_hatchet_literal(self) -> list[dict[str, Any]]:
        """The tree as the graph literal ``hatchet.GraphFrame.from_literal`` takes:
        nested ``frame`` (name, type = kind, node columns) / ``metrics``
        (exclusive and inclusive) / ``children`` dicts, one per root.

        >>> t = Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 2.0]})
        >>> lit = t.to_hatchet_literal()
        >>> lit[0]["frame"], lit[0]["metrics"], lit[0]["children"][0]["frame"]["name"]
        ({'name': 'main', 'type': 'function'}, {'time': 1.0, 'time (inc)': 3.0}, 'f')
        """
        from ..writers.hatchet import to_literal

        return to_literal(self)

    def save(self, path: str, **kw: Any) -> None:
        """Write the native format (see :mod:`cctviz.writers`)."""
        from ..writers import write

        write(self, path, **kw)


def _as_frame(data: Mapping[str, Any] | pd.DataFrame | None, n: int) -> pd.DataFrame:
    if data is None:
        return pd.DataFrame(index=pd.RangeIndex(n))
    df = data.copy() if isinstance(data, pd.DataFrame) else pd.DataFrame(dict(data))
    if len(df) != n:
        raise ValueError(f"metrics have {len(df)} rows for {n} nodes")
    for c in df.columns:
        if not pd.api.types.is_numeric_dtype(df[c]) or df[c].dtype == bool:
            num = pd.to_numeric(df[c], errors="coerce").astype(np.float64)
            lost = int((num.isna() & df[c].notna()).sum())
            if lost:
                import warnings

                warnings.warn(
                    f"metric {c!r}: {lost} values are not numbers and became NaN "
                    f"(e.g. {df[c][num.isna() & df[c].notna()].iloc[0]!r}); keep text as a "
                    "node column (columns=) instead",
                    stacklevel=4,
                )
            df[c] = num
    return df.reset_index(drop=True)
