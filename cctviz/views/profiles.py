"""ProfilesView: one dot per profile (rank, run) of an Ensemble (anywidget + D3).

Each profile is the vector of its per-node inclusive values; the view places
the profiles by a projection of those vectors (PCA or classical MDS,
:mod:`cctviz.ops.projection`) or by two columns (profile metadata such as
``world_size``, or per-profile totals such as ``"time (inc)"``), and colours
them by a column or by k-means clusters. Brush or click dots to select
profiles; ``view.selected_profiles`` holds their ids and ``view.selected``
their rows of ``ensemble.profiles``. The contract with the front end
(``js/profiles/``) is in ``cctviz/views/CONTRACT.md``.

Example:
    >>> import cctviz
    >>> trees = [cctviz.Tree.from_parents([-1, 0, 0], ["main", "solve", "io"],
    ...          {"time": [1.0, 2.0 + r, 1.0 + (r % 2)]}) for r in range(4)]
    >>> ens = cctviz.Ensemble.from_trees(trees, profiles={"rank": [0, 1, 2, 3],
    ...                                                   "run": ["a", "a", "b", "b"]})
    >>> view = ProfilesView(ens)
    >>> view.color_by, view.columns
    ('run', ['rank', 'time (inc)', 'run', 'cluster'])
    >>> view.selected_profiles = [3, 1]
    >>> view.selected_profiles, view.selected["rank"].tolist()
    ([1, 3], [1, 3])
    >>> view.x = "rank"; view.y = "time (inc)"
    >>> view._data["x_label"], view._data["y_label"]
    ('rank', 'time (inc) [unit unknown]')
"""

from __future__ import annotations

import pathlib
from typing import Any

import numpy as np
import pandas as pd
import traitlets

from ..model import units as _units
from ..model.ensemble import BaseEnsemble, Ensemble
from ..model.tables import with_units
from ..ops.projection import kmeans, mds, pca, profile_matrix
from .base import ProfileIds, View, data_argument, f32, i32, register_view, share_space
from .source import MetricSource

#: colour options that are no column: k-means clusters, or none
CLUSTER = "cluster"
#: a column with at most this many distinct values (among the live profiles)
#: colours by category; an integer column with more colours by value
MAX_CATEGORIES = 8
#: preferred columns for the default colour, in this order (then any other)
PREFERRED = ("run", "world_size", "nprocs", "variant", "tuning", "cluster", "machine", "file")
PROJECTIONS = ("pca", "mds")


def _short_names(names: list[str]) -> list[str]:
    """Names without the prefix and suffix they all share (``"lulesh-8cores.json"``,
    ``"lulesh-64cores.json"`` -> ``"8cores"``, ``"64cores"``), when that leaves
    each of them something; else the names as they are.

    >>> _short_names(["lulesh-1core.json", "lulesh-64cores.json"]), _short_names(["a"])
    (['1core', '64cores'], ['a'])
    """
    if len(names) < 2:
        return names
    import os

    pre = len(os.path.commonprefix(names))
    suf = len(os.path.commonprefix([n[::-1] for n in names]))
    if any(len(n) - pre - suf < 1 for n in names):
        return names
    return [n[pre : len(n) - suf] for n in names]


def _numeric(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


@register_view("profiles")
class ProfilesView(View):
    """Profiles of an Ensemble as dots: a projection or two columns, coloured.

    Args:
        data: a :class:`~cctviz.Ensemble` (ranks of a run, runs of a study); the old
            keyword ``ensemble=`` is deprecated.
        x, y: ``""`` for the projection's first / second axis, else a numeric
            column of :attr:`columns` (a ``profiles`` column or a per-profile
            total such as ``"time (inc)"``: the sum over the profile's roots).
        projection: ``"pca"`` or ``"mds"`` (classical MDS on Euclidean
            distances) of the profiles' per-node inclusive values of ``metric``.
        color_by: a column, ``"cluster"`` (k-means on those vectors, seeded:
            the same every time) or ``""``; default a categorical column that
            varies (``run``, ``world_size``, ...), else ``"cluster"``.
        clusters: k of k-means.
        metric: the inclusive metric that profiles are compared on (default
            the ensemble's default, ``time (inc)`` where there is one).
        **traits: any other trait (``selected_profiles``).

    Profiles that recorded nothing (not :attr:`Ensemble.live`) have no dot;
    their labels are listed under the plot. A ``profiles`` column named
    ``cluster`` is offered as ``"cluster (metadata)"``.
    """

    x = traitlets.Unicode("").tag(sync=True)
    y = traitlets.Unicode("").tag(sync=True)
    projection = traitlets.Enum(PROJECTIONS, "pca").tag(sync=True)
    color_by = traitlets.Unicode("").tag(sync=True)
    clusters = traitlets.Int(3).tag(sync=True)
    columns = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    selected_profiles = ProfileIds()
    _data = traitlets.Dict().tag(sync=True)

    #: traits that make up a view's state (see :attr:`state`)
    STATE = ("x", "y", "projection", "color_by", "clusters", "selected_profiles")

    def __init__(
        self,
        data: Ensemble | None = None,
        x: str = "",
        y: str = "",
        projection: str = "pca",
        color_by: str | None = None,
        clusters: int = 3,
        metric: str | None = None,
        **traits: Any,
    ) -> None:
        ensemble = data_argument("ProfilesView", "ensemble", data, traits)
        if not isinstance(ensemble, BaseEnsemble):
            raise TypeError(
                f"ProfilesView shows an Ensemble (profiles of ranks or runs), got "
                f"{type(ensemble).__name__}; make one with cctviz.read_ensemble or "
                "Ensemble.from_trees"
            )
        self._ens = ensemble
        self._src = MetricSource(ensemble)
        self._metric = self._pick_metric(metric)
        self._live = np.flatnonzero(ensemble.live)
        self._cols = self._column_table()
        self._cache: dict[Any, Any] = {}
        self._ready = False
        numeric = [c for c, kind in self._kinds.items() if kind == "numeric"]
        categorical = [c for c, kind in self._kinds.items() if kind == "category"]
        cols = numeric + [c for c in categorical if c not in numeric] + [CLUSTER]
        self.set_trait("columns", cols)
        if color_by is None:
            color_by = self._default_color()
        super().__init__(
            x=x,
            y=y,
            projection=projection,
            color_by=color_by,
            clusters=clusters,
            _data={},
            **traits,
        )
        share_space(self)
        self._ready = True
        self._refresh()

    # ------------------------------------------------------------ columns
    def _pick_metric(self, metric: str | None) -> str:
        ens = self._ens
        if metric is None:
            default = self._src.default_metric
            if self._src.is_additive(default):
                return default
            additive = [m for m in ens.inc_metrics if ens.tree.is_additive(m)]
            if not (additive or ens.inc_metrics):
                raise ValueError("the ensemble has no inclusive metric to compare profiles on")
            return (additive or ens.inc_metrics)[0]
        if metric not in ens.inc_metrics:
            raise ValueError(
                f"metric: no inclusive metric {metric!r}; choose one of {ens.inc_metrics}"
            )
        return metric

    def _column_table(self) -> pd.DataFrame:
        """Every column the view can name, over all profiles: metadata (with a
        ``cluster`` column renamed) and per-profile totals of the additive
        inclusive metrics. Fills :attr:`_kinds` (numeric / category)."""
        ens = self._ens
        prof = ens.profiles.reset_index(drop=True)
        live = self._live
        out: dict[str, pd.Series] = {}
        kinds: dict[str, str] = {}
        for c in prof.columns:
            name = f"{c} (metadata)" if c == CLUSTER else str(c)
            s = prof[c]
            vals = s.iloc[live]
            if s.map(lambda v: isinstance(v, (list, dict, set, tuple))).any():
                continue  # lists and records (a traced run's cut, samples): no axis, no colour
            distinct = vals.nunique(dropna=True)
            if _numeric(s) and s.notna().any():
                integral = bool(np.all(np.mod(vals.dropna().to_numpy(dtype=float), 1) == 0))
                out[name] = s.astype(float)
                # a few integer values (runs, world sizes): categories too
                if integral and 1 < distinct <= MAX_CATEGORIES and distinct < len(live):
                    kinds[name] = "numeric+category"
                else:
                    kinds[name] = "numeric"
            elif 1 <= distinct <= max(MAX_CATEGORIES, len(live)):
                out[name] = s
                kinds[name] = "category"
        for m in ens.inc_metrics:
            if not ens.tree.is_additive(m) or m in out:
                continue
            out[m] = pd.Series(ens.profile_totals(m), dtype=float)
            kinds[m] = "numeric"
        self._kinds = {c: ("numeric" if k == "numeric+category" else k) for c, k in kinds.items()}
        self._category_ok = {c for c, k in kinds.items() if k in ("category", "numeric+category")}
        return pd.DataFrame(out, index=prof.index)

    def _default_color(self) -> str:
        """A categorical column that groups the live profiles (2 to
        :data:`MAX_CATEGORIES` values, fewer than the profiles), preferring
        :data:`PREFERRED`; else ``"cluster"``."""
        live = self._live
        good = [
            c
            for c in self._category_ok
            if 1 < self._cols[c].iloc[live].nunique() <= MAX_CATEGORIES
            and self._cols[c].iloc[live].nunique() < len(live)
        ]
        order = {c: i for i, c in enumerate(self._cols.columns)}
        good.sort(
            key=lambda c: (PREFERRED.index(c) if c in PREFERRED else len(PREFERRED), order[c])
        )
        return good[0] if good else CLUSTER

    # ------------------------------------------------------------ public API
    @property
    def ensemble(self) -> Ensemble:
        """The Ensemble whose profiles the dots are."""
        return self._ens

    @property
    def shown(self) -> Ensemble:
        """The Ensemble shown (as ``CCTView.shown``; :func:`cctviz.link` compares them)."""
        return self._ens

    @property
    def metric(self) -> str:
        """The inclusive metric the projection and the clusters compare profiles on."""
        return self._metric

    @property
    def selected(self) -> pd.DataFrame:
        """Rows of ``ensemble.profiles`` of the selected profiles."""
        return self._ens.profiles.iloc[self.selected_profiles]

    @property
    def coordinates(self) -> pd.DataFrame:
        """The dots: profile id, label, x, y and colour value of each live
        profile (in the units the axes and the colour state, ``attrs["units"]``)."""
        d = self._data
        out = pd.DataFrame(
            {
                "profile": self._live,
                "label": d["label"],
                "x": np.asarray(d["x"], dtype=np.float64),
                "y": np.asarray(d["y"], dtype=np.float64),
            }
        )
        units = {"x": d.get("x_unit"), "y": d.get("y_unit")}
        if d["color_kind"] == "numeric":
            out[self.color_by] = np.asarray(d["color"], dtype=np.float64)
            units[self.color_by] = d.get("color_unit")
        elif d["color_kind"] == "category":
            cats = np.asarray(d["categories"], dtype=object)
            out[self.color_by] = cats[np.asarray(d["category"])]
        return with_units(out, {c: u for c, u in units.items() if u})

    @property
    def cluster_labels(self) -> np.ndarray:
        """k-means cluster (0 = largest) of every profile; -1 for dead ones."""
        out = np.full(self._ens.n_profiles, -1, dtype=np.int64)
        out[self._live] = self._clusters()
        return out

    @property
    def state(self) -> dict[str, Any]:
        """The view's state as plain values; ``ProfilesView(ens, **state)`` restores it."""
        return {k: (list(v) if isinstance(v := getattr(self, k), list) else v) for k in self.STATE}

    def figure_extras(self) -> dict[str, Any]:
        """The metric the profiles are compared by."""
        return {"metric": self._metric}

    # ------------------------------------------------------------ validation
    def _numeric_columns(self) -> list[str]:
        """What ``x`` and ``y`` may name."""
        return [c for c, k in self._kinds.items() if k == "numeric"]

    @traitlets.validate("x", "y", "color_by")
    def _v_column(self, proposal: dict) -> str:
        v, name = proposal["value"] or "", proposal["trait"].name
        axis = name in ("x", "y")
        allowed = self._numeric_columns() if axis else list(self.columns)
        if v and v not in allowed:
            what = "numeric column" if axis else "column"
            first = '"" (the projection)' if axis else f'"" (none), {CLUSTER!r}'
            rest = [c for c in allowed if c != CLUSTER]
            raise traitlets.TraitError(f"{name}: no {what} {v!r}; choose {first} or one of {rest}")
        return v

    @traitlets.validate("clusters")
    def _v_clusters(self, proposal: dict) -> int:
        if proposal["value"] < 1:
            raise traitlets.TraitError("clusters must be at least 1")
        return proposal["value"]

    @property
    def profile_count(self) -> int | None:
        """How many profiles the view can select among: the ensemble's."""
        return self._ens.n_profiles

    # ------------------------------------------------------------ data
    @traitlets.observe("x", "y", "projection", "color_by", "clusters")
    def _on_state(self, change: dict) -> None:
        if self._ready:
            self._refresh()

    def _matrix(self) -> np.ndarray:
        if "X" not in self._cache:
            self._cache["X"] = profile_matrix(self._ens, self._metric)
        return self._cache["X"]

    def _projected(self) -> tuple[np.ndarray, np.ndarray | None]:
        key = ("proj", self.projection)
        if key not in self._cache:
            X = self._matrix()
            if self.projection == "pca":
                coords, ratio = pca(X, 2)
                self._cache[key] = (coords, ratio)
            else:
                self._cache[key] = (mds(X, 2), None)
        return self._cache[key]

    def _clusters(self) -> np.ndarray:
        key = ("kmeans", self.clusters)
        if key not in self._cache:
            X = self._matrix()
            self._cache[key] = kmeans(X, self.clusters, seed=0) if len(X) else np.zeros(0, int)
        return self._cache[key]

    def _unit(self, column: str) -> str | None:
        if column in self._ens.inc_metrics:
            return _units.canonical(self._ens.tree.unit(column))
        return None

    def _axis(self, which: int, column: str) -> dict[str, Any]:
        """Values, name, unit, note and label of the x (0) or y (1) axis."""
        if column:
            v = self._cols[column].to_numpy(dtype=np.float64)[self._live]
            unit = self._unit(column)
            name, note = column, ""
            label = _units.unit_label(column, {column: unit} if unit else {})
        else:
            coords, ratio = self._projected()
            v = coords[:, which]
            unit = _units.canonical(self._ens.tree.unit(self._metric))
            tag = "PC" if self.projection == "pca" else "MDS "
            name = f"{tag}{which + 1} of {self._metric}"
            note = f"{ratio[which]:.1%} of variance" if ratio is not None else ""
            label = f"{name} [{unit}]" if unit else name
            if note:
                label += f" ({note})"
        return {"v": v, "name": name, "unit": unit, "note": note, "label": label}

    def _labels(self) -> list[str]:
        """Labels of all profiles; duplicates (runs of one file name) get their id.
        They never change: made once."""
        if getattr(self, "_label_cache", None) is not None:
            return self._label_cache
        lab = self._src.profile_labels(np.arange(self._ens.n_profiles))
        out = [lab.get(str(i), f"profile {i}") for i in range(self._ens.n_profiles)]
        counts = pd.Series(out).value_counts()
        self._label_cache = [f"{s} #{i}" if counts[s] > 1 else s for i, s in enumerate(out)]
        return self._label_cache

    def _refresh(self) -> None:
        live = self._live
        labels = self._labels()
        ax, ay = self._axis(0, self.x), self._axis(1, self.y)
        data: dict[str, Any] = {
            "n": int(live.size),
            "id": i32(live),
            "x": f32(ax["v"]),
            "y": f32(ay["v"]),
            "label": [labels[i] for i in live],
            "metric": self._metric,
            "projection": self.projection,
            "profiles_total": self._ens.n_profiles,
            "dead": [labels[i] for i in np.flatnonzero(~self._ens.live)],
            "explained": None,
            "numeric": self._numeric_columns(),
        }
        for key, a in (("x", ax), ("y", ay)):
            data[f"{key}_label"] = a["label"]
            data[f"{key}_name"] = a["name"]
            data[f"{key}_unit"] = a["unit"]
            data[f"{key}_note"] = a["note"]
        if not (self.x and self.y):
            ratio = self._projected()[1]
            data["explained"] = [float(r) for r in ratio] if ratio is not None else None
        data.update(self._color())
        self._data = data

    def _color(self) -> dict[str, Any]:
        c = self.color_by
        if not c:
            return {"color_kind": "none", "color_label": "", "color_unit": None}
        if c == CLUSTER:
            lab = self._clusters()
            k = int(lab.max()) + 1 if lab.size else 0
            return {
                "color_kind": "category",
                "category": i32(lab),
                "categories": [f"cluster {j + 1}" for j in range(k)],
                "color_label": f"k-means cluster of {self._metric} (k = {self.clusters})",
                "color_unit": None,
            }
        s = self._cols[c].iloc[self._live]
        distinct = s.nunique(dropna=True)
        if c in self._category_ok and distinct <= MAX_CATEGORIES or self._kinds[c] == "category":
            codes, cats = pd.factorize(s, sort=True)
            names = [_units.format_value(v) if isinstance(v, float) else str(v) for v in cats]
            files = self._run_files(c, cats)
            if files is not None:  # runs are told apart by their files: name them so
                names = files
            elif self._kinds[c] == "category" and "file" in c.lower():
                names = _short_names([pathlib.PurePath(n).name or n for n in names])
            return {
                "color_kind": "category",
                "category": i32(codes),  # -1: missing
                "categories": names,
                "color_label": c,
                "color_unit": None,
            }
        return {
            "color_kind": "numeric",
            "color": f32(s.to_numpy(dtype=np.float64)),
            "color_label": c,  # the legend's values carry the unit
            "color_unit": self._unit(c),
        }

    def _run_files(self, column: str, values: Any) -> list[str] | None:
        """Short file names of the runs ``values`` of the ``run`` column, when
        every run is one file (``read_ensemble`` of run files); else None."""
        prof = self._ens.profiles
        if column != "run" or "file" not in prof.columns:
            return None
        pairs = prof.iloc[self._live][["run", "file"]].drop_duplicates()
        if pairs["run"].duplicated().any() or pairs["file"].duplicated().any():
            return None
        by_run = dict(zip(pairs["run"], pairs["file"].astype(str)))
        return _short_names([pathlib.PurePath(by_run[v]).name for v in values])


__all__ = ["CLUSTER", "ProfilesView"]
