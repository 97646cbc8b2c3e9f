"""Projections and clusters of profiles (cctviz.ops.projection)."""

from __future__ import annotations

import numpy as np
import pytest

import cctviz
from cctviz.ops.projection import DENSE_MAX, kmeans, mds, pca, profile_matrix
from tests.conftest import LULESH_SCALING


def pairwise(X: np.ndarray) -> np.ndarray:
    return np.linalg.norm(X[:, None, :] - X[None, :, :], axis=-1)


@pytest.fixture(scope="module")
def lulesh():
    return cctviz.read_ensemble(LULESH_SCALING[:3])


def test_pca_reproduces_distances_at_full_rank():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(12, 3)) @ rng.normal(size=(3, 40))  # rank 3 (centred: <= 3)
    coords, ratio = pca(X, k=3)
    assert np.allclose(pairwise(coords), pairwise(X), atol=1e-9)
    assert ratio.sum() == pytest.approx(1.0)
    assert np.all(np.diff(ratio) <= 1e-12)
    # orthogonal, centred components
    gram = coords.T @ coords
    assert np.allclose(gram - np.diag(np.diag(gram)), 0, atol=1e-9)
    assert np.allclose(coords.mean(axis=0), 0, atol=1e-9)


def test_pca_ratios_sum_at_most_one_and_descend():
    X = np.random.default_rng(1).normal(size=(30, 8))
    _, ratio = pca(X, k=2)
    assert 0 < ratio.sum() <= 1 and ratio[0] >= ratio[1] > 0


def test_pca_matches_numpy_svd_up_to_sign():
    """The peer: numpy's SVD of the centred matrix (scikit-learn's PCA computes
    the same; it is not installed here)."""
    X = np.random.default_rng(5).gamma(2.0, size=(25, 60))
    Xc = X - X.mean(axis=0)
    U, S, _ = np.linalg.svd(Xc, full_matrices=False)
    ref = U[:, :2] * S[:2]
    coords, ratio = pca(X, k=2)
    for j in range(2):
        assert np.allclose(coords[:, j], ref[:, j]) or np.allclose(coords[:, j], -ref[:, j])
    assert np.allclose(ratio, S[:2] ** 2 / (S**2).sum())
    # the tall route (more rows than columns) agrees with the Gram route
    coords_t, ratio_t = pca(X[:, :10], k=2)
    U, S, _ = np.linalg.svd(X[:, :10] - X[:, :10].mean(axis=0), full_matrices=False)
    assert np.allclose(np.abs(coords_t), np.abs(U[:, :2] * S[:2]))
    assert np.allclose(ratio_t, S[:2] ** 2 / (S**2).sum())


def test_pca_sign_is_deterministic_and_fixed_by_the_largest_loading():
    X = np.random.default_rng(2).normal(size=(10, 5))
    a, _ = pca(X)
    b, _ = pca(X[:, ::-1].copy()[:, ::-1])
    assert np.array_equal(a, b)
    c, _ = pca(-X)  # the loadings flip sign with the data; the rule flips them back
    assert np.allclose(c, -a) or np.allclose(c, a)
    _, _, Vt = np.linalg.svd(X - X.mean(axis=0), full_matrices=False)
    for j in range(2):
        v = Vt[j] * np.sign(Vt[j][np.argmax(np.abs(Vt[j]))])
        assert np.allclose(a[:, j], (X - X.mean(axis=0)) @ v)


def test_large_inputs_use_the_subspace_iteration_and_agree_with_eigh():
    rng = np.random.default_rng(0)
    n = DENSE_MAX + 100
    latent = rng.normal(size=(n, 3)) * [10.0, 4.0, 1.0]
    X = latent @ rng.normal(size=(3, 700)) + 0.01 * rng.normal(size=(n, 700))
    coords, ratio = pca(X, k=2)
    Xc = X - X.mean(axis=0)
    U, S, _ = np.linalg.svd(Xc, full_matrices=False)
    for j in range(2):
        ref = U[:, j] * S[j]
        assert min(np.abs(coords[:, j] - ref).max(), np.abs(coords[:, j] + ref).max()) < 1e-6 * S[0]
    assert np.allclose(ratio, S[:2] ** 2 / (S**2).sum())


@pytest.mark.parametrize("shape", [(1, 5), (2, 5), (3, 1), (0, 4)])
def test_degenerate_shapes_are_finite(shape):
    X = np.arange(np.prod(shape), dtype=float).reshape(shape)
    coords, ratio = pca(X)
    assert coords.shape == (shape[0], 2) and np.isfinite(coords).all() and np.isfinite(ratio).all()
    assert np.isfinite(mds(X)).all() and mds(X).shape == (shape[0], 2)
    if shape[0]:
        assert kmeans(X, 3).shape == (shape[0],)


def test_all_zero_and_constant_columns_give_no_nan():
    Z = np.zeros((6, 4))
    coords, ratio = pca(Z)
    assert not coords.any() and not ratio.any()
    assert not mds(Z).any()
    assert kmeans(Z, 3).tolist() == [0] * 6
    X = np.random.default_rng(0).normal(size=(8, 3))
    Xk = np.column_stack([X, np.full(8, 7.0), np.zeros(8)])
    a, ra = pca(X)
    b, rb = pca(Xk)
    assert np.allclose(a, b) and np.allclose(ra, rb)
    # two profiles: one axis, the second is 0
    c, rc = pca(X[:2])
    assert rc.tolist() == [1.0, 0.0] and not c[:, 1].any()
    assert abs(c[0, 0] - c[1, 0]) == pytest.approx(np.linalg.norm(X[0] - X[1]))


def test_mds_recovers_planar_distances():
    P = np.random.default_rng(4).normal(size=(20, 2)) * [5, 1]
    Q = np.random.default_rng(5).normal(size=(2, 30))
    X = P @ Q  # points that live in a 2-D plane of 30-D space
    Y = mds(X)
    assert np.allclose(pairwise(Y), pairwise(X), atol=1e-8)
    assert np.allclose(np.abs(Y), np.abs(pca(X)[0]), atol=1e-8)  # Euclidean MDS = PCA


def blobs(seed=0):
    rng = np.random.default_rng(seed)
    centres = np.array([[0, 0, 0], [20, 0, 0], [0, 20, 5]], dtype=float)
    sizes = [15, 10, 5]
    truth = np.repeat([0, 1, 2], sizes)
    X = centres[truth] + rng.normal(scale=0.5, size=(30, 3))
    perm = rng.permutation(30)
    return X[perm], truth[perm]


def test_kmeans_finds_separated_blobs_numbered_by_size():
    X, truth = blobs()
    for seed in range(5):
        labels = kmeans(X, 3, seed=seed)
        assert np.array_equal(labels, truth), seed  # blob sizes 15, 10, 5 -> 0, 1, 2


def test_kmeans_same_seed_same_labels():
    X = np.random.default_rng(9).normal(size=(200, 4))
    assert np.array_equal(kmeans(X, 5, seed=7), kmeans(X, 5, seed=7))
    counts = np.bincount(kmeans(X, 5, seed=7))
    assert list(counts) == sorted(counts, reverse=True)


def test_kmeans_k_larger_than_distinct_rows():
    X = np.array([[1.0, 1.0]] * 4 + [[3.0, 3.0]] * 2)
    assert kmeans(X, 5).tolist() == [0, 0, 0, 0, 1, 1]
    with pytest.raises(ValueError):
        kmeans(X, 0)


def test_profile_matrix_of_a_real_ensemble(lulesh):
    X = profile_matrix(lulesh, "time (inc)")
    assert X.shape == (int(lulesh.live.sum()), len(lulesh.tree))
    assert np.isfinite(X).all() and (X >= 0).all()
    roots = lulesh.tree.parent < 0
    v = lulesh.values("time (inc)")
    assert np.allclose(X[:, roots].sum(axis=1), v[roots].sum(axis=0)[lulesh.live])
    coords, ratio = pca(X)
    assert coords.shape == (X.shape[0], 2) and ratio[0] > 0.5


def test_profile_matrix_leaves_out_dead_profiles():
    a = cctviz.Tree.from_parents([-1, 0], ["main", "mpi"], {"time": [1.0, 3.0]})
    b = cctviz.Tree.from_parents([-1, 0], ["main", "io"], {"time": [2.0, 5.0]})
    ens = cctviz.Ensemble.concat([a, b])
    rows = ens.exclusive_rows
    dead = cctviz.Ensemble(ens.tree, rows[rows["profile"] == 0], ens.profiles)
    assert dead.live.tolist() == [True, False]
    X = profile_matrix(dead, "time (inc)")
    assert X.shape == (1, 3) and X[0].tolist() == [4.0, 3.0, 0.0]
