"""The statistics of a node over profiles: one definition for every table and view.

``Ensemble.stats``, the CCT view's spread and tooltips, the ensemble Sankey's
super nodes (box plots, histograms, outliers), the profiles view, ``render()``
and every export read their mean, std, quartiles, minimum, maximum, imbalance
and cost from here, so one node shows one number everywhere.

The rules:

- **Which profiles count** (``missing``): see :meth:`cctviz.Ensemble.stats`. By
  default (``"auto"``) a profile that recorded nothing never counts, a profile of
  a run in which some profile recorded the node counts 0 there, and runs in
  which no profile recorded the node are left out (a workflow's components
  count as runs of their own: ``Ensemble.absence_groups``). Metrics whose rule is not
  ``"sum"`` never count absence as 0.
- **std** is the sample standard deviation (ddof = 1; NaN for one profile).
- **Quantiles** are linear between order statistics (numpy's default).
- **Box plots**: whiskers reach the furthest value within 1.5 IQR of the box;
  values beyond are outliers, the furthest from the median first.
- **imbalance** = max / mean, **cost** = max - mean (in the metric's unit).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pandas as pd

from ._algo import sorted_unique

#: ``missing=`` choices (see :func:`node_stats`)
MISSING = ("auto", "zero", "skip")
#: histogram bins of a node's distribution
BINS = 12
#: outliers kept per node (the most extreme)
OUTLIERS = 8


def node_stats(
    node: np.ndarray,
    prof: np.ndarray,
    vals: np.ndarray,
    n: int,
    *,
    live: np.ndarray,
    run: np.ndarray,
    rule: str = "sum",
    missing: str = "auto",
) -> pd.DataFrame:
    """Per-node statistics of a long table of (node, profile, value) rows.

    Args:
        node, prof, vals: one row per recorded (node, profile); NaN = not measured.
        n: the number of nodes.
        live: per profile, False for profiles left out (dead ranks).
        run: per profile, the run it belongs to (the absence rule is per run).
        rule: the metric's aggregation rule: only ``"sum"`` counts absence as 0.
        missing: ``"auto"``, ``"zero"`` or ``"skip"`` (see the module docstring).

    Returns:
        A table indexed by node: mean, std, min, q25, median, q75, max,
        imbalance, cost, argmax, count (profiles with a value), n (profiles
        counted).

    Example:
        >>> s = node_stats(np.array([0, 0, 0]), np.array([0, 1, 2]), np.array([4.0, 8, 6]), 1,
        ...                live=np.ones(3, bool), run=np.zeros(3, int))
        >>> s.loc[0, ["mean", "std", "median"]].astype(float).tolist()
        [6.0, 2.0, 6.0]
    """
    if missing not in MISSING:
        raise ValueError(f"missing must be one of {MISSING}")
    node = np.asarray(node, dtype=np.int64)
    prof = np.asarray(prof, dtype=np.int64)
    vals = np.asarray(vals, dtype=np.float64)
    live = np.asarray(live, dtype=bool)
    keep = live[prof] & ~np.isnan(vals)
    k_node, k_prof, k_vals = node[keep], prof[keep], vals[keep]
    if missing == "skip" or rule != "sum":
        count = np.bincount(k_node, minlength=n).astype(np.int64)
    elif missing == "zero":
        count = np.full(n, int(live.sum()), dtype=np.int64)
    else:
        # a NaN is a value nobody measured: that profile is left out, not a zero
        unknown = live[prof] & np.isnan(vals)
        count = counted_in_runs(
            k_node, k_prof, (node[unknown], prof[unknown]), np.asarray(run), live, n
        )
    return summarize(k_vals, k_node, k_prof, n, count)


def counted_matrix(
    values: np.ndarray,
    *,
    live: np.ndarray,
    run: np.ndarray,
    rule: str = "sum",
    missing: str = "auto",
) -> np.ndarray:
    """The values the statistics count, as a dense (nodes x profiles) matrix.

    ``values`` holds NaN where a profile has no value for a node. Out: the value
    where one was recorded, 0 where the absence rule counts a missing value as
    0, NaN where the profile is left out: row by row, exactly the values that
    :func:`node_stats` summarises (for box plots, histograms and brushes).

    Example:
        >>> v = np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, 2.0]])
        >>> counted_matrix(v, live=np.ones(3, bool), run=np.array([0, 0, 1])).tolist()
        [[1.0, 0.0, 3.0], [nan, nan, 2.0]]
    """
    v = np.asarray(values, dtype=np.float64)
    live = np.asarray(live, dtype=bool)
    present = ~np.isnan(v) & live[None, :]
    if missing == "skip" or rule != "sum":
        counted = present
    elif missing == "zero":
        counted = np.broadcast_to(live[None, :], v.shape)
    else:
        run = np.asarray(run, dtype=np.int64)
        n_runs = int(run.max()) + 1 if run.size else 1
        # runs in which some profile recorded each node
        in_run = np.zeros((v.shape[0], n_runs), dtype=bool)
        r_node, r_prof = np.nonzero(present)
        in_run[r_node, run[r_prof]] = True
        counted = in_run[:, run] & live[None, :]
    return np.where(counted, np.where(present, v, 0.0), np.nan)


def box_plots(
    counted: np.ndarray,
    q25: np.ndarray,
    q75: np.ndarray,
    median: np.ndarray,
    per_node: int = OUTLIERS,
) -> dict[str, np.ndarray]:
    """Whiskers, histograms and outliers of each row of a :func:`counted_matrix`,
    around the quartiles :func:`node_stats` gave for it.

    Returns ``whisker_lo``/``whisker_hi`` (the furthest values within 1.5 IQR of
    the box), ``hist`` (rows x :data:`BINS` counts over each row's [min, max]; a
    row with min == max counts in the last bin) and ``outliers``: (row, column,
    more), at most ``per_node`` per row, the furthest from the median first;
    ``more[r]`` is how many of row r were left out.

    Example:
        >>> v = np.array([[1.0, 2.0, 3.0, 4.0, 100.0]])
        >>> b = box_plots(v, np.array([2.0]), np.array([4.0]), np.array([3.0]))
        >>> float(b["whisker_hi"][0]), [a.tolist() for a in b["outliers"]]
        (4.0, [[0], [4], [0]])
    """
    v = np.asarray(counted, dtype=np.float64)
    n = v.shape[0]
    iqr = (q75 - q25)[:, None]
    lo_fence, hi_fence = q25[:, None] - 1.5 * iqr, q75[:, None] + 1.5 * iqr
    has = ~np.isnan(v)
    with np.errstate(invalid="ignore"):
        inside = has & (v >= lo_fence) & (v <= hi_fence)
        beyond = has & ~inside
    w_lo = np.where(inside, v, np.inf).min(axis=1, initial=np.inf)
    w_hi = np.where(inside, v, -np.inf).max(axis=1, initial=-np.inf)
    out: dict[str, np.ndarray] = {
        "whisker_lo": np.where(np.isfinite(w_lo), w_lo, np.nan),
        "whisker_hi": np.where(np.isfinite(w_hi), w_hi, np.nan),
    }
    lo = np.where(has, v, np.inf).min(axis=1, initial=np.inf)
    hi = np.where(has, v, -np.inf).max(axis=1, initial=-np.inf)
    out["hist"] = histogram(v, lo, hi)
    dist = np.where(beyond, np.abs(v - median[:, None]), -1.0)
    k = min(per_node, v.shape[1])
    order = np.argsort(-dist, axis=1, kind="stable")[:, :k]
    take = np.take_along_axis(beyond, order, axis=1)
    rows = np.repeat(np.arange(n), k).reshape(n, k)
    more = np.maximum(beyond.sum(axis=1) - take.sum(axis=1), 0)
    out["outliers"] = (rows[take], order[take], more)
    return out


def histogram(v: np.ndarray, lo: np.ndarray, hi: np.ndarray, bins: int = BINS) -> np.ndarray:
    """Counts (rows x ``bins``) of the values of each row of ``v`` (NaN: none) in
    equal bins over [lo, hi] of that row; a row with lo == hi counts in the last bin.

    Example:
        >>> histogram(np.array([[0.0, 1.0, 2.0, 2.0, np.nan]]), np.array([0.0]), np.array([2.0]), 2).tolist()
        [[1, 3]]
    """
    v = np.asarray(v, dtype=np.float64)
    n = v.shape[0]
    if v.size == 0:
        return np.zeros((n, bins), dtype=np.int64)
    has = ~np.isnan(v)
    width = (hi - lo)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        idx = np.floor((v - lo[:, None]) / width * bins)
    idx = np.where(width > 0, idx, bins - 1)
    idx = np.clip(np.nan_to_num(idx, nan=bins - 1), 0, bins - 1).astype(np.int64)
    flat = (np.arange(n)[:, None] * bins + idx)[has]
    return np.bincount(flat, minlength=n * bins).reshape(n, bins)


def counted_in_runs(
    node: np.ndarray,
    prof: np.ndarray,
    unknown: np.ndarray,
    run: np.ndarray,
    live: np.ndarray,
    n: int,
) -> np.ndarray:
    """Per node: the live profiles of the runs in which some profile recorded it,
    less those whose value there is unknown (NaN: not measured).

    ``node``/``prof`` are the live rows with a value; ``unknown`` is a
    ``(node, profile)`` pair of arrays for the live rows with NaN; ``run`` and
    ``live`` are per profile.
    """
    n_runs = int(run.max()) + 1 if run.size else 1
    per_run = np.bincount(run[live], minlength=n_runs)
    pairs = sorted_unique(node * n_runs + run[prof])
    count = np.bincount(pairs // n_runs, weights=per_run[pairs % n_runs], minlength=n)
    q_node, q_prof = unknown
    in_counted = np.isin(q_node * n_runs + run[q_prof], pairs)
    return (count - np.bincount(q_node[in_counted], minlength=n)).astype(np.int64)


def summarize(
    vals: np.ndarray, node: np.ndarray, prof: np.ndarray, n: int, count: np.ndarray
) -> pd.DataFrame:
    """Statistics per node over ``count[node]`` profiles: the rows given plus
    ``count - rows`` implicit zeros."""
    m = np.bincount(node, minlength=n).astype(np.int64)
    # one sort of the long table: by node, then value (ties: in row order)
    order = np.lexsort((vals, node))
    sv = vals[order]
    start = np.concatenate(([0], np.cumsum(m)[:-1]))

    def ranked(at_node: np.ndarray, rank: np.ndarray) -> np.ndarray:
        return sv[start[at_node] + rank]

    last = np.clip(start + m - 1, 0, max(sv.size - 1, 0))
    argmax = np.where(m > 0, prof[order][last], -1) if sv.size else np.full(n, -1)
    return summary_table(
        NodeSums(
            m=m,
            total=np.bincount(node, weights=vals, minlength=n),
            neg=np.bincount(node, weights=(vals < 0).astype(np.float64), minlength=n).astype(
                np.int64
            ),
            argmax=argmax,
        ),
        count,
        squares=lambda mean: np.bincount(node, weights=(vals - mean[node]) ** 2, minlength=n),
        ranked=ranked,
    )


class NodeSums(NamedTuple):
    """What :func:`summary_table` needs of the present values of each node.

    Attributes:
        m: how many values each node has (live profiles, not NaN).
        total: their sum.
        neg: how many of them are below 0.
        argmax: the profile of the last of them in (value, row) order; -1 for none.
    """

    m: np.ndarray
    total: np.ndarray
    neg: np.ndarray
    argmax: np.ndarray


def summary_table(
    sums: NodeSums,
    count: np.ndarray,
    *,
    squares: Callable[[np.ndarray], np.ndarray],
    ranked: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> pd.DataFrame:
    """The statistics table from per-node sums: one assembly for every engine.

    The values a node has are its ``sums.m`` present ones plus ``count - m``
    implicit zeros (absent profiles the rule counts). The engine that holds the
    values answers two questions: ``squares(mean)``, per node the sum of
    ``(v - mean[node])**2`` over its present values, and ``ranked(node, r)``,
    the ``r``-th smallest present value of each ``node`` (0-based, ties in row
    order). :func:`summarize` answers them with numpy, the dataset engine
    (:mod:`cctviz.dataset`) with SQL.

    Example:
        >>> v = np.array([4.0, 8.0]); sv = np.sort(v)
        >>> sums = NodeSums(np.array([2]), np.array([12.0]), np.array([0]), np.array([1]))
        >>> t = summary_table(sums, np.array([3]), squares=lambda mu: np.array([((v - mu[0])**2).sum()]),
        ...                   ranked=lambda node, r: sv[r])
        >>> t.loc[0, ["mean", "std", "min", "median", "max"]].astype(float).tolist()
        [4.0, 4.0, 0.0, 4.0, 8.0]
    """
    n = sums.m.size
    m = np.asarray(sums.m, dtype=np.int64)
    z = np.maximum(np.asarray(count, dtype=np.int64) - m, 0)
    N = m + z
    neg = np.asarray(sums.neg, dtype=np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = sums.total / N
        ss = squares(mean) + z * mean**2
        std = np.sqrt(ss / (N - 1))
        std[N < 2] = np.nan

    # every rank any statistic reads, looked up in one call: 5 quantiles x (lo, hi),
    # then the largest present value (rank m - 1), for argmax
    qs = (0.0, 0.25, 0.5, 0.75, 1.0)
    h = np.stack([q * (N - 1) for q in qs])
    lo = np.floor(h).astype(np.int64)
    hi = np.minimum(lo + 1, N - 1)
    r = np.concatenate([lo, hi])
    use_zero = (r >= neg) & (r < neg + z)
    ask = np.concatenate([~use_zero & (N > 0)[None, :], (m > 0)[None, :]])
    present = np.concatenate([np.where(r < neg, r, r - z), (m - 1)[None, :]])
    got = np.zeros(present.shape)
    if ask.any():
        at_node = np.broadcast_to(np.arange(n), present.shape)
        got[ask] = ranked(at_node[ask], present[ask])
    k = len(qs)
    quant = got[:k] + (h - lo) * (got[k : 2 * k] - got[:k])
    quant[:, N == 0] = np.nan
    mn, q25, median, q75, mx = quant
    # argmax: the profile holding the largest present value, unless an implicit 0 is larger
    present_max = np.where(m > 0, got[2 * k], -np.inf)
    argmax = np.where((z > 0) & (present_max < 0), -1, np.where(m > 0, sums.argmax, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        imb = np.where(mean != 0, mx / mean, np.nan)
    df = pd.DataFrame(
        {
            "mean": mean,
            "std": std,
            "min": mn,
            "q25": q25,
            "median": median,
            "q75": q75,
            "max": mx,
            "imbalance": imb,
            "cost": mx - mean,
            "argmax": argmax.astype(np.int64),
            "count": m,
            "n": N,
        }
    )
    df.index.name = "node"
    return df


__all__ = [
    "BINS",
    "MISSING",
    "OUTLIERS",
    "box_plots",
    "counted_matrix",
    "histogram",
    "NodeSums",
    "node_stats",
    "summarize",
    "summary_table",
]
