"""Ranks grouped by behaviour: which ranks did the same, which stand out.

At thousands of ranks one lane per rank says nothing; most ranks do the same
and a few do not. :func:`rank_groups` takes one row of features per rank (the
share of its time in each context, say) and finds

- **groups**: k-means (k-means++ seeding from a fixed seed, so the same
  input gives the same groups) with at most ``max_groups`` centres, centres
  joined by a chain of steps shorter than ``floor`` (L1) merged: ranks that
  behave alike share a group;
- the **outliers**: the members of groups too small to be one (``small``), and
  ranks far from their group's centre (an L1 distance beyond ``z`` robust
  standard deviations of their group's distances and beyond ``floor``), at
  most ``keep`` of them, the farthest first: these keep a lane of their own
  (the others join the nearest group);
- each group's **representative**: its member nearest the group's centre.

Pure numpy, vectorised over the ranks (a few passes of ``n x k x features``).

Example:
    >>> import numpy as np
    >>> x = np.array([[0.5, 0.5]] * 6 + [[0.9, 0.1]])  # rank 6 does something else
    >>> g = rank_groups(x)
    >>> g.labels.tolist(), g.outliers.tolist(), g.representative.tolist()
    ([0, 0, 0, 0, 0, 0, -1], [6], [0])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: k-means passes (the centres settle in a few on behaviour features)
ITERATIONS = 20
#: alike ranks differ by noise: ``floor`` is at least this many times the median
#: distance from a rank to its nearest other (estimated on at most SAMPLE rows)
NOISE, SAMPLE = 2.0, 512


@dataclass(frozen=True)
class RankGroups:
    """What :func:`rank_groups` finds, for ``n`` input rows: ``labels`` (per
    row its group ``0..g-1``, or -1 for an outlier), ``outliers`` (the outlier
    rows, farthest first), ``representative`` (per group the row nearest its
    centre) and ``distance`` (per row, its L1 distance from the nearest group's
    centre)."""

    labels: np.ndarray
    outliers: np.ndarray
    representative: np.ndarray
    distance: np.ndarray

    @property
    def n_groups(self) -> int:
        """How many groups (outliers not counted)."""
        return int(self.representative.size)

    def members(self, group: int) -> np.ndarray:
        """The rows of ``group``, in order."""
        return np.flatnonzero(self.labels == group)


def rank_groups(
    features: np.ndarray,
    *,
    max_groups: int = 8,
    keep: int = 16,
    z: float = 3.5,
    floor: float = 0.1,
    small: float = 0.01,
    seed: int = 0,
) -> RankGroups:
    """Group the rows of ``features`` (one per rank) by behaviour (module docstring).

    Args:
        features: ``(n, f)`` finite numbers, e.g. each rank's share of its time
            per context (rows summing to 1): ``floor`` is in their unit.
        max_groups: the most groups (``>= 1``).
        keep: the most outliers (0: none).
        z: how many robust standard deviations (1.4826 x the median absolute
            deviation) beyond the median distance from its group's centre makes
            a member an outlier.
        floor: the least such distance that makes an outlier, and the
            step within which groups' centres merge; at least :data:`NOISE`
            times the median distance from a row to its nearest other (what
            sets alike ranks apart in this run: a loaded machine's noise).
        small: a group of at most this share of the rows (and at most ``keep``
            rows) is no group: its rows are outliers.
        seed: of the k-means++ seeding.

    Raises:
        ValueError: ``features`` is not two-dimensional and finite, or
            ``max_groups < 1`` or ``keep < 0``.
    """
    x = np.asarray(features, dtype=np.float64)
    if x.ndim != 2 or not np.isfinite(x).all():
        raise ValueError(f"features: need a finite (ranks, features) array, got shape {x.shape}")
    if max_groups < 1 or keep < 0:
        raise ValueError(f"need max_groups >= 1 and keep >= 0, got {max_groups} and {keep}")
    n = x.shape[0]
    if not n:
        none = np.empty(0, dtype=np.int64)
        return RankGroups(none, none, none, np.empty(0))
    floor = max(floor, NOISE * _noise(x, seed))
    labels, centres = _kmeans(x, max_groups, floor, seed)
    size = np.bincount(labels, minlength=len(centres))
    big = np.flatnonzero(size > min(max(small * n, 1), keep))
    if not big.size:  # every group small: the largest stays one
        big = np.array([int(size.argmax())])
    to_big = np.abs(x[:, None, :] - centres[big][None, :, :]).sum(axis=2)
    nearest = big[to_big.argmin(axis=1)]
    distance = to_big.min(axis=1)
    far = ~np.isin(labels, big) | _far(distance, labels, z, floor)
    cand = np.flatnonzero(far)
    outliers = cand[np.argsort(-distance[cand], kind="stable")][:keep]
    labels = nearest.copy()  # members of small groups and far ones not kept join the nearest
    labels[outliers] = -1
    ok = labels >= 0
    labels, representative = _ordered(x, labels, _means(x[ok], labels[ok], len(centres)))
    return RankGroups(labels, outliers, representative, distance)


def _noise(x: np.ndarray, seed: int) -> float:
    """How far alike ranks lie apart: the median L1 distance from a row to its
    nearest other, over a sample of at most :data:`SAMPLE` rows."""
    if len(x) < 2:
        return 0.0
    rng = np.random.default_rng(seed)
    s = x if len(x) <= SAMPLE else x[rng.choice(len(x), SAMPLE, replace=False)]
    d = np.abs(s[:, None, :] - s[None, :, :]).sum(axis=2)
    np.fill_diagonal(d, np.inf)
    return float(np.median(d.min(axis=1)))


def _far(distance: np.ndarray, labels: np.ndarray, z: float, floor: float) -> np.ndarray:
    """Per row: beyond ``z`` robust deviations of its group's distances and ``floor``."""
    out = np.zeros(distance.size, dtype=bool)
    for g in np.unique(labels):  # a handful of groups
        rows = np.flatnonzero(labels == g)
        d = distance[rows]
        mid = float(np.median(d))
        spread = 1.4826 * float(np.median(np.abs(d - mid)))
        out[rows] = (d > mid + z * spread) & (d > floor)
    return out


def _kmeans(x: np.ndarray, k: int, floor: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Labels and centres of the rows of ``x``: k-means++ seeding, Lloyd's passes,
    then centres closer than ``floor`` (L1) merged."""
    centres = _seeds(x, min(k, len(np.unique(x, axis=0))), seed)
    labels = np.zeros(len(x), dtype=np.int64)
    sq = (x**2).sum(axis=1)[:, None]
    for _ in range(ITERATIONS):
        d2 = sq - 2.0 * (x @ centres.T) + (centres**2).sum(axis=1)[None, :]
        new = d2.argmin(axis=1)
        if _ and (new == labels).all():
            break
        labels = new
        centres = _means(x, labels, len(centres))
    # merge near centres: those joined by a chain of steps within floor are one
    reach = np.abs(centres[:, None, :] - centres[None, :, :]).sum(axis=2) <= floor
    for _ in range(max(1, int(np.ceil(np.log2(len(centres)))))):
        reach = reach | ((reach.astype(np.int64) @ reach.astype(np.int64)) > 0)
    into = reach.argmax(axis=1)  # the first centre of its chain (itself at worst)
    _, labels = np.unique(into[labels], return_inverse=True)
    labels = labels.reshape(-1)
    return labels, _means(x, labels, int(labels.max()) + 1)


def _seeds(x: np.ndarray, k: int, seed: int) -> np.ndarray:
    """k-means++: each next centre drawn with probability by squared distance."""
    rng = np.random.default_rng(seed)
    picked = [int(rng.integers(len(x)))]
    d2 = ((x - x[picked[0]]) ** 2).sum(axis=1)
    while len(picked) < k and d2.sum() > 0:
        picked.append(int(rng.choice(len(x), p=d2 / d2.sum())))
        d2 = np.minimum(d2, ((x - x[picked[-1]]) ** 2).sum(axis=1))
    return x[picked].copy()


def _means(x: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """The mean row per label (empty labels: dropped by the caller's merge)."""
    count = np.bincount(labels, minlength=k).astype(np.float64)
    sums = np.zeros((k, x.shape[1]))
    np.add.at(sums, labels, x)
    return sums / np.maximum(count, 1.0)[:, None]


def _ordered(
    x: np.ndarray, labels: np.ndarray, centres: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Groups renumbered by their first row, and each group's row nearest its centre."""
    grouped = np.flatnonzero(labels >= 0)
    used = np.unique(labels[grouped])
    first = np.array([grouped[labels[grouped] == g][0] for g in used])
    order = used[np.argsort(first, kind="stable")]
    renumber = np.full(int(labels.max()) + 1, -1, dtype=np.int64)
    renumber[order] = np.arange(order.size)
    out = np.where(labels >= 0, renumber[np.maximum(labels, 0)], -1)
    d = np.abs(x[grouped] - centres[labels[grouped]]).sum(axis=1)
    best = np.lexsort((grouped, d, out[grouped]))  # by group, nearest first, then row
    g_sorted = out[grouped][best]
    representative = grouped[best][np.r_[True, g_sorted[1:] != g_sorted[:-1]]]
    return out, representative
