"""Every operation of an ensemble gives the same answer on disk (DuckDB) as in memory:
filter, prune, focus, merge_duplicates, select/groupby, queries, profile(i), diff
and what the views ask for, on random ensembles (missing nodes, NaN values, dead
ranks, sum/max/none rules) and on real ones (RAJAPerf, LULESH)."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cctviz
from cctviz.dataset import engine
from tests.dataset.test_dataset import (
    _write_open,
    assert_same_ensemble,
    assert_same_stats,
    assert_same_tree,
    ensembles,
)
from tests.hypothesis_profiles import examples

# every rule and absence mode once (all combinations: tests/dataset/test_dataset.py)
CASES = [
    ("time (inc)", "auto"),
    ("time (inc)", "zero"),
    ("time", "skip"),
    ("peak (inc)", "auto"),
    ("size", "auto"),
]


def assert_same_answers(ds, ens, label: str) -> None:
    """The dataset ensemble ``ds`` answers as the in-memory ``ens``: its rows, the
    mean tree, every statistics table and each live profile."""
    assert_same_ensemble(ds.to_ensemble(), ens)
    assert ds.tree.nodes.equals(ens.tree.nodes), label
    a, b = ds.tree.metrics.to_numpy(float), ens.tree.metrics.to_numpy(float)
    assert np.allclose(a, b, equal_nan=True), label
    for metric, missing in CASES:
        want = ens.stats(metric, missing=missing)
        assert_same_stats(ds.stats(metric, missing=missing), want, f"{label} {metric}")
    for i in np.flatnonzero(ens.live)[:2]:
        assert_same_tree(ds.profile(int(i)), ens.profile(int(i)))
    assert np.allclose(
        ds.profile_totals("time (inc)"), ens.profile_totals("time (inc)"), equal_nan=True
    )


@st.composite
def ensembles_and_choices(draw):
    ens = draw(ensembles())
    n = len(ens.tree)
    keep = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    keep[0] |= not keep.any()
    node = draw(st.integers(0, n - 1))
    top_k = draw(st.integers(1, 3))
    fraction = draw(st.sampled_from([0.05, 0.2, 0.5]))
    pick = draw(st.lists(st.integers(0, ens.n_profiles - 1), min_size=1, unique=True))
    return ens, keep, node, top_k, fraction, pick


@settings(max_examples=examples(10), deadline=None)
@given(ensembles_and_choices(), st.integers(1, 9), st.integers(1, 20))
def test_structural_operations_equal_on_disk(case, per_part, batch_rows):
    ens, keep, node, top_k, fraction, pick = case
    # batch_rows: inclusive values made a few rows at a time, a part in several batches
    with (
        tempfile.TemporaryDirectory() as d,
        mock.patch.object(engine, "INCLUSIVE_BATCH_ROWS", batch_rows),
    ):
        ds = _write_open(ens, Path(d) / "e", per_part)
        for label, op in [
            ("filter", lambda e: e.filter(keep)),
            ("prune top_k", lambda e: e.prune("time (inc)", top_k=top_k)),
            ("prune fraction", lambda e: e.prune("time (inc)", fraction=fraction)),
            ("focus", lambda e: e.focus(node)),
            ("merge", lambda e: e.merge_duplicates()),
            # chained, after a selection: the node map composes
            ("chain", lambda e: e.select(pick).filter(keep[: len(e.tree)]).prune(top_k=top_k)),
        ]:
            if label == "chain" and not keep[ens.tree.roots].any():
                continue  # the filter mask is for the unpruned tree only
            assert_same_answers(op(ds), op(ens), label)
        assert ds.query(keep).ids.tolist() == ens.query(keep).ids.tolist()
        got, want = ds.groupby("run"), ens.groupby("run")
        assert list(got) == list(want)
        for key in want:
            assert_same_answers(got[key], want[key], f"run {key}")
        ds.close()


def test_diff_of_two_selections_equals_in_memory(rajaperf, tmp_path):
    """``diff`` takes the mean trees of two groups, from disk as from memory."""
    ds = _write_open(rajaperf, tmp_path / "r", 250)
    variants = sorted(rajaperf.profiles["variant"].unique())
    on_disk = [ds.select(lambda p, v=v: p["variant"] == v).tree for v in variants[:2]]
    in_mem = [rajaperf.select(lambda p, v=v: p["variant"] == v).tree for v in variants[:2]]
    a, b = cctviz.diff(*on_disk), cctviz.diff(*in_mem)
    assert a.nodes.equals(b.nodes)
    assert np.allclose(a.metrics.to_numpy(float), b.metrics.to_numpy(float), equal_nan=True)
    assert (np.abs(b.metrics["Total time (inc)"]) > 0).any()  # the runs do differ


def payload_differences(a, b, path: str = "") -> list:
    """Where two view payloads differ (floats up to the order of sums)."""
    out: list = []
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            out.append((path, sorted(set(a) ^ set(b))))
        for k in set(a) & set(b):
            out += payload_differences(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            out.append((path, len(a), len(b)))
        for i, (x, y) in enumerate(zip(a, b)):
            out += payload_differences(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, (int, float)):
        same_nan = math.isnan(a) and math.isnan(b)
        if not (same_nan or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)):
            out.append((path, a, b))
    elif a != b:
        out.append((path, a, b))
    return out


@pytest.mark.parametrize("which", ["rajaperf", "lulesh"])
def test_views_show_the_same_from_disk(which, request, tmp_path):
    """The views take a dataset unchanged and send the browser what the in-memory
    ensemble gives them: the Sankey's node statistics, the CCT's spread, the
    profiles' totals; after a prune too."""
    ens = request.getfixturevalue(which)
    ds = _write_open(ens, tmp_path / which, max(ens.n_rows // 4, 1))
    metric = ens.tree.metric_column(None)
    pairs = [(ds, ens), (ds.prune(metric, top_k=3), ens.prune(metric, top_k=3))]
    for on_disk, in_mem in pairs:
        for view in (cctviz.SankeyView, cctviz.CCTView, cctviz.ProfilesView):
            a, b = view(on_disk)._data, view(in_mem)._data
            assert a, view.__name__
            assert payload_differences(a, b) == [], view.__name__
    text = ds.render(max_nodes=8)
    assert text == ens.render(max_nodes=8)
