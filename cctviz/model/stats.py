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
    z = np.maximum(np.asarray(count, dtype=np.int64) - m, 0)
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
    "node_stats",
    "summarize",
]
