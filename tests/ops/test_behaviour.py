"""Ranks grouped by behaviour (cctviz.ops.behaviour.rank_groups): alike ranks
share a group, ranks that differ keep their own, whatever the noise; the same
input gives the same groups."""

from __future__ import annotations

import numpy as np
import pytest

from cctviz.ops.behaviour import rank_groups

#: a rank's time shares in four contexts (compute, backward, all-reduce, optimizer)
USUAL = np.array([0.4, 0.3, 0.2, 0.1])


def ranks(n: int, noise: float, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return USUAL + rng.normal(0.0, noise, (n, USUAL.size))


@pytest.mark.parametrize("n", [4, 100, 16384])
def test_alike_ranks_make_one_group_without_outliers(n):
    g = rank_groups(ranks(n, 0.005))
    assert g.n_groups == 1 and g.outliers.size == 0
    assert (g.labels == 0).all() and 0 <= g.representative[0] < n


def test_two_behaviours_two_groups_and_a_straggler_apart():
    x = ranks(1000, 0.005)
    x[500:] += [-0.1, 0.1, 0.0, 0.0]  # half the ranks spend 10% of the time elsewhere
    x[[17, 640]] = [0.7, 0.25, 0.0, 0.05]  # two stragglers: no waiting, long compute
    g = rank_groups(x)
    assert sorted(g.outliers.tolist()) == [17, 640]
    assert g.n_groups == 2
    first, second = g.members(0), g.members(1)
    assert set(first) == set(range(500)) - {17}
    assert set(second) == set(range(500, 1000)) - {640}
    # each group's representative is its member nearest the group's mean
    for j, members in enumerate((first, second)):
        mean = x[members].mean(axis=0)
        d = np.abs(x[members] - mean).sum(axis=1)
        assert g.representative[j] == members[np.argmin(d)]


def test_at_most_keep_outliers_the_farthest_first():
    x = ranks(200, 0.002)
    far = [3, 50, 120, 190]
    x[far] = USUAL + np.array(
        [[0.3, -0.3, 0, 0], [0.5, -0.5, 0, 0], [0.2, -0.2, 0, 0], [0.4, -0.4, 0, 0]]
    )
    g = rank_groups(x, keep=2)
    assert g.outliers.tolist() == [50, 190]  # the two farthest
    assert g.labels[[3, 120]].tolist() == [0, 0]  # the rest join the nearest group
    assert rank_groups(x, keep=0).outliers.size == 0


def test_same_input_same_groups_and_bad_input_refused():
    x = ranks(500, 0.05, seed=3)
    a, b = rank_groups(x, max_groups=4), rank_groups(x, max_groups=4)
    assert (a.labels == b.labels).all() and (a.representative == b.representative).all()
    assert a.n_groups <= 4
    with pytest.raises(ValueError, match="finite"):
        rank_groups(np.array([[np.nan, 1.0]]))
    with pytest.raises(ValueError, match="finite"):
        rank_groups(np.ones(3))
    with pytest.raises(ValueError, match="max_groups"):
        rank_groups(x, max_groups=0)
    empty = rank_groups(np.empty((0, 2)))
    assert empty.n_groups == 0 and empty.labels.size == 0
