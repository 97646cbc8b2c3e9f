"""Hypothesis strategies for random trees and ensembles."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import cctviz

NAMES = ["main", "solve", "MPI_Allreduce", "io", "f", "g"]


@st.composite
def parent_arrays(draw, min_size: int = 1, max_size: int = 40):
    n = draw(st.integers(min_size, max_size))
    parent = [-1]
    for i in range(1, n):
        parent.append(draw(st.integers(-1, i - 1)))
    # shuffle node order: from_parents must accept any order
    perm = draw(st.permutations(range(n)))
    inv = np.argsort(perm)
    shuffled = [-1 if parent[perm[k]] < 0 else int(inv[parent[perm[k]]]) for k in range(n)]
    return shuffled


@st.composite
def trees(draw, min_size: int = 1, max_size: int = 40, names=NAMES):
    parent = draw(parent_arrays(min_size, max_size))
    n = len(parent)
    nm = draw(st.lists(st.sampled_from(names), min_size=n, max_size=n))
    time = draw(st.lists(st.integers(0, 1000), min_size=n, max_size=n))
    calls = draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))
    return cctviz.Tree.from_parents(
        parent, nm, {"time": np.array(time, float), "calls": np.array(calls, float)}
    )


def assert_consistent(t) -> None:
    """Inclusive = exclusive + sum of the children's inclusive, for every metric."""
    m = t.metrics
    for metric in t.exc_metrics:
        inc = m[metric + " (inc)"].to_numpy()
        child_sum = np.zeros(len(t))
        nr = t.parent >= 0
        np.add.at(child_sum, t.parent[nr], inc[nr])
        assert np.allclose(inc, m[metric].to_numpy() + child_sum)
