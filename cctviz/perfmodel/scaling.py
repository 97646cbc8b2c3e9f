"""Empirical scaling models across runs, fitted per node and vectorised.

For an :class:`~cctviz.model.ensemble.Ensemble` of runs at several scales of
one parameter ``p`` (ranks, cores, problem size), every node of the unified
tree gets a model in **Extra-P's performance-model normal form** (PMNF):

    f(p) = c0 + sum_k c_k * p^(i_k) * log2(p)^(j_k)

Sources:

- A. Calotoiu, T. Hoefler, M. Poke, F. Wolf, "Using automated performance
  modeling to find scalability bugs in complex codes", SC13
  (doi:10.1145/2503210.2503277): the normal form, least-squares coefficients
  and the choice between hypotheses by cross-validation.
- Extra-P (https://github.com/extra-p/extrap, BSD-3), single-parameter
  ``Basic`` modeler, ``extrap/modelers/single_parameter/basic.py``
  (``create_default_building_blocks``) and ``abstract_base.py``
  (``find_best_hypothesis``, ``compare_hypotheses``), and
  ``extrap/entities/hypotheses.py`` (coefficients, SMAPE, cleaning): the
  search space and selection rules reproduced here.

**The search space** is Extra-P's default list of 42 building blocks
``p^(i) * log2(p)^(j)`` (:data:`EXTRAP_BUILDING_BLOCKS`, in Extra-P's order):
not the full product of the exponent sets, but these pairs::

    i in {0, 1/4, 1/3, 1/2, 2/3, 3/4, 4/5, 1, 5/4, 4/3, 3/2, 5/3, 7/4, 2,
          9/4, 7/3, 5/2, 8/3, 11/4, 3},  j in {0, 1, 2}

with ``j = 0`` for every ``i`` but the combinations Extra-P lists with a log
(e.g. ``p^(1/4) log2(p)``, ``p^(5/4) log2(p)`` but not ``p^(5/3) log2(p)``).
The default hypotheses are one term plus a constant, as Extra-P's ``Basic``
modeler does; ``terms=2`` adds every pair of distinct building blocks (the
SC13 paper's two-term search). Log terms are dropped when a scale is below 1
(Extra-P's ``are_measurements_log_capable``).

**Selection** follows Extra-P: the constant model (the mean) is the starting
best, with its in-sample SMAPE; it is kept outright when its residual sum of
squares is 0. Every other hypothesis is scored by leave-one-out SMAPE
(``2 |f - y| / (|f| + |y|)``, in percent, averaged over the points), the
constant coefficient of each leave-one-out fit set to 0 when it is below
``epsilon`` (5e-4) times the smallest training value (``clean_constant_coefficient``);
a hypothesis is rejected when a term's coefficient is 0 or its largest
contribution ``|c_k t_k(p) / y|`` is below ``epsilon``, or when its error is
not finite; among the rest the lowest SMAPE wins, and the first in the order
(constant, then one-term in Extra-P's order, then pairs) on ties: the simpler
model first, deterministically.

**Vectorised**: for each hypothesis there is one design matrix (points x
terms); its pseudo-inverse, and those of its ``n`` leave-one-out copies (the
left-out row zeroed), are computed once and applied to the (nodes x points)
value matrix, so all nodes are fitted by a few matrix products per block of
hypotheses. Nodes that lack some points are grouped by which points they have
and each group fitted on its points; a node with fewer than ``min_points``
points is left unfitted (NaN).

>>> import numpy as np, pandas as pd
>>> p = np.array([1, 2, 4, 8, 16, 32, 64])
>>> table = pd.DataFrame([3.0 + 2.0 * p * np.log2(np.maximum(p, 1)), 5.0 + 0 * p], columns=p)
>>> m = fit_scaling(table)
>>> m.formulas.tolist()
['3 + 2 * p * log2(p)', '5']
>>> m.predict([128]).round(6).tolist()
[[1795.0], [5.0]]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from ..model.ensemble import Ensemble
from ..model.tables import UnitTable, measured, shown_unit, with_units
from ..model.tree import Tree

#: Extra-P's default single-parameter building blocks ``(i, j)`` for
#: ``p^i * log2(p)^j``, in Extra-P's order (``SingleParameterModeler.
#: create_default_building_blocks(allow_log_terms=True)``, extra-p/extrap,
#: ``extrap/modelers/single_parameter/basic.py``; there as (numerator,
#: denominator, log exponent)).
EXTRAP_BUILDING_BLOCKS: tuple[tuple[Fraction, int], ...] = tuple(
    (Fraction(a, b), j)
    for a, b, j in [
        (0, 1, 1), (0, 1, 2), (1, 4, 0), (1, 3, 0), (1, 4, 1), (1, 3, 1), (1, 4, 2),
        (1, 3, 2), (1, 2, 0), (1, 2, 1), (1, 2, 2), (2, 3, 0), (3, 4, 0), (2, 3, 1),
        (3, 4, 1), (4, 5, 0), (2, 3, 2), (3, 4, 2), (1, 1, 0), (1, 1, 1), (1, 1, 2),
        (5, 4, 0), (5, 4, 1), (4, 3, 0), (4, 3, 1), (3, 2, 0), (3, 2, 1), (3, 2, 2),
        (5, 3, 0), (7, 4, 0), (2, 1, 0), (2, 1, 1), (2, 1, 2), (9, 4, 0), (7, 3, 0),
        (5, 2, 0), (5, 2, 1), (5, 2, 2), (8, 3, 0), (11, 4, 0), (3, 1, 0), (3, 1, 1),
    ]
)  # fmt: skip

#: Extra-P's minimum term contribution and constant-cleaning threshold
#: (``AbstractSingleParameterModeler.__init__``: ``self.epsilon = 0.0005``)
EPSILON = 5e-4

#: metadata columns tried, in order, when the ``parameter`` column is absent
PARAMETER_ALIASES = ("cores", "world_size", "mpi.world.size", "jobsize", "ranks", "nprocs")

AGGREGATES = ("mean", "max", "min", "median", "sum")

Term = tuple[Fraction, int]
Hypothesis = tuple[Term, ...]

#: values of :attr:`ScalingModels.choice` that are not a hypothesis index
CONSTANT, UNFITTED = -1, -2

_BLOCK = 4_000_000  # floats per temporary (hypotheses x nodes x points) array


def hypotheses(terms: int = 1, *, log: bool = True) -> list[Hypothesis]:
    """The search space: one-term hypotheses in Extra-P's order, then (``terms=2``)
    every pair of distinct building blocks, in the order of the pair's indices.

    >>> len(hypotheses()), len(hypotheses(2)), len(hypotheses(log=False))
    (42, 903, 19)
    >>> hypotheses()[0], hypotheses(2)[42]
    (((Fraction(0, 1), 1),), ((Fraction(0, 1), 1), (Fraction(0, 1), 2)))
    """
    if terms not in (1, 2):
        raise ValueError(f"terms must be 1 or 2, not {terms!r}")
    blocks = [b for b in EXTRAP_BUILDING_BLOCKS if log or b[1] == 0]
    out: list[Hypothesis] = [(b,) for b in blocks]
    if terms == 2:
        out += [(a, b) for k, a in enumerate(blocks) for b in blocks[k + 1 :]]
    return out


def _term_values(p: np.ndarray, term: Term) -> np.ndarray:
    i, j = term
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.power(p, float(i)) * np.power(np.log2(p), j)


def _fmt_exp(i: Fraction) -> str:
    return str(i) if i.denominator == 1 else f"({i})"


def term_string(term: Term, symbol: str = "p") -> str:
    """``p^(1/2) * log2(p)`` for ``(1/2, 1)``.

    >>> term_string((Fraction(1), 1)), term_string((Fraction(0), 2)), term_string((Fraction(3, 2), 0))
    ('p * log2(p)', 'log2(p)^2', 'p^(3/2)')
    """
    i, j = term
    parts = []
    if i != 0:
        parts.append(symbol if i == 1 else f"{symbol}^{_fmt_exp(i)}")
    if j:
        parts.append(f"log2({symbol})" if j == 1 else f"log2({symbol})^{j}")
    return " * ".join(parts) or "1"


def formula(coefficients: Sequence[float], terms: Sequence[Term], symbol: str = "p") -> str:
    """The model as a person reads it: ``"3.1e+05 + 2.4e+02 * p^(1/2) * log2(p)"``.

    >>> formula([310000.0, 240.0], [(Fraction(1, 2), 1)])
    '3.1e+05 + 240 * p^(1/2) * log2(p)'
    >>> formula([1.5, -2.0], [(Fraction(1), 0)])
    '1.5 - 2 * p'
    """
    c0 = float(coefficients[0])
    if not np.isfinite(c0):
        return ""
    out = f"{c0:.3g}"
    for c, t in zip(coefficients[1:], terms):
        c = float(c)
        sign = "-" if c < 0 else "+"
        out += f" {sign} {abs(c):.3g} * {term_string(t, symbol)}"
    return out


# ----------------------------------------------------------------- the fit
def _min_excluding(y: np.ndarray) -> np.ndarray:
    """(nodes x n) -> (n x nodes): the minimum of each row without column i."""
    n = y.shape[1]
    order = np.argsort(y, axis=1, kind="stable")
    first = np.take_along_axis(y, order[:, :1], axis=1)[:, 0]
    second = np.take_along_axis(y, order[:, 1:2], axis=1)[:, 0] if n > 1 else first
    at = order[:, 0]
    return np.where(np.arange(n)[:, None] == at[None, :], second[None, :], first[None, :])


def _smape(pred: np.ndarray, actual: np.ndarray, axis: int) -> np.ndarray:
    """Extra-P's SMAPE in percent: a point where both are 0 adds 0."""
    diff = np.abs(pred - actual)
    den = np.abs(actual) + np.abs(pred)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(den != 0, 2.0 * diff / den, 0.0)
    return r.mean(axis=axis) * 100.0


def _fit_group(
    p: np.ndarray, y: np.ndarray, hyps: list[Hypothesis], eps: float, n_terms: int
) -> dict[str, np.ndarray]:
    """Fit every node (row of ``y``, no NaN) over the points ``p``."""
    m, n = y.shape
    mean = y.mean(axis=1)
    resid = y - mean[:, None]
    tss = (resid**2).sum(axis=1)
    best = {
        "choice": np.full(m, CONSTANT, dtype=np.int64),
        "coef": np.zeros((m, n_terms + 1)),
        "smape": _smape(np.broadcast_to(mean[:, None], y.shape), y, axis=1),
        "press": np.full(m, np.nan),
        "rss": tss.copy(),
    }
    best["coef"][:, 0] = mean
    open_ = tss > 0  # Extra-P: a constant model with RSS 0 is final
    if not open_.any():
        return best
    log_ok = bool(p.min() >= 1.0)
    by_k: dict[int, list[tuple[int, Hypothesis]]] = {}
    for h_idx, h in enumerate(hyps):
        if (log_ok or all(t[1] == 0 for t in h)) and len(h) + 1 <= n - 1:
            by_k.setdefault(len(h), []).append((h_idx, h))
    ya = y[open_]
    ma = ya.shape[0]
    min_train = _min_excluding(ya)  # (n, ma)
    step = max(1, _BLOCK // max(1, ma * n * n))
    for k in sorted(by_k):
        items = by_k[k]
        for s in range(0, len(items), step):
            chunk = items[s : s + step]
            idx = np.array([h for h, _ in chunk], dtype=np.int64)
            X = np.ones((len(chunk), n, k + 1))
            for a, (_, h) in enumerate(chunk):
                for t, term in enumerate(h):
                    X[a, :, t + 1] = _term_values(p, term)
            scale = np.abs(X).max(axis=1, keepdims=True)  # (H, 1, K): conditioning
            scale[scale == 0] = 1.0
            Xs = X / scale
            finite = np.isfinite(Xs).all(axis=(1, 2))
            Xs = np.where(np.isfinite(Xs), Xs, 0.0)
            # full fit: coefficients for all nodes at once
            coef = np.einsum("hkn,mn->hmk", np.linalg.pinv(Xs), ya) / scale  # (H, ma, K)
            # leave-one-out: row i zeroed is the fit without point i
            keep = 1.0 - np.eye(n)
            Pl = np.linalg.pinv(Xs[:, None, :, :] * keep[None, :, :, None])  # (H, n, K, n)
            Q = np.einsum("hik,hikn->hin", Xs, Pl)  # prediction at the left-out point
            pred = np.einsum("hin,mn->him", Q, ya)  # (H, n, ma)
            c0 = np.einsum("hin,mn->him", Pl[:, :, 0, :], ya) / scale[:, :, :1]
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(min_train == 0, np.abs(c0), np.abs(c0 / min_train))
            pred = pred - np.where(ratio < eps, c0, 0.0)
            actual = ya.T[None, :, :]
            smape = _smape(pred, actual, axis=1)  # (H, ma)
            press = ((pred - actual) ** 2).sum(axis=1)
            # term contributions with the full-data coefficients
            with np.errstate(divide="ignore", invalid="ignore"):
                contrib = np.abs(
                    coef[:, :, None, 1:] * X[:, None, :, 1:] / ya[None, :, :, None]
                ).max(axis=2)  # (H, ma, k): NaN propagates (Extra-P's numpy max)
            reject = (coef[:, :, 1:] == 0).any(axis=2) | (contrib < eps).any(axis=2)
            reject |= ~np.isfinite(press) | ~finite[:, None]
            smape = np.where(reject | np.isnan(smape), np.inf, smape)
            a = np.argmin(smape, axis=0)  # first of the lowest in this block
            cols = np.arange(ma)
            sm = smape[a, cols]
            rows = np.flatnonzero(open_)
            better = sm < best["smape"][rows]
            if better.any():
                r, ab = rows[better], a[better]
                best["choice"][r] = idx[ab]
                best["smape"][r] = sm[better]
                best["press"][r] = press[ab, cols[better]]
                best["coef"][r] = 0.0
                best["coef"][r, : k + 1] = coef[ab, cols[better]]
                fitted = np.einsum("rnk,rk->rn", X[ab], coef[ab, cols[better]])
                best["rss"][r] = ((ya[better] - fitted) ** 2).sum(axis=1)
    return best


# ----------------------------------------------------------------- results
@dataclass
class ScalingModels:
    """Fitted scaling models, one per node (see the module docstring).

    Attributes:
        parameter: the scaling parameter's name (a profiles metadata column).
        metric: the metric modelled.
        points: the scales, sorted (one column of :attr:`measured` each).
        measured: (nodes x points) values the models were fitted to: per run,
            the ``aggregate`` over its ranks; runs at the same scale averaged.
        hypotheses: the search space; :attr:`choice` indexes it.
        choice: per node, the index of its hypothesis, ``-1`` for the constant
            model, ``-2`` for a node left unfitted (too few points).
        coefficients: (nodes x terms+1): ``c0`` then one per term, 0 past the
            node's own terms.
        smape: leave-one-out SMAPE in percent (in-sample for the constant model,
            as Extra-P does).
        rss: in-sample residual sum of squares; ``r2``: 1 - rss / tss.
        press: sum of squared leave-one-out errors (NaN for the constant model).
        n_points: the points each node was fitted on.
        tree: the ensemble's tree (for :meth:`annotate`), None for a table.
        unit: the metric's unit.
    """

    parameter: str
    metric: str
    points: np.ndarray
    measured: pd.DataFrame
    hypotheses: list[Hypothesis]
    choice: np.ndarray
    coefficients: np.ndarray
    smape: np.ndarray
    rss: np.ndarray
    r2: np.ndarray
    press: np.ndarray
    n_points: np.ndarray
    tree: Tree | None = None
    unit: str | None = None
    symbol: str = "p"
    _exps: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.choice)

    def __repr__(self) -> str:
        fitted = int((self.choice != UNFITTED).sum())
        return (
            f"<ScalingModels of {self.metric!r} over {self.parameter!r} at "
            f"{[_fmt_point(x) for x in self.points]}: {fitted} of {len(self)} nodes fitted>"
        )

    @property
    def index(self) -> pd.Index:
        return self.measured.index

    def terms(self, node: int) -> list[Term]:
        """The ``(i, j)`` exponents of the terms of one node's model (by position)."""
        c = int(self.choice[node])
        return list(self.hypotheses[c]) if c >= 0 else []

    @property
    def exponents(self) -> pd.Series:
        """Per node, the list of ``(i, j)`` of its terms (empty for a constant)."""
        return pd.Series([self.terms(k) for k in range(len(self))], index=self.index)

    @property
    def formulas(self) -> pd.Series:
        """Per node, its model as text; ``""`` for an unfitted node."""
        return pd.Series(
            [
                formula(self.coefficients[k], self.terms(k), self.symbol)
                if self.choice[k] != UNFITTED
                else ""
                for k in range(len(self))
            ],
            index=self.index,
            name="model",
        )

    def _exponent_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if self._exps is None:
            t = self.coefficients.shape[1] - 1
            i = np.zeros((len(self), t))
            j = np.zeros((len(self), t))
            for k, c in enumerate(self.choice):
                if c >= 0:
                    for a, (ii, jj) in enumerate(self.hypotheses[c]):
                        i[k, a], j[k, a] = float(ii), jj
            self._exps = (i, j)
        return self._exps

    def predict(self, p: float | Iterable[float]) -> np.ndarray:
        """Values of every node's model at scales ``p``: (nodes x len(p)); NaN for
        unfitted nodes. Vectorised over nodes and scales."""
        pp = np.atleast_1d(np.asarray(p, dtype=np.float64))
        i, j = self._exponent_arrays()
        c = self.coefficients
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.power(pp[None, None, :], i[:, :, None]) * np.power(
                np.log2(pp)[None, None, :], j[:, :, None]
            )
            t = np.where(c[:, 1:, None] == 0, 0.0, t)  # unused slots, even where log2(p) < 0
            out = c[:, :1] + np.einsum("mt,mtp->mp", c[:, 1:], t)
        out[self.choice == UNFITTED] = np.nan
        return out

    def table(self, at: float | Iterable[float] = ()) -> UnitTable:
        """One row per node: ``name`` (for an ensemble), ``model``, ``smape``
        (%), ``r2``, ``rss`` (in the metric's unit squared), ``n_points``,
        ``terms`` and ``predicted@<p>`` (in the metric's unit) per scale in
        ``at``; ``attrs["units"]`` says which."""
        df = pd.DataFrame(index=self.index)
        if self.tree is not None:
            df["name"] = self.tree.names
        df["model"] = self.formulas
        df["smape"] = self.smape
        df["r2"] = self.r2
        df["rss"] = self.rss
        df["n_points"] = self.n_points
        df["terms"] = self.exponents
        ats = np.atleast_1d(np.asarray(at, dtype=np.float64))
        if ats.size:
            pred = self.predict(ats)
            for k, a in enumerate(ats):
                df[f"predicted@{_fmt_point(a)}"] = pred[:, k]
        unit = shown_unit(self.unit)
        units: dict[str, str | None] = {"smape": "%"}
        if measured(str(self.metric), self.unit):
            units["rss"] = f"{unit}^2" if unit else None
            units.update({c: unit for c in df.columns if str(c).startswith("predicted@")})
        return with_units(df, units)

    def annotate(self, at: float | Iterable[float], tree: Tree | None = None) -> Tree:
        """A tree with the models as per-node metrics: ``"<metric> model@<p>"``
        (the prediction at each scale in ``at``, in the metric's unit) and
        ``"<metric> model smape"`` (percent). Both are per-node constants
        (aggregation ``"none"``: a predicted inclusive value does not add up
        again). ``tree`` defaults to the ensemble's tree; its node ids must be
        those the models were fitted on."""
        tree = tree if tree is not None else self.tree
        if tree is None:
            raise ValueError("models fitted on a table: pass the tree to annotate")
        if len(tree) != len(self) or not np.array_equal(
            self.index.to_numpy(), np.arange(len(tree))
        ):
            raise ValueError(f"the tree has {len(tree)} nodes; the models are for {len(self)}")
        ats = np.atleast_1d(np.asarray(at, dtype=np.float64))
        pred = self.predict(ats)
        for k, a in enumerate(ats):
            tree = tree.add_metric(
                f"{self.metric} model@{_fmt_point(a)}",
                pred[:, k],
                aggregation="none",
                unit=self.unit,
            )
        return tree.add_metric(
            f"{self.metric} model smape", self.smape, aggregation="none", unit="%"
        )


def _fmt_point(x: float) -> str:
    x = float(x)
    return str(int(x)) if x.is_integer() else f"{x:g}"


# ----------------------------------------------------------------- inputs
def scaling_table(
    ens: Ensemble,
    parameter: str = "cores",
    metric: str = "time (inc)",
    aggregate: str | Callable[[np.ndarray], np.ndarray] = "mean",
) -> UnitTable:
    """(nodes x scales) table of an ensemble of runs, in the metric's unit
    (``attrs["units"]``): per run, ``aggregate`` over its ranks (``"mean"``, ``"max"``, ``"min"``, ``"median"``, ``"sum"``);
    runs at the same scale are averaged (Extra-P's default measure, the mean
    of repetitions).

    Absence follows :meth:`Ensemble.stats`: for a ``"sum"`` metric a live rank
    that did not record a node counts 0 in a run where another rank did; a
    run where no rank recorded the node leaves the node without a value at
    that scale (NaN), as does a profile that recorded nothing (a dead rank).
    The scale is the ``parameter`` column of ``ens.profiles`` (or, when that
    column is absent, the first of :data:`PARAMETER_ALIASES` that is there).
    """
    prof = ens.profiles
    param = _parameter_column(prof, parameter)
    if isinstance(aggregate, str) and aggregate not in AGGREGATES:
        raise ValueError(f"aggregate must be one of {AGGREGATES} or a callable")
    vals = ens.values(metric)
    sum_rule = ens.tree.rule(metric) == "sum"
    rows = ens.exclusive_rows
    recorded = np.zeros(vals.shape, dtype=bool)
    recorded[rows["node"].to_numpy(), rows["profile"].to_numpy()] = True
    recorded &= ~np.isnan(vals)
    live = ens.live
    runs = ens.run_ids
    scale = pd.to_numeric(prof[param], errors="coerce").to_numpy(dtype=np.float64)
    per_run: dict[float, list[np.ndarray]] = {}
    for r in np.unique(runs):
        cols = np.flatnonzero((runs == r) & live)
        if not cols.size:
            continue
        ps = np.unique(scale[runs == r])
        if ps.size != 1 or not np.isfinite(ps[0]):
            raise ValueError(f"run {r}: {param!r} is {ps.tolist()}, not one number")
        v = vals[:, cols]
        rec = recorded[:, cols]
        any_rec = rec.any(axis=1)
        if not sum_rule:
            v = np.where(rec, v, np.nan)
        with np.errstate(invalid="ignore"), _quiet():
            if callable(aggregate):
                out = np.asarray(aggregate(v), dtype=np.float64)
            else:
                fn = {"mean": np.nanmean, "max": np.nanmax, "min": np.nanmin,
                      "median": np.nanmedian, "sum": np.nansum}[aggregate]  # fmt: skip
                out = fn(v, axis=1) if v.shape[0] else np.zeros(0)
        per_run.setdefault(float(ps[0]), []).append(np.where(any_rec, out, np.nan))
    points = sorted(per_run)
    with _quiet():
        data = {p: np.nanmean(np.vstack(per_run[p]), axis=0) for p in points}
    df = pd.DataFrame(data, index=pd.RangeIndex(len(ens.tree), name="node"))
    df.columns.name = param
    unit = shown_unit(ens.tree.unit(metric))
    return with_units(df, dict.fromkeys(points, unit) if measured(metric, unit) else {})


class _quiet:
    """Silence numpy's all-NaN-slice warnings (an all-NaN node is a node without a value)."""

    def __enter__(self):
        import warnings

        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc):
        self._w.__exit__(*exc)


def _parameter_column(prof: pd.DataFrame, parameter: str) -> str:
    if parameter in prof.columns:
        return parameter
    for alt in PARAMETER_ALIASES:
        if alt in prof.columns:
            return alt
    raise KeyError(
        f"no scaling parameter {parameter!r} in the profiles metadata {list(prof.columns)}; "
        "give it with read_ensemble(files, metadata=lambda path: {...})"
    )


def fit_scaling(
    data: Ensemble | pd.DataFrame | Mapping[Any, Sequence[float]],
    parameter: str = "cores",
    metric: str = "time (inc)",
    aggregate: str | Callable[[np.ndarray], np.ndarray] = "mean",
    *,
    terms: int = 1,
    min_points: int = 3,
    epsilon: float = EPSILON,
    symbol: str = "p",
) -> ScalingModels:
    """Fit an Extra-P PMNF model per node (see the module docstring).

    Args:
        data: an :class:`Ensemble` of runs whose ``profiles`` hold the scale
            (``parameter``), or a (nodes x scales) table: a DataFrame whose
            columns are the scales (what :func:`scaling_table` returns).
        parameter: the profiles metadata column with the scale (for an
            ensemble); falls back on :data:`PARAMETER_ALIASES`.
        metric: the metric to model, e.g. ``"time (inc)"``.
        aggregate: over the ranks of a run: ``"mean"`` (default), ``"max"``...
        terms: 1 (Extra-P's default search) or 2 (pairs of building blocks too).
        min_points: nodes with fewer scales than this are left unfitted.
        epsilon: Extra-P's minimum term contribution and cleaning threshold.
        symbol: the parameter's name in the formulas.

    Returns:
        :class:`ScalingModels`, one model per node (row of the table).
    """
    tree = None
    unit = None
    if isinstance(data, Ensemble):
        table = scaling_table(data, parameter, metric, aggregate)
        parameter = str(table.columns.name)
        tree = data.tree
        unit = tree.unit(metric)
    else:
        table = pd.DataFrame(data)
        if table.columns.name is not None and parameter == "cores":
            parameter = str(table.columns.name)
        table = table[sorted(table.columns, key=float)]
    points = np.asarray([float(c) for c in table.columns], dtype=np.float64)
    if points.size and (points <= 0).any():
        raise ValueError("scales must be positive")
    y_all = table.to_numpy(dtype=np.float64)
    hyps = hypotheses(terms)
    m = y_all.shape[0]
    out = {
        "choice": np.full(m, UNFITTED, dtype=np.int64),
        "coef": np.full((m, terms + 1), np.nan),
        "smape": np.full(m, np.nan),
        "press": np.full(m, np.nan),
        "rss": np.full(m, np.nan),
        "r2": np.full(m, np.nan),
    }
    present = np.isfinite(y_all)
    n_points = present.sum(axis=1)
    patterns, inverse = np.unique(present, axis=0, return_inverse=True)
    inverse = np.asarray(inverse).reshape(-1)
    for g, pat in enumerate(patterns):
        if pat.sum() < max(min_points, 1):
            continue
        rows = np.flatnonzero(inverse == g)
        y = y_all[np.ix_(rows, np.flatnonzero(pat))]
        res = _fit_group(points[pat], y, hyps, epsilon, terms)
        out["choice"][rows] = res["choice"]
        out["coef"][rows] = res["coef"]
        out["smape"][rows] = res["smape"]
        out["press"][rows] = res["press"]
        out["rss"][rows] = res["rss"]
        tss = ((y - y.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            out["r2"][rows] = np.where(tss > 0, 1.0 - res["rss"] / tss, 1.0)
    return ScalingModels(
        parameter=parameter,
        metric=metric,
        points=points,
        measured=table,
        hypotheses=hyps,
        choice=out["choice"],
        coefficients=out["coef"],
        smape=out["smape"],
        rss=out["rss"],
        r2=out["r2"],
        press=out["press"],
        n_points=n_points,
        tree=tree,
        unit=unit,
        symbol=symbol,
    )


__all__ = [
    "EPSILON",
    "EXTRAP_BUILDING_BLOCKS",
    "PARAMETER_ALIASES",
    "ScalingModels",
    "fit_scaling",
    "formula",
    "hypotheses",
    "scaling_table",
    "term_string",
]
