"""CCTView: an interactive calling-context tree in Jupyter (anywidget + D3).

The synced traits are the whole contract with the front end (``js/cct/``); it
is written down in ``cctviz/views/CONTRACT.md``. Python decides the level of
detail (:mod:`cctviz.views.lod`): the browser never receives more than
``max_nodes`` rows, sent as binary buffers in the ``_data`` trait.

Example:
    >>> import cctviz
    >>> t = cctviz.Tree.from_parents(
    ...     [-1, 0, 0, 1], ["main", "solve", "io", "MPI_Allreduce"],
    ...     {"time": [1.0, 5.0, 2.0, 3.0], "bytes": [0, 0, 4096, 1024]})
    >>> view = cctviz.CCTView(t, color=("time (inc)", "bytes (inc)"))
    >>> view.selection = t.query('MATCH (".", a) WHERE a."name" = "io"')
    >>> view.selected[["name", "time (inc)"]].to_dict("records")
    [{'name': 'io', 'time (inc)': 2.0}]
    >>> t.query(view.selection_query) == view.selection
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import traitlets

from ..model._algo import accumulate_up
from ..model.ensemble import Ensemble
from ..model.nodeset import NodeSet
from ..model.timeline import Timeline
from ..model.tree import Tree, base_metric
from ..ops.transform import OTHER
from .base import (
    CUE_SHARE,
    NodeSelection,
    ProfileIds,
    View,
    f32,
    i32,
    node_ids,
    register_view,
    share_space,
)
from .lod import HAS_CHILDREN, LevelOfDetail, ancestors_closure, level_of_detail, other_values
from .source import MetricSource, split_metric, waits_payload

#: a tree view whose first level of detail has more rows than this opens
#: collapsed below its first levels (:meth:`CCTView._open_shallow`) ...
OPEN_MAX_ROWS = 60
#: ... keeping the deepest level with at most this many rows (two levels at least)
OPEN_ROWS = 40

#: at most this many search matches' ids go to the browser (next/previous match)
MATCH_IDS = 100_000


def _domain(v: np.ndarray) -> list[float] | None:
    v = v[np.isfinite(v)]
    return [float(v.min()), float(v.max())] if v.size else None


def _color_from_json(value: Any, widget: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


@register_view("cct")
class CCTView(View):
    """A calling-context tree view of a Tree or an Ensemble.

    End a notebook cell with it to display it. Click, shift-click or brush
    (shift + drag) nodes to select them; ``view.selection`` (a
    :class:`~cctviz.NodeSet`) holds the selection, ``view.selected`` gives it as
    a DataFrame and ``view.selection_query`` as a query string. Setting
    ``view.selection`` from Python (a NodeSet, ids or a query string)
    highlights those nodes in the view, expanding their collapsed ancestors.

    Args:
        data: a Tree, an Ensemble (per-node spread over its profiles is shown)
            or a Timeline (its ensemble; on collective contexts, whom the waiting
            waits for: the most waited for rank and what it did meanwhile, see
            :func:`cctviz.ops.collectives.wait_causes`, instead of flagging the
            waiter's imbalance).
        color: metric for node colour, or a pair of metrics for a bivariate
            colour scale (default the inclusive time).
        size: metric for node size ("" or None: all the same size; default the
            colour metric when it is inclusive).
        chart: ``"tree"`` (node-link) or ``"icicle"``. (Not ``layout``: that is
            ipywidgets' own trait, e.g. ``view.layout.height = "900px"``,
            which the view's height follows.)
        max_nodes: level-of-detail budget: the most nodes sent to the browser.
        **kwargs: any other trait (``selection``, ``collapsed``, ``focus``,
            ``search``, ``selected_profiles``).

    A tree whose first view would hold more than :data:`OPEN_MAX_ROWS` rows
    opens collapsed below its first levels (at most :data:`OPEN_ROWS` rows, two
    levels at least), so that it fits the output; pass ``collapsed=[]`` to
    open it all.

    For an Ensemble, each node shows its spread over the live profiles and,
    where its imbalance costs (max - mean) at least :data:`CUE_SHARE` of the
    whole tree's mean, a red cue with that cost (:meth:`imbalance_cues`).
    Colour by ``"<metric> [cost]"`` to rank the imbalance by what it costs.
    Set ``selected_profiles`` (profile ids; a linked SankeyView or
    ProfilesView sets it, see :func:`cctviz.link`) to show the means and
    spread of just those profiles; ``[]`` shows all of them again.

    State traits (synced, readable and settable): ``selection``, ``collapsed``,
    ``expanded``, ``focus``, ``color``, ``size``, ``chart``, ``search``,
    ``max_nodes``; :attr:`state` gathers them for saving and restoring.
    """

    selection = NodeSelection()
    collapsed = traitlets.List(traitlets.Int()).tag(sync=True)
    expanded = traitlets.List(traitlets.Int()).tag(sync=True)
    focus = traitlets.Int(-1).tag(sync=True)
    color = traitlets.Union(
        [traitlets.Unicode(), traitlets.Tuple(traitlets.Unicode(), traitlets.Unicode())]
    ).tag(sync=True, from_json=_color_from_json)
    size = traitlets.Unicode("").tag(sync=True)
    chart = traitlets.Enum(["tree", "icicle"], "tree").tag(sync=True)
    search = traitlets.Unicode("").tag(sync=True)
    max_nodes = traitlets.Int(2000).tag(sync=True)
    selected_profiles = ProfileIds()
    metrics = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    _data = traitlets.Dict().tag(sync=True)

    #: the node budget an export lowers to fit a figure's height (cctviz.export.to_svg)
    FIGURE_BUDGET = "max_nodes"

    #: traits that make up a view's state (see :attr:`state`)
    STATE = (
        "selection",
        "collapsed",
        "expanded",
        "focus",
        "color",
        "size",
        "chart",
        "search",
        "max_nodes",
        "selected_profiles",
    )

    def __init__(
        self,
        data: Tree | Ensemble | Timeline,
        color: str | tuple[str, str] | None = None,
        size: str | None = None,
        chart: str = "tree",
        max_nodes: int = 2000,
        **kwargs: Any,
    ) -> None:
        self._src = MetricSource(data)
        self._lod: LevelOfDetail | None = None
        self._lod_key: tuple | None = None
        self._matches = np.empty(0, dtype=np.int64)
        self._matches_text = ""
        self._restoring = True  # state given to __init__ is taken as it is
        self._names_lower: pd.Series | None = None
        default = self._src.default_metric
        color = default if color is None else color
        if size is None:
            first = color if isinstance(color, str) else color[0]
            size = first if self._src.is_additive(first) else ""
        super().__init__(
            color=color, size=size, chart=chart, max_nodes=max_nodes, _data={}, **kwargs
        )
        share_space(self)
        self.set_trait("metrics", list(self._src.metrics))
        if self.selection is None:
            self.selection = NodeSet(self.tree)
        self._restoring = False
        self._refresh()
        if not {"collapsed", "expanded", "focus"} & kwargs.keys() and chart == "tree":
            self._open_shallow()

    def _open_shallow(self) -> None:
        """A tree whose first view would hold more than :data:`OPEN_MAX_ROWS`
        rows opens collapsed below its first levels: the deepest level that
        keeps at most :data:`OPEN_ROWS` rows, two levels at least (a trace's
        threads and steps, a run's phases), so the opening view fits the output
        instead of spreading them over thousands of pixels. Expand with a
        double-click or the Right arrow; ``collapsed=[]`` opens it all."""
        lod = self._lod
        assert lod is not None
        if lod.n_rows <= OPEN_MAX_ROWS:
            return
        depth = np.asarray(lod.row_depth)
        per_level = np.cumsum(np.bincount(depth))
        level = max(2, int(np.searchsorted(per_level, OPEN_ROWS, side="right")) - 1)
        has_kids = (np.asarray(lod.flags) & HAS_CHILDREN) != 0
        rows = (depth == level) & has_kids & (np.asarray(lod.row_id) >= 0)
        if rows.any():
            self.collapsed = np.asarray(lod.row_id)[rows].tolist()

    # ------------------------------------------------------------ public API
    @property
    def tree(self) -> Tree:
        """The tree shown (an Ensemble's unified tree)."""
        return self._src.tree

    @property
    def shown(self) -> Tree | Ensemble:
        """The Tree or the (whole) Ensemble shown."""
        return self._src.whole if self._src.whole is not None else self._src.tree

    @property
    def timeline(self) -> Timeline | None:
        """The Timeline whose ensemble is shown (a window of it after a linked
        TimelineView's brush), or None."""
        return self._src.timeline

    @property
    def selected(self) -> pd.DataFrame:
        """The selected nodes: attributes, call path, every plain metric (an
        Ensemble's: the mean over profiles) and the derived ones in use."""
        plain = [m for m in self._src.metrics if split_metric(m)[1] is None]
        return self._src.frame(self.selection.ids, plain + self._metrics_in_use())

    @property
    def selection_query(self) -> str:
        """A query string that gives the selection back with ``tree.query``."""
        return self.selection.to_query()

    @property
    def matches(self) -> NodeSet:
        """Nodes whose name contains :attr:`search` (case-insensitive)."""
        return NodeSet(self.tree, self._current_matches())

    @property
    def visible(self) -> pd.DataFrame:
        """The rows the browser shows: id (negative for "other"), parent row, depth, flags."""
        lod = self._lod
        assert lod is not None
        names = self._row_names(lod)
        return pd.DataFrame(
            {
                "id": lod.row_id,
                "name": names,
                "parent_row": lod.row_parent,
                "depth": lod.row_depth,
                "flags": lod.flags,
                "folded": lod.folded,
            }
        )

    def replace_data(self, data: Tree | Ensemble | Timeline) -> None:
        """Show ``data`` instead (a Tree, an Ensemble or a Timeline; a linked
        TimelineView gives the timeline of its brushed window). The state is kept where it
        still means something: the selection (matched by call path), the colour
        and size metrics when ``data`` has them (else the defaults); collapsed,
        expanded and focus when the tree is the same size (a window of one
        timeline: the same tree), else reset; a profile selection when the
        number of profiles is the same.

        Example:
            >>> import cctviz
            >>> a = cctviz.Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 2.0]})
            >>> b = cctviz.Tree.from_parents([-1, 0], ["main", "f"], {"time": [5.0, 1.0]})
            >>> view = cctviz.CCTView(a, selection=[1]); view.replace_data(b)
            >>> view.selected["time (inc)"].tolist()
            [1.0]
        """
        old_tree, old_whole = self.tree, self._src.whole
        sel = self.selection
        src = MetricSource(data)
        whole = src.whole
        keep_profiles = (
            bool(self.selected_profiles)
            and whole is not None
            and old_whole is not None
            and whole.n_profiles == old_whole.n_profiles
        )
        self._restoring = True
        try:
            self._src = (
                MetricSource(src.origin, profiles=self.selected_profiles) if keep_profiles else src
            )
            self._names_lower = None
            self._matches_text = None  # search again in the new tree
            self._lod_key = None
            with self.hold_trait_notifications():
                self.set_trait("metrics", list(self._src.metrics))
                default = self._src.default_metric
                colors = [self.color] if isinstance(self.color, str) else list(self.color)
                if not all(m in self._src.metrics for m in colors):
                    self.color = default
                if self.size and self.size not in self._src.metrics:
                    self.size = default if self._src.is_additive(default) else ""
                if not keep_profiles:
                    self.selected_profiles = []
                if len(old_tree) != len(self.tree):
                    self.collapsed, self.expanded, self.focus = [], [], -1
                self.selection = sel.on(self.tree) if sel is not None else NodeSet(self.tree)
        finally:
            self._restoring = False
        self._refresh(force=True)

    def figure_extras(self) -> dict[str, Any]:
        """The metrics offered (the figure's menus and legends)."""
        return {"metrics": list(self.metrics)}

    # ------------------------------------------------------------ validation
    def _coerce_ids(self, value: Any, what: str) -> np.ndarray:
        return node_ids(value, self.tree, what)

    @traitlets.validate("collapsed", "expanded")
    def _v_idlist(self, proposal: dict) -> list[int]:
        return self._coerce_ids(proposal["value"], proposal["trait"].name).tolist()

    @traitlets.validate("focus")
    def _v_focus(self, proposal: dict) -> int:
        v = proposal["value"]
        if v < -1 or v >= len(self.tree):
            raise traitlets.TraitError(f"focus must be -1 or a node id < {len(self.tree)}")
        return v

    @traitlets.validate("color")
    def _v_color(self, proposal: dict) -> str | tuple[str, str]:
        v = proposal["value"]
        for m in [v] if isinstance(v, str) else v:
            self._check_metric(m)
        return v

    @traitlets.validate("size")
    def _v_size(self, proposal: dict) -> str:
        v = proposal["value"] or ""
        if v:
            self._check_metric(v)
        return v

    @property
    def profile_count(self) -> int | None:
        """How many profiles the view can select among (None: a view of one Tree)."""
        whole = self._src.whole
        return None if whole is None else whole.n_profiles

    @traitlets.observe("selected_profiles")
    def _on_profiles(self, change: dict) -> None:
        whole = self._src.whole
        if whole is None:
            return
        ids = change["new"]
        self._src = MetricSource(self._src.origin, profiles=ids if ids else None)
        if not self._restoring:
            self._refresh(force=True)

    @traitlets.validate("max_nodes")
    def _v_max_nodes(self, proposal: dict) -> int:
        if proposal["value"] < 1:
            raise traitlets.TraitError("max_nodes must be at least 1")
        return proposal["value"]

    def _check_metric(self, m: str) -> None:
        try:
            self._src.check(m)
        except KeyError as e:
            raise traitlets.TraitError(e.args[0]) from None

    # ------------------------------------------------------------ reactions
    @traitlets.observe("search")
    def _on_search(self, change: dict) -> None:
        if self._current_matches().size and not self._restoring:
            self._reveal(self._forced_matches(), leave_focus=False)
        self._refresh()

    @traitlets.observe("collapsed", "expanded", "focus", "color", "size", "max_nodes")
    def _on_state(self, change: dict) -> None:
        self._refresh()

    @traitlets.observe("selection")
    def _on_selection(self, change: dict) -> None:
        lod = self._lod
        if lod is None or self._restoring:
            return
        ids = change["new"].ids
        missing = ids[~np.isin(ids, lod.shown)]
        if missing.size:
            # a user's shift-click keeps earlier picks outside the focus: stay
            # focused then; Python asking for those nodes leaves the focus
            from_view = "selection" in self._property_lock
            with self.hold_trait_notifications():
                self._reveal(missing, leave_focus=not from_view)
            self._refresh(force=True)

    def _reveal(self, ids: np.ndarray, leave_focus: bool = True) -> None:
        """Make ``ids`` showable: expand their collapsed ancestors; leave the focus
        if some are outside it (``leave_focus``), else reveal only those inside."""
        t = self.tree
        if self.focus >= 0:
            outside = (ids < self.focus) | (ids >= t.end[self.focus])
            if outside.any() and leave_focus:
                self.focus = -1
            else:
                ids = ids[~outside]
        anc = ancestors_closure(t.parent, ids)
        anc = np.setdiff1d(anc, ids)  # a selected node may itself stay collapsed
        if self.collapsed and np.isin(self.collapsed, anc).any():
            self.collapsed = np.setdiff1d(self.collapsed, anc).tolist()

    def _current_matches(self) -> np.ndarray:
        # observers of several traits set in one message run in no fixed order:
        # matches follow the search text whoever asks first
        if self._matches_text != self.search:
            self._matches = self._find(self.search)
            self._matches_text = self.search
        return self._matches

    def _find(self, text: str) -> np.ndarray:
        if not text:
            return np.empty(0, dtype=np.int64)
        if self._names_lower is None:
            self._names_lower = pd.Series(self.tree.names, dtype=object).astype(str).str.lower()
        hit = self._names_lower.str.contains(text.lower(), regex=False).to_numpy()
        return np.flatnonzero(hit)

    def _forced_matches(self) -> np.ndarray:
        """Search matches that must show: the best half-budget by priority."""
        m = self._current_matches()
        cap = max(self.max_nodes // 2, 1)
        if m.size > cap:
            prio = self._priority()[m]
            m = np.sort(m[np.argsort(-prio, kind="stable")[:cap]])
        return m

    # ------------------------------------------------------------ data
    def _metrics_in_use(self) -> list[str]:
        c = [self.color] if isinstance(self.color, str) else list(self.color)
        return c + ([self.size] if self.size else [])

    def _priority_metric(self) -> str | None:
        """The metric that ranks nodes for the level of detail: an additive one
        (the first in use, else the default, else any), else an inclusive
        ``"max"`` one (also never smaller in a parent than in a child), else
        None (rank by subtree size)."""
        src = self._src
        cands = list(dict.fromkeys([*self._metrics_in_use(), src.default_metric, *src.metrics]))
        for m in cands:
            if src.is_additive(m):
                return m
        for m in cands:
            if src.rule(m) == "max" and split_metric(m)[1] is None:
                return m
        return None

    def _priority(self) -> np.ndarray:
        """|priority metric| per node; missing values count as 0 and do not
        poison their ancestors' inclusive sums (one NaN would rank all alike).
        Without a metric that grows towards the root: the subtree size."""
        t = self.tree
        m = self._priority_metric()
        if m is None:
            return (t.end - np.arange(len(t))).astype(np.float64)
        col = self._src.column(m)
        if np.isnan(col).any():
            exc = self._src.exclusive_of(m)
            if exc is not None:
                col = accumulate_up(np.nan_to_num(exc), t.parent, t.levels)
            else:
                col = np.nan_to_num(col)
        return np.abs(col)

    def _refresh(self, force: bool = False) -> None:
        key = (
            tuple(self.collapsed),
            tuple(self.expanded),
            self.focus,
            self.color,
            self.size,
            self.search,
            self.max_nodes,
        )
        if key == self._lod_key and not force:
            return
        self._lod_key = key
        t = self.tree
        sel = self.selection.ids if self.selection is not None else np.empty(0, dtype=np.int64)
        forced = self._forced_matches()
        self._lod = level_of_detail(
            t.parent,
            t.end,
            self._priority(),
            budget=self.max_nodes,
            root=self.focus,
            collapsed=np.asarray(self.collapsed, dtype=np.int64),
            expanded=np.asarray(self.expanded, dtype=np.int64),
            forced=forced,
            matches=self._current_matches(),
            depth=t.depth,
            pinned=sel,
        )
        self._data = self._payload(self._lod)

    def _row_names(self, lod: LevelOfDetail) -> list[str]:
        names = np.full(lod.n_rows, OTHER, dtype=object)
        names[lod.row_of_shown] = self.tree.names[lod.shown]
        return [str(x) for x in names]

    def _row_values(self, lod: LevelOfDetail, metric: str) -> np.ndarray:
        """Values per row; an "other" row's by the column's rule (NaN for "none")."""
        col = self._src.column(metric)
        out = np.full(lod.n_rows, np.nan)
        out[lod.row_of_shown] = col[lod.shown]
        if lod.other_parent.size:
            out[lod.is_other] = other_values(col, self.tree.parent, lod, self._src.rule(metric))
        return out

    def _total(self, metric: str) -> float | None:
        """The whole tree's value of an additive metric (its roots' sum)."""
        if not self._src.is_additive(metric):
            return None
        col = self._src.column(metric)
        v = float(np.nansum(col[self.tree.parent < 0]))
        return v if np.isfinite(v) else None

    def _payload(self, lod: LevelOfDetail) -> dict[str, Any]:
        # lone surrogates (valid JSON escapes in a profile) must not break the view
        encoded = [s.encode("utf-8", "replace") for s in self._row_names(lod)]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(b) for b in encoded], out=offsets[1:])
        colors = [self.color] if isinstance(self.color, str) else list(self.color)
        data: dict[str, Any] = {
            "n": lod.n_rows,
            "total": len(self.tree),
            "id": i32(lod.row_id),
            "parent": i32(lod.row_parent),
            "depth": i32(lod.row_depth),
            "flags": memoryview(np.ascontiguousarray(lod.flags, dtype=np.uint8)),
            "folded": i32(lod.folded),
            "name_bytes": memoryview(b"".join(encoded)),
            "name_offsets": i32(offsets),
            "units": {m: u for m in self._src.metrics if (u := self._src.unit(m))},
            "aggregation": {m: self._src.rule(m) for m in self._src.metrics},
            "focus_path": list(self.tree.path(self.focus)[:-1]) if self.focus >= 0 else [],
            "spread": None,
        }
        real = ~lod.is_other
        for key, metric in zip(("color", "color2"), colors):
            v = self._row_values(lod, metric)
            data[key], data[f"{key}_domain"] = f32(v), _domain(v[real])
        if self.size:
            v = self._row_values(lod, self.size)
            data["size"], data["size_domain"] = f32(v), _domain(v[real])
        # for the tooltip: the exclusive part and the share of the whole tree
        exc = self._src.exclusive_of(colors[0])
        if exc is not None:
            v = np.full(lod.n_rows, np.nan)
            v[lod.row_of_shown] = exc[lod.shown]
            data["exclusive"], data["exclusive_metric"] = f32(v), base_metric(colors[0])[0]
        data["color_total"] = self._total(colors[0])
        # search: the total and the ids of the first matches, for next/previous
        m = self._current_matches()
        data["match_total"] = int(m.size)
        data["match_ids"] = i32(m[:MATCH_IDS])
        ens = self._src.ensemble
        # a single profile has no spread (a run with a failed rank still says so)
        if ens is not None and ens.n_profiles > 1:
            data["spread"] = self._spread(lod, colors[0])
        waits = self._waits(lod)
        if waits is not None:
            data["waits"] = waits
        return data

    def _waits(self, lod: LevelOfDetail) -> dict[str, Any] | None:
        """Who the waiting at the shown collective contexts waits for (a
        Timeline's :attr:`MetricSource.waits`), per row."""
        w = self._src.waits
        if w is None or not len(w):
            return None
        row_of = np.full(len(self.tree), -1, dtype=np.int64)
        row_of[lod.shown] = lod.row_of_shown
        return waits_payload(w, row_of[w.index.to_numpy(dtype=np.int64)], self.tree.names)

    def _spread(self, lod: LevelOfDetail, color: str) -> dict[str, Any]:
        """Per-row statistics over profiles of ``color``'s base metric
        (``Ensemble.stats``: failed profiles and runs without the node do not
        count) and the imbalance cue's threshold (:data:`CUE_SHARE`)."""
        ens = self._src.ensemble
        assert ens is not None
        metric = self._src.spread_metric(color)
        st = self._src.spread(metric)
        assert st is not None
        live = int(ens.live.sum())
        out: dict[str, Any] = {
            "metric": metric,
            "profiles": live,
            "failed": ens.n_profiles - live,
        }
        for k in ("min", "mean", "max", "std", "cost"):
            v = np.full(lod.n_rows, np.nan)
            v[lod.row_of_shown] = st[k].to_numpy(dtype=np.float64)[lod.shown]
            out[k] = f32(v)
        am = np.full(lod.n_rows, -1, dtype=np.int64)
        am[lod.row_of_shown] = st["argmax"].to_numpy()[lod.shown]
        out["argmax"] = i32(am)
        out["labels"] = self._src.profile_labels(am[am >= 0])
        out["cost_threshold"] = self._cue_threshold(metric)
        out["cue_share"] = CUE_SHARE
        out["cue_basis"] = "the total" if self._src.is_additive(metric) else "the largest mean"
        return out

    def _cue_threshold(self, metric: str) -> float | None:
        """Smallest imbalance cost (max - mean) a node needs for the imbalance
        cue: :data:`CUE_SHARE` of the whole tree's mean value of ``metric``
        (its roots' sum for an additive metric, else the largest |mean| of any
        node). Fixed for the tree, whatever the focus. None: no scale."""
        st = self._src.spread(metric)
        assert st is not None
        mean = st["mean"].to_numpy(dtype=np.float64)
        if self._src.is_additive(metric):
            scale = float(np.nansum(np.abs(mean[self.tree.parent < 0])))
        else:
            scale = float(np.nanmax(np.abs(mean))) if np.isfinite(mean).any() else 0.0
        return CUE_SHARE * scale if np.isfinite(scale) and scale > 0 else None

    def imbalance_cues(self) -> NodeSet:
        """The nodes the view marks with the imbalance cue (an Ensemble only):
        those whose imbalance costs (max - mean of the spread metric over the
        live profiles) at least :data:`CUE_SHARE` of the whole tree's mean."""
        if self._src.ensemble is None:
            return NodeSet(self.tree)
        c = self.color
        metric = self._src.spread_metric(c if isinstance(c, str) else c[0])
        thr = self._cue_threshold(metric)
        if thr is None:
            return NodeSet(self.tree)
        cost = self._src.spread(metric)["cost"].to_numpy(dtype=np.float64)
        return NodeSet(self.tree, np.flatnonzero(cost >= thr))
