"""Projections and clusters of profiles: PCA, classical MDS, k-means (numpy only).

Each profile (a rank, a run) is a vector of per-node inclusive values
(:func:`profile_matrix`); profiles that spend their time alike lie close.
Everything here is deterministic: PCA and MDS fix the sign of each axis (its
largest-magnitude loading is positive), k-means seeds its k-means++ start with
``numpy.random.default_rng(seed)`` and numbers the clusters by size.

Built for many profiles over big trees (1,024 profiles x 10,000 nodes): the
SVD runs on the Gram matrix (profiles x profiles) when there are fewer
profiles than nodes, on the centred matrix otherwise. Constant columns, one or
two profiles and all-zero data give finite results (no NaN).

Example:
    >>> X = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 1.0]])
    >>> coords, ratio = pca(X)
    >>> np.round(ratio, 3).tolist()
    [0.861, 0.139]
    >>> kmeans(np.array([[0.0], [0.1], [10.0], [10.2], [10.1]]), 2).tolist()
    [1, 1, 0, 0, 0]
"""

from __future__ import annotations

import numpy as np

from ..model.ensemble import Ensemble

__all__ = ["kmeans", "mds", "pca", "profile_matrix"]


def profile_matrix(ensemble: Ensemble, metric: str) -> np.ndarray:
    """Live profiles x nodes matrix of an inclusive metric (float64).

    Rows follow the live profiles in order (``np.flatnonzero(ensemble.live)``);
    a node a profile never entered is 0 for an additive (``"sum"``) metric, and
    NaN values of other metrics become 0 too (a projection needs numbers).
    """
    v = ensemble.values(metric)  # nodes x profiles
    X = np.ascontiguousarray(v[:, ensemble.live].T, dtype=np.float64)
    return np.nan_to_num(X, nan=0.0, posinf=0.0, neginf=0.0)


#: above this many rows, the top eigenvectors come from a subspace iteration
#: (numpy has no partial eigensolver; a full ``eigh`` of 1,024 x 1,024 takes seconds)
DENSE_MAX = 400


def _signs(loadings: np.ndarray) -> np.ndarray:
    """+1/-1 per column: the sign of its largest-magnitude entry (the first of
    near ties, so that rounding noise cannot flip it)."""
    if loadings.size == 0:
        return np.ones(loadings.shape[1])
    a = np.abs(loadings)
    at = np.argmax(a >= a.max(axis=0) * (1 - 1e-9), axis=0)
    s = np.sign(loadings[at, np.arange(loadings.shape[1])])
    s[s == 0] = 1.0
    return s


def _top_components(G: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k largest eigenvalues (clipped at 0, descending) of a symmetric PSD
    matrix and their unit eigenvectors. Small matrices: ``eigh``; large ones:
    a block subspace iteration from a fixed start (deterministic), then
    Rayleigh-Ritz on the block."""
    n = G.shape[0]
    if n <= DENSE_MAX:
        w, V = np.linalg.eigh(G)
        order = np.argsort(-w, kind="stable")[:k]
        return np.clip(w[order], 0.0, None), V[:, order]
    p = min(n, k + 12)
    Q = np.linalg.qr(np.random.default_rng(0).standard_normal((n, p)))[0]
    prev = None
    for _ in range(60):
        Q = np.linalg.qr(G @ Q)[0]
        w = np.linalg.eigvalsh(Q.T @ G @ Q)[::-1][:k]
        if prev is not None and np.allclose(w, prev, rtol=1e-13, atol=0.0):
            break
        prev = w
    w, S = np.linalg.eigh(Q.T @ G @ Q)
    order = np.argsort(-w, kind="stable")[:k]
    return np.clip(w[order], 0.0, None), Q @ S[:, order]


def pca(X: np.ndarray, k: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Principal components of the rows of ``X`` (n x d).

    Returns ``(coords, ratio)``: the rows' coordinates on the first ``k``
    components (n x k; columns past the data's rank are 0) and each
    component's share of the total variance (descending, summing to at most
    1; all 0 when the rows are identical). The sign of every component is fixed:
    its largest-magnitude loading (the weight of a column) is positive.

    Example:
        >>> coords, ratio = pca(np.array([[1.0, 1.0], [3.0, 3.0]]), k=2)
        >>> np.round(coords, 4).tolist(), ratio.tolist()
        ([[-1.4142, 0.0], [1.4142, 0.0]], [1.0, 0.0])
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"pca: expected a 2-D array, got shape {X.shape}")
    n, d = X.shape
    out = np.zeros((n, k))
    ratio = np.zeros(k)
    if n == 0 or d == 0:
        return out, ratio
    Xc = X - X.mean(axis=0)
    total = float(np.einsum("ij,ij->", Xc, Xc))
    if not np.isfinite(total) or total <= 0:
        return out, ratio
    m = min(k, n, d)
    if n <= d:
        # Gram matrix: Xc Xc^T = U S^2 U^T; coordinates U S
        w, U = _top_components(Xc @ Xc.T, m)
        coords = U * np.sqrt(w)
        loadings = Xc.T @ U  # the components (up to scale) in node space
    else:
        # covariance: Xc^T Xc = V S^2 V^T; coordinates Xc V
        w, loadings = _top_components(Xc.T @ Xc, m)
        coords = Xc @ loadings
    coords[:, w <= total * 1e-12] = 0.0  # numerical noise beyond the rank
    out[:, :m] = coords * _signs(loadings)
    ratio[:m] = np.where(w > total * 1e-12, w, 0.0) / total
    return out, ratio


def mds(X: np.ndarray, k: int = 2) -> np.ndarray:
    """Classical (Torgerson) multidimensional scaling of the rows of ``X``.

    Embeds the rows in ``k`` dimensions so that Euclidean distances are kept
    as well as ``k`` dimensions allow: the double-centred matrix of squared
    distances, ``B = -J D^2 J / 2``, and its top eigenvectors scaled by the
    square roots of their eigenvalues. (With Euclidean distances this spans
    the same space as PCA; it is computed from the distances.) Signs are fixed
    by the largest-magnitude coordinate of each axis.

    Example:
        >>> P = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 4.0]])
        >>> Y = mds(P)
        >>> round(float(np.linalg.norm(Y[1] - Y[2])), 6)
        5.0
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"mds: expected a 2-D array, got shape {X.shape}")
    n = X.shape[0]
    out = np.zeros((n, k))
    if n == 0 or X.shape[1] == 0:
        return out
    sq = np.einsum("ij,ij->i", X, X)
    D2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * (X @ X.T), 0.0)
    np.fill_diagonal(D2, 0.0)
    B = D2 - D2.mean(axis=0) - D2.mean(axis=1)[:, None] + D2.mean()
    B *= -0.5
    B = (B + B.T) / 2
    scale = float(np.trace(B))
    if not np.isfinite(scale) or scale <= 0:
        return out
    m = min(k, n)
    w, V = _top_components(B, m)
    coords = V * np.sqrt(w)
    coords[:, w <= scale * 1e-12] = 0.0
    out[:, :m] = coords * _signs(coords)
    return out


def _sq_dist(X: np.ndarray, C: np.ndarray, sq: np.ndarray) -> np.ndarray:
    """Squared distances, rows of X (n x d) to centres C (k x d); ``sq`` = row norms of X."""
    d = sq[:, None] + np.einsum("ij,ij->i", C, C)[None, :] - 2.0 * (X @ C.T)
    return np.maximum(d, 0.0)


def kmeans(
    X: np.ndarray, k: int, seed: int = 0, max_iter: int = 300, tol: float = 1e-10
) -> np.ndarray:
    """Cluster the rows of ``X`` into at most ``k`` groups (Lloyd's k-means).

    k-means++ start from ``numpy.random.default_rng(seed)`` (the same seed gives
    the same labels), then Lloyd iterations until no label changes. Returns
    int labels numbered by cluster size, largest first (ties: the cluster that
    appears first in the rows first). Fewer distinct rows than ``k`` give
    fewer clusters; an empty cluster is reseeded at the row farthest from its
    centre.

    Example:
        >>> kmeans(np.array([[0.0, 0.0], [0.0, 0.1], [5.0, 5.0]]), 2, seed=1).tolist()
        [0, 0, 1]
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    n = X.shape[0]
    if k < 1:
        raise ValueError(f"kmeans: k must be at least 1, got {k}")
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    X = np.nan_to_num(X)
    k = min(k, n)
    distinct = np.unique(X, axis=0).shape[0]
    k = max(1, min(k, distinct))
    rng = np.random.default_rng(seed)
    sq = np.einsum("ij,ij->i", X, X)
    # k-means++: each next centre drawn with probability ~ squared distance
    centres = [int(rng.integers(n))]
    closest = _sq_dist(X, X[centres], sq)[:, 0]
    for _ in range(1, k):
        total = closest.sum()
        if total <= 0:
            break
        c = int(np.searchsorted(np.cumsum(closest), rng.random() * total, side="right"))
        c = min(c, n - 1)
        centres.append(c)
        closest = np.minimum(closest, _sq_dist(X, X[[c]], sq)[:, 0])
    C = X[centres].copy()
    k = C.shape[0]
    labels = np.full(n, -1, dtype=np.int64)
    for _ in range(max_iter):
        d = _sq_dist(X, C, sq)
        new = np.argmin(d, axis=1)
        counts = np.bincount(new, minlength=k)
        for j in np.flatnonzero(counts == 0):  # reseed an empty cluster
            far = int(np.argmax(d[np.arange(n), new]))
            new[far] = j
            counts = np.bincount(new, minlength=k)
        if np.array_equal(new, labels):
            break
        labels = new
        onehot = np.zeros((k, n))
        onehot[labels, np.arange(n)] = 1.0
        moved = (onehot @ X) / counts[:, None]
        shift = float(np.max(np.abs(moved - C))) if C.size else 0.0
        C = moved
        if shift <= tol:
            break
    # number clusters by size (largest first), ties by first appearance
    counts = np.bincount(labels, minlength=k)
    first = np.full(k, n)
    np.minimum.at(first, labels, np.arange(n))
    order = np.lexsort((first, -counts))
    rank = np.empty(k, dtype=np.int64)
    rank[order] = np.arange(k)
    return rank[labels]
