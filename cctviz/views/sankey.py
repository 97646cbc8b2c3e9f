"""SankeyView: the ensemble Sankey (CallFlow's design, deterministic) in Jupyter.

Call sites are grouped into super nodes (modules; :mod:`cctviz.ops.sankey`
builds the graph); the front end (``js/sankey/``) orders the nodes within
their columns, lays them out on one vertical scale and draws, on every node,
how its inclusive value spreads over the profiles (ranks, runs): a histogram,
a box plot with 1.5 IQR outliers labelled by rank or run, an imbalance cue.
Python computes every statistic here, vectorised over super nodes x profiles,
and sends only aggregates (bins, quartiles, a few outliers) as binary buffers.
The synced traits are the contract (``cctviz/views/CONTRACT.md``).

Example:
    >>> import cctviz
    >>> a = cctviz.Tree.from_parents([-1, 0, 1], ["main", "solve", "MPI_Wait"], {"time": [1.0, 4.0, 2.0]})
    >>> b = cctviz.Tree.from_parents([-1, 0, 1], ["main", "solve", "MPI_Wait"], {"time": [1.0, 4.0, 6.0]})
    >>> ens = cctviz.Ensemble.from_trees([a, b], profiles={"rank": [0, 1]})
    >>> view = cctviz.SankeyView(ens, group_by=[("app", "^(main|solve)$"), ("mpi", "^MPI_")])
    >>> view.nodes[["group", "mean", "max", "argmax"]].to_dict("records")
    [{'group': 'app', 'mean': 9.0, 'max': 11.0, 'argmax': 1}, {'group': 'mpi', 'mean': 4.0, 'max': 6.0, 'argmax': 1}]
    >>> view.selected_groups = [1]          # as a click on "mpi" does
    >>> view.selection.names.tolist()
    ['MPI_Wait']
    >>> view.brush = {"node": 1, "lo": 5.0, "hi": 7.0}  # as brushing its histogram does
    >>> view.selected_profiles
    [1]
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd
import traitlets

from ..model.ensemble import BaseEnsemble, Ensemble
from ..model.nodeset import NodeSet
from ..model.stats import BINS, box_plots, counted_matrix, histogram, node_stats
from ..model.tables import shown_unit, with_units
from ..model.timeline import Timeline
from ..model.tree import Tree
from ..ops.collectives import wait_causes
from ..ops.sankey import NN_MODULE, GroupBy, SankeyGraph, module_graph
from .base import (
    CUE_SHARE,
    NodeSelection,
    ProfileIds,
    View,
    f32,
    i32,
    register_view,
    share_space,
)
from .source import MetricSource, waits_payload

#: the columns of :attr:`SankeyView.nodes` in the metric's unit
_IN_METRIC_UNIT = ("mean", "min", "max", "std", "q1", "median", "q3", "cost")

#: call sites drawn in an expanded super node
SITES = 200
#: groups name-based grouping by default when the tree has at most this many distinct names
NAME_GROUPS = 200


def default_group_by(tree: Tree) -> GroupBy:
    """How a profile's call sites group by default: nn.Module paths for the
    runtime's profiles, the ``module`` attribute (load module, library) where
    a reader gives one, else the call site's name when there are few, else
    the ancestor two levels down.

    Example:
        >>> import cctviz
        >>> default_group_by(cctviz.Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 1.0]}))
        'name'
    """
    cols = tree.nodes.columns
    if "kind" in cols and (tree.nodes["kind"].astype(str) == "module").any():
        return NN_MODULE
    if "module" in cols and tree.nodes["module"].dropna().astype(str).nunique() > 1:
        return "module"
    if pd.Series(tree.names, dtype=object).nunique() <= NAME_GROUPS:
        return "name"
    return 2


def describe_group_by(group_by: GroupBy) -> str:
    """``group_by`` in words for the legend.

    >>> describe_group_by("module"), describe_group_by(2), describe_group_by([("mpi", "^MPI_")])
    ('module', 'call path depth 2', '1 pattern(s)')
    """
    if isinstance(group_by, str):
        return group_by
    if isinstance(group_by, tuple) and len(group_by) == 2 and group_by[0] == NN_MODULE:
        return f"{NN_MODULE} (path depth {group_by[1]})"
    if isinstance(group_by, (int, np.integer)):
        return f"call path depth {int(group_by)}"
    if isinstance(group_by, Mapping):
        return f"mapping of {len(group_by)} name(s)"
    if callable(group_by):
        return getattr(group_by, "__name__", "function")
    return f"{len(list(group_by))} pattern(s)"


def short_label(group: str) -> str:
    """What a node shows of its group: a path's last part (HPCToolkit gives
    load modules as full paths); the tooltip shows the whole.

    >>> short_label("/usr/lib64/libmpi.so.12"), short_label("GPT.blocks.0"), short_label("/")
    ('libmpi.so.12', 'GPT.blocks.0', '/')
    """
    if "/" in group.rstrip("/") or "\\" in group:
        base = os.path.basename(group.rstrip("/\\"))
        return base or group
    return group


def _profile_ids(ens: Ensemble, which: Any, what: str) -> np.ndarray:
    """Profile ids from ids, a boolean mask, ``{column: value}`` or a callable on the profiles."""
    prof = ens.profiles
    if isinstance(which, Mapping):
        mask = np.ones(len(prof), dtype=bool)
        for col, val in which.items():
            if col not in prof.columns:
                raise KeyError(
                    f"{what}: no profile column {col!r} (there are: {', '.join(map(str, prof.columns))})"
                )
            mask &= (prof[col] == val).to_numpy()
        ids = np.flatnonzero(mask)
    elif callable(which):
        return _profile_ids(ens, which(prof), what)
    else:
        arr = np.asarray(which)
        ids = np.flatnonzero(arr) if arr.dtype == bool else arr.astype(np.int64).reshape(-1)
    ids = np.unique(ids)
    if ids.size and (ids[0] < 0 or ids[-1] >= ens.n_profiles):
        raise ValueError(f"{what}: profile ids must be in [0, {ens.n_profiles})")
    return ids


def _nanmean(v: np.ndarray) -> np.ndarray:
    """Row means over the values counted (NaN: left out); NaN for a row of none."""
    n = (~np.isnan(v)).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, np.nansum(v, axis=1) / np.maximum(n, 1), np.nan)


def _label_of(which: Any, fallback: str) -> str:
    if isinstance(which, Mapping):
        return ", ".join(f"{k}={v}" for k, v in which.items())
    return fallback


@register_view("sankey")
class SankeyView(View):
    """The ensemble Sankey of an Ensemble (or a Tree): how an inclusive metric
    flows through the program's modules, and on every module how it spreads
    over the profiles (ranks, runs).

    Args:
        data: an Ensemble (or a single Tree: one profile).
        group_by: how call sites group into super nodes: ``"nn.Module"`` (the
            runtime's module paths, 2 segments; ``("nn.Module", k)`` for k), a
            node attribute (``"module"``, ``"file"``, ``"name"``), a call-path
            depth (int), a list of ``(group, regex)``, a mapping of names or a
            callable on call paths. Call sites no rule matches join the
            ``"(other)"`` group. Default: :func:`default_group_by`.
        metric: the additive inclusive metric sizing nodes (default the time).
        diff: compare two groups of profiles: ``(A, B)``, each profile ids, a
            boolean mask, ``{column: value}`` or a callable on
            ``ensemble.profiles``, or two Ensembles (their profiles are then
            joined into one ensemble; ``data`` may be left out:
            ``SankeyView(diff=(groups[8], groups[64]))`` with
            ``groups = ens.groupby("world_size")``). Nodes are coloured by mean(B) - mean(A)
            on a diverging scale and show the per-profile differences of B.
        diff_labels: names of A and B in the legend.
        **kwargs: traits (``selection``, ``selected_groups``,
            ``selected_profiles``, ``expanded``).

    Clicking a node selects its call sites (``selection``, a NodeSet of the
    unified tree; ``selected_groups`` its super node ids); brushing a node's
    distribution or clicking an outlier selects profiles
    (``selected_profiles``); double-clicking expands a node into its call sites.
    :func:`cctviz.link` ties these to a CCTView and a ProfilesView.
    """

    metric = traitlets.Unicode("").tag(sync=True)
    metrics = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    group_by = traitlets.Unicode("", read_only=True).tag(sync=True)
    selection = NodeSelection()
    selected_groups = traitlets.List(traitlets.Int()).tag(sync=True)
    selected_profiles = ProfileIds()
    brush = traitlets.Dict().tag(sync=True)
    expanded = traitlets.List(traitlets.Int()).tag(sync=True)
    _data = traitlets.Dict().tag(sync=True)

    #: traits that make up a view's state
    STATE = ("metric", "selection", "selected_groups", "selected_profiles", "brush", "expanded")

    def __init__(
        self,
        data: Ensemble | Tree | Timeline | None = None,
        group_by: GroupBy | None = None,
        metric: str | None = None,
        diff: tuple[Any, Any] | None = None,
        diff_labels: tuple[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        labels = list(diff_labels) if diff_labels is not None else None
        if diff is not None and all(isinstance(d, Ensemble) for d in diff):
            la, lb = labels or ["A", "B"]
            data = Ensemble.concat(list(diff), extra=[{"diff": la}, {"diff": lb}])
            diff = ({"diff": la}, {"diff": lb})
            labels = [la, lb]
        self._timeline = data if isinstance(data, Timeline) else None
        if self._timeline is not None:  # its aggregate; waits from its calls
            data = self._timeline.ensemble()
        if not isinstance(data, (BaseEnsemble, Tree)):
            raise TypeError(
                f"SankeyView: expected an Ensemble, a Tree or a Timeline, got {type(data).__name__}"
            )
        self._ens = data if isinstance(data, BaseEnsemble) else None
        self._tree = data.tree if isinstance(data, BaseEnsemble) else data
        self._src = MetricSource(data)
        self._group_by = default_group_by(self._tree) if group_by is None else group_by
        self._graphs: dict[str, tuple[SankeyGraph, np.ndarray, np.ndarray]] = {}
        self._node_means: dict[str, np.ndarray] = {}
        self._node_stats: dict[str, dict[str, Any]] = {}
        self._guard = False
        self._diff = self._parse_diff(diff, labels)
        offered = [m for m in self._src.metrics if self._src.is_additive(m)]
        if not offered:
            raise ValueError(
                "SankeyView needs an additive inclusive metric (such as 'time (inc)');"
                f" this profile has: {', '.join(self._src.metrics)}"
            )
        metric = metric or (
            self._src.default_metric if self._src.default_metric in offered else offered[0]
        )
        if metric not in offered:
            raise ValueError(
                f"metric {metric!r}: a Sankey needs an additive inclusive metric; choose one of {offered}"
            )
        self._ready = False
        super().__init__(metric=metric, _data={}, **kwargs)
        share_space(self)
        self.set_trait("metrics", offered)
        self.set_trait("group_by", describe_group_by(self._group_by))
        if self.selection is None:
            self.selection = NodeSet(self._tree)
        self._ready = True
        if self.selected_groups and not self.selection.ids.size:
            self._on_groups({"new": self.selected_groups})
        elif self.selection.ids.size:
            self._on_selection({"new": self.selection})
        self._refresh()

    # ------------------------------------------------------------ public API
    @property
    def tree(self) -> Tree:
        """The (unified) tree whose call sites the super nodes group."""
        return self._tree

    @property
    def shown(self) -> Ensemble | Tree:
        """The Ensemble or Tree the Sankey shows."""
        return self._ens if self._ens is not None else self._tree

    @property
    def timeline(self) -> Timeline | None:
        """The Timeline whose ensemble is shown, or None."""
        return self._timeline

    @property
    def graph(self) -> SankeyGraph:
        """The super graph shown (:func:`cctviz.ops.sankey.module_graph`)."""
        return self._graph()[0]

    @property
    def nodes(self) -> pd.DataFrame:
        """One row per super node: group, column, call sites, and the
        statistics over the profiles in scope, those of :func:`cctviz.model.stats.node_stats`
        (mean, min, max, std, quartiles, argmax profile id, imbalance = max/mean,
        cost = max - mean, n profiles counted): the numbers ``ens.stats`` gives."""
        g = self._graph()[0]
        d = self._stats()
        df = g.nodes[["group", "occurrence", "column", "members"]].copy()
        for k in (
            "mean",
            "min",
            "max",
            "std",
            "q1",
            "median",
            "q3",
            "argmax",
            "imbalance",
            "cost",
            "n",
        ):
            df[k] = d[k]
        unit = shown_unit(self._src.unit(self.metric))
        return with_units(df, dict.fromkeys(_IN_METRIC_UNIT, unit) if unit else {})

    @property
    def per_profile(self) -> pd.DataFrame:
        """Super nodes x profiles (ids of the ensemble) values of the metric, as the
        statistics count them: 0 where the absence rule counts a missing value as
        0, NaN where the profile is left out (:func:`cctviz.model.stats.counted_matrix`)."""
        _, per, pids = self._graph()
        unit = shown_unit(self._src.unit(self.metric))
        out = pd.DataFrame(self._counted(), columns=pids)
        return with_units(out, dict.fromkeys(out.columns, unit) if unit else {})

    @property
    def selected(self) -> pd.DataFrame:
        """The selected super nodes (rows of :attr:`nodes`)."""
        return self.nodes.iloc[self.selected_groups]

    def replace_data(self, data: Ensemble | Tree | Timeline) -> None:
        """Show ``data`` instead (a run watched as it grows: the live dashboard).
        Kept: the grouping (the new tree's default where it was the old one's),
        the metric where ``data`` offers it (else its default) and the selection,
        matched by call path; reset: the expanded super nodes, the brush and a
        profile selection (super nodes and profiles may be others now).

        Example:
            >>> import cctviz
            >>> a = cctviz.Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 2.0]})
            >>> b = cctviz.Tree.from_parents([-1, 0, 0], ["main", "g", "f"], {"time": [1.0] * 3})
            >>> view = cctviz.SankeyView(a, selection=[1]); view.replace_data(b)
            >>> view.selection.ids.tolist(), view.nodes["group"].tolist()
            ([2], ['main', 'g', 'f'])
        """
        if self._diff is not None:
            raise ValueError("a diff Sankey shows its two groups: make a new view for new data")
        timeline = data if isinstance(data, Timeline) else None
        ens_or_tree = timeline.ensemble() if timeline is not None else data
        if not isinstance(ens_or_tree, (BaseEnsemble, Tree)):
            raise TypeError(
                f"SankeyView: expected an Ensemble, a Tree or a Timeline, got {type(data).__name__}"
            )
        src = MetricSource(ens_or_tree)
        offered = [m for m in src.metrics if src.is_additive(m)]
        if not offered:
            raise ValueError(f"SankeyView needs an additive inclusive metric; {data!r} has none")
        tree = ens_or_tree.tree if isinstance(ens_or_tree, BaseEnsemble) else ens_or_tree
        if describe_group_by(self._group_by) == describe_group_by(default_group_by(self._tree)):
            self._group_by = default_group_by(tree)
        selection = self.selection
        self._ready = False  # no observer reacts to the half-replaced state
        try:
            self._timeline, self._tree, self._src = timeline, tree, src
            self._ens = ens_or_tree if isinstance(ens_or_tree, BaseEnsemble) else None
            self._graphs.clear()
            self._node_means.clear()
            self._node_stats.clear()
            with self.hold_trait_notifications():
                self.set_trait("metrics", offered)
                if self.metric not in offered:
                    default = src.default_metric
                    self.metric = default if default in offered else offered[0]
                self.set_trait("group_by", describe_group_by(self._group_by))
                self.expanded, self.brush, self.selected_profiles = [], {}, []
                self.selection = selection.on(tree) if selection is not None else NodeSet(tree)
        finally:
            self._ready = True
        self._on_selection({"new": self.selection})  # the super nodes it falls in now
        self._refresh()

    def figure_extras(self) -> dict[str, Any]:
        """How the call sites are grouped (see CONTRACT.md)."""
        return {"group_by": self.group_by}

    # ------------------------------------------------------------ diff
    def _parse_diff(
        self, diff: tuple[Any, Any] | None, labels: list[str] | None
    ) -> tuple[np.ndarray, np.ndarray, str, str] | None:
        if diff is None:
            return None
        if self._ens is None:
            raise ValueError("diff: a single Tree has no profiles to compare; give an Ensemble")
        if not (isinstance(diff, (tuple, list)) and len(diff) == 2):
            raise ValueError(f"diff: expected two groups of profiles (A, B), got {diff!r}")
        live = np.asarray(self._ens.live, dtype=bool)
        a, b = (_profile_ids(self._ens, d, f"diff[{k}]") for k, d in enumerate(diff))
        a, b = a[live[a]], b[live[b]]
        for name, ids in (("A", a), ("B", b)):
            if not ids.size:
                raise ValueError(f"diff: group {name} has no live profile")
        if np.intersect1d(a, b).size:
            raise ValueError("diff: groups A and B share profiles")
        la = labels[0] if labels else _label_of(diff[0], "A")
        lb = labels[1] if labels else _label_of(diff[1], "B")
        return a, b, la, lb

    # ------------------------------------------------------------ reactions
    @contextmanager
    def _guarded(self):
        self._guard = True
        try:
            yield
        finally:
            self._guard = False

    @traitlets.validate("selected_groups", "expanded")
    def _v_groups(self, proposal: dict) -> list[int]:
        ids = sorted({int(i) for i in proposal["value"]})
        n = len(self._graph()[0].nodes) if self._ready else None
        if ids and (ids[0] < 0 or (n is not None and ids[-1] >= n)):
            raise traitlets.TraitError(
                f"{proposal['trait'].name}: super node ids must be in [0, {n})"
            )
        return ids

    @property
    def profile_count(self) -> int | None:
        """How many profiles the view can select among (None: a view of one Tree)."""
        return self._ens.n_profiles if self._ens is not None else None

    @traitlets.validate("metric")
    def _v_metric(self, proposal: dict) -> str:
        m = proposal["value"]
        if self._ready and m not in self.metrics:
            raise traitlets.TraitError(
                f"metric {m!r}: choose an additive inclusive metric of {self.metrics}"
            )
        return m

    @traitlets.validate("brush")
    def _v_brush(self, proposal: dict) -> dict:
        b = dict(proposal["value"])
        if not b:
            return {}
        try:
            node, lo, hi = int(b["node"]), float(b["lo"]), float(b["hi"])
        except (KeyError, TypeError, ValueError):
            raise traitlets.TraitError(
                f"brush: expected {{}} or {{'node': k, 'lo': v0, 'hi': v1}}, got {b!r}"
            ) from None
        return {"node": node, "lo": min(lo, hi), "hi": max(lo, hi)}

    @traitlets.observe("selection")
    def _on_selection(self, change: dict) -> None:
        if self._guard or not self._ready:
            return
        members = self._graph()[0].members
        groups = np.unique(members[change["new"].ids])
        with self._guarded():
            self.selected_groups = groups[groups >= 0].tolist()

    @traitlets.observe("selected_groups")
    def _on_groups(self, change: dict) -> None:
        if self._guard or not self._ready:
            return
        members = self._graph()[0].members
        with self._guarded():
            self.selection = NodeSet(self._tree, np.flatnonzero(np.isin(members, change["new"])))

    @traitlets.observe("brush")
    def _on_brush(self, change: dict) -> None:
        b = change["new"]
        if not b or not self._ready:
            return
        values, pids = self._brushable(b["node"])
        inside = (values >= b["lo"]) & (values <= b["hi"])
        with self._guarded():  # its observer refreshes the data
            self.selected_profiles = np.sort(pids[inside]).tolist()

    @traitlets.observe("selected_profiles")
    def _on_profiles(self, change: dict) -> None:
        if not self._ready:
            return
        if not self._guard and self.brush:
            with self._guarded():
                self.brush = {}
        self._refresh()

    @traitlets.observe("metric", "expanded")
    def _on_state(self, change: dict) -> None:
        if self._ready:
            self._refresh()

    # ------------------------------------------------------------ data
    def _scope(self) -> np.ndarray:
        """Profile ids the node heights average over: the live ones, or A and B in diff mode."""
        if self._ens is None:
            return np.zeros(1, dtype=np.int64)
        if self._diff is not None:
            return np.union1d(self._diff[0], self._diff[1])
        return np.flatnonzero(np.asarray(self._ens.live, dtype=bool))

    def _graph(self) -> tuple[SankeyGraph, np.ndarray, np.ndarray]:
        """(graph, per-profile values of the super nodes (nodes x scope), profile ids)."""
        key = self.metric
        if key not in self._graphs:
            scope = self._scope()
            data: Ensemble | Tree = self._tree
            if self._ens is not None:
                whole = np.array_equal(scope, np.flatnonzero(self._ens.live))
                data = self._ens if whole else self._ens.select(scope)
            g = module_graph(data, self._group_by, self.metric or None)
            if g.per_profile is not None:
                per = g.per_profile.to_numpy(dtype=np.float64)
                local = np.asarray(g.per_profile.columns, dtype=np.int64)
                pids = local if data is self._ens else scope[local]
            else:
                per = g.nodes["value"].to_numpy(dtype=np.float64)[:, None]
                pids = np.zeros(1, dtype=np.int64)
            self._graphs[key] = (g, per, pids)
        return self._graphs[key]

    def _stats(self) -> dict[str, Any]:
        """The statistics of every super node over the profiles in scope, from the
        model (:mod:`cctviz.model.stats`: the absence rule, ddof 1, quantiles,
        whiskers, outliers), with the argmax and outliers as profile ids: once per metric."""
        m = self.metric
        if m not in self._node_stats:
            g, per, pids = self._graph()
            if "mean" in g.nodes:  # an ensemble: module_graph asked the model
                st = g.nodes
            else:  # one tree: one profile
                node = np.flatnonzero(~np.isnan(per[:, 0]))
                st = node_stats(
                    node,
                    np.zeros_like(node),
                    per[node, 0],
                    len(per),
                    live=np.ones(1, dtype=bool),
                    run=np.zeros(1, dtype=np.int64),
                )
            d: dict[str, Any] = {
                k: st[k].to_numpy()
                for k in ("mean", "std", "min", "median", "max", "imbalance", "cost", "argmax", "n")
            }
            d["q1"], d["q3"] = st["q25"].to_numpy(), st["q75"].to_numpy()
            # super nodes x profiles in scope: the values the statistics count
            d["counted"] = (
                per
                if self._ens is None
                else counted_matrix(
                    per, live=np.ones(pids.size, dtype=bool), run=self._ens.absence_groups[pids]
                )
            )
            d.update(box_plots(d["counted"], d["q1"], d["q3"], d["median"]))
            self._node_stats[m] = d
        return self._node_stats[m]

    def _counted(self) -> np.ndarray:
        """Super nodes x profiles in scope: the values the statistics count (once per metric)."""
        return self._stats()["counted"]

    def _brushable(self, node: int) -> tuple[np.ndarray, np.ndarray]:
        """(values, profile ids) a brush on ``node`` ranges over: its values per
        profile, or in diff mode B's differences from A's mean."""
        g, per, pids = self._graph()
        if not 0 <= node < len(g.nodes):
            raise traitlets.TraitError(f"brush: no super node {node}")
        row = self._counted()[node]  # NaN: a profile the statistics leave out
        if self._diff is None:
            return row, pids
        a, b = self._diff[0], self._diff[1]
        in_a, in_b = np.isin(pids, a), np.isin(pids, b)
        return row[in_b] - _nanmean(row[in_a][None, :])[0], pids[in_b]

    def _refresh(self) -> None:
        self._data = self._payload()

    def _payload(self) -> dict[str, Any]:
        g, _, pids = self._graph()
        per = self._counted()
        nodes, links = g.nodes, g.links
        n = len(nodes)
        d = self._stats()
        argmax = d["argmax"]
        rows, cols, more = d["outliers"]
        groups = nodes["group"].astype(str).tolist()
        occ = nodes["occurrence"].to_numpy()
        label = [short_label(s) + (f" ({k + 1})" if k else "") for s, k in zip(groups, occ)]
        column = nodes["column"].to_numpy(dtype=np.int64)
        dummy_col = g.dummy_column
        n_dummy = int(dummy_col.size)
        fwd = g.edges[~g.edges["back"]].reset_index(drop=True)
        imbalance, cost = d["imbalance"], d["cost"]
        metric = self.metric
        unit = self._src.unit(metric)
        total = float(np.nansum(d["mean"][column == 0])) if n else 0.0
        sel = np.asarray(self.selected_profiles, dtype=np.int64)
        labelled = np.unique(np.concatenate([argmax[argmax >= 0], pids[cols], sel]))
        live = self._ens.live if self._ens is not None else np.ones(1, dtype=bool)
        out: dict[str, Any] = {
            "n": n,
            "n_dummy": n_dummy,
            "columns": int(column.max(initial=-1) + 1),
            "bins": BINS,
            "group": groups,
            "label": label,
            "column": i32(column),
            "value": f32(nodes["value"].to_numpy()),  # the height: flows add up
            "mean": f32(d["mean"]),  # the model's mean (the absence rule)
            "counted": i32(d["n"]),
            "members": i32(nodes["members"].to_numpy()),
            "cost": f32(cost),
            "imbalance": f32(imbalance),
            "argmax": i32(argmax),
            "hist": i32(d["hist"].ravel()),
            "outlier_node": i32(rows),
            "outlier_profile": i32(pids[cols]),
            "outlier_value": f32(per[rows, cols]),
            "outlier_more": i32(more),
            "link_source": i32(links["source"].to_numpy()),
            "link_target": i32(links["target"].to_numpy()),
            "link_value": f32(links["value"].to_numpy()),
            "link_edge": i32(links["edge"].to_numpy()),
            "edge_source": i32(fwd["source"].to_numpy()),
            "edge_target": i32(fwd["target"].to_numpy()),
            "dummy_column": i32(dummy_col),
            "back_edges": int(g.edges["back"].sum()),
            "metric": metric,
            "unit": unit,
            "rule": "sum",
            "profiles": int(per.shape[1]),
            "failed": int((~np.asarray(live, dtype=bool)).sum()),
            "profiles_total": self._ens.n_profiles if self._ens is not None else 1,
            "labels": self._src.profile_labels(labelled),
            "cost_threshold": CUE_SHARE * total if total > 0 else None,
            "sites": [self._sites(k) for k in self.expanded if k < n],
            "diff": self._diff_payload(per, pids) if self._diff is not None else None,
            "tree_size": len(self._tree),
        }
        if self._timeline is not None and self._diff is None:
            out["waits"] = self._waits(g)
        for k in ("min", "max", "std", "q1", "median", "q3", "whisker_lo", "whisker_hi"):
            out[k] = f32(d[k])
        if sel.size:
            in_sel = np.isin(pids, sel)
            out["hist_sel"] = i32(histogram(per[:, in_sel], d["min"], d["max"]).ravel())
            with np.errstate(invalid="ignore"):
                sm = _nanmean(per[:, in_sel]) if in_sel.any() else np.full(n, np.nan)
            out["sel_mean"] = f32(sm)
        return out

    def _waits(self, g: SankeyGraph) -> dict[str, Any]:
        """Who the waiting at the collectives of each super node waits for: the
        calls of its member contexts pooled (:func:`~cctviz.ops.collectives.wait_causes`)."""
        assert self._timeline is not None
        w = wait_causes(self._timeline, groups=g.members)  # calls matched once per timeline
        # a super node of collectives only gets the most waited for rank as its cue; one
        # that also holds other contexts (a module) tells its collectives' waits
        comm = self._tree.nodes["kind"].to_numpy() == "comm"
        mixed = np.zeros(len(g.nodes), dtype=bool)
        mixed[g.members[(g.members >= 0) & ~comm]] = True
        ids = w.index.to_numpy(dtype=np.int64)
        return waits_payload(w, ids, self._tree.names, pure=~mixed[ids])

    def _diff_payload(self, per: np.ndarray, pids: np.ndarray) -> dict[str, Any]:
        """``per``: the counted values (:meth:`_counted`; NaN: left out)."""
        assert self._diff is not None
        a, b, la, lb = self._diff
        in_a, in_b = np.isin(pids, a), np.isin(pids, b)
        mean_a = _nanmean(per[:, in_a])
        mean_b = _nanmean(per[:, in_b])
        delta = mean_b - mean_a
        diffs = per[:, in_b] - mean_a[:, None]
        has = ~np.isnan(diffs)
        lo = np.where(has, diffs, np.inf).min(axis=1, initial=np.inf)
        hi = np.where(has, diffs, -np.inf).max(axis=1, initial=-np.inf)
        lo, hi = np.where(np.isfinite(lo), lo, np.nan), np.where(np.isfinite(hi), hi, np.nan)
        bound = float(np.nanmax(np.abs(delta))) if delta.size else 0.0
        return {
            "a_label": la,
            "b_label": lb,
            "a_profiles": int(in_a.sum()),
            "b_profiles": int(in_b.sum()),
            "mean_a": f32(mean_a),
            "mean_b": f32(mean_b),
            "delta": f32(delta),
            "delta_domain": [-bound, bound],
            "dhist": i32(histogram(diffs, lo, hi).ravel()),
            "dhist_lo": f32(lo),
            "dhist_hi": f32(hi),
        }

    def _sites(self, k: int) -> dict[str, Any]:
        """The call sites of super node ``k`` for its icicle: the heaviest
        :data:`SITES`, closed under ancestors within the node, in pre-order."""
        g, _, _ = self._graph()
        t = self._tree
        ids = np.flatnonzero(g.members == k)
        value = self._site_values()[ids]
        if ids.size > SITES:
            keep = ids[np.argsort(-value, kind="stable")[:SITES]]
            parent = np.asarray(t.parent)
            while True:  # close under ancestors inside the node
                p = parent[keep]
                add = p[(p >= 0) & (g.members[np.maximum(p, 0)] == k)]
                new = np.setdiff1d(add, keep)
                if not new.size:
                    break
                keep = np.union1d(keep, new)
            ids = np.sort(keep)
            value = self._site_values()[ids]
        parent = np.asarray(t.parent)[ids]
        pos = np.searchsorted(ids, parent)
        pos = np.minimum(pos, max(ids.size - 1, 0))
        inside = (parent >= 0) & (ids[pos] == parent) if ids.size else np.zeros(0, dtype=bool)
        prow = np.where(inside, pos, -1)
        depth = np.zeros(ids.size, dtype=np.int64)
        for i in range(ids.size):  # pre-order: a parent's depth is known first
            if prow[i] >= 0:
                depth[i] = depth[prow[i]] + 1
        names = [str(x) for x in t.names[ids]]
        return {
            "node": int(k),
            "n": int(ids.size),
            "id": ids.tolist(),
            "parent": prow.tolist(),
            "depth": depth.tolist(),
            "value": [float(v) for v in np.nan_to_num(value)],
            "label": names,
        }

    def _site_values(self) -> np.ndarray:
        """Mean inclusive value of every tree node over the profiles in scope."""
        m = self.metric
        if m not in self._node_means:
            if self._ens is None:
                v = self._tree.metrics[m].to_numpy(dtype=np.float64)
            else:  # the model's mean of each call site (the tree view's number)
                scope = self._scope()
                whole = np.array_equal(scope, np.flatnonzero(self._ens.live))
                ens = self._ens if whole else self._ens.select(scope)
                v = ens.stats(m)["mean"].to_numpy(dtype=np.float64)
            self._node_means[m] = v
        return self._node_means[m]
