import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cctviz.model._algo import (
    TrieBuilder,
    combine_rows,
    level_order,
    lexsort,
    preorder_permutation,
    sorted_unique,
)
from tests.strategies import parent_arrays


@given(parent_arrays())
def test_preorder_permutation_gives_contiguous_subtrees(parent):
    parent = np.array(parent)
    perm = preorder_permutation(parent)
    assert sorted(perm.tolist()) == list(range(len(parent)))
    inv = np.empty_like(perm)
    inv[perm] = np.arange(len(perm))
    newp = np.where(parent[perm] >= 0, inv[np.maximum(parent[perm], 0)], -1)
    # pre-order: every parent comes before its child, and each subtree is contiguous
    assert np.all(newp < np.arange(len(newp)))
    depth, _ = level_order(newp)
    for i in range(len(newp)):
        j = i + 1
        while j < len(newp) and depth[j] > depth[i]:
            j += 1
        # every node in (i, j) descends from i: walk up from it
        for d in range(i + 1, j):
            a = d
            while a > i:
                a = newp[a]
            assert a == i


def test_level_order_rejects_cycles_and_bad_parents():
    with pytest.raises(ValueError, match="cycle"):
        level_order(np.array([-1, 2, 1]))
    with pytest.raises(ValueError, match="outside"):
        level_order(np.array([-1, 5]))


def test_trie_merges_equal_paths_only():
    tb = TrieBuilder()
    a = tb.add_level(np.array([-1, -1, -1]), np.array([0, 1, 0]))
    assert a.tolist() == [0, 1, 0]
    b = tb.add_level(np.array([0, 1, 0]), np.array([5, 5, 5]))
    assert b.tolist() == [2, 3, 2]  # same code under different parents stays apart
    assert tb.parent.tolist() == [-1, -1, 0, 1]


@given(st.lists(st.integers(-5, 50), max_size=200))
def test_sorted_unique_equals_numpy_unique(xs):
    a = np.array(xs, dtype=np.int64)
    u, inv = sorted_unique(a, return_inverse=True)
    nu, ninv = np.unique(a, return_inverse=True)
    assert u.tolist() == nu.tolist() and inv.tolist() == ninv.reshape(-1).tolist()
    assert sorted_unique(a).tolist() == nu.tolist()


def _combine_one_by_one(values, target, n_out, rules):
    """combine_rows' contract, one row at a time."""
    out = [[0.0 if r == "sum" else np.nan for r in rules] for _ in range(n_out)]
    seen: list[list[list[float]]] = [[[] for _ in rules] for _ in range(n_out)]
    for row, t in zip(values, target):
        if t < 0:
            continue
        for j, (v, r) in enumerate(zip(row, rules)):
            seen[t][j].append(v)
            if r == "sum":
                out[t][j] += v
            elif r in ("max", "min") and not np.isnan(v):
                cur = out[t][j]
                out[t][j] = v if np.isnan(cur) else (max if r == "max" else min)(cur, v)
    for t in range(n_out):
        for j, r in enumerate(rules):
            if r == "none":
                known = {v for v in seen[t][j] if not np.isnan(v)}
                out[t][j] = known.pop() if len(known) == 1 else np.nan
    return np.array(out).reshape(n_out, len(rules))


@given(
    st.integers(1, 6).flatmap(
        lambda n_out: st.tuples(
            st.just(n_out),
            st.lists(st.integers(-1, n_out - 1), max_size=12),
            st.booleans(),
            st.lists(st.sampled_from(["sum", "max", "min", "none"]), min_size=1, max_size=3),
            st.randoms(use_true_random=False),
        )
    )
)
def test_combine_rows_equals_one_row_at_a_time(case):
    """With and without repeated targets (the unique case takes a shortcut)."""
    n_out, target, unique, rules, rnd = case
    if unique:
        target = [t for k, t in enumerate(target) if t < 0 or t not in target[:k]]
    target = np.array(target, dtype=np.int64)
    values = np.array(
        [[rnd.choice([np.nan, 1.0, 2.0, -3.5]) for _ in rules] for _ in target]
    ).reshape(len(target), len(rules))
    got, conflicts = combine_rows(values, target, n_out, rules)
    want = _combine_one_by_one(values, target, n_out, rules)
    np.testing.assert_array_equal(got, want)
    if unique:
        assert conflicts == [0] * len(rules)


key_arrays = st.sampled_from(["small", "wide", "huge", "halves", "bool", "nan", "uint"])


@given(st.integers(0, 30), st.lists(key_arrays, min_size=1, max_size=4), st.integers(0, 2**32))
def test_lexsort_is_numpys(n, kinds, seed):
    """Packed keys, ties refined on the tied rows, numpy's lexsort for keys with
    fractions or too wide to pack: always the order ``np.lexsort`` gives."""
    rng = np.random.default_rng(seed)
    make = {
        "small": lambda: rng.integers(0, 3, n),
        "wide": lambda: rng.integers(-(2**40), 2**40, n),
        "huge": lambda: rng.integers(-(2**62), 2**62, n),
        "halves": lambda: rng.integers(-4, 4, n) * 0.5,
        "bool": lambda: rng.integers(0, 2, n).astype(bool),
        "nan": lambda: np.where(rng.random(n) < 0.5, np.nan, rng.integers(0, 3, n) * 1.0),
        "uint": lambda: rng.choice(np.array([0, 5, 2**63, 2**64 - 1], dtype=np.uint64), n),
    }
    keys = [make[k]() for k in kinds]
    assert lexsort(keys).tolist() == np.lexsort(keys).tolist()
